//! `-R`: the QP connected by RDMA CM over the real wire, as perftest's `-R` connects it.
//! The simulator's connection manager (`rnic_model::host::cm::agent`, a state machine
//! without I/O) runs here on the real clock: its REQ, REP and RTU MADs are RoCEv2 UD SENDs
//! from QP1 to the peer's QP1 with the GSI Q_Key, built and parsed by `rnic_wire::cm`, and
//! its RTR and RTS steps move the endpoint's QP. The client is the active side (it sends
//! the REQ), the server the passive one.
//!
//! A MAD that does not parse while the connection is being set up ends the run with the
//! parser's error, which names the field (a peer's REJ with its reason code); after the
//! connection is established such MADs are counted as refused frames (a late REQ or a
//! duplicate REP is still answered, as the agent does).

use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::time::Instant;

use anyhow::bail;
use rnic_model::host::cm::agent::{Action, Agent, ConnSpec, Params, State};
use rnic_wire::cm::{cm_frame, parse_cm_frame_from, rej_reason, CmRepr, GSI_QPN};
use rnic_wire::{FrameAddr, FrameRepr};

use super::endpoint::{qp_to_init, qp_to_rtr, qp_to_rts, Endpoint, QpTuning};
use super::oob::{gid_of, mtu_code, Dest};
use super::session::{IDLE_TURN, STALL};

/// CM response timeout, as IBA codes it (4.096 µs × 2^18 ≈ 1.07 s): rdma_cm's default is
/// 2^20 (4.3 s); a shorter one lets a lost MAD be repaired within the run's stall limit.
pub const RESPONSE_TIMEOUT: u8 = 18;
/// Resends of an unanswered REQ or REP before the connection fails.
pub const MAX_RETRIES: u8 = 8;
/// IPv4 TTL of the MADs (the kernel's default for its own datagrams).
const MAD_TTL: u8 = 64;

/// A MAD that reached QP1: its sender and message, or why it does not parse.
pub type MadArrival = Result<([u8; 4], CmRepr), String>;

/// The MAD of `frame` when the frame is addressed to QP1 (`None`: a frame for the engine).
/// A REJ becomes an error with its reason; anything else that is not a REQ, REP or RTU
/// the parser's error naming the field.
pub fn mad_of(frame: &[u8]) -> Option<MadArrival> {
    let bth = rnic_wire::peek_bth(frame).ok()?;
    if bth.dest_qp != GSI_QPN {
        return None;
    }
    let parsed = FrameRepr::parse(frame).map_err(|e| format!("a CM MAD to QP1: {e}"));
    Some(parsed.and_then(|f| {
        if let Some(reason) = rej_reason(f.roce.payload) {
            let from = Ipv4Addr::from(f.addr.src_ip);
            return Err(format!(
                "{from} rejected the connection (CM REJ, reason code {reason})"
            ));
        }
        parse_cm_frame_from(frame).map_err(|e| format!("a CM MAD to QP1: {e}"))
    }))
}

/// The connection manager of one live QP.
pub struct LiveCm {
    agent: Agent,
    conn: usize,
    /// MADs that reached QP1, not yet handled.
    pub inbox: VecDeque<MadArrival>,
    /// The agent's actions not yet carried out.
    out: Vec<Action>,
    /// When the agent's response timer is due, ps on the endpoint's clock.
    timer_ps: Option<u64>,
    /// The QP's own starting PSN and tuning (for RTS).
    my_psn: u32,
    tuning: QpTuning,
    peer_ip: Ipv4Addr,
    /// The peer's QP as the MADs gave it (after RTR).
    pub peer: Option<Dest>,
    /// PSN and IPv4 identification of the next MAD.
    mad_psn: u32,
    ip_ident: u16,
    /// Why the connection failed, when it did.
    failure: Option<String>,
    /// MADs sent (resends included) and received.
    pub mads_sent: u64,
    pub mads_received: u64,
}

