//! Golden outputs: a fixed set of runs (every profile and each paper's mechanism; WRITE,
//! READ, SEND and atomics; bandwidth and latency; 1 to 3,000 QPs; loss with reordering; RC
//! and UC/UD; PFC; captures of go-back-N and of ORNIC's out-of-order wire) whose JSON and
//! pcap bytes were recorded from the model and must not change. A restructuring that moves
//! a number is a bug until the number is explained; then the files are re-recorded with
//! `RNIC_BLESS=1 cargo test -p rnic --test golden` in the same commit as the explanation.
//!
//! Every JSON field is compared except `events` (fewer events for the same results is a
//! goal) and `wall_seconds`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (name, arguments of `rnic perf`).
const RUNS: &[(&str, &[&str])] = &[
    ("write-bw-64B-1qp", &["write-bw", "-s", "64", "-n", "200"]),
    (
        "write-bw-64B-300qp-window",
        &[
            "write-bw",
            "-s",
            "64",
            "-q",
            "300",
            "--clients",
            "10",
            "-D",
            "0.0002",
        ],
    ),
    (
        "read-bw-4K-3000qp-fcfs",
        &[
            "read-bw",
            "-s",
            "4096",
            "-q",
            "3000",
            "--clients",
            "10",
            "-t",
            "2",
            "-n",
            "5",
        ],
    ),
    (
        "send-bw-1K-8qp",
        &[
            "send-bw",
            "-s",
            "1024",
            "-q",
            "8",
            "--clients",
            "2",
            "-n",
            "100",
        ],
    ),
    ("atomic-bw-4qp", &["atomic-bw", "-q", "4", "-n", "100"]),
    (
        "atomic-bw-cas",
        &["atomic-bw", "-q", "2", "-n", "50", "-A", "CMP_AND_SWAP"],
    ),
    ("write-lat-64B", &["write-lat", "-s", "64", "-n", "200"]),
    ("read-lat-2B", &["read-lat", "-n", "100"]),
    ("send-lat-256B", &["send-lat", "-s", "256", "-n", "100"]),
    ("atomic-lat", &["atomic-lat", "-n", "100"]),
    (
        "write-bw-csrna-3000qp-window",
        &[
            "write-bw",
            "-s",
            "64",
            "-q",
            "3000",
            "--clients",
            "10",
            "-t",
            "16",
            "-D",
            "0.0003",
            "--profile",
            "csrna",
            "--set",
            "sim.warmup_us=500",
        ],
    ),
    (
        "write-lat-csrna-procs",
        &[
            "write-lat",
            "--procs",
            "10",
            "-q",
            "300",
            "--clients",
            "10",
            "-n",
            "2000",
            "--profile",
            "csrna",
        ],
    ),
    (
        "read-bw-csrna-ddr-300qp",
        &[
            "read-bw",
            "-s",
            "1024",
            "-q",
            "300",
            "--clients",
            "10",
            "-D",
            "0.0002",
            "--profile",
            "csrna",
            "--set",
            "nic.qpc_placement=ddr",
        ],
    ),
    (
        "write-bw-64K-loss-reorder",
        &[
            "write-bw",
            "-s",
            "65536",
            "-q",
            "2",
            "-n",
            "50",
            "--set",
            "net.impair.loss=0.01",
            "--set",
            "net.impair.reorder_depth=4",
            "--seed",
            "7",
        ],
    ),
    (
        "read-bw-8K-loss",
        &[
            "read-bw",
            "-s",
            "8192",
            "-q",
            "2",
            "-n",
            "50",
            "--set",
            "net.impair.loss=0.01",
            "--seed",
            "3",
        ],
    ),
    (
        "write-bw-2M-pmtu1024",
        &[
            "write-bw", "-s", "2097152", "-t", "4", "-n", "5", "-m", "1024",
        ],
    ),
    (
        "read-bw-all-sizes",
        &["read-bw", "-a", "-n", "5", "-t", "2"],
    ),
];

