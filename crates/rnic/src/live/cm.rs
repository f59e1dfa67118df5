//! `-R`: QPs connected by RDMA CM over the real wire, as perftest's `-R` connects them
//! through librdmacm and the kernel's `rdma_cm`. The simulator's connection manager
//! (`rnic_model::host::cm::agent`, a state machine without I/O) runs here on the real clock:
//! its REQ, REP and RTU MADs are RoCEv2 UD SENDs from QP1 to the peer's QP1 with the GSI
//! Q_Key, built and parsed by `rnic_wire::cm`, and its RTR and RTS steps move the endpoint's
//! QPs. The client is the active side (it sends the REQs), the server the passive one.
//!
//! What `rdma_cm` adds on the wire is added and checked here, not in the agent: the REQ's
//! service id names RDMA CM's TCP port space and the server's port (`-p`), its private data
//! starts with RDMA CM's address header (`rnic_wire::cma`). The passive side takes the
//! connections in the order their REQs arrive (perftest's control QP first, then the test's),
//! and each QP's path MTU from its REQ, as IBA has the passive side do. A DREQ is answered
//! with a DREP; [`LiveCm::disconnect`] sends this side's DREQs.
//!
//! A MAD that does not parse while the connections are being set up ends the run with the
//! parser's error, which names the field (a peer's REJ with its reason code); after they are
//! established such MADs are counted as refused frames (a late REQ or a duplicate REP is
//! still answered, as the agent does).

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::time::Instant;

use anyhow::bail;
use rnic_model::host::cm::agent::{
    cma_field, set_cma_field, Action, Agent, ConnSpec, Params, State,
};
use rnic_transport::ServiceType;
use rnic_wire::cm::{
    cm_frame, parse_cm_frame_from, rej_reason, CmDrep, CmDreq, CmMessage, CmRepr, CmReq, CmSidrReq,
    GSI_QPN,
};
use rnic_wire::cma::{
    ip_service_id, parse_ip_service_id, CmaHeaderRepr, PORT_SPACE_TCP, PORT_SPACE_UDP, UDP_QKEY,
};
use rnic_wire::{FrameAddr, FrameRepr};

use super::endpoint::{
    qp_to_init, qp_to_init_qkey, qp_to_rtr, qp_to_rts, Endpoint, QpTuning, DEFAULT_TRAFFIC_CLASS,
    MAX_OUT_READS,
};
use super::oob::{gid_of, mtu_code, Dest};
use super::session::{random_comm_id_base, IDLE_TURN, STALL};

/// CM response timeout, as IBA codes it (4.096 µs × 2^18 ≈ 1.07 s): rdma_cm's default is
/// 2^20 (4.3 s); a shorter one lets a lost MAD be repaired within the run's stall limit.
pub const RESPONSE_TIMEOUT: u8 = 18;
/// Resends of an unanswered REQ, REP or DREQ before the connection fails.
pub const MAX_RETRIES: u8 = 8;
/// IPv4 TTL of the MADs (the kernel's default for its own datagrams).
const MAD_TTL: u8 = 64;

/// A MAD that reached QP1: its sender and message, or why it is not one rnic's CM takes.
pub type MadArrival = Result<([u8; 4], CmRepr), MadRefusal>;

/// Why a MAD to QP1 is not a message the connection manager handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MadRefusal {
    /// A REJ: the peer refused the connection, with IBA's reason code.
    Rejected { from: Ipv4Addr, reason: u16 },
    /// A SIDR_REP saying nothing listens for the service yet (status 1): what came.
    NotListening(String),
    /// Not a REQ, REP, RTU, DREQ or DREP that parses: the parser's error naming the field.
    Malformed(String),
}

impl std::fmt::Display for MadRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MadRefusal::Rejected { from, reason } => write!(
                f,
                "{from} rejected the connection (CM REJ, reason code {reason})"
            ),
            MadRefusal::NotListening(what) => write!(f, "{what}"),
            MadRefusal::Malformed(why) => write!(f, "a CM MAD to QP1: {why}"),
        }
    }
}

