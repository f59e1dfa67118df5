//! Random configurations keep the invariants of a truthful run: goodput never above the
//! header-limited line rate; `ok` only when everything asked completed and verified;
//! no retransmission or timeout without an impairment; `verified_bytes` equals the bytes
//! the completed operations moved.

use crate::common::*;
use proptest::prelude::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::{PerfTest, Verb};

/// The busier direction's header-limited goodput of `test` with `size`-byte messages on a
/// 100 Gb/s port (an independent upper bound: minimal headers, no padding).
fn wire_limit_gbps(test: PerfTest, size: u64, pmtu: u64) -> f64 {
    let size = if test.verb() == Verb::Atomic { 8 } else { size };
    let pkts = size.div_ceil(pmtu).max(1);
    let per_pkt = 14 + 20 + 8 + 12 + 4 + 4 + 20;
    100.0 * size as f64 / (size + pkts * per_pkt) as f64
}

fn bytes_per_op(test: PerfTest, size: u64) -> u64 {
    let size = if test.verb() == Verb::Atomic { 8 } else { size };
    match test {
        PerfTest::WriteLat | PerfTest::SendLat => 2 * size,
        _ => size,
    }
}

const TESTS: [PerfTest; 7] = [
    PerfTest::WriteBw,
    PerfTest::ReadBw,
    PerfTest::SendBw,
    PerfTest::AtomicBw,
    PerfTest::WriteLat,
    PerfTest::ReadLat,
    PerfTest::SendLat,
];

const SIZES: [u64; 8] = [2, 64, 1000, 4096, 65536, 1 << 20, 8 << 20, 64 << 20];

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn a_random_run_keeps_the_invariants_of_a_truthful_run(
        test in 0usize..TESTS.len(),
        size_i in 0usize..SIZES.len(),
        qps in 1u32..6,
        depth in 1u32..32,
        loss_i in 0usize..5,
        iters in 5u64..15,
        short_limit in proptest::bool::weighted(0.15),
        seed in 0u64..1000,
    ) {
        let test = TESTS[test];
        let size = SIZES[size_i];
        // Large messages run on one QP; loss only up to 64 KiB (go-back-N resends whole
        // windows, which makes lossy megabyte messages slow to simulate, not wrong).
        let big = size >= 1 << 20;
        let loss = if big { 0.0 } else { [0.0, 0.01, 0.1, 0.5, 1.0][loss_i] };
        let mut cfg = baseline(10.0);
        cfg.sim.seed = seed;
        cfg.net.impair.loss = loss;
        if loss == 1.0 {
            // Every frame lost: RDMA CM could not connect; the data path's failure is checked.
            cfg.host.connect = rnic_model::config::Connect::Direct;
        }
        if short_limit {
            cfg.sim.max_events = 20;
        }
        let mut s = spec(test, size, if big { 1 } else { qps }, 1);
        s.iters = if big { 5 } else { iters };
        s.tx_depth = if test.is_latency() { 1 } else { depth };
        let r = match rnic_model::run_perf_detailed(&cfg, &s, &rnic_model::RunOptions::default()) {
            Ok(mut v) => v.remove(0),
            Err(e) => {
                prop_assert!(false, "{e:#}");
                return Ok(());
            }
        };
        let res = &r.result;
        let limit = wire_limit_gbps(test, size, 4096);
        prop_assert!(
            res.goodput_gbps <= limit,
            "{} {} B: {} Gb/s above the {} Gb/s wire ({:?})",
            test,
            size,
            res.goodput_gbps,
            limit,
            res.status
        );
        let asked = if test.is_latency() { s.iters } else { s.iters * u64::from(s.qps) };
        if res.status == RunStatus::Ok {
            prop_assert!(res.bytes_verified);
            prop_assert_eq!(res.ops_completed, asked);
            prop_assert_eq!(res.verified_bytes, asked * bytes_per_op(test, size));
        } else {
            prop_assert!(!res.reason.is_empty());
            // Every asked operation can complete and the run still be incomplete: the
            // responder's last ACKed operation (a latency test's final pong) may exhaust its
            // retries when every ACK is lost, and that error completion is the reason.
            prop_assert!(
                res.ops_completed < asked
                    || res.status != RunStatus::Incomplete
                    || res.reason.contains("completed in error"),
                "{}",
                res.reason
            );
        }
        if test.is_latency() && res.status == RunStatus::Ok {
            // One operation at a time: the samples fit in the run (a post at time 0 once
            // went uncounted and dropped the first iteration from the run's length).
            let sum_us = res.latency_us.avg * res.ops_completed as f64;
            prop_assert!(
                sum_us <= res.simulated_time_us * (1.0 + 1e-9),
                "{} {} B: samples sum to {} µs in a {} µs run",
                test,
                size,
                sum_us,
                res.simulated_time_us
            );
        }
        prop_assert_ne!(res.status, RunStatus::Corrupt, "{}", res.reason);
        prop_assert_ne!(res.status, RunStatus::ModelError, "{}", res.reason);
        if loss == 0.0 {
            prop_assert_eq!(
                (res.retransmissions, res.timeouts),
                (0, 0),
                "{} {} B",
                test,
                size
            );
            if !short_limit {
                prop_assert_eq!(res.status, RunStatus::Ok, "{}", res.reason);
            }
        }
        if short_limit {
            prop_assert_eq!(res.status, RunStatus::Incomplete);
        }
    }
}
