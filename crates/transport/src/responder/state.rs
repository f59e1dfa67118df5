//! The responder's state, which the QP owns: the receive queue, the open message, the
//! queued responses and the replay table, and the placement rules shared with UC (how they
//! move is [`super`]'s). It imports nothing of the QP, so the QP can hold it without an
//! import loop.

use crate::op::{Pos, ReqKind};
use crate::psn::{psn_diff, PSN_MASK};
use crate::wr::RecvWr;
use rnic_wire::{AethSyndrome, Opcode};
use std::collections::VecDeque;

/// Largest message (and READ) length, 2^31 bytes (IBA).
pub const MAX_MSG_BYTES: u64 = 1 << 31;

/// Byte offset of the payload of `psn` in a message that starts at `start_psn`. The one
/// placement rule of the responder (and of READ responses at the requester); it is also the
/// ORNIC direct-write equation, so out-of-order placement (ORNIC's) reuses it unchanged.
pub fn placement_offset(start_psn: u32, psn: u32, pmtu: u32) -> u64 {
    let packets = (psn.wrapping_sub(start_psn) & PSN_MASK) as u64;
    packets * u64::from(pmtu)
}

/// The SEND or WRITE message being received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenMsg {
    pub kind: ReqKind,
    pub start_psn: u32,
    /// WRITE: RETH of the first packet.
    pub va: u64,
    pub rkey: u32,
    pub dma_len: u32,
    /// Payload bytes received so far.
    pub received: u32,
}

impl OpenMsg {
    /// A `kind` message whose first packet is `start_psn`, nothing received yet (a WRITE's
    /// RETH fields are set by the caller once checked).
    pub(crate) fn starting(kind: ReqKind, start_psn: u32) -> Self {
        OpenMsg {
            kind,
            start_psn,
            va: 0,
            rkey: 0,
            dma_len: 0,
            received: 0,
        }
    }
}

/// Whether a SEND or WRITE payload of `plen` bytes fits its packet's position (rxe
/// check_length): FIRST and MIDDLE carry exactly `pmtu`, LAST 1 to `pmtu`, ONLY up to `pmtu`.
pub(crate) fn payload_fits(pos: Pos, plen: u64, pmtu: u64) -> bool {
    match pos {
        Pos::First | Pos::Middle => plen == pmtu,
        Pos::Only => plen <= pmtu,
        Pos::Last => plen >= 1 && plen <= pmtu,
    }
}

/// A READ or atomic kept for duplicate replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplayEntry {
    Read {
        first_psn: u32,
        npkts: u32,
        va: u64,
        rkey: u32,
        len: u32,
        msn: u32,
    },
    Atomic {
        psn: u32,
        orig: u64,
        msn: u32,
    },
}

/// READ response packets still to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadResp {
    pub next_psn: u32,
    pub va: u64,
    pub remaining: u32,
    pub rkey: u32,
    pub msn: u32,
    pub replay: bool,
    /// First PSN and packet count of the READ as first received: a replay from the middle
    /// takes each packet's opcode from its position in the original READ, so a duplicate
    /// response is identical to the original (IBA 9.7.5.1; rxe replays the same way).
    pub read_first_psn: u32,
    pub read_npkts: u32,
}

/// The opcode of READ response packet `i` of an `n`-packet READ: FIRST only at the READ's
/// first PSN, ONLY only for a one-packet READ.
pub(crate) fn read_response_opcode(i: u32, n: u32) -> Opcode {
    match Pos::of(i, n) {
        Pos::Only => Opcode::RcReadResponseOnly,
        Pos::First => Opcode::RcReadResponseFirst,
        Pos::Middle => Opcode::RcReadResponseMiddle,
        Pos::Last => Opcode::RcReadResponseLast,
    }
}

/// One queued response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RespItem {
    Ack {
        psn: u32,
        msn: u32,
    },
    Nak {
        psn: u32,
        msn: u32,
        syndrome: AethSyndrome,
    },
    AtomicAck {
        psn: u32,
        msn: u32,
        orig: u64,
        replay: bool,
    },
    Read(ReadResp),
}

/// Responder state of one QP.
#[derive(Debug, Default)]
pub(crate) struct Responder {
    /// Expected PSN.
    pub epsn: u32,
    /// The PSN a duplicate SEND or WRITE is re-ACKed at: the last SEND/WRITE packet or atomic
    /// executed. READs do not move it (rxe's `ack_psn`): an ACK at a READ's PSN would tell
    /// the requester the READ's responses were lost.
    pub ack_psn: u32,
    /// Message sequence number: requests completed (24 bit).
    pub msn: u32,
    /// A sequence-error or RNR NAK was sent for `epsn`; drop later out-of-order packets.
    pub nak_sent: bool,
    pub resp_q: VecDeque<RespItem>,
    /// What only some traffic touches, allocated on first use (see [`RespCold`]).
    cold: Option<Box<RespCold>>,
}