/// The MAD of `frame` when the frame is addressed to QP1 (`None`: a frame for the engine).
pub fn mad_of(frame: &[u8]) -> Option<MadArrival> {
    let bth = rnic_wire::peek_bth(frame).ok()?;
    if bth.dest_qp != GSI_QPN {
        return None;
    }
    let malformed = |e: &dyn std::fmt::Display| MadRefusal::Malformed(e.to_string());
    let parsed = FrameRepr::parse(frame).map_err(|e| malformed(&e));
    Some(parsed.and_then(|f| {
        if let Some(reason) = rej_reason(f.roce.payload) {
            let from = Ipv4Addr::from(f.addr.src_ip);
            return Err(MadRefusal::Rejected { from, reason });
        }
        parse_cm_frame_from(frame).map_err(|e| malformed(&e))
    }))
}

/// One QP the connection manager connects: prepared before its REQ goes or arrives.
#[derive(Debug, Clone, Copy)]
pub struct CmQp {
    pub qpn: u32,
    /// The PSN the QP's receive queue expects first (a random pick). It goes to the peer in
    /// the REQ or REP and the peer sends from it; this QP sends from the PSN the peer's
    /// message asks for (Linux's CM does the same).
    pub rq_psn: u32,
    pub tuning: QpTuning,
}

/// A connection's end beyond what the agent keeps: its QP, the peer's QP once known, and
/// its teardown.
#[derive(Debug, Clone)]
struct LiveConn {
    qp: CmQp,
    /// The peer's QP as the MADs gave it (after RTR).
    peer: Option<Dest>,
    /// The path MTU the connection uses, bytes (passive side: the REQ's).
    mtu_bytes: u32,
    /// A DREQ went or came, and was answered (or given up on).
    closed: bool,
    /// DREQs sent, and when the next is due.
    dreqs_sent: u32,
    dreq_due_ps: Option<u64>,
}

/// The connection manager of a live run's QPs.
pub struct LiveCm {
    /// `None` on the passive side until the first REQ names the peer.
    agent: Option<Agent>,
    params: Params,
    active: bool,
    /// The server's port (`-p`): the service id names it.
    port: u16,
    peer_ip: Option<Ipv4Addr>,
    conns: Vec<LiveConn>,
    /// Passive side: the connection number of each REQ, by the peer's communication id.
    req_conn: HashMap<u32, usize>,
    /// MADs that reached QP1, not yet handled.
    pub inbox: VecDeque<MadArrival>,
    /// The agent's actions not yet carried out.
    out: Vec<Action>,
    /// When each connection's agent timer is due, ps on the endpoint's clock.
    timers_ps: Vec<Option<u64>>,
    /// PSN and IPv4 identification of the next MAD.
    mad_psn: u32,
    ip_ident: u16,
    /// Why the connection failed, when it did.
    failure: Option<String>,
    /// Active side: the REJ that answered the REQ being connected, until `connect` reads it.
    rejected: Option<MadRefusal>,
    /// MADs sent (resends included) and received.
    pub mads_sent: u64,
    pub mads_received: u64,
}

