//! The prefetch queue (the resource-prefetching paper, §III-A, Fig. 2): a copy of the
//! scheduling queue that runs up to `window` QPs ahead of it.
//!
//! Every QP ID written to the scheduling queue — by a doorbell or by the write-back of a
//! QP that still has work after its visit — is written here too. The prefetcher pops the
//! next ID once fewer than `window` IDs it already popped are still waiting in the
//! scheduling queue, i.e. once that QP is within `window` positions of the scheduling
//! queue's head. If the scheduler reaches an ID before the prefetcher did (window 0, or a
//! burst of pops), the copy is dropped with it: that visit was not prefetched.
//!
//! Pure state, no clock: the scheduler calls [`PrefetchQueue::pushed`] and
//! [`PrefetchQueue::popped`]; the NIC polls [`PrefetchQueue::poll`].

use std::collections::VecDeque;

/// The prefetch queue and its distance to the scheduling queue's head.
#[derive(Debug, Default, Clone)]
pub struct PrefetchQueue {
    /// Mirroring the scheduling queue at all (`nic.prefetch` has a scheduler trigger).
    enabled: bool,
    window: usize,
    /// IDs not yet popped by the prefetcher, in scheduling-queue order.
    pending: VecDeque<u32>,
    /// IDs popped by the prefetcher and still waiting in the scheduling queue.
    ahead: usize,
}

impl PrefetchQueue {
    /// A queue that prefetches QPs within `window` positions of the scheduling queue's head.
    pub fn new(window: u32) -> Self {
        PrefetchQueue {
            enabled: true,
            window: window as usize,
            pending: VecDeque::new(),
            ahead: 0,
        }
    }

    /// Whether the queue mirrors the scheduling queue.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// `qpn` was written to the tail of the scheduling queue.
    pub fn pushed(&mut self, qpn: u32) {
        if self.enabled {
            self.pending.push_back(qpn);
        }
    }

    /// The scheduler popped the head of the scheduling queue.
    pub fn popped(&mut self) {
        if !self.enabled {
            return;
        }
        if self.ahead > 0 {
            self.ahead -= 1;
        } else {
            // The scheduler got there first: this visit goes without prefetch.
            self.pending.pop_front();
        }
    }

    /// The next QP to prefetch, if one is within the window of the scheduling queue's head.
    pub fn poll(&mut self) -> Option<u32> {
        if !self.enabled || self.ahead >= self.window {
            return None;
        }
        let q = self.pending.pop_front()?;
        self.ahead += 1;
        Some(q)
    }

    /// IDs in the scheduling queue this queue mirrors (popped by the prefetcher or not).
    pub fn mirrored(&self) -> usize {
        self.ahead + self.pending.len()
    }
}

impl crate::nic::ports::SchedQueueMirror for PrefetchQueue {
    fn pushed(&mut self, qpn: u32) {
        PrefetchQueue::pushed(self, qpn);
    }

    fn popped(&mut self) {
        PrefetchQueue::popped(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_only_within_the_window_of_the_head() {
        let mut q = PrefetchQueue::new(2);
        for i in 0..5 {
            q.pushed(i);
        }
        assert_eq!(q.poll(), Some(0));
        assert_eq!(q.poll(), Some(1));
        assert_eq!(q.poll(), None, "two ahead of the head already");
        q.popped(); // scheduler takes 0
        assert_eq!(q.poll(), Some(2));
        assert_eq!(q.mirrored(), 4);
    }

    #[test]
    fn window_zero_never_prefetches_and_stays_in_step() {
        let mut q = PrefetchQueue::new(0);
        q.pushed(7);
        q.pushed(8);
        assert_eq!(q.poll(), None);
        q.popped();
        q.popped();
        assert_eq!(q.mirrored(), 0);
    }

    #[test]
    fn disabled_queue_holds_nothing() {
        let mut q = PrefetchQueue::default();
        q.pushed(1);
        q.popped();
        assert_eq!(q.poll(), None);
        assert_eq!(q.mirrored(), 0);
    }
}
