//! The simulated host: sparse, byte-addressed memory holding real bytes.
//!
//! [`SparseMemory`] backs the whole 64-bit address space with 4 KiB pages allocated on first
//! write, so a test can register a multi-gigabyte region at any address and pay only for the
//! bytes it touches. Bytes never written read as zero, or, inside a range given a
//! [`Backing`], as that backing's bytes (a buffer whose content is a function of its address,
//! generated on read instead of stored).
//!
//! Why pages start as lines: at many QPs a node's buffers are touched sparsely (a client of a
//! 10-client run writes one 64-byte slot in every ten), so a page first stores only the
//! 64-byte lines written into it and becomes a whole 4 KiB page once half of it is written
//! (see [`LINES_PER_FULL_PAGE`]). Reads and writes see the same bytes either way.

#![forbid(unsafe_code)]

pub mod interned;

use rnic_transport::Memory;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

/// Calls `f(line, range in the line, range in the caller's buffer)` for each 64-byte line
/// piece of the `len` bytes at offset `off` of a page (as [`SparseMemory::for_each_piece`]
/// does for the pages of an address range).
fn for_each_line(
    off: usize,
    len: usize,
    mut f: impl FnMut(usize, core::ops::Range<usize>, core::ops::Range<usize>),
) {
    let mut done = 0usize;
    while done < len {
        let at = off + done;
        let (line, in_line) = (at / LINE_BYTES, at % LINE_BYTES);
        let n = (LINE_BYTES - in_line).min(len - done);
        f(line, in_line..in_line + n, done..done + n);
        done += n;
    }
}

/// Page size of [`SparseMemory`].
pub const PAGE_BYTES: usize = 4096;
const PAGE_SHIFT: u32 = 12;
const PAGE_MASK: u64 = PAGE_BYTES as u64 - 1;
/// Bytes of one line of a page that is stored line by line.
pub const LINE_BYTES: usize = 64;
const LINES_PER_PAGE: usize = PAGE_BYTES / LINE_BYTES;
/// A page holding this many written lines becomes a whole page: past half of it, a whole
/// page is smaller than the lines and their index, and cheaper to read.
pub const LINES_PER_FULL_PAGE: usize = LINES_PER_PAGE / 2;

/// The content of never-written bytes in an address range (see [`SparseMemory::back`]).
pub trait Backing: core::fmt::Debug + Send + Sync {
    /// Fills `out` with the bytes at `addr ..` (all inside the backed range).
    fn fill(&self, addr: u64, out: &mut [u8]);
}

/// One backed address range `[start, end)`.
#[derive(Debug, Clone)]
struct Backed {
    start: u64,
    end: u64,
    source: Arc<dyn Backing>,
}

/// [`SparseMemory::fill_unwritten`] over the backed ranges `backed` (sorted by start, none
/// overlapping), so that a writer holding a page mutably can still fill a fresh line.
fn fill_unwritten(backed: &[Backed], addr: u64, out: &mut [u8]) {
    let end = addr.saturating_add(out.len() as u64);
    // The ranges that can hold a byte of the read: from the last one starting at or before
    // `addr` (found by halving, not by a scan: a node of a fabric run backs a range per
    // flow it takes part in) to the last one starting before `end`.
    let first = backed
        .partition_point(|b| b.start <= addr)
        .saturating_sub(1);
    let near = &backed[first..];
    // The common case, a read inside one backed buffer: the backing writes every byte.
    if let Some(b) = near.first().filter(|b| b.start <= addr && end <= b.end) {
        b.source.fill(addr, out);
        return;
    }
    out.fill(0);
    for b in near.iter().take_while(|b| b.start < end) {
        let (lo, hi) = (addr.max(b.start), end.min(b.end));
        if lo < hi {
            let at = (lo - addr) as usize;
            b.source.fill(lo, &mut out[at..at + (hi - lo) as usize]);
        }
    }
}

/// One stored page: the 64-byte lines written so far (in address order, `present` bit i
/// for line i), or the whole page.
#[derive(Debug, Clone)]
enum Page {
    /// Boxed, as every variant, so that the page map's entries stay 24 bytes (the map is
    /// probed on every access; at many QPs it is larger than the caches).
    Lines(Box<Lines>),
    Full(Box<[u8; PAGE_BYTES]>),
    /// In the interned range (see [`interned`]).
    Interned(interned::LinePage),
}

impl Page {
    /// Bytes of its storage (lines count 64 bytes each, spare capacity included).
    fn resident_bytes(&self) -> u64 {
        match self {
            Page::Lines(l) => (l.lines.capacity() * LINE_BYTES) as u64,
            Page::Full(_) => PAGE_BYTES as u64,
            Page::Interned(_) => {
                (PAGE_BYTES / LINE_BYTES * core::mem::size_of::<interned::Line>()) as u64
            }
        }
    }
}

