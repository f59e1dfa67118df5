//! Reduced reproductions of the long-distance RDMA paper ("Long-distance RDMA-acceleration
//! Frameworks"), so that a change that breaks one of its claims turns the suite red without
//! the full `rnic repro wan`.
//!
//! Each test runs an experiment's own evaluator (same points, same claims, same thresholds)
//! on fewer points:
//! - "wan-standard": the paper's three distances only (10, 100, 1000 km).
//! - "wan-qd": QD at 0.75, 0.95 and 1.0 times the formula's, 2 ms windows.
//! - "wan-apn": 64 B and 64 KB.
//! - "wan-accel": 256 B, 512 B, 8 KB and 16 KB, all three arms (and the 8 KB steady state).
//!
//! One claim is a known miss of the model: the paper's framework above the accelerator at
//! 8 KB (`wan-accel/apn-wins-8k`; both reach the line rate there in steady state, and rnic's
//! accelerator has no cost that singles out 8 KB): it must still be reported, and every
//! other claim must pass.
//! - "wan-loss": 1 % loss only, 1000 WRITEs of 4 KB.

use rnic::repro::claims_table;
use rnic::repro::wan::{
    eval_accel, eval_apn, eval_loss, eval_qd, eval_standard, Arm, LossPlan, QdPlan, SizesPlan,
    StandardPlan,
};
use rnic::repro::Evaluation;

/// Claims the model misses, reported as FAIL by `rnic repro wan`.
const KNOWN_MISSES: &[&str] = &["wan-accel/apn-wins-8k"];

/// Every registered claim of `id` was reported, and passed unless it is a known miss.
fn check(id: &str, e: anyhow::Result<Evaluation>) -> Evaluation {
    let e = e.unwrap_or_else(|err| panic!("{id}: {err:#}"));
    let table = claims_table(id, &e.claims);
    eprintln!("{}{table}", e.notes);
    let x = rnic::repro::select(id).unwrap()[0];
    let ids: Vec<&str> = e.claims.iter().map(|c| c.id.as_str()).collect();
    let registered: Vec<&str> = x.claims.iter().map(|c| c.id).collect();
    assert_eq!(ids, registered, "{table}");
    for c in &e.claims {
        let full = format!("{id}/{}", c.id);
        let known = KNOWN_MISSES.contains(&full.as_str());
        assert!(c.pass || known, "{full} failed\n{}{table}", e.notes);
    }
    e
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
        sizes: vec![256, 512, 8192, 16_384],
        arms: vec![Arm::Standard, Arm::Apn, Arm::Accel],
    };
    let e = check("wan-accel", eval_accel(&plan));
    // The exception is judged on its own: the accelerator is above at 8 KB in perftest's
    // iteration mode (the framework's last completions wait a long round trip), and in
    // steady state the two are level at the line rate, neither above by more than 1 %.
    let exception = e.claims.iter().find(|c| c.id == "apn-wins-8k").unwrap();
    assert!(!exception.pass, "{}", exception.ours);
    let steady: Vec<f64> = exception
        .ours
        .split("steady state (-D) framework ")
        .nth(1)
        .map(|s| {
            s.split(" vs accelerator ")
                .filter_map(|v| v.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(steady.len(), 2, "{}", exception.ours);
    assert!(
        (steady[0] - steady[1]).abs() <= 0.01 * steady[1],
        "{}",
        exception.ours
    );
    assert!(steady[1] > 90.0, "{}", exception.ours);
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
