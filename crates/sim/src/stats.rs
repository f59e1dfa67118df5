//! Statistics: counters, a fixed-memory latency histogram and the serialisable
//! latency summary that results carry.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::time::to_us;

/// A monotonically increasing event count (packets, retransmissions, hits...).
///
/// Serialises as a bare number.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Counter(pub u64);

impl Counter {
    /// A counter at zero.
    pub const fn new() -> Self {
        Counter(0)
    }

    /// Adds one.
    #[inline]
    pub fn inc(&mut self) {
        self.0 += 1;
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&mut self, n: u64) {
        self.0 += n;
    }

    /// The current count.
    #[inline]
    pub fn get(&self) -> u64 {
        self.0
    }

    /// Back to zero (e.g. at the end of a warm-up phase).
    pub fn reset(&mut self) {
        self.0 = 0;
    }
}

/// Sub-buckets per power of two: 2^7 = 128, so a bucket is at most 1/128 of
/// its lower bound wide and its midpoint is within 1/256 (0.39 %) of any value
/// in it -- comfortably inside the 1 % we promise.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// Values below `2 * SUB` (256 ps) get one bucket each: exact.
const LINEAR_LIMIT: u64 = 2 * SUB;
/// Buckets for the whole `u64` range: the linear 256, then 128 per power of
/// two from 2^8 to 2^63 (shifts 1..=56).
const BUCKETS: usize = ((64 - SUB_BITS + 1) as usize) * SUB as usize;

/// Bucket of value `v` (O(1): one leading-zero count and a shift).
#[inline]
fn bucket_of(v: u64) -> usize {
    if v < LINEAR_LIMIT {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - SUB_BITS; // >= 1
    (shift as usize) * SUB as usize + (v >> shift) as usize
}

/// Lowest value and width of bucket `i`.
#[inline]
fn bucket_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < LINEAR_LIMIT {
        return (i, 1);
    }
    let shift = i / SUB - 1;
    ((i - shift * SUB) << shift, 1 << shift)
}

/// A latency histogram in picoseconds (HdrHistogram-like log-linear buckets).
///
/// * `record` is O(1). The buckets cover all of `u64` (7424 of them), but only the span
///   between the lowest and the highest bucket recorded so far is stored: a flow's
///   latencies span a few powers of two, a few hundred buckets, where storing all took
///   58 KB per histogram (225 MB over a k = 16 fabric run's flows). Recording outside the
///   span widens it (allocating), at most 58 KB in all.
/// * `min`, `max`, `count` and `mean` are exact (the sum is kept in `u128`).
/// * `percentile` returns a value within 0.39 % (always ≤ 1 %) of the exact
///   order statistic, and exactly for values below 256 ps.
#[derive(Clone)]
pub struct Histogram {
    /// Counts of buckets `first..first + counts.len()`; every other bucket is empty.
    counts: Vec<u64>,
    first: usize,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self {
            counts: Vec::new(),
            first: 0,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, value_ps: u64) {
        self.record_n(value_ps, 1);
    }

    /// Records `n` occurrences of one value.
    #[inline]
    pub fn record_n(&mut self, value_ps: u64, n: u64) {
        if n == 0 {
            return;
        }
        *self.slot(bucket_of(value_ps)) += n;
        self.count += n;
        self.sum += u128::from(value_ps) * u128::from(n);
        self.min = self.min.min(value_ps);
        self.max = self.max.max(value_ps);
    }

    /// The count of bucket `b`, the stored span widened to hold it.
    #[inline]
    fn slot(&mut self, b: usize) -> &mut u64 {
        debug_assert!(b < BUCKETS);
        if self.counts.is_empty() {
            self.first = b;
            self.counts.push(0);
        } else if b < self.first {
            let wider = self.first - b;
            self.counts.splice(0..0, std::iter::repeat_n(0, wider));
            self.first = b;
        } else if b >= self.first + self.counts.len() {
            self.counts.resize(b - self.first + 1, 0);
        }
        &mut self.counts[b - self.first]
    }

