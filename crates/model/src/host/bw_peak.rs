//! perftest's BW peak: the best rate over any run of consecutive operations of a bandwidth
//! test, from one operation's post to a later one's completion.
//!
//! perftest stamps `tposted[i]` when it posts operation `i` (once per post list: the
//! list's first operation) and `tcompleted[j]` when a CQE brings the completed count to
//! `j + 1` (once per CQE: with `-Q` the CQE's last operation), both indexed over every
//! QP's operations in the order the one thread posts and polls them. Its peak is the least
//! time per operation over every stamped pair `i ≤ j`,
//! `min (tcompleted[j] - tposted[i]) / (j - i + 1)`, which it finds by trying every pair:
//! O(n²) in the operations, minutes at a million of them.
//!
//! rnic keeps the same stamps ([`BwPeak::post`], [`BwPeak::complete`]) and finds the same
//! minimum exactly in O(n log n) ([`least_time_per_op`]): the ratio is the slope from the
//! point `(i, tposted[i])` to the point `(j + 1, tcompleted[j])`, so for each completion the
//! best post lies on the upper convex hull of the posts before it, and a binary search on
//! that hull finds it. Its host has several cores posting and polling at once, so a stamp
//! is not always later than the one recorded before it; the stamps are put in time order
//! first, which is the order perftest's single thread sees, and in which every completion
//! stamp is later than the post stamps of the operations it counts.

use rnic_sim::TimePs;

/// The best run of consecutive operations: `ops` of them, from the first one's post to
/// the last one's completion in `span_ps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeakSpan {
    pub ops: u64,
    pub span_ps: TimePs,
}

impl PeakSpan {
    /// Whether `self` has a shorter time per operation than `o` (exact, no rounding).
    fn faster_than(self, o: PeakSpan) -> bool {
        u128::from(self.span_ps) * u128::from(o.ops) < u128::from(o.span_ps) * u128::from(self.ops)
    }
}

/// One stamp: when, and how many operations it stands for (a post list's, or a CQE's).
/// Kept packed in one word, time in the high bits, so a run of millions of operations costs
/// 8 bytes per post list and per CQE, and sorting the words sorts by time.
#[derive(Debug, Clone, Default)]
struct Stamps {
    words: Vec<u64>,
    /// Stamps that do not pack (a time from 2^52 ps, 75 minutes, on), kept whole.
    wide: Vec<(TimePs, u64)>,
}

/// Bits of a packed word that hold the operations count minus one: post lists and CQE
/// moderation are at most 4096 (`host.post_list`, `host.cq_mod`).
const OPS_BITS: u32 = 12;

impl Stamps {
    fn push(&mut self, at: TimePs, ops: u64) {
        if ops == 0 {
            return;
        }
        if at < 1 << (64 - OPS_BITS) && ops <= 1 << OPS_BITS {
            self.words.push(at << OPS_BITS | (ops - 1));
        } else {
            self.wide.push((at, ops));
        }
    }

    /// Puts the stamps in time order, in place (no copy of millions of them).
    fn sort(&mut self) {
        self.words.sort_unstable();
        self.wide.sort_unstable();
    }

    /// Every stamp as (time, operations), in time order once [`Stamps::sort`] has run: the
    /// packed and the wide stamps merged.
    fn iter(&self) -> impl Iterator<Item = (TimePs, u64)> + '_ {
        let mask = (1u64 << OPS_BITS) - 1;
        let mut packed = self
            .words
            .iter()
            .map(move |w| (w >> OPS_BITS, (w & mask) + 1))
            .peekable();
        let mut wide = self.wide.iter().copied().peekable();
        std::iter::from_fn(move || match (packed.peek(), wide.peek()) {
            (Some(p), Some(w)) if w < p => wide.next(),
            (Some(_), _) => packed.next(),
            (None, _) => wide.next(),
        })
    }
}

/// The post and completion stamps of one bandwidth test's measured operations (no
/// warm-up), recorded only when the peak is asked for: iteration mode without `-N`.
#[derive(Debug, Clone, Default)]
pub struct BwPeak {
    posts: Stamps,
    completions: Stamps,
    /// Set by [`BwPeak::finish`], which frees the stamps.
    best: Option<PeakSpan>,
}

/// The stamps one pair's `iters` operations take, as (post lists, CQEs): one per post list
/// of `post_list` operations, and one per CQE (a signaled WQE every `cq_mod`, the pair's
/// last) and the warm-up's last. The run reserves them up front; the memory estimate counts
/// them.
pub fn stamps_per_pair(iters: u64, post_list: u32, cq_mod: u32) -> (u64, u64) {
    let iters = iters.max(1);
    let posts = iters.div_ceil(u64::from(post_list.max(1)));
    (posts, iters.div_ceil(u64::from(cq_mod.max(1))) + 1)
}

