//! Reduced reproductions of the long-distance RDMA paper ("Long-distance RDMA-acceleration
//! Frameworks"), so that a change that breaks one of its claims turns the suite red without
//! the full `rnic repro wan`.
//!
//! Each test runs an experiment's own evaluator (same points, same claims, same thresholds)
//! on fewer points:
//! - "wan-standard": the paper's three distances only (10, 100, 1000 km).
//! - "wan-qd": QD at 0.75, 0.95 and 1.0 times the formula's, 2 ms windows.
//! - "wan-apn": 64 B and 64 KB.
//! - "wan-accel": 256 B, 512 B and 8 KB, all three arms.
//! - "wan-loss": 1 % loss only, 1000 WRITEs of 4 KB.

use rnic::repro::claims_table;
use rnic::repro::wan::{
    eval_accel, eval_apn, eval_loss, eval_qd, eval_standard, Arm, LossPlan, QdPlan, SizesPlan,
    StandardPlan,
};
use rnic::repro::Evaluation;

/// Every registered claim of `id` was reported and passed.
fn check(id: &str, e: anyhow::Result<Evaluation>) {
    let e = e.unwrap_or_else(|err| panic!("{id}: {err:#}"));
    let table = claims_table(id, &e.claims);
    eprintln!("{}{table}", e.notes);
    let x = rnic::repro::select(id).unwrap()[0];
    let ids: Vec<&str> = e.claims.iter().map(|c| c.id.as_str()).collect();
    let registered: Vec<&str> = x.claims.iter().map(|c| c.id).collect();
    assert_eq!(ids, registered, "{table}");
    assert!(e.claims.iter().all(|c| c.pass), "{}{table}", e.notes);
}

#[test]
fn standard() {
    let plan = StandardPlan {
        kms: vec![10.0, 100.0, 1000.0],
        ..StandardPlan::full()
    };
    check("wan-standard", eval_standard(&plan));
}

#[test]
fn qd() {
    let plan = QdPlan {
        fractions: vec![0.75, 0.95, 1.0],
        window_us: 2000.0,
    };
    check("wan-qd", eval_qd(&plan));
}

#[test]
fn apn() {
    let plan = SizesPlan {
        sizes: vec![64, 65_536],
        arms: vec![Arm::Standard, Arm::Apn],
    };
    check("wan-apn", eval_apn(&plan));
}

#[test]
fn accel() {
    let plan = SizesPlan {
        sizes: vec![256, 512, 8192],
        arms: vec![Arm::Standard, Arm::Apn, Arm::Accel],
    };
    check("wan-accel", eval_accel(&plan));
}

#[test]
fn loss() {
    let plan = LossPlan {
        rates: vec![1e-2],
        size: 4096,
        iters: 1000,
    };
    check("wan-loss", eval_loss(&plan));
}
