//! Memory translation: the MPT (one entry per memory region, found by lkey/rkey: bounds and
//! access rights) and the MTT (one entry per `page_bytes` page of a region: the physical
//! page), each with its own LRU cache. A message touching k pages needs one MPT lookup and k
//! MTT lookups. An MPT miss reads one 64 B entry.
//!
//! A region's MTT is one contiguous array in host memory, read in 64 B lines of 8 page
//! entries. When a lane's head job misses a page, the unit reads ahead every line of the
//! job's following pages that is neither cached nor already being read, up to the read-ahead
//! window ([`Translation::read_ahead_pages`]): consecutive lines go in one read of up to the
//! PCIe max read request size (`pcie.mrrs_bytes`: 512 B = 8 lines = 64 entries), and the
//! reads leave back to back, since none depends on another (only the DMA engine's tags limit
//! them). As the lane moves on it tops the window up. The lane still translates the job's
//! pages in order and waits only for the page it needs next; a fill inserts every line of
//! its read. Before, a miss read one line and the lane waited for it before it found the next
//! miss: an 8 MB message in 4 KiB pages took 256 PCIe round trips in series.
//!
//! The unit has two lanes, transmit and receive, each in order and blocking like the
//! baseline QPC manager: a miss stops the later jobs *of its lane* until the entry arrives
//! from the backing store. The lanes share the caches but not their queues or their reads in
//! flight, because a NIC translates the addresses of the packets it receives (and lets ACKs
//! through, which need no translation) while its transmit side waits for the MTT entries of
//! a long message; a single queue held every ACK behind the page-by-page translation of
//! queued multi-megabyte WRITEs, which delayed completions by milliseconds and fired the
//! retransmission timer on a lossless link.
//!
//! Protection itself is checked by the transport (it owns the MRs); this unit only charges
//! the time and the cache traffic of doing so.

use std::collections::VecDeque;

use rnic_sim::TimePs;
use rustc_hash::FxHashSet;

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
    /// ([`super::mech::isolation`]): an LS WQE does not wait for the page-by-page translation of
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

/// What one backing-store read brings: an MPT entry, or consecutive MTT lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransRead {
    /// An MPT entry (else MTT lines).
    pub mpt: bool,
    /// MPT: the memory key. MTT: the cache key of the first page the read is for; the read
    /// starts at the line holding it.
    pub key: u64,
    /// MTT lines read, consecutive from the one holding `key` (1 for an MPT entry).
    pub lines: u32,
}

impl TransRead {
    /// One MTT line, the one holding the entry of cache key `key`.
    pub fn mtt_line(key: u64) -> Self {
        TransRead {
            mpt: false,
            key,
            lines: 1,
        }
    }

    /// The keys the prefetcher's ledger knows the lines of this read by: `key` for the
    /// first, the key of its first page for each following line (an MPT read: its key).
    pub fn line_keys(self) -> impl Iterator<Item = u64> {
        let first_line_page = line_first_page(self.key);
        (0..u64::from(self.lines.max(1))).map(move |i| {
            if i == 0 {
                self.key
            } else {
                (self.key & !PAGE_MASK) | (first_line_page + i * MTT_LINE_ENTRIES)
            }
        })
    }
}

/// A backing-store read the unit needs; when it completes, call [`Translation::on_fill`]
/// with its lane and read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransFetch {
    /// The lane that reads it (and will wait for it).
    pub lane: TransLane,
    /// What to read.
    pub read: TransRead,
    /// Issue time, ps.
    pub at: TimePs,
}

/// Counters of the translation unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TranslationStats {
    /// MPT cache.
    pub mpt: CacheStats,
    /// MTT cache: a miss is a lookup that found its page absent and waited for it (read
    /// then, or already being read ahead).
    pub mtt: CacheStats,
    /// Jobs that went through a lane, in order: translations (an MPT lookup and the MTT
    /// lookups of the job's pages: a fetched WQE's payload; at the receiver, on a message's
    /// first packet, its target: a WRITE's RETH span, a SEND's receive buffer, a READ
    /// request's source at the responder, a READ's local buffer on its first response, an
    /// atomic's target; every packet placed out of order; one job per region the target
    /// spans) and pass-throughs alike. The
    /// translations are `jobs - pass_throughs`, one MPT lookup each.
    pub jobs: u64,
    /// Of `jobs`, those that translated nothing and only kept their place in the lane:
    /// received packets with nothing to translate (ACKs and NAKs, atomic ACKs, a message's
    /// packets after its first, a SEND scattered into its CQE, a request the responder
    /// will drop) and WQEs with no payload to read (a READ's, an atomic's, an inline or
    /// zero-byte message's).
    pub pass_throughs: u64,
    /// Time blocked on misses, ps.
    pub blocked_ps: u64,
}