impl BwPeak {
    /// Room for `posts` post lists and `completions` CQEs (more still fit, by growing).
    pub fn with_capacity(posts: u64, completions: u64) -> BwPeak {
        let room = |n: u64| Stamps {
            words: Vec::with_capacity(usize::try_from(n).unwrap_or(0)),
            wide: Vec::new(),
        };
        BwPeak {
            posts: room(posts),
            completions: room(completions),
            best: None,
        }
    }

    /// A post of `ops` operations (one post list) that started at `at`.
    pub fn post(&mut self, at: TimePs, ops: u64) {
        self.posts.push(at, ops);
    }

    /// A CQE, polled at `at`, that reported `ops` more completed operations.
    pub fn complete(&mut self, at: TimePs, ops: u64) {
        self.completions.push(at, ops);
    }

    /// Takes `other`'s stamps into this one's, so they are read as one sequence: the flows
    /// of one side of a test (every client's under `--reversed`) share the link they go
    /// through, and perftest's side numbers all its operations in the order it sees them.
    pub fn absorb(&mut self, other: BwPeak) {
        for (mine, theirs) in [
            (&mut self.posts, other.posts),
            (&mut self.completions, other.completions),
        ] {
            mine.words.extend(theirs.words);
            mine.wide.extend(theirs.wide);
        }
    }

    /// After the run: finds the best run of consecutive operations and frees the stamps.
    pub fn finish(&mut self) {
        self.posts.sort();
        self.completions.sort();
        self.best = least_time_per_op(self.posts.iter(), self.completions.iter());
        self.posts = Stamps::default();
        self.completions = Stamps::default();
    }

    /// The best run of consecutive operations found by [`BwPeak::finish`] (`None`: nothing
    /// completed, or not finished yet).
    pub fn best(&self) -> Option<PeakSpan> {
        self.best
    }
}

/// A point `(operation index, time)` of the hull.
type Point = (i128, i128);

/// `(b - a) × (c - a)`: positive when `a → b → c` turns left.
fn cross(a: Point, b: Point, c: Point) -> i128 {
    (b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0)
}

/// perftest's peak over post stamps `posts` and completion stamps `completions`, each
/// (time, operations) in time order: the least `(completion time - post time) / ops` over
/// every post stamp and every completion stamp at or after its operation, where `ops` counts
/// the operations from the post's first to the completion's last (`j - i + 1`). Exact, in
/// O(n log n). `None` when nothing completed or no pair has a positive span.
pub fn least_time_per_op(
    posts: impl IntoIterator<Item = (TimePs, u64)>,
    completions: impl IntoIterator<Item = (TimePs, u64)>,
) -> Option<PeakSpan> {
    // The upper hull of the post points (i, tposted[i]) with i at most the completed count
    // so far, left to right.
    let mut hull: Vec<Point> = Vec::new();
    let (mut next_post, mut post_index) = (posts.into_iter().peekable(), 0u64);
    let mut completed = 0u64;
    let mut best: Option<PeakSpan> = None;
    for (done_at, ops) in completions {
        completed += ops;
        let j = completed - 1;
        while let Some(&(at, k)) = next_post.peek() {
            if post_index > j {
                break;
            }
            let p: Point = (i128::from(post_index), i128::from(at));
            while hull.len() >= 2 && cross(hull[hull.len() - 2], hull[hull.len() - 1], p) >= 0 {
                hull.pop();
            }
            hull.push(p);
            post_index += k;
            next_post.next();
        }
        let Some(m) = tangent(&hull, (i128::from(completed), i128::from(done_at))) else {
            continue;
        };
        let (i, posted_at) = hull[m];
        let span = i128::from(done_at) - posted_at;
        if span <= 0 {
            continue;
        }
        let cand = PeakSpan {
            ops: (i128::from(completed) - i) as u64,
            span_ps: span as TimePs,
        };
        if best.is_none_or(|b| cand.faster_than(b)) {
            best = Some(cand);
        }
    }
    best
}

