//! The responder of an out-of-order WRITE: direct write by PSN, a receive bitmap, loss
//! detection by OTD and the ACK register-scheduler (sans-IO: `handle_segment` in,
//! `poll_transmit` out).
//!
//! * Placement: `start + (PSN − start PSN) × PMTU`; the start address is learnt from the
//!   first FSpot packet (`addr − (PSN − start PSN) × PMTU`). Before that a Spot packet cannot
//!   be placed and is dropped (the requester resends it). Every write is checked against the
//!   registered region `[mr_base, mr_base + mr_len)`: a packet that would write outside is
//!   dropped and counted, never written.
//! * Loss: a packet at least OTD beyond the head (the first missing PSN) means the head is
//!   lost: one NAK per stuck head, carrying the head block's missing bits.
//! * ACKs: each accepted packet overwrites the QP's ACK register with the head; the
//!   scheduler sends the register once per turn ([`AckPolicy`]); the WQE's completion is
//!   acknowledged at once.

use super::{BitmapDesign, BlockPool, OooSegment, ReceiveBitmap, Recorded};

/// When the responder acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPolicy {
    /// One ACK per data packet (MP-RDMA's ACK clocking).
    PerPacket,
    /// ORNIC's register-scheduler: at most one ACK per turn of `turn_ps`, carrying the
    /// latest head; the completion of the WQE is acknowledged at once.
    Aggregated { turn_ps: u64 },
}

/// Counters of a responder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// Packets whose payload was written.
    pub written_packets: u64,
    /// Packets already received (or of a completed WQE): acknowledged, not written.
    pub duplicates: u64,
    /// Spot packets before the start address was learnt (the requester resends them).
    pub dropped_unplaceable: u64,
    /// Packets that would write outside the region, lie beyond the WQE's Last packet, or
    /// have a payload length no packet of the WQE can have.
    pub dropped_invalid: u64,
    /// Packets the bitmap could not record (beyond its window, or no pool block).
    pub dropped_bitmap: u64,
    /// ACK segments sent.
    pub acks: u64,
    /// Bitmap NAK segments sent.
    pub naks: u64,
}

/// One QP's responder for out-of-order WRITE WQEs.
pub struct OooResponder {
    pmtu: u32,
    block_bits: u32,
    otd: u32,
    policy: AckPolicy,
    mr_base: u64,
    mr_len: u64,
    /// The WQE's first PSN (the PSN after the previous WQE).
    start_psn: u32,
    /// Packets in the current WQE, once its Last packet has been seen.
    wqe_packets: Option<u32>,
    start_addr: Option<u64>,
    design: BitmapDesign,
    nodes: u32,
    bitmap: Box<dyn ReceiveBitmap>,
    msn: u32,
    newest: u32,
    nak_for_head: Option<u32>,
    ack_dirty: bool,
    /// The scheduler turn the dirty ACK register waits for.
    next_turn_ps: Option<u64>,
    out: std::collections::VecDeque<OooSegment>,
    pub stats: ResponderStats,
}

