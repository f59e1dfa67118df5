//! A switch's shared packet buffer (`net.switch_buffer = "shared"`): one pool per switch
//! that every output port's frames occupy, divided as the ns-3 HPCC simulator's switch MMU
//! divides it (the HPCC paper's simulator, `switch-mmu`):
//! - each ingress port has a headroom, for the bytes still arriving after it sends an
//!   XOFF, and a small reserve of its own; the rest of the pool is shared;
//! - with PFC, an ingress pauses its sender when its bytes in the shared part pass a
//!   threshold on the pool, α × (pool − headrooms − reserves − shared bytes in use), α = 1/8
//!   (that simulator's default `pfc_a_shift` of 3), and resumes 3 KiB below it. That dynamic
//!   threshold moves with every other port's bytes; this model fixes it at the level it
//!   settles at when every ingress of the switch is paused at once (each holding T shared
//!   bytes, T = α(B' − nT), so T = αB'/(1 + αn) for a shared part B' and n ingresses):
//!   the lowest the dynamic threshold falls, so the pool's shared part plus every headroom
//!   always holds what the ingresses may bring, and no frame is ever dropped. A fixed
//!   threshold also keeps the PFC model's foresight of the XON from known departures
//!   exact ([`super::pfc`]);
//! - without PFC (a lossy switch) each egress queue may hold at most the pool's free bytes
//!   (the dynamic threshold of Choudhury and Hahne's "Dynamic queue length thresholds for
//!   shared-memory packet switches" with α = 1), so one congested port cannot take the
//!   whole pool from the others; with PFC there is no egress limit, as in that simulator's
//!   MMU (its egress admission always admits): the ingress thresholds keep the pool from
//!   overflowing.
//!
//! One lossless priority carries the RoCE traffic, so the per-priority thresholds are that
//! priority's.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rnic_sim::TimePs;

/// The reserve of each ingress port, bytes (the ns-3 HPCC simulator's `reserve`, 4 KiB).
pub const RESERVE_BYTES: u64 = 4 * 1024;
/// How far below its pause threshold a paused ingress resumes, bytes (that simulator's
/// `resume_offset`, 3 KiB).
pub const RESUME_OFFSET_BYTES: u64 = 3 * 1024;
/// α of the PFC threshold as a shift, α = 2^−3 = 1/8 (that simulator's default
/// `pfc_a_shift`, for ports at the NICs' rate).
pub const PFC_ALPHA_SHIFT: u32 = 3;
/// Headroom of an ingress port in one-way bandwidth-delay products of its link (that
/// simulator's 3 × rate × delay).
pub const HEADROOM_BDPS: u64 = 3;
/// Headroom an ingress also keeps for frames no pause can stop: the one its sender is
/// serializing when the XOFF lands, and the one the switch is serializing when it sends
/// the XOFF (which waits for it), each at most a 4096-byte MTU frame with its headers.
pub const HEADROOM_FRAMES_BYTES: u64 = 2 * (4096 + 78);

/// The link feeding one ingress port, as the headroom needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IngressLink {
    /// One-way propagation delay, ps.
    pub delay_ps: TimePs,
    /// Rate, Mb/s.
    pub mbps: u64,
    /// Bytes its sender has handed to its port ahead of time and sends even when paused
    /// (a NIC's TX lead, `nic.tx_port_slack_bytes`; 0 for a switch).
    pub sender_lead_bytes: u64,
}

impl IngressLink {
    /// Bytes that may still arrive after this ingress sends an XOFF.
    pub fn headroom_bytes(&self) -> u64 {
        let bdp = u128::from(self.delay_ps) * u128::from(self.mbps) / 8_000_000;
        (HEADROOM_BDPS as u128 * bdp) as u64 + self.sender_lead_bytes + HEADROOM_FRAMES_BYTES
    }
}

/// The PFC levels of every ingress of one switch, derived from its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct PfcLevels {
    /// An ingress holding more than this many bytes pauses its sender.
    pub xoff_bytes: u64,
    /// A paused ingress resumes its sender once drained to this many bytes.
    pub xon_bytes: u64,
}

