#!/usr/bin/env bash
# Every speed figure the README quotes, measured on this machine.
#   scripts/bench.sh           all of them (about 4 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p rnic --quiet
echo "== simulator: write-bw -s 64 -q 1024 --clients 10, 10 ms simulated"
./target/release/rnic perf write-bw -s 64 -q 1024 --clients 10 -D 0.01 --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events in {d['wall_seconds']:.3f} s wall = {d['events']/d['wall_seconds']/1e6:.1f} M events/s; {d['msg_rate_mops']:.1f} Mops simulated\")"
echo "== simulator: write-bw -s 64 -q 300 --clients 10 (peak), 10 ms simulated"
./target/release/rnic perf write-bw -s 64 -q 300 --clients 10 -D 0.01 --json /tmp/rnic-bench.json >/dev/null
python3 -c "import json; d=json.load(open('/tmp/rnic-bench.json')); print(f\"{d['events']} events in {d['wall_seconds']:.3f} s wall = {d['events']/d['wall_seconds']/1e6:.1f} M events/s; {d['msg_rate_mops']:.1f} Mops simulated\")"
echo "== memory: 51 200 QPs, csrna, the largest repro point (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" ./target/release/rnic perf write-bw -s 64 -q 51200 --clients 10 -t 64 -D 0.0005 --profile csrna --set sim.warmup_us=26000 >/dev/null
echo "== memory: 51 200 QPs, 4 KiB, csrna, the largest placement point (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" ./target/release/rnic perf write-bw -s 4096 -q 51200 --clients 10 -t 16 -D 0.0005 --profile csrna --set sim.warmup_us=8000 --set sim.warmup_rounds=3 >/dev/null
echo "== memory: 100 000 QPs (peak resident set)"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" ./target/release/rnic perf write-bw -s 64 -q 100000 --clients 10 -t 16 -D 0.001 >/dev/null
echo "== memory: 100 000 QPs at perftest's default -t 128"
/usr/bin/time -f "%M KiB peak RSS, %e s wall" ./target/release/rnic perf write-bw -s 64 -q 100000 --clients 10 -D 0.001 >/dev/null
echo "== criterion: event queue, parse+ICRC, transport throughput"
cargo bench -p rnic-bench -- --warm-up-time 1 --measurement-time 3 2>/dev/null | grep -E "^[a-z_/0-9]+|time:|thrpt:"
