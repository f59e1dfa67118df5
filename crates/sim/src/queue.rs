//! Event queues: a fast timing wheel ([`EventQueue`]) and the plain binary
//! heap it is checked against ([`HeapQueue`]).
//!
//! Both order events by `(time_ps, insertion sequence)`: the earliest time
//! first, and among equal times the one pushed first. That tie-break is what
//! makes a run reproducible: two events scheduled for the same picosecond
//! always run in the order they were scheduled, whatever the queue's internal
//! layout.
//!
//! Why a wheel: the simulator keeps from a few thousand to a million events
//! pending, with most delays between zero and a few microseconds and a thin
//! tail of far timeouts. A binary heap's cost grows with the pending count and
//! its cache misses (about 1 M events/s at 1 M pending on the reference
//! machine); the timing wheel makes push O(1) and pop amortised O(1) while
//! keeping the exact order, and runs 20–40 M events/s there.

use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::fmt;

/// One pending event with its ordering key.
struct Entry<E> {
    time: u64,
    seq: u64,
    ev: E,
}

impl<E> Entry<E> {
    #[inline]
    fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }
}

/// Heap adapter: `BinaryHeap` is a max-heap, so the order is reversed to put
/// the smallest `(time, seq)` on top. The payload never takes part in the
/// comparison (it need not be `Ord`, and keys are unique anyway).
struct MinEntry<E>(Entry<E>);

impl<E> PartialEq for MinEntry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl<E> Eq for MinEntry<E> {}

impl<E> PartialOrd for MinEntry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for MinEntry<E> {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.key().cmp(&self.0.key())
    }
}

/// An event inside the wheel. It carries no sequence number: the wheel keeps
/// every bucket in insertion order and sorts with a stable sort (see "Why
/// this shape" on [`EventQueue`]), which saves 8 bytes of memory traffic per
/// event.
struct Slot<E> {
    time: u64,
    ev: E,
}

impl<E> From<Entry<E>> for Slot<E> {
    #[inline]
    fn from(e: Entry<E>) -> Self {
        Slot {
            time: e.time,
            ev: e.ev,
        }
    }
}

/// The operations the simulator needs from a pending-event set; implemented by
/// [`EventQueue`] and [`HeapQueue`] so tests and benchmarks can run both.
///
/// Both types also have these as inherent methods, so the trait only needs to
/// be imported for generic code.
pub trait TimeQueue<E> {
    /// Schedules `ev` at `time_ps`. A time before [`now`](Self::now) is a logic
    /// error: it trips a `debug_assert!` and, in release builds, is clamped to
    /// `now` and counted in [`clamped_pushes`](Self::clamped_pushes).
    fn push(&mut self, time_ps: u64, ev: E);
    /// Removes the earliest event (FIFO among equal times) and advances `now`.
    fn pop(&mut self) -> Option<(u64, E)>;
    /// Time of the earliest pending event.
    fn peek_time(&self) -> Option<u64>;
    /// Number of pending events.
    fn len(&self) -> usize;
    /// True when nothing is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Time of the last popped event (0 before the first pop).
    fn now(&self) -> u64;
    /// How many pushes were in the past and had to be clamped to `now`.
    fn clamped_pushes(&self) -> u64;
}

/// Common handling of a push before `now`: see [`TimeQueue::push`].
#[inline]
fn clamp_to_now(time_ps: u64, now: u64, clamped: &mut u64) -> u64 {
    if time_ps >= now {
        return time_ps;
    }
    debug_assert!(
        time_ps >= now,
        "event pushed at {time_ps} ps, before the current time {now} ps"
    );
    *clamped += 1;
    now
}

// ---------------------------------------------------------------------------
// Reference implementation
// ---------------------------------------------------------------------------

/// The simple reference queue: one `BinaryHeap` keyed by `(time, seq)`.
///
/// Correct by construction and fine for small pending sets; [`EventQueue`] is
/// property-tested to pop exactly the same sequence.
pub struct HeapQueue<E> {
    heap: BinaryHeap<MinEntry<E>>,
    seq: u64,
    now: u64,
    clamped: u64,
}

impl<E> HeapQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            clamped: 0,
        }
    }

    /// See [`TimeQueue::push`].
    pub fn push(&mut self, time_ps: u64, ev: E) {
        let time = clamp_to_now(time_ps, self.now, &mut self.clamped);
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(MinEntry(Entry { time, seq, ev }));
    }

    /// See [`TimeQueue::pop`].
    pub fn pop(&mut self) -> Option<(u64, E)> {
        let MinEntry(e) = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.ev))
    }

    /// Pops the earliest event only if it is due at or before `limit_ps`.
    pub fn pop_at_or_before(&mut self, limit_ps: u64) -> Option<(u64, E)> {
        if self.peek_time()? > limit_ps {
            return None;
        }
        self.pop()
    }

    /// See [`TimeQueue::peek_time`].
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|m| m.0.time)
    }

    /// See [`TimeQueue::len`].
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// See [`TimeQueue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// See [`TimeQueue::now`].
    pub fn now(&self) -> u64 {
        self.now
    }

    /// See [`TimeQueue::clamped_pushes`].
    pub fn clamped_pushes(&self) -> u64 {
        self.clamped
    }
}

impl<E> Default for HeapQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> fmt::Debug for HeapQueue<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeapQueue")
            .field("len", &self.len())
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl<E> TimeQueue<E> for HeapQueue<E> {
    fn push(&mut self, time_ps: u64, ev: E) {
        HeapQueue::push(self, time_ps, ev)
    }
    fn pop(&mut self) -> Option<(u64, E)> {
        HeapQueue::pop(self)
    }
    fn peek_time(&self) -> Option<u64> {
        HeapQueue::peek_time(self)
    }
    fn len(&self) -> usize {
        HeapQueue::len(self)
    }
    fn now(&self) -> u64 {
        self.now
    }
    fn clamped_pushes(&self) -> u64 {
        self.clamped
    }
}

