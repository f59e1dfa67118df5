//! Pending FIFO (PF) of the non-blocking QPC management module (csRNA §4.3.1, Fig. 4c).
//!
//! The PF holds QPC requests that cannot be answered yet:
//! * **Type 1** (`dma_posted = 1`): the QPC missed in the cache and a DMA read is posted;
//!   the element waits for that read.
//! * **Type 2** (`dma_posted = 0`): the QP has older pending requests; the element waits only
//!   for same-QP order and is answered once it is the QP's oldest and the QPC is cached.
//!
//! Hardware shape (as in the paper): two FIFOs of equal size and two registers,
//! `online_fifo` and `offline_fifo`, naming their roles. Four interfaces:
//! * ❶ [`push_request`](PendingFifo::push_request) — input of the **offline** FIFO: new
//!   elements (and Type 2 elements just converted into Type 1, Algorithm 2).
//! * ❷ [`pop_return`](PendingFifo::pop_return) — output for a returning DMA response: the
//!   Type 1 element it belongs to.
//! * ❸ [`push_checked`](PendingFifo::push_checked) — input of the **online** FIFO: an
//!   element popped by ❹ that failed its check (a Type 1 element, or a Type 2 element that
//!   still depends on an older request of its QP).
//! * ❹ [`pop_check`](PendingFifo::pop_check) — output of the **offline** FIFO: the next
//!   element to check during the idle-time traversal.
//!
//! # How the roles and the swap are interpreted
//!
//! The paper gives the ports but not the swap rule. We read the pair as **one logical queue
//! `L = online ++ offline`** with a traversal cursor at the boundary:
//! * the online FIFO holds the elements already checked in the current traversal pass (in
//!   the order they were checked), the offline FIFO those not yet checked;
//! * ❹ pops the head of the offline part and ❸ appends to the tail of the online part, so a
//!   check moves the cursor by one element and never changes the order of `L`;
//! * ❶ appends to the tail of `L` (the offline FIFO's input is the tail of `L`);
//! * when ❹ finds the offline FIFO empty — every element has been checked once, the pass is
//!   complete — the registers swap: the online FIFO, now holding all of `L`, becomes the
//!   offline FIFO of the next pass and the empty one becomes online. `L` is unchanged.
//!   [`pass`](PendingFifo::pass) counts swaps; the manager uses it to reset per-pass state.
//!
//! Consequences the manager relies on:
//! * **Type 1 elements stay in DMA issue order in `L`.** Every DMA read is posted together
//!   with a ❶ append at the tail of `L` (a request-unit miss, or a Type 2 → Type 1
//!   conversion), and no other operation reorders `L`. DMA responses return in issue order
//!   (§4.3.4), so a response always belongs to the **first Type 1 element of `L`**: ❷
//!   removes the first Type 1 element of the online FIFO, or of the offline FIFO when the
//!   online FIFO holds none (the oldest DMA's element has then not been traversed yet).
//!   Type 2 elements in front of it stay where they are. (Algorithm 2 as printed pops the
//!   online head and, if it is Type 2, checks it and writes it back to the online tail;
//!   that rotation can move an element of a QP behind a younger element of the same QP and
//!   break per-QP order, so ❷ here does not move Type 2 elements.)
//! * **Each FIFO is sized to hold every pending element**: at a swap all of `L` sits in one
//!   FIFO. Every pending element is an outstanding request with a distinct (channel, index),
//!   so at most `3 × ooo_cap` are pending, and each FIFO has `3 × ooo_cap` entries — hence
//!   the paper's total of `2 × 3 × ooo_cap` elements (§4.3.1).

use std::collections::VecDeque;

use super::types::{Channel, NUM_CHANNELS};

/// One PF element (Fig. 4c): QPN, channel number, index and the `dma_posted` bit, plus the
/// request's read/write flag and a simulation-only acceptance sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PendingElement {
    /// Queue pair number.
    pub qpn: u32,
    /// Requesting channel.
    pub channel: Channel,
    /// Requester index.
    pub index: u8,
    /// `true`: Type 1 (DMA read posted); `false`: Type 2 (waiting for same-QP order).
    pub dma_posted: bool,
    /// Read (`false`) or update (`true`) request.
    pub write: bool,
    /// Acceptance order (simulation-only; not a hardware field).
    pub seq: u64,
}

/// A push found its FIFO full; the element is handed back so nothing is lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfFull(pub PendingElement);

