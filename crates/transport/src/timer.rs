//! Protocol timers: the IB RNR timer encoding, the local ACK timeout, and the device-wide
//! deadline heap.
//!
//! Each QP has at most two deadlines (ACK timeout and RNR wait). The device keeps one heap of
//! `(deadline, qpn)` entries with lazy deletion: a QP records the deadline of the entry it
//! currently owns (`armed_ps`). Moving a deadline later does not touch the heap (the old entry
//! is found to be early when it surfaces and is re-pushed with the real deadline); moving it
//! earlier pushes a new entry and orphans the old one. The heap top is cleaned after every
//! mutating call, so [`crate::Device::poll_timeout`] reads an exact deadline in O(1) and each
//! change costs O(log n) amortized, however many QPs exist.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// An optional deadline in ps in 8 bytes, where an `Option<u64>` takes 16: each QP keeps
/// three (ACK timeout, RNR wait, the heap entry it owns), a million QPs on each side.
/// `u64::MAX`, a time no run reaches (and a deadline that could never fire), means none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadline(u64);

impl Deadline {
    /// No deadline.
    pub(crate) const NONE: Deadline = Deadline(u64::MAX);

    /// A deadline at `ps`.
    pub(crate) fn at(ps: u64) -> Deadline {
        Deadline(ps)
    }

    /// The deadline, if there is one.
    pub(crate) fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }

    pub(crate) fn is_some(self) -> bool {
        self.0 != u64::MAX
    }

    pub(crate) fn is_none(self) -> bool {
        self.0 == u64::MAX
    }
}

impl Default for Deadline {
    fn default() -> Deadline {
        Deadline::NONE
    }
}

impl From<Option<u64>> for Deadline {
    fn from(d: Option<u64>) -> Deadline {
        d.map_or(Deadline::NONE, Deadline)
    }
}

/// RNR NAK timer codes 0..=31 in nanoseconds (IBA table 45; code 0 is the longest).
const RNR_TIMER_NS: [u64; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

/// How long a requester waits after an RNR NAK with timer `code` (only the low 5 bits count).
pub fn rnr_timer_ps(code: u8) -> u64 {
    RNR_TIMER_NS[usize::from(code & 0x1F)] * 1000
}

/// Local ACK timeout for the attribute `timeout`: 4.096 µs × 2^timeout; `None` for 0
/// (infinite) and for codes above 31.
pub fn ack_timeout_ps(timeout: u8) -> Option<u64> {
    if timeout == 0 || timeout > 31 {
        None
    } else {
        Some(4_096_000u64 << timeout)
    }
}

/// Device-wide heap of QP deadlines (lazy deletion, see the module docs).
#[derive(Debug, Default)]
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<(u64, u32)>>,
}

impl TimerHeap {
    pub(crate) fn push(&mut self, deadline_ps: u64, qpn: u32) {
        self.heap.push(Reverse((deadline_ps, qpn)));
    }

    pub(crate) fn peek(&self) -> Option<(u64, u32)> {
        self.heap.peek().map(|Reverse(e)| *e)
    }

    pub(crate) fn pop(&mut self) -> Option<(u64, u32)> {
        self.heap.pop().map(|Reverse(e)| e)
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_takes_8_bytes_and_reads_back_as_the_option_it_was_given() {
        assert_eq!(std::mem::size_of::<Deadline>(), 8);
        for d in [None, Some(0), Some(1), Some(4_096_000 << 31)] {
            let x = Deadline::from(d);
            assert_eq!(
                (x.get(), x.is_some(), x.is_none()),
                (d, d.is_some(), d.is_none())
            );
        }
        assert_eq!(Deadline::default(), Deadline::NONE);
        assert_eq!(Deadline::at(7).get(), Some(7));
    }

    #[test]
    fn rnr_table() {
        assert_eq!(rnr_timer_ps(0), 655_360_000_000);
        assert_eq!(rnr_timer_ps(1), 10_000_000);
        assert_eq!(rnr_timer_ps(12), 640_000_000);
        assert_eq!(rnr_timer_ps(31), 491_520_000_000);
        assert_eq!(rnr_timer_ps(33), rnr_timer_ps(1));
        // Codes 1..=31 grow monotonically.
        assert!(RNR_TIMER_NS[1..].windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn ack_timeout() {
        assert_eq!(ack_timeout_ps(0), None);
        assert_eq!(ack_timeout_ps(1), Some(8_192_000));
        assert_eq!(ack_timeout_ps(14), Some(4_096_000 * 16384));
        assert_eq!(ack_timeout_ps(31), Some(4_096_000u64 << 31));
        assert_eq!(ack_timeout_ps(32), None);
    }

    #[test]
    fn heap_is_min_first() {
        let mut h = TimerHeap::default();
        h.push(30, 1);
        h.push(10, 2);
        h.push(10, 1);
        assert_eq!(h.pop(), Some((10, 1)));
        assert_eq!(h.pop(), Some((10, 2)));
        assert_eq!(h.peek(), Some((30, 1)));
        assert_eq!(h.len(), 1);
    }
}
