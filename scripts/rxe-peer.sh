#!/usr/bin/env bash
# The independent RoCEv2 peer for rnic's interop tests: Linux soft-RoCE (rdma_rxe) in a QEMU guest.
#
# The host's own kernel has no InfiniBand stack, so the peer runs in a small guest made only of
# Debian 12 packages (no download outside the package registries):
#   - the stock kernel (linux-image-amd64, 6.1) and the modules rxe and its NIC need;
#   - an initramfs with busybox-static, rdma-core, ibverbs-providers, ibverbs-utils,
#     rdmacm-utils, perftest and iproute2, with the shared libraries they need.
# QEMU runs it under TCG (`-accel tcg -cpu max`): nested KVM hangs after the decompressor on
# these machines and `-cpu host` aborts. Its virtio NIC sits on a tap device inside a network
# namespace the script creates; the host end of the tap has HOST_IP, the guest GUEST_IP, on one
# /24 with no NAT (the RoCE ICRC covers the IP addresses, so nothing may rewrite them). A host
# process run with `ip netns exec "$(rxe-peer.sh netns)" ...` talks to the guest directly.
#
# Commands are run in the guest by a tiny agent rather than over the serial console: busybox
# `nc -ll -e /agent` listens on AGENT_PORT, forks one shell per connection, runs the line it
# receives with `sh -c`, and ends the output with a status marker. One connection per command
# means several commands can run at once (an `ib_write_bw` server in the background while a
# client runs), and each returns its own output and exit status. The serial console goes to a
# log file kept for diagnosis.
#
# Usage: scripts/rxe-peer.sh COMMAND
#   build          build the guest (cached under target/rxe-guest/; done by `start` too)
#   start          boot the guest and wait until rxe0 is ACTIVE
#   run CMD...     run CMD in the guest (its words joined by spaces and given to `sh -c`, as
#                  ssh does); prints its output (stdout and stderr merged), exits with its status
#                  (255 when no status came within RXE_PEER_RUN_LIMIT_S: the guest stopped
#                  answering).
#                  The guest's sh is busybox's, which runs its own applet for a bare name that is
#                  one (tc, ip, ...): call iproute2's tools by path (/sbin/tc, /bin/ip)
#   netem ARGS...  set the guest NIC's root qdisc to `netem ARGS` (e.g. `loss 1% reorder 25% 50%
#                  delay 1ms`); `netem off` removes it
#   alive          exit 0 when the guest's agent answers within 20 s (its network works)
#   stop           stop the guest and delete the namespace (safe to call twice)
#   netns          print the namespace's name
#   host-ip | guest-ip   print the address of each end
#   console        print the guest's serial console log
# Environment:
#   RXE_PEER_ID         instance name (default `default`): concurrent instances with different ids
#                       get their own namespace, run directory and guest; same-id users share one
#   RXE_PEER_OWNER_PID  when set at `start`, a watchdog stops the guest once that process is gone
#                       (a test binary that panics or is killed leaves nothing behind)
#   RXE_PEER_BOOT_TIMEOUT_S  how long `start` waits for rxe0 (default 300; TCG is slow)
#   RXE_PEER_RUN_LIMIT_S     how long `run` waits for a command's status (default 180, beyond
#                       the tests' own `timeout 120`): a guest whose virtio NIC stopped
#                       transmitting (seen under TCG: the guest logs `NETDEV WATCHDOG: transmit
#                       queue 0 timed out` and never recovers) would otherwise be waited for
#                       until TCP gives up, a quarter of an hour
#   RXE_PEER_DIR        cache and run directory (default <repo>/target/rxe-guest)
set -euo pipefail

REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRIPT_PATH="$REPO_DIR/scripts/rxe-peer.sh"
RXE_DIR="${RXE_PEER_DIR:-$REPO_DIR/target/rxe-guest}"
PEER_ID="${RXE_PEER_ID:-default}"
RUN_DIR="$RXE_DIR/run/$PEER_ID"
NETNS="rnic-rxe-$PEER_ID"
TAP_DEV="rxetap0"       # lives inside the namespace, so the same name never collides
HOST_IP="10.47.0.1"
GUEST_IP="10.47.0.2"
PREFIX_LEN=24
# Large enough for a 4096-byte RoCE path MTU: rxe derives its active MTU from the netdev MTU
# minus the RoCEv2 headers, so 1500 would cap it at 1024.
LINK_MTU=9000
AGENT_PORT=7001
GUEST_MEM_MB=512
BOOT_TIMEOUT_S="${RXE_PEER_BOOT_TIMEOUT_S:-300}"
# Bump when the guest's contents change, so a cached build is not reused.
BUILD_REVISION=2

# Userland packages extracted into the initramfs. The tools first; the rest are the shared
# libraries they link (checked after extraction: the build fails naming any library missing).
GUEST_TOOL_PACKAGES=(busybox-static rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2)
GUEST_LIBRARY_PACKAGES=(libc6 libgcc-s1 libibverbs1 librdmacm1 libibumad3 libnl-3-200 libnl-route-3-200
  libmnl0 libelf1 libbpf1 libcap2 libselinux1 libpcre2-8-0 libbsd0 libmd0 libtirpc3 libdb5.3
  libxtables12 zlib1g libzstd1 libpci3 libudev1 libgssapi-krb5-2 libkrb5-3 libk5crypto3
  libkrb5support0 libkeyutils1 libcom-err2 libssl3)
# Modules loaded at boot (their dependencies follow from modules.dep). crc32_generic gives rxe
# the kernel crypto "crc32" its ICRC code asks for.
GUEST_MODULES=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover
  net_failover virtio_net crc32_generic ib_core ib_uverbs rdma_rxe sch_netem rdma_ucm)

die() { echo "rxe-peer: $*" >&2; exit 1; }
log() { echo "rxe-peer: $*" >&2; }

require_root() {
  [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces and tap devices)"
}

# The versioned kernel package behind the linux-image-amd64 metapackage (e.g. linux-image-6.1.0-56-amd64).
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

guest_dir() { echo "$RXE_DIR/guest-$1-r$BUILD_REVISION"; }

# ---------------------------------------------------------------------------------------------
# build
# ---------------------------------------------------------------------------------------------

