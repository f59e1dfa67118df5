//! The hook of resource prefetching: what the rest of the NIC sees of it.
//!
//! The NIC holds one [`AnyPrefetch`], chosen once in `Nic::new` from `nic.prefetch`: the
//! baseline [`NoPrefetch`], whose every hook is a no-op (a demand miss reads its entry, a
//! visit reads its WQEs), or the [`Prefetcher`]. The pipeline tells it what happens on the
//! demand path through the [`Prefetch`] trait (a QPC or translation lookup hit or missed, a
//! demand read filled, a visit's WQE read arrived); the mechanism's own work — its triggers,
//! its reads and their fills — is its router ([`super::route`], functions of the parts they
//! need that return what they ask of the NIC), entered from the scheduler's trigger point,
//! the WQE read of a visit, a QPC fill, its events ([`Ev`]) and its DMA token. Its
//! prefetch queue mirrors the scheduling queue as the scheduler's [`SchedMirror`] (disabled
//! unless the scheduler trigger is on).
//!
//! Why an enum and not a `Box<dyn Prefetch>`: the hooks sit on the hot path (every QPC
//! answer, every translation pass, every visit); a match over two kinds is a direct call the
//! compiler inlines, and with prefetching off it is one predictable branch.

use super::ledger::Res;
use super::Prefetcher;
use crate::nic::translation::{TransFetch, TransLane, TransRead};
use crate::params::prefetch::PrefetchParams;

pub use super::queue::PrefetchQueue as SchedMirror;

/// The events of resource prefetching (`NicEv::Prefetch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// A host core stores a QPN into the prefetch register: the MMIO write enters PCIe.
    Mmio { qpn: u32 },
    /// A prefetch-register write reaches the NIC (software-triggered prefetch).
    Reg { qpn: u32 },
    /// A scheduler visit found all its WQEs in the WQE cache: decode them.
    WqesCached { visit: u32 },
}

/// The ledger's waiter bit of a demand QPC request (the QPC manager).
pub(super) const QPC_WAITER: u8 = 1;

/// The ledger's waiter bit of a translation lane.
pub(super) fn lane_bit(lane: TransLane) -> u8 {
    match lane {
        TransLane::Tx => 1,
        TransLane::Rx => 2,
        TransLane::TxLs => 4,
    }
}

/// What the demand path tells resource prefetching, and what it asks of it.
pub trait Prefetch {
    /// A demand QPC lookup of `qpn` hit the cache.
    fn qpc_demand_hit(&mut self, qpn: u32);
    /// A demand QPC lookup of `qpn` missed. Returns whether to read the context: not when a
    /// prefetch of it is in flight (its fill answers the miss).
    fn qpc_demand_miss(&mut self, qpn: u32) -> bool;
    /// A demand read of `qpn`'s context arrived.
    fn qpc_demand_filled(&mut self, qpn: u32);
    /// A translation lane missed `f`: pushes onto `reads` what to read for it (all of `f`,
    /// or the runs of lines between those whose prefetch is in flight, which it waits for).
    fn trans_demand_reads(&mut self, f: TransFetch, reads: &mut Vec<TransRead>);
    /// A demand read of translation entries arrived.
    fn trans_demand_filled(&mut self, read: TransRead);
    /// The translation unit's observed lookups: (MPT?, key, hit), a hit or (hit false) an
    /// eviction. Drains them.
    fn trans_observed(&mut self, observed: &mut Vec<(bool, u64, bool)>);
    /// A WQE read of visit `visit` arrived. Returns whether the visit waits for another
    /// one (its WQEs come in two reads).
    fn visit_awaits_other_read(&mut self, visit: u32) -> bool;
    /// The WQE bytes prefetching read for visit `visit`, in SQ order (empty: none).
    fn visit_wqes(&mut self, visit: u32) -> Vec<Vec<u8>>;
}

/// The baseline: no prefetching.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPrefetch;

impl Prefetch for NoPrefetch {
    #[inline]
    fn qpc_demand_hit(&mut self, _qpn: u32) {}
    #[inline]
    fn qpc_demand_miss(&mut self, _qpn: u32) -> bool {
        true
    }
    #[inline]
    fn qpc_demand_filled(&mut self, _qpn: u32) {}
    #[inline]
    fn trans_demand_reads(&mut self, f: TransFetch, reads: &mut Vec<TransRead>) {
        reads.push(f.read);
    }
    #[inline]
    fn trans_demand_filled(&mut self, _read: TransRead) {}
    #[inline]
    fn trans_observed(&mut self, _observed: &mut Vec<(bool, u64, bool)>) {}
    #[inline]
    fn visit_awaits_other_read(&mut self, _visit: u32) -> bool {
        false
    }
    #[inline]
    fn visit_wqes(&mut self, _visit: u32) -> Vec<Vec<u8>> {
        Vec::new()
    }
}

fn res(mpt: bool) -> Res {
    if mpt {
        Res::Mpt
    } else {
        Res::Mtt
    }
}

impl Prefetch for Prefetcher {
    fn qpc_demand_hit(&mut self, qpn: u32) {
        self.ledger.demand_hit(Res::Qpc, u64::from(qpn));
    }

    fn qpc_demand_miss(&mut self, qpn: u32) -> bool {
        self.ledger
            .demand_miss(Res::Qpc, u64::from(qpn), QPC_WAITER)
    }

    fn qpc_demand_filled(&mut self, qpn: u32) {
        self.ledger.demand_filled(Res::Qpc, u64::from(qpn));
    }

