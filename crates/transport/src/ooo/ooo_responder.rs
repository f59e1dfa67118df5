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
use crate::psn::PSN_MASK;

/// When the responder acknowledges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPolicy {
    /// One ACK per data packet (MP-RDMA's ACK clocking).
    PerPacket,
    /// ORNIC's register-scheduler: at most one ACK per turn of `turn_ps`, carrying the
    /// latest head; the completion of the WQE is acknowledged at once.
    Aggregated { turn_ps: u64 },
}

/// Where a responder's payloads go: the region check and the write, so the same state
/// machine places into a bench's byte slice or, in the device, into host memory after the
/// memory-region check.
pub trait PlaceTarget {
    /// Whether `len` bytes at `addr` may be written (checked before the bitmap records the
    /// packet, so a refused packet leaves no trace).
    fn allows(&mut self, addr: u64, len: u64) -> bool;
    /// Writes `data` at `addr` (allowed by [`PlaceTarget::allows`] just before).
    fn write(&mut self, addr: u64, data: &[u8]);
}

/// A byte slice holding `[base, base + mem.len())`.
struct SliceTarget<'a> {
    base: u64,
    len: u64,
    mem: &'a mut [u8],
}

impl PlaceTarget for SliceTarget<'_> {
    fn allows(&mut self, addr: u64, len: u64) -> bool {
        let end = addr.checked_add(len);
        addr >= self.base
            && end.is_some_and(|e| e <= self.base.saturating_add(self.len))
            && (self.len as usize) <= self.mem.len()
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        let at = (addr - self.base) as usize;
        self.mem[at..at + data.len()].copy_from_slice(data);
    }
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
    /// Packets in the current WQE, once its Last packet has been seen (or the WQE length an
    /// FSpot carried was learnt with the start address).
    wqe_packets: Option<u32>,
    /// The packet count the WQE length of the FSpot that gave the start address implies.
    wqe_packets_from_len: Option<u32>,
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
            start_psn: start_psn & PSN_MASK,
            wqe_packets: None,
            wqe_packets_from_len: None,
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

    /// Returns the blocks the current WQE's bitmap holds to `pool` (the QP is going away:
    /// reset, error or destroy).
    pub fn release_blocks(&mut self, pool: &mut BlockPool) {
        self.bitmap.release(pool);
    }

    /// WQEs completed (the MSN).
    pub fn msn(&self) -> u32 {
        self.msn
    }

    /// Whether the responder knows the current WQE's start address.
    pub fn start_learnt(&self) -> bool {
        self.start_addr.is_some()
    }

    /// The current WQE's first PSN.
    pub fn start_psn(&self) -> u32 {
        self.start_psn
    }

    /// Where a packet of PSN `psn` of the current WQE would be written,
    /// `start + (PSN − start PSN) × PMTU`, once the start address is learnt; `None` before,
    /// and for a PSN behind the WQE or beyond its known last packet (nothing is written for
    /// those). Reads the state only: the NIC asks it to translate a Spot packet's target
    /// before the packet is handled.
    pub fn place_addr(&self, psn: u32) -> Option<u64> {
        let start = self.start_addr?;
        let offset = psn.wrapping_sub(self.start_psn) & PSN_MASK;
        let known = self.wqe_packets.or(self.wqe_packets_from_len);
        if offset >= 1 << 23 || known.is_some_and(|n| offset >= n) {
            return None;
        }
        start.checked_add(u64::from(offset) * u64::from(self.pmtu))
    }

    /// Whether a segment waits to be sent now (a NAK or completion ACK), or the ACK
    /// register waits for a turn at [`OooResponder::next_turn_ps`].
    pub fn has_queued(&self) -> bool {
        !self.out.is_empty()
    }

    /// When the dirty ACK register is sent (aggregated ACKs), if it waits.
    pub fn next_turn_ps(&self) -> Option<u64> {
        if self.ack_dirty {
            self.next_turn_ps
        } else {
            None
        }
    }

    /// Starts the scheduler turn the dirty ACK register waits for, if none is running
    /// (aggregated ACKs): it falls on the next multiple of the turn after `now_ps`.
    pub fn arm_turn(&mut self, now_ps: u64) {
        if let AckPolicy::Aggregated { turn_ps } = self.policy {
            if self.ack_dirty && self.next_turn_ps.is_none() {
                let turn = turn_ps.max(1);
                self.next_turn_ps = Some((now_ps / turn + 1) * turn);
            }
        }
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
        let mut target = SliceTarget {
            base: self.mr_base,
            len: self.mr_len,
            mem,
        };
        self.handle_write(psn, addr, None, last, &payload, pool, &mut target);
    }

    /// A data packet arrives: placed through `target`, recorded in the bitmap. `wqe_len` is
    /// the WQE length an FSpot carries (its RETH DMA length): learnt with the start address,
    /// it fixes the WQE's packet count, so a Last packet at another PSN is refused instead
    /// of ending the WQE early.
    #[allow(clippy::too_many_arguments)]
    pub fn handle_write(
        &mut self,
        psn: u32,
        addr: Option<u64>,
        wqe_len: Option<u64>,
        last: bool,
        payload: &[u8],
        pool: &mut BlockPool,
        target: &mut dyn PlaceTarget,
    ) {
        let offset = psn.wrapping_sub(self.start_psn) & PSN_MASK;
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
        let known = self.wqe_packets.or(self.wqe_packets_from_len);
        if known.is_some_and(|n| offset >= n)
            || (last && self.wqe_packets_from_len.is_some_and(|n| offset + 1 != n))
        {
            // Beyond the WQE's Last packet, or a Last packet where the WQE's length says it
            // cannot be: a hostile or corrupt PSN.
            self.stats.dropped_invalid += 1;
            return;
        }
        let rel = u64::from(offset) * u64::from(self.pmtu);
        // The start address a packet implies; learnt only once the packet passed every
        // check and was recorded, so a forged or corrupt FSpot cannot poison the WQE.
        let start = match (self.start_addr, addr) {
            (Some(s), _) => s,
            (None, Some(a)) => match a.checked_sub(rel) {
                Some(s) => s,
                None => {
                    self.stats.dropped_invalid += 1;
                    return;
                }
            },
            (None, None) => {
                self.stats.dropped_unplaceable += 1;
                return;
            }
        };
        if payload.len() > self.pmtu as usize || (!last && payload.len() != self.pmtu as usize) {
            self.stats.dropped_invalid += 1;
            return;
        }
        let Some(dst) = start.checked_add(rel) else {
            self.stats.dropped_invalid += 1;
            return;
        };
        if !target.allows(dst, payload.len() as u64) {
            self.stats.dropped_invalid += 1;
            return;
        }
        match self.bitmap.record(offset, pool) {
            Recorded::New { .. } => {
                target.write(dst, payload);
                self.stats.written_packets += 1;
            }
            Recorded::Duplicate { .. } => self.stats.duplicates += 1,
            Recorded::OutOfWindow | Recorded::PoolExhausted => {
                self.stats.dropped_bitmap += 1;
                return;
            }
        }
        if self.start_addr.is_none() {
            self.start_addr = Some(start);
            let pmtu = u64::from(self.pmtu);
            self.wqe_packets_from_len = wqe_len.map(|l| l.div_ceil(pmtu).max(1) as u32);
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
                head: self.start_psn.wrapping_add(head) & PSN_MASK,
                missing,
            });
            self.stats.naks += 1;
        }
    }

    fn queue_ack(&mut self) {
        self.out.push_back(OooSegment::Ack {
            psn: self.start_psn.wrapping_add(self.bitmap.head()) & PSN_MASK,
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
        let next_start = self.start_psn.wrapping_add(n) & PSN_MASK;
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
        self.wqe_packets_from_len = None;
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