/// The PFC levels of a switch with a pool of `pool_bytes` and `ingresses`, or why the pool
/// cannot hold them (its headrooms and reserves leave no shared part worth pausing on).
pub fn derive_pfc_levels(pool_bytes: u64, ingresses: &[IngressLink]) -> Result<PfcLevels, String> {
    let n = ingresses.len() as u64;
    let headroom: u64 = ingresses.iter().map(IngressLink::headroom_bytes).sum();
    let fixed = headroom + n * RESERVE_BYTES;
    let shared = pool_bytes.saturating_sub(fixed);
    // T = αB'/(1 + αn) with α = 2^−shift: B'/(2^shift + n).
    let threshold = shared / ((1 << PFC_ALPHA_SHIFT) + n).max(1);
    if threshold <= RESUME_OFFSET_BYTES {
        return Err(format!(
            "its {n} ingress ports need {headroom} bytes of headroom and {} of reserve, which \
             leaves {shared} shared bytes: a pause threshold of {threshold} bytes, not above \
             the {RESUME_OFFSET_BYTES}-byte resume offset; a pool of at least {} bytes would do",
            n * RESERVE_BYTES,
            fixed + (RESUME_OFFSET_BYTES + 1) * ((1 << PFC_ALPHA_SHIFT) + n)
        ));
    }
    Ok(PfcLevels {
        xoff_bytes: RESERVE_BYTES + threshold,
        xon_bytes: RESERVE_BYTES + threshold - RESUME_OFFSET_BYTES,
    })
}

/// Counters of one switch's pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PoolStats {
    /// The switch (index among the switches).
    pub switch: u32,
    /// The pool, bytes.
    pub size_bytes: u64,
    /// Most bytes in the pool at once.
    pub max_used_bytes: u64,
    /// Frames refused for lack of room in the pool or over their egress queue's limit.
    pub drops: u64,
    /// Its ingresses' pause level under PFC, bytes (0 without PFC).
    pub pfc_xoff_bytes: u64,
}

/// One switch's pool: the bytes of every frame queued on or leaving any of its ports.
#[derive(Debug, Clone)]
pub struct SharedPool {
    size_bytes: u64,
    used_bytes: u64,
    /// Frames whose departure is known: (their last bit leaves, bytes), earliest first.
    leaving: BinaryHeap<Reverse<(TimePs, u64)>>,
    /// Lossless (PFC on): no egress limit.
    lossless: bool,
    /// Counters.
    pub stats: PoolStats,
}

impl SharedPool {
    /// The pool of switch `switch`, `size_bytes` large; `lossless` under PFC.
    pub fn new(switch: usize, size_bytes: u64, lossless: bool) -> Self {
        SharedPool {
            size_bytes,
            used_bytes: 0,
            leaving: BinaryHeap::new(),
            lossless,
            stats: PoolStats {
                switch: switch as u32,
                size_bytes,
                ..PoolStats::default()
            },
        }
    }

    /// Bytes in the pool as of the last [`SharedPool::settle`].
    pub fn used_bytes(&self) -> u64 {
        self.used_bytes
    }

    /// The simulation is at `now`: frames whose last bit has left by then free their bytes.
    pub fn settle(&mut self, now: TimePs) {
        while let Some(&Reverse((end, b))) = self.leaving.peek() {
            if end > now {
                break;
            }
            self.leaving.pop();
            self.used_bytes -= b;
        }
    }

    /// Whether a frame of `len` bytes may join an egress queue holding `queued_bytes`
    /// (after [`SharedPool::settle`]): it fits the pool and, lossy, the queue's limit.
    pub fn admits(&self, queued_bytes: u64, len: u64) -> bool {
        let free = self.size_bytes - self.used_bytes;
        len <= free && (self.lossless || queued_bytes + len <= free)
    }

    /// A frame of `len` bytes joins the pool (admitted by [`SharedPool::admits`]).
    pub fn take(&mut self, len: u64) {
        self.used_bytes += len;
        self.stats.max_used_bytes = self.stats.max_used_bytes.max(self.used_bytes);
    }

    /// A frame of `len` bytes in the pool leaves at `end` (its last bit out of the port).
    pub fn leaves_at(&mut self, end: TimePs, len: u64) {
        self.leaving.push(Reverse((end, len)));
    }