/// The hull point from which the slope to `r` (right of every hull point) is least: the
/// slopes fall along the upper hull up to it and rise after, so a binary search finds it.
fn tangent(hull: &[Point], r: Point) -> Option<usize> {
    if hull.is_empty() {
        return None;
    }
    // slope(h[m+1], r) < slope(h[m], r), with positive run lengths on both sides.
    let falls = |m: usize| {
        let (a, b) = (hull[m], hull[m + 1]);
        (r.1 - b.1) * (r.0 - a.0) < (r.1 - a.1) * (r.0 - b.0)
    };
    let (mut lo, mut hi) = (0, hull.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if falls(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// perftest's own search: every post stamp against every completion stamp at or after
    /// its operation.
    fn brute_force(posts: &[(TimePs, u64)], completions: &[(TimePs, u64)]) -> Option<PeakSpan> {
        let mut best: Option<PeakSpan> = None;
        let mut i = 0u64;
        for &(p, k) in posts {
            let mut done = 0u64;
            for &(c, ops) in completions {
                done += ops;
                // The completion counts operation i (done > i) and comes after the post.
                if done > i && c > p {
                    let cand = PeakSpan {
                        ops: done - i,
                        span_ps: c - p,
                    };
                    if best.is_none_or(|b| cand.faster_than(b)) {
                        best = Some(cand);
                    }
                }
            }
            i += k;
        }
        best
    }

    /// The time per operation of a span, as an exact fraction.
    fn ratio(s: Option<PeakSpan>) -> Option<(u128, u128)> {
        s.map(|s| {
            let g = gcd(u128::from(s.span_ps), u128::from(s.ops));
            (u128::from(s.span_ps) / g, u128::from(s.ops) / g)
        })
    }

    fn gcd(a: u128, b: u128) -> u128 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }

    /// Stamps as (time, operations).
    type Stamped = Vec<(TimePs, u64)>;

    /// A run of `n` operations posted in lists of `list` and reported by CQEs of `cq`, each
    /// post `gaps` after the last, each operation done `lat` after its post and a CQE
    /// polled when its last operation is done: stamps as a host would record them.
    fn run(n: u64, list: u64, cq: u64, gaps: &[u64], lat: &[u64]) -> (Stamped, Stamped) {
        let (mut posts, mut done_at) = (Vec::new(), Vec::new());
        let mut t = 0;
        let mut i = 0;
        while i < n {
            let k = list.min(n - i);
            t += gaps[i as usize % gaps.len()];
            posts.push((t, k));
            for o in i..i + k {
                done_at.push(t + 1 + lat[o as usize % lat.len()]);
            }
            i += k;
        }
        // Completions in order of operation, each no earlier than the one before (a CQ).
        for o in 1..done_at.len() {
            done_at[o] = done_at[o].max(done_at[o - 1]);
        }
        let mut completions = Vec::new();
        let mut o = 0;
        while o < n {
            let k = cq.min(n - o);
            completions.push((done_at[(o + k - 1) as usize], k));
            o += k;
        }
        (posts, completions)
    }

    proptest! {
        #[test]
        fn the_hull_finds_what_trying_every_pair_finds(
            n in 1u64..60,
            list in 1u64..5,
            cq in 1u64..5,
            gaps in proptest::collection::vec(0u64..50, 1..8),
            lat in proptest::collection::vec(0u64..400, 1..8),
        ) {
            let (posts, completions) = run(n, list, cq, &gaps, &lat);
            let fast = least_time_per_op(posts.iter().copied(), completions.iter().copied());
            let slow = brute_force(&posts, &completions);
            prop_assert_eq!(ratio(fast), ratio(slow));
        }

        #[test]
        fn stamps_out_of_order_are_put_in_time_order(
            times in proptest::collection::vec(0u64..1000, 1..40),
        ) {
            // Each operation posted at t and completed 100 ps later, recorded in any order.
            let mut peak = BwPeak::default();
            for &t in &times {
                peak.post(t, 1);
            }
            for &t in times.iter().rev() {
                peak.complete(t + 100, 1);
            }
            let mut sorted = times.clone();
            sorted.sort_unstable();
            let posts: Vec<_> = sorted.iter().map(|&t| (t, 1)).collect();
            let completions: Vec<_> = sorted.iter().map(|&t| (t + 100, 1)).collect();
            peak.finish();
            prop_assert_eq!(ratio(peak.best()), ratio(brute_force(&posts, &completions)));
        }
    }

    #[test]
    fn a_steady_run_peaks_at_its_own_rate_and_a_fast_stretch_is_found() {
        // One post every 10 ps, each done 1000 ps later: the best run is all of them.
        let posts: Vec<_> = (0..100).map(|i| (i * 10, 1)).collect();
        let completions: Vec<_> = (0..100).map(|i| (i * 10 + 1000, 1)).collect();
        let best = least_time_per_op(posts.iter().copied(), completions.iter().copied()).unwrap();
        assert_eq!((best.ops, best.span_ps), (100, 1990));
        // Operations 40..60 complete in a burst: posted 400..590, all done at 1000.
        let mut completions = completions;
        for c in &mut completions[40..60] {
            c.0 = 1000;
        }
        completions.sort_unstable();
        let best = least_time_per_op(posts.iter().copied(), completions.iter().copied()).unwrap();
        let brute = brute_force(&posts, &completions).unwrap();
        assert_eq!(ratio(Some(best)), ratio(Some(brute)));
    }

    #[test]
    fn nothing_completed_has_no_peak() {
        assert_eq!(least_time_per_op([(0, 4)], []), None);
        let mut none = BwPeak::default();
        none.finish();
        assert_eq!(none.best(), None);
    }

    #[test]
    fn stamps_beyond_the_packed_range_are_kept_whole() {
        let mut s = Stamps::default();
        let late = 1u64 << 60;
        s.push(late, 1);
        s.push(9, 4096);
        s.push(7, 5000);
        s.push(3, 1);
        s.sort();
        let all: Vec<_> = s.iter().collect();
        assert_eq!(all, vec![(3, 1), (7, 5000), (9, 4096), (late, 1)]);
    }
}
