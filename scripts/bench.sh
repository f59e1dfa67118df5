#!/usr/bin/env bash
# Every speed figure the README quotes, measured on this machine.
#   scripts/bench.sh [--base REV] [--runs N] [--repro]
#                                    side by side, this tree and REV (default afb879c, the
#                                    commit before the event-count work): events per
#                                    message, events/s and simulated messages per wall
#                                    second on the 300-QP reference run (N paired runs,
#                                    default 3, medians), peak memory at 1 M QPs (one run
#                                    each, about 1-2 minutes each), and with --repro the
#                                    wall time of `rnic repro all` (several minutes each)
#   scripts/bench.sh readme          the other README figures (about 7 minutes)
#   scripts/bench.sh fabric          the fabric point: WebSearch at 50 % load on a k = 8
#                                    fat-tree for 10 ms and a k = 16 one for 1 ms (one run
#                                    each, a few minutes and about 3 GB each)
#   scripts/bench.sh compare [REV]   wall-time ratios of two reference commands against REV
#                                    (default: the last commit before the model became
#                                    components), each 5 times in turn
cd "$(dirname "$0")/.."
BASE_REV=77d85bd
SIDE_BASE_REV=afb879c
cargo build --release -p rnic --quiet
NEW=./target/release/rnic
# The reference runs measure the simulator's speed on a fixed amount of work, so they fix the
# warm-up at the old default (10 µs) instead of waiting for the steady state (which decides
# how much is simulated, and which older revisions do not have). The largest repro points
# run as the repro runs them.
FIXED="--set sim.warmup_us=10"

# Wall seconds of one whole run (the process, start-up included).
wall() {
    local bin=$1; shift
    local start end
    start=$(date +%s.%N)
    "$bin" "$@" >/dev/null 2>&1 || true
    end=$(date +%s.%N)
    python3 -c "print(f'{$end - $start:.3f}')"
}

# The release binary of revision $1, built once into /tmp/rnic-bench-base-REV from the
# revision's files (`git archive`: no worktree is registered); prints its path.
base_binary() {
    local rev=$1
    local dir=/tmp/rnic-bench-base-$rev
    if [ ! -x "$dir/target/release/rnic" ]; then
        rm -rf "$dir"
        mkdir -p "$dir"
        git archive "$rev" | tar -x -C "$dir"
        (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release -p rnic --quiet) >&2
    fi
    echo "$dir/target/release/rnic"
}

compare() {
    local rev=${1:-$BASE_REV}
    local OLD
    OLD=$(base_binary "$rev")
    for args in "write-bw -s 64 -q 300 --clients 10 -D 0.01 $FIXED" \
                "write-bw -s 64 -q 51200 --clients 10 -t 16 -D 0.001 --profile csrna $FIXED"; do
        echo "== $args: wall seconds, $rev vs this tree, 5 runs each in turn"
        local ratios=()
        for i in 1 2 3 4 5; do
            wo=$(wall "$OLD" perf $args)
            wn=$(wall "$NEW" perf $args)
            ratios+=("$(python3 -c "print(f'{$wo/$wn:.3f}')")")
            echo "  run $i: $rev ${wo}s, this tree ${wn}s"
        done
        python3 -c "import statistics; r=[$(IFS=,; echo "${ratios[*]}")]; print(f'  speed-up (old wall / new wall): median {statistics.median(r):.3f}, min {min(r):.3f}, max {max(r):.3f}')"
    done
}

