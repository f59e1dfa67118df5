//! Resource prefetching (the resource-prefetching paper, "Toward Scalable RDMA Through
//! Resource Prefetching", §III), switched by `nic.prefetch`.
//!
//! A NIC's resource accesses are a stream, not a locality pattern: a scheduled QP needs its
//! QPC, then its WQEs, then the MPT entry the WQE's lkey names, then the MTT entries of that
//! region's pages, and none of them again until the QP's next turn. So the prefetcher
//! fetches that chain into the on-chip caches before the pipeline asks for it:
//!
//! * **Scheduler-triggered** (`sched`): the [`queue::PrefetchQueue`] mirrors the scheduling
//!   queue and pops a QP once it is within `nic.prefetch_window` positions of its head; the
//!   prefetcher then reads the QPC and the WQEs the QP's next visit will take (the WQE read
//!   waits for the QPC, which holds the SQ address, unless csRNA's on-chip SQ address table
//!   — `nic.latency_hiding` — gives the address at once), then the MPT entry of each WQE's
//!   lkey, then the MTT line(s) of its pages. The paper's window condition is
//!   `chunk_size / BW × wnd ≥ n × delay_fetch`: the window must cover the chain's latency.
//! * **Software-triggered** (`sw`): `post_send` writes the QPN into a prefetch register by
//!   MMIO before it spends `host.wqe_prep_ns` building the WQE; if fewer QPs are active than
//!   the window, the NIC starts the QP's QPC read at once, so the doorbell finds it cached.
//!
//! Prefetched WQEs wait in the [`wqe_cache::WqeCache`]; QPC, MPT and MTT entries go into the
//! existing caches. Fills are keyed ([`ledger::Ledger`]): a demand miss of an entry whose
//! prefetch is in flight waits for that fill (counted *late*) instead of reading it again; a
//! demand request that finds a prefetched entry counts a *hit*; one evicted before use counts
//! *useless*. Prefetch reads are ordinary context reads on the DMA engine, so they never hold
//! a demand request of another entry behind them.
//!
//! The NIC holds the mechanism behind its [`hook`] (`AnyPrefetch`, the baseline no-op or the
//! [`Prefetcher`], chosen in `Nic::new` from `nic.prefetch`); its work with the NIC's units is
//! its router ([`route`]: functions of the parts they need, returning what they ask of the
//! NIC, not methods of the `Nic`). Nothing else in `nic/` imports this folder's other
//! modules.

pub mod hook;
pub mod ledger;
pub mod queue;
pub mod route;
pub mod wqe_cache;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::slab::Slab;
use ledger::{Ledger, Res, ResStats};
use wqe_cache::WqeCache;

pub use crate::params::prefetch::PrefetchParams;

/// The bytes a WQE's payload spans in a memory region: what its MPT entry and MTT lines
/// translate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Memory key.
    pub key: u32,
    /// First byte of the message.
    pub va: u64,
    /// Bytes.
    pub len: u64,
}

/// One prefetch read in flight: what it brings and what follows in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfRead {
    /// The QPC of `qpn`; then, if `wqes` is set, the WQE read `(first, n)` it gives the
    /// address of.
    Qpc {
        /// QPN.
        qpn: u32,
        /// The WQE read that waits for this QPC.
        wqes: Option<(u32, u32)>,
    },
    /// `n` WQEs of `qpn` from SQ index `first`.
    Wqe {
        /// QPN.
        qpn: u32,
        /// First SQ index (free running).
        first: u32,
        /// WQEs.
        n: u32,
    },
    /// The MPT entry of the span's key; then the MTT lines of its bytes.
    Mpt(Span),
    /// An MTT line (its cache key).
    Mtt {
        /// The translation unit's MTT cache key of the first page needed in the line.
        key: u64,
    },
}

/// Counters of the prefetcher, per resource.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PrefetchStats {
    /// QPs popped from the prefetch queue (scheduler trigger).
    pub sched_triggers: u64,
    /// Prefetch-register writes that started a prefetch (software trigger).
    pub sw_triggers: u64,
    /// Prefetch-register writes ignored: as many QPs active as the window or more.
    pub sw_ignored: u64,
    /// QP contexts.
    pub qpc: ResStats,
    /// WQEs (counted per WQE).
    pub wqe: ResStats,
    /// WQE prefetch reads issued (one read brings a visit's WQEs).
    pub wqe_reads: u64,
    /// MPT entries.
    pub mpt: ResStats,
    /// MTT lines.
    pub mtt: ResStats,
}

/// A WQE prefetch in flight: (first SQ index, WQEs, the visit waiting for it and when that
/// visit may decode).
pub type WqeInFlight = (u32, u32, Option<(u32, rnic_sim::TimePs)>);

/// The prefetcher's state.
#[derive(Debug, Default)]
pub struct Prefetcher {
    /// Parameters.
    pub p: PrefetchParams,
    /// Reads in flight and prefetched entries not yet used (QPC, MPT, MTT).
    pub ledger: Ledger,
    /// Prefetched WQEs.
    pub wqes: WqeCache,
    /// Prefetch reads in flight, each with the time its chain was triggered.
    pub reads: Slab<(PfRead, rnic_sim::TimePs)>,
    /// Per QP, its WQE prefetch in flight: (first, n, the visit waiting for it and when
    /// that visit may decode).
    pub wqe_inflight: FxHashMap<u32, WqeInFlight>,
    /// Per QP, a WQE prefetch (first, n, its chain's trigger time) waiting for the QP's
    /// context, which another read is bringing: the WQEs' address is in it.
    pub wqes_after_qpc: FxHashMap<u32, (u32, u32, rnic_sim::TimePs)>,
    /// WQE bytes a visit took from the cache, until it is decoded.
    pub visit_bytes: FxHashMap<u32, Vec<Vec<u8>>>,
    /// Visits whose WQEs come in two reads (a late prefetch of the first ones and a read of
    /// the rest), until the first of the two arrives.
    pub split_visits: FxHashSet<u32>,
    /// WQE counters (the ledger keeps the others).
    pub wqe_stats: ResStats,
    /// WQE prefetch reads issued.
    pub wqe_reads: u64,
    /// Trigger counters.
    pub triggers: (u64, u64, u64),
}

impl Prefetcher {
    /// A prefetcher with parameters `p`.
    pub fn new(p: PrefetchParams) -> Self {
        Prefetcher {
            p,
            wqes: WqeCache::new(p.wqe_cache_entries),
            ..Prefetcher::default()
        }
    }

    /// All counters.
    pub fn stats(&self) -> PrefetchStats {
        PrefetchStats {
            sched_triggers: self.triggers.0,
            sw_triggers: self.triggers.1,
            sw_ignored: self.triggers.2,
            qpc: *self.ledger.stats(Res::Qpc),
            wqe: self.wqe_stats,
            wqe_reads: self.wqe_reads,
            mpt: *self.ledger.stats(Res::Mpt),
            mtt: *self.ledger.stats(Res::Mtt),
        }
    }

    /// Modelled on-chip bytes: the WQE cache and the prefetch queue (a 3-byte QPN per
    /// scheduling-queue entry it mirrors, counted at `qps` entries).
    pub fn onchip(&self, wqe_bytes: u64, qps: u64) -> [(&'static str, u64); 2] {
        let q = if self.p.sched { 3 * qps } else { 0 };
        [
            ("wqe_cache", self.wqes.capacity() as u64 * wqe_bytes),
            ("prefetch_queue", q),
        ]
    }
}

impl crate::stats::Report for Prefetcher {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats());
    }
}