// ---------------------------------------------------------------------------
// Occupancy bitmap
// ---------------------------------------------------------------------------

/// A two-level bitmap: one bit per bucket plus one summary bit per 64-bit
/// word, so finding the next occupied bucket costs a few word scans however
/// sparse the wheel is (at most `bits / 4096` summary words).
struct Bitmap {
    words: Vec<u64>,
    summary: Vec<u64>,
}

impl Bitmap {
    /// `bits` must be a multiple of 64.
    fn new(bits: usize) -> Self {
        let words = bits / 64;
        Self {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
        }
    }

    #[inline]
    fn set(&mut self, i: usize) {
        let w = i >> 6;
        self.words[w] |= 1 << (i & 63);
        self.summary[w >> 6] |= 1 << (w & 63);
    }

    #[inline]
    fn clear(&mut self, i: usize) {
        let w = i >> 6;
        self.words[w] &= !(1 << (i & 63));
        if self.words[w] == 0 {
            self.summary[w >> 6] &= !(1 << (w & 63));
        }
    }

    /// First set bit at index `>= i`, without wrapping around.
    fn next_from(&self, i: usize) -> Option<usize> {
        let w = i >> 6;
        let bits = *self.words.get(w)? & (!0u64 << (i & 63));
        if bits != 0 {
            return Some((w << 6) | bits.trailing_zeros() as usize);
        }
        let next_w = w + 1;
        let mut sw = next_w >> 6;
        let mut sbits = *self.summary.get(sw)? & (!0u64 << (next_w & 63));
        loop {
            if sbits != 0 {
                let word = (sw << 6) | sbits.trailing_zeros() as usize;
                return Some((word << 6) | self.words[word].trailing_zeros() as usize);
            }
            sw += 1;
            sbits = *self.summary.get(sw)?;
        }
    }

    /// First set bit at or after `i`, wrapping around to the start.
    fn next_circular(&self, i: usize) -> Option<usize> {
        self.next_from(i).or_else(|| self.next_from(0))
    }
}

// ---------------------------------------------------------------------------
// Timing wheel
// ---------------------------------------------------------------------------

/// Shape of an [`EventQueue`]'s two-level wheel (all sizes powers of two).
///
/// The order of popped events never depends on the geometry, only the speed.
/// Rules of thumb: the window ([`window_ps`](Self::window_ps)) should cover
/// the common delays (farther events wait in a binary heap); a coarse bucket
/// should hold at most some thousands of events at the expected pending count,
/// and a fine bucket tens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Fine bucket width: `2^fine_width_log2` ps.
    pub fine_width_log2: u32,
    /// Fine buckets per coarse bucket: `2^fine_buckets_log2`.
    pub fine_buckets_log2: u32,
    /// Coarse buckets in the wheel: `2^coarse_buckets_log2`.
    pub coarse_buckets_log2: u32,
}

impl Geometry {
    /// The default: 128 ps fine buckets (8 per 1 GHz cycle), 512 of them
    /// per 65.5 ns coarse bucket, and 4096 coarse buckets for a 268 µs
    /// window, which covers PCIe round trips, data-centre links and tens of
    /// kilometres of fibre before the heap is needed.
    ///
    /// Chosen with `examples/hold.rs` over 1 K / 64 K / 1 M pending and four
    /// delay mixes: fine widths from 32 to 256 ps were within noise of each
    /// other overall (geometric means 31–33 M events/s). Narrower buckets
    /// help uniform delays at 1 M pending (less sorting: 26 vs 22 M/s at
    /// 64 ps vs 256 ps); fewer fine buckets help many-equal-times mixes (fine
    /// `Vec`s keep their capacity, so more of them spread the same events
    /// over more memory: 32 vs 47 M/s at 64 K pending); 128 ps sits between.
    /// A window of 2^12 coarse buckets keeps the bucket array (230 KB) in L2.
    pub const DEFAULT: Geometry = Geometry {
        fine_width_log2: 7,
        fine_buckets_log2: 9,
        coarse_buckets_log2: 12,
    };

    /// Width of a fine bucket in ps.
    pub fn fine_width_ps(&self) -> u64 {
        1 << self.fine_width_log2
    }

    /// Width of a coarse bucket in ps.
    pub fn coarse_width_ps(&self) -> u64 {
        1 << self.coarse_shift()
    }

    /// Span of the wheel in ps: events further ahead than this wait in the
    /// overflow heap.
    pub fn window_ps(&self) -> u64 {
        self.coarse_width_ps() << self.coarse_buckets_log2
    }

    fn coarse_shift(&self) -> u32 {
        self.fine_width_log2 + self.fine_buckets_log2
    }

    /// True if the sizes are supported: bucket counts 2^6..=2^20 each, a
    /// coarse bucket at most 2^48 ps (about 281 s) wide.
    pub fn is_valid(&self) -> bool {
        (6..=20).contains(&self.fine_buckets_log2)
            && (6..=20).contains(&self.coarse_buckets_log2)
            && self.coarse_shift() <= 48
    }
}