/// The address range whose pages are stored as interned lines, and their shared tails.
#[derive(Debug, Clone, Default)]
struct InternedRange {
    start: u64,
    end: u64,
    tails: interned::Tails,
}

/// The lines of a page written so far, in address order (`present` bit i for line i).
#[derive(Debug, Clone)]
struct Lines {
    present: u64,
    lines: Vec<[u8; LINE_BYTES]>,
}

impl Lines {
    /// Position of line `line` in `lines`, if written.
    fn rank(&self, line: usize) -> Option<usize> {
        let bit = 1u64 << line;
        (self.present & bit != 0).then(|| (self.present & (bit - 1)).count_ones() as usize)
    }

    /// Stores line `line`, not written before, as `bytes`; returns its position. Room grows
    /// by exactly one line while the page holds one (most pages of sparsely touched buffers
    /// never hold more), then by half as many again, so that a page filled line by line (a
    /// CQ ring) is not copied once per line on its way to a whole page; at most a third of a
    /// page's line storage is spare.
    fn insert(&mut self, line: usize, bytes: [u8; LINE_BYTES]) -> usize {
        let bit = 1u64 << line;
        let rank = (self.present & (bit - 1)).count_ones() as usize;
        self.present |= bit;
        let len = self.lines.len();
        if len == self.lines.capacity() {
            self.lines.reserve_exact((len / 2).max(1));
        }
        self.lines.insert(rank, bytes);
        rank
    }

    /// Reads `out.len()` bytes at offset `off` of the page at `base`; lines not written
    /// read as the unwritten bytes of `backed`.
    fn read(&self, backed: &[Backed], base: u64, off: usize, out: &mut [u8]) {
        for_each_line(off, out.len(), |line, in_line, r| {
            let dst = &mut out[r];
            match self.rank(line) {
                Some(rank) => dst.copy_from_slice(&self.lines[rank][in_line]),
                None => {
                    let at = line * LINE_BYTES + in_line.start;
                    fill_unwritten(backed, base | at as u64, dst);
                }
            }
        });
    }
}

/// Sparse host memory: pages in a hash map, allocated on first write.
#[derive(Debug, Default, Clone)]
pub struct SparseMemory {
    pages: FxHashMap<u64, Page>,
    /// The backed ranges, sorted by start, none overlapping.
    backed: Vec<Backed>,
    interned: Option<InternedRange>,
    /// Page numbers `[start, end)` stored whole from their first write (see
    /// [`SparseMemory::whole_pages`]); empty by default.
    whole: (u64, u64),
}

impl SparseMemory {
    pub fn new() -> SparseMemory {
        SparseMemory::default()
    }

    /// Never-written bytes of `[start, end)` read as `source`'s (instead of zero). Ranges
    /// must not overlap; set them before writing into them. An empty range backs nothing.
    pub fn back(&mut self, start: u64, end: u64, source: Arc<dyn Backing>) {
        if start >= end {
            return;
        }
        let at = self.backed.partition_point(|b| b.start < start);
        // Sorted and apart before: only the neighbours can overlap the new range.
        debug_assert!(at == 0 || self.backed[at - 1].end <= start);
        debug_assert!(self.backed.get(at).is_none_or(|b| end <= b.start));
        self.backed.insert(at, Backed { start, end, source });
    }

    /// Never-written bytes of `[start, end)` read as zero again: the backed ranges inside it
    /// are dropped, and one partly inside keeps its part outside (reading as before). Bytes
    /// stored already keep what they read as: a write stores its whole 64-byte line (or
    /// page), the backing's bytes around the written ones included; [`SparseMemory::release`]
    /// forgets them. Returns how many ranges were dropped or cut.
    pub fn unback(&mut self, start: u64, end: u64) -> usize {
        // Sorted by start and apart, the ranges are sorted by end too.
        let first = self.backed.partition_point(|b| b.end <= start);
        let last = self.backed.partition_point(|b| b.start < end);
        if start >= end || first >= last {
            return 0;
        }
        let (head, tail) = (&self.backed[first], &self.backed[last - 1]);
        let head = (head.start < start).then(|| Backed {
            end: start,
            ..head.clone()
        });
        let tail = (tail.end > end).then(|| Backed {
            start: end,
            ..tail.clone()
        });
        self.backed
            .splice(first..last, head.into_iter().chain(tail));
        last - first
    }

    /// Backed ranges (see [`SparseMemory::back`]).
    pub fn backed_ranges(&self) -> usize {
        self.backed.len()
    }

    /// Pages of `[start, end)` (whole pages: `start` and `end` are rounded out to pages) are
    /// stored as interned lines (see [`interned`]): for ranges holding records that repeat
    /// their last 48 bytes, such as send queue rings. One range per memory; it must not be
    /// backed (its unwritten bytes read as zero). Set it before writing into it.
    pub fn intern_lines(&mut self, start: u64, end: u64) {
        debug_assert!(self.backed.iter().all(|b| end <= b.start || start >= b.end));
        self.interned = Some(InternedRange {
            start: start & !PAGE_MASK,
            end: end.div_ceil(PAGE_BYTES as u64) * PAGE_BYTES as u64,
            tails: interned::Tails::default(),
        });
    }

