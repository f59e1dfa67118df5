//! The receive-bitmap bench (the ORNIC paper's section 4.3): one QP receives an
//! out-of-order WQE whose packets were reordered within a distance, with or without one lost
//! packet in its first bitmap block, and records every packet in the bitmap design under
//! test.
//!
//! Time runs in packet slots (one PMTU packet at the link rate). The sender's packets leave
//! back to back and pass the [`WindowShuffle`]. The receiver detects a loss the ORNIC way:
//! once a packet at least OTD beyond the expected PSN has arrived, it NAKs with the head
//! block's missing bits, and the sender resends exactly those PSNs, which arrive one round
//! trip later. Packets a bitmap could not record (beyond its window, or no pool block) are
//! dropped and resent too; whatever is still missing when the stream ends is resent after
//! the requester's timeout (RTT + OTD / B), until the WQE is whole.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rnic_sim::Rng;
use rnic_transport::ooo::sizing::{Sizing, SizingInputs};
use rnic_transport::ooo::{BitmapDesign, BlockPool, Recorded};

use super::WindowShuffle;
use crate::config::Config;

/// One bench setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSpec {
    /// Packets in the WQE.
    pub packets: u32,
    /// Reordering distance of the network (packets).
    pub reorder_distance: u32,
    /// Lose the first transmission of one random packet of the first bitmap block.
    pub lose_one: bool,
    /// Independent WQEs (each with its own reordering and lost packet).
    pub trials: u32,
}

/// What the bench measured for one design.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchResult {
    pub design: BitmapDesign,
    /// Average cycles to locate the block, over every packet the bitmap recorded or found
    /// duplicate.
    pub avg_cycles: f64,
    /// The most pool blocks the QP held at once.
    pub max_blocks: u32,
    /// Packets that reached the bitmap (first transmissions and resends).
    pub packets_seen: u64,
    /// Packets dropped because they were beyond the bitmap's window.
    pub dropped_out_of_window: u64,
    /// Packets dropped because the pool was empty.
    pub dropped_pool_empty: u64,
    /// Packets resent (NAK, drops, timeout).
    pub resent: u64,
    /// Every trial's WQE ended whole (every PSN recorded exactly once).
    pub complete: bool,
}

/// The structures' dimensions under `cfg` (link rate, PMTU and the `[ooo]` section).
pub fn sizing_of(cfg: &Config) -> Sizing {
    Sizing::derive(&SizingInputs {
        link_gbps: cfg.eth.gbps,
        packet_bytes: cfg.qp.pmtu,
        mdd_ns: cfg.ooo.mdd_ns,
        rtt_ns: cfg.ooo.rtt_ns,
        block_bits: cfg.ooo.block_bits,
        qps: cfg.ooo.qps,
        pool_blocks_per_qp: cfg.ooo.pool_blocks_per_qp,
    })
}