    fn trans_demand_reads(&mut self, f: TransFetch, reads: &mut Vec<TransRead>) {
        let res = res(f.read.mpt);
        // The run of lines being gathered: its first key and its lines. A final `None`
        // ends the last run.
        let mut run: Option<(u64, u32)> = None;
        for key in f.read.line_keys().map(Some).chain([None]) {
            match key {
                Some(key) if self.ledger.demand_miss(res, key, lane_bit(f.lane)) => {
                    run.get_or_insert((key, 0)).1 += 1;
                }
                _ => {
                    if let Some((key, lines)) = run.take() {
                        reads.push(TransRead {
                            lines,
                            key,
                            ..f.read
                        });
                    }
                }
            }
        }
    }

    fn trans_demand_filled(&mut self, read: TransRead) {
        let res = res(read.mpt);
        for key in read.line_keys() {
            self.ledger.demand_filled(res, key);
        }
    }

    fn trans_observed(&mut self, observed: &mut Vec<(bool, u64, bool)>) {
        for (mpt, key, hit) in observed.drain(..) {
            if hit {
                self.ledger.demand_hit(res(mpt), key);
            } else {
                self.ledger.evicted(res(mpt), key);
            }
        }
    }

    fn visit_awaits_other_read(&mut self, visit: u32) -> bool {
        !self.split_visits.is_empty() && self.split_visits.remove(&visit)
    }

    fn visit_wqes(&mut self, visit: u32) -> Vec<Vec<u8>> {
        self.visit_bytes.remove(&visit).unwrap_or_default()
    }
}

/// Resource prefetching as the NIC holds it: off, or the prefetcher (`nic.prefetch`). Not
/// boxed: a NIC holds exactly one, and a box would put back an indirection.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyPrefetch {
    /// `nic.prefetch = "none"`: the baseline.
    Off(NoPrefetch),
    /// Any trigger on.
    On(Prefetcher),
}

/// Calls the method in `$call` on whichever kind `$self` holds (as `$m`).
macro_rules! delegate {
    ($self:ident, $m:ident => $call:expr) => {
        match $self {
            AnyPrefetch::Off($m) => $call,
            AnyPrefetch::On($m) => $call,
        }
    };
}

impl AnyPrefetch {
    /// The kind `p` selects, and the scheduler's mirror it comes with (the prefetch queue,
    /// enabled with the scheduler trigger).
    pub fn new(p: PrefetchParams) -> (Self, SchedMirror) {
        let mirror = if p.sched {
            SchedMirror::new(p.window)
        } else {
            SchedMirror::default()
        };
        let kind = if p.enabled() {
            AnyPrefetch::On(Prefetcher::new(p))
        } else {
            AnyPrefetch::Off(NoPrefetch)
        };
        (kind, mirror)
    }

    /// Whether prefetching is on.
    #[inline]
    pub fn is_on(&self) -> bool {
        matches!(self, AnyPrefetch::On(_))
    }

    /// The prefetcher, when on.
    #[inline]
    pub fn on_mut(&mut self) -> Option<&mut Prefetcher> {
        match self {
            AnyPrefetch::On(p) => Some(p),
            AnyPrefetch::Off(_) => None,
        }
    }

    /// The prefetcher's on-chip structures and their bytes (none when off): its WQE cache
    /// and its prefetch queue, counted at `qps` QPs.
    pub fn onchip(&self, wqe_bytes: u64, qps: u64) -> Vec<(&'static str, u64)> {
        self.on()
            .map(|p| p.onchip(wqe_bytes, qps).to_vec())
            .unwrap_or_default()
    }

    /// The prefetcher, when on.
    pub fn on(&self) -> Option<&Prefetcher> {
        match self {
            AnyPrefetch::On(p) => Some(p),
            AnyPrefetch::Off(_) => None,
        }
    }
}

/// The [`Prefetch`] hooks, inherent so that callers need not import the trait.
impl AnyPrefetch {
    #[inline]
    pub fn qpc_demand_hit(&mut self, qpn: u32) {
        delegate!(self, m => m.qpc_demand_hit(qpn))
    }
    #[inline]
    pub fn qpc_demand_miss(&mut self, qpn: u32) -> bool {
        delegate!(self, m => m.qpc_demand_miss(qpn))
    }
    #[inline]
    pub fn qpc_demand_filled(&mut self, qpn: u32) {
        delegate!(self, m => m.qpc_demand_filled(qpn))
    }
    #[inline]
    pub fn trans_demand_reads(&mut self, f: TransFetch, reads: &mut Vec<TransRead>) {
        delegate!(self, m => m.trans_demand_reads(f, reads))
    }
    #[inline]
    pub fn trans_demand_filled(&mut self, read: TransRead) {
        delegate!(self, m => m.trans_demand_filled(read))
    }
    #[inline]
    pub fn trans_observed(&mut self, observed: &mut Vec<(bool, u64, bool)>) {
        delegate!(self, m => m.trans_observed(observed))
    }
    #[inline]
    pub fn visit_awaits_other_read(&mut self, visit: u32) -> bool {
        delegate!(self, m => m.visit_awaits_other_read(visit))
    }
    #[inline]
    pub fn visit_wqes(&mut self, visit: u32) -> Vec<Vec<u8>> {
        delegate!(self, m => m.visit_wqes(visit))
    }
}

impl crate::stats::Report for AnyPrefetch {
    /// The prefetcher's counters; nothing when off.
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        if let AnyPrefetch::On(p) = self {
            p.report(prefix, reg);
        }
    }
}
