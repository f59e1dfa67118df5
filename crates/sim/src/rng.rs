//! Seeded, portable random numbers: xoshiro256** seeded through splitmix64.
//!
//! Hand-written (no `rand` crate) so the exact stream is part of this crate:
//! a seed gives the same numbers on every platform and every release, which a
//! reproducible simulator needs. The algorithms are Blackman and Vigna's
//! reference ones (<https://prng.di.unimi.it/>): splitmix64 expands a 64-bit
//! seed into the 256-bit state, as its authors recommend.
//!
//! Components do not share one generator: each takes its own sub-stream with
//! [`Rng::fork`], so adding a component (or a draw in one) never shifts the
//! numbers another component sees.

use std::ops::Range;

/// splitmix64's increment (the 64-bit golden ratio).
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;
/// Salt that separates fork-key derivation from plain seeding.
const FORK_SALT: u64 = 0x5fe1_2a0b_c7d3_9e41;

/// splitmix64's output function (a bijective 64-bit mixer).
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One step of splitmix64 on `state`.
#[inline]
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN);
    mix64(*state)
}

/// A xoshiro256** generator with a stream key for deterministic forking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
    /// The seed this stream was made from; [`Rng::fork`] derives children from
    /// it (not from `s`), so forks do not depend on how much was drawn.
    key: u64,
}

