//! RDMA READ under random loss on the timed model: `read-bw` and `read-lat` complete and
//! verify every byte at every seed, at 1, 5 and 10 % loss, PMTU 1024 and 4096, 2 B to 64 KB.
//! The payload oracle checks each placed READ response at its offset in the READ, which a
//! READ retried from its middle exercises at nearly every seed.

use crate::common::*;
use rnic_model::workload::PerfTest;
use rnic_model::{run_perf_detailed, RunOptions};

const SEEDS: u64 = 20;
const SIZES: [u64; 4] = [2, 1000, 4096, 65536];

#[test]
fn model_reads_survive_loss_at_every_seed() {
    let mut failed = Vec::new();
    let (mut retransmissions, mut runs) = (0u64, 0u64);
    for test in [PerfTest::ReadBw, PerfTest::ReadLat] {
        for loss in [0.01, 0.05, 0.10] {
            for pmtu in [1024u32, 4096] {
                for seed in 1..=SEEDS {
                    let mut cfg = baseline(0.0);
                    cfg.net.impair.loss = loss;
                    cfg.sim.seed = seed;
                    cfg.qp.pmtu = pmtu;
                    let mut s = spec(test, SIZES[0], 2, 1);
                    s.sizes = SIZES.to_vec();
                    s.iters = if test.is_latency() { 4 } else { 3 };
                    let want = if test.is_latency() { 4 } else { 6 };
                    let per_size =
                        run_perf_detailed(&cfg, &s, &RunOptions::default()).expect("model run");
                    for (r, size) in per_size.iter().zip(SIZES) {
                        runs += 1;
                        retransmissions += r.result.retransmissions;
                        if !r.result.bytes_verified || r.result.ops_completed != want {
                            failed.push(format!(
                                "{test} -s {size} -m {pmtu} loss {loss} seed {seed}: {} ops, {:?}",
                                r.result.ops_completed, r.failures
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // The loss must really have been repaired, or this test proves nothing.
    assert!(
        retransmissions > 1000,
        "{retransmissions} retransmissions in {runs} runs"
    );
}
