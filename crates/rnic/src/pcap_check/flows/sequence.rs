//! PSN bookkeeping of one packet stream: which PSNs were seen, so a packet is new, fills a
//! hole, or repeats one, and forward jumps are gaps.
//!
//! The highest PSN seen and a window of the 16384 PSNs behind it are kept (2 KiB per stream
//! that ever skips or goes back, nothing more for one that never does, whatever the capture's
//! length): RC allows at most 2^23 outstanding PSNs, but a requester
//! never resends further back than its window of unacknowledged packets, which is far
//! smaller in practice. A PSN behind the window counts as repeated.

/// PSNs are 24-bit.
pub(crate) const PSN_MASK: u32 = 0x00FF_FFFF;
const PSN_HALF: i32 = 1 << 23;
const WINDOW: u32 = 1 << 14;

/// What a packet's PSN was to its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Novelty {
    /// Past the highest PSN seen; `skipped` PSNs between were never seen (a gap).
    New { skipped: u32 },
    /// Behind the highest PSN seen but never seen itself: the hole of an earlier gap filled.
    Filled,
    /// Seen before (or too far behind to know).
    Repeated,
}

impl Novelty {
    /// The packet's PSN had not been seen (its payload and message count once).
    pub fn is_first_sight(self) -> bool {
        !matches!(self, Novelty::Repeated)
    }
}

/// Signed distance `a - b` in PSN space (−2^23 ..= 2^23 − 1).
pub fn psn_diff(a: u32, b: u32) -> i32 {
    let d = (a.wrapping_sub(b) & PSN_MASK) as i32;
    if d >= PSN_HALF {
        d - (1 << 24)
    } else {
        d
    }
}

/// The PSNs one stream has shown.
#[derive(Debug, Clone, Default)]
pub struct Sequence {
    /// The highest PSN taken, once a packet was seen.
    last: Option<u32>,
    /// The packet at `last` took an unknown number of PSNs (a READ of unknown span): the next
    /// jump forward is not a gap.
    span_unknown: bool,
    /// While `bits` is empty: the PSNs seen are exactly the `run` ones ending at `last` (at
    /// most [`WINDOW`] counted). Most streams never skip nor go back, and a capture can hold
    /// hundreds of thousands of them, so the bitmap is made only when one does.
    run: u32,
    /// One bit per PSN modulo [`WINDOW`]: seen or not, valid for the window behind `last`;
    /// empty until the stream first leaves its unbroken run.
    bits: Vec<u64>,
}

impl Sequence {
    /// Records a packet at `psn` that takes `span` PSNs (`None`: unknown, at least one).
    pub fn see(&mut self, psn: u32, span: Option<u32>) -> Novelty {
        let psn = psn & PSN_MASK;
        let Some(last) = self.last else {
            self.last = Some(psn);
            self.run = 1;
            self.take_span(psn, span);
            return Novelty::New { skipped: 0 };
        };
        let d = psn_diff(psn, last);
        if d > 0 {
            let skipped = if self.span_unknown { 0 } else { d as u32 - 1 };
            self.advance(psn, psn);
            self.take_span(psn, span);
            return Novelty::New { skipped };
        }
        if d.unsigned_abs() >= WINDOW || self.get(psn) {
            return Novelty::Repeated;
        }
        self.fill(psn, 1, true);
        Novelty::Filled
    }

    /// The packet seen at `psn` with an unknown span (a READ request before the path MTU was
    /// known) takes `span` PSNs: the ones after it count as seen from now on, so a request
    /// re-sent from its middle is a repeat, and a jump past its end is a gap.
    pub fn resolve_span(&mut self, psn: u32, span: u32) {
        let psn = psn & PSN_MASK;
        let Some(last) = self.last else {
            return;
        };
        let end = psn.wrapping_add(span.clamp(1, PSN_MASK >> 1) - 1) & PSN_MASK;
        if psn == last && self.span_unknown {
            // Nothing was seen after it yet: as if its span had been known.
            self.advance(end, psn);
            self.span_unknown = false;
            return;
        }
        // Seen behind the highest PSN: its PSNs up to that one (a later packet within its
        // span would be a peer's error; it keeps its own mark). Only the ones inside the
        // window behind `last` are kept, so no more than it is marked (a span can be 2^23).
        let upto = if psn_diff(end, last) > 0 { last } else { end };
        let n = psn_diff(upto, psn).max(0);
        let first = (psn_diff(last, psn) - WINDOW as i32 + 1).max(1);
        if first <= n {
            self.fill(psn.wrapping_add(first as u32), (n - first + 1) as u32, true);
        }
    }