cmd_build() {
  mkdir -p "$RXE_DIR"
  # One builder at a time; a second caller waits and then finds the cache.
  exec 9>"$RXE_DIR/build.lock"
  flock 9
  local kpkg; kpkg="$(kernel_package)"
  if [ -z "$kpkg" ]; then
    # A fresh machine may have no package lists yet.
    apt-get update -qq >/dev/null 2>&1 || true
    kpkg="$(kernel_package)"
  fi
  [ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64 (is the Debian archive reachable?)"
  local kver="${kpkg#linux-image-}"
  local out; out="$(guest_dir "$kver")"
  if [ -f "$out/initrd.cpio.gz" ] && [ -f "$out/vmlinuz" ]; then
    echo "$out"
    return 0
  fi
  log "building the guest for kernel $kver in $out"
  local work="$out.tmp"
  rm -rf "$work"
  mkdir -p "$work/debs" "$work/kernel" "$work/root"
  (cd "$work/debs" && apt-get download "$kpkg" "${GUEST_TOOL_PACKAGES[@]}" "${GUEST_LIBRARY_PACKAGES[@]}" >/dev/null 2>&1) \
    || die "apt-get download failed (is the Debian archive reachable? try apt-get update)"
  dpkg-deb -x "$work/debs/${kpkg}_"*.deb "$work/kernel"
  local deb
  for deb in "$work/debs"/*.deb; do
    case "$(basename "$deb")" in linux-image-*) continue ;; esac
    dpkg-deb -x "$deb" "$work/root"
  done
  install_guest_modules "$work/kernel" "$work/root" "$kver"
  prune_guest_root "$work/root"
  write_guest_init "$work/root"
  check_guest_libraries "$work/root"
  cp "$work/kernel/boot/vmlinuz-$kver" "$work/vmlinuz"
  (cd "$work/root" && find . | "$work/root/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.cpio.gz"
  rm -rf "$work/debs" "$work/kernel" "$work/root"
  rm -rf "$out"
  mv "$work" "$out"
  log "guest built: $(du -sh "$out/initrd.cpio.gz" | cut -f1) initramfs"
  echo "$out"
}

# Copies GUEST_MODULES and everything they depend on (their `depends=` modinfo field) into the
# guest root, and writes a modules.dep with busybox's depmod so the guest's modprobe works.
install_guest_modules() {
  local kernel_root="$1" root="$2" kver="$3"
  local src="$kernel_root/lib/modules/$kver"
  local dst="$root/lib/modules/$kver"
  mkdir -p "$dst"
  local -A seen=()
  local queue=("${GUEST_MODULES[@]}")
  while [ "${#queue[@]}" -gt 0 ]; do
    local name="${queue[0]}"
    queue=("${queue[@]:1}")
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    local path
    path="$(find "$src/kernel" -name "$name.ko" -o -name "${name//_/-}.ko" | head -n 1)"
    [ -n "$path" ] || die "module $name is not in $kver (built in? check modules.builtin)"
    mkdir -p "$dst/$(dirname "${path#"$src"/}")"
    cp "$path" "$dst/${path#"$src"/}"
    local deps
    deps="$(tr '\0' '\n' <"$path" | sed -n 's/^depends=//p' | head -n 1)"
    local dep
    for dep in ${deps//,/ }; do queue+=("$dep"); done
  done
  cp "$src/modules.order" "$src/modules.builtin" "$dst/"
  "$root/bin/busybox" depmod -b "$root" "$kver"
}

# Drops what the guest never reads (documentation, manuals, locales) to keep the initramfs small.
prune_guest_root() {
  rm -rf "$1/usr/share/doc" "$1/usr/share/man" "$1/usr/share/locale" "$1/usr/share/lintian" \
    "$1/usr/share/bug" "$1/usr/share/info"
}

# Every ELF program and library in the guest must find its libraries inside the guest: the
# guest's own loader lists them in a chroot (the host's libraries cannot leak in).
check_guest_libraries() {
  local root="$1"
  ldconfig -r "$root"
  local missing=0 elf
  while IFS= read -r elf; do
    head -c 4 "$elf" | grep -q 'ELF' || continue
    local rel="/${elf#"$root"/}"
    local out
    out="$(chroot "$root" /lib64/ld-linux-x86-64.so.2 --list "$rel" 2>&1 || true)"
    if grep -q 'not found' <<<"$out"; then
      echo "rxe-peer: $rel: $(grep 'not found' <<<"$out" | tr -s ' \t\n' ' ')" >&2
      missing=1
    fi
  done < <(find "$root/usr/bin" "$root/usr/sbin" "$root/bin" "$root/sbin" \
    "$root/usr/lib/x86_64-linux-gnu/libibverbs" -type f 2>/dev/null)
  [ "$missing" -eq 0 ] || die "libraries missing from the guest (add their packages to GUEST_LIBRARY_PACKAGES)"
}

# The guest's /init (PID 1) and /agent (one shell per agent connection).
write_guest_init() {
  local root="$1"
  mkdir -p "$root/proc" "$root/sys" "$root/dev" "$root/tmp" "$root/run" "$root/bb"
  cat >"$root/init" <<'INIT'
#!/bin/busybox sh
# rnic rxe peer guest: mount, load modules, bring up eth0 and rxe0, start the agent.
/bin/busybox --install -s /bb
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/bb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    rxe_peer.ip=*) GUEST_IP="${arg#*=}" ;;
    rxe_peer.mtu=*) LINK_MTU="${arg#*=}" ;;
    rxe_peer.port=*) AGENT_PORT="${arg#*=}" ;;
    rxe_peer.modules=*) MODULES="${arg#*=}" ;;
  esac
done
for m in $(echo "$MODULES" | tr ',' ' '); do
  modprobe "$m" || echo "rxe-peer-guest: modprobe $m failed"
done
ip link set lo up
ip link set eth0 mtu "$LINK_MTU"
ip addr add "$GUEST_IP" dev eth0
ip link set eth0 up
rdma link add rxe0 type rxe netdev eth0 || echo "rxe-peer-guest: rdma link add failed"
nc -ll -p "$AGENT_PORT" -e /agent &
echo "rxe-peer-guest: agent on port $AGENT_PORT"
while ! rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE'; do sleep 0.2; done
echo "rxe-peer-guest: READY $(rdma link show rxe0/1)"
while true; do sleep 3600; done
INIT
  cat >"$root/agent" <<'AGENT'
#!/bin/busybox sh
# One agent connection: read one command line, run it, end with its exit status.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin:/bb HOME=/tmp
cd /tmp
read -r line
sh -c "$line" </dev/null 2>&1
echo "__RXE_PEER_RC=$?"
AGENT
  chmod 755 "$root/init" "$root/agent"
}

# ---------------------------------------------------------------------------------------------
# start / stop
# ---------------------------------------------------------------------------------------------

qemu_pid() { cat "$RUN_DIR/qemu.pid" 2>/dev/null || true; }

qemu_alive() {
  local pid; pid="$(qemu_pid)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

cmd_start() {
  require_root
  command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (scripts/install-test-deps.sh installs it)"
  local gdir; gdir="$(cmd_build)"
  mkdir -p "$RUN_DIR"
  exec 8>"$RUN_DIR.lock"   # beside the run directory, which stop deletes
  flock 8
  if qemu_alive && agent_ready; then
    log "instance $PEER_ID already running"
    return 0
  fi
  # Anything left from a dead instance goes first; on any failure below, everything goes.
  cmd_stop >/dev/null 2>&1 || true
  mkdir -p "$RUN_DIR"
  # On any failure from here on (set -e exits), the EXIT trap tears everything down.
  trap start_failed EXIT
  create_namespace
  local modules; modules="$(IFS=,; echo "${GUEST_MODULES[*]}")"
  local t0; t0="$(date +%s.%N)"
  ip netns exec "$NETNS" qemu-system-x86_64 \
    -accel tcg -cpu max -smp 1 -m "$GUEST_MEM_MB" \
    -nodefaults -display none -no-reboot \
    -kernel "$gdir/vmlinuz" -initrd "$gdir/initrd.cpio.gz" \
    -append "console=ttyS0 panic=-1 rxe_peer.ip=$GUEST_IP/$PREFIX_LEN rxe_peer.mtu=$LINK_MTU rxe_peer.port=$AGENT_PORT rxe_peer.modules=$modules" \
    -netdev "tap,id=net0,ifname=$TAP_DEV,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=net0,mac=52:54:00:47:00:02" \
    -serial "file:$RUN_DIR/console.log" \
    -daemonize -pidfile "$RUN_DIR/qemu.pid"
  start_owner_watchdog
  local deadline=$(( $(date +%s) + BOOT_TIMEOUT_S ))
  until agent_ready; do
    qemu_alive || { log "QEMU exited during boot"; false; }
    [ "$(date +%s)" -lt "$deadline" ] || { log "rxe0 not ACTIVE after ${BOOT_TIMEOUT_S} s"; false; }
    sleep 1
  done
  trap - EXIT
  local t1; t1="$(date +%s.%N)"
  log "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "ready in %.1f s", b - a }') (instance $PEER_ID, netns $NETNS, guest $GUEST_IP)"
}

start_failed() {
  log "start failed; console tail:"
  tail -n 30 "$RUN_DIR/console.log" >&2 2>/dev/null || true
  cmd_stop >/dev/null 2>&1 || true
}

create_namespace() {
  ip netns add "$NETNS"
  ip -n "$NETNS" link set lo up
  ip -n "$NETNS" tuntap add dev "$TAP_DEV" mode tap
  ip -n "$NETNS" link set "$TAP_DEV" mtu "$LINK_MTU"
  ip -n "$NETNS" addr add "$HOST_IP/$PREFIX_LEN" dev "$TAP_DEV"
  ip -n "$NETNS" link set "$TAP_DEV" up
}

# The guest is ready when its agent answers and reports rxe0's port ACTIVE.
agent_ready() {
  RXE_PEER_RUN_LIMIT_S=20 run_in_guest 'rdma link show rxe0/1' 2>/dev/null | grep -q 'state ACTIVE'
}

# Stops the guest when RXE_PEER_OWNER_PID exits (a killed or panicking test leaves nothing behind).
start_owner_watchdog() {
  local owner="${RXE_PEER_OWNER_PID:-}"
  [ -n "$owner" ] || return 0
  setsid bash -c '
    while kill -0 "$1" 2>/dev/null && kill -0 "$(cat "$2" 2>/dev/null)" 2>/dev/null; do sleep 1; done
    RXE_PEER_ID="$4" RXE_PEER_DIR="$5" "$3" stop >/dev/null 2>&1' \
    _ "$owner" "$RUN_DIR/qemu.pid" "$SCRIPT_PATH" "$PEER_ID" "$RXE_DIR" </dev/null >/dev/null 2>&1 &
}

cmd_stop() {
  local pid; pid="$(qemu_pid)"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$RUN_DIR"
  if ip netns list 2>/dev/null | grep -qw "^$NETNS"; then
    ip netns delete "$NETNS"
  fi
}

# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------

# Sends one command line to the guest agent; streams its output and returns its exit status
# (255 when the connection ends without a status: guest down, agent killed, or no status
# within RXE_PEER_RUN_LIMIT_S; `cat` is exec'd so that `timeout` ends the connection itself).
run_in_guest() {
  local line="$1"
  local limit="${RXE_PEER_RUN_LIMIT_S:-180}"
  # `timeout 0` would wait for ever.
  [[ "$limit" =~ ^[1-9][0-9]*$ ]] \
    || die "RXE_PEER_RUN_LIMIT_S=$limit: give a whole number of seconds above 0"
  local status=255
  local out
  while IFS= read -r out || [ -n "$out" ]; do
    case "$out" in
      *__RXE_PEER_RC=*)
        [ -n "${out%%__RXE_PEER_RC=*}" ] && printf '%s\n' "${out%%__RXE_PEER_RC=*}"
        status="${out##*__RXE_PEER_RC=}"
        ;;
      *) printf '%s\n' "$out" ;;
    esac
  done < <(ip netns exec "$NETNS" timeout "$limit" bash -c \
    'exec 3<>"/dev/tcp/$1/$2" || exit 1; printf "%s\n" "$3" >&3; exec cat <&3' \
    _ "$GUEST_IP" "$AGENT_PORT" "$line" 2>/dev/null)
  return "$status"
}

cmd_run() {
  [ "$#" -gt 0 ] || die "run needs a command"
  run_in_guest "$*"
}

cmd_alive() {
  RXE_PEER_RUN_LIMIT_S=20 run_in_guest true >/dev/null
}

cmd_netem() {
  [ "$#" -gt 0 ] || die "netem needs arguments (e.g. loss 1% reorder 25% 50% delay 1ms) or off"
  # tc answers at once: a guest silent for 20 s has stopped answering.
  if [ "$1" = off ]; then
    RXE_PEER_RUN_LIMIT_S=20 run_in_guest '/sbin/tc qdisc del dev eth0 root 2>/dev/null; true'
  else
    RXE_PEER_RUN_LIMIT_S=20 run_in_guest "/sbin/tc qdisc replace dev eth0 root netem $*"
  fi
}

main() {
  local cmd="${1:-}"
  [ "$#" -gt 0 ] && shift
  case "$cmd" in
    build) cmd_build >/dev/null ;;
    start) cmd_start ;;
    run) cmd_run "$@" ;;
    alive) cmd_alive ;;
    netem) cmd_netem "$@" ;;
    stop) cmd_stop ;;
    netns) echo "$NETNS" ;;
    host-ip) echo "$HOST_IP" ;;
    guest-ip) echo "$GUEST_IP" ;;
    console) cat "$RUN_DIR/console.log" ;;
    *) die "usage: rxe-peer.sh build|start|run CMD...|alive|netem ARGS...|stop|netns|host-ip|guest-ip|console" ;;
  esac
}

main "$@"
