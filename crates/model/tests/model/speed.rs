//! Speed and memory of the model (release builds; `cargo test --release -p rnic-model --test
//! model_speed -- --ignored --nocapture --test-threads 1`).

use crate::common::*;
use rnic_model::workload::PerfTest;

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

#[test]
#[ignore]
fn model_ten_ms_of_1024_qps() {
    let cfg = baseline(10.0);
    let mut s = spec(PerfTest::WriteBw, 64, 1024, 10);
    s.duration_us = Some(10_000.0);
    let r = run(&cfg, &s);
    let evs = r.result.events as f64 / r.result.wall_seconds;
    println!(
        "write-bw -s 64 -q 1024 --clients 10, 10 ms: {:.2} Mops, {} events, {:.3} s wall, {:.2} M events/s, verified {}",
        r.result.msg_rate_mops,
        r.result.events,
        r.result.wall_seconds,
        evs / 1e6,
        r.result.bytes_verified
    );
    assert!(r.result.bytes_verified, "{:?}", r.failures);
}

#[test]
#[ignore]
fn model_ten_ms_at_the_peak() {
    let cfg = baseline(10.0);
    let mut s = spec(PerfTest::WriteBw, 64, 300, 10);
    s.duration_us = Some(10_000.0);
    let r = run(&cfg, &s);
    println!(
        "write-bw -s 64 -q 300 --clients 10, 10 ms: {:.2} Mops, {} events, {:.3} s wall, {:.2} M events/s",
        r.result.msg_rate_mops,
        r.result.events,
        r.result.wall_seconds,
        r.result.events as f64 / r.result.wall_seconds / 1e6
    );
    assert!(r.result.bytes_verified, "{:?}", r.failures);
}

#[test]
#[ignore]
fn model_memory_with_100k_qps() {
    let cfg = baseline(10.0);
    let mut s = spec(PerfTest::WriteBw, 64, 100_000, 10);
    s.duration_us = Some(10_000.0);
    let r = run(&cfg, &s);
    let rss = peak_rss_mb();
    println!(
        "write-bw -s 64 -q 100000 --clients 10, 10 ms: {:.2} Mops, {} events, {:.3} s wall, peak RSS {rss:.0} MB",
        r.result.msg_rate_mops, r.result.events, r.result.wall_seconds
    );
    assert!(rss < 1024.0, "peak RSS {rss:.0} MB");
}

#[test]
#[ignore]
fn model_cliff_with_perftest_defaults() {
    // Iteration mode, tx_depth 128, as `rnic perf write-bw -s 64 -q N --clients 10 -n 1000`.
    let cfg = baseline(10.0);
    for q in [10u32, 100, 300, 301, 320, 400, 600, 1024] {
        let mut s = spec(PerfTest::WriteBw, 64, q, 10);
        s.iters = 1000;
        let r = run(&cfg, &s);
        println!(
            "q={q}: {:.2} Mops over {:.1} µs, qpc hits {} misses {}, {:.2} s wall, verified {}",
            r.result.msg_rate_mops,
            r.result.simulated_time_us,
            r.result.caches["qpc"].hits,
            r.result.caches["qpc"].misses,
            r.result.wall_seconds,
            r.result.bytes_verified
        );
    }
    let mut big = baseline(10.0);
    big.nic.qpc_cache_entries = 100_000;
    for q in [600u32, 1024] {
        let mut s = spec(PerfTest::WriteBw, 64, q, 10);
        s.iters = 1000;
        let r = run(&big, &s);
        println!("cache 100000, q={q}: {:.2} Mops", r.result.msg_rate_mops);
    }
}
