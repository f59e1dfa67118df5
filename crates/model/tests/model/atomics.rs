//! Atomics are verified by what they return, not only by the final counter: every original
//! value an ATOMIC ACKNOWLEDGE writes into the requester's buffer is checked against the
//! target's value when the atomic executed, and a wrong one fails the run.

use crate::common::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::{AtomicOp, PerfTest};
use rnic_model::world::Hooks;
use rnic_model::RunOptions;

fn atomic_spec(
    t: PerfTest,
    op: AtomicOp,
    qps: u32,
    clients: u32,
) -> rnic_model::workload::PerfSpec {
    let mut s = spec(t, 8, qps, clients);
    s.atomic = op;
    s.iters = 100;
    s
}

#[test]
fn model_atomics_verify_every_returned_value() {
    let cfg = baseline(10.0);
    for t in [PerfTest::AtomicBw, PerfTest::AtomicLat] {
        for op in [AtomicOp::FetchAndAdd, AtomicOp::CmpAndSwap] {
            let r = run(&cfg, &atomic_spec(t, op, 4, 2));
            assert!(r.result.bytes_verified, "{t} {op:?}: {:?}", r.failures);
            // 8 bytes per measured operation, each one's returned value checked.
            assert_eq!(
                r.result.verified_bytes,
                8 * r.result.ops_completed,
                "{t} {op:?}"
            );
        }
    }
}

#[test]
fn model_a_corrupted_atomic_return_is_detected() {
    let cfg = baseline(10.0);
    for t in [PerfTest::AtomicBw, PerfTest::AtomicLat] {
        for op in [AtomicOp::FetchAndAdd, AtomicOp::CmpAndSwap] {
            let s = atomic_spec(t, op, 2, 1);
            let opts = RunOptions {
                hooks: Hooks {
                    corrupt_atomic_ack: Some(30),
                    ..Hooks::default()
                },
            };
            let bad = run_with(&cfg, &s, &opts);
            assert_eq!(
                bad.result.status,
                RunStatus::Corrupt,
                "{t} {op:?}: {:?}",
                bad.failures
            );
            assert!(!bad.result.bytes_verified, "{t} {op:?}: went unnoticed");
            assert_eq!(bad.result.verified_bytes, 0);
            assert!(
                bad.failures.iter().any(|f| f.contains("returned")),
                "{t} {op:?}: {:?}",
                bad.failures
            );
        }
    }
}

#[test]
fn model_replayed_atomics_return_their_original_values_under_loss() {
    let mut cfg = baseline(10.0);
    cfg.net.impair.loss = 0.01;
    for op in [AtomicOp::FetchAndAdd, AtomicOp::CmpAndSwap] {
        let mut s = atomic_spec(PerfTest::AtomicBw, op, 4, 2);
        s.iters = 2000;
        let r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{op:?}: {:?}", r.failures);
        assert_eq!(r.result.verified_bytes, 8 * r.result.ops_completed);
        // Lost ATOMIC ACKNOWLEDGEs made the responders answer duplicates from their
        // replay tables.
        assert!(r.transport.duplicates > 0, "{op:?}: no duplicate atomics");
    }
}

/// Every ATOMIC ACKNOWLEDGE sent is an original or a counted replay: the replays were
/// counted as they were queued, and three still queued when the run ended were counted as
/// sent (`atomic_replays` 240 against 237 sent under this reordering).
#[test]
fn atomic_acks_sent_are_the_originals_and_the_replays() {
    let mut cfg = baseline(0.0);
    cfg.net.impair.reorder_window = 8;
    let mut s = atomic_spec(PerfTest::AtomicBw, AtomicOp::FetchAndAdd, 1, 1);
    s.iters = 62;
    let r = crate::common::run_verified(&cfg, &s, "atomic-bw, reorder window 8");
    let sum = |name: &str| -> u64 {
        r.nodes
            .iter()
            .map(|n| crate::common::counter(n, &format!("transport.{name}")))
            .sum()
    };
    let replays = sum("atomic_replays");
    assert!(replays > 0, "nothing was replayed");
    assert_eq!(sum("tx_atomic_acks"), 62 + replays);
}

/// An atomic requester translates the 8 bytes its ATOMIC ACKNOWLEDGE's original value is
/// written to (its L_Key's MPT entry and the page), as a READ requester translates its
/// buffer on the first response: it used to translate nothing, so 400 QPs' atomics over 400
/// regions read no MPT or MTT entry at the requester and ran faster than 8-byte READs.
#[test]
fn an_atomic_requester_translates_its_result_buffer() {
    let cfg = baseline(0.0);
    let mut atomic = atomic_spec(PerfTest::AtomicBw, AtomicOp::FetchAndAdd, 2, 1);
    atomic.iters = 100;
    let mut read = spec(PerfTest::ReadBw, 8, 2, 1);
    read.iters = 100;
    for (label, s) in [("atomic-bw", &atomic), ("read-bw -s 8", &read)] {
        let r = crate::common::run_verified(&cfg, s, label);
        let requester = crate::common::the_node_counting(&r.nodes, "transport.tx_requests");
        // One lookup per operation, on its first response.
        assert_eq!(crate::common::mpt_lookups(requester), 200, "{label}");
        assert_eq!(crate::common::mtt_lookups(requester), 200, "{label}");
    }
}