impl LiveCm {
    /// A connection manager for `qps` (connection k is `qps[k]`, each in RESET), toward
    /// `peer_ip` (the active side's; the passive side learns it from the first REQ).
    pub fn new(
        ep: &mut Endpoint,
        qps: &[CmQp],
        port: u16,
        peer_ip: Option<Ipv4Addr>,
        active: bool,
    ) -> anyhow::Result<Self> {
        let t = &qps[0].tuning;
        let params = Params {
            ip: ep.local_ip().octets(),
            mad_ps: 0,
            response_timeout: RESPONSE_TIMEOUT,
            max_retries: MAX_RETRIES,
            path_mtu: mtu_code(t.mtu_bytes),
            retry_count: t.retry_cnt,
            rnr_retry: t.rnr_retry,
            ack_timeout: t.timeout,
            // perftest's conn_param: its -o as both the responder resources and the
            // initiator depth.
            rd_atomic: t.out_reads.clamp(1, MAX_OUT_READS) as u8,
            comm_id_base: random_comm_id_base(),
            // perftest's -T: the path's traffic class, which the REQ carries.
            traffic_class: t.traffic_class.unwrap_or(DEFAULT_TRAFFIC_CLASS),
            hop_limit: MAD_TTL,
        };
        let mut conns = Vec::new();
        for qp in qps {
            if qp.tuning.service == ServiceType::Ud {
                // rdma_cm gives the UD QPs of its UDP port space its own Q_Key.
                qp_to_init_qkey(&mut ep.dev, qp.qpn, &qp.tuning, UDP_QKEY)?;
            } else {
                qp_to_init(&mut ep.dev, qp.qpn, &qp.tuning)?;
            }
            conns.push(LiveConn {
                qp: *qp,
                peer: None,
                mtu_bytes: qp.tuning.mtu_bytes,
                closed: false,
                dreqs_sent: 0,
                dreq_due_ps: None,
            });
        }
        let mut cm = LiveCm {
            agent: None,
            params,
            active,
            port,
            peer_ip,
            timers_ps: vec![None; conns.len()],
            conns,
            req_conn: HashMap::new(),
            inbox: VecDeque::new(),
            out: Vec::new(),
            mad_psn: 0,
            ip_ident: 1,
            failure: None,
            rejected: None,
            mads_sent: 0,
            mads_received: 0,
        };
        if let Some(ip) = peer_ip {
            cm.start_agent(ip);
        }
        Ok(cm)
    }

    /// The agent, with every connection toward `peer_ip` added.
    fn start_agent(&mut self, peer_ip: Ipv4Addr) {
        let mut agent = Agent::new(self.params);
        for (k, c) in self.conns.iter().enumerate() {
            agent.add(ConnSpec {
                local_qpn: c.qp.qpn,
                rq_psn: c.qp.rq_psn,
                peer_ip: peer_ip.octets(),
                index: k as u32,
                active: self.active,
                sidr: c.qp.tuning.service == ServiceType::Ud,
            });
        }
        self.peer_ip = Some(peer_ip);
        self.agent = Some(agent);
    }

    fn established(&self, conn: usize) -> bool {
        self.agent
            .as_ref()
            .is_some_and(|a| a.state(conn) == State::Established)
    }

    fn all_established(&self) -> bool {
        (0..self.conns.len()).all(|k| self.established(k))
    }

    /// Handles the MADs that arrived and the timers that are due, then carries the actions
    /// out.
    pub fn serve(&mut self, ep: &mut Endpoint) -> anyhow::Result<()> {
        while let Some(arrival) = self.inbox.pop_front() {
            self.mads_received += 1;
            match arrival {
                Ok((src, m)) => self.take(ep, src, m)?,
                Err(_) if self.all_established() => ep.rx_refused += 1,
                Err(e @ MadRefusal::Rejected { .. }) if self.active => self.rejected = Some(e),
                Err(e) => bail!("RDMA CM: {e}"),
            }
        }
        let now = ep.now_ps();
        for conn in 0..self.timers_ps.len() {
            if let Some(at) = self.timers_ps[conn].filter(|&at| at <= now) {
                self.timers_ps[conn] = None;
                if let Some(agent) = self.agent.as_mut() {
                    agent.on_timer(at, conn, &mut self.out);
                }
            }
        }
        self.resend_due_dreqs(ep)?;
        let actions = std::mem::take(&mut self.out);
        for a in actions {
            self.apply(ep, a)?;
        }
        Ok(())
    }

    /// One MAD from `src`: teardown here, the rest through the agent (a REQ after RDMA CM's
    /// service id and header are checked).
    fn take(&mut self, ep: &mut Endpoint, src: [u8; 4], mut m: CmRepr) -> anyhow::Result<()> {
        let now = ep.now_ps();
        match m.message {
            CmMessage::Dreq(d) => return self.on_dreq(ep, src, m.transaction_id, &d),
            CmMessage::Drep(d) => {
                self.close_by_local_id(d.remote_comm_id);
                return Ok(());
            }
            _ => {}
        }
        let refused = match &mut m.message {
            CmMessage::Req(r) if !self.active => !self.accept_req(ep, src, r)?,
            CmMessage::SidrReq(r) if !self.active => !self.accept_sidr_req(ep, src, r)?,
            _ => false,
        };
        if refused {
            ep.rx_refused += 1;
            return Ok(());
        }
        match self.agent.as_mut() {
            Some(agent) => agent.handle(now, src, &m, &mut self.out),
            None => ep.rx_refused += 1,
        }
        Ok(())
    }