/// The pending FIFO pair.
#[derive(Debug, Clone)]
pub struct PendingFifo {
    fifos: [VecDeque<PendingElement>; 2],
    /// Register `online_fifo`; `offline_fifo` is always the other one.
    online: usize,
    fifo_cap: usize,
    swaps: u64,
}

impl PendingFifo {
    /// A PF for out-of-order capacity `ooo_cap`: two FIFOs of `3 × ooo_cap` elements.
    pub fn new(ooo_cap: usize) -> Self {
        Self::with_fifo_capacity(NUM_CHANNELS.saturating_mul(ooo_cap))
    }

    /// A PF whose two FIFOs hold `fifo_cap` elements each.
    pub fn with_fifo_capacity(fifo_cap: usize) -> Self {
        PendingFifo {
            fifos: [
                VecDeque::with_capacity(fifo_cap),
                VecDeque::with_capacity(fifo_cap),
            ],
            online: 0,
            fifo_cap,
            swaps: 0,
        }
    }

    /// Value of the `online_fifo` register (0 or 1).
    pub fn online_fifo(&self) -> usize {
        self.online
    }

    /// Value of the `offline_fifo` register (0 or 1).
    pub fn offline_fifo(&self) -> usize {
        1 - self.online
    }

    /// ❶ Appends a new element at the input of the offline FIFO (the tail of `L`).
    pub fn push_request(&mut self, elem: PendingElement) -> Result<(), PfFull> {
        let off = self.offline_fifo();
        Self::push(&mut self.fifos[off], self.fifo_cap, elem)
    }

    /// ❷ Removes the Type 1 element a DMA response belongs to: the first Type 1 element of
    /// the online FIFO, else of the offline FIFO. `None` if no Type 1 element is pending.
    pub fn pop_return(&mut self) -> Option<PendingElement> {
        let on = self.online;
        let off = self.offline_fifo();
        for f in [on, off] {
            if let Some(pos) = self.fifos[f].iter().position(|e| e.dma_posted) {
                return self.fifos[f].remove(pos);
            }
        }
        None
    }

    /// The element [`pop_return`](Self::pop_return) would remove, without removing it.
    pub fn peek_return(&self) -> Option<&PendingElement> {
        self.iter().find(|e| e.dma_posted)
    }

    /// ❸ Writes an element that failed its check back at the input of the online FIFO.
    pub fn push_checked(&mut self, elem: PendingElement) -> Result<(), PfFull> {
        let on = self.online;
        Self::push(&mut self.fifos[on], self.fifo_cap, elem)
    }

    /// ❹ Pops the next element to check from the offline FIFO. If the offline FIFO is empty
    /// the pass is complete and the roles swap first. `None` only when both are empty.
    pub fn pop_check(&mut self) -> Option<PendingElement> {
        if self.fifos[self.offline_fifo()].is_empty() {
            if self.fifos[self.online].is_empty() {
                return None;
            }
            self.swap_roles();
        }
        let off = self.offline_fifo();
        self.fifos[off].pop_front()
    }

    /// Number of completed passes (role swaps). A new pass starts at each swap.
    pub fn pass(&self) -> u64 {
        self.swaps
    }

    /// Elements pending in both FIFOs.
    pub fn len(&self) -> usize {
        self.fifos[0].len() + self.fifos[1].len()
    }

    /// Whether no element is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements in the online FIFO (already checked in this pass).
    pub fn online_len(&self) -> usize {
        self.fifos[self.online].len()
    }

    /// Elements in the offline FIFO (not yet checked in this pass).
    pub fn offline_len(&self) -> usize {
        self.fifos[self.offline_fifo()].len()
    }

    /// Capacity of each FIFO (`3 × ooo_cap`).
    pub fn fifo_capacity(&self) -> usize {
        self.fifo_cap
    }

    /// Total capacity, both FIFOs (`2 × 3 × ooo_cap`, §4.3.1).
    pub fn capacity(&self) -> usize {
        2 * self.fifo_cap
    }

