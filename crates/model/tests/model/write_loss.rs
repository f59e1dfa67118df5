//! WRITE bandwidth under random data loss on the timed model: enough messages that the TX
//! payload buffer (64 KiB) turns over many times while the requester recovers by timeout.
//!
//! A retransmission timeout makes the TX engine sweep every QP; that sweep also sends
//! requests never sent before. Their payload must leave the TX buffer like any fresh
//! request's, or the buffer fills with bytes already gone, the scheduler stops fetching
//! WQEs, and the run stalls with work posted and nothing armed to finish it.

use crate::common::*;
use rnic_model::workload::PerfTest;

#[test]
fn model_writes_survive_loss_and_leave_the_tx_buffer_empty() {
    let mut failed = Vec::new();
    let mut timeouts = 0u64;
    for (size, iters) in [(4096u64, 200u64), (16384, 60)] {
        for seed in 1..=6u64 {
            let mut cfg = baseline(0.0);
            cfg.net.impair.loss = 0.02;
            cfg.sim.seed = seed;
            let mut s = spec(PerfTest::WriteBw, size, 1, 1);
            s.iters = iters;
            let r = run(&cfg, &s);
            timeouts += r.transport.timeouts;
            let left = r.nodes[0].get("nic.tx.buffer_left_bytes");
            if !r.result.bytes_verified || r.result.ops_completed != iters || left != Some(0) {
                failed.push(format!(
                    "-s {size} -n {iters} seed {seed}: {} ops, TX buffer left {left:?}, {:?}",
                    r.result.ops_completed, r.failures
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    // Recovery by timeout (the sweep) must really have happened, or this proves nothing.
    assert!(timeouts > 0, "no retransmission timeout in any run");
}
