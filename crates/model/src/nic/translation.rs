//! Memory translation: the MPT (one entry per memory region, found by lkey/rkey: bounds and
//! access rights) and the MTT (one entry per `page_bytes` page of a region: the physical
//! page), each with its own LRU cache. A message touching k pages needs one MPT lookup and k
//! MTT lookups. An MTT miss reads one 64 B line of 8 consecutive page entries (as hardware
//! reads whole lines) and fills all of them; an MPT miss reads one 64 B entry.
//!
//! The unit has two lanes, transmit and receive, each in order and blocking like the
//! baseline QPC manager: a miss stops the later jobs *of its lane* until the entry arrives
//! from the backing store. The lanes share the caches but not their queues, because a NIC
//! translates the addresses of the packets it receives (and lets ACKs through, which need
//! no translation) while its transmit side waits for the MTT entries of a long message; a
//! single queue held every ACK behind the page-by-page translation of queued multi-megabyte
//! WRITEs, which delayed completions by milliseconds and fired the retransmission timer on
//! a lossless link.
//!
//! Protection itself is checked by the transport (it owns the MRs); this unit only charges
//! the time and the cache traffic of doing so.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::lru::{HashIndex, Lru};
use super::qpc_cache::CacheStats;

/// The in-order lanes of the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransLane {
    /// Fetched WQEs, before their payload read.
    Tx,
    /// Received packets, before the transport places them.
    Rx,
    /// Fetched WQEs of LS tenants when TX isolation caches them separately
    /// ([`super::isolation`]): an LS WQE does not wait for the page-by-page translation of
    /// the BS messages fetched before it.
    TxLs,
}

impl TransLane {
    fn index(self) -> usize {
        match self {
            TransLane::Tx => 0,
            TransLane::Rx => 1,
            TransLane::TxLs => 2,
        }
    }
}

/// A translation job: `len` bytes at `va` through the region of `key`.
#[derive(Debug, Clone, Copy)]
pub struct TransJob<C> {
    /// lkey or rkey (identifies the MPT entry).
    pub key: u32,
    /// First byte.
    pub va: u64,
    /// Bytes (0 with `needs` = translate nothing: an in-order pass-through).
    pub len: u64,
    /// Whether any lookup is needed; `false` keeps the job in order without cost.
    pub needs: bool,
    /// What to do when done.
    pub cont: C,
    /// Arrival time, ps.
    pub at: TimePs,
}

/// A backing-store read the unit needs; when it completes, call [`Translation::on_fill`]
/// with its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransFetch {
    /// The lane blocked on it.
    pub lane: TransLane,
    /// An MPT entry (else one MTT line).
    pub mpt: bool,
    /// The entry's cache key, handed back with the fill.
    pub key: u64,
    /// Issue time, ps.
    pub at: TimePs,
}

/// Counters of the translation unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TranslationStats {
    /// MPT cache.
    pub mpt: CacheStats,
    /// MTT cache.
    pub mtt: CacheStats,
    /// Jobs processed.
    pub jobs: u64,
    /// Time blocked on misses, ps.
    pub blocked_ps: u64,
}

/// One in-order lane: its queue, the progress of its head job, its lookup port.
#[derive(Debug)]
struct Lane<C> {
    fifo: VecDeque<TransJob<C>>,
    /// Progress of the head job: MPT done, next page index to look up.
    head_mpt_done: bool,
    head_next_page: u64,
    free_at: TimePs,
    /// The entry the head waits for: cache key, MPT (else MTT), since when.
    blocked: Option<(u64, bool, TimePs)>,
}

impl<C> Default for Lane<C> {
    fn default() -> Self {
        Lane {
            fifo: VecDeque::new(),
            head_mpt_done: false,
            head_next_page: 0,
            free_at: 0,
            blocked: None,
        }
    }
}

/// The MPT/MTT unit.
#[derive(Debug)]
pub struct Translation<C> {
    mpt: Lru<HashIndex>,
    mtt: Lru<HashIndex>,
    page_bytes: u64,
    mpt_ps: TimePs,
    mtt_ps: TimePs,
    mpt_entry_bytes: u64,
    mtt_entry_bytes: u64,
    lanes: [Lane<C>; 3],
    /// Counters.
    pub stats: TranslationStats,
    /// Record cache hits and evictions in `observed` (the prefetcher's ledger reads them).
    pub observe: bool,
    /// With `observe`: (MPT?, key, hit) — a lookup hit, or (hit false) an entry evicted.
    pub observed: Vec<(bool, u64, bool)>,
    /// The pages (first, last) of each region whose bounds were noted
    /// ([`Translation::note_region`]): an MTT line read fills only the entries of its own
    /// region, so the MTT of a one-page region is one entry, not eight.
    region_pages: std::collections::HashMap<u32, (u64, u64)>,
}

