//! csRNA in the timed model: the non-blocking QPC manager with latency-hiding QPC
//! scheduling (profile `csrna`) keeps the 64 B WRITE peak when the QPs far exceed the
//! 300-entry QPC cache, the FCFS baseline with the same cache does not, latency hiding
//! lowers the latency, and a small out-of-order capacity limits the rate.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::workload::PerfTest;

fn csrna(sets: &[&str]) -> Config {
    let ov: Vec<_> = sets.iter().map(|s| parse_set(s).expect("set")).collect();
    Config::resolve("csrna", &ov).expect("csrna profile")
}

/// 64 B WRITE message rate with `qps` QPs over 10 clients. The warm-up covers the initial
/// posting of `tx_depth` WQEs on every QP (about 7.5 ns per post) so the window sees the
/// steady state.
fn mops(cfg: &Config, qps: u32) -> f64 {
    let mut cfg = cfg.clone();
    let tx_depth = 8;
    cfg.sim.warmup_us = Some(50.0 + f64::from(qps * tx_depth) * 0.0075);
    let mut s = spec(PerfTest::WriteBw, 64, qps, 10);
    s.duration_us = Some(60.0);
    s.tx_depth = tx_depth;
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "q={qps}: {:?}", r.failures);
    r.result.msg_rate_mops
}

/// Average 64 B write-lat latency over `qps` QPs used in turn, µs.
fn write_lat(cfg: &Config, qps: u32) -> f64 {
    let mut s = spec(PerfTest::WriteLat, 64, qps, 10);
    s.iters = u64::from(qps) * 2;
    let r = run(cfg, &s);
    assert!(r.result.bytes_verified, "q={qps}: {:?}", r.failures);
    r.result.latency_us.avg
}

#[test]
fn model_csrna_holds_the_peak_far_beyond_the_cache() {
    let cfg = csrna(&[]);
    let base = mops(&cfg, 100);
    assert!(base > 60.0, "q=100: {base:.2} Mops");
    for q in [3_000, 10_000] {
        let r = mops(&cfg, q);
        assert!(
            (r - base).abs() <= 0.05 * base,
            "q={q}: {r:.2} Mops vs {base:.2} at 100 QPs"
        );
    }
}

#[test]
fn model_csrna_fcfs_with_the_same_cache_collapses() {
    let nb = mops(&csrna(&[]), 3_000);
    let fcfs = mops(
        &csrna(&["nic.qpc_manager=fcfs", "nic.latency_hiding=false"]),
        3_000,
    );
    assert!(fcfs <= 0.5 * nb, "FCFS {fcfs:.2} vs non-blocking {nb:.2}");
}

#[test]
fn model_csrna_latency_hiding_lowers_write_latency() {
    let nb = write_lat(&csrna(&["nic.latency_hiding=false"]), 1_000);
    let lh = write_lat(&csrna(&[]), 1_000);
    assert!(
        lh < nb,
        "latency hiding {lh:.3} µs vs non-blocking {nb:.3} µs"
    );
}

#[test]
fn model_csrna_small_ooo_cap_limits_the_rate() {
    let one = mops(&csrna(&["nic.ooo_cap=1"]), 3_000);
    let sixteen = mops(&csrna(&["nic.ooo_cap=16"]), 3_000);
    assert!(
        one < 0.5 * sixteen,
        "ooo_cap 1: {one:.2} vs ooo_cap 16: {sixteen:.2}"
    );
}

#[test]
fn model_csrna_onchip_report_has_the_pending_structures_and_sq_table() {
    let cfg = csrna(&[]);
    let mut s = spec(PerfTest::WriteBw, 64, 1_000, 10);
    s.duration_us = Some(5.0);
    s.tx_depth = 4;
    let r = run(&cfg, &s);
    let m = &r.result.onchip_bytes;
    assert_eq!(m.get("qpc_cache"), Some(&(300 * 256)));
    assert_eq!(m.get("sq_address_table"), Some(&(1_000 * 10)));
    let pending: u64 = [
        "qpc_requester_index_fifos",
        "qpc_pending_fifo",
        "qpc_pending_record_table",
    ]
    .iter()
    .map(|k| *m.get(*k).unwrap_or_else(|| panic!("{k} missing")))
    .sum();
    // Formula 2: about 40 B per unit of ooo_cap (bit-exact fields give 42.4 B at 16).
    assert!(
        (600..=720).contains(&pending),
        "pending structures {pending} B"
    );
}