/// The responder state most QPs never touch: the receive queue (SEND traffic), the message
/// being received (multi-packet SENDs and WRITEs), the replay table (READs and atomics) and
/// the UC/UD count. Out of line, boxed on first use, so a QP that only takes single-packet
/// WRITEs (a million of them at `-t 1`) carries one pointer instead of 104 bytes.
#[derive(Debug, Default)]
pub(crate) struct RespCold {
    pub rq: VecDeque<RecvWr>,
    pub open: Option<OpenMsg>,
    pub replay: VecDeque<ReplayEntry>,
    /// UC/UD: messages received whole (the receiver's count of what arrived).
    pub msgs_received: u64,
    /// The shared receive queue the QP takes its receives from (see `srq.rs`).
    pub srq: Option<crate::SrqId>,
    /// What the READ requests since the NIC last asked did to the queued READ response
    /// data (see [`ReadBytes`]).
    pub read_bytes: ReadBytes,
}

/// How the READ response data a responder has queued changed since the NIC last asked
/// ([`crate::Device::take_read_bytes`]): a NIC that fetches READ response data from host
/// memory ahead of sending it reads what was queued, and forgets what was abandoned.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadBytes {
    /// Payload bytes of the READ responses queued, new or replayed; `None` if no READ was
    /// queued (the request was refused: its NAK carries no data to read), `Some(0)` for a
    /// zero-length READ.
    pub queued: Option<u64>,
    /// Payload bytes of queued responses a duplicate READ abandoned (see
    /// [`Responder::abandon_from`]).
    pub abandoned: u64,
}

/// The receive queue and replay table of a responder that has none yet.
static NO_RECVS: VecDeque<RecvWr> = VecDeque::new();
static NO_REPLAY: VecDeque<ReplayEntry> = VecDeque::new();

impl Responder {
    pub(crate) fn clear_progress(&mut self) {
        self.nak_sent = false;
        if let Some(c) = &mut self.cold {
            c.open = None;
            c.replay = VecDeque::new();
        }
        self.resp_q = VecDeque::new();
    }

    /// The cold part, allocated now if it is not yet.
    pub(crate) fn cold_mut(&mut self) -> &mut RespCold {
        self.cold.get_or_insert_with(Box::default)
    }

    /// The receive queue.
    pub(crate) fn rq(&self) -> &VecDeque<RecvWr> {
        self.cold.as_ref().map_or(&NO_RECVS, |c| &c.rq)
    }

    /// The shared receive queue the QP takes its receives from, if any.
    pub(crate) fn srq(&self) -> Option<crate::SrqId> {
        self.cold.as_ref()?.srq
    }

    /// Takes the oldest RECV, if any (allocates nothing).
    pub(crate) fn rq_pop(&mut self) -> Option<RecvWr> {
        self.cold.as_mut()?.rq.pop_front()
    }

    /// The SEND or WRITE message being received.
    pub(crate) fn open(&self) -> Option<OpenMsg> {
        self.cold.as_ref()?.open
    }

    /// Sets (or with `None` closes) the message being received; closing allocates nothing.
    pub(crate) fn set_open(&mut self, open: Option<OpenMsg>) {
        match (open, &mut self.cold) {
            (None, None) => {}
            (_, Some(c)) => c.open = open,
            (Some(_), None) => self.cold_mut().open = open,
        }
    }

    /// Closes the message being received; returns it.
    pub(crate) fn take_open(&mut self) -> Option<OpenMsg> {
        self.cold.as_mut()?.open.take()
    }

    /// READs and atomics kept for duplicate replay.
    pub(crate) fn replay(&self) -> &VecDeque<ReplayEntry> {
        self.cold.as_ref().map_or(&NO_REPLAY, |c| &c.replay)
    }

    /// UC/UD: messages received whole.
    pub(crate) fn msgs_received(&self) -> u64 {
        self.cold.as_ref().map_or(0, |c| c.msgs_received)
    }

    /// Queues a cumulative ACK, replacing an ACK still waiting at the tail.
    pub(crate) fn push_ack(&mut self, psn: u32, msn: u32) {
        if let Some(RespItem::Ack { psn: p, msn: m }) = self.resp_q.back_mut() {
            *p = psn;
            *m = msn;
        } else {
            if self.resp_q.capacity() == 0 {
                // Usually one ACK waits: room for one first (a VecDeque's first growth
                // takes 4, 160 bytes, on every QP that ever answered).
                self.resp_q.reserve_exact(1);
            }
            self.resp_q.push_back(RespItem::Ack { psn, msn });
        }
    }