    /// Marks the PSNs after `psn` that its packet takes.
    fn take_span(&mut self, psn: u32, span: Option<u32>) {
        self.span_unknown = span.is_none();
        if let Some(n) = span.filter(|n| *n > 1) {
            let end = psn.wrapping_add(n.min(PSN_MASK >> 1) - 1) & PSN_MASK;
            self.advance(end, psn);
        }
    }

    /// Moves the highest PSN to `new_last`; the PSNs from `set_from` on count as seen, the
    /// ones before it as not.
    fn advance(&mut self, new_last: u32, set_from: u32) {
        let last = self.last.unwrap_or(new_last);
        let count = psn_diff(new_last, last).max(0) as u32;
        self.last = Some(new_last);
        if self.bits.is_empty() && psn_diff(set_from, last) <= 1 {
            // Nothing skipped: the unbroken run goes on.
            self.run = self.run.saturating_add(count).min(WINDOW);
            return;
        }
        self.make_bits(last);
        // Of the PSNs after `last`, the window's worth nearest `new_last`.
        let k = count.min(WINDOW);
        if k == 0 {
            return;
        }
        let start = new_last.wrapping_sub(k - 1);
        let unseen = psn_diff(set_from, start).clamp(0, k as i32) as u32;
        self.fill(start, unseen, false);
        self.fill(start.wrapping_add(unseen), k - unseen, true);
    }

    /// Makes the bitmap of the unbroken run ending at `last`, if not made yet.
    fn make_bits(&mut self, last: u32) {
        if !self.bits.is_empty() {
            return;
        }
        self.bits = vec![0; (WINDOW / 64) as usize];
        let run = self.run.clamp(1, WINDOW);
        self.fill(last.wrapping_sub(run - 1), run, true);
    }

    fn get(&self, psn: u32) -> bool {
        if self.bits.is_empty() {
            let back = self.last.map_or(-1, |last| psn_diff(last, psn));
            return back >= 0 && (back as u32) < self.run;
        }
        let i = psn % WINDOW;
        self.bits[(i / 64) as usize] & (1u64 << (i % 64)) != 0
    }