/// The entry a lane's head job waits for.
#[derive(Debug, Clone, Copy)]
struct Blocked {
    /// Its cache key.
    key: u64,
    /// An MPT entry (else an MTT page).
    mpt: bool,
    /// Since when, ps.
    since: TimePs,
}

/// One in-order lane: its queue, the progress of its head job, its lookup port, its MTT
/// reads in flight.
#[derive(Debug)]
struct Lane<C> {
    fifo: VecDeque<TransJob<C>>,
    /// Progress of the head job: MPT done, next page index to look up.
    head_mpt_done: bool,
    head_next_page: u64,
    /// Read-ahead cursor of the head job (a page index, 0 before its first miss): the
    /// lines of its pages from `head_next_page` up to here were cached or are being read
    /// when last looked at.
    head_read_to: u64,
    free_at: TimePs,
    /// The entry the head waits for.
    blocked: Option<Blocked>,
    /// The MTT lines this lane is reading (by [`line_id`]): never read twice at once.
    lines_in_flight: FxHashSet<u64>,
}

impl<C> Default for Lane<C> {
    fn default() -> Self {
        Lane {
            fifo: VecDeque::new(),
            head_mpt_done: false,
            head_next_page: 0,
            head_read_to: 0,
            free_at: 0,
            blocked: None,
            lines_in_flight: FxHashSet::default(),
        }
    }
}

/// Sizes and times of the unit.
#[derive(Debug, Clone, Copy)]
pub struct TranslationParams {
    /// MPT cache entries.
    pub mpt_entries: u32,
    /// MTT cache entries.
    pub mtt_entries: u32,
    /// Bytes of a page (one MTT entry each).
    pub page_bytes: u64,
    /// One MPT lookup, ps.
    pub mpt_ps: TimePs,
    /// One MTT lookup (one page), ps.
    pub mtt_ps: TimePs,
    /// Bytes of an MPT entry in its backing store.
    pub mpt_entry_bytes: u64,
    /// Bytes of an MTT entry in its backing store.
    pub mtt_entry_bytes: u64,
    /// Largest read of consecutive MTT lines (the PCIe max read request size).
    pub max_read_bytes: u64,
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
    /// MTT lines one read brings at most.
    lines_per_read: u64,
    /// See [`Translation::read_ahead_pages`].
    read_ahead_pages: u64,
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

/// MTT entries in one 64 B line, the unit of an MTT read.
pub const MTT_LINE_ENTRIES: u64 = 8;

/// The page bits of an MTT cache key (the region's key sits above them).
const PAGE_MASK: u64 = (1 << 40) - 1;

/// The MTT cache key of `page` of the region of `key`.
pub fn mtt_key(key: u32, page: u64) -> u64 {
    (u64::from(key) << 40) ^ (page & PAGE_MASK)
}

/// The first page of the MTT line holding the entry of cache key `key`.
fn line_first_page(key: u64) -> u64 {
    let page = key & PAGE_MASK;
    page - page % MTT_LINE_ENTRIES
}

/// The line holding the entry of cache key `key`, named by its first page's key.
fn line_id(key: u64) -> u64 {
    (key & !PAGE_MASK) | line_first_page(key)
}

impl<C: Copy> Translation<C> {
    /// A unit with caches of the given capacities and per-lookup times.
    pub fn new(p: TranslationParams) -> Self {
        let line_bytes = p.mtt_entry_bytes.max(1) * MTT_LINE_ENTRIES;
        let half_cache_lines = u64::from(p.mtt_entries) / 2 / MTT_LINE_ENTRIES;
        Translation {
            mpt: Lru::new(p.mpt_entries),
            mtt: Lru::new(p.mtt_entries),
            page_bytes: p.page_bytes.max(1),
            mpt_ps: p.mpt_ps,
            mtt_ps: p.mtt_ps,
            mpt_entry_bytes: p.mpt_entry_bytes,
            mtt_entry_bytes: p.mtt_entry_bytes,
            lines_per_read: (p.max_read_bytes / line_bytes).max(1),
            read_ahead_pages: half_cache_lines.max(1) * MTT_LINE_ENTRIES,
            lanes: [Lane::default(), Lane::default(), Lane::default()],
            stats: TranslationStats::default(),
            observe: false,
            observed: Vec::new(),
            region_pages: std::collections::HashMap::new(),
        }
    }

