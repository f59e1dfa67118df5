#!/usr/bin/env bash
# Every speed figure the README quotes, measured on this machine.
#   scripts/bench.sh                 all of them (about 7 minutes)
#   scripts/bench.sh compare [REV]   only the side-by-side comparison of this tree's binary
#                                    with REV's (default: the last commit before the model
#                                    became components), each reference run 5 times in turn
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_REV=77d85bd
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

compare() {
    local rev=${1:-$BASE_REV}
    local dir=/tmp/rnic-bench-base-$rev
    if [ ! -x "$dir/target/release/rnic" ]; then
        rm -rf "$dir"
        git worktree add --force "$dir" "$rev" >/dev/null
        (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo build --release -p rnic --quiet)
    fi
    local OLD=$dir/target/release/rnic
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

if [ "${1:-}" = compare ]; then
    compare "${2:-}"
    exit 0
fi

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
