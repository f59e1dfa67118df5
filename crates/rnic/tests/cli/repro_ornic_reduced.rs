//! Reduced reproductions of the ORNIC paper ("ORNIC: A High-Performance RDMA NIC with
//! Out-of-Order Packet Direct Write Method for Multipath Transmission"), so that a change
//! that breaks one of its claims turns the suite red without the full `rnic repro ornic`.
//!
//! - "ornic-sizing": the whole evaluator (computed, no simulation).
//! - "ornic-bitmap-cycles" and "ornic-bitmap-blocks": the same bench, designs and claims on
//!   30 WQEs per cell instead of 100.
//! - "ornic-vs-gbn": the committed sweeps (go-back-N and ORNIC, in order and through the
//!   reordering emulator) at 1 MB only (the full run: 1, 4 and 16 MB).
//! - "ornic-vs-gbn-paths": the committed sweeps (in order on each of 4 paths, sprayed over
//!   them) at 1 MB only; and, without running, that every arm sees the same path delays.
//! - "ornic-throughput": the committed sweep at 64 MB only (the full run: 1 to 256 MB).
//! - "ornic-acks": 2 WQEs per arm instead of 8, every turn, on the simulated wire.
//!
//! Known misses of the model (go-back-N through the emulator and sprayed, below 1 Gb/s only
//! at the smaller sizes; ORNIC through the emulator at 1 MB, 80 % of its in-order rate, since
//! one WQE at a time waits for the emulator's 64-frame hold; see the book's ORNIC chapter)
//! must still be reported, and every other claim must pass.

use rnic::repro::claims_table;
use rnic::repro::ornic::{eval_acks, eval_blocks, eval_cycles, eval_sizing, AcksPlan, TablePlan};
use rnic::repro::Evaluation;

/// Claims the model misses, reported as FAIL by `rnic repro ornic`.
const KNOWN_MISSES: &[&str] = &[
    "ornic-vs-gbn/gbn-reordered",
    "ornic-vs-gbn/ornic-reordered",
    "ornic-vs-gbn-paths/gbn-sprayed",
];

/// Every registered claim of `id` was reported, and passed unless it is a known miss.
fn check(id: &str, e: anyhow::Result<Evaluation>) {
    let e = e.unwrap_or_else(|err| panic!("{id}: {err:#}"));
    check_claims(id, &e);
}

fn check_claims(id: &str, e: &Evaluation) {
    let table = claims_table(id, &e.claims);
    eprintln!("{}{table}", e.notes);
    let x = rnic::repro::select(id).unwrap()[0];
    let ids: Vec<&str> = e.claims.iter().map(|c| c.id.as_str()).collect();
    let registered: Vec<&str> = x.claims.iter().map(|c| c.id).collect();
    assert_eq!(ids, registered, "{table}");
    for c in &e.claims {
        let full = format!("{id}/{}", c.id);
        assert!(
            c.pass || KNOWN_MISSES.contains(&full.as_str()),
            "{full} failed\n{}{table}",
            e.notes
        );
    }
}

fn reduced() -> TablePlan {
    TablePlan {
        trials: 30,
        ..TablePlan::full().unwrap()
    }
}

#[test]
fn sizing() {
    check("ornic-sizing", eval_sizing());
}

#[test]
fn bitmap_cycles() {
    check("ornic-bitmap-cycles", eval_cycles(&reduced()));
}

#[test]
fn bitmap_blocks() {
    check("ornic-bitmap-blocks", eval_blocks(&reduced()));
}

/// Runs experiment `id`'s committed sweeps at 1 MB only.
fn run_at_1mb(id: &str) -> rnic::repro::Evaluation {
    use rnic::perf::ModelRunner;
    use rnic::report::RunStatus;
    use rnic::repro::{self, ReproOptions};
    let e = repro::select(id).unwrap()[0];
    let mut sweeps = repro::parse(e).unwrap();
    for sw in &mut sweeps {
        let a = sw.axes.iter_mut().find(|a| a.key == "perf.size").unwrap();
        a.values = vec![toml::Value::Integer(1 << 20)];
    }
    let out_dir = std::env::temp_dir().join(format!("rnic-reduced-{}-{id}", std::process::id()));
    let opts = ReproOptions {
        jobs: 2,
        out_dir: out_dir.clone(),
        progress: false,
        quiet: true,
    };
    let o = repro::run_sweeps(e, sweeps, &ModelRunner, &opts, &mut Vec::new()).unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    assert_eq!(o.status, RunStatus::Ok);
    check_claims(id, &o.evaluation);
    o.evaluation
}

fn passes(e: &Evaluation, id: &str) -> bool {
    e.claims.iter().any(|c| c.id == id && c.pass)
}