    /// Pages of `[start, end)` (rounded out to whole pages) are stored whole from their first
    /// write instead of line by line: for ranges written from start to end, such as CQ
    /// rings, whose every page is filled (a page kept as lines until half full cost a copy
    /// of its lines at each growth and at the change to a whole page: twice the
    /// instructions of a write to a whole page). One range per memory; it must not be
    /// backed (its unwritten bytes read as zero).
    pub fn whole_pages(&mut self, start: u64, end: u64) {
        debug_assert!(self.backed.iter().all(|b| end <= b.start || start >= b.end));
        self.whole = (start >> PAGE_SHIFT, end.div_ceil(PAGE_BYTES as u64));
    }

    /// The page is in the interned range.
    fn is_interned(&self, page: u64) -> bool {
        self.interned
            .as_ref()
            .is_some_and(|r| (r.start >> PAGE_SHIFT..r.end >> PAGE_SHIFT).contains(&page))
    }

    /// Distinct tails of the interned range's lines.
    pub fn interned_tails(&self) -> usize {
        self.interned.as_ref().map_or(0, |r| r.tails.len())
    }

    /// Pages allocated so far (whole or line by line).
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Bytes of page storage allocated (lines count 64 bytes each, spare capacity included).
    pub fn resident_bytes(&self) -> u64 {
        self.pages.values().map(Page::resident_bytes).sum()
    }

    /// Forgets what was written into the whole pages inside `[start, end)` (a page only
    /// partly inside keeps its bytes) and frees their storage: they read again as unwritten
    /// bytes (zero, or their backing's). Returns the bytes of storage freed (as
    /// [`SparseMemory::resident_bytes`] counts them).
    pub fn release(&mut self, start: u64, end: u64) -> u64 {
        let first = start.div_ceil(PAGE_BYTES as u64);
        let last = end >> PAGE_SHIFT;
        if first >= last {
            return 0;
        }
        let mut freed = 0u64;
        if last - first <= self.pages.len() as u64 {
            for page in first..last {
                if let Some(p) = self.pages.remove(&page) {
                    freed += p.resident_bytes();
                }
            }
        } else {
            // A range of more pages than are stored: one pass over the stored ones.
            self.pages.retain(|&page, p| {
                let inside = (first..last).contains(&page);
                if inside {
                    freed += p.resident_bytes();
                }
                !inside
            });
        }
        freed
    }

    /// The bytes `[addr, addr + out.len())` hold when never written: zero, or the backing's.
    fn fill_unwritten(&self, addr: u64, out: &mut [u8]) {
        fill_unwritten(&self.backed, addr, out);
    }

    /// Reads `out.len()` bytes at offset `off` of page `page` (not crossing its end).
    fn read_in_page(&self, page: u64, off: usize, out: &mut [u8]) {
        let base = page << PAGE_SHIFT;
        match self.pages.get(&page) {
            Some(Page::Full(p)) => out.copy_from_slice(&p[off..off + out.len()]),
            None => self.fill_unwritten(base | off as u64, out),
            Some(Page::Interned(lines)) => {
                let tails = &self.interned.as_ref().expect("an interned page").tails;
                let mut line = [0u8; LINE_BYTES];
                for_each_line(off, out.len(), |l, in_line, r| {
                    tails.read(&lines[l], &mut line);
                    out[r].copy_from_slice(&line[in_line]);
                });
            }
            Some(Page::Lines(lp)) => lp.read(&self.backed, base, off, out),
        }
    }