/// MTT entries read (and filled) by one miss.
pub const MTT_LINE_ENTRIES: u64 = 8;

/// The MTT cache key of `page` of the region of `key`.
pub fn mtt_key(key: u32, page: u64) -> u64 {
    (u64::from(key) << 40) ^ (page & ((1 << 40) - 1))
}

impl<C: Copy> Translation<C> {
    /// A unit with caches of the given capacities and per-lookup times.
    pub fn new(
        mpt_entries: u32,
        mtt_entries: u32,
        page_bytes: u64,
        mpt_ps: TimePs,
        mtt_ps: TimePs,
        mpt_entry_bytes: u64,
        mtt_entry_bytes: u64,
    ) -> Self {
        Translation {
            mpt: Lru::new(mpt_entries),
            mtt: Lru::new(mtt_entries),
            page_bytes: page_bytes.max(1),
            mpt_ps,
            mtt_ps,
            mpt_entry_bytes,
            mtt_entry_bytes,
            lanes: [Lane::default(), Lane::default(), Lane::default()],
            stats: TranslationStats::default(),
            observe: false,
            observed: Vec::new(),
            region_pages: std::collections::HashMap::new(),
        }
    }

    /// Notes that the region of `key` spans `len` bytes from `va`. Its MTT segment has one
    /// entry per page it touches and no more: the entries a line read brings beyond them are
    /// not this region's, so they are not filled under its key. Regions without a note fill
    /// whole lines.
    pub fn note_region(&mut self, key: u32, va: u64, len: u64) {
        let first = va / self.page_bytes;
        let last = (va + len.max(1) - 1) / self.page_bytes;
        // Keyed as the MTT keys carry the region's key (its low 24 bits).
        self.region_pages
            .insert((mtt_key(key, 0) >> 40) as u32, (first, last));
    }

    /// Whether the MPT (`mpt`) or MTT cache holds `key` (no counters, no recency change).
    pub fn contains(&self, mpt: bool, key: u64) -> bool {
        if mpt {
            self.mpt.contains(key)
        } else {
            self.mtt.contains(key)
        }
    }

    /// The page of `va` (MTT granularity).
    pub fn page_of(&self, va: u64) -> u64 {
        va / self.page_bytes
    }

    /// A prefetched entry arrived with nobody waiting: it goes into its cache (an MTT
    /// read fills its whole line, as a demand miss does).
    pub fn prefetch_insert(&mut self, mpt: bool, key: u64) {
        self.insert_entry(mpt, key);
    }

    /// Inserts the entry of `key` (MPT) or the MTT line holding it, `key` most recent.
    fn insert_entry(&mut self, is_mpt: bool, key: u64) {
        let observe = self.observe;
        let (cache, stats) = if is_mpt {
            (&mut self.mpt, &mut self.stats.mpt)
        } else {
            (&mut self.mtt, &mut self.stats.mtt)
        };
        let mut evicted = |e: Option<super::lru::Evicted>, obs: &mut Vec<(bool, u64, bool)>| {
            if let Some(e) = e {
                stats.evictions += 1;
                if observe {
                    obs.push((is_mpt, e.key, false));
                }
            }
        };
        if is_mpt {
            let e = cache.insert(key, false);
            evicted(e, &mut self.observed);
        } else {
            // The whole line: the entry missed and its neighbours in the same 64 B.
            let mask = (1 << 40) - 1;
            let page = key & mask;
            let base = page - page % MTT_LINE_ENTRIES;
            let (lo, hi) = self
                .region_pages
                .get(&((key >> 40) as u32))
                .map_or((base, base + MTT_LINE_ENTRIES - 1), |&(f, l)| {
                    (base.max(f), (base + MTT_LINE_ENTRIES - 1).min(l))
                });
            for pg in lo.min(page)..=hi.max(page) {
                let k = (key & !mask) | pg;
                if k == key || !cache.contains(k) {
                    let e = cache.insert(k, false);
                    evicted(e, &mut self.observed);
                }
            }
            // The missed entry is the most recently used.
            cache.touch(key, false);
        }
    }

    /// Queues a job on `lane`.
    pub fn submit(&mut self, lane: TransLane, job: TransJob<C>) {
        self.lanes[lane.index()].fifo.push_back(job);
    }

    /// Jobs queued on `lane`.
    pub fn queued(&self, lane: TransLane) -> usize {
        self.lanes[lane.index()].fifo.len()
    }