impl Default for Geometry {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Target size of a coarse-bucket chunk. Large enough that linking chunks
/// costs little per event, small enough that recycled chunks are reused while
/// still in cache (see [`EventQueue`]).
const CHUNK_BYTES: usize = 2048;
/// Upper bound on entries per chunk (for small events, so a chunk stays a
/// few KB).
const MAX_CHUNK_LEN: usize = 256;

/// A coarse bucket: a chain of fixed-size chunks, appended at `filling`.
struct CoarseBucket<E> {
    /// The chunk being appended to (capacity 0 until the first push).
    filling: Vec<Slot<E>>,
    /// Chunks already full, in push order.
    full: Vec<Vec<Slot<E>>>,
    /// Earliest time in the bucket (`u64::MAX` when empty), so
    /// [`EventQueue::peek_time`] is O(1) between coarse buckets.
    min: u64,
}

impl<E> Default for CoarseBucket<E> {
    fn default() -> Self {
        Self {
            filling: Vec::new(),
            full: Vec::new(),
            min: u64::MAX,
        }
    }
}

/// A fast, deterministic priority queue of timed events: a two-level timing
/// wheel with occupancy bitmaps, plus a binary heap for events beyond the
/// wheel's window.
///
/// # Order
/// Events pop in exact `(time_ps, insertion sequence)` order, identical to
/// [`HeapQueue`] (property-tested in `tests/queue_props.rs`).
///
/// # Cost
/// Push is O(1) inside the window ([`Geometry::window_ps`], 268 µs by
/// default) and O(log n) beyond it; pop is amortised O(1) plus the sort of
/// each fine bucket (O(log k) per event for k events per bucket); peek is
/// O(1). Measured numbers are in `bench/benches/event_queue.rs`.
///
/// # How
/// Time is cut into *coarse* buckets (65.5 ns by default), each cut into
/// *fine* buckets (128 ps). The coarse bucket that holds [`now`](Self::now)
/// is the *current* one: its events live in the fine wheel. Later events are
/// binned by coarse bucket, and events beyond the window wait in the overflow
/// heap.
///
/// * **Push** appends to a fine bucket if the event falls in the current
///   coarse bucket, else to its coarse bucket (hashed by the low bits of the
///   bucket number), else to the overflow heap.
/// * **Pop** takes from the *open* fine bucket: the earliest occupied one,
///   sorted when it became the earliest (descending, so it pops from the end
///   of its `Vec`). Pushes into the open bucket (zero and tiny delays) go to
///   a small `near` heap; each pop takes the earlier of the two heads, and
///   when the bucket drains, `near` becomes its next sorted run (already
///   sorted for same-time bursts, so a burst costs O(1) per event, not
///   O(log k)).
/// * When the fine wheel drains, the next occupied coarse bucket (found with
///   a two-level bitmap) becomes current and is distributed into the fine
///   wheel: one radix-sort digit. The window moves with it, and overflow
///   events that now fall inside it move to their coarse buckets, before
///   anything can be pushed there directly.
///
/// # Why this shape (measured with `examples/hold.rs`, 1 M pending)
/// * Two levels, not one: pushes land on few coarse buckets (about 150 for
///   delays up to 10 µs), so the `Vec` tails being written stay in L1. A
///   one-level wheel fine enough to keep buckets small has tens of thousands
///   of tails, misses the cache on every push, and ran at 7–13 M/s.
/// * Coarse buckets are chains of 2 KB chunks recycled last-in first-out: a
///   chunk freed by distribution is refilled by the next pushes while it is
///   still cached. Recycling whole bucket `Vec`s instead (refilled slowly
///   over a full window) made every push a cache miss: 10–12 M/s.
/// * Distribution first reads the cold bucket computing fine indices, then
///   moves the events: a read-only loop keeps many cache misses in flight,
///   where one read-and-scatter loop stalled on each (about 1.3x slower).
/// * Wheel slots carry no sequence number (32 instead of 40 bytes for a
///   24-byte event; the rate at 1 M pending follows the bytes per event,
///   16-byte slots ran 1.5x faster than 40-byte ones): each bucket is kept
///   in insertion order and sorted stably. The few paths that could reorder
///   (overflow refill, `near`, closing an open bucket) restore insertion
///   order; the property tests cover each.
/// * Small fine buckets (up to 24 events) are sorted by a plain insertion
///   sort: the library's stable sort took a third of the time at 1 M
///   pending with ~25 events per bucket.
/// * No allocation per event once warmed up: `Vec`s and heaps keep their
///   capacity, and retained memory follows the peak pending count (see
///   [`shrink_to_fit`](Self::shrink_to_fit)).
pub struct EventQueue<E> {
    geometry: Geometry,
    /// `geometry.coarse_shift()`: coarse bucket number = time >> this.
    coarse_shift: u32,
    fine_mask: usize,
    coarse_mask: usize,

    /// Fine buckets of the current coarse bucket (indexed by fine number
    /// within it, no wrap-around).
    fine: Vec<Vec<Slot<E>>>,
    fine_bits: Bitmap,
    /// Events in the fine wheel, `near` included.
    fine_len: usize,
    /// Index of the open fine bucket; meaningful only while `fine_len > 0`.
    fine_open: usize,
    /// Events pushed into the open fine bucket after it was sorted.
    near: BinaryHeap<MinEntry<E>>,

    /// Coarse bucket number of `now`: the current coarse bucket and the start
    /// of the window. Its own slot in `coarse` is always empty.
    cur: u64,
    /// Later coarse buckets, hashed by `number & coarse_mask`, unsorted.
    coarse: Vec<CoarseBucket<E>>,
    coarse_bits: Bitmap,
    /// Events in coarse buckets.
    coarse_len: usize,
    /// Empty chunks (capacity `chunk_len`), most recently freed last.
    pool: Vec<Vec<Slot<E>>>,
    /// Entries per coarse-bucket chunk (about [`CHUNK_BYTES`]).
    chunk_len: usize,
    /// Fine indices of the coarse bucket being distributed (reused).
    scratch: Vec<u32>,

    /// Events at coarse numbers `>= cur + coarse buckets`.
    overflow: BinaryHeap<MinEntry<E>>,

    seq: u64,
    now: u64,
    clamped: u64,
}

impl<E> EventQueue<E> {
    /// An empty queue with [`Geometry::DEFAULT`].
    pub fn new() -> Self {
        Self::with_geometry(Geometry::DEFAULT)
    }