    /// Pages of its head job a lane reads ahead of the page it translates: half the MTT
    /// cache, in whole lines (at least one). A line read ahead waits in the cache until the
    /// lane reaches it. Between its fill and its use the lane touches fewer entries than the
    /// window (the pages it translates) and fills fewer (the lines it reads meanwhile), so
    /// with half the cache as window the LRU never evicts a line the lane read before the
    /// lane uses it, however long the message; reading a whole message ahead through a
    /// smaller cache would evict its first lines with its last and read them again. The
    /// fills of other lanes can still evict a line read ahead: the lane then reads it again
    /// when it gets there.
    pub fn read_ahead_pages(&self) -> u64 {
        self.read_ahead_pages
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
        if mpt {
            self.insert_mpt(key);
        } else {
            self.insert_lines(TransRead::mtt_line(key));
        }
    }

    /// Counts an eviction (and reports it when observing).
    fn evicted(&mut self, is_mpt: bool, e: Option<super::lru::Evicted>) {
        let Some(e) = e else {
            return;
        };
        if is_mpt {
            self.stats.mpt.evictions += 1;
        } else {
            self.stats.mtt.evictions += 1;
        }
        if self.observe {
            self.observed.push((is_mpt, e.key, false));
        }
    }

    /// Inserts the MPT entry of `key`, most recent.
    fn insert_mpt(&mut self, key: u64) {
        let e = self.mpt.insert(key, false);
        self.evicted(true, e);
    }

    /// Inserts the entries of the lines of `read` that belong to its region, in address
    /// order, and then makes the read's own entry (the page it was for) the most recent.
    fn insert_lines(&mut self, read: TransRead) {
        let region = read.key & !PAGE_MASK;
        let bounds = self.region_pages.get(&((read.key >> 40) as u32)).copied();
        let key_page = read.key & PAGE_MASK;
        let base = line_first_page(read.key);
        for i in 0..u64::from(read.lines.max(1)) {
            let line = base + i * MTT_LINE_ENTRIES;
            let line_last = line + MTT_LINE_ENTRIES - 1;
            let (mut lo, mut hi) =
                bounds.map_or((line, line_last), |(f, l)| (line.max(f), line_last.min(l)));
            if i == 0 {
                // The page the read was for, even outside the noted bounds.
                lo = lo.min(key_page);
                hi = hi.max(key_page);
            }
            for pg in lo..=hi {
                let k = region | pg;
                if k != read.key && !self.mtt.contains(k) {
                    let e = self.mtt.insert(k, false);
                    self.evicted(false, e);
                }
            }
        }
        // Last, so that a cache smaller than the read keeps this page, not the line's last.
        if !self.mtt.touch(read.key, false) {
            let e = self.mtt.insert(read.key, false);
            self.evicted(false, e);
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
    ///
    /// A lane with nothing queued is not entered: it would do nothing, and most pumps find
    /// two of the three lanes empty (one pump per job submitted, three calls each).
    pub fn pump(&mut self, done: &mut Vec<(C, TimePs)>, fetch: &mut Vec<TransFetch>) {
        for lane in [TransLane::Tx, TransLane::Rx, TransLane::TxLs] {
            if !self.lanes[lane.index()].fifo.is_empty() {
                self.pump_lane(lane, done, fetch);
            }
        }
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
                    l.blocked = Some(Blocked {
                        key: u64::from(job.key),
                        mpt: true,
                        since: t,
                    });
                    fetch.push(TransFetch {
                        lane,
                        read: TransRead {
                            mpt: true,
                            key: u64::from(job.key),
                            lines: 1,
                        },
                        at: t,
                    });
                    break;
                }
            }
            let reader = LineReader {
                lane,
                job_key: job.key,
                first_page: first,
                pages: n,
                window_pages: self.read_ahead_pages,
                lines_per_read: self.lines_per_read,
            };
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
                    if l.head_read_to > 0 && reader.window_has_room(l) {
                        reader.read_ahead(l, &self.mtt, t, fetch);
                    }
                } else {
                    self.stats.mtt.misses += 1;
                    l.blocked = Some(Blocked {
                        key: k,
                        mpt: false,
                        since: t,
                    });
                    if !l.lines_in_flight.contains(&line_id(k)) {
                        // Never read, or read ahead and evicted before its use: read it
                        // again, and look again at every line after it.
                        l.head_read_to = l.head_next_page;
                    }
                    reader.read_ahead(l, &self.mtt, t, fetch);
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
            l.head_read_to = 0;
            self.stats.jobs += 1;
            if !job.needs {
                self.stats.pass_throughs += 1;
            }
            done.push((job.cont, t));
        }
    }

