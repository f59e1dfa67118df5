//! The WQE cache: WQEs the prefetcher read ahead of their scheduler visit, keyed by QP and
//! SQ index (the free-running 32-bit index, so a later lap of the ring never matches),
//! holding the WQE's real bytes as read from host memory.
//!
//! Replacement is LRU. A WQE is looked at once — by the visit that consumes it, which
//! takes it out — so recency is insertion order and a FIFO of insertions (with taken
//! entries skipped) is exactly LRU here. An entry evicted before its visit was prefetched
//! for nothing: the eviction is reported so the prefetcher counts it useless.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

fn key(qpn: u32, idx: u32) -> u64 {
    (u64::from(qpn) << 32) | u64::from(idx)
}

/// Prefetched WQEs waiting for their visit.
#[derive(Debug, Default, Clone)]
pub struct WqeCache {
    cap: usize,
    entries: FxHashMap<u64, (u64, Vec<u8>)>,
    order: VecDeque<(u64, u64)>,
    seq: u64,
}

impl WqeCache {
    /// A cache of `entries` WQEs (0 = holds nothing).
    pub fn new(entries: u32) -> Self {
        WqeCache {
            cap: entries as usize,
            ..WqeCache::default()
        }
    }

    /// Capacity in WQEs.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// WQEs held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether WQE `idx` of `qpn` is held.
    pub fn contains(&self, qpn: u32, idx: u32) -> bool {
        self.entries.contains_key(&key(qpn, idx))
    }

    /// Stores WQE `idx` of `qpn`; returns how many unused WQEs were evicted for it.
    pub fn insert(&mut self, qpn: u32, idx: u32, bytes: Vec<u8>) -> u64 {
        if self.cap == 0 {
            return 1;
        }
        let k = key(qpn, idx);
        self.seq += 1;
        let mut evicted = 0;
        if self.entries.insert(k, (self.seq, bytes)).is_none() {
            while self.entries.len() > self.cap {
                let Some((old, seq)) = self.order.pop_front() else {
                    break;
                };
                if self.entries.get(&old).is_some_and(|e| e.0 == seq) {
                    self.entries.remove(&old);
                    evicted += 1;
                }
            }
        }
        self.order.push_back((k, self.seq));
        self.compact();
        evicted
    }

    /// Takes WQE `idx` of `qpn` out for its visit.
    pub fn take(&mut self, qpn: u32, idx: u32) -> Option<Vec<u8>> {
        let e = self.entries.remove(&key(qpn, idx)).map(|e| e.1);
        self.compact();
        e
    }

    /// Drops stale order records once they outnumber the entries (bounded memory).
    fn compact(&mut self) {
        if self.order.len() > 2 * self.cap.max(16) {
            let entries = &self.entries;
            self.order
                .retain(|(k, s)| entries.get(k).is_some_and(|e| e.0 == *s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_oldest_unused_and_reports_it() {
        let mut c = WqeCache::new(2);
        assert_eq!(c.insert(1, 0, vec![1]), 0);
        assert_eq!(c.insert(1, 1, vec![2]), 0);
        assert_eq!(c.take(1, 0), Some(vec![1]));
        assert_eq!(c.insert(2, 0, vec![3]), 0, "a taken entry frees its line");
        assert_eq!(c.insert(2, 1, vec![4]), 1);
        assert!(!c.contains(1, 1));
        assert_eq!(c.len(), 2);
        assert_eq!(c.take(2, 1), Some(vec![4]));
    }

    #[test]
    fn zero_capacity_holds_nothing() {
        let mut c = WqeCache::new(0);
        assert_eq!(c.insert(1, 0, vec![1]), 1);
        assert!(c.is_empty());
    }
}
