//! The requester of an out-of-order WRITE (sans-IO: `post_write`, `handle_segment`,
//! `handle_timeout` in; `poll_transmit`, `poll_timeout`, `poll_completion` out).
//!
//! One outstanding OOO WQE per QP, as the ORNIC paper does: the next WQE is taken only when
//! the previous one completed. Packets carry their write address (FSpot) until an ACK says
//! the responder learnt the start address, then none (Spot); the Last packet ends the WQE.
//! New packets go out while they are within the receive bitmap's width of the cumulative
//! ACK; a bitmap NAK resends exactly the packets it names; a timeout after the latest packet
//! sent, without progress, resends every unacknowledged packet, carrying the address again.
//! The timeout is the paper's RTT + OTD / B until the QP has measured its round trip, and
//! never less; a longer measured round trip stretches it ([`RtoEstimator`]).

use std::collections::VecDeque;

use super::rto::{Retries, RtoEstimator};
use super::OooSegment;
use crate::psn::PSN_MASK;

/// Counters of a requester.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequesterStats {
    /// Data packets sent, resends included.
    pub data_packets: u64,
    /// Data packets sent again (NAK or timeout).
    pub resent_packets: u64,
    /// Data packets that carried their write address (FSpot).
    pub address_carrying: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// WQEs completed.
    pub completions: u64,
}

/// One data packet to send: what the caller needs to build it (the payload is bytes
/// `offset .. offset + len` of the WQE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OooPacket {
    pub psn: u32,
    /// The write address, while the responder has not learnt the start (FSpot).
    pub addr: Option<u64>,
    /// The WQE's last packet.
    pub last: bool,
    /// Byte offset of the payload in the WQE.
    pub offset: u64,
    /// Payload bytes.
    pub len: u32,
    /// Sent before (NAK or timeout resend).
    pub retransmit: bool,
}

/// The WQE in flight.
#[derive(Debug, Clone)]
struct Wqe {
    /// The bytes, when the requester holds them (the benches); `None` when the caller
    /// gathers each payload itself (the device, from host memory).
    data: Option<Vec<u8>>,
    len: u64,
    remote: u64,
    start_psn: u32,
    packets: u32,
    next_new: u32,
    acked: u32,
}

/// One QP's requester for out-of-order WRITE WQEs.
#[derive(Debug)]
pub struct OooRequester {
    pmtu: u32,
    window: u32,
    /// The retransmission timer's length, from the measured round trip.
    rto: RtoEstimator,
    next_psn: u32,
    queue: VecDeque<(Option<Vec<u8>>, u64, u64)>,
    wqe: Option<Wqe>,
    start_learnt: bool,
    resend: VecDeque<u32>,
    deadline_ps: Option<u64>,
    /// Timeouts the WQE in flight may still take without progress.
    retries: Retries,
    done: VecDeque<u32>,
    pub stats: RequesterStats,
}

/// What a call of [`OooRequester::handle_timeout`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerFired {
    /// The timer was not due, or nothing was in flight.
    NotDue,
    /// Every packet sent and not acknowledged is queued to be sent again.
    Resend,
    /// The WQE took `retry_cnt` timeouts without progress and one more: the peer is gone.
    /// Nothing is resent; the QP fails the WQE with RETRY_EXC_ERR, as a go-back-N QP does.
    RetriesExhausted,
}

impl OooRequester {
    /// A requester sending `pmtu`-byte packets, at most `window` PSNs beyond the cumulative
    /// ACK (the receive bitmap's width), resending after `timeout_ps` without progress, or
    /// after the measured round trip and `margin_ps` when that is longer.
    pub fn new(
        pmtu: u32,
        window: u32,
        (timeout_ps, margin_ps): (u64, u64),
        start_psn: u32,
    ) -> OooRequester {
        OooRequester {
            pmtu: pmtu.max(1),
            window: window.max(1),
            rto: RtoEstimator::new(timeout_ps, margin_ps),
            next_psn: start_psn & PSN_MASK,
            queue: VecDeque::new(),
            wqe: None,
            start_learnt: false,
            resend: VecDeque::new(),
            deadline_ps: None,
            retries: Retries::unlimited(),
            done: VecDeque::new(),
            stats: RequesterStats::default(),
        }
    }

