//! Pending record table (PRT) of the non-blocking QPC management module (csRNA §4.3.2,
//! Fig. 4a).
//!
//! The PRT records, per QP that has requests waiting in the pending FIFO, how many there are.
//! Finding a QPN in the PRT is what tells the request handling unit that a new request must
//! queue behind older ones of the same QP (Algorithm 1), which is how same-QP order survives
//! out-of-order processing (challenge C2, §3).
//!
//! Entry fields (Fig. 4a): `is_vld`, the QPN tag, `pnd_cnt` (requests of the QP pending in
//! the PF) and `dma_rtn` (the QPC read for this QP has come back, so the QP's remaining
//! Type 2 requests may be served from the cache). It is a CAM: reads and updates look the QPN
//! up; a new entry is written at the address of Formula 1,
//! `address = chnl_num × ooo_cap + index`, where `chnl_num` is the *number of the channel*
//! that sent the creating request (the paper's example — QP3, index 0, channel 0 → address 0
//! — only works with that reading). The table has `3 × ooo_cap` entries. An entry is freed
//! when `pnd_cnt` drops to 0.
//!
//! Two points the paper leaves open, resolved here:
//! * **Formula 1 slot still taken.** An entry lives until the *last* pending request of its
//!   QP is answered, which can be after the creating request was answered and its index
//!   reused by a request of another QP. That request then finds its Formula 1 slot held
//!   (e.g. `ooo_cap = 1`: QP A misses on channel 0 index 0, A again on channel 1, A's read
//!   returns and answers channel 0, channel 0 index 0 now misses on QP B). The entry then
//!   goes to the lowest free slot. A free slot always exists: each valid entry has at least
//!   one pending request, each outstanding request has a distinct (channel, index), and the
//!   request being placed is itself outstanding but not yet pending, so at most
//!   `3 × ooo_cap − 1` entries are valid. Fallbacks are counted.
//! * **Per-pass `blocked` flag (one bit per entry, our addition).** The traversal cursor of
//!   the PF can meet a younger request of a QP while an older one was already checked in
//!   this pass and written back to the online FIFO (it failed because the QP's DMA had not
//!   returned yet; the DMA returned since). Serving the younger one would break same-QP
//!   order, and `pnd_cnt`/`dma_rtn` cannot tell. The manager sets `blocked` when an element
//!   of the QP fails its check and the flag is flash-cleared at every PF role swap; it is
//!   stored here as the pass number in which it was set.

use std::collections::HashMap;

use super::types::{Channel, NUM_CHANNELS};

/// One PRT entry (valid entries only are stored; `is_vld` is implied by presence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrtEntry {
    /// QPN tag.
    pub qpn: u32,
    /// Requests of this QP pending in the PF.
    pub pnd_cnt: u16,
    /// The QPC read for this QP has returned (no Type 1 element of the QP is pending).
    pub dma_rtn: bool,
    /// Pass in which an element of this QP last failed a check (see module docs).
    blocked_pass: Option<u64>,
}

impl PrtEntry {
    /// Whether an element of this QP failed a check during PF pass `pass`.
    pub fn is_blocked(&self, pass: u64) -> bool {
        self.blocked_pass == Some(pass)
    }
}

/// Where a new entry went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocation {
    /// Slot written.
    pub slot: usize,
    /// `true` if the Formula 1 slot was taken and the lowest free slot was used.
    pub fallback: bool,
}

/// A PRT operation that could not be done (the table is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrtError {
    /// No free entry.
    Full,
    /// The QPN already has an entry (a QP has at most one).
    AlreadyPresent(u32),
    /// The QPN has no entry.
    NotFound(u32),
    /// `pnd_cnt` would overflow its counter.
    CountOverflow(u32),
}

/// Formula 1 (§4.3.2): the address of the entry created by the request with `index` from
/// channel `channel`.
pub fn formula1_address(channel: Channel, index: u8, ooo_cap: usize) -> usize {
    channel.number() * ooo_cap + usize::from(index)
}

/// The pending record table.
#[derive(Debug, Clone)]
pub struct PendingRecordTable {
    slots: Vec<Option<PrtEntry>>,
    /// CAM: QPN → slot.
    cam: HashMap<u32, usize>,
    ooo_cap: usize,
}

impl PendingRecordTable {
    /// A PRT of `3 × ooo_cap` entries.
    pub fn new(ooo_cap: usize) -> Self {
        let size = NUM_CHANNELS.saturating_mul(ooo_cap);
        PendingRecordTable {
            slots: vec![None; size],
            cam: HashMap::with_capacity(size),
            ooo_cap,
        }
    }

    /// Number of entries (`3 × ooo_cap`).
    pub fn size(&self) -> usize {
        self.slots.len()
    }

    /// Valid entries.
    pub fn occupancy(&self) -> usize {
        self.cam.len()
    }

    /// CAM lookup: the slot holding `qpn`.
    pub fn find(&self, qpn: u32) -> Option<usize> {
        self.cam.get(&qpn).copied()
    }

    /// The entry of `qpn`.
    pub fn get(&self, qpn: u32) -> Option<&PrtEntry> {
        self.find(qpn).and_then(|s| self.slots[s].as_ref())
    }