    /// Passive side: checks a REQ's service id and RDMA CM header, gives it the number of the
    /// connection it opens (the next one not yet requested; a repeated REQ keeps its number),
    /// and takes its path MTU. `false`: a REQ from another host than the first one's, or one
    /// for more connections than this side prepared.
    fn accept_req(&mut self, ep: &Endpoint, src: [u8; 4], r: &mut CmReq) -> anyhow::Result<bool> {
        self.check_rdma_cm(
            ep,
            src,
            ("REQ", PORT_SPACE_TCP),
            r.service_id,
            &r.private_data,
        )?;
        let Some(conn) = self.number_request(src, r.local_comm_id) else {
            return Ok(false);
        };
        let mtu_bytes = match r.path_mtu {
            code @ 1..=5 => 128u32 << code,
            code => bail!("RDMA CM: the REQ's path MTU code {code} is not 1 to 5 (256 to 4096 B)"),
        };
        self.conns[conn].mtu_bytes = mtu_bytes;
        // The agent reads the connection's number where its own REQs put it, after the
        // header (the peer's application data there is not the agent's).
        set_cma_field(&mut r.private_data, 0, conn as u32);
        Ok(true)
    }

    /// Passive side: a request's service id must name this side's port in `kind`'s port
    /// space, and its private data must start with RDMA CM's header from `src` to here.
    fn check_rdma_cm(
        &self,
        ep: &Endpoint,
        src: [u8; 4],
        (what, space_wanted): (&str, u16),
        service_id: u64,
        private_data: &[u8],
    ) -> anyhow::Result<()> {
        let from = Ipv4Addr::from(src);
        let (space, port) = parse_ip_service_id(service_id)
            .map_err(|e| anyhow::anyhow!("RDMA CM: a {what} from {from}: {e}"))?;
        if space != space_wanted || port != self.port {
            bail!(
                "RDMA CM: a {what} from {from} for port {port} in port space {space:#06x}; this \
                 side listens on port {} in port space {space_wanted:#06x}",
                self.port
            );
        }
        let header = rnic_wire::cma::Packet::new_checked(private_data)
            .and_then(|p| CmaHeaderRepr::parse(&p))
            .map_err(|e| anyhow::anyhow!("RDMA CM: a {what} from {from}: {e}"))?;
        if header.dst_ip != ep.local_ip().octets() || header.src_ip != src {
            bail!(
                "RDMA CM: a {what} from {from} whose RDMA CM header names {} → {}",
                Ipv4Addr::from(header.src_ip),
                Ipv4Addr::from(header.dst_ip)
            );
        }
        Ok(())
    }

    /// Passive side: the number of the connection a request from `src` opens (the next one
    /// not yet requested; a repeated request, by the peer's id `peer_id`, keeps its number),
    /// or `None` for another host than the first request's, or more connections than this
    /// side prepared.
    fn number_request(&mut self, src: [u8; 4], peer_id: u32) -> Option<usize> {
        if self.agent.is_none() {
            self.start_agent(Ipv4Addr::from(src));
        }
        if self.peer_ip != Some(Ipv4Addr::from(src)) {
            return None;
        }
        let next = self.req_conn.len();
        let conn = *self.req_conn.entry(peer_id).or_insert(next);
        (conn < self.conns.len()).then_some(conn)
    }

