//! The on-chip QPC cache: LRU, capacity in entries, O(1) lookups, hit/miss counters.
//!
//! The cache holds tags only: the QP context's *contents* are the transport's per-QP state
//! (the protocol truth); the model charges the time and bytes of moving a `qpc_entry_bytes`
//! entry between the cache and its backing store (host memory or on-board DDR).

use super::lru::{DenseIndex, Evicted, Lru};

/// Statistics of one cache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Lookups that found the entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Entries evicted.
    pub evictions: u64,
    /// Dirty entries written back on eviction.
    pub writebacks: u64,
}

impl CacheStats {
    /// Hit ratio in [0, 1]; 0 when never accessed.
    pub fn hit_ratio(&self) -> f64 {
        let n = self.hits + self.misses;
        if n == 0 {
            0.0
        } else {
            self.hits as f64 / n as f64
        }
    }
}

/// QPC cache keyed by QPN.
#[derive(Debug, Clone)]
pub struct QpcCache {
    lru: Lru<DenseIndex>,
    entry_bytes: u64,
    /// Counters.
    pub stats: CacheStats,
}

impl QpcCache {
    /// A cache of `entries` entries of `entry_bytes` each.
    pub fn new(entries: u32, entry_bytes: u64) -> Self {
        QpcCache {
            lru: Lru::new(entries),
            entry_bytes,
            stats: CacheStats::default(),
        }
    }

    /// Looks up `qpn` (counting a hit or a miss). Every access may modify the context
    /// (PSNs, MSN), so a hit marks the entry dirty.
    pub fn lookup(&mut self, qpn: u32) -> bool {
        let hit = self.lru.touch(u64::from(qpn), true);
        if hit {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        hit
    }

    /// Whether `qpn` is cached (no counters, no recency change).
    pub fn contains(&self, qpn: u32) -> bool {
        self.lru.contains(u64::from(qpn))
    }

    /// Fills `qpn` after a miss; returns the evicted QPN if the victim must be written back.
    pub fn fill(&mut self, qpn: u32) -> Option<u32> {
        match self.lru.insert(u64::from(qpn), true) {
            Some(Evicted { key, dirty }) => {
                self.stats.evictions += 1;
                if dirty {
                    self.stats.writebacks += 1;
                    Some(key as u32)
                } else {
                    None
                }
            }
            None => None,
        }
    }

    /// Capacity in entries.
    pub fn capacity(&self) -> u32 {
        self.lru.capacity()
    }

    /// Modelled on-chip bytes: capacity × entry size.
    pub fn onchip_bytes(&self) -> u64 {
        u64::from(self.lru.capacity()) * self.entry_bytes
    }
}