impl Rng {
    /// A generator seeded from `seed` (state = four splitmix64 outputs).
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        // splitmix64 is a bijection of a counter, so four consecutive outputs
        // are never all zero (the one state xoshiro must avoid).
        Self { s, key: seed }
    }

    /// The seed this stream was created from.
    pub fn seed(&self) -> u64 {
        self.key
    }

    /// An independent sub-stream for component `stream_id`.
    ///
    /// It is a pure function of this generator's seed and `stream_id`: it does
    /// not consume or depend on this generator's draws, so
    /// `Rng::new(s).fork(3)` is the same stream whether the parent drew
    /// nothing or a million numbers first. Different ids give different
    /// streams (the derivation is a bijection of `stream_id` for a given
    /// parent); forks nest (`fork(a).fork(b)` differs from `fork(b).fork(a)`).
    pub fn fork(&self, stream_id: u64) -> Rng {
        Rng::new(mix64(self.key ^ mix64(stream_id.wrapping_add(FORK_SALT))))
    }

    /// Next 64 random bits (xoshiro256**).
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Next 32 random bits (the high half, xoshiro's best bits).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n` without modulo bias (Lemire's multiply-and-reject:
    /// usually one multiplication, a division only on the rare rejection path).
    ///
    /// # Panics
    /// If `n == 0` (an empty range has no value to return).
    #[inline]
    pub fn gen_below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "gen_below(0): empty range");
        let mut m = u128::from(self.next_u64()) * u128::from(n);
        if (m as u64) < n {
            // Reject the low `2^64 mod n` products so every output has exactly
            // floor(2^64 / n) preimages.
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = u128::from(self.next_u64()) * u128::from(n);
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `range` (half-open) without modulo bias.
    ///
    /// # Panics
    /// If the range is empty.
    #[inline]
    pub fn gen_range(&mut self, range: Range<u64>) -> u64 {
        assert!(
            range.start < range.end,
            "gen_range({}..{}): empty range",
            range.start,
            range.end
        );
        range.start + self.gen_below(range.end - range.start)
    }

    /// Uniform index in `0..len`, e.g. to pick from a slice.
    ///
    /// # Panics
    /// If `len == 0`.
    #[inline]
    pub fn gen_index(&mut self, len: usize) -> usize {
        // usize fits in u64 on every supported target, and the result < len.
        self.gen_below(len as u64) as usize
    }

    /// Uniform in `[0, 1)` with 53 random bits (every value a multiple of
    /// 2^-53).
    #[inline]
    pub fn gen_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`. Always consumes exactly one draw, so the
    /// stream position does not depend on `p`; `p <= 0` (or NaN) is never true
    /// and `p >= 1` always.
    #[inline]
    pub fn gen_bool(&mut self, p: f64) -> bool {
        self.gen_f64() < p
    }

    /// Exponentially distributed with the given mean (e.g. Poisson
    /// inter-arrival gaps). Never infinite: uses `1 - u` with `u < 1`.
    #[inline]
    pub fn gen_exp(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.gen_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known answers computed once with an independent implementation of the
    // reference algorithms (a direct Python transcription of Vigna's
    // splitmix64.c and xoshiro256starstar.c: state = four splitmix64 outputs
    // from the seed). splitmix64(0)'s first output 0xe220a8397b1dcdaf is the
    // widely published value, which checks the seeding half independently.
    #[test]
    fn splitmix64_known_first_output() {
        let mut s = 0;
        assert_eq!(splitmix64(&mut s), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn known_outputs_seed_0() {
        let mut r = Rng::new(0);
        let got: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                0x99ec_5f36_cb75_f2b4,
                0xbf6e_1f78_4956_452a,
                0x1a5f_849d_4933_e6e0,
                0x6aa5_94f1_262d_2d2c
            ]
        );
    }

    #[test]
    fn known_outputs_seed_1() {
        let mut r = Rng::new(1);
        let got: Vec<u64> = (0..4).map(|_| r.next_u64()).collect();
        assert_eq!(
            got,
            [
                0xb3f2_af6d_0fc7_10c5,
                0x853b_5596_4736_4cea,
                0x92f8_9756_082a_4514,
                0x642e_1c7b_c266_a3a7
            ]
        );
    }

    /// Freezes the derived streams too: a change here would silently change
    /// every seeded run, so it must be deliberate. Values from the same
    /// Python transcription as above.
    #[test]
    fn known_outputs_of_derived_draws() {
        let mut f = Rng::new(0).fork(1);
        assert_eq!(f.seed(), 0x9a3b_af1b_11c7_6372);
        assert_eq!(f.next_u64(), 0x841a_e7a8_f0bc_c459);
        assert_eq!(f.next_u64(), 0xfab8_c73d_26c6_ba26);
        assert_eq!(
            Rng::new(0).fork(1).fork(2).next_u64(),
            0x79e5_7410_5bb3_e749
        );
        let mut r = Rng::new(0);
        let got: Vec<u64> = (0..5).map(|_| r.gen_below(1000)).collect();
        assert_eq!(got, [601, 747, 103, 416, 732]);
        assert_eq!(Rng::new(0).gen_f64(), 0.6012629994179048);
    }

    #[test]
    fn fork_ignores_parent_draws_and_separates_ids() {
        let parent = Rng::new(7);
        let mut drawn = parent.clone();
        for _ in 0..1000 {
            drawn.next_u64();
        }
        assert_eq!(parent.fork(3), drawn.fork(3));
        let mut a = parent.fork(1);
        let mut b = parent.fork(2);
        let mut p = parent.clone();
        let (xa, xb, xp) = (a.next_u64(), b.next_u64(), p.next_u64());
        assert!(xa != xb && xa != xp && xb != xp);
        assert_ne!(parent.fork(1).fork(2), parent.fork(2).fork(1));
        assert_ne!(Rng::new(1).fork(0), Rng::new(2).fork(0));
    }

    #[test]
    fn gen_range_stays_in_range_and_is_unbiased() {
        let mut r = Rng::new(42);
        // n = 3 does not divide 2^64: a modulo would be biased (slightly).
        let mut counts = [0u32; 3];
        for _ in 0..300_000 {
            counts[r.gen_below(3) as usize] += 1;
        }
        for c in counts {
            assert!((99_000..101_000).contains(&c), "{counts:?}");
        }
        for _ in 0..10_000 {
            let x = r.gen_range(10..17);
            assert!((10..17).contains(&x));
        }
        assert_eq!(r.gen_range(5..6), 5);
        // Huge range where rejection is likely (n just above 2^63).
        let n = (1u64 << 63) + 1;
        for _ in 0..1000 {
            assert!(r.gen_below(n) < n);
        }
        let _ = r.gen_range(0..u64::MAX);
    }

    #[test]
    #[should_panic(expected = "empty range")]
    fn gen_range_rejects_empty() {
        Rng::new(0).gen_range(4..4);
    }

    #[test]
    fn floats_and_bools() {
        let mut r = Rng::new(9);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let x = r.gen_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        assert!((sum / 100_000.0 - 0.5).abs() < 0.01);
        let hits = (0..100_000).filter(|_| r.gen_bool(0.25)).count();
        assert!((24_000..26_000).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| r.gen_bool(0.0)));
        assert!((0..1000).all(|_| r.gen_bool(1.0)));
        assert!(!r.gen_bool(f64::NAN));
        let mean: f64 = (0..100_000).map(|_| r.gen_exp(3.0)).sum::<f64>() / 100_000.0;
        assert!((mean - 3.0).abs() < 0.1, "{mean}");
    }
}