    /// The stored buckets with their numbers: (bucket, count).
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (self.first + i, c))
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Smallest recorded value (exact).
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// Largest recorded value (exact).
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// Arithmetic mean of the recorded values (exact up to the final f64
    /// division).
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// The `p`-th percentile (`p` in percent, e.g. 50, 99, 99.9): the smallest
    /// recorded value `v` such that at least `p` % of the values are `<= v`
    /// (rank `ceil(p/100 * count)`, at least 1), approximated by the midpoint
    /// of its bucket and clamped to `[min, max]`.
    ///
    /// `p` is taken to 0.001 % resolution (integer maths from there on, so
    /// 99.9 means exactly 99.9 % and not 99.899999...). `p <= 0` gives `min`,
    /// `p >= 100` gives `max`; `None` when empty.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        // Percent in thousandths; NaN and negatives become 0 (saturating cast).
        let p_milli = (p * 1000.0).round().min(100_000.0) as u128;
        if p_milli == 0 {
            return Some(self.min);
        }
        if p_milli >= 100_000 {
            return Some(self.max);
        }
        let rank = (p_milli * u128::from(self.count)).div_ceil(100_000).max(1);
        let mut seen: u128 = 0;
        for (i, c) in self.buckets() {
            seen += u128::from(c);
            if seen >= rank {
                let (lo, width) = bucket_bounds(i);
                let mid = lo + (width - 1) / 2;
                return Some(mid.clamp(self.min, self.max));
            }
        }
        Some(self.max) // unreachable: the counts sum to `count`
    }

    /// Adds every value recorded in `other` to `self`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        for (b, c) in other.buckets().filter(|&(_, c)| c > 0) {
            *self.slot(b) += c;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Forgets everything recorded (keeps the memory).
    pub fn reset(&mut self) {
        self.counts.fill(0);
        self.count = 0;
        self.sum = 0;
        self.min = u64::MAX;
        self.max = 0;
    }

    /// The summary that results report, in microseconds.
    pub fn summary(&self) -> Summary {
        Summary::from(self)
    }
}

/// Equal when they hold the same values: the stored spans may differ (a span widened by
/// values since reset, or merged from a wider one) while every count is the same.
impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        let nonzero = |h: &Self| h.buckets().filter(|&(_, c)| c > 0).collect::<Vec<_>>();
        self.count == other.count
            && self.sum == other.sum
            && self.min == other.min
            && self.max == other.max
            && nonzero(self) == nonzero(other)
    }
}

impl Eq for Histogram {}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Histogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min())
            .field("mean", &self.mean())
            .field("max", &self.max())
            .finish_non_exhaustive()
    }
}

/// Latency summary as it appears in JSON results: microseconds as `f64`.
/// An empty histogram gives `count: 0` and zeros.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample (exact).
    pub min_us: f64,
    /// Mean (exact).
    pub avg_us: f64,
    /// Median (within 1 %).
    pub p50_us: f64,
    /// 99th percentile (within 1 %).
    pub p99_us: f64,
    /// 99.9th percentile (within 1 %).
    pub p999_us: f64,
    /// Largest sample (exact).
    pub max_us: f64,
}

