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
//! ([`conn`]), with at most one go-back-N round under way.
//!
//! A round's frames leave one at a time on the accelerator's timer, each after the core has
//! handled it (`net.wan_accel_frame_ns`) and no faster than the long link's line rate: the
//! accelerator has one port toward Remote, and a burst faster than that port would only
//! queue (and, past the switch's buffer, be dropped) at the switch in front of the long
//! link, and every drop there is one more gap for Remote to NAK.
//!
//! How it learns a connection (`net.wan_accel_learn`): with "setup" (the default), as the
//! paper's accelerator, by parsing the RDMA CM exchange as it crosses: the hosts' connection
//! managers (`host/cm`) send REQ, REP and RTU as MADs to QP1 before any traffic; the
//! accelerator keeps each REQ until the REP of the same transaction passes the other way,
//! and from the pair learns the connection whose requester is on Local's side: the
//! addresses, both QPNs, that side's starting PSN (MSN 0, as every RC QP starts). With
//! "traffic" it learns from the traffic itself: the starting PSN from the
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
use rnic_wire::cm::{parse_cm_frame_from, CmMessage, CmReq, GSI_QPN};
use rnic_wire::{AethSyndrome, NakCode, Opcode};

use super::element::{ElementStats, Emitted, Fate, LinkElement};
use super::port::Port;
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
    /// Frames sent again from the buffer by go-back-N rounds.
    pub retransmitted: u64,
    /// Retransmission rounds started by a NAK, or moved back by one (a gap in the round).
    pub nak_rounds: u64,
    /// Of those, rounds moved back while under way.
    pub nak_rewinds: u64,
    /// Sequence NAKs the round under way already answered, ignored.
    pub naks_covered: u64,
    /// Local's packets held (buffered, pseudo-ACKed, not forwarded) behind a round, which
    /// then sends them for the first time.
    pub held_behind_round: u64,
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
    /// Connections learned from an RDMA CM REQ and REP crossing it.
    pub learned: u64,
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
    /// The wire time of a frame on the long link (resends are paced by it).
    long_link: Port,
    /// When the next resend may leave (the core and the long link's line rate allowing).
    resend_at: TimePs,
    /// The connection that sent the last resend (rounds of several take turns).
    last_resender: Option<Key>,
    /// Held-behind packets a round has sent (their first sending).
    held_sent: u64,
    ip_ident: u16,
    stats: AccelStats,
    frames_seen: [u64; 2],
    learn_at_setup: bool,
    /// REQs seen whose REP has not passed yet, by transaction id: (seen on the outbound
    /// half, source address, destination address, the REQ).
    reqs: HashMap<u64, (bool, [u8; 4], [u8; 4], CmReq)>,
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

    /// A round has started: its first frame may leave from `now` on.
    fn round_started(&mut self, now: TimePs) {
        self.resend_at = self.resend_at.max(now);
    }

    /// Sends the next frame of one round under way (connections take turns, in key order),
    /// through the core's queue; the next may leave when the core has handled this one and
    /// the long link has had the time to carry it.
    fn resend_one(&mut self, now: TimePs, emit: &mut Vec<Emitted>) {
        loop {
            // The next connection in key order after the last one that resent, wrapping.
            let after = self.last_resender;
            let resending = || {
                self.conns
                    .iter()
                    .filter(|(_, (c, _))| c.resending())
                    .map(|(k, _)| *k)
            };
            let Some(key) = resending()
                .filter(|k| Some(*k) > after)
                .min()
                .or_else(|| resending().min())
            else {
                return;
            };
            let Some((c, _)) = self.conns.get_mut(&key) else {
                return;
            };
            // A round with nothing left ends here; take the next connection's turn.
            let Some((frame, again)) = c.next_resend() else {
                continue;
            };
            let bytes = frame.to_vec();
            self.busy_until = self.busy_until.max(now) + self.frame_ps;
            self.resend_at = self
                .busy_until
                .max(now + self.long_link.wire_time(bytes.len()));
            emit.push(Emitted {
                bytes,
                delay_ps: self.busy_until - now + self.latency_ps,
                back: true,
            });
            if again {
                self.stats.retransmitted += 1;
            } else {
                self.held_sent += 1;
            }
            self.last_resender = Some(key);
            return;
        }
    }

    fn sum_held(&mut self, now: TimePs) {
        let before = self.held_bytes;
        self.held_bytes = self.conns.values().map(|(c, _)| c.held_bytes()).sum();
        self.stats.peak_held_bytes = self.stats.peak_held_bytes.max(self.held_bytes);
        if before > 0 && self.held_bytes == 0 {
            self.stats.drained_ps = now;
        }
    }

    /// A MAD to QP1 (seen on the outbound half if `outbound`): with learning at setup, a
    /// REQ is kept and the REP of its transaction teaches the connection whose requester is
    /// on Local's side. It passes on after the core has read it.
    fn on_cm(&mut self, now: TimePs, outbound: bool, frame: &[u8]) -> Fate {
        if !self.learn_at_setup {
            return Fate::default();
        }
        let delay = self.process(now);
        let pass = Fate {
            drop: false,
            delay_ps: delay,
        };
        let Ok((src, m)) = parse_cm_frame_from(frame) else {
            return pass;
        };
        let Some(dst) = dst_ip(frame) else {
            return pass;
        };
        match m.message {
            CmMessage::Req(r) => {
                self.reqs.insert(m.transaction_id, (outbound, src, dst, r));
            }
            CmMessage::Rep(rep) => {
                let Some(&(req_out, req_src, _, req)) = self.reqs.get(&m.transaction_id) else {
                    return pass;
                };
                if rep.remote_comm_id != req.local_comm_id || req_out == outbound {
                    return pass;
                }
                // Local's party: whichever of the two sent its message outbound.
                let (local_ip, remote_ip, local_qpn, start_psn, remote_qpn) = if outbound {
                    (src, dst, rep.local_qpn, rep.starting_psn, req.local_qpn)
                } else {
                    (req_src, src, req.local_qpn, req.starting_psn, rep.local_qpn)
                };
                let key = (
                    local_ip,
                    remote_ip,
                    rnic_wire::udp_entropy_port(local_qpn, remote_qpn),
                );
                // A REP sent again (its RTU was lost) teaches nothing new.
                self.conns
                    .entry(key)
                    .or_insert_with(|| (Conn::from_setup(start_psn, local_qpn), None));
                self.stats.learned += 1;
            }
            CmMessage::Rtu(_) => {
                self.reqs.remove(&m.transaction_id);
            }
        }
        pass
    }

    /// A frame from Local toward Remote.
    fn on_outbound(&mut self, now: TimePs, frame: &[u8], emit: &mut Vec<Emitted>) -> Fate {
        self.frames_seen[0] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Fate::default();
        };
        if h.bth.dest_qp == GSI_QPN {
            return self.on_cm(now, true, frame);
        }
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
            RequestAction::Hold => {
                self.stats.held_behind_round += 1;
                self.sum_held(now);
                fate(true)
            }
            RequestAction::ForwardAndAck { psn, msn }
            | RequestAction::HoldAndAck { psn, msn }
            | RequestAction::DropAndAck { psn, msn } => {
                let drop = !matches!(action, RequestAction::ForwardAndAck { .. });
                match action {
                    RequestAction::DropAndAck { .. } => self.stats.dropped_dups += 1,
                    RequestAction::HoldAndAck { .. } => self.stats.held_behind_round += 1,
                    _ => {}
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
    fn on_inbound(&mut self, now: TimePs, frame: &[u8]) -> Fate {
        self.frames_seen[1] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Fate::default();
        };
        let Some(src_ip) = src_ip(frame) else {
            return Fate::default();
        };
        if h.bth.dest_qp == GSI_QPN {
            return self.on_cm(now, false, frame);
        }
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
        let was_resending = c.resending();
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
            ResponseAction::AbsorbCoveredNak => {
                self.stats.absorbed += 1;
                self.stats.naks_covered += 1;
                Fate {
                    drop: true,
                    delay_ps: 0,
                }
            }
            ResponseAction::AbsorbAndRetransmit { .. } => {
                self.stats.absorbed += 1;
                self.stats.nak_rounds += 1;
                if was_resending {
                    self.stats.nak_rewinds += 1;
                }
                self.round_started(now);
                Fate {
                    drop: true,
                    delay_ps: 0,
                }
            }
        }
    }

    /// The earliest of the retransmission timers and, while a round is under way, the
    /// next resend.
    fn next_deadline(&self) -> Option<TimePs> {
        let resend = self
            .conns
            .values()
            .any(|(c, _)| c.resending())
            .then_some(self.resend_at);
        self.conns
            .values()
            .filter_map(|(c, _)| c.deadline(self.timeout_ps))
            .chain(resend)
            .min()
    }

    /// The timer: every connection whose ACKs stalled starts a round from its oldest
    /// buffered frame; then, when due, one frame of a round leaves (toward Remote: `back`
    /// for the inbound half).
    fn on_timer(&mut self, now: TimePs, emit: &mut Vec<Emitted>) {
        let mut timed_out = 0;
        for (c, _) in self.conns.values_mut() {
            if c.poll_timeout(now, self.timeout_ps).is_some() {
                timed_out += 1;
            }
        }
        if timed_out > 0 {
            self.stats.timeout_rounds += timed_out;
            self.round_started(now);
        }
        if now >= self.resend_at {
            self.resend_one(now, emit);
        }
    }
}