    /// An empty queue with the given geometry.
    ///
    /// # Panics
    /// If `!geometry.is_valid()` (a programming error, caught at
    /// construction).
    pub fn with_geometry(geometry: Geometry) -> Self {
        assert!(geometry.is_valid(), "unsupported {geometry:?}");
        let n_fine = 1usize << geometry.fine_buckets_log2;
        let n_coarse = 1usize << geometry.coarse_buckets_log2;
        let mut fine = Vec::with_capacity(n_fine);
        fine.resize_with(n_fine, Vec::new);
        let mut coarse = Vec::with_capacity(n_coarse);
        coarse.resize_with(n_coarse, CoarseBucket::default);
        Self {
            geometry,
            coarse_shift: geometry.coarse_shift(),
            fine_mask: n_fine - 1,
            coarse_mask: n_coarse - 1,
            fine,
            fine_bits: Bitmap::new(n_fine),
            fine_len: 0,
            fine_open: 0,
            near: BinaryHeap::new(),
            cur: 0,
            coarse,
            coarse_bits: Bitmap::new(n_coarse),
            coarse_len: 0,
            pool: Vec::new(),
            chunk_len: (CHUNK_BYTES / std::mem::size_of::<Slot<E>>().max(1))
                .clamp(8, MAX_CHUNK_LEN),
            scratch: Vec::new(),
            overflow: BinaryHeap::new(),
            seq: 0,
            now: 0,
            clamped: 0,
        }
    }

    /// The geometry this queue was built with.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// Events currently waiting in the overflow heap (beyond the window);
    /// useful to check that a geometry suits a workload.
    pub fn overflow_len(&self) -> usize {
        self.overflow.len()
    }

    /// See [`TimeQueue::push`]. O(1) inside the window, O(log n) beyond.
    ///
    /// Inlined into the callers with only its common cases: an event for a later coarse
    /// bucket whose chunk has room (`Self::coarse_append` without a new chunk), or for a
    /// fine bucket of the current coarse bucket after the open one, with room. Every other
    /// push goes to `Self::push_slow`; as one function, the callee-saved registers its
    /// rare paths need were saved and restored on every push (a tenth of its cost).
    #[inline]
    pub fn push(&mut self, time_ps: u64, ev: E) {
        if time_ps >= self.now {
            let c = time_ps >> self.coarse_shift;
            let ahead = c.wrapping_sub(self.cur);
            if ahead == 0 {
                // The current coarse bucket (most pushes, with coarse buckets wider than the
                // common delays): a fine bucket after the open one, with room, is appended
                // to as `fine_insert` would.
                let i = ((time_ps >> self.geometry.fine_width_log2) as usize) & self.fine_mask;
                if self.fine_len > 0 && i > self.fine_open {
                    let b = &mut self.fine[i];
                    if b.len() < b.capacity() {
                        self.seq += 1;
                        b.push(Slot { time: time_ps, ev });
                        self.fine_bits.set(i);
                        self.fine_len += 1;
                        return;
                    }
                }
            } else if ahead <= self.coarse_mask as u64 {
                let b = &mut self.coarse[(c as usize) & self.coarse_mask];
                if b.filling.len() < b.filling.capacity() {
                    // The sequence number counts every push, as on the slow path; the wheel
                    // keeps the order by position (see `Slot`).
                    self.seq += 1;
                    b.min = b.min.min(time_ps);
                    b.filling.push(Slot { time: time_ps, ev });
                    self.coarse_len += 1;
                    return;
                }
            }
        }
        self.push_slow(time_ps, ev);
    }

    /// [`Self::push`] for every case but its two common ones.
    #[inline(never)]
    fn push_slow(&mut self, time_ps: u64, ev: E) {
        let time = clamp_to_now(time_ps, self.now, &mut self.clamped);
        let seq = self.seq;
        self.seq += 1;
        let e = Entry { time, seq, ev };
        let c = time >> self.coarse_shift;
        // `c >= cur` because `time >= now` and `cur` is `now`'s coarse bucket.
        let ahead = c.wrapping_sub(self.cur);
        if ahead == 0 {
            self.fine_insert(e);
        } else if ahead <= self.coarse_mask as u64 {
            self.coarse_append(c, e.into());
        } else {
            self.overflow.push(MinEntry(e));
        }
    }

    /// See [`TimeQueue::pop`]. Amortised O(1) for events inside the window.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.pop_at_or_before(u64::MAX)
    }

    /// Pops the earliest event only if it is due at or before `limit_ps`.
    ///
    /// The event loop's one call per event: while the fine wheel holds events, the head is
    /// found once, checked against the limit and taken, instead of a `peek_time` call
    /// followed by a `pop` that finds it again.
    #[inline]
    pub fn pop_at_or_before(&mut self, limit_ps: u64) -> Option<(u64, E)> {
        if self.fine_len == 0 {
            // The next event waits in a coarse bucket or the overflow heap.
            if self.peek_time()? > limit_ps {
                return None;
            }
            self.load_next_coarse()?;
        }
        let open = self.fine_open;
        if self.fine[open].is_empty() {
            self.refill_open_from_near();
        }
        // The open bucket is looked up (and bounds-checked) once from here.
        let Self {
            fine,
            near,
            fine_len,
            fine_bits,
            ..
        } = self;
        let bucket = &mut fine[open];
        // Everything in `near` was pushed after the open bucket was sorted,
        // so on equal times the bucket's event is older and goes first.
        let slot_time = bucket.last().map(|e| e.time);
        let near_time = near.peek().map(|m| m.0.time);
        let (time, take_near) = match (slot_time, near_time) {
            (Some(a), Some(b)) if b < a => (b, true),
            (Some(a), _) => (a, false),
            (None, Some(b)) => (b, true),
            // `fine_len > 0` guarantees the open bucket or `near` is non-empty.
            (None, None) => return None,
        };
        if time > limit_ps {
            return None;
        }
        let e = if take_near {
            Slot::from(near.pop()?.0)
        } else {
            bucket.pop()?
        };
        *fine_len -= 1;
        if bucket.is_empty() && near.is_empty() {
            fine_bits.clear(open);
            if *fine_len > 0 {
                if let Some(next) = fine_bits.next_from(open + 1) {
                    self.open_fine(next);
                }
            }
        }
        self.now = e.time;
        Some((e.time, e.ev))
    }