    /// Passive side: checks a SIDR_REQ as a REQ ([`LiveCm::accept_req`]) and gives the agent
    /// the connection's number and the client's QPN in its private data (rnic's client puts
    /// its QPN after RDMA CM's header; from another client it reads 0, and the QPN comes
    /// from the keys exchanged after).
    fn accept_sidr_req(
        &mut self,
        ep: &Endpoint,
        src: [u8; 4],
        r: &mut CmSidrReq,
    ) -> anyhow::Result<bool> {
        self.check_rdma_cm(
            ep,
            src,
            ("SIDR_REQ", PORT_SPACE_UDP),
            r.service_id,
            &r.private_data,
        )?;
        let Some(conn) = self.number_request(src, r.request_id) else {
            return Ok(false);
        };
        if self.conns[conn].qp.tuning.service != ServiceType::Ud {
            bail!(
                "RDMA CM: a SIDR_REQ from {} for connection {conn}, whose QP is not UD",
                Ipv4Addr::from(src)
            );
        }
        // rnic's client puts its QPN right after the header; the agent reads the
        // connection's number there and the QPN after it, as its own SIDR_REQs carry them.
        let client_qpn = cma_field(&r.private_data, 0);
        set_cma_field(&mut r.private_data, 0, conn as u32);
        set_cma_field(&mut r.private_data, 1, client_qpn);
        Ok(true)
    }

    fn apply(&mut self, ep: &mut Endpoint, a: Action) -> anyhow::Result<()> {
        match a {
            Action::Send { to, mut msg, .. } => {
                match msg.message {
                    CmMessage::Req(ref mut r) => self.dress_req(ep, r),
                    CmMessage::SidrReq(ref mut r) => self.dress_sidr_req(ep, r),
                    _ => {}
                }
                self.send(ep, to, &msg)?;
            }
            Action::Rtr {
                conn,
                remote_qpn,
                rq_psn,
                dest_rd_atomic,
                traffic_class,
            } => {
                let Some(peer_ip) = self.peer_ip else {
                    bail!("RDMA CM: RTR before the peer is known");
                };
                let c = &mut self.conns[conn];
                let peer = Dest {
                    qpn: remote_qpn,
                    psn: rq_psn,
                    gid: gid_of(peer_ip),
                    ..Dest::default()
                };
                // The READs this side answers at once: its own -o when it listens, the
                // REP's initiator depth when it connects (the agent says which).
                let tuning = QpTuning {
                    mtu_bytes: c.mtu_bytes,
                    out_reads: u32::from(dest_rd_atomic),
                    traffic_class: Some(traffic_class),
                    ..c.qp.tuning
                };
                qp_to_rtr(&mut ep.dev, c.qp.qpn, &peer, &tuning)?;
                c.peer = Some(peer);
            }
            Action::Rts {
                conn,
                sq_psn,
                rd_atomic,
                retry_count,
                rnr_retry,
            } => {
                let c = &mut self.conns[conn];
                let Some(peer) = c.peer.as_mut() else {
                    bail!("RDMA CM: RTS before RTR (the agent's order is broken)");
                };
                // The READs this side posts at once: its own -o when it listens (as
                // perftest's rdma_accept), the REP's responder resources when it connects.
                peer.out_reads = u32::from(rd_atomic);
                // The retry counts as the kernel's CM sets them (the agent says whose).
                let tuning = QpTuning {
                    retry_cnt: retry_count,
                    rnr_retry,
                    ..c.qp.tuning
                };
                qp_to_rts(&mut ep.dev, c.qp.qpn, sq_psn, peer.out_reads, &tuning)?;
            }
            Action::Timer { at, conn } => self.timers_ps[conn] = Some(at),
            Action::UdUp {
                conn,
                remote_qpn,
                qkey,
            } => self.ud_up(ep, conn, remote_qpn, qkey)?,
            Action::Established { .. } => {}
            Action::Failed {
                unanswered: true, ..
            } => self.failure = Some(self.no_answer(self.params.max_retries)),
            Action::Failed { reason, .. } => self.failure = Some(format!("RDMA CM: {reason}")),
            // The server may not listen yet: the connect loop asks again, as after a REJ.
            Action::NotListening { reason, .. } => {
                self.rejected = Some(MadRefusal::NotListening(reason))
            }
        }
        Ok(())
    }

