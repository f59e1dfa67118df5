//! The RDMA WAN accelerator of the long-distance RDMA paper ("Long-distance
//! RDMA-acceleration Frameworks"), as a link element on Local's side of a long link.
//!
//! Local's RC WRITE packets pass it on their way out; it keeps a copy of each, answers it at
//! once with a pseudo-ACK ([`pseudo_ack`]: the ACK Remote would send for that PSN), so
//! Local's window is released after a short local round trip instead of the long one. It
//! absorbs Remote's real ACKs for what it already acknowledged, frees its copies as they
//! are covered, and on a sequence NAK or when Remote's ACKs stop making progress sends its
//! copies again (go-back-N from the missing PSN): with the accelerator in place, loss on the
//! long link costs throughput, never data. Each connection is a state machine without I/O
//! ([`conn`]).
//!
//! How it learns a connection (`net.wan_accel_learn`): the paper parses the RDMA CM
//! exchange. rnic's hosts connect their QPs directly, without CM on the simulated wire yet,
//! so with "setup" (the default) the accelerator is handed, before any traffic, the bytes of
//! each connection's REQ, REP and RTU (built by `rnic-wire`, [`super::cm_exchange`]) and
//! parses them: addresses, both QPNs, the starting PSN (MSN 0, as every RC QP starts). With "traffic" it learns from the traffic itself: the starting PSN from the
//! connection's first request, Local's QPN (which no request carries) from Remote's first
//! response; it buffers meanwhile but acknowledges nothing, so acceleration starts one long
//! round trip late. A connection is keyed by the IPv4 addresses and the UDP source port
//! (Remote's ACKs do not carry Remote's QPN; the entropy port is a function of both QPNs).
//!
//! Only WRITEs without immediate data are accelerated. READ, SEND, WRITE with immediate
//! and atomics pass through unaccelerated (their responses carry data or depend on
//! Remote's receive queue, which a pseudo-ACK cannot promise), and a connection stops
//! being accelerated until Remote has acknowledged them.
//!
//! Costs: one software core processes the frames it handles one after another
//! (`net.wan_accel_frame_ns` each) and adds `net.wan_accel_latency_ns` to each; the buffer
//! holds `net.wan_accel_buffer_bytes`; when full the accelerator stops pseudo-ACKing
//! and Local's own window applies until room frees.

pub mod conn;
pub mod pseudo_ack;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use rnic_sim::TimePs;
use rnic_wire::{AethSyndrome, NakCode, Opcode};

use super::element::{ElementStats, Emitted, Fate, LinkElement};
use crate::config::{NetConfig, WanAccelLearn};
use conn::{Answer, Conn, RequestAction, ResponseAction};
use pseudo_ack::AckTemplate;

/// The accelerator's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AccelStats {
    /// Pseudo-ACKs sent to Local.
    pub pseudo_acks: u64,
    /// Remote's ACKs and NAKs absorbed.
    pub absorbed: u64,
    /// Remote's responses forwarded to Local.
    pub forwarded: u64,
    /// Frames sent again from the buffer.
    pub retransmitted: u64,
    /// Retransmission rounds started by a NAK.
    pub nak_rounds: u64,
    /// Retransmission rounds started by the timer.
    pub timeout_rounds: u64,
    /// Requests that passed unaccelerated.
    pub passed: u64,
    /// Local's retransmissions of pseudo-ACKed PSNs, dropped.
    pub dropped_dups: u64,
    /// Most bytes held at once.
    pub peak_held_bytes: u64,
    /// When the buffer last became empty (Remote had acknowledged everything), ps.
    pub drained_ps: u64,
}

/// Connection key: (Local IP, Remote IP, UDP source port).
type Key = ([u8; 4], [u8; 4], u16);

/// The state both halves share.
#[derive(Debug)]
struct Accel {
    conns: HashMap<Key, (Conn, Option<AckTemplate>)>,
    buffer_bytes: u64,
    held_bytes: u64,
    frame_ps: TimePs,
    latency_ps: TimePs,
    timeout_ps: TimePs,
    /// When the core is free.
    busy_until: TimePs,
    ip_ident: u16,
    stats: AccelStats,
    frames_seen: [u64; 2],
    learn_at_setup: bool,
}

