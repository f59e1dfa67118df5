#!/usr/bin/env bash
# The project's test command (README): installs the external judges, then runs every test.
# The conformance tests refuse to skip when RNIC_REQUIRE_EXTERNAL_TOOLS=1 (set here and in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
export RNIC_REQUIRE_EXTERNAL_TOOLS=1
cargo test --workspace --locked "$@"