/// Runs `spec` through `design`, sized from `cfg`, seeded from `cfg.sim.seed`.
pub fn run_bitmap_bench(cfg: &Config, design: BitmapDesign, spec: &BenchSpec) -> BenchResult {
    let s = sizing_of(cfg);
    let rtt_slots = s.bdp_exact.round().max(1.0) as u64;
    let timeout_slots = rtt_slots + u64::from(s.otd);
    let root = Rng::new(cfg.sim.seed);
    let mut out = BenchResult {
        design,
        avg_cycles: 0.0,
        max_blocks: 0,
        packets_seen: 0,
        dropped_out_of_window: 0,
        dropped_pool_empty: 0,
        resent: 0,
        complete: true,
    };
    let mut cycles = 0u64;
    let mut located = 0u64;
    for trial in 0..spec.trials {
        let mut rng = root.fork(u64::from(trial));
        let mut shuffle = WindowShuffle::new(spec.reorder_distance, rng.fork(1));
        let mut pool = BlockPool::new(s.pool_blocks, s.block_bits);
        let mut bitmap = design.build(
            s.block_bits,
            s.nodes,
            s.otd,
            cfg.ooo.left_cache_threshold_blocks,
        );
        let lost = spec
            .lose_one
            .then(|| rng.gen_below(u64::from(s.block_bits.min(spec.packets))) as u32);
        // Arrivals as (slot, order, psn): the first transmissions through the emulator.
        let mut arrivals = BinaryHeap::new();
        let mut order = 0u64;
        for (slot, psn) in shuffle
            .reorder((0..spec.packets).collect())
            .into_iter()
            .enumerate()
        {
            if Some(psn) != lost {
                arrivals.push(Reverse((slot as u64, order, psn)));
                order += 1;
            }
        }
        let mut nak_for_head: Option<u32> = None;
        let mut newest = 0u32;
        let mut last_slot = 0u64;
        let resent_before = out.resent;
        loop {
            while let Some(Reverse((slot, _, psn))) = arrivals.pop() {
                last_slot = slot;
                out.packets_seen += 1;
                let r = bitmap.record(psn, &mut pool);
                match r {
                    Recorded::New { .. } | Recorded::Duplicate { .. } => {
                        cycles += u64::from(r.cycles());
                        located += 1;
                        newest = newest.max(psn);
                    }
                    Recorded::OutOfWindow => out.dropped_out_of_window += 1,
                    Recorded::PoolExhausted => out.dropped_pool_empty += 1,
                }
                if !r.accepted() {
                    // Dropped: the sender learns it from the next NAK or the timeout.
                    newest = newest.max(psn);
                }
                out.max_blocks = out.max_blocks.max(bitmap.blocks_held());
                let head = bitmap.head();
                if head >= spec.packets {
                    break;
                }
                // OTD loss detection: one NAK per stuck head, carrying the head block's bits.
                if newest >= head + s.otd && nak_for_head != Some(head) {
                    nak_for_head = Some(head);
                    let mask = bitmap.missing_mask(s.block_bits, &pool);
                    for i in (0..s.block_bits.min(64)).filter(|i| mask & (1 << i) != 0) {
                        if head + i < spec.packets {
                            arrivals.push(Reverse((slot + rtt_slots, order, head + i)));
                            order += 1;
                            out.resent += 1;
                        }
                    }
                }
            }
            let head = bitmap.head();
            if head >= spec.packets {
                break;
            }
            // Tail loss (or drops nothing NAKed): the requester times out and resends every
            // PSN not yet acknowledged, back to back.
            let resend: Vec<u32> = (head..spec.packets)
                .filter(|&p| !bitmap.contains(p, &pool))
                .collect();
            if resend.is_empty() || out.resent - resent_before > 64 * u64::from(spec.packets) {
                out.complete = false;
                break;
            }
            for (i, psn) in resend.into_iter().enumerate() {
                arrivals.push(Reverse((last_slot + timeout_slots + i as u64, order, psn)));
                order += 1;
                out.resent += 1;
            }
            nak_for_head = None;
        }
        out.complete &= bitmap.head() == spec.packets;
        bitmap.release(&mut pool);
        out.complete &= pool.in_use() == 0;
    }
    out.avg_cycles = if located == 0 {
        0.0
    } else {
        cycles as f64 / located as f64
    };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(design: BitmapDesign, lose_one: bool) -> BenchResult {
        let cfg = Config::resolve("ornic", &[]).unwrap();
        let spec = BenchSpec {
            packets: 320,
            reorder_distance: 64,
            lose_one,
            trials: 100,
        };
        run_bitmap_bench(&cfg, design, &spec)
    }

    #[test]
    fn every_design_completes_every_wqe_with_and_without_loss() {
        for d in BitmapDesign::ALL {
            for lose in [false, true] {
                let r = run(d, lose);
                eprintln!("{lose} {r:?}");
                assert!(r.complete, "{r:?}");
                assert!(r.resent >= u64::from(lose) * 100, "{r:?}");
            }
        }
    }

    #[test]
    fn same_seed_same_result() {
        assert_eq!(run(BitmapDesign::Left, true), run(BitmapDesign::Left, true));
    }
}