/// Runs of each paper's mechanism and of the network's features, recorded before the NIC is
/// restructured into stages (each `rnic perf` run's JSON carries every statistic): csRNA's
/// are in [`RUNS`]; here prefetching (scheduler and software triggers), ORNIC (reordered,
/// sprayed with loss), the long link with and without the WAN accelerator, PFC on a
/// leaf-spine incast, UC and UD under loss, RDMA CM under loss and reordering, and TX
/// isolation on one tenant (its flows with tenants are [`FLOW_RUNS`]).
const MECHANISM_RUNS: &[(&str, &str)] = &[
    ("prefetch-sched-1024qp", "write-bw -s 64 -q 1024 --clients 4 -n 20 -t 4 --profile prefetch"),
    ("prefetch-sched-sw-1024qp", "write-bw -s 64 -q 1024 --clients 4 -n 20 -t 4 --profile prefetch --set nic.prefetch=sched+sw"),
    ("ornic-reordered-1M", "write-bw -s 1048576 -n 5 -q 2 --profile ornic --set net.impair.reorder_window=64"),
    ("ornic-sprayed-loss", "write-bw -s 262144 -n 8 -q 2 --profile ornic --set net.spray.policy=round_robin --set net.impair.loss=0.01"),
    ("wan-100km", "write-bw -s 4096 -n 400 -t 64 --profile wan"),
    ("wan-100km-accel-loss", "write-bw -s 4096 -n 400 -t 64 --profile wan --set net.wan_accel=true --set net.impair.loss=0.001"),
    ("pfc-leaf-spine-incast", "write-bw -s 65536 -q 4 --clients 4 --reversed -n 50 --set net.pfc=true --set net.topology=../../scenarios/topologies/leaf-spine.toml"),
    ("ud-send-loss", "send-bw -c UD -s 1024 -q 4 --clients 2 -n 200 --set net.impair.loss=0.01"),
    ("uc-write-loss", "write-bw -c UC -s 8192 -q 2 -n 100 --set net.impair.loss=0.01"),
    ("rc-cm-loss-reorder", "write-bw -s 1024 -q 2 -n 100 -R --set net.impair.loss=0.01 --set net.impair.reorder_depth=3"),
    ("isolation-v2-one-tenant", "write-bw -s 65536 -q 4 -n 40 --profile isolation"),
];

/// Runs of the scenario `golden/mechanisms/ls-beside-bs.toml` (an LS ping-pong beside two
/// BS streams, three tenants) under each TX architecture: (name, `rnic run` flags).
const FLOW_RUNS: &[(&str, &str)] = &[
    ("iso-baseline", "--profile baseline"),
    ("iso-v1", "--profile isolation --set nic.tx_isolation=v1"),
    ("iso-v2", "--profile isolation"),
    ("iso-v2-coupled-rtc", "--profile isolation --set nic.iso_backpressure=coupled --set nic.iso_transport=run_to_completion"),
];

/// The runs whose captures are compared byte for byte: go-back-N RC, and ORNIC's
/// out-of-order wire (its packets through the reordering emulator).
const CAPTURE_RUNS: &[(&str, &str)] = &[
    ("send-bw-4K-pcap", "send-bw -s 4096 -n 20 -t 8"),
    (
        "mechanisms/ornic-reordered-pcap",
        "write-bw -s 16384 -n 5 --profile ornic --set net.impair.reorder_window=64",
    ),
];