    /// Writes `data` at offset `off` of page `page` (not crossing its end), with one lookup
    /// of the page map (it is probed on every access and, at many QPs, larger than the
    /// caches).
    fn write_in_page(&mut self, page: u64, off: usize, data: &[u8]) {
        if self.is_interned(page) {
            self.write_interned(page, off, data);
            return;
        }
        let base = page << PAGE_SHIFT;
        let whole = self.whole;
        let SparseMemory { pages, backed, .. } = self;
        let stored = match pages.entry(page) {
            Entry::Occupied(o) => o.into_mut(),
            Entry::Vacant(v) if data.len() == PAGE_BYTES => {
                let mut p = Box::new([0u8; PAGE_BYTES]);
                p.copy_from_slice(data);
                v.insert(Page::Full(p));
                return;
            }
            Entry::Vacant(v) if (whole.0..whole.1).contains(&page) => {
                let mut p = Box::new([0u8; PAGE_BYTES]);
                p[off..off + data.len()].copy_from_slice(data);
                v.insert(Page::Full(p));
                return;
            }
            Entry::Vacant(v) => v.insert(Page::Lines(Box::new(Lines {
                present: 0,
                lines: Vec::new(),
            }))),
        };
        let lp = match stored {
            Page::Full(p) => {
                p[off..off + data.len()].copy_from_slice(data);
                return;
            }
            Page::Lines(lp) => lp,
            Page::Interned(_) => unreachable!("interned pages are outside the interned range"),
        };
        let first_line = off / LINE_BYTES;
        let last_line = (off + data.len() - 1) / LINE_BYTES;
        let missing = (first_line..=last_line)
            .filter(|&l| lp.rank(l).is_none())
            .count();
        if lp.lines.len() + missing >= LINES_PER_FULL_PAGE {
            // Past half a page of lines a whole page is smaller: the lines and the unwritten
            // bytes around them become one.
            let mut full = Box::new([0u8; PAGE_BYTES]);
            lp.read(backed, base, 0, &mut full[..]);
            full[off..off + data.len()].copy_from_slice(data);
            *stored = Page::Full(full);
            return;
        }
        for_each_line(off, data.len(), |line, in_line, r| {
            let rank = lp.rank(line).unwrap_or_else(|| {
                // A line not written yet starts as the unwritten bytes (zero or the
                // backing's) where `data` does not cover it.
                let mut fresh = [0u8; LINE_BYTES];
                if in_line.len() < LINE_BYTES {
                    fill_unwritten(backed, base | (line * LINE_BYTES) as u64, &mut fresh);
                }
                lp.insert(line, fresh)
            });
            lp.lines[rank][in_line].copy_from_slice(&data[r]);
        });
    }

    /// [`SparseMemory::write_in_page`] for a page of the interned range.
    fn write_interned(&mut self, page: u64, off: usize, data: &[u8]) {
        let lines = match self
            .pages
            .entry(page)
            .or_insert_with(|| Page::Interned(interned::zero_page()))
        {
            Page::Interned(l) => l,
            _ => unreachable!("pages of the interned range are interned"),
        };
        let tails = &mut self.interned.as_mut().expect("an interned range").tails;
        let mut line = [0u8; LINE_BYTES];
        for_each_line(off, data.len(), |l, in_line, r| {
            if in_line.len() < LINE_BYTES {
                tails.read(&lines[l], &mut line);
            }
            line[in_line].copy_from_slice(&data[r]);
            let hint = lines[l.saturating_sub(1)];
            tails.write(&mut lines[l], &line, (l > 0).then_some(&hint));
        });
    }

    /// Calls `f(page number, offset in page, range in the caller's buffer)` for each page
    /// piece of `[addr, addr + len)`. The range wraps at the end of the address space, as a
    /// 64-bit address would.
    fn for_each_piece(
        addr: u64,
        len: usize,
        mut f: impl FnMut(u64, usize, core::ops::Range<usize>),
    ) {
        let mut done = 0usize;
        while done < len {
            let a = addr.wrapping_add(done as u64);
            let page = a >> PAGE_SHIFT;
            let off = (a & PAGE_MASK) as usize;
            let take = (PAGE_BYTES - off).min(len - done);
            f(page, off, done..done + take);
            done += take;
        }
    }

    /// Writes `len` bytes of the deterministic pattern of `seed` at `addr` (see
    /// [`pattern_byte`]); a test can later check them with [`SparseMemory::matches_pattern`].
    pub fn fill_pattern(&mut self, addr: u64, len: u64, seed: u64) {
        let mut chunk = [0u8; PAGE_BYTES];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(PAGE_BYTES as u64) as usize;
            for (i, b) in chunk[..n].iter_mut().enumerate() {
                *b = pattern_byte(seed, done + i as u64);
            }
            self.write(addr.wrapping_add(done), &chunk[..n]);
            done += n as u64;
        }
    }

    /// The bytes at `addr` are the pattern of `seed` (offset 0 at `addr`).
    pub fn matches_pattern(&self, addr: u64, len: u64, seed: u64) -> bool {
        self.first_pattern_mismatch(addr, len, seed).is_none()
    }

    /// Offset of the first byte that differs from the pattern of `seed`, if any.
    pub fn first_pattern_mismatch(&self, addr: u64, len: u64, seed: u64) -> Option<u64> {
        let mut chunk = [0u8; PAGE_BYTES];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(PAGE_BYTES as u64) as usize;
            self.read(addr.wrapping_add(done), &mut chunk[..n]);
            if let Some(i) = (0..n).find(|&i| chunk[i] != pattern_byte(seed, done + i as u64)) {
                return Some(done + i as u64);
            }
            done += n as u64;
        }
        None
    }

    /// Offset of the first of the `expected.len()` bytes at `addr` that differs from
    /// `expected`, if any. A stored whole page is compared where it lies, without a copy
    /// (checking a received buffer against its source read most of a fabric run's copies);
    /// other pages are read first, into a page-sized buffer made only for them (zeroing one
    /// per call was 4 KiB of stores a check of whole pages never used).
    pub fn first_difference_from(&self, addr: u64, expected: &[u8]) -> Option<usize> {
        let mut found = None;
        Self::for_each_piece(addr, expected.len(), |page, off, r| {
            if found.is_some() {
                return;
            }
            let want = &expected[r.clone()];
            let unequal = match self.pages.get(&page) {
                Some(Page::Full(p)) => first_unequal(&p[off..off + want.len()], want),
                _ => {
                    let mut piece = [0u8; PAGE_BYTES];
                    let got = &mut piece[..want.len()];
                    self.read_in_page(page, off, got);
                    first_unequal(got, want)
                }
            };
            found = unequal.map(|i| r.start + i);
        });
        found
    }

    /// FNV-1a 64 of the `len` bytes at `addr`: a cheap fingerprint to compare regions.
    pub fn checksum(&self, addr: u64, len: u64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut chunk = [0u8; PAGE_BYTES];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(PAGE_BYTES as u64) as usize;
            self.read(addr.wrapping_add(done), &mut chunk[..n]);
            for &b in &chunk[..n] {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
            done += n as u64;
        }
        h
    }

    /// Reads `len` bytes into a new vector (test convenience).
    pub fn read_vec(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v);
        v
    }
}

