//! Reduced reproductions of the ORNIC paper ("ORNIC: A High-Performance RDMA NIC with
//! Out-of-Order Packet Direct Write Method for Multipath Transmission"), so that a change
//! that breaks one of its claims turns the suite red without the full `rnic repro ornic`.
//!
//! - "ornic-sizing": the whole evaluator (computed, no simulation).
//! - "ornic-bitmap-cycles" and "ornic-bitmap-blocks": the same bench, designs and claims on
//!   30 WQEs per cell instead of 100.
//! - "ornic-vs-gbn": the committed sweeps (go-back-N and ORNIC) at 1 MB only (the full run:
//!   1, 4 and 16 MB).
//! - "ornic-throughput": the committed sweep at 64 MB only (the full run: 1 to 256 MB).
//! - "ornic-acks": 2 WQEs per arm instead of 8, every turn, on the simulated wire.
//!
//! Two claims are known misses of the model (go-back-N under spraying, which stays below
//! 1 Gb/s only up to 4 MB; ORNIC sprayed at 1 MB, 72-76 % of its in-order rate since one WQE
//! at a time waits for the slowest path twice; see the README's ORNIC section): they must
//! still be reported, and every other claim must pass.

use rnic::repro::claims_table;
use rnic::repro::ornic::{eval_acks, eval_blocks, eval_cycles, eval_sizing, AcksPlan, TablePlan};
use rnic::repro::Evaluation;

/// Claims the model misses, reported as FAIL by `rnic repro ornic`.
const KNOWN_MISSES: &[&str] = &["ornic-vs-gbn/gbn-sprayed", "ornic-vs-gbn/ornic-sprayed"];

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

#[test]
fn vs_gbn() {
    use rnic::perf::ModelRunner;
    use rnic::report::RunStatus;
    use rnic::repro::{self, ReproOptions};
    let id = "ornic-vs-gbn";
    let e = repro::select(id).unwrap()[0];
    let mut sweeps = repro::parse(e).unwrap();
    assert_eq!(sweeps.len(), 2, "go-back-N and ORNIC");
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
    // At 1 MB the sprayed go-back-N claim holds (its miss is at 16 MB only); ORNIC sprayed
    // misses its 90 % there (72-74 %) but stays far above go-back-N's collapse.
    let pass = |id: &str| o.evaluation.claims.iter().any(|c| c.id == id && c.pass);
    assert!(
        pass("gbn-in-order") && pass("gbn-sprayed"),
        "{:?}",
        o.evaluation.claims
    );
    assert!(!pass("ornic-sprayed"), "{:?}", o.evaluation.claims);
    // Far above go-back-N's collapse: ORNIC's sprayed round-robin rate at 1 MB (69-71 Gb/s;
    // its ACK scheduler's turns fall on multiples of the turn length, so the setup's length
    // moves them by a few per cent).
    let rr: f64 = o
        .evaluation
        .notes
        .split("ORNIC")
        .nth(1)
        .and_then(|s| s.split("round robin ").nth(1))
        .and_then(|s| s.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no ORNIC round-robin rate in {}", o.evaluation.notes));
    assert!((50.0..90.0).contains(&rr), "{}", o.evaluation.notes);
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