impl From<&Histogram> for Summary {
    fn from(h: &Histogram) -> Self {
        if h.is_empty() {
            return Summary::default();
        }
        let pct = |p| to_us(h.percentile(p).unwrap_or(0));
        Summary {
            count: h.count(),
            min_us: to_us(h.min),
            avg_us: h.mean().unwrap_or(0.0) / 1e6,
            p50_us: pct(50.0),
            p99_us: pct(99.0),
            p999_us: pct(99.9),
            max_us: to_us(h.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    /// The exact percentile with the same rank definition as `percentile`.
    fn exact(sorted: &[u64], p: f64) -> u64 {
        let n = sorted.len() as u128;
        let p_milli = (p * 1000.0).round() as u128;
        let rank = (p_milli * n).div_ceil(100_000).max(1);
        sorted[(rank - 1) as usize]
    }

    fn check_against_sorted(values: &[u64]) {
        let mut h = Histogram::new();
        for &v in values {
            h.record(v);
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        assert_eq!(h.count(), values.len() as u64);
        assert_eq!(h.min(), sorted.first().copied());
        assert_eq!(h.max(), sorted.last().copied());
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / values.len() as f64;
        assert!((h.mean().unwrap() - mean).abs() <= mean * 1e-12);
        for p in [
            0.0, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0,
        ] {
            let want = exact(&sorted, p);
            let got = h.percentile(p).unwrap();
            let err = (got as f64 - want as f64).abs();
            assert!(
                err <= want as f64 / 256.0 + 0.5,
                "p{p}: got {got}, exact {want}"
            );
        }
    }

    #[test]
    fn bucket_layout_is_contiguous_and_tight() {
        let mut prev_end = 0;
        for i in 0..BUCKETS {
            let (lo, w) = bucket_bounds(i);
            assert_eq!(lo, prev_end, "gap before bucket {i}");
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(lo + (w - 1)), i);
            assert!(lo < LINEAR_LIMIT || w * SUB <= lo, "bucket {i} too wide");
            prev_end = lo.wrapping_add(w);
        }
        assert_eq!(prev_end, 0, "buckets must end exactly at u64::MAX");
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn small_values_are_exact() {
        let values: Vec<u64> = (0..256).chain(0..100).collect();
        let mut h = Histogram::new();
        for &v in &values {
            h.record(v);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        for p in [1.0, 33.3, 50.0, 99.0, 99.9] {
            assert_eq!(h.percentile(p), Some(exact(&sorted, p)));
        }
    }

    #[test]
    fn percentiles_match_sorted_vector_uniform() {
        let mut r = Rng::new(1);
        let v: Vec<u64> = (0..100_000).map(|_| r.gen_range(0..10_000_000)).collect();
        check_against_sorted(&v);
    }

    #[test]
    fn percentiles_match_sorted_vector_heavy_tail() {
        // Log-uniform over 1 ps .. 1 s, plus a cluster: the shape of a
        // latency distribution with rare timeouts.
        let mut r = Rng::new(2);
        let mut v: Vec<u64> = (0..50_000)
            .map(|_| 10f64.powf(r.gen_f64() * 12.0) as u64)
            .collect();
        v.extend((0..50_000).map(|_| 2_000_000 + r.gen_below(1000)));
        check_against_sorted(&v);
    }

    #[test]
    fn percentiles_match_sorted_vector_small_and_extreme() {
        check_against_sorted(&[42]);
        check_against_sorted(&[u64::MAX, 0, 1 << 40, (1 << 40) + 1]);
        check_against_sorted(&[1_000_000; 7]);
    }

    #[test]
    fn empty_histogram() {
        let h = Histogram::new();
        assert_eq!((h.min(), h.max(), h.mean()), (None, None, None));
        assert_eq!(h.percentile(50.0), None);
        assert_eq!(h.summary(), Summary::default());
    }

    #[test]
    fn merge_equals_recording_everything() {
        let mut r = Rng::new(3);
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for i in 0..10_000 {
            let v = r.gen_range(1..1_000_000_000);
            if i % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        a.merge(&Histogram::new());
        assert_eq!(a, all);
        a.reset();
        assert_eq!(a, Histogram::new());
    }

    #[test]
    fn the_stored_span_widens_both_ways_and_stays_small() {
        // Descending, then ascending past both ends: each widening keeps the counts.
        let mut values: Vec<u64> = (0..2000).rev().map(|i| 3_000_000 + 997 * i).collect();
        values.extend([1, 50_000_000_000, 2_500_000]);
        check_against_sorted(&values);
        let mut narrow = Histogram::new();
        for v in 2_000_000..2_000_500u64 {
            narrow.record(v * 3);
        }
        // 6 µs to 6.0015 µs: one power of two, a few buckets, not 7424.
        assert!(narrow.counts.len() <= 2, "{}", narrow.counts.len());
        assert!(
            Histogram::new().counts.is_empty(),
            "an empty one stores nothing"
        );
    }

    /// The percentile the histogram gave when it stored every bucket: the same walk over a
    /// full array of counts.
    fn percentile_over_every_bucket(values: &[u64], p: f64) -> u64 {
        let mut counts = vec![0u64; BUCKETS];
        for &v in values {
            counts[bucket_of(v)] += 1;
        }
        let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
        let p_milli = (p * 1000.0).round().min(100_000.0) as u128;
        if p_milli == 0 {
            return min;
        }
        if p_milli >= 100_000 {
            return max;
        }
        let rank = (p_milli * values.len() as u128).div_ceil(100_000).max(1);
        let mut seen = 0u128;
        for (i, &c) in counts.iter().enumerate() {
            seen += u128::from(c);
            if seen >= rank {
                let (lo, width) = bucket_bounds(i);
                return (lo + (width - 1) / 2).clamp(min, max);
            }
        }
        max
    }

    #[test]
    fn percentiles_equal_those_over_every_bucket() {
        let mut r = crate::Rng::new(11);
        for case in 0..200 {
            let n = 1 + r.gen_range(0..400) as usize;
            let scale = 1u64 << r.gen_range(0..50);
            let values: Vec<u64> = (0..n).map(|_| r.gen_range(0..scale.max(1))).collect();
            let mut h = Histogram::new();
            for &v in &values {
                h.record(v);
            }
            for p in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
                let want = percentile_over_every_bucket(&values, p);
                assert_eq!(h.percentile(p), Some(want), "case {case}, p{p}");
            }
        }
    }

    #[test]
    fn histograms_of_the_same_values_are_equal_whatever_their_spans() {
        let mut a = Histogram::new();
        let mut b = Histogram::new();
        b.record(1 << 40);
        b.reset();
        for v in [5_000u64, 7_000, 5_000] {
            a.record(v);
            b.record(v);
        }
        assert_ne!(a.counts.len(), b.counts.len(), "b kept its wider span");
        assert_eq!(a, b);
        let mut c = Histogram::new();
        c.merge(&a);
        assert_eq!(c, a);
        b.record(9_000);
        assert_ne!(a, b);
    }

    #[test]
    fn record_n_counts_multiplicity() {
        let mut h = Histogram::new();
        h.record_n(1_000, 99);
        h.record_n(5_000_000, 1);
        h.record_n(7, 0);
        assert_eq!(h.count(), 100);
        // 1000 ps sits in a 4 ps wide bucket [1000, 1004): midpoint 1001.
        assert_eq!(h.percentile(99.0), Some(1_001));
        let p999 = h.percentile(99.9).unwrap();
        assert!(p999.abs_diff(5_000_000) <= 5_000_000 / 256, "{p999}");
        assert_eq!(h.percentile(100.0), Some(5_000_000));
        assert_eq!(h.min(), Some(1_000));
    }

    #[test]
    fn summary_in_microseconds() {
        fn serialisable<T: Serialize + for<'de> Deserialize<'de>>() {}
        serialisable::<Summary>();
        serialisable::<Counter>();
        let mut h = Histogram::new();
        for v in [1_000_000u64, 2_000_000, 3_000_000] {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!(s.count, 3);
        assert_eq!(s.min_us, 1.0);
        assert_eq!(s.avg_us, 2.0);
        assert_eq!(s.max_us, 3.0);
        assert!((s.p50_us - 2.0).abs() <= 2.0 / 256.0);
        assert!((s.p999_us - 3.0).abs() <= 3.0 / 256.0);
    }

    #[test]
    fn counter_basics() {
        let mut c = Counter::new();
        c.inc();
        c.add(41);
        assert_eq!(c.get(), 42);
        c.reset();
        assert_eq!(c, Counter::default());
    }
}