    /// Fails a WQE after `retry_cnt` timeouts in a row without progress and one more (the
    /// QP's retry count, as a go-back-N QP counts its timeouts), instead of resending for
    /// ever: over a path that delivers nothing a run would otherwise never end.
    pub fn with_retry_cnt(mut self, retry_cnt: u8) -> OooRequester {
        self.retries = Retries::limited(retry_cnt);
        self
    }

    /// Posts an OOO WRITE of `data` to remote address `remote`.
    pub fn post_write(&mut self, data: Vec<u8>, remote: u64) {
        let len = data.len() as u64;
        self.queue.push_back((Some(data), len, remote));
    }

    /// Posts an OOO WRITE of `len` bytes to remote address `remote` whose payloads the
    /// caller supplies ([`OooRequester::poll_packet`]).
    pub fn post_len(&mut self, len: u64, remote: u64) {
        self.queue.push_back((None, len, remote));
    }

    /// The PSN the next WQE starts at (after the one in flight completes).
    pub fn next_psn(&self) -> u32 {
        self.next_psn
    }

    /// A completed WQE's MSN-ordered index (0, 1, ...), once.
    pub fn poll_completion(&mut self) -> Option<u32> {
        self.done.pop_front()
    }

    /// Whether nothing is posted or in flight.
    pub fn idle(&self) -> bool {
        self.wqe.is_none() && self.queue.is_empty()
    }

    fn start_next(&mut self) {
        if self.wqe.is_some() {
            return;
        }
        if let Some((data, len, remote)) = self.queue.pop_front() {
            let packets = len.div_ceil(u64::from(self.pmtu)).max(1) as u32;
            self.wqe = Some(Wqe {
                data,
                len,
                remote,
                start_psn: self.next_psn,
                packets,
                next_new: 0,
                acked: 0,
            });
            self.start_learnt = false;
            self.resend.clear();
            self.rto.discard();
            self.retries.reload();
        }
    }

    /// The retransmission timer's state (its timeout and round-trip samples).
    pub fn rto(&self) -> &RtoEstimator {
        &self.rto
    }

    fn packet(&mut self, i: u32, retransmit: bool) -> OooPacket {
        let w = self.wqe.as_ref().expect("a WQE in flight");
        let offset = u64::from(i) * u64::from(self.pmtu);
        let len = (w.len - offset.min(w.len)).min(u64::from(self.pmtu)) as u32;
        let addr = (!self.start_learnt).then(|| w.remote + offset);
        if addr.is_some() {
            self.stats.address_carrying += 1;
        }
        OooPacket {
            psn: w.start_psn.wrapping_add(i) & PSN_MASK,
            addr,
            last: i + 1 == w.packets,
            offset,
            len,
            retransmit,
        }
    }

    /// What [`OooRequester::poll_packet`] would return now, without changing anything:
    /// `(payload bytes, a resend)`.
    pub fn peek_packet(&self) -> Option<(u32, bool)> {
        let (w, i, resend) = match &self.wqe {
            Some(w) => {
                if let Some(&i) = self.resend.iter().find(|&&i| i >= w.acked) {
                    (w, i, true)
                } else if w.next_new < w.packets && w.next_new < w.acked + self.window {
                    (w, w.next_new, false)
                } else {
                    return None;
                }
            }
            None => return None,
        };
        let offset = u64::from(i) * u64::from(self.pmtu);
        let len = (w.len - offset.min(w.len)).min(u64::from(self.pmtu)) as u32;
        Some((len, resend))
    }