impl Accel {
    /// Queues one frame's processing; returns its delay from `now` (queue, processing,
    /// added latency).
    fn process(&mut self, now: TimePs) -> TimePs {
        self.busy_until = self.busy_until.max(now) + self.frame_ps;
        self.busy_until - now + self.latency_ps
    }

    fn pseudo_ack(&mut self, key: &Key, psn: u32, msn: u32) -> Option<Vec<u8>> {
        let (c, t) = self.conns.get(key)?;
        let (qpn, t) = (c.local_qpn?, (*t)?);
        let mut buf = Vec::with_capacity(64);
        t.emit(qpn, psn, msn, self.ip_ident, &mut buf);
        self.ip_ident = self.ip_ident.wrapping_add(1);
        self.stats.pseudo_acks += 1;
        Some(buf)
    }

    /// Sends the buffered frames of `key` from `from` on again, through the core's queue:
    /// frames from Local that arrive meanwhile queue behind them, so Remote sees the PSNs in
    /// order again (a go-back-N responder drops anything after a gap).
    fn resend(&mut self, now: TimePs, key: &Key, from: u32, emit: &mut Vec<Emitted>) {
        let Some((c, _)) = self.conns.get(key) else {
            return;
        };
        let mut t = self.busy_until.max(now);
        for f in c.frames_from(from) {
            t += self.frame_ps;
            emit.push(Emitted {
                bytes: f.to_vec(),
                delay_ps: t - now + self.latency_ps,
                back: true,
            });
            self.stats.retransmitted += 1;
        }
        self.busy_until = t;
    }

    fn sum_held(&mut self, now: TimePs) {
        let before = self.held_bytes;
        self.held_bytes = self.conns.values().map(|(c, _)| c.held_bytes()).sum();
        self.stats.peak_held_bytes = self.stats.peak_held_bytes.max(self.held_bytes);
        if before > 0 && self.held_bytes == 0 {
            self.stats.drained_ps = now;
        }
    }

    /// A frame from Local toward Remote.
    fn on_outbound(&mut self, now: TimePs, frame: &[u8], emit: &mut Vec<Emitted>) -> Fate {
        self.frames_seen[0] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Fate::default();
        };
        let op = h.bth.opcode;
        if !op.is_request() {
            return Fate::default();
        }
        let Some(src_ip) = src_ip(frame) else {
            return Fate::default();
        };
        let delay = self.process(now);
        let key = (src_ip, h.dst_ip, h.udp_src_port);
        let room = self.held_bytes + frame.len() as u64 <= self.buffer_bytes;
        let (c, t) = self
            .conns
            .entry(key)
            .or_insert_with(|| (Conn::new(h.bth.psn), None));
        if t.is_none() {
            *t = AckTemplate::from_request(frame);
        }
        let write = matches!(
            op,
            Opcode::RcWriteFirst
                | Opcode::RcWriteMiddle
                | Opcode::RcWriteLast
                | Opcode::RcWriteOnly
        ) && t.is_some();
        let ends = op.is_last() || op.is_only();
        let action = c.handle_request(now, h.bth.psn, ends, write, frame, room);
        let fate = |drop| Fate {
            drop,
            delay_ps: delay,
        };
        match action {
            RequestAction::Forward => {
                self.stats.passed += 1;
                fate(false)
            }
            RequestAction::ForwardAndAck { psn, msn } | RequestAction::DropAndAck { psn, msn } => {
                let drop = matches!(action, RequestAction::DropAndAck { .. });
                if drop {
                    self.stats.dropped_dups += 1;
                }
                self.sum_held(now);
                if let Some(bytes) = self.pseudo_ack(&key, psn, msn) {
                    emit.push(Emitted {
                        bytes,
                        delay_ps: delay,
                        back: true,
                    });
                }
                fate(drop)
            }
        }
    }

    /// A frame from Remote toward Local.
    fn on_inbound(&mut self, now: TimePs, frame: &[u8], emit: &mut Vec<Emitted>) -> Fate {
        self.frames_seen[1] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Fate::default();
        };
        let Some(src_ip) = src_ip(frame) else {
            return Fate::default();
        };
        let key = (h.dst_ip, src_ip, h.udp_src_port);
        if !self.conns.contains_key(&key) {
            return Fate::default();
        }
        let delay = self.process(now);
        let ans = match (h.bth.opcode, h.aeth.map(|a| a.syndrome)) {
            (Opcode::RcAck, Some(AethSyndrome::Ack { .. })) => Answer::Ack { psn: h.bth.psn },
            (Opcode::RcAck, Some(AethSyndrome::Nak(NakCode::PsnSequenceError))) => {
                Answer::SeqNak { psn: h.bth.psn }
            }
            _ => Answer::Other,
        };
        let Some((c, _)) = self.conns.get_mut(&key) else {
            return Fate::default();
        };
        let action = c.handle_response(now, h.bth.dest_qp, ans);
        self.sum_held(now);
        match action {
            ResponseAction::Forward => {
                self.stats.forwarded += 1;
                Fate {
                    drop: false,
                    delay_ps: delay,
                }
            }
            ResponseAction::Absorb => {
                self.stats.absorbed += 1;
                Fate {
                    drop: true,
                    delay_ps: 0,
                }
            }
            ResponseAction::AbsorbAndRetransmit { from } => {
                self.stats.absorbed += 1;
                self.stats.nak_rounds += 1;
                self.resend(now, &key, from, emit);
                Fate {
                    drop: true,
                    delay_ps: 0,
                }
            }
        }
    }

    fn next_deadline(&self) -> Option<TimePs> {
        self.conns
            .values()
            .filter_map(|(c, _)| c.deadline(self.timeout_ps))
            .min()
    }

    /// The timer: every connection whose ACKs stalled sends its buffer again (toward
    /// Remote: `back` for the inbound half).
    fn on_timer(&mut self, now: TimePs, emit: &mut Vec<Emitted>) {
        let mut due = Vec::new();
        for (k, (c, _)) in self.conns.iter_mut() {
            if let Some(from) = c.poll_timeout(now, self.timeout_ps) {
                due.push((*k, from));
            }
        }
        due.sort_unstable();
        for (k, from) in due {
            self.stats.timeout_rounds += 1;
            self.resend(now, &k, from, emit);
        }
    }
}