    /// What RDMA CM puts in a REQ: the service id of the server's port, and its address
    /// header at the start of the private data (the agent's own header names the
    /// simulator's addresses and port, and the connection's number after it, which the
    /// passive side here does not read).
    fn dress_req(&self, ep: &Endpoint, r: &mut CmReq) {
        r.service_id = ip_service_id(PORT_SPACE_TCP, self.port);
        let header = CmaHeaderRepr {
            src_port: active_port(r.local_qpn),
            src_ip: ep.local_ip().octets(),
            dst_ip: self.peer_ip.map_or([0; 4], |ip| ip.octets()),
        };
        r.private_data = [0; rnic_wire::cm::REQ_PRIVATE_DATA_LEN];
        header.emit(&mut r.private_data);
    }

    /// What RDMA CM puts in a SIDR_REQ: the service id of the server's port in the UDP port
    /// space, its address header at the start of the private data; rnic's client adds its
    /// QPN after the header (the agent's own header and fields there are the simulator's:
    /// the connection's number, then the QPN).
    fn dress_sidr_req(&self, ep: &Endpoint, r: &mut CmSidrReq) {
        let qpn = cma_field(&r.private_data, 1).to_be_bytes();
        r.service_id = ip_service_id(PORT_SPACE_UDP, self.port);
        let header = CmaHeaderRepr {
            src_port: active_port(u32::from_be_bytes(qpn)),
            src_ip: ep.local_ip().octets(),
            dst_ip: self.peer_ip.map_or([0; 4], |ip| ip.octets()),
        };
        r.private_data = [0; rnic_wire::cm::SIDR_REQ_PRIVATE_DATA_LEN];
        header.emit(&mut r.private_data);
        let at = rnic_wire::cma::HEADER_LEN;
        r.private_data[at..at + 4].copy_from_slice(&qpn);
    }

    /// A UD connection is resolved: its QP (in INIT with the UDP Q_Key) goes to RTS with
    /// the peer's QP as its address handle's. The peer's Q_Key must be the one this side's
    /// QP has: the engine sends with its QP's own. perftest sends no DREQ for a UD
    /// connection, and neither side waits for one.
    fn ud_up(
        &mut self,
        ep: &mut Endpoint,
        conn: usize,
        remote_qpn: u32,
        qkey: u32,
    ) -> anyhow::Result<()> {
        if qkey != UDP_QKEY {
            bail!("RDMA CM: the SIDR_REP's Q_Key {qkey:#x} is not RDMA CM's {UDP_QKEY:#x}");
        }
        let Some(peer_ip) = self.peer_ip else {
            bail!("RDMA CM: a UD QP up before the peer is known");
        };
        let c = &mut self.conns[conn];
        let peer = Dest {
            qpn: remote_qpn,
            gid: gid_of(peer_ip),
            ..Dest::default()
        };
        qp_to_rtr(&mut ep.dev, c.qp.qpn, &peer, &c.qp.tuning)?;
        qp_to_rts(&mut ep.dev, c.qp.qpn, c.qp.rq_psn, 0, &c.qp.tuning)?;
        c.peer = Some(peer);
        c.closed = true;
        Ok(())
    }

    fn no_answer(&self, retries: u8) -> String {
        let wait_s = 4.096e-6 * f64::from(1u32 << RESPONSE_TIMEOUT);
        format!(
            "RDMA CM: no answer from {}'s connection manager (QP1) after {} MADs sent \
             {wait_s:.2} s apart",
            self.peer_ip.map_or("the peer".into(), |ip| ip.to_string()),
            u32::from(retries) + 1
        )
    }

    /// A DREQ: answered with a DREP (also when it names no connection of this side, as
    /// IBA has a CM do, so a peer whose DREP was lost stops asking).
    fn on_dreq(
        &mut self,
        ep: &mut Endpoint,
        src: [u8; 4],
        tid: u64,
        d: &CmDreq,
    ) -> anyhow::Result<()> {
        self.close_by_local_id(d.remote_comm_id);
        let drep = CmRepr {
            transaction_id: tid,
            message: CmMessage::Drep(CmDrep {
                local_comm_id: d.remote_comm_id,
                remote_comm_id: d.local_comm_id,
            }),
        };
        self.send(ep, src, &drep)
    }

    /// Connection `conn` is closed: the peer's DREQ came, or the DREP to ours.
    pub fn closed(&self, conn: usize) -> bool {
        self.conns.get(conn).is_some_and(|c| c.closed)
    }