    fn pages(&self, job: &TransJob<C>) -> (u64, u64) {
        if !job.needs || job.len == 0 {
            return (0, 0);
        }
        let first = job.va / self.page_bytes;
        let last = (job.va + job.len - 1) / self.page_bytes;
        (first, last - first + 1)
    }

    /// Processes the queued jobs of every lane; finished jobs go to `done` with their
    /// completion time, needed reads to `fetch`.
    pub fn pump(&mut self, done: &mut Vec<(C, TimePs)>, fetch: &mut Vec<TransFetch>) {
        self.pump_lane(TransLane::Tx, done, fetch);
        self.pump_lane(TransLane::Rx, done, fetch);
        self.pump_lane(TransLane::TxLs, done, fetch);
    }

    fn pump_lane(
        &mut self,
        lane: TransLane,
        done: &mut Vec<(C, TimePs)>,
        fetch: &mut Vec<TransFetch>,
    ) {
        let li = lane.index();
        while self.lanes[li].blocked.is_none() {
            let Some(&job) = self.lanes[li].fifo.front() else {
                break;
            };
            let (first, n) = self.pages(&job);
            let l = &mut self.lanes[li];
            let mut t = job.at.max(l.free_at);
            if job.needs && !l.head_mpt_done {
                t += self.mpt_ps;
                l.free_at = t;
                if self.mpt.touch(u64::from(job.key), false) {
                    self.stats.mpt.hits += 1;
                    if self.observe {
                        self.observed.push((true, u64::from(job.key), true));
                    }
                    l.head_mpt_done = true;
                } else {
                    self.stats.mpt.misses += 1;
                    l.blocked = Some((u64::from(job.key), true, t));
                    fetch.push(TransFetch {
                        lane,
                        mpt: true,
                        key: u64::from(job.key),
                        at: t,
                    });
                    break;
                }
            }
            let mut missed = false;
            while l.head_next_page < n {
                t += self.mtt_ps;
                l.free_at = t;
                let k = mtt_key(job.key, first + l.head_next_page);
                if self.mtt.touch(k, false) {
                    self.stats.mtt.hits += 1;
                    if self.observe {
                        self.observed.push((false, k, true));
                    }
                    l.head_next_page += 1;
                } else {
                    self.stats.mtt.misses += 1;
                    l.blocked = Some((k, false, t));
                    fetch.push(TransFetch {
                        lane,
                        mpt: false,
                        key: k,
                        at: t,
                    });
                    missed = true;
                    break;
                }
            }
            if missed {
                break;
            }
            l.free_at = t;
            l.fifo.pop_front();
            l.head_mpt_done = false;
            l.head_next_page = 0;
            self.stats.jobs += 1;
            done.push((job.cont, t));
        }
    }

    /// The entry of cache key `key` that `lane` was blocked on arrived at `now` (a fill of
    /// any other key is not this lane's and changes nothing).
    pub fn on_fill(
        &mut self,
        lane: TransLane,
        key: u64,
        now: TimePs,
        done: &mut Vec<(C, TimePs)>,
        fetch: &mut Vec<TransFetch>,
    ) {
        let l = &mut self.lanes[lane.index()];
        let Some((key, is_mpt, since)) = l.blocked.filter(|b| b.0 == key) else {
            return;
        };
        l.blocked = None;
        self.stats.blocked_ps += now.saturating_sub(since);
        if is_mpt {
            l.head_mpt_done = true;
        } else {
            l.head_next_page += 1;
        }
        l.free_at = l.free_at.max(now);
        self.insert_entry(is_mpt, key);
        self.pump(done, fetch);
    }

    /// Bytes of a backing-store read for an MPT (true) or MTT (false) entry.
    pub fn entry_bytes(&self, is_mpt: bool) -> u64 {
        if is_mpt {
            self.mpt_entry_bytes
        } else {
            self.mtt_entry_bytes * MTT_LINE_ENTRIES
        }
    }

