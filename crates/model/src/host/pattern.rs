//! The bytes of the applications' source buffers: a deterministic function of a buffer's
//! seed and the byte offset, computable at any offset without reading memory, so an
//! observer can tell the bytes a payload must carry from the packet alone, and a buffer
//! can be checked or regenerated piece by piece.

/// The seed of node `node`'s source buffer slot `slot` in a run seeded `run_seed`.
pub fn buffer_seed(run_seed: u64, node: usize, slot: u32) -> u64 {
    splitmix(run_seed ^ splitmix(0x5000 + node as u64) ^ splitmix(0x1_0000_0000 + u64::from(slot)))
}

/// SplitMix64's mix of `x`: every input bit moves about half the output bits (the pattern's
/// words, and a test's deterministic draws).
#[inline(always)]
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Fills `out` with the bytes of the buffer of `seed` from byte `offset` on (8 bytes per
/// hash: byte i is byte i mod 8 of the word of i / 8).
pub fn fill(seed: u64, offset: u64, out: &mut [u8]) {
    if offset.is_multiple_of(8) {
        // Aligned (every packet but a READ's or a message's odd tail): whole words.
        fill_words(seed, offset / 8, out);
        return;
    }
    let mut i = 0usize;
    while i < out.len() {
        let at = offset + i as u64;
        let word = splitmix(seed ^ (at / 8)).to_le_bytes();
        let from = (at % 8) as usize;
        let n = (8 - from).min(out.len() - i);
        out[i..i + n].copy_from_slice(&word[from..from + n]);
        i += n;
    }
}

/// `out` from word `first_word` on. Every sent payload is generated here and every received
/// one checked against it, so this loop bounds large-message runs: compiled also for
/// AVX-512 (eight 64-bit multiplies per instruction; about 10x the scalar loop on the
/// reference machine) and AVX2, and the best the CPU has is chosen at run time. The bytes
/// are the same on every CPU.
#[multiversion::multiversion(targets("x86_64+avx512f+avx512dq+avx512vl", "x86_64+avx2"))]
fn fill_words(seed: u64, first_word: u64, out: &mut [u8]) {
    // Whole words as `[u8; 8]` stores: a `copy_from_slice` per word compiles to a call to
    // `memcpy` whenever the optimiser declines to inline it (about 3x slower, seen as a
    // quarter of a run's instructions), and a fixed-size assignment never does.
    let (words, rest) = out.as_chunks_mut::<8>();
    let mut w = first_word;
    for word in words {
        *word = splitmix(seed ^ w).to_le_bytes();
        w += 1;
    }
    let n = rest.len();
    rest.copy_from_slice(&splitmix(seed ^ w).to_le_bytes()[..n]);
}

/// One node's source buffers of one flow as a [`rnic_host::Backing`]: slot `s` (at
/// `base + s × stride`) holds the first `size` bytes of the pattern of its seed when a pair
/// of the node uses it, zeros otherwise. The bytes are generated when read, so a buffer
/// nobody reads (a WRITE target's sources) costs no memory, and a source buffer costs no
/// more than its flag however many QPs there are.
#[derive(Debug)]
pub struct SourceBuffers {
    /// Address of slot 0.
    pub base: u64,
    /// Bytes between two slots.
    pub stride: u64,
    /// Pattern bytes at the start of each slot (the message size).
    pub size: u64,
    /// The run's seed.
    pub run_seed: u64,
    /// The node.
    pub node: usize,
    /// The run-wide number of slot 0.
    pub slot_base: u32,
    /// Bit s: a pair of this node uses slot s.
    pub used: Vec<u64>,
}

impl rnic_host::Backing for SourceBuffers {
    fn fill(&self, addr: u64, out: &mut [u8]) {
        let mut done = 0usize;
        while done < out.len() {
            let rel = addr + done as u64 - self.base;
            let (slot, off) = (rel / self.stride, rel % self.stride);
            let n = ((self.stride - off) as usize).min(out.len() - done);
            let piece = &mut out[done..done + n];
            let used = self
                .used
                .get((slot / 64) as usize)
                .is_some_and(|w| w & (1u64 << (slot % 64)) != 0);
            if used && off < self.size {
                let k = ((self.size - off) as usize).min(n);
                let seed = buffer_seed(self.run_seed, self.node, self.slot_base + slot as u32);
                fill(seed, off, &mut piece[..k]);
                piece[k..].fill(0);
            } else {
                piece.fill(0);
            }
            done += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_piece_equals_the_same_bytes_of_the_whole() {
        let seed = buffer_seed(1, 2, 3);
        let mut whole = vec![0u8; 100];
        fill(seed, 0, &mut whole);
        for start in 0..20 {
            for len in [0, 1, 5, 8, 13] {
                let mut piece = vec![0u8; len];
                fill(seed, start as u64, &mut piece);
                assert_eq!(piece, whole[start..start + len]);
            }
        }
        assert_ne!(buffer_seed(1, 2, 3), buffer_seed(1, 2, 4));
        // Whatever loop the CPU runs, word i is splitmix(seed ^ i), little-endian.
        let mut long = vec![0u8; 4096 + 5];
        fill(seed, 0, &mut long);
        for (i, w) in long.chunks(8).enumerate() {
            assert_eq!(w, &splitmix(seed ^ i as u64).to_le_bytes()[..w.len()]);
        }
        assert_ne!(buffer_seed(1, 2, 3), buffer_seed(1, 3, 3));
    }
}
