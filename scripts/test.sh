#!/usr/bin/env bash
# The project's test command (README): installs the external judges, then runs every test.
# The conformance tests, and the mdbook build of docs/book/ (crates/rnic/tests/doc_links.rs),
# refuse to skip when RNIC_REQUIRE_EXTERNAL_TOOLS=1 (set here and in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
export RNIC_REQUIRE_EXTERNAL_TOOLS=1
# The rxe interop tests (crates/rnic/tests/rxe_interop.rs) boot Linux soft-RoCE under QEMU;
# with this set, a missing QEMU or a guest that does not boot fails them instead of skipping.
export RNIC_REQUIRE_RXE="${RNIC_REQUIRE_RXE:-1}"
# The property tests draw the same cases on every run of this command, so a red run can be
# re-run and a green one stays green; `cargo test` alone draws new cases each time.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261124}"
# The benchmarks' crate holds no tests, and building it builds criterion and what criterion
# needs (about 70 CPU seconds); CI's clippy step (`--all-targets`) still compiles it.
cargo test --workspace --exclude rnic-bench --locked "$@"
