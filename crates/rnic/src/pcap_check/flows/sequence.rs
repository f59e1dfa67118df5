//! PSN bookkeeping of one packet stream: which PSNs were seen, so a packet is new, fills a
//! hole, or repeats one, and forward jumps are gaps.
//!
//! The highest PSN seen and a window of the 16384 PSNs behind it are kept (2 KiB per stream,
//! whatever the capture's length): RC allows at most 2^23 outstanding PSNs, but a requester
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
    /// One bit per PSN modulo [`WINDOW`]: seen or not, valid for the window behind `last`.
    bits: Vec<u64>,
}

impl Sequence {
    /// Records a packet at `psn` that takes `span` PSNs (`None`: unknown, at least one).
    pub fn see(&mut self, psn: u32, span: Option<u32>) -> Novelty {
        let psn = psn & PSN_MASK;
        if self.bits.is_empty() {
            self.bits = vec![0; (WINDOW / 64) as usize];
        }
        let Some(last) = self.last else {
            self.put(psn, true);
            self.last = Some(psn);
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
        self.put(psn, true);
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
        // span would be a peer's error; it keeps its own mark).
        let upto = if psn_diff(end, last) > 0 { last } else { end };
        let n = psn_diff(upto, psn).max(0) as u32;
        for i in 1..=n {
            let x = psn.wrapping_add(i) & PSN_MASK;
            if psn_diff(last, x).unsigned_abs() < WINDOW {
                self.put(x, true);
            }
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
        for i in 0..count.min(WINDOW) {
            let x = new_last.wrapping_sub(i) & PSN_MASK;
            self.put(x, psn_diff(x, set_from) >= 0);
        }
        self.last = Some(new_last);
    }

    fn slot(psn: u32) -> (usize, u64) {
        let i = psn % WINDOW;
        ((i / 64) as usize, 1u64 << (i % 64))
    }

    fn get(&self, psn: u32) -> bool {
        let (w, b) = Self::slot(psn);
        self.bits.get(w).is_some_and(|x| x & b != 0)
    }

    fn put(&mut self, psn: u32, seen: bool) {
        let (w, b) = Self::slot(psn);
        if let Some(x) = self.bits.get_mut(w) {
            if seen {
                *x |= b;
            } else {
                *x &= !b;
            }
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
}