impl OooResponder {
    /// A responder whose WQEs start at `start_psn`, writing only into
    /// `[mr_base, mr_base + mr_len)`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        design: BitmapDesign,
        block_bits: u32,
        nodes: u32,
        otd: u32,
        pmtu: u32,
        policy: AckPolicy,
        mr_base: u64,
        mr_len: u64,
        start_psn: u32,
    ) -> OooResponder {
        OooResponder {
            pmtu,
            block_bits,
            otd,
            policy,
            mr_base,
            mr_len,
            start_psn,
            wqe_packets: None,
            start_addr: None,
            design,
            nodes,
            bitmap: design.build(block_bits, nodes, otd, 2),
            msn: 0,
            newest: 0,
            nak_for_head: None,
            ack_dirty: false,
            next_turn_ps: None,
            out: Default::default(),
            stats: ResponderStats::default(),
        }
    }

    /// WQEs completed (the MSN).
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// A segment arrives; payloads go to `mem` (the bytes of the region, index 0 =
    /// `mr_base`).
    pub fn handle_segment(&mut self, seg: OooSegment, pool: &mut BlockPool, mem: &mut [u8]) {
        let OooSegment::Write {
            psn,
            addr,
            last,
            payload,
        } = seg
        else {
            return;
        };
        let offset = psn.wrapping_sub(self.start_psn);
        if offset >= 1 << 23 {
            // Behind the WQE (an old duplicate, e.g. after a lost completion ACK):
            // acknowledge again, write nothing.
            self.stats.duplicates += 1;
            self.ack_dirty = true;
            if self.policy == AckPolicy::PerPacket {
                self.queue_ack();
            }
            return;
        }
        if self.wqe_packets.is_some_and(|n| offset >= n) {
            // Beyond the WQE's Last packet: a hostile or corrupt PSN.
            self.stats.dropped_invalid += 1;
            return;
        }
        let rel = u64::from(offset) * u64::from(self.pmtu);
        if let Some(a) = addr {
            if self.start_addr.is_none() {
                match a.checked_sub(rel) {
                    Some(s) => self.start_addr = Some(s),
                    None => {
                        self.stats.dropped_invalid += 1;
                        return;
                    }
                }
            }
        }
        let Some(start) = self.start_addr else {
            self.stats.dropped_unplaceable += 1;
            return;
        };
        if payload.len() > self.pmtu as usize || (!last && payload.len() != self.pmtu as usize) {
            self.stats.dropped_invalid += 1;
            return;
        }
        let Some(dst) = start.checked_add(rel) else {
            self.stats.dropped_invalid += 1;
            return;
        };
        let end = dst.checked_add(payload.len() as u64);
        let inside = dst >= self.mr_base
            && end.is_some_and(|e| e <= self.mr_base.saturating_add(self.mr_len))
            && (self.mr_len as usize) <= mem.len();
        if !inside {
            self.stats.dropped_invalid += 1;
            return;
        }
        match self.bitmap.record(offset, pool) {
            Recorded::New { .. } => {
                let at = (dst - self.mr_base) as usize;
                mem[at..at + payload.len()].copy_from_slice(&payload);
                self.stats.written_packets += 1;
            }
            Recorded::Duplicate { .. } => self.stats.duplicates += 1,
            Recorded::OutOfWindow | Recorded::PoolExhausted => {
                self.stats.dropped_bitmap += 1;
                return;
            }
        }
        if last && self.wqe_packets.is_none() {
            self.wqe_packets = Some(offset + 1);
        }
        self.newest = self.newest.max(offset);
        self.ack_dirty = true;
        let head = self.bitmap.head();
        if self.wqe_packets.is_some_and(|n| head >= n) {
            // The completion ACK acknowledges this packet too.
            self.complete(pool);
            return;
        }
        if self.policy == AckPolicy::PerPacket {
            self.queue_ack();
        }
        if self.newest >= head + self.otd && self.nak_for_head != Some(head) {
            self.nak_for_head = Some(head);
            let missing = self.bitmap.missing_mask(self.block_bits, pool);
            self.out.push_back(OooSegment::Nak {
                head: self.start_psn.wrapping_add(head),
                missing,
            });
            self.stats.naks += 1;
        }
    }

    fn queue_ack(&mut self) {
        self.out.push_back(OooSegment::Ack {
            psn: self.start_psn.wrapping_add(self.bitmap.head()),
            msn: self.msn,
            start_learnt: self.start_addr.is_some(),
        });
        self.stats.acks += 1;
        self.ack_dirty = false;
    }

    /// The WQE is whole: bump the MSN, acknowledge at once, start the next WQE after it.
    fn complete(&mut self, pool: &mut BlockPool) {
        let n = self.wqe_packets.take().unwrap_or(0);
        self.msn = self.msn.wrapping_add(1);
        self.bitmap.release(pool);
        self.bitmap = self.design.build(self.block_bits, self.nodes, self.otd, 2);
        let next_start = self.start_psn.wrapping_add(n);
        self.out.push_back(OooSegment::Ack {
            psn: next_start,
            msn: self.msn,
            start_learnt: true,
        });
        self.stats.acks += 1;
        self.ack_dirty = false;
        self.next_turn_ps = None;
        self.start_psn = next_start;
        self.start_addr = None;
        self.newest = 0;
        self.nak_for_head = None;
    }

    /// The next segment to send at `now_ps`: a NAK or the completion ACK at once, the ACK
    /// register once per scheduler turn.
    pub fn poll_transmit(&mut self, now_ps: u64) -> Option<OooSegment> {
        if let Some(s) = self.out.pop_front() {
            return Some(s);
        }
        if let AckPolicy::Aggregated { turn_ps } = self.policy {
            // The scheduler's turns fall on multiples of `turn_ps`: a register written
            // between two turns waits for the next one, however many packets overwrite it.
            if self.ack_dirty {
                let turn = turn_ps.max(1);
                let next = *self
                    .next_turn_ps
                    .get_or_insert_with(|| (now_ps / turn + 1) * turn);
                if now_ps >= next {
                    self.next_turn_ps = None;
                    self.queue_ack();
                    return self.out.pop_front();
                }
            }
        }
        None
    }
}