    /// See [`TimeQueue::peek_time`]. O(1).
    pub fn peek_time(&self) -> Option<u64> {
        if self.fine_len > 0 {
            let slot = self.fine[self.fine_open].last().map(|e| e.time);
            let near = self.near.peek().map(|m| m.0.time);
            return match (slot, near) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if self.coarse_len > 0 {
            let start = (self.cur as usize + 1) & self.coarse_mask;
            let i = self.coarse_bits.next_circular(start)?;
            return Some(self.coarse[i].min);
        }
        self.overflow.peek().map(|m| m.0.time)
    }

    /// See [`TimeQueue::len`].
    pub fn len(&self) -> usize {
        self.fine_len + self.coarse_len + self.overflow.len()
    }

    /// See [`TimeQueue::is_empty`].
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// See [`TimeQueue::now`].
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Whether an event pushed now for `at_ps` would be the very next one popped: it is due
    /// now and nothing else is queued for now (among equal times the queue pops in push
    /// order, so one queued earlier for now would come first). A step in that place may run
    /// right after the current event instead of being an event, in the same order exactly.
    #[inline]
    pub fn pops_next_if_pushed_at(&self, at_ps: u64) -> bool {
        at_ps == self.now && self.peek_time() != Some(at_ps)
    }

    /// See [`TimeQueue::clamped_pushes`].
    pub fn clamped_pushes(&self) -> u64 {
        self.clamped
    }

    /// Gives back memory kept for reuse (recycled bucket `Vec`s, capacity of
    /// empty buckets and heaps), e.g. after a burst far above the steady
    /// state. Pending events are untouched.
    pub fn shrink_to_fit(&mut self) {
        self.pool = Vec::new();
        self.scratch = Vec::new();
        for b in &mut self.fine {
            b.shrink_to_fit();
        }
        for b in &mut self.coarse {
            b.full.shrink_to_fit();
        }
        self.near.shrink_to_fit();
        self.overflow.shrink_to_fit();
    }

    /// Drops the events beyond the wheel's window (those waiting in the
    /// overflow heap) for which `keep` is false, and gives their memory back;
    /// returns how many were dropped. For far timers the caller knows would
    /// do nothing when popped (a connection manager's response timers once
    /// every connection is up: a million of them hold tens of MB for
    /// seconds of simulated time). The rest pop in the same order as before:
    /// keys `(time, seq)` are unique, so the heap's order does not depend on
    /// its layout. Events inside the window are left alone.
    pub fn retain_far(&mut self, mut keep: impl FnMut(&E) -> bool) -> usize {
        let before = self.overflow.len();
        self.overflow.retain(|e| keep(&e.0.ev));
        self.overflow.shrink_to_fit();
        before - self.overflow.len()
    }

    /// Inserts into the fine wheel (the event is in the current coarse
    /// bucket).
    #[inline]
    fn fine_insert(&mut self, e: Entry<E>) {
        let i = ((e.time >> self.geometry.fine_width_log2) as usize) & self.fine_mask;
        if self.fine_len == 0 {
            // Every fine bucket is empty: this one opens, and a one-element
            // bucket is sorted.
            self.fine_open = i;
            self.fine_append(i, e.into());
        } else if i == self.fine_open {
            self.near.push(MinEntry(e));
            self.fine_len += 1;
        } else if i < self.fine_open {
            // Between `now` and the open bucket, so this bucket is empty (the
            // open bucket is the earliest occupied one). It becomes the open
            // bucket and the old one is closed.
            self.close_open();
            self.fine_open = i;
            self.fine_append(i, e.into());
        } else {
            self.fine_append(i, e.into());
        }
    }

    /// Moves `near` into the drained open bucket as a sorted run.
    ///
    /// Without this, a long same-time burst (every handler scheduling at
    /// `now`) would turn the queue into one big binary heap. Such pushes come
    /// in increasing `(time, seq)` order, which leaves the heap's array
    /// already sorted: then this is a linear check and copy, and the burst
    /// costs O(1) per event.
    fn refill_open_from_near(&mut self) {
        if self.near.is_empty() {
            return;
        }
        let mut run = std::mem::take(&mut self.near).into_vec();
        if !run.windows(2).all(|w| w[0].0.key() <= w[1].0.key()) {
            run.sort_unstable_by_key(|m| m.0.key());
        }
        self.fine[self.fine_open].extend(run.drain(..).rev().map(|m| Slot::from(m.0)));
        // Keep the heap's allocation.
        self.near = BinaryHeap::from(run);
    }

    /// Returns the open bucket to insertion order, ready to be re-sorted when
    /// it is next opened: its sorted remainder reversed (ascending `(time,
    /// seq)`), then `near` in ascending order (all younger than the
    /// remainder). Rare: only when a push lands before the open bucket.
    fn close_open(&mut self) {
        let bucket = &mut self.fine[self.fine_open];
        bucket.reverse();
        let near = std::mem::take(&mut self.near).into_sorted_vec();
        // `MinEntry` orders in reverse, so its "ascending" vector is latest
        // first.
        bucket.extend(near.into_iter().rev().map(|m| Slot::from(m.0)));
    }

    #[inline]
    fn fine_append(&mut self, i: usize, e: Slot<E>) {
        self.fine[i].push(e);
        self.fine_bits.set(i);
        self.fine_len += 1;
    }

    /// Makes fine bucket `i` the open one: orders it by descending time
    /// and, among equal times, by descending insertion order, so that popping
    /// from the end yields `(time, seq)` order.
    #[inline]
    fn open_fine(&mut self, i: usize) {
        self.fine_open = i;
        // Most fine buckets hold one event (128 ps each): nothing to sort, no call.
        if self.fine[i].len() > 1 {
            sort_for_popping(&mut self.fine[i]);
        }
    }

    /// Appends to coarse bucket number `c` (ahead of `cur`, inside the window).
    /// Always inlined into `push` (most pushes land here): the call cost a third of it.
    #[inline(always)]
    fn coarse_append(&mut self, c: u64, e: Slot<E>) {
        let i = (c as usize) & self.coarse_mask;
        if self.coarse[i].filling.len() == self.coarse[i].filling.capacity() {
            self.coarse_start_chunk(i);
        }
        let b = &mut self.coarse[i];
        b.min = b.min.min(e.time);
        b.filling.push(e);
        self.coarse_len += 1;
    }

    /// Coarse bucket `i`'s chunk is full (or it never had one): starts a chunk, preferably
    /// the one freed most recently, whose memory is still in cache.
    #[inline(never)]
    fn coarse_start_chunk(&mut self, i: usize) {
        let b = &mut self.coarse[i];
        if b.filling.is_empty() && b.full.is_empty() {
            self.coarse_bits.set(i);
        }
        let chunk_len = self.chunk_len;
        let fresh = self
            .pool
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(chunk_len));
        let full = std::mem::replace(&mut b.filling, fresh);
        if full.capacity() > 0 {
            b.full.push(full);
        }
    }