    /// Whether a WQE waits to start (the one in flight is done).
    pub fn has_queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// The next data packet to send at `now_ps`: resends first, then new packets within the
    /// window.
    pub fn poll_packet(&mut self, now_ps: u64) -> Option<OooPacket> {
        self.start_next();
        let w = self.wqe.as_ref()?;
        let (acked, next_new, packets) = (w.acked, w.next_new, w.packets);
        while let Some(i) = self.resend.pop_front() {
            if i >= acked {
                self.rto.discard();
                self.deadline_ps = Some(now_ps + self.rto.timeout_ps());
                self.stats.resent_packets += 1;
                self.stats.data_packets += 1;
                return Some(self.packet(i, true));
            }
        }
        if next_new < packets && next_new < acked + self.window {
            if let Some(w) = self.wqe.as_mut() {
                w.next_new += 1;
            }
            // The timer runs from the latest packet sent: ACKs aggregated over a long
            // scheduler turn must not look like loss while the WQE is still going out.
            self.rto.sent_new(next_new, now_ps);
            self.deadline_ps = Some(now_ps + self.rto.timeout_ps());
            self.stats.data_packets += 1;
            return Some(self.packet(next_new, false));
        }
        None
    }

    /// The next data packet as a segment with its payload (the WQE's bytes must be held:
    /// posted with [`OooRequester::post_write`]).
    pub fn poll_transmit(&mut self, now_ps: u64) -> Option<OooSegment> {
        let p = self.poll_packet(now_ps)?;
        let w = self.wqe.as_ref()?;
        let data = w.data.as_deref().unwrap_or(&[]);
        let from = (p.offset as usize).min(data.len());
        let to = (from + p.len as usize).min(data.len());
        Some(OooSegment::Write {
            psn: p.psn,
            addr: p.addr,
            last: p.last,
            payload: data[from..to].to_vec(),
        })
    }

    /// An ACK or NAK arrives at `now_ps`.
    pub fn handle_segment(&mut self, now_ps: u64, seg: OooSegment) {
        let Some(w) = self.wqe.as_mut() else {
            return;
        };
        match seg {
            OooSegment::Ack {
                psn, start_learnt, ..
            } => {
                let off = psn.wrapping_sub(w.start_psn) & PSN_MASK;
                if off > w.packets {
                    return; // stale or hostile
                }
                self.start_learnt |= start_learnt;
                if off > w.acked {
                    w.acked = off;
                    self.retries.reload();
                    self.rto.acked(off, now_ps);
                    self.deadline_ps = Some(now_ps + self.rto.timeout_ps());
                }
                if w.acked == w.packets {
                    self.next_psn = w.start_psn.wrapping_add(w.packets) & PSN_MASK;
                    self.wqe = None;
                    self.deadline_ps = None;
                    self.resend.clear();
                    self.done.push_back(self.stats.completions as u32);
                    self.stats.completions += 1;
                }
            }
            OooSegment::Nak { head, missing } => {
                let base = head.wrapping_sub(w.start_psn) & PSN_MASK;
                if base >= w.packets {
                    return;
                }
                for i in (0..64).filter(|i| missing & (1u64 << i) != 0) {
                    let p = base + i;
                    if p < w.next_new && !self.resend.contains(&p) {
                        self.resend.push_back(p);
                    }
                }
            }
            OooSegment::Write { .. } => {}
        }
    }

    /// When the retransmission timer fires, if armed.
    pub fn poll_timeout(&self) -> Option<u64> {
        self.deadline_ps
    }

    /// The timer fired at `now_ps`: resend every packet sent and not acknowledged, or give
    /// the WQE up when its retries are spent.
    pub fn handle_timeout(&mut self, now_ps: u64) -> TimerFired {
        if self.deadline_ps.is_none_or(|d| now_ps < d) {
            return TimerFired::NotDue;
        }
        let Some(w) = self.wqe.as_ref() else {
            self.deadline_ps = None;
            return TimerFired::NotDue;
        };
        self.stats.timeouts += 1;
        if !self.retries.spend() {
            self.deadline_ps = None;
            return TimerFired::RetriesExhausted;
        }
        // No progress for a whole timeout: carry the address again, in case the flag that
        // stopped it was wrong (a responder that never learnt the start drops every Spot).
        self.start_learnt = false;
        self.resend = (w.acked..w.next_new).collect();
        self.rto.timed_out();
        self.deadline_ps = Some(now_ps + self.rto.timeout_ps());
        TimerFired::Resend
    }
}
