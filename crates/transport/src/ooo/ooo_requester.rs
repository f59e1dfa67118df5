//! The requester of an out-of-order WRITE (sans-IO: `post_write`, `handle_segment`,
//! `handle_timeout` in; `poll_transmit`, `poll_timeout`, `poll_completion` out).
//!
//! One outstanding OOO WQE per QP, as the ORNIC paper does: the next WQE is taken only when
//! the previous one completed. Packets carry their write address (FSpot) until an ACK says
//! the responder learnt the start address, then none (Spot); the Last packet ends the WQE.
//! New packets go out while they are within the receive bitmap's width of the cumulative
//! ACK; a bitmap NAK resends exactly the packets it names; a timeout of RTT + OTD / B
//! after the latest packet sent, without progress, resends every unacknowledged packet.

use std::collections::VecDeque;

use super::OooSegment;

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

/// The WQE in flight.
#[derive(Debug, Clone)]
struct Wqe {
    data: Vec<u8>,
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
    timeout_ps: u64,
    next_psn: u32,
    queue: VecDeque<(Vec<u8>, u64)>,
    wqe: Option<Wqe>,
    start_learnt: bool,
    resend: VecDeque<u32>,
    deadline_ps: Option<u64>,
    done: VecDeque<u32>,
    pub stats: RequesterStats,
}

impl OooRequester {
    /// A requester sending `pmtu`-byte packets, at most `window` PSNs beyond the cumulative
    /// ACK (the receive bitmap's width), resending after `timeout_ps` without progress.
    pub fn new(pmtu: u32, window: u32, timeout_ps: u64, start_psn: u32) -> OooRequester {
        OooRequester {
            pmtu: pmtu.max(1),
            window: window.max(1),
            timeout_ps,
            next_psn: start_psn,
            queue: VecDeque::new(),
            wqe: None,
            start_learnt: false,
            resend: VecDeque::new(),
            deadline_ps: None,
            done: VecDeque::new(),
            stats: RequesterStats::default(),
        }
    }

    /// Posts an OOO WRITE of `data` to remote address `remote`.
    pub fn post_write(&mut self, data: Vec<u8>, remote: u64) {
        self.queue.push_back((data, remote));
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
        if let Some((data, remote)) = self.queue.pop_front() {
            let packets = (data.len() as u32).div_ceil(self.pmtu).max(1);
            self.wqe = Some(Wqe {
                data,
                remote,
                start_psn: self.next_psn,
                packets,
                next_new: 0,
                acked: 0,
            });
            self.start_learnt = false;
            self.resend.clear();
        }
    }

    fn segment(&mut self, i: u32) -> OooSegment {
        let w = self.wqe.as_ref().expect("a WQE in flight");
        let from = (i * self.pmtu) as usize;
        let to = (from + self.pmtu as usize).min(w.data.len());
        let addr = (!self.start_learnt).then(|| w.remote + u64::from(i) * u64::from(self.pmtu));
        if addr.is_some() {
            self.stats.address_carrying += 1;
        }
        OooSegment::Write {
            psn: w.start_psn.wrapping_add(i),
            addr,
            last: i + 1 == w.packets,
            payload: w.data[from..to].to_vec(),
        }
    }

    /// The next data packet to send at `now_ps`: resends first, then new packets within the
    /// window.
    pub fn poll_transmit(&mut self, now_ps: u64) -> Option<OooSegment> {
        self.start_next();
        let w = self.wqe.as_ref()?;
        let (acked, next_new, packets) = (w.acked, w.next_new, w.packets);
        while let Some(i) = self.resend.pop_front() {
            if i >= acked {
                self.deadline_ps = Some(now_ps + self.timeout_ps);
                self.stats.resent_packets += 1;
                self.stats.data_packets += 1;
                return Some(self.segment(i));
            }
        }
        if next_new < packets && next_new < acked + self.window {
            if let Some(w) = self.wqe.as_mut() {
                w.next_new += 1;
            }
            // The timer runs from the latest packet sent: ACKs aggregated over a long
            // scheduler turn must not look like loss while the WQE is still going out.
            self.deadline_ps = Some(now_ps + self.timeout_ps);
            self.stats.data_packets += 1;
            return Some(self.segment(next_new));
        }
        None
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
                let off = psn.wrapping_sub(w.start_psn);
                if off > w.packets {
                    return; // stale or hostile
                }
                self.start_learnt |= start_learnt;
                if off > w.acked {
                    w.acked = off;
                    self.deadline_ps = Some(now_ps + self.timeout_ps);
                }
                if w.acked == w.packets {
                    self.next_psn = w.start_psn.wrapping_add(w.packets);
                    self.wqe = None;
                    self.deadline_ps = None;
                    self.resend.clear();
                    self.done.push_back(self.stats.completions as u32);
                    self.stats.completions += 1;
                }
            }
            OooSegment::Nak { head, missing } => {
                let base = head.wrapping_sub(w.start_psn);
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

    /// The timer fired at `now_ps`: resend every packet sent and not acknowledged.
    pub fn handle_timeout(&mut self, now_ps: u64) {
        if self.deadline_ps.is_none_or(|d| now_ps < d) {
            return;
        }
        let Some(w) = self.wqe.as_ref() else {
            self.deadline_ps = None;
            return;
        };
        self.stats.timeouts += 1;
        self.resend = (w.acked..w.next_new).collect();
        self.deadline_ps = Some(now_ps + self.timeout_ps);
    }
}
