//! Which RC requests in the receive lane the responder will execute, decided when they are
//! translated. A real NIC checks a request's PSN against the QPC's expected PSN early in its
//! receive pipeline, before it translates and DMA-writes; the model's transport checks it
//! only when the frame is handled, after the translation step. So the NIC predicts the
//! check: the responder will expect the PSN after the in-sequence requests now between the
//! translation step and the transport (each advances it by the PSNs it takes), or, when
//! there are none, the PSN it expects now.
//!
//! A request beyond that PSN is dropped (a sequence error) and a duplicate WRITE or SEND is
//! re-ACKed without placing anything: neither needs a translation. A duplicate READ request
//! is executed again and an atomic answered from the replay table.
//!
//! The prediction assumes every in-sequence request is executed; one that is not (an RNR
//! NAK, a fatal error) leaves it ahead of the transport until the requests behind it have
//! been handled and the lane holds none of the QP's in-sequence requests, when it starts
//! again from the transport's expected PSN.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use rnic_transport::psn::{psn_add, psn_diff};
use rustc_hash::FxHashMap;

/// What the responder will do with a request, as predicted at its translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestFate {
    /// At the expected PSN: executed.
    InSequence,
    /// Behind it: a duplicate (re-ACKed, or a READ or atomic replayed).
    Duplicate,
    /// Beyond it: dropped after at most one sequence-error NAK.
    Beyond,
}

/// An in-sequence request in the lane: its PSN and the PSNs it takes.
#[derive(Debug, Clone, Copy)]
struct Ahead {
    psn: u32,
    span_psns: u32,
}

/// Per RC QP with in-sequence requests in the receive lane, those requests in lane order
/// (an entry exists only while the lane holds some, so idle QPs cost nothing).
#[derive(Debug, Default)]
pub struct RxSequence {
    ahead: FxHashMap<u32, VecDeque<Ahead>>,
    /// Emptied queues kept for reuse, so that a QP entering the lane allocates nothing
    /// once as many QPs have been in it at once before (their number bounds this).
    spare: Vec<VecDeque<Ahead>>,
}

impl RxSequence {
    /// A request of `qpn` with PSN `psn` taking `span_psns` PSNs enters the lane while the
    /// responder expects `expected_psn`: its predicted fate. An in-sequence one is
    /// remembered until [`RxSequence::handled`].
    pub fn admit(&mut self, qpn: u32, psn: u32, span_psns: u32, expected_psn: u32) -> RequestFate {
        let spare = &mut self.spare;
        let queue = self
            .ahead
            .entry(qpn)
            .or_insert_with(|| spare.pop().unwrap_or_default());
        let expected = queue
            .back()
            .map_or(expected_psn, |a| psn_add(a.psn, a.span_psns));
        let d = psn_diff(psn, expected);
        let fate = if d == 0 {
            queue.push_back(Ahead { psn, span_psns });
            RequestFate::InSequence
        } else if d < 0 {
            RequestFate::Duplicate
        } else {
            RequestFate::Beyond
        };
        if queue.is_empty() {
            self.retire(qpn);
        }
        fate
    }

    /// The transport handled request `psn` of `qpn`: if it is the oldest in-sequence one in
    /// the lane, it no longer is ahead.
    pub fn handled(&mut self, qpn: u32, psn: u32) {
        // One probe of the map: the entry found is the one retired.
        let Entry::Occupied(mut entry) = self.ahead.entry(qpn) else {
            return;
        };
        let queue = entry.get_mut();
        if queue.front().is_some_and(|a| a.psn == psn) {
            queue.pop_front();
        }
        if queue.is_empty() {
            self.spare.push(entry.remove());
        }
    }

    /// `qpn` has no in-sequence request in the lane: its emptied queue goes to the spares.
    fn retire(&mut self, qpn: u32) {
        if let Some(queue) = self.ahead.remove(&qpn) {
            self.spare.push(queue);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_ahead_move_the_expected_psn() {
        let mut s = RxSequence::default();
        assert_eq!(s.admit(1, 10, 1, 10), RequestFate::InSequence);
        // A READ of three packets ahead: the next request is expected at 14.
        assert_eq!(s.admit(1, 11, 3, 10), RequestFate::InSequence);
        assert_eq!(s.admit(1, 13, 1, 10), RequestFate::Duplicate);
        assert_eq!(s.admit(1, 15, 1, 10), RequestFate::Beyond);
        assert_eq!(s.admit(1, 14, 1, 10), RequestFate::InSequence);
        s.handled(1, 10);
        s.handled(1, 11);
        s.handled(1, 14);
        assert!(s.ahead.is_empty(), "the lane holds none");
        // Empty again: the transport's expected PSN decides.
        assert_eq!(s.admit(1, 15, 1, 15), RequestFate::InSequence);
    }

    #[test]
    fn the_expected_psn_wraps_at_24_bits() {
        let mut s = RxSequence::default();
        assert_eq!(s.admit(7, 0xFF_FFFF, 1, 0xFF_FFFF), RequestFate::InSequence);
        assert_eq!(s.admit(7, 0, 1, 0xFF_FFFF), RequestFate::InSequence);
        assert_eq!(s.admit(7, 0xFF_FFFE, 1, 0xFF_FFFF), RequestFate::Duplicate);
        assert_eq!(s.admit(7, 2, 1, 0xFF_FFFF), RequestFate::Beyond);
    }

    #[test]
    fn a_request_not_executed_is_forgotten_once_the_lane_drains() {
        // Predicted in sequence, then RNR-NAKed: the transport still expects 5.
        let mut s = RxSequence::default();
        assert_eq!(s.admit(2, 5, 1, 5), RequestFate::InSequence);
        s.handled(2, 5);
        assert_eq!(s.admit(2, 5, 1, 5), RequestFate::InSequence);
    }
}
