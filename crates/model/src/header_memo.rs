//! The headers of recently received frames, as [`peek_roce`] read them, so that the stages of
//! a NIC's receive path (port, QPC, translation, transport) read a frame's header chain once
//! instead of once each.
//!
//! Why a small direct-mapped table instead of one entry per frame slot: the frame pool grows
//! to a million slots when RDMA CM sends every connection's REQ at once, and an entry per
//! slot would add about a hundred bytes to each for good. A frame is on a receive path for a
//! few events, so a few hundred entries keep almost every frame until its last stage reads
//! it; a frame whose entry was taken by another is simply read again. The table only saves
//! work: what it returns is always what [`peek_roce`] returns for the frame's bytes now
//! (the pool forgets a slot's entry whenever the slot's bytes may change).

use rnic_wire::{peek_roce, RoceHeaders, WireError};

/// Entries in the table (a power of two: a slot's entry is `slot % MEMO_ENTRIES`).
const MEMO_ENTRIES: usize = 256;

/// A direct-mapped table of frame slot → the headers read from its bytes.
#[derive(Debug, Default)]
pub struct HeaderMemo {
    /// The slot whose headers each entry holds ([`NO_SLOT`]: none). Empty until the first
    /// read (most pools never read a RoCE frame's headers).
    slots: Vec<u32>,
    /// The headers of `slots[i]` (kept apart from the tags, so that a hit copies them once).
    headers: Vec<RoceHeaders>,
}

/// The tag of an empty entry (no frame pool holds `u32::MAX` slots).
const NO_SLOT: u32 = u32::MAX;

impl HeaderMemo {
    /// The headers of slot `slot`, whose bytes are `bytes`: remembered, or read and
    /// remembered. An error is not remembered (the frame is dropped and never read again).
    /// Returned by reference: the stages read a field or two, and a copy of the whole
    /// headers cost more than the lookup.
    pub fn read(&mut self, slot: u32, bytes: &[u8]) -> Result<&RoceHeaders, WireError> {
        let at = slot as usize % MEMO_ENTRIES;
        if self.slots.get(at) != Some(&slot) {
            let h = peek_roce(bytes)?;
            if self.slots.is_empty() {
                self.slots = vec![NO_SLOT; MEMO_ENTRIES];
                self.headers = vec![h; MEMO_ENTRIES];
            }
            self.slots[at] = slot;
            self.headers[at] = h;
        }
        Ok(&self.headers[at])
    }

    /// The headers of slot `slot` if remembered (after a successful [`HeaderMemo::read`]
    /// of the slot's current bytes, unless another slot took the entry since).
    pub fn remembered(&self, slot: u32) -> Option<&RoceHeaders> {
        let at = slot as usize % MEMO_ENTRIES;
        (self.slots.get(at) == Some(&slot)).then(|| &self.headers[at])
    }

    /// Forgets slot `slot`'s headers: its bytes are about to change (or the slot is reused).
    #[inline]
    pub fn forget(&mut self, slot: u32) {
        if let Some(s) = self.slots.get_mut(slot as usize % MEMO_ENTRIES) {
            if *s == slot {
                *s = NO_SLOT;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::{BthRepr, FrameAddr, FrameRepr, Opcode, RoceRepr};

    /// A SEND ONLY frame of `payload_bytes` to QP 17 with PSN `psn`.
    fn frame(psn: u32, payload_bytes: usize) -> Vec<u8> {
        let payload = vec![1u8; payload_bytes];
        let bth = BthRepr {
            opcode: Opcode::RcSendOnly,
            solicited: false,
            mig_req: true,
            pad_count: ((4 - payload_bytes % 4) % 4) as u8,
            tver: 0,
            pkey: 0xFFFF,
            fecn: false,
            becn: false,
            dest_qp: 17,
            ack_req: true,
            psn,
        };
        let addr = FrameAddr {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: [10, 0, 0, 1],
            dst_ip: [10, 0, 0, 2],
            udp_src_port: 0xC000,
            dscp_ecn: 0,
            ttl: 64,
        };
        let mut buf = Vec::new();
        FrameRepr {
            addr,
            ip_ident: 1,
            roce: RoceRepr::new(bth, &payload),
        }
        .emit(&mut buf);
        buf
    }

    #[test]
    fn a_remembered_read_equals_a_fresh_one() {
        let mut memo = HeaderMemo::default();
        let f = frame(5, 64);
        let first = memo.read(3, &f).unwrap();
        assert_eq!(*first, peek_roce(&f).unwrap());
        // Remembered: other bytes under the same slot still read as the first frame's.
        let g = frame(6, 64);
        assert_eq!(memo.read(3, &g).unwrap().bth.psn, 5);
        // Forgotten: read again.
        memo.forget(3);
        assert_eq!(memo.read(3, &g).unwrap().bth.psn, 6);
    }

    #[test]
    fn slots_sharing_an_entry_do_not_see_each_other() {
        let mut memo = HeaderMemo::default();
        let a = frame(1, 8);
        let b = frame(2, 8);
        let other = 7 + MEMO_ENTRIES as u32;
        assert_eq!(memo.read(7, &a).unwrap().bth.psn, 1);
        assert_eq!(memo.read(other, &b).unwrap().bth.psn, 2);
        assert_eq!(memo.read(7, &a).unwrap().bth.psn, 1);
        // Forgetting a slot leaves another slot's entry alone.
        memo.forget(other);
        assert_eq!(memo.read(7, &b).unwrap().bth.psn, 1);
    }

    #[test]
    fn errors_are_not_remembered() {
        let mut memo = HeaderMemo::default();
        let f = frame(9, 8);
        assert!(memo.read(1, &f[..20]).is_err());
        assert!(memo.remembered(1).is_none());
        assert_eq!(memo.read(1, &f).unwrap().bth.psn, 9);
        assert_eq!(memo.remembered(1).map(|h| h.bth.psn), Some(9));
    }
}