    /// Read `read` of `lane` arrived at `now`. An MTT read fills the cache with its lines
    /// whoever waits; the lane continues if its head waited for an entry the read brings.
    pub fn on_fill(
        &mut self,
        lane: TransLane,
        read: TransRead,
        now: TimePs,
        done: &mut Vec<(C, TimePs)>,
        fetch: &mut Vec<TransFetch>,
    ) {
        let li = lane.index();
        if read.mpt {
            let Some(b) = self.lanes[li]
                .blocked
                .filter(|b| b.mpt && b.key == read.key)
            else {
                // A fill of any other key is not this lane's and changes nothing.
                return;
            };
            self.insert_mpt(b.key);
            self.unblock(li, b, now);
            self.lanes[li].head_mpt_done = true;
        } else {
            let first_line = line_id(read.key);
            let lines = u64::from(read.lines.max(1));
            for i in 0..lines {
                self.lanes[li]
                    .lines_in_flight
                    .remove(&(first_line + i * MTT_LINE_ENTRIES));
            }
            self.insert_lines(read);
            let Some(b) = self.lanes[li].blocked.filter(|b| {
                !b.mpt
                    && b.key & !PAGE_MASK == read.key & !PAGE_MASK
                    && (first_line..first_line + lines * MTT_LINE_ENTRIES).contains(&line_id(b.key))
            }) else {
                return;
            };
            self.unblock(li, b, now);
            // The page it waited for is translated (even should the fill itself have
            // evicted it from a cache smaller than the read).
            self.lanes[li].head_next_page += 1;
        }
        self.pump(done, fetch);
    }

    /// Lane `li` no longer waits for `b` at `now`.
    fn unblock(&mut self, li: usize, b: Blocked, now: TimePs) {
        let l = &mut self.lanes[li];
        l.blocked = None;
        l.free_at = l.free_at.max(now);
        self.stats.blocked_ps += now.saturating_sub(b.since);
    }

    /// Bytes of one MPT entry (true) or one MTT line (false) in the backing store.
    pub fn entry_bytes(&self, is_mpt: bool) -> u64 {
        if is_mpt {
            self.mpt_entry_bytes
        } else {
            self.mtt_entry_bytes * MTT_LINE_ENTRIES
        }
    }