    /// A duplicate READ at `psn` arrived: forgets every queued response that answers a
    /// request at `psn` or later (READ response packets, ACKs, atomic ACKs, NAKs), keeping
    /// those of earlier PSNs in their order; a READ whose unsent packets straddle `psn`
    /// keeps those before it. The READ response payload bytes forgotten are added to
    /// `abandoned_read_bytes`, for the NIC.
    ///
    /// Why all of them: a duplicate READ means the requester went back to `psn` (IBA
    /// 9.7.5.1.1 lets the responder stop the responses in progress and answer the
    /// duplicate; rxe makes the duplicate's resource the current one). Its go-back-N asks
    /// again for every request from `psn` on, and it accepts nothing before the response at
    /// `psn`: whatever is queued for later PSNs would be dropped as out of sequence, or (an
    /// ACK or atomic ACK past an unanswered READ) taken as an implicit NAK and make it go
    /// back once more. Each request is answered again as its duplicate arrives: a READ
    /// replayed, an atomic from the replay table, a SEND or WRITE re-ACKed.
    pub(crate) fn abandon_from(&mut self, psn: u32, pmtu: u32) {
        let at_or_after = |q: u32| psn_diff(q, psn) >= 0;
        let mut bytes = 0u64;
        self.resp_q.retain_mut(|item| match item {
            RespItem::Ack { psn: q, .. }
            | RespItem::Nak { psn: q, .. }
            | RespItem::AtomicAck { psn: q, .. } => !at_or_after(*q),
            RespItem::Read(r) => {
                if at_or_after(r.next_psn) {
                    bytes += u64::from(r.remaining);
                    return false;
                }
                // Packets before `psn` stay; those from `psn` on go.
                let keep = (psn_diff(psn, r.next_psn) as u64).saturating_mul(u64::from(pmtu));
                if keep < u64::from(r.remaining) {
                    bytes += u64::from(r.remaining) - keep;
                    r.remaining = keep as u32;
                }
                true
            }
        });
        if bytes > 0 {
            self.cold_mut().read_bytes.abandoned += bytes;
        }
    }

    /// Queues READ response `r` (a new READ or a replay) and counts its bytes for the NIC.
    pub(crate) fn queue_read(&mut self, r: ReadResp) {
        self.resp_q.push_back(RespItem::Read(r));
        let queued = &mut self.cold_mut().read_bytes.queued;
        *queued = Some(queued.unwrap_or(0) + u64::from(r.remaining));
    }

    /// What READ requests did to the queued READ response data since the last call.
    pub(crate) fn take_read_bytes(&mut self) -> ReadBytes {
        self.cold
            .as_mut()
            .map_or_else(ReadBytes::default, |c| std::mem::take(&mut c.read_bytes))
    }

    /// Keeps `entry` for duplicate replay, recycling the oldest entry when `capacity` are
    /// kept.
    pub(crate) fn remember(&mut self, entry: ReplayEntry, capacity: usize) {
        let replay = &mut self.cold_mut().replay;
        while replay.len() >= capacity.max(1) {
            replay.pop_front();
        }
        replay.push_back(entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cold_part_is_allocated_only_by_what_needs_it() {
        let mut r = Responder::default();
        // What a single-packet WRITE does: close a message that was never open, look for a
        // RECV; and an error's clean-up.
        r.set_open(None);
        assert_eq!(
            (r.take_open(), r.rq_pop(), r.msgs_received()),
            (None, None, 0)
        );
        assert!(r.rq().is_empty() && r.replay().is_empty());
        r.clear_progress();
        assert!(r.cold.is_none());
        // A multi-packet message opens it, and it stays (no allocation per message).
        let o = OpenMsg {
            kind: ReqKind::Write,
            start_psn: 5,
            va: 0x1000,
            rkey: 7,
            dma_len: 8192,
            received: 4096,
        };
        r.set_open(Some(o));
        assert_eq!(r.open(), Some(o));
        assert_eq!(r.take_open(), Some(o));
        assert!(r.cold.is_some() && r.open().is_none());
    }

    #[test]
    fn placement_is_psn_offset_times_pmtu() {
        assert_eq!(placement_offset(10, 10, 1024), 0);
        assert_eq!(placement_offset(10, 13, 1024), 3 * 1024);
        assert_eq!(placement_offset(0xFF_FFFE, 1, 256), 3 * 256);
    }

    #[test]
    fn acks_coalesce_only_at_the_tail() {
        let mut r = Responder::default();
        r.push_ack(1, 1);
        r.push_ack(2, 1);
        assert_eq!(r.resp_q.len(), 1);
        r.resp_q.push_back(RespItem::AtomicAck {
            psn: 3,
            msn: 2,
            orig: 0,
            replay: false,
        });
        r.push_ack(4, 3);
        r.push_ack(5, 4);
        assert_eq!(
            r.resp_q.iter().copied().collect::<Vec<_>>(),
            vec![
                RespItem::Ack { psn: 2, msn: 1 },
                RespItem::AtomicAck {
                    psn: 3,
                    msn: 2,
                    orig: 0,
                    replay: false
                },
                RespItem::Ack { psn: 5, msn: 4 },
            ]
        );
    }

    #[test]
    fn replay_table_is_bounded() {
        let mut r = Responder::default();
        for psn in 0..10 {
            r.remember(
                ReplayEntry::Atomic {
                    psn,
                    orig: 0,
                    msn: psn,
                },
                4,
            );
        }
        assert_eq!(r.replay().len(), 4);
        assert_eq!(
            r.replay().front(),
            Some(&ReplayEntry::Atomic {
                psn: 6,
                orig: 0,
                msn: 6
            })
        );
    }
}