/// The IPv4 source address of a frame (checked by `peek_roce` already).
fn src_ip(frame: &[u8]) -> Option<[u8; 4]> {
    let ip = frame.get(rnic_wire::frame::IPV4_OFFSET..)?;
    Some(rnic_wire::ipv4::Packet::new_checked(ip).ok()?.src())
}

/// The IPv4 destination address of a frame.
fn dst_ip(frame: &[u8]) -> Option<[u8; 4]> {
    let ip = frame.get(rnic_wire::frame::IPV4_OFFSET..)?;
    Some(rnic_wire::ipv4::Packet::new_checked(ip).ok()?.dst())
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
/// `long_rtt_ps` is the long link's round trip (for the default timeout); `long_link` a
/// port at its line rate (resends are paced by its wire time).
pub fn wan_accel(
    net: &NetConfig,
    long_rtt_ps: TimePs,
    long_link: Port,
) -> (WanAccelHalf, WanAccelHalf) {
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
        long_link,
        resend_at: 0,
        last_resender: None,
        held_sent: 0,
        ip_ident: 0,
        stats: AccelStats::default(),
        frames_seen: [0; 2],
        learn_at_setup: net.wan_accel_learn == WanAccelLearn::Setup,
        reqs: HashMap::new(),
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
            Side::Inbound => a.on_inbound(now, frame),
        }
    }

    fn stats(&self) -> ElementStats {
        let a = self.shared.borrow();
        let s = a.stats;
        match self.side {
            Side::Outbound => ElementStats {
                frames: a.frames_seen[0],
                // Held-behind packets do not pass here; the inbound half emits them.
                absorbed: s.dropped_dups + s.held_behind_round,
                emitted: s.pseudo_acks,
                ..ElementStats::default()
            },
            Side::Inbound => ElementStats {
                frames: a.frames_seen[1],
                absorbed: s.absorbed,
                emitted: s.retransmitted + a.held_sent,
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
}

impl WanAccelHalf {
    /// The accelerator's counters, from the half that reports them (the inbound one).
    pub fn reported_stats(&self) -> Option<AccelStats> {
        (self.side == Side::Inbound).then(|| self.accel_stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::cm::{cm_frame, CmRep, CmRepr, CmRtu};
    use rnic_wire::FrameAddr;

    const LOCAL: [u8; 4] = [10, 0, 0, 1];
    const REMOTE: [u8; 4] = [10, 0, 0, 2];

    fn mad(from: [u8; 4], to: [u8; 4], message: CmMessage) -> Vec<u8> {
        let addr = FrameAddr {
            src_mac: [2, 0, 0, 0, 0, from[3]],
            dst_mac: [2, 0, 0, 0, 0, to[3]],
            src_ip: from,
            dst_ip: to,
            udp_src_port: rnic_wire::udp_entropy_port(1, 1),
            dscp_ecn: 0,
            ttl: 64,
        };
        let mut buf = Vec::new();
        let m = CmRepr {
            transaction_id: 9,
            message,
        };
        cm_frame(addr, 0, 0, &m, &mut buf);
        buf
    }

    /// Remote (the client) sends the REQ; Local answers with the REP.
    fn exchange() -> [Vec<u8>; 3] {
        let req = CmMessage::Req(CmReq {
            local_comm_id: 1,
            local_qpn: 0x22,
            starting_psn: 7,
            ..CmReq::default()
        });
        let rep = CmMessage::Rep(CmRep {
            local_comm_id: 5,
            remote_comm_id: 1,
            local_qpn: 0x11,
            starting_psn: 0x1234,
            ..CmRep::default()
        });
        let rtu = CmMessage::Rtu(CmRtu {
            local_comm_id: 1,
            remote_comm_id: 5,
        });
        [
            mad(REMOTE, LOCAL, req),
            mad(LOCAL, REMOTE, rep),
            mad(REMOTE, LOCAL, rtu),
        ]
    }

    fn accel(learn: WanAccelLearn) -> (WanAccelHalf, WanAccelHalf) {
        let net = NetConfig {
            wan_accel_learn: learn,
            ..NetConfig::default()
        };
        wan_accel(
            &net,
            1_000_000,
            Port::new(crate::params::ModelParams::baseline().eth),
        )
    }

    #[test]
    fn connections_are_learned_by_parsing_the_cm_exchange_as_it_crosses() {
        let (mut out, mut inb) = accel(WanAccelLearn::Setup);
        let f = exchange();
        let mut emit = Vec::new();
        // The REQ alone teaches nothing (the responder's QPN is unknown).
        assert!(!inb.on_frame(0, &mut f[0].clone(), &mut emit).drop);
        assert!(out.shared.borrow().conns.is_empty());
        assert!(!out.on_frame(1, &mut f[1].clone(), &mut emit).drop);
        assert!(!inb.on_frame(2, &mut f[2].clone(), &mut emit).drop);
        assert!(emit.is_empty());
        let a = out.shared.borrow();
        // Local's QPN and starting PSN from its REP, Remote's QPN from the REQ.
        let key = (LOCAL, REMOTE, rnic_wire::udp_entropy_port(0x11, 0x22));
        let (c, _) = a.conns.get(&key).expect("learned");
        assert_eq!(c.local_qpn, Some(0x11));
        assert_eq!(a.conns.len(), 1);
        assert_eq!(a.stats.learned, 1);
    }

    #[test]
    fn a_corrupted_rep_or_traffic_learning_teaches_nothing() {
        let (mut out, mut inb) = accel(WanAccelLearn::Setup);
        let f = exchange();
        let mut emit = Vec::new();
        inb.on_frame(0, &mut f[0].clone(), &mut emit);
        let mut bad = f[1].clone();
        let n = bad.len();
        bad[n - 10] ^= 1;
        out.on_frame(1, &mut bad, &mut emit);
        assert!(out.shared.borrow().conns.is_empty());
        let (mut out, mut inb) = accel(WanAccelLearn::Traffic);
        inb.on_frame(0, &mut f[0].clone(), &mut emit);
        out.on_frame(1, &mut f[1].clone(), &mut emit);
        assert!(out.shared.borrow().conns.is_empty());
    }
}
