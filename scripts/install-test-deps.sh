#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo: tshark (independent RoCEv2 dissector) and
# scapy (independent ICRC computation). Idempotent: does nothing when both are present.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if ! command -v tshark >/dev/null 2>&1; then
  echo "install-test-deps: installing tshark (Debian package)"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq tshark >/dev/null
fi

if ! python3 -c "import scapy.contrib.roce" >/dev/null 2>&1; then
  echo "install-test-deps: installing scapy (PyPI)"
  python3 -m pip install --quiet --disable-pip-version-check scapy
fi

tshark --version | head -n 1
python3 -c "import scapy; print('scapy', scapy.VERSION)"
