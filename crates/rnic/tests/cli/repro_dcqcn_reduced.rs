//! Reduced reproductions of the DCQCN paper ("Congestion Control for Large-Scale RDMA
//! Deployments"), so that a change that breaks one of its claims turns the suite red
//! without the full `rnic repro dcqcn`. Both experiments are small already: each test runs
//! the experiment's own evaluator on its full plan (same runs, same thresholds).
//! - "dcqcn-two-flows": 5 ms and 8 ms with DCQCN, 8 ms without.
//! - "dcqcn-incast": 16:1, 100 WRITEs of 64 KiB per client, with and without DCQCN.
//! - "dcqcn-fct-websearch": WebSearch at 30 % load over a k = 4 fat-tree, 5 ms of
//!   arrivals, with and without DCQCN.

use rnic::repro::claims_table;
use rnic::repro::dcqcn::{eval_fct, eval_incast, eval_two_flows, FctPlan, IncastPlan, TwoFlowPlan};
use rnic::repro::Evaluation;

/// Every registered claim of `id` was reported and passed.
fn check(id: &str, e: anyhow::Result<Evaluation>) {
    let e = e.unwrap_or_else(|err| panic!("{id}: {err:#}"));
    let table = claims_table(id, &e.claims);
    eprintln!("{table}");
    let x = rnic::repro::select(id).unwrap()[0];
    let ids: Vec<&str> = e.claims.iter().map(|c| c.id.as_str()).collect();
    let registered: Vec<&str> = x.claims.iter().map(|c| c.id).collect();
    assert_eq!(ids, registered, "{table}");
    for c in &e.claims {
        assert!(c.pass, "{id}/{} failed\n{table}", c.id);
    }
}

#[test]
fn two_flows() {
    check("dcqcn-two-flows", eval_two_flows(&TwoFlowPlan::full()));
}

#[test]
fn incast() {
    check("dcqcn-incast", eval_incast(&IncastPlan::full()));
}

#[test]
fn fct_websearch() {
    check("dcqcn-fct-websearch", eval_fct(&FctPlan::full()));
}