# The side-by-side report (the default): this tree against a base revision.
side_by_side() {
    local rev=$SIDE_BASE_REV runs=3 repro=0
    while [ $# -gt 0 ]; do
        case $1 in
            --base) rev=${2:?--base needs a revision}; shift 2 ;;
            --runs) runs=${2:?--runs needs a count}; shift 2 ;;
            --repro) repro=1; shift ;;
            *) echo "bench.sh: unknown argument '$1' (use --base REV, --runs N, --repro, or the subcommands readme / compare)" >&2; exit 2 ;;
        esac
    done
    local OLD out=/tmp/rnic-bench-side
    OLD=$(base_binary "$rev")
    # The binary of a side: the base revision's or this tree's.
    side_bin() { if [ "$1" = base ]; then echo "$OLD"; else echo "$NEW"; fi; }
    rm -rf "$out"
    mkdir -p "$out"
    local ref="write-bw -s 64 -q 300 --clients 10 -D 0.01 $FIXED"
    echo "== rnic perf $ref: $runs paired runs ($rev, this tree, in turn)"
    for i in $(seq 1 "$runs"); do
        for side in base tree; do
            local bin
            bin=$(side_bin $side)
            /usr/bin/time -f "%U %S %M" -o "$out/$side-$i.time" \
                "$bin" perf $ref --json "$out/$side-$i.json" >/dev/null 2>&1
        done
    done
    local mem="write-bw -s 64 -q 1000000 --clients 10 -t 1 -n 5 --profile csrna"
    echo "== rnic perf $mem: peak memory, one run each"
    for side in base tree; do
        local bin
        bin=$(side_bin $side)
        /usr/bin/time -f "%U %S %M" -o "$out/$side-mem.time" \
            "$bin" perf $mem --json "$out/$side-mem.json" >/dev/null 2>&1
    done
    if [ $repro = 1 ]; then
        echo "== rnic repro all: wall time, one run each"
        for side in base tree; do
            local bin
            bin=$(side_bin $side)
            local start end
            start=$(date +%s.%N)
            "$bin" repro all --quiet --out "$out/repro-$side" >/dev/null 2>&1 || true
            end=$(date +%s.%N)
            python3 -c "print(f'{$end - $start:.1f}')" >"$out/$side-repro.wall"
        done
    fi
    python3 - "$out" "$runs" "$rev" <<'PY'
import json, statistics, sys, os
out, runs, rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(side, tag):
    d = json.load(open(f"{out}/{side}-{tag}.json"))
    user, sys_, kib = open(f"{out}/{side}-{tag}.time").read().split()[-3:]
    # Messages of the whole run (warm-up included) whose payload arrived and was verified.
    msgs = d["verified_bytes"] / d["size_bytes"]
    return dict(events=d["events"], msgs=msgs, wall=d["wall_seconds"],
                cpu=float(user) + float(sys_), rss_mb=int(kib) / 1024)
rows = []
for side in ("base", "tree"):
    rs = [load(side, str(i)) for i in range(1, runs + 1)]
    med = lambda f: statistics.median(f(r) for r in rs)
    m = load(side, "mem")
    repro = f"{out}/{side}-repro.wall"
    rows.append({
        "events per message": f"{med(lambda r: r['events'] / r['msgs']):.2f}",
        "events (reference run)": f"{med(lambda r: r['events']) / 1e6:.2f} M",
        "wall s (simulation loop)": f"{med(lambda r: r['wall']):.3f}",
        "process CPU s": f"{med(lambda r: r['cpu']):.3f}",
        "M events per wall s": f"{med(lambda r: r['events'] / r['wall']) / 1e6:.2f}",
        "K simulated messages per wall s": f"{med(lambda r: r['msgs'] / r['wall']) / 1e3:.0f}",
        "K simulated messages per CPU s": f"{med(lambda r: r['msgs'] / r['cpu']) / 1e3:.0f}",
        "peak MB at 1 M QPs": f"{m['rss_mb']:.0f}",
        "wall s at 1 M QPs": f"{m['wall']:.1f}",
        "repro all wall s": open(repro).read().strip() if os.path.exists(repro) else "-",
    })
print(f"\n{'':34} {rev:>12} {'this tree':>12}")
for k in rows[0]:
    print(f"{k:34} {rows[0][k]:>12} {rows[1][k]:>12}")