impl LiveCm {
    fn new(ep: &Endpoint, t: &QpTuning, my_psn: u32, peer_ip: Ipv4Addr, active: bool) -> Self {
        let params = Params {
            ip: ep.local_ip().octets(),
            mad_ps: 0,
            response_timeout: RESPONSE_TIMEOUT,
            max_retries: MAX_RETRIES,
            path_mtu: mtu_code(t.mtu_bytes),
            retry_count: t.retry_cnt,
            rnr_retry: t.rnr_retry,
            ack_timeout: t.timeout,
            rd_atomic: 16,
            traffic_class: 0,
            hop_limit: MAD_TTL,
        };
        let mut agent = Agent::new(params);
        let conn = agent.add(ConnSpec {
            local_qpn: ep.qpn,
            start_psn: my_psn,
            peer_ip: peer_ip.octets(),
            index: 0,
            active,
        });
        LiveCm {
            agent,
            conn,
            inbox: VecDeque::new(),
            out: Vec::new(),
            timer_ps: None,
            my_psn,
            tuning: *t,
            peer_ip,
            peer: None,
            mad_psn: 0,
            ip_ident: 1,
            failure: None,
            mads_sent: 0,
            mads_received: 0,
        }
    }

    fn established(&self) -> bool {
        self.agent.state(self.conn) == State::Established
    }

    /// Handles the MADs that arrived and a due timer, then carries the actions out.
    pub fn serve(&mut self, ep: &mut Endpoint) -> anyhow::Result<()> {
        while let Some(arrival) = self.inbox.pop_front() {
            self.mads_received += 1;
            match arrival {
                Ok((src, m)) => self.agent.handle(ep.now_ps(), src, &m, &mut self.out),
                Err(_) if self.established() => ep.rx_refused += 1,
                Err(e) => bail!("RDMA CM: {e}"),
            }
        }
        if let Some(at) = self.timer_ps.filter(|&at| at <= ep.now_ps()) {
            self.timer_ps = None;
            self.agent.on_timer(at, self.conn, &mut self.out);
        }
        let actions = std::mem::take(&mut self.out);
        for a in actions {
            self.apply(ep, a)?;
        }
        Ok(())
    }

    fn apply(&mut self, ep: &mut Endpoint, a: Action) -> anyhow::Result<()> {
        match a {
            Action::Send { to, msg, .. } => self.send(ep, to, &msg)?,
            Action::Rtr {
                remote_qpn,
                remote_psn,
                ..
            } => {
                let peer = Dest {
                    out_reads: 16,
                    qpn: remote_qpn,
                    psn: remote_psn,
                    gid: gid_of(self.peer_ip),
                    ..Dest::default()
                };
                qp_to_rtr(&mut ep.dev, ep.qpn, &peer, &self.tuning)?;
                self.peer = Some(peer);
            }
            Action::Rts { .. } => {
                let Some(peer) = self.peer else {
                    bail!("RDMA CM: RTS before RTR (the agent's order is broken)");
                };
                qp_to_rts(
                    &mut ep.dev,
                    ep.qpn,
                    self.my_psn,
                    peer.out_reads,
                    &self.tuning,
                )?;
            }
            Action::Timer { at, .. } => self.timer_ps = Some(at),
            Action::Established { .. } => {}
            Action::Failed { .. } => {
                let wait_s = 4.096e-6 * f64::from(1u32 << RESPONSE_TIMEOUT);
                self.failure = Some(format!(
                    "RDMA CM: no answer from {}'s connection manager (QP1) after {} MADs sent \
                     {wait_s:.2} s apart",
                    self.peer_ip,
                    u32::from(MAX_RETRIES) + 1
                ));
            }
        }
        Ok(())
    }

    /// Sends `msg` to QP1 of `to` as a RoCEv2 UD SEND from QP1.
    fn send(&mut self, ep: &mut Endpoint, to: [u8; 4], msg: &CmRepr) -> anyhow::Result<()> {
        let addr = FrameAddr {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src_ip: ep.local_ip().octets(),
            dst_ip: to,
            udp_src_port: rnic_wire::udp_entropy_port(GSI_QPN, GSI_QPN),
            dscp_ecn: 0,
            ttl: MAD_TTL,
        };
        let mut frame = Vec::new();
        cm_frame(addr, self.ip_ident, self.mad_psn, msg, &mut frame);
        self.ip_ident = self.ip_ident.wrapping_add(1).max(1);
        self.mad_psn = (self.mad_psn + 1) & 0x00FF_FFFF;
        self.mads_sent += 1;
        ep.send_frame(&mut frame)
    }
}