    /// The entry at `slot` (`None` if invalid or out of range).
    pub fn slot(&self, slot: usize) -> Option<&PrtEntry> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    /// Valid entries with their slots, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &PrtEntry)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// Writes a new entry for `qpn` (`pnd_cnt = 1`, `dma_rtn = false`) at its Formula 1
    /// address, or at the lowest free slot if that one is taken.
    pub fn allocate(
        &mut self,
        qpn: u32,
        channel: Channel,
        index: u8,
    ) -> Result<Allocation, PrtError> {
        if self.cam.contains_key(&qpn) {
            return Err(PrtError::AlreadyPresent(qpn));
        }
        let preferred = formula1_address(channel, index, self.ooo_cap);
        let (slot, fallback) = match self.slots.get(preferred) {
            Some(None) => (preferred, false),
            _ => match self.slots.iter().position(Option::is_none) {
                Some(s) => (s, true),
                None => return Err(PrtError::Full),
            },
        };
        self.slots[slot] = Some(PrtEntry {
            qpn,
            pnd_cnt: 1,
            dma_rtn: false,
            blocked_pass: None,
        });
        self.cam.insert(qpn, slot);
        Ok(Allocation { slot, fallback })
    }

    /// `pnd_cnt += 1`; returns the new count.
    pub fn increment(&mut self, qpn: u32) -> Result<u16, PrtError> {
        let e = self.entry_mut(qpn)?;
        e.pnd_cnt = e
            .pnd_cnt
            .checked_add(1)
            .ok_or(PrtError::CountOverflow(qpn))?;
        Ok(e.pnd_cnt)
    }

    /// `pnd_cnt -= 1`, freeing the entry at 0; returns the entry as it was after the
    /// decrement (so the caller sees `dma_rtn` of a freed entry too).
    pub fn decrement(&mut self, qpn: u32) -> Result<PrtEntry, PrtError> {
        let slot = self.find(qpn).ok_or(PrtError::NotFound(qpn))?;
        let e = self.slots[slot].as_mut().ok_or(PrtError::NotFound(qpn))?;
        e.pnd_cnt = e.pnd_cnt.saturating_sub(1);
        let after = *e;
        if after.pnd_cnt == 0 {
            self.slots[slot] = None;
            self.cam.remove(&qpn);
        }
        Ok(after)
    }

    /// Sets `dma_rtn`; returns the previous value.
    pub fn set_dma_rtn(&mut self, qpn: u32, value: bool) -> Result<bool, PrtError> {
        let e = self.entry_mut(qpn)?;
        Ok(std::mem::replace(&mut e.dma_rtn, value))
    }

    /// Marks `qpn` blocked for the rest of PF pass `pass`.
    pub fn block(&mut self, qpn: u32, pass: u64) -> Result<(), PrtError> {
        self.entry_mut(qpn)?.blocked_pass = Some(pass);
        Ok(())
    }

    fn entry_mut(&mut self, qpn: u32) -> Result<&mut PrtEntry, PrtError> {
        let slot = self.find(qpn).ok_or(PrtError::NotFound(qpn))?;
        self.slots[slot].as_mut().ok_or(PrtError::NotFound(qpn))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula1_matches_the_paper_example() {
        // QP3, index 0, channel 0 → address 0 (§4.3.2).
        assert_eq!(formula1_address(Channel::Descriptor, 0, 16), 0);
        assert_eq!(formula1_address(Channel::Requester, 5, 16), 21);
        assert_eq!(formula1_address(Channel::Responder, 15, 16), 47);
        let mut prt = PendingRecordTable::new(16);
        assert_eq!(prt.size(), 48);
        let a = prt.allocate(3, Channel::Descriptor, 0).unwrap();
        assert_eq!(
            a,
            Allocation {
                slot: 0,
                fallback: false
            }
        );
        assert_eq!(prt.slot(0).unwrap().qpn, 3);
    }

    #[test]
    fn entry_lives_until_pnd_cnt_reaches_zero() {
        let mut prt = PendingRecordTable::new(2);
        prt.allocate(9, Channel::Requester, 1).unwrap();
        assert_eq!(prt.increment(9), Ok(2));
        assert_eq!(prt.set_dma_rtn(9, true), Ok(false));
        assert_eq!(prt.decrement(9).unwrap().pnd_cnt, 1);
        assert_eq!(prt.occupancy(), 1);
        let last = prt.decrement(9).unwrap();
        assert_eq!(last.pnd_cnt, 0);
        assert!(last.dma_rtn);
        assert_eq!(prt.occupancy(), 0);
        assert_eq!(prt.get(9), None);
        assert_eq!(prt.decrement(9), Err(PrtError::NotFound(9)));
    }

    #[test]
    fn taken_formula1_slot_falls_back_to_lowest_free() {
        // ooo_cap = 1: slots 0 (ch0), 1 (ch1), 2 (ch2).
        let mut prt = PendingRecordTable::new(1);
        prt.allocate(100, Channel::Descriptor, 0).unwrap();
        // QP 100 still pending after channel 0's request was answered; channel 0 index 0
        // is reused by QP 200.
        let a = prt.allocate(200, Channel::Descriptor, 0).unwrap();
        assert_eq!(
            a,
            Allocation {
                slot: 1,
                fallback: true
            }
        );
        let b = prt.allocate(300, Channel::Responder, 0).unwrap();
        assert_eq!(
            b,
            Allocation {
                slot: 2,
                fallback: false
            }
        );
        assert_eq!(
            prt.allocate(400, Channel::Requester, 0),
            Err(PrtError::Full)
        );
        assert_eq!(
            prt.allocate(100, Channel::Requester, 0),
            Err(PrtError::AlreadyPresent(100))
        );
        assert_eq!(prt.find(200), Some(1));
    }

    #[test]
    fn blocked_flag_is_per_pass() {
        let mut prt = PendingRecordTable::new(1);
        prt.allocate(1, Channel::Descriptor, 0).unwrap();
        prt.block(1, 4).unwrap();
        assert!(prt.get(1).unwrap().is_blocked(4));
        assert!(!prt.get(1).unwrap().is_blocked(5));
        assert_eq!(prt.block(2, 4), Err(PrtError::NotFound(2)));
    }
}
