//! The accelerator without I/O: every frame either way and the clock go in, what to do with
//! the frame and the frames of its own to send come out (`handle`, `poll_timeout`,
//! `handle_timeout`, in the manner of a sans-IO protocol library). The simulator's link
//! element ([`super::WanAccelHalf`]) and the real bump in the wire (`rnic accel`) both drive
//! this one state machine; neither owns a line of its logic. Times are picoseconds on the
//! driver's clock (the simulator's, or the real monotonic clock since the program started).

use std::collections::HashMap;

use rnic_sim::TimePs;
use rnic_wire::cm::{parse_cm_frame_from, CmMessage, CmReq, GSI_QPN};
use rnic_wire::{AethSyndrome, NakCode, Opcode};

use super::conn::{Answer, Conn, Expiry, Request, RequestAction, ResponseAction};
use super::pseudo_ack::AckTemplate;
use crate::net::port::Port;

/// Which way a frame travels: from Local (the requesters' side, next to the accelerator)
/// toward Remote (across the long link), or back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Local toward Remote: requests; their pseudo-ACKs go the other way.
    LocalToRemote,
    /// Remote toward Local: acknowledgements; retransmissions go the other way.
    RemoteToLocal,
}

/// A frame of the accelerator's own (a pseudo-ACK or a resend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emit {
    /// The frame's bytes.
    pub bytes: Vec<u8>,
    /// When it leaves, after the time of the call that produced it, ps.
    pub delay_ps: TimePs,
    /// Which way it travels.
    pub direction: Direction,
}

/// What happens to the frame handed to [`Accel::handle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// Taken off the link (absorbed, held for a later round, or a duplicate answered).
    pub drop: bool,
    /// How long it waits in the accelerator before going on, ps.
    pub delay_ps: TimePs,
}

/// The accelerator's parameters.
#[derive(Debug, Clone)]
pub struct AccelConfig {
    /// Most bytes held at once; when full, no pseudo-ACKs until room frees.
    pub buffer_bytes: u64,
    /// The core's time per frame handled, ps.
    pub frame_ps: TimePs,
    /// Latency added to every frame handled, ps.
    pub latency_ps: TimePs,
    /// How long without progress on a connection before a go-back-N round, ps.
    pub timeout_ps: TimePs,
    /// A port at the long link's line rate (resends are paced by its wire time).
    pub long_link: Port,
    /// Learn connections from the RDMA CM exchange (else from the traffic).
    pub learn_at_setup: bool,
}

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
    /// Connections that gave up their buffer after `MAX_STALLED_ROUNDS` timer rounds in a
    /// row without progress from Remote.
    pub gave_up: u64,
    /// The frames they dropped undelivered (Local had their pseudo-ACKs).
    pub gave_up_frames: u64,
}

/// Connection key: (Local IP, Remote IP, UDP source port).
type Key = ([u8; 4], [u8; 4], u16);

/// The accelerator: its connections, buffer, core queue and counters.
#[derive(Debug)]
pub struct Accel {
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
    /// An accelerator with no connections yet.
    pub fn new(cfg: AccelConfig) -> Accel {
        Accel {
            conns: HashMap::new(),
            buffer_bytes: cfg.buffer_bytes,
            held_bytes: 0,
            frame_ps: cfg.frame_ps,
            latency_ps: cfg.latency_ps,
            timeout_ps: cfg.timeout_ps,
            busy_until: 0,
            long_link: cfg.long_link,
            resend_at: 0,
            last_resender: None,
            held_sent: 0,
            ip_ident: 0,
            stats: AccelStats::default(),
            frames_seen: [0; 2],
            learn_at_setup: cfg.learn_at_setup,
            reqs: HashMap::new(),
        }
    }

    /// One frame crossing the accelerator in `direction` at `now`: what happens to it, and
    /// the accelerator's own frames it causes (pushed on `emit`).
    pub fn handle(
        &mut self,
        now: TimePs,
        direction: Direction,
        frame: &[u8],
        emit: &mut Vec<Emit>,
    ) -> Verdict {
        match direction {
            Direction::LocalToRemote => self.on_outbound(now, frame, emit),
            Direction::RemoteToLocal => self.on_inbound(now, frame),
        }
    }

    /// When [`Accel::handle_timeout`] is next due: the earliest retransmission timer and,
    /// while a round is under way, the next resend.
    pub fn poll_timeout(&self) -> Option<TimePs> {
        self.next_deadline()
    }