    /// Makes the next occupied coarse bucket (or, if the wheel is empty, the
    /// earliest overflow event's) current: moves the window, pulls in the
    /// overflow events that now fit, and distributes the bucket into the fine
    /// wheel. Requires an empty fine wheel; `None` if nothing is pending.
    fn load_next_coarse(&mut self) -> Option<()> {
        let c = if self.coarse_len > 0 {
            let cur_i = self.cur as usize & self.coarse_mask;
            let i = self
                .coarse_bits
                .next_circular((cur_i + 1) & self.coarse_mask)?;
            // Occupied buckets all lie within one window after `cur`, so the
            // circular distance gives the bucket number.
            self.cur + (i.wrapping_sub(cur_i) & self.coarse_mask) as u64
        } else {
            self.overflow.peek()?.0.time >> self.coarse_shift
        };
        self.cur = c;

        // Refill from overflow. Migrated events are later than every event
        // already in the wheel, and none of their buckets could have been
        // pushed to directly yet, so plain appends keep the order.
        let (shift, span) = (self.coarse_shift, self.coarse_mask as u64);
        loop {
            let e = match self.overflow.peek_mut() {
                Some(top) if (top.0.time >> shift).saturating_sub(c) <= span => PeekMut::pop(top).0,
                _ => break,
            };
            self.coarse_append(e.time >> shift, e.into());
        }

        // Distribute bucket `c` into the (empty) fine wheel, recycling each
        // chunk as soon as it is emptied.
        let ci = c as usize & self.coarse_mask;
        self.coarse_bits.clear(ci);
        let fine_shift = self.geometry.fine_width_log2;
        let Self {
            coarse,
            fine,
            fine_bits,
            fine_mask,
            pool,
            scratch,
            ..
        } = self;
        let b = &mut coarse[ci];
        b.min = u64::MAX;
        // Two passes: first only read the times and compute fine indices
        // (the chunks are usually cold, and a read-only loop keeps many cache
        // misses in flight), then move the slots while their lines are cached.
        // Measured: about 1.3x faster overall at 1 M pending than a single
        // read-and-scatter loop, which stalls on each miss.
        scratch.clear();
        for chunk in b.full.iter().chain(std::iter::once(&b.filling)) {
            scratch.extend(
                chunk
                    .iter()
                    .map(|e| (((e.time >> fine_shift) as usize) & *fine_mask) as u32),
            );
        }
        let filling = std::mem::take(&mut b.filling);
        let mut idx = scratch.iter();
        for mut chunk in b.full.drain(..).chain(std::iter::once(filling)) {
            // The chunk goes first: `zip` then never pulls an index it cannot use.
            for (e, &i) in chunk.drain(..).zip(idx.by_ref()) {
                let i = i as usize;
                fine[i].push(e);
                fine_bits.set(i);
            }
            if chunk.capacity() > 0 {
                pool.push(chunk);
            }
        }
        let moved = scratch.len();
        self.coarse_len -= moved;
        self.fine_len += moved;
        let first = self.fine_bits.next_from(0)?;
        self.open_fine(first);
        Some(())
    }
}

/// Buckets up to this size are sorted by insertion sort (measured: the
/// standard stable sort's setup dominates below a few dozen elements).
const INSERTION_SORT_MAX: usize = 24;

/// Sorts a bucket held in insertion order into popping order: descending
/// time, and among equal times the most recently inserted first.
fn sort_for_popping<E>(v: &mut [Slot<E>]) {
    if v.len() <= INSERTION_SORT_MAX {
        // Element `i` is younger than all before it, so among equal times it
        // goes in front of them: skip left over every time <= its own.
        for i in 1..v.len() {
            let t = v[i].time;
            let mut j = i;
            while j > 0 && v[j - 1].time <= t {
                v.swap(j - 1, j);
                j -= 1;
            }
        }
    } else {
        // Reversing makes "most recent first" the original order among equal
        // times, which the stable sort then keeps.
        v.reverse();
        v.sort_by_key(|s| std::cmp::Reverse(s.time));
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> fmt::Debug for EventQueue<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventQueue")
            .field("len", &self.len())
            .field("now", &self.now)
            .field("geometry", &self.geometry)
            .field("overflow_len", &self.overflow_len())
            .finish_non_exhaustive()
    }
}