#[test]
fn vs_gbn() {
    let e = run_at_1mb("ornic-vs-gbn");
    // At 1 MB go-back-N through the emulator collapses (its miss is at 4 and 16 MB); ORNIC
    // misses its 90 % there (80 %: the emulator holds each frame up to 64 frame times) but
    // stays far above go-back-N's collapse.
    assert!(passes(&e, "gbn-in-order"), "{:?}", e.claims);
    assert!(passes(&e, "gbn-reordered"), "{:?}", e.claims);
    assert!(!passes(&e, "ornic-reordered"), "{:?}", e.claims);
    let reordered: f64 = e
        .notes
        .split("ORNIC")
        .nth(1)
        .and_then(|s| s.split("reordered ").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no ORNIC reordered rate in {}", e.notes));
    assert!((60.0..90.0).contains(&reordered), "{}", e.notes);
    // The verdict is reported beside the timeout it depends on.
    let gbn = e.claims.iter().find(|c| c.id == "gbn-reordered").unwrap();
    assert!(gbn.ours.contains("qp.timeout 14"), "{}", gbn.ours);
}

#[test]
fn vs_gbn_paths() {
    let e = run_at_1mb("ornic-vs-gbn-paths");
    // Against in order on the same four paths, ORNIC sprayed keeps >= 90 % at 1 MB: what
    // it lost against the shortest path alone was the path, not the spraying.
    assert!(passes(&e, "gbn-sprayed"), "{:?}", e.claims);
    assert!(passes(&e, "ornic-sprayed"), "{:?}", e.claims);
}

/// Every arm of ornic-vs-gbn-paths, in order and sprayed, go-back-N and ORNIC, runs over the
/// same paths (count and delay difference), and the in-order arm visits every one of them for
/// each transport, never only the shortest.
#[test]
fn paths_arms_share_path_delays() {
    use rnic::model::config::SprayPolicy;
    use rnic::repro;
    use rnic::scenario::CliOverrides;
    let e = repro::select("ornic-vs-gbn-paths").unwrap()[0];
    let sweeps = repro::parse(e).unwrap();
    assert_eq!(
        sweeps.len(),
        3,
        "in order, go-back-N sprayed, ORNIC sprayed"
    );
    let mut delays = std::collections::BTreeSet::new();
    let mut pinned = std::collections::BTreeSet::new();
    let mut sprayed = std::collections::BTreeSet::new();
    for sw in &sweeps {
        for p in sw.resolve_points(&CliOverrides::default()).unwrap() {
            let c = &p.config;
            let spray = &c.net.spray;
            delays.insert((
                spray.paths,
                spray.mdd_ns.to_bits(),
                c.net.effective_link_delay_ns().to_bits(),
            ));
            let reliability = format!("{:?}", c.qp.reliability);
            match spray.policy {
                SprayPolicy::Pinned => {
                    pinned.insert((reliability, spray.path));
                }
                SprayPolicy::RoundRobin | SprayPolicy::Random => {
                    sprayed.insert(reliability);
                }
                SprayPolicy::Ecmp => panic!("an ECMP arm takes whichever path it hashes onto"),
            }
        }
    }
    assert_eq!(delays.len(), 1, "arms over different paths: {delays:?}");
    let paths = delays.iter().next().unwrap().0;
    assert!(paths > 1, "one path is no multipath fabric");
    assert_eq!(sprayed.len(), 2, "go-back-N and ORNIC sprayed: {sprayed:?}");
    for r in &sprayed {
        for path in 0..paths {
            assert!(
                pinned.contains(&(r.clone(), path)),
                "{r} not in order on path {path}"
            );
        }
    }
}

#[test]
fn throughput() {
    use rnic::perf::ModelRunner;
    use rnic::report::RunStatus;
    use rnic::repro::{self, ReproOptions};
    let id = "ornic-throughput";
    let e = repro::select(id).unwrap()[0];
    let mut sweeps = repro::parse(e).unwrap();
    for sw in &mut sweeps {
        let a = sw.axes.iter_mut().find(|a| a.key == "perf.size").unwrap();
        a.values = vec![toml::Value::Integer(64 << 20)];
    }
    let out_dir = std::env::temp_dir().join(format!("rnic-reduced-{}-{id}", std::process::id()));
    let opts = ReproOptions {
        jobs: 1,
        out_dir: out_dir.clone(),
        progress: false,
        quiet: true,
    };
    let o = repro::run_sweeps(e, sweeps, &ModelRunner, &opts, &mut Vec::new()).unwrap();
    let _ = std::fs::remove_dir_all(&out_dir);
    assert_eq!(o.status, RunStatus::Ok);
    check_claims(id, &o.evaluation);
    let pass = |id: &str| o.evaluation.claims.iter().any(|c| c.id == id && c.pass);
    assert!(pass("write-95-from-64mb"), "{:?}", o.evaluation.claims);
    assert!(pass("read-below-write"), "{:?}", o.evaluation.claims);
}

#[test]
fn acks() {
    let plan = AcksPlan {
        wqes: 2,
        ..AcksPlan::full()
    };
    check("ornic-acks", eval_acks(&plan));
}