    /// The timers at `now`: rounds of stalled connections start, and one resend leaves
    /// when due (pushed on `emit`, toward Remote).
    pub fn handle_timeout(&mut self, now: TimePs, emit: &mut Vec<Emit>) {
        self.on_timer(now, emit)
    }

    /// The counters.
    pub fn stats(&self) -> AccelStats {
        self.stats
    }

    /// Frames handed to [`Accel::handle`] in `direction`.
    pub fn frames_seen(&self, direction: Direction) -> u64 {
        self.frames_seen[direction as usize]
    }

    /// Held-behind packets rounds have sent (their first sending).
    pub fn held_sent(&self) -> u64 {
        self.held_sent
    }

    /// Bytes held now (copies not yet acknowledged by Remote).
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Connections known.
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

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
    fn resend_one(&mut self, now: TimePs, emit: &mut Vec<Emit>) {
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
            emit.push(Emit {
                bytes,
                delay_ps: self.busy_until - now + self.latency_ps,
                direction: Direction::LocalToRemote,
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
    fn on_cm(&mut self, now: TimePs, outbound: bool, frame: &[u8]) -> Verdict {
        if !self.learn_at_setup {
            return Verdict::default();
        }
        let delay = self.process(now);
        let pass = Verdict {
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
                // Local's party: whichever of the two sent its message outbound. Local's QP
                // sends from the PSN the other party's message asked for (a message's
                // starting PSN is its sender's receive PSN, as in Linux's CM).
                let (local_ip, remote_ip, local_qpn, start_psn, remote_qpn) = if outbound {
                    (src, dst, rep.local_qpn, req.starting_psn, req.local_qpn)
                } else {
                    (req_src, src, req.local_qpn, rep.starting_psn, rep.local_qpn)
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
            // A teardown teaches the accelerator nothing, nor does a UD service resolution
            // (it accelerates RC connections): they pass.
            CmMessage::Dreq(_)
            | CmMessage::Drep(_)
            | CmMessage::SidrReq(_)
            | CmMessage::SidrRep(_) => {}
        }
        pass
    }

    /// A frame from Local toward Remote.
    fn on_outbound(&mut self, now: TimePs, frame: &[u8], emit: &mut Vec<Emit>) -> Verdict {
        self.frames_seen[0] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Verdict::default();
        };
        if h.bth.dest_qp == GSI_QPN {
            return self.on_cm(now, true, frame);
        }
        let op = h.bth.opcode;
        if !op.is_request() {
            return Verdict::default();
        }
        let Some(src_ip) = src_ip(frame) else {
            return Verdict::default();
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
        let kind = match op {
            Opcode::RcWriteFirst
            | Opcode::RcWriteMiddle
            | Opcode::RcWriteLast
            | Opcode::RcWriteOnly
                if t.is_some() =>
            {
                Request::Write
            }
            Opcode::RcReadRequest => Request::Read,
            _ => Request::Other,
        };
        let ends = op.is_last() || op.is_only();
        let action = c.handle_request(now, h.bth.psn, ends, kind, frame, room);
        let fate = |drop| Verdict {
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
                    emit.push(Emit {
                        bytes,
                        delay_ps: delay,
                        direction: Direction::RemoteToLocal,
                    });
                }
                fate(drop)
            }
        }
    }

    /// A frame from Remote toward Local.
    fn on_inbound(&mut self, now: TimePs, frame: &[u8]) -> Verdict {
        self.frames_seen[1] += 1;
        let Ok(h) = rnic_wire::peek_roce(frame) else {
            return Verdict::default();
        };
        let Some(src_ip) = src_ip(frame) else {
            return Verdict::default();
        };
        if h.bth.dest_qp == GSI_QPN {
            return self.on_cm(now, false, frame);
        }
        let key = (h.dst_ip, src_ip, h.udp_src_port);
        if !self.conns.contains_key(&key) {
            return Verdict::default();
        }
        let delay = self.process(now);
        let ans = match (h.bth.opcode, h.aeth.map(|a| a.syndrome)) {
            (Opcode::RcAck, Some(AethSyndrome::Ack { .. })) => Answer::Ack { psn: h.bth.psn },
            (Opcode::RcAck, Some(AethSyndrome::Nak(NakCode::PsnSequenceError))) => {
                Answer::SeqNak { psn: h.bth.psn }
            }
            (Opcode::RcReadResponseLast | Opcode::RcReadResponseOnly, _) => Answer::ReadResponse {
                psn: h.bth.psn,
                ends: true,
            },
            (Opcode::RcReadResponseFirst | Opcode::RcReadResponseMiddle, _) => {
                Answer::ReadResponse {
                    psn: h.bth.psn,
                    ends: false,
                }
            }
            _ => Answer::Other,
        };
        let Some((c, _)) = self.conns.get_mut(&key) else {
            return Verdict::default();
        };
        let was_resending = c.resending();
        let action = c.handle_response(now, h.bth.dest_qp, ans);
        self.sum_held(now);
        match action {
            ResponseAction::Forward => {
                self.stats.forwarded += 1;
                Verdict {
                    drop: false,
                    delay_ps: delay,
                }
            }
            ResponseAction::Absorb => {
                self.stats.absorbed += 1;
                Verdict {
                    drop: true,
                    delay_ps: 0,
                }
            }
            ResponseAction::AbsorbCoveredNak => {
                self.stats.absorbed += 1;
                self.stats.naks_covered += 1;
                Verdict {
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
                Verdict {
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
    fn on_timer(&mut self, now: TimePs, emit: &mut Vec<Emit>) {
        let mut timed_out = 0;
        for (c, _) in self.conns.values_mut() {
            match c.poll_timeout(now, self.timeout_ps) {
                Some(Expiry::Round(_)) => timed_out += 1,
                Some(Expiry::GaveUp { frames, bytes }) => {
                    self.stats.gave_up += 1;
                    self.stats.gave_up_frames += frames;
                    self.held_bytes -= bytes;
                }
                None => {}
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

    fn accel(learn_at_setup: bool) -> Accel {
        Accel::new(AccelConfig {
            buffer_bytes: 1 << 20,
            frame_ps: 0,
            latency_ps: 0,
            timeout_ps: 1_000_000,
            long_link: Port::new(crate::params::ModelParams::baseline().eth),
            learn_at_setup,
        })
    }

    fn pass(a: &mut Accel, now: TimePs, d: Direction, f: &[u8], emit: &mut Vec<Emit>) -> bool {
        !a.handle(now, d, f, emit).drop
    }

    #[test]
    fn connections_are_learned_by_parsing_the_cm_exchange_as_it_crosses() {
        let mut a = accel(true);
        let f = exchange();
        let mut emit = Vec::new();
        use Direction::{LocalToRemote as Out, RemoteToLocal as In};
        // The REQ alone teaches nothing (the responder's QPN is unknown).
        assert!(pass(&mut a, 0, In, &f[0], &mut emit));
        assert!(a.conns.is_empty());
        assert!(pass(&mut a, 1, Out, &f[1], &mut emit));
        assert!(pass(&mut a, 2, In, &f[2], &mut emit));
        assert!(emit.is_empty());
        // Local's QPN from its REP, Remote's QPN from the REQ, and Local's first PSN from
        // the REQ: the PSN Remote's receive queue asked for.
        let key = (LOCAL, REMOTE, rnic_wire::udp_entropy_port(0x11, 0x22));
        let (c, _) = a.conns.get(&key).expect("learned");
        assert_eq!(c.local_qpn, Some(0x11));
        assert_eq!(c.next_psn, 7);
        assert_eq!(a.connections(), 1);
        assert_eq!(a.stats().learned, 1);
    }

    #[test]
    fn a_corrupted_rep_or_traffic_learning_teaches_nothing() {
        use Direction::{LocalToRemote as Out, RemoteToLocal as In};
        let mut a = accel(true);
        let f = exchange();
        let mut emit = Vec::new();
        pass(&mut a, 0, In, &f[0], &mut emit);
        let mut bad = f[1].clone();
        let n = bad.len();
        bad[n - 10] ^= 1;
        pass(&mut a, 1, Out, &bad, &mut emit);
        assert!(a.conns.is_empty());
        let mut a = accel(false);
        pass(&mut a, 0, In, &f[0], &mut emit);
        pass(&mut a, 1, Out, &f[1], &mut emit);
        assert!(a.conns.is_empty());
    }

    /// Both ends of a learned connection, and anyone else, send anything: every opcode
    /// either way, PSNs near the connection's and anywhere, other QPs, ACKs, NAKs and RNR
    /// NAKs with any MSN (the fuzz corpus's headers), frames with a byte changed (with and
    /// without a fresh ICRC) or cut short, with the timer's rounds in between. The
    /// accelerator never panics and never holds more than its buffer.
    #[test]
    fn any_traffic_either_way_keeps_the_accelerator_in_bounds() {
        use rnic_loopback::corpus::random_roce;
        use Direction::{LocalToRemote as Out, RemoteToLocal as In};
        let mut a = accel(true);
        // Small enough to fill.
        a.buffer_bytes = 64 << 10;
        let buffer = a.buffer_bytes;
        let f = exchange();
        let mut emit = Vec::new();
        for (t, (d, frame)) in [(In, &f[0]), (Out, &f[1]), (In, &f[2])]
            .into_iter()
            .enumerate()
        {
            pass(&mut a, t as TimePs, d, frame, &mut emit);
        }
        let out = FrameAddr {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src_ip: LOCAL,
            dst_ip: REMOTE,
            udp_src_port: rnic_wire::udp_entropy_port(0x11, 0x22),
            dscp_ecn: 0,
            ttl: 64,
        };
        let opcodes = Opcode::ALL;
        let mut rng = rnic_sim::Rng::new(0x9E37_79B9_7F4A_7C15);
        let mut next = || rng.next_u64();
        let payload = [0xA5u8; 4096];
        let (mut now, mut buf) = (10, Vec::new());
        // Local's next PSN: most of its requests come in order, Remote answers behind them.
        let mut next_psn = 7u32;
        for _ in 0..40_000 {
            now += next() % 400_000;
            let (r, s) = (next(), next());
            let outbound = r & 1 == 0;
            let writes = [
                Opcode::RcWriteOnly,
                Opcode::RcWriteFirst,
                Opcode::RcWriteMiddle,
            ];
            let opcode = match ((r >> 1) % 4, outbound) {
                (0, _) => opcodes[(r >> 4) as usize % opcodes.len()],
                (_, true) => writes[(r >> 4) as usize % 3],
                (_, false) => Opcode::RcAck,
            };
            let behind = (s % 64) as u32;
            let psn = match ((r >> 12) % 8, outbound) {
                (0, _) => s as u32,
                (1, _) => next_psn.wrapping_add(behind),
                (_, true) => next_psn,
                (_, false) => next_psn.wrapping_sub(behind),
            } & 0xFF_FFFF;
            if outbound && psn == next_psn {
                next_psn = (next_psn + 1) & 0xFF_FFFF;
            }
            let dest_qp = match ((r >> 20) % 8, outbound) {
                (0, _) => (s >> 24) as u32 & 0xFF_FFFF,
                (_, true) => 0x22,
                (_, false) => 0x11,
            };
            let addr = if outbound { out } else { out.reversed() };
            // Every header the opcode names, its fields (an ACK's syndrome and MSN) at random.
            let mut headers = rnic_sim::Rng::new(s);
            let len = (s >> 32) as usize % 4097;
            let roce = random_roce(&mut headers, opcode, dest_qp, psn, &payload[..len]);
            let frame = rnic_wire::FrameRepr {
                addr,
                ip_ident: 0,
                roce,
            };
            frame.emit(&mut buf);
            if (r >> 28) % 8 == 0 {
                let at = (s >> 40) as usize % buf.len();
                buf[at] ^= 1 << ((s >> 56) % 8);
                if (r >> 31) & 1 == 0 {
                    let _ = rnic_wire::icrc::reseal(&mut buf);
                }
            }
            if (r >> 32) % 64 == 0 {
                buf.truncate((s >> 44) as usize % (buf.len() + 1));
            }
            let direction = if outbound { Out } else { In };
            a.handle(now, direction, &buf, &mut emit);
            // The timer's rounds, each resend in turn (a bounded number: each advances).
            for _ in 0..10_000 {
                match a.poll_timeout() {
                    Some(t) if t <= now => a.handle_timeout(now, &mut emit),
                    _ => break,
                }
            }
            emit.clear();
            assert!(a.held_bytes() <= buffer, "{} held", a.held_bytes());
        }
        let st = a.stats();
        // It did its work on the way: pseudo-ACKs, absorbed ACKs, NAK and timer rounds,
        // a full buffer.
        assert!(st.pseudo_acks > 0 && st.absorbed > 0, "{st:?}");
        assert!(st.nak_rounds > 0 && st.timeout_rounds > 0, "{st:?}");
        assert!(st.peak_held_bytes > buffer / 2, "{st:?}");
    }
}