/// A connection from its CM exchange, parsed from the frames' bytes as the paper's
/// accelerator parses them on the wire: the REQ gives the requester's address, QPN and
/// starting PSN; the REP of the same transaction the responder's QPN. The key is what the
/// requester's frames will carry: its RoCEv2 entropy port is a function of both QPNs.
fn learn_from_cm(frames: &[Vec<u8>]) -> Option<(Key, Conn)> {
    use rnic_wire::cm::{parse_cm_frame, CmMessage};
    let mut req = None;
    let mut rep = None;
    for f in frames {
        let Ok(m) = parse_cm_frame(f) else { continue };
        let ip = src_ip(f)?;
        match m.message {
            CmMessage::Req(r) => req = Some((m.transaction_id, ip, r)),
            CmMessage::Rep(r) => rep = Some((m.transaction_id, ip, r)),
            CmMessage::Rtu(_) => {}
        }
    }
    let ((tid, req_ip, req), (rep_tid, rep_ip, rep)) = (req?, rep?);
    if tid != rep_tid {
        return None;
    }
    let port = rnic_wire::udp_entropy_port(req.local_qpn, rep.local_qpn);
    Some((
        (req_ip, rep_ip, port),
        Conn::from_setup(req.starting_psn, req.local_qpn),
    ))
}

/// The IPv4 source address of a frame (checked by `peek_roce` already).
fn src_ip(frame: &[u8]) -> Option<[u8; 4]> {
    let ip = frame.get(rnic_wire::frame::IPV4_OFFSET..)?;
    Some(rnic_wire::ipv4::Packet::new_checked(ip).ok()?.src())
}

/// Which way a half sees frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Local toward Remote: requests; pseudo-ACKs go back.
    Outbound,
    /// Remote toward Local: acknowledgements; retransmissions go back.
    Inbound,
}

/// One half of the accelerator, on one direction of Local's link.
#[derive(Debug)]
pub struct WanAccelHalf {
    side: Side,
    shared: Rc<RefCell<Accel>>,
}

