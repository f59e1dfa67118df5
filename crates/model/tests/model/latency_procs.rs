//! csRNA's latency test (`--procs`): 10 server processes, each cycling over its own QPs
//! with one operation in flight, contend for the QPC manager. FCFS with a 3000-entry cache
//! suffers head-of-line blocking once the QPs exceed its cache; the csRNA profile
//! (non-blocking manager, latency hiding, cache of 300) keeps its latency.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::workload::PerfTest;

fn csrna(sets: &[&str]) -> Config {
    let ov: Vec<_> = sets.iter().map(|s| parse_set(s).expect("set")).collect();
    Config::resolve("csrna", &ov).expect("csrna profile")
}

fn fcfs() -> Config {
    csrna(&[
        "nic.qpc_manager=fcfs",
        "nic.latency_hiding=false",
        "nic.qpc_cache_entries=3000",
    ])
}

/// Average 64 B write latency with 10 processes over `qps` QPs, µs: the warm-up visits every
/// QP once (`qps / 10` per process, under 8 µs each), then a short window is measured.
fn write_lat(cfg: &Config, qps: u32) -> f64 {
    let mut cfg = cfg.clone();
    cfg.sim.warmup_us = Some(100.0 + f64::from(qps) * 0.8);
    let mut s = spec(PerfTest::WriteLat, 64, qps, 10);
    s.procs = Some(10);
    s.duration_us = Some(300.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "q={qps}: {:?}", r.failures);
    assert!(r.result.ops_completed > 100, "q={qps}: {:?}", r.result);
    r.result.latency_us.avg
}

#[test]
fn fcfs_latency_rises_once_the_qps_exceed_its_cache() {
    let cfg = fcfs();
    let within = write_lat(&cfg, 1_000);
    let beyond = write_lat(&cfg, 4_000);
    assert!(
        beyond > within * 1.15,
        "FCFS: {beyond:.3} µs at 4000 QPs vs {within:.3} µs at 1000"
    );
}

#[test]
fn csrna_latency_hiding_keeps_the_latency_beyond_its_cache() {
    let cfg = csrna(&[]);
    let small = write_lat(&cfg, 100);
    let big = write_lat(&cfg, 2_000);
    assert!(
        (big - small).abs() <= 0.10 * small,
        "csrna: {big:.3} µs at 2000 QPs vs {small:.3} µs at 100"
    );
    // Without latency hiding, the non-blocking manager pays a PCIe round trip per miss.
    let nb = write_lat(&csrna(&["nic.latency_hiding=false"]), 2_000);
    assert!(
        nb > big + 0.2,
        "NB {nb:.3} µs vs latency hiding {big:.3} µs"
    );
}

#[test]
fn procs_run_concurrently_and_count_every_operation() {
    let cfg = csrna(&[]);
    for test in [PerfTest::WriteLat, PerfTest::ReadLat, PerfTest::AtomicLat] {
        let size = if test == PerfTest::AtomicLat { 8 } else { 64 };
        let mut s = spec(test, size, 200, 10);
        s.procs = Some(10);
        s.iters = 400;
        let r = run(&cfg, &s).result;
        assert!(r.bytes_verified, "{test}: {r:?}");
        assert_eq!(r.ops_completed, 400, "{test}");
        let lat = r.latency_us.avg;
        assert!(lat > 1.0, "{test}: {lat} µs");
        // Ten operations in flight: far less time than 400 back-to-back operations.
        assert!(
            r.simulated_time_us < 400.0 * lat / 5.0,
            "{test}: {} µs simulated for 400 ops of {lat:.3} µs",
            r.simulated_time_us
        );
    }
}

/// `sim.warmup_rounds`: the window opens once every QP has been used, so a short window
/// measures the steady state (all hits in FCFS's 3000-entry cache at 2000 QPs), not the
/// first round's cold misses.
#[test]
fn warmup_rounds_move_the_window_past_the_cold_round() {
    let lat = |rounds: u32| {
        let mut cfg = fcfs();
        cfg.sim.warmup_us = Some(10.0);
        cfg.sim.warmup_rounds = rounds;
        let mut s = spec(PerfTest::WriteLat, 64, 2000, 10);
        s.procs = Some(10);
        s.duration_us = Some(300.0);
        let r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        r.result.latency_us.avg
    };
    let (cold, warm) = (lat(0), lat(1));
    let mut few = fcfs();
    few.sim.warmup_rounds = 1;
    let base = write_lat(&few, 10);
    assert!(cold > warm + 0.3, "cold {cold} µs vs warm {warm} µs");
    assert!(
        (warm - base).abs() < 0.05,
        "warm {warm} µs vs 10 QPs {base} µs"
    );
}
