//! Reduced reproductions of the TX-isolation paper ("Optimize the TX Architecture of RDMA NIC
//! for Performance Isolation in the Cloud Environment"), so that a change that breaks one of
//! its claims turns the suite red without the full `rnic repro isolation`.
//!
//! Each test runs an experiment's own evaluator (same flows, same claims, same thresholds)
//! on fewer points:
//! - "isolation-ls-alone": all three architectures (three short ping-pongs).
//! - "isolation-ls-bs": baseline and v1 only; BS sizes 4 KB and 256 KB beside one BS
//!   tenant, and 1 and 4 BS tenants of 256 KB (the full run: 4 KB to 1 MB, 1 to 8 tenants
//!   of 1 MB, and v2).
//! - "isolation-bs-bs": the two arms the claims read (v2 with round robin, v2).
//! - "isolation-backpressure": the two arms the claims read (v2 coupled, v2), 40
//!   messages per tenant.
//! - "isolation-linerate": all three architectures, 10 messages of 1 MB.

use rnic::repro::claims_table;
use rnic::repro::isolation::{
    eval_backpressure, eval_bs_bs, eval_linerate, eval_ls_alone, eval_ls_bs, Arch,
    BackpressurePlan, BsBsPlan, LineratePlan, LsAlonePlan, LsBsPlan,
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
fn ls_alone() {
    check("isolation-ls-alone", eval_ls_alone(&LsAlonePlan::full()));
}

#[test]
fn ls_bs() {
    let plan = LsBsPlan {
        sizes: vec![4096, 262144],
        counts: vec![1, 4],
        count_size: 262144,
        archs: vec![Arch::Baseline, Arch::V1],
    };
    check("isolation-ls-bs", eval_ls_bs(&plan));
}

#[test]
fn bs_bs() {
    let mut plan = BsBsPlan::full();
    plan.arms.retain(|(l, _, _)| *l == "v2-rr" || *l == "v2");
    check("isolation-bs-bs", eval_bs_bs(&plan));
}

#[test]
fn backpressure() {
    let mut plan = BackpressurePlan::full();
    plan.iters = 40;
    plan.arms
        .retain(|(l, _, _)| *l == "v2-coupled" || *l == "v2");
    check("isolation-backpressure", eval_backpressure(&plan));
}

#[test]
fn linerate() {
    let plan = LineratePlan {
        iters: 10,
        ..LineratePlan::full()
    };
    check("isolation-linerate", eval_linerate(&plan));
}
