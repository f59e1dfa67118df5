//! The prefetcher's ledger: which context reads are in flight and for whom, which
//! prefetched entries wait unused in their cache, and the counters the paper's question
//! needs — was a prefetch in time (hit), too late (the demand request found it still in
//! flight and waited for it instead of reading again), or useless (evicted before use)?
//!
//! Fills are keyed: a prefetch fill answers only the demand requests that asked for the
//! same entry while it was in flight, so a prefetch never holds a demand request of another
//! entry behind it. Pure bookkeeping without a clock; the NIC calls it as reads start and
//! finish.

use rustc_hash::{FxHashMap, FxHashSet};

/// A kind of communication resource the chain prefetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Res {
    /// A QP context.
    Qpc,
    /// An MPT entry (key: the memory key).
    Mpt,
    /// An MTT line (key: the translation unit's MTT cache key).
    Mtt,
}

/// Counters of one resource kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ResStats {
    /// Prefetch reads issued.
    pub issued: u64,
    /// Prefetches skipped: the entry was cached or already being read.
    pub skipped: u64,
    /// Prefetched entries a demand request found in the cache.
    pub hits: u64,
    /// Demand requests that found their entry's prefetch still in flight and waited for it.
    pub late: u64,
    /// Prefetched entries evicted before any demand request used them.
    pub useless: u64,
    /// Time from the trigger of a read's chain to the read's arrival, summed over the
    /// reads, ps: over the reads issued (WQEs: over `wqe_reads`), the time the chain takes
    /// to bring this resource, which the window must cover.
    pub fill_ps: u64,
}

/// Who a read in flight is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// A prefetch; `waiters`: the demand requesters (bit set) that wait for it.
    Prefetch { waiters: u8 },
    /// Demand reads, counted.
    Demand(u32),
}

/// Reads in flight and prefetched entries not yet used.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    inflight: FxHashMap<(Res, u64), Read>,
    unused: FxHashSet<(Res, u64)>,
    stats: [ResStats; 3],
}

fn ix(r: Res) -> usize {
    match r {
        Res::Qpc => 0,
        Res::Mpt => 1,
        Res::Mtt => 2,
    }
}

impl Ledger {
    /// Counters of `r`.
    pub fn stats(&self, r: Res) -> &ResStats {
        &self.stats[ix(r)]
    }

    /// Counters of `r`, to update.
    pub fn stats_mut(&mut self, r: Res) -> &mut ResStats {
        &mut self.stats[ix(r)]
    }

    /// The prefetcher wants entry `key` of `r` (`cached`: already in its cache). Returns
    /// whether to read it: not when cached or already being read.
    pub fn start_prefetch(&mut self, r: Res, key: u64, cached: bool) -> bool {
        if cached || self.inflight.contains_key(&(r, key)) {
            self.stats[ix(r)].skipped += 1;
            return false;
        }
        self.inflight
            .insert((r, key), Read::Prefetch { waiters: 0 });
        self.stats[ix(r)].issued += 1;
        true
    }

    /// A demand request `waiter` (one bit) missed entry `key` of `r`. Returns whether the
    /// caller must read it; `false`: a prefetch of it is in flight and the request waits
    /// for that fill ([`Ledger::prefetch_filled`] returns its bit).
    pub fn demand_miss(&mut self, r: Res, key: u64, waiter: u8) -> bool {
        if self.unused.remove(&(r, key)) {
            // Prefetched, then evicted before this first use.
            self.stats[ix(r)].useless += 1;
        }
        match self.inflight.get_mut(&(r, key)) {
            Some(Read::Prefetch { waiters }) => {
                if *waiters & waiter == 0 {
                    self.stats[ix(r)].late += 1;
                }
                *waiters |= waiter;
                false
            }
            Some(Read::Demand(n)) => {
                *n += 1;
                true
            }
            None => {
                self.inflight.insert((r, key), Read::Demand(1));
                true
            }
        }
    }

    /// A demand read of entry `key` of `r` completed.
    pub fn demand_filled(&mut self, r: Res, key: u64) {
        if let Some(Read::Demand(n)) = self.inflight.get_mut(&(r, key)) {
            *n -= 1;
            if *n == 0 {
                self.inflight.remove(&(r, key));
            }
        }
    }

    /// A demand request found entry `key` of `r` in its cache.
    pub fn demand_hit(&mut self, r: Res, key: u64) {
        if !self.unused.is_empty() && self.unused.remove(&(r, key)) {
            self.stats[ix(r)].hits += 1;
        }
    }

    /// The prefetch of entry `key` of `r` arrived. Returns the demand requesters waiting for
    /// it (their bits; 0: nobody, the entry waits in the cache for its use and is watched).
    pub fn prefetch_filled(&mut self, r: Res, key: u64) -> u8 {
        let waiters = match self.inflight.remove(&(r, key)) {
            Some(Read::Prefetch { waiters }) => waiters,
            Some(d @ Read::Demand(_)) => {
                self.inflight.insert((r, key), d);
                0
            }
            None => 0,
        };
        if waiters == 0 {
            self.unused.insert((r, key));
        }
        waiters
    }

    /// Entry `key` of `r` left its cache.
    pub fn evicted(&mut self, r: Res, key: u64) {
        if !self.unused.is_empty() && self.unused.remove(&(r, key)) {
            self.stats[ix(r)].useless += 1;
        }
    }

    /// Whether `key` of `r` is being read (by a prefetch or on demand).
    pub fn in_flight(&self, r: Res, key: u64) -> bool {
        self.inflight.contains_key(&(r, key))
    }

    /// Prefetch reads in flight.
    pub fn prefetches_in_flight(&self) -> usize {
        self.inflight
            .values()
            .filter(|r| matches!(r, Read::Prefetch { .. }))
            .count()
    }

    /// Prefetched entries not yet used (for `r`), as keys.
    pub fn unused_keys(&self, r: Res) -> Vec<u64> {
        let mut v: Vec<u64> = self
            .unused
            .iter()
            .filter(|(k, _)| *k == r)
            .map(|(_, key)| *key)
            .collect();
        v.sort_unstable();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_demand_miss_waits_for_its_prefetch_and_counts_late() {
        let mut l = Ledger::default();
        assert!(l.start_prefetch(Res::Qpc, 5, false));
        assert!(!l.start_prefetch(Res::Qpc, 5, false), "already in flight");
        assert!(!l.demand_miss(Res::Qpc, 5, 1));
        assert_eq!(l.prefetch_filled(Res::Qpc, 5), 1);
        assert_eq!(l.stats(Res::Qpc).late, 1);
        l.demand_hit(Res::Qpc, 5);
        assert_eq!(l.stats(Res::Qpc).hits, 0, "a late fill is not a hit");
    }

    #[test]
    fn hit_and_useless() {
        let mut l = Ledger::default();
        assert!(l.start_prefetch(Res::Mpt, 1, false));
        assert!(l.start_prefetch(Res::Mpt, 2, false));
        assert_eq!(l.prefetch_filled(Res::Mpt, 1), 0);
        assert_eq!(l.prefetch_filled(Res::Mpt, 2), 0);
        l.demand_hit(Res::Mpt, 1);
        l.evicted(Res::Mpt, 2);
        let s = l.stats(Res::Mpt);
        assert_eq!((s.issued, s.hits, s.useless), (2, 1, 1));
    }
}