impl<E> TimeQueue<E> for EventQueue<E> {
    fn push(&mut self, time_ps: u64, ev: E) {
        EventQueue::push(self, time_ps, ev)
    }
    fn pop(&mut self) -> Option<(u64, E)> {
        EventQueue::pop(self)
    }
    fn peek_time(&self) -> Option<u64> {
        EventQueue::peek_time(self)
    }
    fn len(&self) -> usize {
        EventQueue::len(self)
    }
    fn now(&self) -> u64 {
        self.now
    }
    fn clamped_pushes(&self) -> u64 {
        self.clamped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geo(fine_width_log2: u32, fine_buckets_log2: u32, coarse_buckets_log2: u32) -> Geometry {
        Geometry {
            fine_width_log2,
            fine_buckets_log2,
            coarse_buckets_log2,
        }
    }

    fn drain<Q: TimeQueue<u32>>(q: &mut Q) -> Vec<(u64, u32)> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn equal_times_pop_in_push_order() {
        let mut q = EventQueue::new();
        for (i, t) in [5u64, 3, 5, 3, 1_000_000_000_000, 5, 0]
            .into_iter()
            .enumerate()
        {
            q.push(t, i as u32);
        }
        assert_eq!(
            drain(&mut q),
            [
                (0, 6),
                (3, 1),
                (3, 3),
                (5, 0),
                (5, 2),
                (5, 5),
                (1_000_000_000_000, 4)
            ]
        );
        assert!(q.is_empty());
        assert_eq!(q.now(), 1_000_000_000_000);
    }

    /// An event pushed for now is popped next only when nothing else is queued for now.
    #[test]
    fn an_event_for_now_pops_next_only_alone() {
        let mut q = EventQueue::new();
        q.push(5, 0u32);
        q.push(5, 1);
        q.push(9, 2);
        assert_eq!(q.pop(), Some((5, 0)));
        assert!(
            !q.pops_next_if_pushed_at(5),
            "event 1 is queued for 5 already"
        );
        assert!(!q.pops_next_if_pushed_at(9), "not due now");
        assert_eq!(q.pop(), Some((5, 1)));
        assert!(q.pops_next_if_pushed_at(5));
        assert!(!q.pops_next_if_pushed_at(9));
    }

    #[test]
    fn zero_delay_bursts_stay_fifo() {
        // A handler that schedules many events "now" while events of the
        // same time are still pending: they must run after them, in order.
        let mut q = EventQueue::new();
        q.push(100, 0u32);
        q.push(100, 1);
        q.push(150, 2);
        assert_eq!(q.pop(), Some((100, 0)));
        for i in 10..1010 {
            q.push(100, i);
        }
        assert_eq!(q.peek_time(), Some(100));
        let got = drain(&mut q);
        assert_eq!(got[0], (100, 1));
        assert!(got[1..1001]
            .iter()
            .zip(10..)
            .all(|(&(t, e), i)| t == 100 && e == i));
        assert_eq!(got[1001], (150, 2));
    }

    #[test]
    fn long_same_time_hold_stays_fifo() {
        // Every pop schedules a follow-up at the same time: exercises the
        // `near` -> sorted-run refill many times over.
        let mut q = EventQueue::new();
        let mut h = HeapQueue::new();
        for i in 0..5_000u32 {
            q.push(7_000, i);
            h.push(7_000, i);
        }
        for i in 5_000..50_000u32 {
            let (a, b) = (q.pop(), h.pop());
            assert_eq!(a, b);
            let t = a.map_or(0, |(t, _)| t);
            q.push(t, i);
            h.push(t, i);
        }
        assert_eq!(drain(&mut q), drain(&mut h));
    }

    #[test]
    fn equal_times_stay_fifo_across_chunks_and_overflow() {
        // More same-time events than a chunk holds, some arriving through the
        // overflow heap, then more pushed directly into the same bucket.
        let g = geo(4, 6, 6); // window 2^16 ps
        let mut q = EventQueue::with_geometry(g);
        let far = 200_000;
        for i in 0..300u32 {
            q.push(far + u64::from(i % 3), i);
        }
        assert_eq!(q.overflow_len(), 300);
        q.push(far - 100_000, 1_000); // lets the window move close to `far`
        assert_eq!(q.pop(), Some((far - 100_000, 1_000)));
        for i in 300..600u32 {
            q.push(far + u64::from(i % 3), i);
        }
        let got = drain(&mut q);
        let mut want: Vec<(u64, u32)> = (0..600).map(|i| (far + u64::from(i % 3), i)).collect();
        want.sort(); // by time, then by id = insertion order
        assert_eq!(got, want);
    }

    #[test]
    fn closing_an_open_bucket_keeps_fifo() {
        fn both(q: &mut EventQueue<u32>, h: &mut HeapQueue<u32>, t: u64, i: u32) {
            q.push(t, i);
            h.push(t, i);
        }
        let (q, h) = (
            &mut EventQueue::with_geometry(geo(4, 6, 6)),
            &mut HeapQueue::new(),
        );
        // Fine buckets are 16 ps wide. The first push opens [160, 176); the
        // next three go to its `near` heap, with equal times.
        both(q, h, 170, 0);
        both(q, h, 165, 1);
        both(q, h, 170, 2);
        both(q, h, 165, 3);
        // An earlier push closes [160, 176), folding `near` back in.
        both(q, h, 100, 4);
        assert_eq!(q.pop(), h.pop());
        // [160, 176) is open again (sorted); fill its `near` and close it
        // once more, then append to it while closed.
        both(q, h, 165, 5);
        both(q, h, 170, 6);
        both(q, h, 120, 7);
        both(q, h, 170, 8);
        assert_eq!(drain(q), drain(h));
    }

    /// Total slots the wheel keeps allocated (buckets, chunks, pool).
    fn retained_slots<E>(q: &EventQueue<E>) -> usize {
        let fine: usize = q.fine.iter().map(Vec::capacity).sum();
        let coarse: usize = q
            .coarse
            .iter()
            .map(|b| b.filling.capacity() + b.full.iter().map(Vec::capacity).sum::<usize>())
            .sum();
        let pool: usize = q.pool.iter().map(Vec::capacity).sum();
        fine + coarse + pool + q.near.capacity() + q.overflow.capacity()
    }

    #[test]
    fn steady_state_does_not_grow_memory() {
        let mut q = EventQueue::new();
        let mut r = crate::Rng::new(3);
        for i in 0..20_000u32 {
            q.push(r.gen_below(10_000_000), i);
        }
        let mut step = |q: &mut EventQueue<u32>, n: usize| {
            for i in 0..n {
                let (t, _) = q.pop().unwrap_or_default();
                q.push(t + r.gen_below(10_000_000), i as u32);
            }
        };
        step(&mut q, 400_000);
        let warm = retained_slots(&q);
        step(&mut q, 1_000_000);
        let later = retained_slots(&q);
        // Bucket sizes fluctuate, so a few buckets may still grow a little;
        // the point is that memory does not grow with the number of events.
        assert!(later <= warm + warm / 20, "{warm} -> {later}");
        assert_eq!(q.len(), 20_000);
        q.shrink_to_fit();
        assert!(retained_slots(&q) < later);
    }

    #[test]
    fn push_before_the_open_bucket() {
        let mut q = EventQueue::with_geometry(geo(4, 6, 6));
        q.push(1_000, 0u32);
        q.push(1_000, 1);
        q.push(1_005, 2); // into `near` of the open bucket
        assert_eq!(q.pop(), Some((1_000, 0)));
        q.push(1_003, 3); // same bucket as 1_000 (width 16)
        q.push(1_000, 4);
        assert_eq!(q.pop(), Some((1_000, 1)));
        assert_eq!(q.pop(), Some((1_000, 4)));
        q.push(1_600, 5); // later bucket
        assert_eq!(drain(&mut q), [(1_003, 3), (1_005, 2), (1_600, 5)]);
        // Now open a late bucket and then push into an earlier, empty one.
        q.push(5_000, 6);
        q.push(5_001, 7);
        assert_eq!(q.peek_time(), Some(5_000));
        q.push(2_000, 8);
        assert_eq!(q.peek_time(), Some(2_000));
        assert_eq!(drain(&mut q), [(2_000, 8), (5_000, 6), (5_001, 7)]);
    }

    #[test]
    fn far_events_wait_in_overflow_and_come_back_in_order() {
        let mut q = EventQueue::with_geometry(geo(0, 6, 6)); // a 4096 ps window
        for i in 0..50u32 {
            q.push(10_000 - u64::from(i % 5), i);
        }
        assert_eq!(q.overflow_len(), 50);
        q.push(3, 99);
        assert_eq!(q.pop(), Some((3, 99)));
        let got = drain(&mut q);
        let mut want: Vec<(u64, u32)> = (0..50).map(|i| (10_000 - u64::from(i % 5), i)).collect();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn times_near_the_end_of_u64() {
        let mut q = EventQueue::new();
        let mut h = HeapQueue::new();
        for (i, t) in [u64::MAX, u64::MAX - 1, 0, u64::MAX, 1 << 63]
            .into_iter()
            .enumerate()
        {
            q.push(t, i as u32);
            h.push(t, i as u32);
        }
        assert_eq!(drain(&mut q), drain(&mut h));
        q.push(u64::MAX, 9);
        assert_eq!(q.pop(), Some((u64::MAX, 9)));
    }

    #[test]
    fn pop_at_or_before_respects_the_limit() {
        let mut q = EventQueue::new();
        q.push(10, 1u32);
        q.push(20, 2);
        assert_eq!(q.pop_at_or_before(9), None);
        assert_eq!(q.pop_at_or_before(10), Some((10, 1)));
        assert_eq!(q.pop_at_or_before(19), None);
        assert_eq!(q.now(), 10);
        assert_eq!(q.pop_at_or_before(u64::MAX), Some((20, 2)));
        assert_eq!(q.pop_at_or_before(u64::MAX), None);
    }

    #[test]
    fn sparse_wheel_scans_find_the_next_bucket() {
        // One event per far-apart bucket exercises the summary bitmap.
        let mut q = EventQueue::with_geometry(geo(0, 6, 10));
        let times = [65_000u64, 7, 4_096, 64, 63, 30_000, 65_535];
        for (i, &t) in times.iter().enumerate() {
            q.push(t, i as u32);
        }
        let mut sorted = times.to_vec();
        sorted.sort();
        let got: Vec<u64> = drain(&mut q).into_iter().map(|(t, _)| t).collect();
        assert_eq!(got, sorted);
    }

    #[test]
    #[cfg_attr(debug_assertions, should_panic(expected = "before the current time"))]
    fn past_pushes_are_clamped_in_release() {
        for late in [
            &mut EventQueue::new() as &mut dyn TimeQueue<u32>,
            &mut HeapQueue::new(),
        ] {
            late.push(100, 0);
            assert_eq!(late.pop(), Some((100, 0)));
            late.push(50, 1); // debug: panics here
            assert_eq!(late.clamped_pushes(), 1);
            assert_eq!(late.pop(), Some((100, 1)));
        }
    }

    #[test]
    fn debug_output_is_short() {
        let q: EventQueue<u8> = EventQueue::new();
        let s = format!("{q:?}");
        assert!(s.contains("len: 0") && s.len() < 200, "{s}");
        let h: HeapQueue<u8> = HeapQueue::default();
        assert!(format!("{h:?}").contains("HeapQueue"));
    }
}
