//! The connection-scalability cliff of the baseline (FCFS) RNIC: with a 300-entry QPC cache
//! the 64 B WRITE message rate holds its peak up to 300 QPs and collapses just past it,
//! because LRU under round robin misses on every visit and each miss blocks the manager.

use crate::common::*;
use rnic_model::config::Config;
use rnic_model::workload::PerfTest;

fn mops(cfg: &Config, qps: u32) -> f64 {
    let mut s = spec(PerfTest::WriteBw, 64, qps, 10);
    // Short windows keep the test fast; the warm-up covers the initial posting and the
    // compulsory QPC misses (each ~0.5 µs, serialized by the FCFS manager).
    s.duration_us = Some(60.0);
    s.tx_depth = 16;
    let r = run(cfg, &s);
    assert!(r.result.bytes_verified, "q={qps}: {:?}", r.failures);
    r.result.msg_rate_mops
}

#[test]
fn model_fcfs_rate_falls_past_the_qpc_cache_capacity() {
    let cfg = baseline(400.0);
    let peak = mops(&cfg, 100);
    assert!(peak > 60.0, "peak {peak:.2} Mops");
    let at_300 = mops(&cfg, 300);
    assert!(
        at_300 >= 0.95 * peak,
        "q=300: {at_300:.2} vs peak {peak:.2}"
    );
    let at_600 = mops(&cfg, 600);
    assert!(at_600 <= 0.5 * peak, "q=600: {at_600:.2} vs peak {peak:.2}");
    let at_320 = mops(&cfg, 320);
    assert!(
        at_320 <= 0.5 * peak,
        "q=320 should already be past the cliff: {at_320:.2}"
    );
}

#[test]
fn model_a_large_qpc_cache_removes_the_cliff() {
    let mut cfg = baseline(400.0);
    cfg.nic.qpc_cache_entries = 100_000;
    let peak = mops(&cfg, 100);
    let at_600 = mops(&cfg, 600);
    assert!(
        at_600 >= 0.95 * peak,
        "q=600 with 100k entries: {at_600:.2} vs {peak:.2}"
    );
}

#[test]
fn model_qpc_in_onboard_ddr_softens_the_cliff() {
    // A miss costs a 100 ns DDR access instead of a 500 ns PCIe round trip.
    let host = mops(&baseline(400.0), 600);
    let mut cfg = baseline(400.0);
    cfg.nic.qpc_placement = rnic_model::config::QpcPlacement::Ddr;
    let ddr = mops(&cfg, 600);
    assert!(ddr > 2.5 * host, "DDR {ddr:.2} vs host {host:.2} Mops");
}