    /// The logical queue `L`: online FIFO head to tail, then offline FIFO head to tail.
    pub fn iter(&self) -> impl Iterator<Item = &PendingElement> + '_ {
        self.fifos[self.online]
            .iter()
            .chain(self.fifos[self.offline_fifo()].iter())
    }

    fn swap_roles(&mut self) {
        self.online = 1 - self.online;
        self.swaps += 1;
    }

    fn push(
        fifo: &mut VecDeque<PendingElement>,
        cap: usize,
        elem: PendingElement,
    ) -> Result<(), PfFull> {
        if fifo.len() >= cap {
            return Err(PfFull(elem));
        }
        fifo.push_back(elem);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(qpn: u32, dma: bool, seq: u64) -> PendingElement {
        PendingElement {
            qpn,
            channel: Channel::Descriptor,
            index: 0,
            dma_posted: dma,
            write: false,
            seq,
        }
    }

    fn qpns(pf: &PendingFifo) -> Vec<u32> {
        pf.iter().map(|e| e.qpn).collect()
    }

    #[test]
    fn sizes_follow_the_paper() {
        let pf = PendingFifo::new(16);
        assert_eq!(pf.fifo_capacity(), 48);
        assert_eq!(pf.capacity(), 96);
        assert_eq!((pf.online_fifo(), pf.offline_fifo()), (0, 1));
    }

    #[test]
    fn new_elements_enter_offline_and_checked_ones_go_online() {
        let mut pf = PendingFifo::new(1);
        pf.push_request(el(1, true, 0)).unwrap();
        pf.push_request(el(2, false, 1)).unwrap();
        assert_eq!((pf.online_len(), pf.offline_len()), (0, 2));
        let e = pf.pop_check().unwrap();
        assert_eq!(e.qpn, 1);
        pf.push_checked(e).unwrap();
        assert_eq!((pf.online_len(), pf.offline_len()), (1, 1));
        // L order is preserved by a check.
        assert_eq!(qpns(&pf), vec![1, 2]);
    }

    #[test]
    fn swap_happens_when_offline_is_fully_traversed() {
        let mut pf = PendingFifo::new(1);
        for q in 0..3 {
            pf.push_request(el(q, false, u64::from(q))).unwrap();
        }
        for _ in 0..3 {
            let e = pf.pop_check().unwrap();
            pf.push_checked(e).unwrap();
        }
        assert_eq!(pf.pass(), 0);
        assert_eq!(pf.offline_len(), 0);
        let e = pf.pop_check().unwrap();
        assert_eq!(pf.pass(), 1);
        assert_eq!((pf.online_fifo(), pf.offline_fifo()), (1, 0));
        assert_eq!(e.qpn, 0);
        pf.push_checked(e).unwrap();
        assert_eq!(qpns(&pf), vec![0, 1, 2]);
    }

    #[test]
    fn pop_return_takes_first_type1_in_logical_order() {
        let mut pf = PendingFifo::new(2);
        pf.push_request(el(7, false, 0)).unwrap();
        pf.push_request(el(8, true, 1)).unwrap();
        pf.push_request(el(9, true, 2)).unwrap();
        // Nothing checked yet: the first Type 1 is in the offline FIFO.
        assert_eq!(pf.pop_return().unwrap().qpn, 8);
        // Move 7 and 9 to the online FIFO, add a new Type 1 offline.
        let a = pf.pop_check().unwrap();
        pf.push_checked(a).unwrap();
        let b = pf.pop_check().unwrap();
        pf.push_checked(b).unwrap();
        pf.push_request(el(10, true, 3)).unwrap();
        assert_eq!(pf.pop_return().unwrap().qpn, 9);
        assert_eq!(pf.pop_return().unwrap().qpn, 10);
        assert_eq!(pf.pop_return(), None);
        assert_eq!(qpns(&pf), vec![7]);
    }

    #[test]
    fn full_fifo_hands_the_element_back() {
        let mut pf = PendingFifo::with_fifo_capacity(1);
        pf.push_request(el(1, false, 0)).unwrap();
        assert_eq!(
            pf.push_request(el(2, false, 1)),
            Err(PfFull(el(2, false, 1)))
        );
        let e = pf.pop_check().unwrap();
        pf.push_checked(e).unwrap();
        assert_eq!(
            pf.push_checked(el(3, false, 2)),
            Err(PfFull(el(3, false, 2)))
        );
        assert_eq!(pf.len(), 1);
    }

    #[test]
    fn empty_pf_pops_nothing_and_does_not_swap() {
        let mut pf = PendingFifo::new(4);
        assert_eq!(pf.pop_check(), None);
        assert_eq!(pf.pop_return(), None);
        assert_eq!(pf.pass(), 0);
        assert!(pf.is_empty());
    }
}