print(f"(medians of {runs} paired runs; the machine is shared, so compare within a row)")
PY
}

# One fabric scenario: wall and CPU time, peak memory, events per simulated data packet
# (each flow's bytes in PMTU-sized packets; ACKs, CNPs and pauses are not counted as
# packets) and data packets per wall and per CPU second.
fabric_point() {
    local scenario=$1 json=/tmp/rnic-bench-fabric.json times=/tmp/rnic-bench-fabric.time
    echo "== $scenario"
    /usr/bin/time -f "%e %U %S %M" -o "$times" $NEW run "$scenario" --quiet --json "$json" >/dev/null
    python3 - "$json" "$times" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall, user, sys_s, rss_kib = (float(x) for x in open(sys.argv[2]).read().split())
pmtu = 4096
packets = sum(-(-f["size_bytes"] // pmtu) for f in d["workload"]["flows"])
cpu = user + sys_s
print(f"{len(d['workload']['flows'])} flows, {d['simulated_time_us'] / 1e3:.1f} ms simulated, "
      f"{packets / 1e6:.2f} M data packets, {d['events'] / 1e6:.1f} M events "
      f"({d['events'] / packets:.0f} per data packet)")
print(f"{wall:.1f} s wall, {cpu:.1f} s CPU: {packets / wall / 1e3:.0f} K data packets per wall "
      f"second, {packets / cpu / 1e3:.0f} K per CPU second; peak memory {rss_kib / 2**20:.1f} GiB")
PY
}

case "${1:-}" in
    compare) compare "${2:-}"; exit 0 ;;
    fabric)
        fabric_point scenarios/fabrics/bench-k8.toml
        fabric_point scenarios/fabrics/bench-k16.toml
        exit 0 ;;
    readme) ;;
    *) side_by_side "$@"; exit 0 ;;
esac

echo "== simulator: write-bw -s 64 -q 1024 --clients 10, 10 ms simulated"
$NEW perf write-bw -s 64 -q 1024 --clients 10 -D 0.01 $FIXED --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events in {d['wall_seconds']:.3f} s wall = {d['events']/d['wall_seconds']/1e6:.1f} M events/s; {d['msg_rate_mops']:.1f} Mops simulated\")"
echo "== simulator: write-bw -s 64 -q 300 --clients 10 (peak), 10 ms simulated"
$NEW perf write-bw -s 64 -q 300 --clients 10 -D 0.01 $FIXED --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events in {d['wall_seconds']:.3f} s wall = {d['events']/d['wall_seconds']/1e6:.1f} M events/s; {d['msg_rate_mops']:.1f} Mops simulated; {d['ops_completed']/d['wall_seconds']/1e3:.0f} K simulated messages per wall second (window)\")"
echo "== memory: 51 200 QPs, csrna, the largest repro point (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" $NEW perf write-bw -s 64 -q 51200 --clients 10 -t 64 -D 0.0005 --profile csrna --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events; window opened at {d['window_open_us']/1e3:.1f} ms\")"
echo "== memory: 51 200 QPs, 4 KiB, csrna, the largest placement point (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" $NEW perf write-bw -s 4096 -q 51200 --clients 10 -t 16 -D 0.0005 --profile csrna --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events; window opened at {d['window_open_us']/1e3:.1f} ms\")"
echo "== memory: 100 000 QPs (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" $NEW perf write-bw -s 64 -q 100000 --clients 10 -t 16 -D 0.001 $FIXED >/dev/null
echo "== memory: 100 000 QPs at perftest's default -t 128"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" $NEW perf write-bw -s 64 -q 100000 --clients 10 -D 0.001 $FIXED >/dev/null
compare
echo "== criterion: event queue, parse+ICRC, transport throughput"
cargo bench -p rnic-bench -- --warm-up-time 1 --measurement-time 3 2>/dev/null | grep -E "^[a-z_/0-9]+|time:|thrpt:"