    /// Marks `len` PSNs from `start` (at most [`WINDOW`]) as seen or not, a word at a time:
    /// a stream can jump by the whole window on every packet.
    fn fill(&mut self, start: u32, len: u32, seen: bool) {
        if let Some(last) = self.last {
            self.make_bits(last);
        }
        let (mut at, mut left) = (start, len.min(WINDOW));
        while left > 0 {
            let i = at % WINDOW;
            let n = (64 - i % 64).min(left);
            let mask = if n == 64 {
                !0
            } else {
                ((1u64 << n) - 1) << (i % 64)
            };
            let word = &mut self.bits[(i / 64) as usize];
            if seen {
                *word |= mask;
            } else {
                *word &= !mask;
            }
            at = at.wrapping_add(n);
            left -= n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(psns: &[u32]) -> Vec<Novelty> {
        let mut s = Sequence::default();
        psns.iter().map(|p| s.see(*p, Some(1))).collect()
    }

    #[test]
    fn loss_seen_at_the_responder_and_at_the_requester() {
        use Novelty::*;
        // Responder side: 12 lost, 13 and 14 arrive, go-back-N resends 12..14.
        assert_eq!(
            run(&[10, 11, 13, 14, 12, 13, 14, 15]),
            [
                New { skipped: 0 },
                New { skipped: 0 },
                New { skipped: 1 },
                New { skipped: 0 },
                Filled,
                Repeated,
                Repeated,
                New { skipped: 0 }
            ]
        );
        // Requester side: everything sent, 12..14 sent again.
        let r = run(&[10, 11, 12, 13, 14, 12, 13, 14]);
        assert_eq!(r.iter().filter(|n| **n == Repeated).count(), 3);
    }

    #[test]
    fn wraps_at_24_bits() {
        use Novelty::*;
        assert_eq!(
            run(&[0xFF_FFFE, 0xFF_FFFF, 0, 2, 1, 0xFF_FFFF]),
            [
                New { skipped: 0 },
                New { skipped: 0 },
                New { skipped: 0 },
                New { skipped: 1 },
                Filled,
                Repeated
            ]
        );
        assert_eq!(psn_diff(0, 0xFF_FFFF), 1);
        assert_eq!(psn_diff(0xFF_FFFF, 0), -1);
    }

    #[test]
    fn read_spans_and_unknown_spans() {
        let mut s = Sequence::default();
        // A READ of 4 packets at 100 takes 100..103: the next request at 104 is in order,
        // a re-request from 102 is a repeat.
        assert_eq!(s.see(100, Some(4)), Novelty::New { skipped: 0 });
        assert_eq!(s.see(104, Some(1)), Novelty::New { skipped: 0 });
        assert_eq!(s.see(102, Some(2)), Novelty::Repeated);
        // Unknown span: the jump after it is no gap.
        assert_eq!(s.see(105, None), Novelty::New { skipped: 0 });
        assert_eq!(s.see(120, Some(1)), Novelty::New { skipped: 0 });
        assert_eq!(s.see(122, Some(1)), Novelty::New { skipped: 1 });
        // Far behind the window: repeated.
        assert_eq!(
            s.see(122 + WINDOW * 2, Some(1)),
            Novelty::New {
                skipped: WINDOW * 2 - 1
            }
        );
        assert_eq!(s.see(121, Some(1)), Novelty::Repeated);
    }

    /// The plain model of a stream: a set of the PSNs seen (no window, no bitmap).
    #[derive(Default)]
    struct Model {
        last: Option<u32>,
        unknown: bool,
        seen: std::collections::HashSet<u32>,
    }

    impl Model {
        fn see(&mut self, psn: u32, span: Option<u32>) -> Novelty {
            let Some(last) = self.last else {
                self.seen.insert(psn);
                self.last = Some(psn);
                self.span(psn, span);
                return Novelty::New { skipped: 0 };
            };
            let d = psn_diff(psn, last);
            if d > 0 {
                let skipped = if self.unknown { 0 } else { d as u32 - 1 };
                self.advance(psn, psn);
                self.span(psn, span);
                return Novelty::New { skipped };
            }
            if !self.seen.insert(psn) {
                return Novelty::Repeated;
            }
            Novelty::Filled
        }

        fn span(&mut self, psn: u32, span: Option<u32>) {
            self.unknown = span.is_none();
            if let Some(n) = span.filter(|n| *n > 1) {
                self.advance((psn + n - 1) & PSN_MASK, psn);
            }
        }

        fn advance(&mut self, new_last: u32, set_from: u32) {
            let last = self.last.unwrap();
            for i in 1..=psn_diff(new_last, last).max(0) as u32 {
                let x = (last + i) & PSN_MASK;
                if psn_diff(x, set_from) >= 0 {
                    self.seen.insert(x);
                } else {
                    self.seen.remove(&x);
                }
            }
            self.last = Some(new_last);
        }
    }

    /// Streams that wander forwards and back across the 24-bit wrap, with spans of 1 to 3
    /// and unknown ones, read the same as the plain model: whether the bitmap is made lazily
    /// or at once, bit by bit or a word at a time.
    #[test]
    fn agrees_with_the_plain_model() {
        let mut seed = 7u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..300 {
            let (mut s, mut m) = (Sequence::default(), Model::default());
            let mut psn = PSN_MASK - 40;
            for _ in 0..200 {
                psn = (psn + next(12) as u32).wrapping_sub(4) & PSN_MASK;
                let span = [Some(1), Some(1), Some(2), Some(3), None][next(5) as usize];
                assert_eq!(s.see(psn, span), m.see(psn, span), "PSN {psn:#x} {span:?}");
            }
        }
    }

    #[test]
    fn a_stream_that_never_skips_has_no_bitmap() {
        let mut s = Sequence::default();
        for psn in 0..1_000 {
            assert_eq!(s.see(psn, Some(1)), Novelty::New { skipped: 0 });
        }
        assert!(s.bits.is_empty());
        assert_eq!(s.see(500, Some(1)), Novelty::Repeated);
        assert_eq!(s.see(1_000, Some(3)), Novelty::New { skipped: 0 });
        assert!(s.bits.is_empty());
        assert_eq!(s.see(1_600, Some(1)), Novelty::New { skipped: 597 });
        assert_eq!(s.bits.len(), (WINDOW / 64) as usize);
        assert_eq!(s.see(1_002, Some(1)), Novelty::Repeated);
        assert_eq!(s.see(1_003, Some(1)), Novelty::Filled);
    }

    /// Resolving a READ's span marked its PSNs one at a time, up to 2^23 of them: a thousand
    /// READs queued before the path MTU was known took seconds (16,384 took minutes).
    #[test]
    fn resolving_huge_spans_marks_only_the_window() {
        let mut s = Sequence::default();
        for psn in 0..1_000 {
            s.see(psn, None);
        }
        s.see(0x7F_FFFF, None);
        let t = std::time::Instant::now();
        for psn in 0..1_000 {
            s.resolve_span(psn, PSN_MASK);
        }
        let took = t.elapsed();
        assert!(took.as_secs_f64() < 1.0, "{took:?}");
        assert_eq!(s.see(0x7F_FFFF - 5, Some(1)), Novelty::Repeated);
    }
}
