//! Every run verifies the bytes it moved: all verbs complete and verify, and a corrupted
//! byte is detected.

use crate::common::*;
use rnic_model::workload::{AtomicOp, PerfTest};
use rnic_model::world::Hooks;
use rnic_model::RunOptions;

#[test]
fn model_every_test_completes_and_verifies() {
    let cfg = baseline(10.0);
    for t in PerfTest::ALL {
        for (qps, clients) in [(1, 1), (6, 3)] {
            let mut s = spec(t, t.default_size(), qps, clients);
            if !t.is_latency() {
                s.iters = 100;
                s.sizes = vec![if t == PerfTest::AtomicBw { 8 } else { 8192 }];
            } else {
                s.iters = 200;
            }
            let r = run(&cfg, &s);
            assert!(r.result.bytes_verified, "{t} q={qps}: {:?}", r.failures);
            assert!(r.result.verified_bytes > 0);
            let want = if t.is_latency() {
                200
            } else {
                100 * u64::from(qps)
            };
            assert_eq!(r.result.ops_completed, want, "{t} q={qps}");
        }
    }
}

#[test]
fn model_compare_and_swap_verifies() {
    let cfg = baseline(10.0);
    for t in [PerfTest::AtomicBw, PerfTest::AtomicLat] {
        let mut s = spec(t, 8, 4, 2);
        s.atomic = AtomicOp::CmpAndSwap;
        s.iters = 100;
        let r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{t}: {:?}", r.failures);
    }
}

#[test]
fn model_a_corrupted_payload_byte_is_detected() {
    let cfg = baseline(10.0);
    for t in [
        PerfTest::WriteBw,
        PerfTest::SendBw,
        PerfTest::ReadBw,
        PerfTest::WriteLat,
    ] {
        let mut s = spec(t, if t.is_latency() { 64 } else { 4096 }, 2, 1);
        s.iters = if t.is_latency() { 20 } else { 10 };
        let clean = run(&cfg, &s);
        assert!(clean.result.bytes_verified, "{t}: {:?}", clean.failures);
        let opts = RunOptions {
            hooks: Hooks {
                corrupt_data_frame: Some(if t.is_latency() { 19 } else { 15 }),
                ..Hooks::default()
            },
        };
        let bad = run_with(&cfg, &s, &opts);
        assert!(!bad.result.bytes_verified, "{t}: corruption went unnoticed");
        assert!(
            bad.failures.iter().any(|f| f.contains("differs")),
            "{t}: {:?}",
            bad.failures
        );
    }
}

#[test]
fn model_multiple_sizes_run_in_turn() {
    let cfg = baseline(10.0);
    let mut s = spec(PerfTest::WriteBw, 2, 2, 1);
    s.sizes = vec![2, 4096, 65536];
    s.iters = 20;
    let r = rnic_model::run_perf(&cfg, &s).unwrap();
    assert_eq!(r.per_size.len(), 3);
    assert!(r.bytes_verified);
}

#[test]
fn model_latency_tests_run_for_a_duration() {
    let cfg = baseline(20.0);
    let mut s = spec(PerfTest::WriteLat, 2, 1, 1);
    // At least 100 round trips of at least 2 µs each (a shorter window is refused).
    s.duration_us = Some(300.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    // One iteration takes 2 × 2.7 µs: about 55 in 300 µs.
    let n = r.result.ops_completed;
    assert!((53..=57).contains(&n), "{n} iterations");
    assert_eq!(r.result.iterations, n);
    assert!((r.result.simulated_time_us - 300.0).abs() < 1e-9);
}

/// `host.use_srq`: after the run each shared receive buffer must hold a whole SEND of one
/// of its node's senders. With a receive for every SEND (no buffer taken twice, no RNR
/// resend), a byte flipped in one SEND leaves a buffer that holds none: the after-run
/// check says which, beside the payload oracle's finding as it landed.
#[test]
fn model_a_corrupted_send_on_a_shared_receive_queue_fails_the_buffer_check() {
    let mut cfg = baseline(10.0);
    cfg.host.use_srq = true;
    cfg.host.rx_depth = 32;
    let mut s = spec(PerfTest::SendBw, 4096, 4, 1);
    s.iters = 8;
    let clean = run(&cfg, &s);
    assert!(clean.result.bytes_verified, "{:?}", clean.failures);
    assert_eq!(clean.result.retransmissions, 0);
    let opts = RunOptions {
        hooks: Hooks {
            corrupt_data_frame: Some(20),
            ..Hooks::default()
        },
    };
    let bad = run_with(&cfg, &s, &opts);
    assert!(!bad.result.bytes_verified, "corruption went unnoticed");
    let buffer_check = "shared receive buffer";
    assert!(
        bad.failures
            .iter()
            .any(|f| f.contains(buffer_check) && f.contains("holds no sender's SEND")),
        "{:?}",
        bad.failures
    );
}

/// `host.use_srq` under `-D`: the window closes while SENDs are still arriving, and a
/// SEND's first packets have overwritten the front of the buffer its receive holds, whose
/// back still holds the SEND it took before (of another pair: with `-r` not a multiple of
/// `-q` the buffers change pairs). The after-run check compares each part with its own
/// sender; it compared the whole buffer with one and failed a clean run ("holds no
/// sender's SEND"; `send-bw -s 8192 -q 2 -r 7 -D 0.0002 --use-srq`).
#[test]
fn model_a_shared_receive_queue_checks_a_send_still_arriving_when_the_window_closes() {
    let mut cfg = baseline(50.0);
    cfg.host.use_srq = true;
    cfg.host.rx_depth = 7;
    let mut s = spec(PerfTest::SendBw, 8192, 2, 1);
    s.duration_us = Some(200.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    assert_eq!(
        r.result.status,
        rnic_model::result::RunStatus::Ok,
        "{:?}",
        r.failures
    );
}

/// `host.use_srq` over UD: the run ends once no frame is left, before the last receives'
/// completions reach a polling core, and a short run ends before any does. The after-run
/// check takes those completions from the CQ rings, where the NIC wrote them: a clean run
/// passes, and a byte flipped in the last SEND leaves its buffer holding no sender's SEND.
#[test]
fn model_a_ud_shared_receive_queue_is_checked_through_its_unpolled_completions() {
    let mut cfg = baseline(10.0);
    cfg.host.use_srq = true;
    cfg.qp.transport = rnic_model::config::Transport::Ud;
    let mut s = spec(PerfTest::SendBw, 64, 2, 1);
    s.iters = 5;
    let clean = run(&cfg, &s);
    assert!(clean.result.bytes_verified, "{:?}", clean.failures);
    assert_eq!(
        clean.result.status,
        rnic_model::result::RunStatus::Ok,
        "{:?}",
        clean.failures
    );
    let opts = RunOptions {
        hooks: Hooks {
            corrupt_data_frame: Some(9),
            ..Hooks::default()
        },
    };
    let bad = run_with(&cfg, &s, &opts);
    assert!(
        bad.failures
            .iter()
            .any(|f| f.contains("shared receive buffer") && f.contains("holds no sender's SEND")),
        "{:?}",
        bad.failures
    );
}