    /// Bytes `read` moves from the backing store (and its completions carry): its entry or
    /// lines (an MPT read is one entry).
    pub fn read_bytes(&self, read: TransRead) -> u64 {
        self.entry_bytes(read.mpt) * u64::from(read.lines.max(1))
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

/// Issues the MTT reads of a lane's head job.
struct LineReader {
    lane: TransLane,
    job_key: u32,
    first_page: u64,
    /// Pages of the job.
    pages: u64,
    window_pages: u64,
    lines_per_read: u64,
}

impl LineReader {
    /// Where the window of `l` ends (a page index of the job, exclusive).
    fn window_end<C>(&self, l: &Lane<C>) -> u64 {
        (l.head_next_page + self.window_pages).min(self.pages)
    }

    /// Whether the window has moved far enough past the cursor to top it up: by a full
    /// read, or half the window if that is less (so that a read is in flight while the
    /// lane uses the other half), in whole lines; or to the job's end. Topping up line by
    /// line would split the reads.
    fn window_has_room<C>(&self, l: &Lane<C>) -> bool {
        let end = self.window_end(l);
        let step_lines = self
            .lines_per_read
            .min(self.window_pages / 2 / MTT_LINE_ENTRIES)
            .max(1);
        l.head_read_to < end
            && (end - l.head_read_to >= step_lines * MTT_LINE_ENTRIES || end == self.pages)
    }

    /// Reads, from `at`, every line of the job's pages from the cursor (or the next page)
    /// to the end of the window that is neither cached nor being read by the lane:
    /// consecutive lines share a read of up to `lines_per_read`. Moves the cursor.
    fn read_ahead<C>(
        &self,
        l: &mut Lane<C>,
        mtt: &Lru<HashIndex>,
        at: TimePs,
        fetch: &mut Vec<TransFetch>,
    ) {
        let end = self.window_end(l);
        let mut idx = l.head_read_to.max(l.head_next_page);
        // The read being built: its first page's key, its last line, its lines.
        let mut run: Option<(u64, u64, u32)> = None;
        let flush = |run: &mut Option<(u64, u64, u32)>, fetch: &mut Vec<TransFetch>| {
            if let Some((key, _, lines)) = run.take() {
                fetch.push(TransFetch {
                    lane: self.lane,
                    read: TransRead {
                        mpt: false,
                        key,
                        lines,
                    },
                    at,
                });
            }
        };
        while idx < end {
            let page = self.first_page + idx;
            let line_page = page - page % MTT_LINE_ENTRIES;
            // The job's index after this line.
            let stop = (line_page + MTT_LINE_ENTRIES - self.first_page).min(self.pages);
            let id = mtt_key(self.job_key, line_page);
            let wanted =
                (idx..stop).any(|i| !mtt.contains(mtt_key(self.job_key, self.first_page + i)));
            if wanted && l.lines_in_flight.insert(id) {
                match &mut run {
                    Some((_, last, lines))
                        if u64::from(*lines) < self.lines_per_read
                            && *last + MTT_LINE_ENTRIES == id =>
                    {
                        *last = id;
                        *lines += 1;
                    }
                    _ => {
                        flush(&mut run, fetch);
                        run = Some((mtt_key(self.job_key, page), id, 1));
                    }
                }
            } else {
                flush(&mut run, fetch);
            }
            idx = stop;
        }
        flush(&mut run, fetch);
        l.head_read_to = idx;
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

    /// A unit of 4 MPT and `mtt_entries` MTT entries, 4 KiB pages, 1 ns lookups, 512 B reads.
    fn unit(mtt_entries: u32) -> Translation<u32> {
        Translation::new(TranslationParams {
            mpt_entries: 4,
            mtt_entries,
            page_bytes: 4096,
            mpt_ps: 1000,
            mtt_ps: 1000,
            mpt_entry_bytes: 64,
            mtt_entry_bytes: 8,
            max_read_bytes: 512,
        })
    }

    #[test]
    fn an_mtt_line_fills_only_the_entries_of_its_own_region() {
        let mut t = unit(64);
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

    /// A cache smaller than a line keeps the page the read was for: the fill's other
    /// entries go in first and the read's own page last, so the next lookup of that page
    /// hits (before, the line's later pages evicted it and every lookup of a reused page
    /// missed with an MTT cache under 8 entries).
    #[test]
    fn a_fill_larger_than_the_cache_keeps_the_page_it_was_for() {
        for entries in [1, 2, 7] {
            let mut t = unit(entries);
            t.prefetch_insert(false, mtt_key(7, 2));
            assert!(t.contains(false, mtt_key(7, 2)), "{entries} entries");
            assert_eq!(t.mtt.len(), entries as usize);
        }
    }

    #[test]
    fn multi_page_job_looks_up_every_page_and_misses_block() {
        let mut t = unit(64);
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
                read: TransRead {
                    mpt: true,
                    key: 7,
                    lines: 1
                },
                at: 1000
            }]
        );
        assert!(done.is_empty());
        let r = fetch[0].read;
        fetch.clear();
        t.on_fill(TransLane::Tx, r, 10_000, &mut done, &mut fetch);
        assert_eq!(
            fetch,
            vec![TransFetch {
                lane: TransLane::Tx,
                read: TransRead::mtt_line(mtt_key(7, 0)),
                at: 11_000
            }],
            "one MTT line for pages 0..8"
        );
        let r = fetch[0].read;
        fetch.clear();
        let other_region = TransRead::mtt_line(mtt_key(9, 0));
        t.on_fill(TransLane::Tx, other_region, 40_000, &mut done, &mut fetch);
        assert!(
            done.is_empty(),
            "a fill of another line does not unblock the lane"
        );
        t.on_fill(TransLane::Tx, r, 50_000, &mut done, &mut fetch);
        assert!(fetch.is_empty());
        assert_eq!(done, vec![(1, 52_000), (2, 52_000)]);
        assert_eq!(
            (t.stats.jobs, t.stats.pass_throughs),
            (2, 1),
            "a translation and a pass-through"
        );
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
        let r = fetch[0].read;
        fetch.clear();
        t.on_fill(TransLane::Tx, r, 60_000, &mut done, &mut fetch);
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
        let mut t = unit(64);
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
        let mpt_7 = TransRead {
            mpt: true,
            key: 7,
            lines: 1,
        };
        t.on_fill(TransLane::Rx, mpt_7, 2_000, &mut done, &mut fetch);
        assert!(done.is_empty() && fetch.is_empty());
        assert_eq!(t.queued(TransLane::Tx), 1);
    }

    /// A job of `pages` pages of region 7 from page `first_page`.
    fn job(cont: u32, first_page: u64, pages: u64, at: TimePs) -> TransJob<u32> {
        TransJob {
            key: 7,
            va: first_page * 4096,
            len: pages * 4096,
            needs: true,
            cont,
            at,
        }
    }

    /// The lines of `read`, by [`line_id`].
    fn lines_of(read: TransRead) -> impl Iterator<Item = u64> {
        (0..u64::from(read.lines)).map(move |i| line_id(read.key) + i * MTT_LINE_ENTRIES)
    }

    /// Pumps the transmit lane and fills its reads until none is in flight, 100 ns apart:
    /// `pick` chooses which of the reads in flight arrives next, `before_fill` may disturb
    /// the caches first. Checks that no line is read while it is already being read and
    /// that the lane makes progress. Returns every read issued.
    fn drive(
        t: &mut Translation<u32>,
        done: &mut Vec<(u32, TimePs)>,
        pick: impl Fn(usize) -> usize,
        mut before_fill: impl FnMut(&mut Translation<u32>),
    ) -> Vec<TransRead> {
        let mut fetch = Vec::new();
        t.pump(done, &mut fetch);
        let (mut in_flight, mut lines, mut all) = (Vec::new(), FxHashSet::default(), Vec::new());
        let mut now = 0;
        loop {
            for f in fetch.drain(..) {
                assert_eq!(f.lane, TransLane::Tx);
                for id in lines_of(f.read) {
                    assert!(lines.insert(id), "line {id:#x} read while in flight");
                }
                in_flight.push(f.read);
                all.push(f.read);
            }
            if in_flight.is_empty() {
                return all;
            }
            assert!(all.len() < 10_000, "the lane does not finish");
            let r = in_flight.remove(pick(in_flight.len()));
            for id in lines_of(r) {
                lines.remove(&id);
            }
            before_fill(t);
            now += 100_000;
            t.on_fill(TransLane::Tx, r, now, done, &mut fetch);
        }
    }

    #[test]
    fn a_long_job_reads_its_missing_lines_at_once_in_mrrs_sized_reads() {
        // 1,024 entries: the 256-page job fits the read-ahead window (512 pages).
        let mut t = unit(1024);
        t.prefetch_insert(true, 7);
        let (mut done, mut fetch) = (Vec::new(), Vec::new());
        t.submit(TransLane::Tx, job(1, 0, 256, 0));
        t.pump(&mut done, &mut fetch);
        // 32 lines, 8 per 512 B read: 4 reads leave together, after the MPT and page 0.
        let reads: Vec<TransRead> = fetch.iter().map(|f| f.read).collect();
        let want = [0, 64, 128, 192].map(|p| TransRead {
            mpt: false,
            key: mtt_key(7, p),
            lines: 8,
        });
        assert_eq!(reads, want);
        assert!(fetch.iter().all(|f| f.at == 2_000));
        assert_eq!(t.read_bytes(reads[0]), 512);
        fetch.clear();
        // Out of order: the last and the second arrive first; the lane waits for page 0.
        t.on_fill(TransLane::Tx, reads[3], 10_000, &mut done, &mut fetch);
        t.on_fill(TransLane::Tx, reads[1], 15_000, &mut done, &mut fetch);
        assert!(done.is_empty() && fetch.is_empty());
        // Pages 0..128 are translated; page 128 waits for its read, not read again.
        t.on_fill(TransLane::Tx, reads[0], 20_000, &mut done, &mut fetch);
        assert!(done.is_empty());
        assert!(fetch.is_empty(), "no read of a line already being read");
        t.on_fill(TransLane::Tx, reads[2], 200_000, &mut done, &mut fetch);
        // Page 128 was looked up at 20 + 128 ns; 127 more pages after 200 ns.
        assert_eq!(done, vec![(1, 327_000)]);
        assert!(fetch.is_empty());
        assert_eq!((t.stats.mtt.misses, t.stats.mtt.hits), (2, 254));
        assert_eq!(t.stats.blocked_ps, (20_000 - 2_000) + (200_000 - 148_000));
    }

    #[test]
    fn a_multi_line_read_fills_only_its_regions_entries() {
        let mut t = unit(64);
        t.prefetch_insert(true, 11);
        t.note_region(11, 5 * 4096, 16 * 4096);
        let (mut done, mut fetch) = (Vec::new(), Vec::new());
        t.submit(
            TransLane::Tx,
            TransJob {
                key: 11,
                ..job(1, 5, 16, 0)
            },
        );
        t.pump(&mut done, &mut fetch);
        let read = TransRead {
            mpt: false,
            key: mtt_key(11, 5),
            lines: 3,
        };
        assert_eq!(fetch.iter().map(|f| f.read).collect::<Vec<_>>(), [read]);
        fetch.clear();
        t.on_fill(TransLane::Tx, read, 10_000, &mut done, &mut fetch);
        assert_eq!(done.len(), 1);
        let held: Vec<u64> = (0..24)
            .filter(|&p| t.contains(false, mtt_key(11, p)))
            .collect();
        assert_eq!(held, (5..=20).collect::<Vec<_>>());
    }

    #[test]
    fn a_job_longer_than_the_cache_reads_each_line_once_through_its_window() {
        // The default 256-entry cache and an 8 MB message in 4 KiB pages: 2,048 pages.
        let mut t = unit(256);
        assert_eq!(t.read_ahead_pages(), 128);
        t.prefetch_insert(true, 7);
        let mut done = Vec::new();
        t.submit(TransLane::Tx, job(1, 0, 2048, 0));
        let reads = drive(&mut t, &mut done, |_| 0, |_| {});
        assert_eq!(done.len(), 1);
        // The first pump reads the window (two full reads), later ones a read at a time.
        assert_eq!(
            reads[0],
            TransRead {
                mpt: false,
                key: mtt_key(7, 0),
                lines: 8
            }
        );
        assert_eq!(reads[1].key, mtt_key(7, 64));
        let lines: u64 = reads.iter().map(|r| u64::from(r.lines)).sum();
        assert_eq!(
            lines, 256,
            "no line read twice: the window keeps them cached"
        );
        assert!(reads.iter().all(|r| r.lines == 8));
        assert_eq!(t.stats.mtt.hits + t.stats.mtt.misses, 2048);
        assert!(t.stats.mtt.evictions > 0);
    }

    #[test]
    fn lines_evicted_between_fill_and_use_are_read_again() {
        // 32 entries: a window of 2 lines, topped up a line at a time.
        let mut t = unit(32);
        t.prefetch_insert(true, 7);
        let mut done = Vec::new();
        t.submit(TransLane::Tx, job(1, 0, 64, 0));
        // The latest read arrives first, after another region's 32 entries flushed the
        // cache: the lines read ahead are gone when the lane gets to them.
        let mut other = 0;
        let reads = drive(
            &mut t,
            &mut done,
            |n| n - 1,
            |t| {
                for _ in 0..4 {
                    t.prefetch_insert(false, mtt_key(9, other));
                    other += MTT_LINE_ENTRIES;
                }
            },
        );
        assert_eq!(done.len(), 1, "the job finishes once");
        let lines: u64 = reads.iter().map(|r| u64::from(r.lines)).sum();
        assert!(lines > 8, "evicted lines were read again: {lines} lines");
        assert_eq!(t.stats.mtt.hits + t.stats.mtt.misses, 64);
        assert_eq!(t.queued(TransLane::Tx), 0);
    }

    #[test]
    fn a_cache_smaller_than_a_line_still_finishes() {
        let mut t = unit(4);
        t.prefetch_insert(true, 7);
        let mut done = Vec::new();
        t.submit(TransLane::Tx, job(1, 3, 40, 0));
        t.submit(TransLane::Tx, job(2, 3, 40, 0));
        let reads = drive(&mut t, &mut done, |_| 0, |_| {});
        assert_eq!(done.iter().map(|d| d.0).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(t.stats.mtt.hits + t.stats.mtt.misses, 80);
        // Each read carries the lane at least one page further.
        assert!(reads.len() <= 80);
    }
}