    /// Marks the connection whose communication id on this side is `local_id` closed.
    fn close_by_local_id(&mut self, local_id: u32) {
        let Some(agent) = self.agent.as_ref() else {
            return;
        };
        if let Some(k) = (0..self.conns.len()).find(|&k| agent.comm_ids(k).0 == local_id) {
            self.conns[k].closed = true;
            self.conns[k].dreq_due_ps = None;
        }
    }

    /// Sends connection `conn`'s DREQ (or again, when its DREP is overdue).
    fn send_dreq(&mut self, ep: &mut Endpoint, conn: usize) -> anyhow::Result<()> {
        let (Some(agent), Some(to)) = (self.agent.as_ref(), self.peer_ip) else {
            self.conns[conn].closed = true;
            return Ok(());
        };
        let (local, remote) = agent.comm_ids(conn);
        let remote_qpn = self.conns[conn].peer.map_or(0, |p| p.qpn);
        let dreq = CmRepr {
            transaction_id: u64::from(u32::from_be_bytes(self.params.ip)) << 32
                | 0x8000_0000
                | u64::from(local),
            message: CmMessage::Dreq(CmDreq {
                local_comm_id: local,
                remote_comm_id: remote,
                remote_qpn,
            }),
        };
        self.send(ep, to.octets(), &dreq)?;
        let c = &mut self.conns[conn];
        c.dreqs_sent += 1;
        c.dreq_due_ps = Some(ep.now_ps() + self.params.timeout_ps());
        Ok(())
    }

