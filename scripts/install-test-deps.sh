#!/usr/bin/env bash
# Installs what the test suite needs beyond cargo: tshark (independent RoCEv2 dissector),
# scapy (independent ICRC computation) and mdbook (builds the book in docs/book/).
# and the rxe interop peer's host tools (scripts/rxe-peer.sh: QEMU, iproute2's ip).
# Idempotent: does nothing when all are present.
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

# mdbook: the distribution's package when it has one, else built from crates.io at a pinned
# version (without its `serve`/`watch` features, which the build does not need; about
# 2 minutes on two quiet cores, once: cargo keeps it in ~/.cargo/bin).
MDBOOK_VERSION=0.5.4
if ! command -v mdbook >/dev/null 2>&1; then
  if apt-cache policy mdbook 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    echo "install-test-deps: installing mdbook (Debian package)"
    $SUDO apt-get install -y -qq mdbook >/dev/null
  else
    echo "install-test-deps: building mdbook $MDBOOK_VERSION (crates.io)"
    cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features --features search --quiet
  fi
fi

# The rxe peer (crates/rnic/tests/rxe_interop.rs) boots a Debian guest under QEMU in a network
# namespace; its guest packages are fetched by the script itself with apt-get download.
RXE_PEER_PACKAGES=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || RXE_PEER_PACKAGES+=(qemu-system-x86)
command -v ip >/dev/null 2>&1 || RXE_PEER_PACKAGES+=(iproute2)
command -v dpkg-deb >/dev/null 2>&1 || RXE_PEER_PACKAGES+=(dpkg)
if [ "${#RXE_PEER_PACKAGES[@]}" -gt 0 ]; then
  echo "install-test-deps: installing ${RXE_PEER_PACKAGES[*]} (Debian packages, for the rxe peer)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${RXE_PEER_PACKAGES[@]}" >/dev/null
fi

tshark --version | head -n 1
python3 -c "import scapy; print('scapy', scapy.VERSION)"
mdbook --version
qemu-system-x86_64 --version | head -n 1