    /// A frame was refused.
    pub fn refused(&mut self) {
        self.stats.drops += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn nic_link() -> IngressLink {
        // 100 Gb/s, 500 ns: 6250 bytes one way.
        IngressLink {
            delay_ps: 500_000,
            mbps: 100_000,
            sender_lead_bytes: 8192,
        }
    }

    #[test]
    fn headroom_is_three_bdps_the_senders_lead_and_two_frames() {
        assert_eq!(
            nic_link().headroom_bytes(),
            3 * 6250 + 8192 + HEADROOM_FRAMES_BYTES
        );
    }

    #[test]
    fn the_pause_level_is_the_dynamic_thresholds_floor() {
        let links = vec![nic_link(); 8];
        let pool = 16 << 20;
        let l = derive_pfc_levels(pool, &links).unwrap();
        let fixed = 8 * (nic_link().headroom_bytes() + RESERVE_BYTES);
        let t = (pool - fixed) / 16;
        assert_eq!(l.xoff_bytes, RESERVE_BYTES + t);
        assert_eq!(l.xon_bytes, l.xoff_bytes - RESUME_OFFSET_BYTES);
        // Every ingress at its threshold and every headroom full still fit the pool.
        assert!(8 * (t + RESERVE_BYTES) + fixed - 8 * RESERVE_BYTES <= pool);
        // The fixed point: T = α(B' − nT).
        let shared = pool - fixed;
        assert!((t as f64 - (shared - 8 * t) as f64 / 8.0).abs() < 2.0);
    }

    #[test]
    fn a_pool_too_small_for_its_headrooms_is_refused() {
        let err = derive_pfc_levels(100_000, &[nic_link(); 8]).unwrap_err();
        assert!(err.contains("a pool of at least"), "{err}");
    }

    #[test]
    fn a_lossy_queue_may_hold_at_most_the_free_pool() {
        let mut p = SharedPool::new(0, 10_000, false);
        assert!(p.admits(0, 4000));
        p.take(4000);
        p.leaves_at(100, 4000);
        // 6000 free: a queue of 3000 may take 3000 more, not 3001.
        assert!(p.admits(3000, 3000));
        assert!(!p.admits(3000, 3001));
        // Lossless: only the pool bounds it.
        let mut l = SharedPool::new(0, 10_000, true);
        l.take(4000);
        assert!(l.admits(5000, 6000));
        assert!(!l.admits(0, 6001));
        p.settle(99);
        assert_eq!(p.used_bytes(), 4000);
        p.settle(100);
        assert_eq!(p.used_bytes(), 0);
    }

    proptest! {
        /// Frames offered to random ports at random times, each leaving a while after it is
        /// admitted: the pool never holds more than its size.
        #[test]
        fn the_pool_never_exceeds_its_size(
            size in 1u64..200_000,
            lossless in any::<bool>(),
            offers in prop::collection::vec((0u64..50, 1u64..9000, 0usize..4, 1u64..400), 1..300),
        ) {
            let mut pool = SharedPool::new(0, size, lossless);
            let mut queues = [Vec::<(TimePs, u64)>::new(), vec![], vec![], vec![]];
            let mut now = 0;
            for (dt, len, port, stay) in offers {
                now += dt;
                pool.settle(now);
                for q in queues.iter_mut() {
                    q.retain(|&(end, _)| end > now);
                }
                let queued: u64 = queues[port].iter().map(|&(_, b)| b).sum();
                if pool.admits(queued, len) {
                    pool.take(len);
                    pool.leaves_at(now + stay, len);
                    queues[port].push((now + stay, len));
                } else {
                    pool.refused();
                }
                prop_assert!(pool.used_bytes() <= size);
                let held: u64 = queues.iter().flatten().map(|&(_, b)| b).sum();
                prop_assert_eq!(pool.used_bytes(), held);
                if !lossless {
                    prop_assert!(queues[port].iter().map(|&(_, b)| b).sum::<u64>() <= size);
                }
            }
            prop_assert!(pool.stats.max_used_bytes <= size);
        }
    }
}