    fn resend_due_dreqs(&mut self, ep: &mut Endpoint) -> anyhow::Result<()> {
        let now = ep.now_ps();
        for k in 0..self.conns.len() {
            let c = &self.conns[k];
            if c.closed || c.dreq_due_ps.is_none_or(|at| at > now) {
                continue;
            }
            if c.dreqs_sent > u32::from(MAX_RETRIES) {
                eprintln!(
                    "rnic live: {} (DREQ of QP {:#x}); leaving the connection",
                    self.no_answer(MAX_RETRIES),
                    c.qp.qpn
                );
                self.conns[k].closed = true;
                continue;
            }
            self.send_dreq(ep, k)?;
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

    /// The path MTU connection `conn` uses, bytes.
    pub fn mtu_bytes(&self, conn: usize) -> u32 {
        self.conns[conn].mtu_bytes
    }
}

/// The port RDMA CM's header names as the active side's own: an ephemeral port (49152 and
/// up) that differs between the QPs of one run.
fn active_port(qpn: u32) -> u16 {
    0xC000 | (qpn & 0x3FFF) as u16
}

/// Connects connection `conn` of the endpoint's connection manager (its QP in INIT): the
/// client (active side) sends the REQ, the server waits for it, and each side's QP goes to
/// RTR and RTS as the agent says. Returns the peer's QP (its QPN and starting PSN) once this
/// side's QP is in RTS; the connection manager stays on the endpoint to answer late MADs.
pub fn connect(ep: &mut Endpoint, conn: usize) -> anyhow::Result<Dest> {
    let Some(cm) = ep.cm.as_mut() else {
        bail!("RDMA CM: the endpoint has no connection manager");
    };
    let active = cm.active;
    send_req(ep, conn);
    let (start, mut rejections) = (Instant::now(), 0);
    loop {
        ep.turn(IDLE_TURN)?;
        let Some(cm) = ep.cm.as_mut() else {
            bail!("RDMA CM: the connection manager left the endpoint");
        };
        if let Some(why) = cm.failure.take() {
            return Err(super::peer_failed(why));
        }
        if let Some(rej) = cm.rejected.take() {
            rejections += 1;
            if rejections >= REJECTED_REQ_TRIES {
                bail!("RDMA CM: {rej}, {REJECTED_REQ_TRIES} times {REJECTED_REQ_PAUSE:?} apart");
            }
            // perftest's client connects again after a pause: the server may not listen yet.
            pause_turning(ep, REJECTED_REQ_PAUSE)?;
            if let Some(agent) = ep.cm.as_mut().and_then(|c| c.agent.as_mut()) {
                agent.rejected(conn);
            }
            send_req(ep, conn);
            continue;
        }
        if cm.established(conn) {
            let peer = cm.conns[conn].peer;
            return peer.ok_or_else(|| anyhow::anyhow!("RDMA CM: established without RTR"));
        }
        if start.elapsed() > STALL * 3 {
            let peer = cm.peer_ip.map_or("the peer".into(), |ip| ip.to_string());
            bail!(
                "RDMA CM: no connection with {peer} within {} s ({})",
                STALL.as_secs() * 3,
                if active { "no REP" } else { "no REQ or RTU" }
            );
        }
    }
}

/// REQs a rejected connection is sent, and the pause before each new one: perftest's client
/// tries to connect 10 times, 100 ms apart, "in case the server is not ready at start".
const REJECTED_REQ_TRIES: u32 = 10;
const REJECTED_REQ_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Active side: the agent sends connection `conn`'s REQ (nothing on the passive side).
fn send_req(ep: &mut Endpoint, conn: usize) {
    let now = ep.now_ps();
    if let Some(cm) = ep.cm.as_mut().filter(|c| c.active) {
        if let Some(agent) = cm.agent.as_mut() {
            agent.connect(now, conn, &mut cm.out);
        }
    }
}

/// Keeps the endpoint turning (answering the peer) for `pause`.
fn pause_turning(ep: &mut Endpoint, pause: std::time::Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    while start.elapsed() < pause {
        ep.turn(IDLE_TURN)?;
    }
    Ok(())
}

/// Tears the endpoint's RDMA CM connections down: the active side sends its DREQs at once,
/// the passive side waits up to `wait` for the peer's (perftest's client sends them as it
/// exits) and then sends its own; returns once every connection has had its DREQ answered
/// (or the DREQ was given up on after its retries).
pub fn disconnect(ep: &mut Endpoint, wait: std::time::Duration) -> anyhow::Result<()> {
    let Some(cm) = ep.cm.as_ref() else {
        return Ok(());
    };
    let mut dreqs_due = cm.active;
    let start = Instant::now();
    loop {
        if dreqs_due {
            if let Some(mut cm) = ep.cm.take() {
                let open: Vec<usize> = (0..cm.conns.len())
                    .filter(|&k| !cm.conns[k].closed && cm.conns[k].dreqs_sent == 0)
                    .collect();
                let r = open.into_iter().try_for_each(|k| cm.send_dreq(ep, k));
                ep.cm = Some(cm);
                r?;
            }
        }
        ep.turn(IDLE_TURN)?;
        let Some(cm) = ep.cm.as_ref() else {
            return Ok(());
        };
        if cm.conns.iter().all(|c| c.closed) {
            return Ok(());
        }
        dreqs_due = cm.active || start.elapsed() > wait;
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
        let e = mad_of(&bad_class).unwrap().unwrap_err().to_string();
        assert!(e.contains("management class"), "{e}");
        // An MRA (attribute 0x11): not a message rnic's CM handles.
        let mra = with_mad_byte(rtu_frame(), 17, 0x11);
        let e = mad_of(&mra).unwrap().unwrap_err().to_string();
        assert!(e.contains("attribute id"), "{e}");
        // A REJ (attribute 0x12) with reason 28 (consumer reject).
        let rej = with_mad_byte(with_mad_byte(rtu_frame(), 17, 0x12), 35, 28);
        let e = mad_of(&rej).unwrap().unwrap_err();
        assert_eq!(
            e,
            MadRefusal::Rejected {
                from: Ipv4Addr::new(127, 0, 0, 2),
                reason: 28
            }
        );
        let e = e.to_string();
        assert!(
            e.contains("127.0.0.2 rejected") && e.contains("reason code 28"),
            "{e}"
        );
        // A corrupted frame: its ICRC no longer matches.
        let mut corrupt = rtu_frame();
        corrupt[MAD_AT + 30] ^= 1;
        let e = mad_of(&corrupt).unwrap().unwrap_err().to_string();
        assert!(
            e.contains("a CM MAD to QP1") && e.to_lowercase().contains("icrc"),
            "{e}"
        );
    }
}
