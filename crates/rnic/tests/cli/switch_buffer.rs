//! Shared switch buffers (`net.switch_buffer = "shared"`), the switches' queue statistics
//! and the queue trace (`net.trace_interval_us`), through the CLI.

use crate::common::rnic_in;
use std::path::{Path, PathBuf};

/// A directory of its own for a test's files.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rnic-swbuf-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON")).expect("JSON")
}

/// A 4:1 incast of 64 KiB writes onto the star's server port.
const INCAST: &[&str] = &[
    "perf",
    "write-bw",
    "-s",
    "65536",
    "-q",
    "4",
    "--clients",
    "4",
    "--reversed",
    "-n",
    "50",
];

fn incast(dir: &Path, name: &str, sets: &[&str]) -> (i32, String, serde_json::Value) {
    let file = format!("{name}.json");
    let mut args: Vec<&str> = INCAST.to_vec();
    for s in sets {
        args.extend(["--set", s]);
    }
    args.extend(["--json", &file]);
    let (code, out, err) = rnic_in(&args, dir);
    assert_eq!(code, 0, "{out}{err}");
    (code, err, json(&dir.join(&file)))
}

fn stat(r: &serde_json::Value, key: &str) -> u64 {
    r["stats"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing"))
}

/// Under PFC a shared pool is lossless: the incast pauses its senders at the level derived
/// from the pool, no frame is dropped, the pool never holds more than its size, and the
/// server port's queue percentiles are reported, ordered.
#[test]
fn a_shared_pool_under_pfc_pauses_at_its_derived_level_and_drops_nothing() {
    let dir = scratch("lossless");
    let (_, _, r) = incast(
        &dir,
        "shared",
        &["net.pfc=true", "net.switch_buffer=shared"],
    );
    assert_eq!(r["bytes_verified"], true);
    assert_eq!(stat(&r, "net.switch_drops"), 0);
    assert!(stat(&r, "net.pfc.pauses") > 0);
    let size = stat(&r, "net.switch_pools.0.size_bytes");
    let used = stat(&r, "net.switch_pools.0.max_used_bytes");
    let xoff = stat(&r, "net.switch_pools.0.pfc_xoff_bytes");
    assert_eq!(size, 16 << 20);
    assert!(used > xoff && used <= size, "used {used}, xoff {xoff}");
    // An ingress pauses above XOFF and is held within XOFF plus its headroom.
    let ingress = stat(&r, "net.pfc.max_ingress_bytes");
    assert!(
        ingress > xoff && ingress < xoff + 64 * 1024,
        "{ingress} vs {xoff}"
    );
    let q = |k: &str| stat(&r, &format!("net.queues.0.{k}"));
    assert!(q("p50_bytes") <= q("p95_bytes") && q("p95_bytes") <= q("p99_bytes"));
    assert!(q("p99_bytes") <= q("max_bytes") && q("max_bytes") <= used);
    // The per-port model's figures for the same run stay as they were: no pool reported.
    let (_, _, per_port) = incast(&dir, "per-port", &["net.pfc=true"]);
    assert!(per_port["stats"]
        .as_object()
        .unwrap()
        .keys()
        .all(|k| !k.starts_with("net.switch_pools")));
    std::fs::remove_dir_all(&dir).ok();
}

/// Without PFC a shared pool bounds each egress queue by the pool's free bytes: a pool
/// smaller than the incast's burst drops, and the queue never passes half the pool (the
/// dynamic threshold with α = 1 on a single congested port).
#[test]
fn a_lossy_shared_pool_limits_the_congested_queue_to_its_free_bytes() {
    let dir = scratch("lossy");
    let pool = 200_000u64;
    let (_, _, r) = incast(
        &dir,
        "lossy",
        &[
            "net.switch_buffer=shared",
            &format!("net.switch_buffer_bytes={pool}"),
        ],
    );
    assert!(stat(&r, "net.switch_drops") > 0);
    assert!(stat(&r, "net.switch_pools.0.drops") > 0);
    assert!(stat(&r, "net.queues.0.max_bytes") <= pool / 2 + 4200);
    assert!(stat(&r, "net.switch_pools.0.max_used_bytes") <= pool);
    std::fs::remove_dir_all(&dir).ok();
}

/// The queue trace: FILE-queues.csv beside the JSON, one line per switch output port and
/// NIC per sample, queues and pauses consistent with the run; `rnic run` writes it too.
#[test]
fn the_queue_trace_is_written_beside_the_json() {
    let dir = scratch("trace");
    let (_, _, r) = incast(&dir, "t", &["net.pfc=true", "net.trace_interval_us=5"]);
    let csv = std::fs::read_to_string(dir.join("t-queues.csv")).expect("the trace");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("time_us,device,port,queue_bytes,paused"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Star of 5 hosts: 5 switch ports and 5 NICs per sample.
    assert_eq!(rows.len() % 10, 0);
    let max_q = rows
        .iter()
        .filter_map(|r| r[3].parse::<u64>().ok())
        .max()
        .unwrap();
    assert!(max_q > 0 && max_q <= stat(&r, "net.queues.0.max_bytes"));
    let paused_nics = rows
        .iter()
        .filter(|r| r[1].starts_with("node") && r[4] == "1")
        .count();
    assert!(paused_nics > 0, "the incast pauses the clients");
    // Without the field there is no trace.
    incast(&dir, "n", &["net.pfc=true"]);
    assert!(!dir.join("n-queues.csv").exists());
    // `rnic run` of flows writes it beside its JSON too.
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"s\"\nseed = 1\n[set]\nnet.clients = 2\nnet.pfc = true\n\
         net.trace_interval_us = 10\n[[flow]]\ntest = \"write-bw\"\nsize = 65536\n\
         iters = 20\nclients = [1, 2]\n",
    )
    .unwrap();
    let (code, out, err) = rnic_in(&["run", "s.toml", "--json", "s.json"], &dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(dir.join("s-queues.csv").exists());
    assert!(json(&dir.join("s.json"))["queues"].is_array());
    std::fs::remove_dir_all(&dir).ok();
}

/// Bad input names the field, exit 2: an unknown mode or mark point, a negative interval, a
/// pool too small
/// for PFC's headroom, and a pool whose derived pause level is not above ECN's kmin.
#[test]
fn bad_buffer_settings_are_refused_naming_the_field() {
    let dir = scratch("bad");
    for (sets, want) in [
        (vec!["net.switch_buffer=pooled"], "net.switch_buffer"),
        (vec!["net.ecn.mark_point=arrival"], "net.ecn.mark_point"),
        (vec!["net.trace_interval_us=-1"], "net.trace_interval_us"),
        // Out of order with marking off too.
        (
            vec!["net.ecn.kmin_bytes=2000000", "net.ecn.kmax_bytes=1000000"],
            "net.ecn.kmin_bytes = 2000000 must be below net.ecn.kmax_bytes",
        ),
        (
            vec![
                "net.pfc=true",
                "net.switch_buffer=shared",
                "net.switch_buffer_bytes=100000",
            ],
            "net.switch_buffer_bytes",
        ),
        (
            vec![
                "net.pfc=true",
                "net.switch_buffer=shared",
                "net.ecn.enabled=true",
                "net.ecn.kmin_bytes=2000000",
                "net.ecn.kmax_bytes=3000000",
            ],
            "net.ecn.kmin_bytes",
        ),
    ] {
        let mut args: Vec<&str> = INCAST.to_vec();
        for s in &sets {
            args.extend(["--set", s]);
        }
        let (code, _, err) = rnic_in(&args, &dir);
        assert_eq!(code, 2, "{sets:?}: {err}");
        assert!(
            err.contains(want) && !err.contains("panicked"),
            "{sets:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Per-port buffers with PFC and ECN at their defaults pause before they mark: the run says
/// so (the defaults stay, so recorded runs do not move).
#[test]
fn per_port_defaults_that_pause_before_marking_are_noted() {
    let dir = scratch("note");
    let (_, err, _) = incast(&dir, "n", &["net.pfc=true", "net.ecn.enabled=true"]);
    assert!(err.contains("is not above net.ecn.kmin_bytes"), "{err}");
    let (_, err, _) = incast(
        &dir,
        "s",
        &[
            "net.pfc=true",
            "net.ecn.enabled=true",
            "net.switch_buffer=shared",
        ],
    );
    assert!(!err.contains("is not above net.ecn.kmin_bytes"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