/// A command line's arguments, split at spaces (no argument here holds one).
fn words(args: &str) -> Vec<&str> {
    args.split_whitespace().collect()
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn bless() -> bool {
    std::env::var("RNIC_BLESS").is_ok_and(|v| v == "1")
}

fn perf(args: &[&str], extra: &[&str]) -> serde_json::Value {
    rnic_json("perf", args, extra)
}

/// `rnic COMMAND ARGS EXTRA --json -` from this crate's folder, its JSON without the fields
/// that vary from run to run.
fn rnic_json(command: &str, args: &[&str], extra: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .arg(command)
        .args(args)
        .args(extra)
        .args(["--json", "-"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CI", "true")
        .output()
        .expect("run rnic");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        panic!(
            "{args:?}: no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let o = v.as_object_mut().expect("a JSON object");
    o.remove("events");
    o.remove("wall_seconds");
    v
}

/// Compares `got` with the golden file `name.json` (or writes it when blessing); returns
/// the differing fields.
fn check(name: &str, got: &serde_json::Value) -> Vec<String> {
    let path = dir().join(format!("{name}.json"));
    if bless() {
        std::fs::create_dir_all(dir()).unwrap();
        let mut s = serde_json::to_string_pretty(got).unwrap();
        s.push('\n');
        std::fs::write(&path, s).unwrap();
        return Vec::new();
    }
    let want: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (record with RNIC_BLESS=1)", path.display())),
    )
    .unwrap();
    let mut diffs = Vec::new();
    diff("", &want, got, &mut diffs);
    diffs.into_iter().map(|d| format!("{name}: {d}")).collect()
}

fn diff(at: &str, want: &serde_json::Value, got: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value::Object;
    match (want, got) {
        (Object(w), Object(g)) => {
            for (k, wv) in w {
                let p = format!("{at}.{k}");
                match g.get(k) {
                    Some(gv) => diff(&p, wv, gv, out),
                    None => out.push(format!("{p} missing")),
                }
            }
            for k in g.keys().filter(|k| !w.contains_key(*k)) {
                out.push(format!("{at}.{k} is new"));
            }
        }
        _ if want != got => out.push(format!("{at}: {want} -> {got}")),
        _ => {}
    }
}

#[test]
fn results_match_the_recorded_runs() {
    let diffs: Vec<String> = RUNS
        .iter()
        .flat_map(|(name, args)| check(name, &perf(args, &[])))
        .collect();
    assert!(diffs.is_empty(), "changed:\n{}", diffs.join("\n"));
}

#[test]
fn each_mechanism_matches_its_recorded_runs() {
    let diffs: Vec<String> = MECHANISM_RUNS
        .iter()
        .flat_map(|(name, args)| check(&format!("mechanisms/{name}"), &perf(&words(args), &[])))
        .collect();
    assert!(diffs.is_empty(), "changed:\n{}", diffs.join("\n"));
}

#[test]
fn each_tx_architecture_matches_its_recorded_flows() {
    let scenario = "tests/golden/mechanisms/ls-beside-bs.toml";
    let diffs: Vec<String> = FLOW_RUNS
        .iter()
        .flat_map(|(name, args)| {
            let got = rnic_json("run", &[scenario], &words(args));
            check(&format!("mechanisms/{name}"), &got)
        })
        .collect();
    assert!(diffs.is_empty(), "changed:\n{}", diffs.join("\n"));
}

#[test]
fn the_captures_match_the_recorded_bytes() {
    for (name, args) in CAPTURE_RUNS {
        let tmp = std::env::temp_dir().join(format!("rnic-golden-{}.pcap", std::process::id()));
        let result = perf(&words(args), &["--pcap", tmp.to_str().unwrap()]);
        let bytes = std::fs::read(&tmp).unwrap();
        let _ = std::fs::remove_file(&tmp);
        let path = dir().join(format!("{name}.pcap"));
        if bless() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let diffs = check(name, &result);
        assert!(diffs.is_empty(), "changed:\n{}", diffs.join("\n"));
        let want = std::fs::read(&path).unwrap();
        assert!(
            want == bytes,
            "{name}: the capture changed ({} bytes, was {})",
            bytes.len(),
            want.len()
        );
    }
}

/// `nic.dma_read_arbiter = "fifo"` is the model before payload streaming: every recorded
/// number of that model (`golden/fifo/`, recorded before streaming) is reproduced exactly;
/// only fields added since (the new counters, the new config field) are new. The records
/// predate the steady-state detection of `-D` windows, so `-D` runs are compared with the
/// old fixed warm-up (`sim.warmup_us = 10`, the old default) and without their bandwidth
/// latencies, which now count the window's operations only (as the rate always did).
/// A fix that changes the fifo model too re-records them (`RNIC_BLESS=1`) in its commit.
#[test]
fn the_fifo_arbiter_reproduces_the_runs_recorded_before_streaming() {
    let fifo = dir().join("fifo");
    let mut diffs = Vec::new();
    for (name, args) in RUNS {
        let timed = args.contains(&"-D");
        let mut extra = vec!["--set", "nic.dma_read_arbiter=fifo"];
        if timed && !args.iter().any(|a| a.starts_with("sim.warmup_us")) {
            extra.extend(["--set", "sim.warmup_us=10"]);
        }
        let got = perf(args, &extra);
        let path = fifo.join(format!("{name}.json"));
        if bless() {
            let mut s = serde_json::to_string_pretty(&got).unwrap();
            s.push('\n');
            std::fs::write(&path, s).unwrap();
            continue;
        }
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut d = Vec::new();
        diff("", &want, &got, &mut d);
        diffs.extend(
            d.into_iter()
                .filter(|d| !d.ends_with(" is new"))
                .filter(|d| !(timed && d.starts_with(".latency_us.")))
                .map(|d| format!("{name}: {d}")),
        );
    }
    assert!(diffs.is_empty(), "changed:\n{}", diffs.join("\n"));
}