/// The two halves of one accelerator: (on Local's link toward Remote, on it toward Local).
/// `long_rtt_ps` is the long link's round trip (for the default timeout).
pub fn wan_accel(net: &NetConfig, long_rtt_ps: TimePs) -> (WanAccelHalf, WanAccelHalf) {
    let timeout_ps = if net.wan_accel_timeout_ns > 0.0 {
        rnic_sim::ns(net.wan_accel_timeout_ns)
    } else {
        2 * long_rtt_ps + rnic_sim::ns(100_000.0)
    };
    let shared = Rc::new(RefCell::new(Accel {
        conns: HashMap::new(),
        buffer_bytes: net.wan_accel_buffer_bytes,
        held_bytes: 0,
        frame_ps: rnic_sim::ns(net.wan_accel_frame_ns),
        latency_ps: rnic_sim::ns(net.wan_accel_latency_ns),
        timeout_ps,
        busy_until: 0,
        ip_ident: 0,
        stats: AccelStats::default(),
        frames_seen: [0; 2],
        learn_at_setup: net.wan_accel_learn == WanAccelLearn::Setup,
    }));
    (
        WanAccelHalf {
            side: Side::Outbound,
            shared: shared.clone(),
        },
        WanAccelHalf {
            side: Side::Inbound,
            shared,
        },
    )
}

impl WanAccelHalf {
    /// The accelerator's counters (both halves share them).
    pub fn accel_stats(&self) -> AccelStats {
        self.shared.borrow().stats
    }
}

impl LinkElement for WanAccelHalf {
    fn on_frame(&mut self, now: TimePs, frame: &mut Vec<u8>, emit: &mut Vec<Emitted>) -> Fate {
        let mut a = self.shared.borrow_mut();
        match self.side {
            Side::Outbound => a.on_outbound(now, frame, emit),
            Side::Inbound => a.on_inbound(now, frame, emit),
        }
    }

    fn stats(&self) -> ElementStats {
        let a = self.shared.borrow();
        let s = a.stats;
        match self.side {
            Side::Outbound => ElementStats {
                frames: a.frames_seen[0],
                dropped: s.dropped_dups,
                emitted: s.pseudo_acks,
                ..ElementStats::default()
            },
            Side::Inbound => ElementStats {
                frames: a.frames_seen[1],
                dropped: s.absorbed,
                emitted: s.retransmitted,
                ..ElementStats::default()
            },
        }
    }

    fn wake_at(&self) -> Option<TimePs> {
        // The inbound half owns the timer (its `back` direction leads to Remote).
        match self.side {
            Side::Inbound => self.shared.borrow().next_deadline(),
            Side::Outbound => None,
        }
    }

    fn on_wake(&mut self, now: TimePs, emit: &mut Vec<Emitted>) {
        if self.side == Side::Inbound {
            self.shared.borrow_mut().on_timer(now, emit);
        }
    }

    fn holds_frames(&self) -> bool {
        self.side == Side::Inbound && self.shared.borrow().held_bytes > 0
    }

    fn on_cm_exchange(&mut self, frames: &[Vec<u8>]) {
        let mut a = self.shared.borrow_mut();
        if self.side != Side::Outbound || !a.learn_at_setup {
            return;
        }
        if let Some((key, conn)) = learn_from_cm(frames) {
            a.conns.insert(key, (conn, None));
        }
    }

    fn wan_accel_stats(&self) -> Option<AccelStats> {
        (self.side == Side::Inbound).then(|| self.accel_stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::cm_exchange::cm_exchange;
    use crate::net::element::Connection;

    #[test]
    fn connections_are_learned_by_parsing_their_cm_exchange() {
        let c = Connection {
            requester_ip: [10, 0, 0, 1],
            responder_ip: [10, 0, 0, 2],
            requester_qpn: 0x11,
            responder_qpn: 0x22,
            start_psn: 0x1234,
            responder_start_psn: 7,
        };
        let frames = cm_exchange(&c);
        let (key, conn) = learn_from_cm(&frames).unwrap();
        let port = rnic_wire::udp_entropy_port(0x11, 0x22);
        assert_eq!(key, ([10, 0, 0, 1], [10, 0, 0, 2], port));
        assert_eq!(conn.local_qpn, Some(0x11));
        // Without the REP the responder's QPN (and so the key) is unknown.
        assert!(learn_from_cm(&frames[..1]).is_none());
        // A corrupted REQ (its ICRC fails) teaches nothing.
        let mut bad = frames.clone();
        let n = bad[0].len();
        bad[0][n - 10] ^= 1;
        assert!(learn_from_cm(&bad).is_none());
    }
}