    /// Modelled on-chip bytes (MPT cache, MTT cache).
    pub fn onchip(&self) -> [(&'static str, u64); 2] {
        [
            (
                "mpt_cache",
                u64::from(self.mpt.capacity()) * self.mpt_entry_bytes,
            ),
            (
                "mtt_cache",
                u64::from(self.mtt.capacity()) * self.mtt_entry_bytes,
            ),
        ]
    }
}

impl<C> crate::stats::Report for Translation<C> {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mtt_line_fills_only_the_entries_of_its_own_region() {
        let mut t: Translation<u32> = Translation::new(4, 64, 4096, 1000, 1000, 64, 8);
        // Region 9: one page (page 3); region 7: unknown bounds, whole lines.
        t.note_region(9, 3 * 4096 + 100, 64);
        t.prefetch_insert(false, mtt_key(9, 3));
        t.prefetch_insert(false, mtt_key(7, 3));
        assert!(t.contains(false, mtt_key(9, 3)));
        assert!((0..8)
            .filter(|&p| p != 3)
            .all(|p| !t.contains(false, mtt_key(9, p))));
        assert!((0..8).all(|p| t.contains(false, mtt_key(7, p))));
        // A region of pages 5..=9 fills pages 5..=7 of the first line, 8..=9 of the next.
        t.note_region(11, 5 * 4096, 5 * 4096);
        t.prefetch_insert(false, mtt_key(11, 6));
        t.prefetch_insert(false, mtt_key(11, 8));
        let held: Vec<u64> = (0..16)
            .filter(|&p| t.contains(false, mtt_key(11, p)))
            .collect();
        assert_eq!(held, vec![5, 6, 7, 8, 9]);
    }

    #[test]
    fn multi_page_job_looks_up_every_page_and_misses_block() {
        let mut t: Translation<u32> = Translation::new(4, 64, 4096, 1000, 1000, 64, 8);
        let mut done = Vec::new();
        let mut fetch = Vec::new();
        // 8 KB starting mid-page touches 3 pages
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 7,
                va: 2048,
                len: 8192,
                needs: true,
                cont: 1,
                at: 0,
            },
        );
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 0,
                va: 0,
                len: 0,
                needs: false,
                cont: 2,
                at: 0,
            },
        );
        t.pump(&mut done, &mut fetch);
        assert_eq!(
            fetch,
            vec![TransFetch {
                lane: TransLane::Tx,
                mpt: true,
                key: 7,
                at: 1000
            }]
        );
        assert!(done.is_empty());
        let k = fetch[0].key;
        fetch.clear();
        t.on_fill(TransLane::Tx, k, 10_000, &mut done, &mut fetch);
        assert_eq!(fetch.len(), 1, "one MTT line for pages 0..8");
        let k = fetch[0].key;
        fetch.clear();
        t.on_fill(TransLane::Tx, k + 1, 40_000, &mut done, &mut fetch);
        assert!(
            done.is_empty(),
            "a fill of another entry does not unblock the lane"
        );
        t.on_fill(TransLane::Tx, k, 50_000, &mut done, &mut fetch);
        assert!(fetch.is_empty());
        assert_eq!(done, vec![(1, 52_000), (2, 52_000)]);
        assert_eq!(t.stats.mpt.misses, 1);
        assert_eq!(t.stats.mtt.misses, 1);
        assert_eq!(t.stats.mtt.hits, 2);
        // A page of the next line misses again.
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 7,
                va: 8 * 4096,
                len: 1,
                needs: true,
                cont: 4,
                at: 55_000,
            },
        );
        done.clear();
        t.pump(&mut done, &mut fetch);
        assert_eq!(fetch.len(), 1);
        let k = fetch[0].key;
        fetch.clear();
        t.on_fill(TransLane::Tx, k, 60_000, &mut done, &mut fetch);
        // Same job again: all hits, 1 + 3 lookups
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 7,
                va: 2048,
                len: 8192,
                needs: true,
                cont: 3,
                at: 60_000,
            },
        );
        done.clear();
        t.pump(&mut done, &mut fetch);
        assert_eq!(done, vec![(3, 64_000)]);
    }

    #[test]
    fn a_transmit_miss_does_not_hold_received_packets() {
        let mut t: Translation<u32> = Translation::new(4, 64, 4096, 1000, 1000, 64, 8);
        let (mut done, mut fetch) = (Vec::new(), Vec::new());
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 7,
                va: 0,
                len: 1 << 20,
                needs: true,
                cont: 1,
                at: 0,
            },
        );
        // An ACK: nothing to translate.
        t.submit(
            TransLane::Rx,
            TransJob {
                key: 0,
                va: 0,
                len: 0,
                needs: false,
                cont: 2,
                at: 500,
            },
        );
        t.pump(&mut done, &mut fetch);
        assert_eq!(
            done,
            vec![(2, 500)],
            "the ACK passes the blocked transmit lane"
        );
        assert_eq!(fetch.len(), 1);
        assert_eq!(fetch[0].lane, TransLane::Tx);
        assert_eq!(t.queued(TransLane::Tx), 1);
        // A fill for the receive lane (not blocked) changes nothing.
        done.clear();
        fetch.clear();
        t.on_fill(TransLane::Rx, 7, 2_000, &mut done, &mut fetch);
        assert!(done.is_empty() && fetch.is_empty());
        assert_eq!(t.queued(TransLane::Tx), 1);
    }
}