/// Index of the first byte where `a` and `b` (of one length) differ: a memcmp first, the
/// byte search only on a difference.
fn first_unequal(a: &[u8], b: &[u8]) -> Option<usize> {
    if a == b {
        return None;
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// Byte `offset` of the test pattern of `seed`: a mix of both, so that shifted or swapped
/// data, or data from another seed, does not match.
pub fn pattern_byte(seed: u64, offset: u64) -> u8 {
    let mut x = seed ^ offset.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 32;
    x as u8
}

impl Memory for SparseMemory {
    /// An access inside one page (every WQE, CQE and payload of a message up to the page
    /// size that does not cross a page boundary) goes to its page directly, without the
    /// piece loop of `SparseMemory::for_each_piece`.
    fn read(&self, addr: u64, out: &mut [u8]) {
        let off = (addr & PAGE_MASK) as usize;
        if !out.is_empty() && out.len() <= PAGE_BYTES - off {
            self.read_in_page(addr >> PAGE_SHIFT, off, out);
            return;
        }
        SparseMemory::for_each_piece(addr, out.len(), |page, off, r| {
            self.read_in_page(page, off, &mut out[r]);
        });
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        let off = (addr & PAGE_MASK) as usize;
        if !data.is_empty() && data.len() <= PAGE_BYTES - off {
            self.write_in_page(addr >> PAGE_SHIFT, off, data);
            return;
        }
        SparseMemory::for_each_piece(addr, data.len(), |page, off, r| {
            self.write_in_page(page, off, &data[r]);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn unwritten_reads_zero_and_pages_are_lazy() {
        let mut m = SparseMemory::new();
        assert_eq!(m.read_vec(0x1234_5678, 10), vec![0; 10]);
        assert_eq!(m.page_count(), 0);
        m.write(4090, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        assert_eq!(m.page_count(), 2);
        assert_eq!(
            m.read_vec(4088, 14),
            vec![0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0]
        );
        // Two lines (one in each page), not two whole pages.
        assert_eq!(m.resident_bytes(), 2 * LINE_BYTES as u64);
        // Half a page of lines makes it a whole page, bytes unchanged.
        for l in 0..LINES_PER_FULL_PAGE as u64 {
            m.write(4096 + 64 * l + 20, &[l as u8 + 100]);
        }
        assert_eq!(m.resident_bytes(), 64 + 4096);
        assert_eq!(m.read_vec(4096, 6), vec![7, 8, 9, 10, 0, 0]);
        assert_eq!(m.read_vec(4096 + 64 * 3 + 19, 3), vec![0, 103, 0]);
    }

    /// A backing that reads as the low byte of the address plus one.
    #[derive(Debug)]
    struct AddrBytes;
    impl Backing for AddrBytes {
        fn fill(&self, addr: u64, out: &mut [u8]) {
            for (i, b) in out.iter_mut().enumerate() {
                *b = (addr.wrapping_add(i as u64) as u8).wrapping_add(1);
            }
        }
    }

    fn backed_byte(a: u64) -> u8 {
        if (BACKED_START..BACKED_END).contains(&a) {
            (a as u8).wrapping_add(1)
        } else {
            0
        }
    }

    const BACKED_START: u64 = 100;
    const BACKED_END: u64 = 2 * PAGE_BYTES as u64 + 50;

    #[test]
    fn backed_range_reads_its_source_until_written() {
        let mut m = SparseMemory::new();
        m.back(BACKED_START, BACKED_END, Arc::new(AddrBytes));
        let want: Vec<u8> = (90..110).map(backed_byte).collect();
        assert_eq!(m.read_vec(90, 20), want);
        assert_eq!(m.page_count(), 0);
        m.write(105, &[0xEE]);
        let mut want2 = want.clone();
        want2[15] = 0xEE;
        assert_eq!(m.read_vec(90, 20), want2);
        // The written line kept the backing's bytes around the written one.
        assert_eq!(m.resident_bytes(), 64);
    }

    #[test]
    fn whole_pages_are_whole_from_the_first_write() {
        let mut m = SparseMemory::new();
        m.whole_pages(2 * PAGE_BYTES as u64, 4 * PAGE_BYTES as u64);
        m.write(2 * PAGE_BYTES as u64 + 64, &[1, 2, 3]);
        assert_eq!(m.resident_bytes(), PAGE_BYTES as u64);
        assert_eq!(
            m.read_vec(2 * PAGE_BYTES as u64 + 63, 5),
            vec![0, 1, 2, 3, 0]
        );
        // Outside the range, pages still start as lines.
        m.write(4 * PAGE_BYTES as u64, &[4]);
        assert_eq!(m.resident_bytes(), PAGE_BYTES as u64 + LINE_BYTES as u64);
    }

    #[test]
    fn released_pages_read_as_unwritten_and_free_their_storage() {
        let mut m = SparseMemory::new();
        let page = PAGE_BYTES as u64;
        m.back(4 * page, 8 * page, Arc::new(AddrBytes));
        // A line in each of pages 1 to 5 (pages 4 to 7 backed), the whole of page 6.
        for p in 1..6u64 {
            m.write(p * page + 10, &[0xAB]);
        }
        m.write(6 * page, &[0xCD; PAGE_BYTES]);
        let before = m.resident_bytes();
        // The range starts a byte before page 2: pages 2 to 6 are wholly in it, page 1 not.
        let freed = m.release(2 * page - 1, 7 * page);
        assert_eq!(freed, 4 * LINE_BYTES as u64 + page);
        assert_eq!(m.resident_bytes(), before - freed);
        assert_eq!(
            m.read_vec(page + 10, 1),
            vec![0xAB],
            "page 1 keeps its bytes"
        );
        assert_eq!(
            m.read_vec(2 * page + 10, 1),
            vec![0],
            "unbacked: zero again"
        );
        for a in [4 * page + 10, 6 * page, 6 * page + 1] {
            assert_eq!(
                m.read_vec(a, 1),
                vec![backed_byte_at(a)],
                "backed: the backing's"
            );
        }
        // A range wider than the stored pages takes the other path, with the same effect.
        let freed = m.release(0, u64::MAX);
        assert_eq!(freed, LINE_BYTES as u64);
        assert_eq!(m.page_count(), 0);
        assert_eq!(m.release(5, 100), 0, "no whole page in the range");
    }

    /// A backing whose byte at `a` is the low byte of `a` plus `self.0`: ranges backed by
    /// different ones read differently.
    #[derive(Debug)]
    struct Tagged(u8);
    impl Backing for Tagged {
        fn fill(&self, addr: u64, out: &mut [u8]) {
            for (i, b) in out.iter_mut().enumerate() {
                *b = (addr.wrapping_add(i as u64) as u8).wrapping_add(self.0);
            }
        }
    }

    #[test]
    fn unbacked_ranges_read_as_zero_and_cut_ones_keep_their_outside() {
        let mut m = SparseMemory::new();
        // Backed out of address order: the lookup keeps them sorted.
        m.back(3000, 4000, Arc::new(Tagged(3)));
        m.back(1000, 2000, Arc::new(Tagged(1)));
        m.back(2000, 3000, Arc::new(Tagged(2)));
        m.back(5000, 6000, Arc::new(Tagged(5)));
        let byte = |a: u64, tag: u8| (a as u8).wrapping_add(tag);
        // A read across three ranges and the gap after them.
        let got = m.read_vec(1990, 2020);
        assert_eq!(got[0], byte(1990, 1));
        assert_eq!(got[10], byte(2000, 2));
        assert_eq!(got[1010], byte(3000, 3));
        assert_eq!(got[2009], byte(3999, 3));
        assert_eq!(got[2010..], vec![0; 10]);
        // A written byte stays written, and so do the backing's bytes of its line (2496 to
        // 2560, stored with it); the range's other bytes go back to zero.
        m.write(2500, &[0xEE]);
        assert_eq!(m.unback(2000, 3000), 1);
        assert_eq!(
            m.read_vec(2499, 3),
            vec![byte(2499, 2), 0xEE, byte(2501, 2)]
        );
        assert_eq!(m.read_vec(2495, 1), vec![0]);
        assert_eq!(m.read_vec(2559, 2), vec![byte(2559, 2), 0]);
        assert_eq!(m.read_vec(1999, 1), vec![byte(1999, 1)]);
        assert_eq!(m.read_vec(3000, 1), vec![byte(3000, 3)]);
        // A range partly inside keeps its part outside: [1000, 1500) and [3500, 4000).
        assert_eq!(m.unback(1500, 3500), 2);
        assert_eq!(m.backed_ranges(), 3);
        assert_eq!(m.read_vec(1499, 2), vec![byte(1499, 1), 0]);
        assert_eq!(m.read_vec(3499, 2), vec![0, byte(3500, 3)]);
        // Nothing backed inside: nothing changes.
        assert_eq!(m.unback(4000, 5000), 0);
        assert_eq!(m.unback(7000, 6000), 0);
        assert_eq!(m.backed_ranges(), 3);
        // A range cut at both ends.
        assert_eq!(m.unback(5100, 5200), 1);
        assert_eq!(m.backed_ranges(), 4);
        assert_eq!(
            m.read_vec(5099, 102),
            [vec![byte(5099, 5)], vec![0; 100], vec![byte(5200, 5)]].concat()
        );
        // The freed bytes can be backed again.
        m.back(5100, 5200, Arc::new(Tagged(9)));
        assert_eq!(m.read_vec(5150, 1), vec![byte(5150, 9)]);
        assert_eq!(m.unback(0, u64::MAX), 5);
        assert_eq!(m.backed_ranges(), 0);
        // Left: the line written into.
        let left: Vec<usize> = (m.read_vec(1000, 5000).iter())
            .enumerate()
            .filter(|(_, &b)| b != 0)
            .map(|(i, _)| 1000 + i)
            .collect();
        assert!(left.iter().all(|a| (2496..2560).contains(a)), "{left:?}");
    }

    fn backed_byte_at(a: u64) -> u8 {
        (a as u8).wrapping_add(1)
    }

    #[test]
    fn page_entries_stay_small() {
        assert_eq!(core::mem::size_of::<Page>(), 16);
    }

    #[test]
    fn top_of_address_space_wraps() {
        let mut m = SparseMemory::new();
        m.write(u64::MAX - 1, &[1, 2, 3, 4]);
        assert_eq!(m.read_vec(u64::MAX - 1, 4), vec![1, 2, 3, 4]);
        assert_eq!(m.read_vec(0, 2), vec![3, 4]);
    }

    #[test]
    fn pattern_and_checksum() {
        let mut m = SparseMemory::new();
        m.fill_pattern(1000, 10_000, 7);
        assert!(m.matches_pattern(1000, 10_000, 7));
        assert!(!m.matches_pattern(1000, 10_000, 8));
        assert!(!m.matches_pattern(1001, 100, 7));
        assert_eq!(m.checksum(1000, 10_000), m.clone().checksum(1000, 10_000));
        let before = m.checksum(1000, 10_000);
        m.write(5000, &[m.read_vec(5000, 1)[0] ^ 1]);
        assert_eq!(m.first_pattern_mismatch(1000, 10_000, 7), Some(4000));
        assert_ne!(m.checksum(1000, 10_000), before);
        assert_eq!(m.checksum(0, 0), 0xcbf2_9ce4_8422_2325);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Write(u64, Vec<u8>),
        Read(u64, usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        // Addresses cluster around a few page boundaries (and the top of the space) so that
        // spanning accesses and overlaps are common.
        let addr = prop_oneof![
            (0u64..3 * PAGE_BYTES as u64),
            (u64::MAX - 2 * PAGE_BYTES as u64..=u64::MAX),
            (0x7000_0000u64..0x7000_0000 + 2 * PAGE_BYTES as u64),
        ];
        let len = prop_oneof![0usize..200, 0..2 * PAGE_BYTES + 10];
        prop_oneof![
            (
                addr.clone(),
                len.prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n))
            )
                .prop_map(|(a, d)| Op::Write(a, d)),
            (addr, 0usize..2 * PAGE_BYTES + 10).prop_map(|(a, n)| Op::Read(a, n)),
        ]
    }

    #[derive(Debug, Clone)]
    enum RangeOp {
        Back(u64, u64, u8),
        Unback(u64, u64),
        Write(u64, u8),
        Read(u64, usize),
    }

    /// A byte was written into `x`'s page.
    fn touched(written: &BTreeMap<u64, u8>, x: u64) -> bool {
        let page = x & !PAGE_MASK;
        written
            .range(page..page + PAGE_BYTES as u64)
            .next()
            .is_some()
    }

    fn range_op() -> impl Strategy<Value = RangeOp> {
        let at = 0u64..3 * PAGE_BYTES as u64;
        prop_oneof![
            (at.clone(), 0u64..2000, 1u8..200).prop_map(|(a, n, t)| RangeOp::Back(a, a + n, t)),
            (at.clone(), 0u64..3000).prop_map(|(a, n)| RangeOp::Unback(a, a + n)),
            (at.clone(), any::<u8>()).prop_map(|(a, b)| RangeOp::Write(a, b)),
            (at, 0usize..5000).prop_map(|(a, n)| RangeOp::Read(a, n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// `first_difference_from` finds what a byte-by-byte walk over a read finds, over
        /// pages stored whole, as lines, interned, or never written.
        #[test]
        fn first_difference_from_equals_a_walk_over_a_read(
            writes in proptest::collection::vec((0u64..5 * 4096, 1usize..6000, any::<u8>()), 0..12),
            at in 0u64..5 * 4096,
            len in 0usize..9000,
            flip in proptest::option::of((0usize..9000, 1u8..=255)),
        ) {
            let mut m = SparseMemory::new();
            m.intern_lines(3 * 4096, 4 * 4096);
            for (a, n, v) in writes {
                let bytes: Vec<u8> = (0..n).map(|i| v.wrapping_add(i as u8)).collect();
                m.write(a, &bytes);
            }
            let mut expected = m.read_vec(at, len);
            if let Some((i, x)) = flip.filter(|&(i, _)| i < len) {
                expected[i] ^= x;
            }
            let walk = m.read_vec(at, len).iter().zip(&expected).position(|(a, b)| a != b);
            prop_assert_eq!(m.first_difference_from(at, &expected), walk);
        }

        #[test]
        fn backed_ranges_match_a_range_list(ops in proptest::collection::vec(range_op(), 1..40)) {
            let mut m = SparseMemory::new();
            // The model: ranges as (start, end, tag), written bytes.
            let mut ranges: Vec<(u64, u64, u8)> = Vec::new();
            let mut written: BTreeMap<u64, u8> = BTreeMap::new();
            for op in ops {
                match op {
                    RangeOp::Back(a, b, t) => {
                        // Only apart from the others and before any write into its
                        // pages, as `back` requires.
                        let pages = a >> PAGE_SHIFT..=(b.max(1) - 1) >> PAGE_SHIFT;
                        let fresh = written.keys().all(|&x| !pages.contains(&(x >> PAGE_SHIFT)));
                        if a < b && fresh && ranges.iter().all(|&(s, e, _)| b <= s || a >= e) {
                            m.back(a, b, Arc::new(Tagged(t)));
                            ranges.push((a, b, t));
                        }
                    }
                    RangeOp::Unback(a, b) => {
                        let mut cut = Vec::new();
                        let before = ranges.len();
                        ranges.retain(|&(s, e, t)| {
                            let hit = s < b && a < e && a < b;
                            if hit {
                                cut.extend([(s, a, t), (b, e, t)].into_iter().filter(|r| r.0 < r.1));
                            }
                            !hit
                        });
                        prop_assert_eq!(m.unback(a, b), before - ranges.len());
                        ranges.extend(cut);
                        prop_assert_eq!(m.backed_ranges(), ranges.len());
                    }
                    RangeOp::Write(a, v) => {
                        m.write(a, &[v]);
                        written.insert(a, v);
                    }
                    RangeOp::Read(a, n) => {
                        // A page written into stores the backing's bytes around the written
                        // ones as it read them then (see `unback`): those are not compared.
                        let want: Vec<Option<u8>> = (a..a + n as u64)
                            .map(|x| match written.get(&x) {
                                Some(&v) => Some(v),
                                None if touched(&written, x) => None,
                                None => Some(
                                    ranges
                                        .iter()
                                        .find(|r| (r.0..r.1).contains(&x))
                                        .map_or(0, |r| (x as u8).wrapping_add(r.2)),
                                ),
                            })
                            .collect();
                        let got = m.read_vec(a, n);
                        for (i, w) in want.iter().enumerate() {
                            if let Some(w) = w {
                                prop_assert_eq!(got[i], *w, "byte {}", a + i as u64);
                            }
                        }
                    }
                }
            }
        }

        #[test]
        fn matches_a_byte_map(ops in proptest::collection::vec(op(), 1..40), backed in any::<bool>(), interned in any::<bool>(), whole in any::<bool>()) {
            let mut m = SparseMemory::new();
            if whole {
                // The top pages: whole from their first write.
                m.whole_pages(u64::MAX - 2 * PAGE_BYTES as u64 + 1, u64::MAX);
            }
            if backed {
                m.back(BACKED_START, BACKED_END, Arc::new(AddrBytes));
            } else if interned {
                // The low pages (and the page across 0x7000_0000): interned lines.
                m.intern_lines(PAGE_BYTES as u64, 0x7000_0000 + PAGE_BYTES as u64);
            }
            let mut model: BTreeMap<u64, u8> = BTreeMap::new();
            for op in ops {
                match op {
                    Op::Write(a, d) => {
                        m.write(a, &d);
                        for (i, b) in d.iter().enumerate() {
                            model.insert(a.wrapping_add(i as u64), *b);
                        }
                    }
                    Op::Read(a, n) => {
                        let got = m.read_vec(a, n);
                        let want: Vec<u8> = (0..n)
                            .map(|i| {
                                let at = a.wrapping_add(i as u64);
                                let unwritten = if backed { backed_byte(at) } else { 0 };
                                *model.get(&at).unwrap_or(&unwritten)
                            })
                            .collect();
                        prop_assert_eq!(got, want);
                    }
                }
            }
        }
    }
}
