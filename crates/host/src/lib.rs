//! The simulated host: sparse, byte-addressed memory holding real bytes.
//!
//! [`SparseMemory`] backs the whole 64-bit address space with 4 KiB pages allocated on first
//! write, so a test can register a multi-gigabyte region at any address and pay only for the
//! bytes it touches. Bytes never written read as zero.

#![forbid(unsafe_code)]

use rnic_transport::Memory;
use rustc_hash::FxHashMap;

/// Page size of [`SparseMemory`].
pub const PAGE_BYTES: usize = 4096;
const PAGE_SHIFT: u32 = 12;
const PAGE_MASK: u64 = PAGE_BYTES as u64 - 1;

/// Sparse host memory: 4 KiB pages in a hash map, allocated on first write.
#[derive(Debug, Default, Clone)]
pub struct SparseMemory {
    pages: FxHashMap<u64, Box<[u8; PAGE_BYTES]>>,
}

impl SparseMemory {
    pub fn new() -> SparseMemory {
        SparseMemory::default()
    }

    /// Pages allocated so far.
    pub fn page_count(&self) -> usize {
        self.pages.len()
    }

    /// Bytes of page storage allocated.
    pub fn resident_bytes(&self) -> u64 {
        (self.pages.len() * PAGE_BYTES) as u64
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
    fn read(&self, addr: u64, out: &mut [u8]) {
        SparseMemory::for_each_piece(addr, out.len(), |page, off, r| {
            let dst = &mut out[r.clone()];
            match self.pages.get(&page) {
                Some(p) => dst.copy_from_slice(&p[off..off + r.len()]),
                None => dst.fill(0),
            }
        });
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        SparseMemory::for_each_piece(addr, data.len(), |page, off, r| {
            let p = self
                .pages
                .entry(page)
                .or_insert_with(|| Box::new([0u8; PAGE_BYTES]));
            p[off..off + r.len()].copy_from_slice(&data[r]);
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
        assert_eq!(m.resident_bytes(), 8192);
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
        prop_oneof![
            (
                addr.clone(),
                proptest::collection::vec(any::<u8>(), 0..2 * PAGE_BYTES + 10)
            )
                .prop_map(|(a, d)| Op::Write(a, d)),
            (addr, 0usize..2 * PAGE_BYTES + 10).prop_map(|(a, n)| Op::Read(a, n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_a_byte_map(ops in proptest::collection::vec(op(), 1..40)) {
            let mut m = SparseMemory::new();
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
                            .map(|i| *model.get(&a.wrapping_add(i as u64)).unwrap_or(&0))
                            .collect();
                        prop_assert_eq!(got, want);
                    }
                }
            }
        }
    }
}