/// Connects the endpoint's QP (in RESET) to the QP of `peer_ip` by RDMA CM: the client
/// (`active`) sends the REQ with its QPN and starting PSN `my_psn`, the server answers with a
/// REP, the client with an RTU. Returns the peer's QP (its QPN and starting PSN) once this
/// side's QP is in RTS; the connection manager stays on the endpoint to answer late MADs.
pub fn connect(
    ep: &mut Endpoint,
    t: &QpTuning,
    my_psn: u32,
    peer_ip: Ipv4Addr,
    active: bool,
) -> anyhow::Result<Dest> {
    qp_to_init(&mut ep.dev, ep.qpn, t)?;
    let mut cm = LiveCm::new(ep, t, my_psn, peer_ip, active);
    if active {
        cm.agent.connect(ep.now_ps(), cm.conn, &mut cm.out);
    }
    ep.cm = Some(cm);
    let start = Instant::now();
    loop {
        ep.turn(IDLE_TURN)?;
        let Some(cm) = ep.cm.as_mut() else {
            bail!("RDMA CM: the connection manager left the endpoint");
        };
        if let Some(why) = cm.failure.take() {
            bail!(why);
        }
        if cm.established() {
            let peer = cm.peer;
            return peer.ok_or_else(|| anyhow::anyhow!("RDMA CM: established without RTR"));
        }
        if start.elapsed() > STALL * 3 {
            bail!(
                "RDMA CM: no connection with {peer_ip} within {} s ({})",
                STALL.as_secs() * 3,
                if active { "no REP" } else { "no REQ or RTU" }
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_wire::cm::{CmMessage, CmRtu};

    fn rtu_frame() -> Vec<u8> {
        let addr = FrameAddr {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src_ip: [127, 0, 0, 2],
            dst_ip: [127, 0, 0, 1],
            udp_src_port: 0xC000,
            dscp_ecn: 0,
            ttl: MAD_TTL,
        };
        let msg = CmRepr {
            transaction_id: 9,
            message: CmMessage::Rtu(CmRtu {
                local_comm_id: 1,
                remote_comm_id: 2,
            }),
        };
        let mut frame = Vec::new();
        cm_frame(addr, 1, 0, &msg, &mut frame);
        frame
    }

    /// Offset of the MAD in a CM frame: Ethernet, IPv4, UDP, BTH, DETH.
    const MAD_AT: usize = 14 + 20 + 8 + 12 + 8;

    /// Changes MAD byte `at` to `value` and seals the frame again (a valid ICRC).
    fn with_mad_byte(mut frame: Vec<u8>, at: usize, value: u8) -> Vec<u8> {
        frame[MAD_AT + at] = value;
        rnic_wire::icrc::reseal(&mut frame).unwrap();
        frame
    }

    #[test]
    fn a_mad_to_qp1_is_parsed_and_other_frames_go_to_the_engine() {
        let frame = rtu_frame();
        let (src, m) = mad_of(&frame).unwrap().unwrap();
        assert_eq!(src, [127, 0, 0, 2]);
        assert!(matches!(m.message, CmMessage::Rtu(_)));
        let mut to_qp2 = frame.clone();
        to_qp2[14 + 20 + 8 + 7] = 2;
        assert!(mad_of(&to_qp2).is_none(), "QP 2's frames are the engine's");
        assert!(mad_of(&frame[..30]).is_none(), "too short for a BTH");
    }

    #[test]
    fn bad_mads_are_errors_naming_the_field() {
        let bad_class = with_mad_byte(rtu_frame(), 1, 0x04);
        let e = mad_of(&bad_class).unwrap().unwrap_err();
        assert!(e.contains("management class"), "{e}");
        // An MRA (attribute 0x11): not a message rnic's CM handles.
        let mra = with_mad_byte(rtu_frame(), 17, 0x11);
        let e = mad_of(&mra).unwrap().unwrap_err();
        assert!(e.contains("attribute id"), "{e}");
        // A REJ (attribute 0x12) with reason 28 (consumer reject).
        let rej = with_mad_byte(with_mad_byte(rtu_frame(), 17, 0x12), 35, 28);
        let e = mad_of(&rej).unwrap().unwrap_err();
        assert!(
            e.contains("127.0.0.2 rejected") && e.contains("reason code 28"),
            "{e}"
        );
        // A corrupted frame: its ICRC no longer matches.
        let mut corrupt = rtu_frame();
        corrupt[MAD_AT + 30] ^= 1;
        let e = mad_of(&corrupt).unwrap().unwrap_err();
        assert!(
            e.contains("a CM MAD to QP1") && e.to_lowercase().contains("icrc"),
            "{e}"
        );
    }
}
