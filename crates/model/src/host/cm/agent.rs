//! One host's connection manager as a state machine without I/O: MADs in through
//! [`Agent::handle`], time through [`Agent::on_timer`], the connections it starts through
//! [`Agent::connect`]; each pushes [`Action`]s (send a MAD, move a QP to RTR or RTS, arm a
//! timer, report a connection established or failed) and the caller moves the bytes and the
//! QPs ([`super`]).
//!
//! The exchange is IBA's (Vol. 1 §12.6, what rdma_cm drives): the active side sends a REQ
//! with its QPN and starting PSN; the passive side binds the QP it prepared for that
//! connection, moves it to RTR toward the REQ's QPN and PSN and answers with a REP carrying
//! its own; the active side moves its QP to RTR and RTS and sends an RTU; the passive side
//! moves its QP to RTS. A REQ (or REP) unanswered after the CM response timeout is sent
//! again, at most `max_retries` times; then the connection fails. A duplicate REP is
//! answered with the RTU again (the first was lost). A duplicate REQ changes nothing and is
//! not answered: while the REP waits for its RTU, the REP's own timer sends it again (the
//! same REP, toward the QP the first REQ set), and answering each copy at once too would
//! double every REP on a network that duplicates frames; once the RTU came the REP had
//! arrived, and the REQ is stale.
//!
//! The passive side finds the QP of a REQ by the connection's number between the two hosts,
//! which the active side puts in the REQ's private data after rdma_cm's own header (as an
//! rdma_cm application's data follows it): perftest's server binds its k-th QP to the k-th
//! connection. The REQ's service id is rdma_cm's for perftest's TCP port, 18515.

use std::collections::HashMap;

use rnic_sim::TimePs;
use rnic_wire::cm::{ipv4_gid, CmMessage, CmRep, CmRepr, CmReq, CmRtu, REQ_PRIVATE_DATA_LEN};
use rnic_wire::cma::{ip_service_id, CmaHeaderRepr, HEADER_LEN, PORT_SPACE_TCP};

use super::settled::Settled;

mod sidr;

/// The port the simulated servers listen on (perftest's default).
const PORT: u16 = 18515;

/// Writes rdma_cm's header at the start of a REQ's or SIDR_REQ's `private_data` (IPv4,
/// the active side's address `src` and a port of its own, the passive side's `dst`), as
/// rdma_cm does, then `fields` big-endian: the application's own data, which perftest and
/// rnic put after it. The active side's port is the connection's number above 49152, as
/// an ephemeral port would be (rdma_cm picks one at random; the model's must not vary).
fn put_cma_private(
    private_data: &mut [u8],
    src: [u8; 4],
    dst: [u8; 4],
    index: u32,
    fields: &[u32],
) {
    let header = CmaHeaderRepr {
        src_port: 49152 | (index & 0x3fff) as u16,
        src_ip: src,
        dst_ip: dst,
    };
    header.emit(private_data);
    for (i, &f) in fields.iter().enumerate() {
        set_cma_field(private_data, i, f);
    }
}

/// Writes the `i`-th big-endian u32 after rdma_cm's header in `private_data`: the
/// connection's number (0) and, in a SIDR_REQ, the client's QPN (1).
pub fn set_cma_field(private_data: &mut [u8], i: usize, value: u32) {
    let at = HEADER_LEN + 4 * i;
    private_data[at..at + 4].copy_from_slice(&value.to_be_bytes());
}

/// The `i`-th big-endian u32 after rdma_cm's header in `private_data`
/// ([`set_cma_field`]).
pub fn cma_field(private_data: &[u8], i: usize) -> u32 {
    let at = HEADER_LEN + 4 * i;
    let mut b = [0u8; 4];
    b.copy_from_slice(&private_data[at..at + 4]);
    u32::from_be_bytes(b)
}

/// A connection's end as the host sets it up before the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnSpec {
    /// The local QP (created and in INIT).
    pub local_qpn: u32,
    /// The PSN the local QP's receive queue expects first. It travels in this side's REQ or
    /// REP, and the peer's QP sends from it: in Linux's CM (and so with rxe and perftest's
    /// `-R`) a message's starting PSN is its sender's receive PSN, and each QP takes its
    /// send PSN from the peer's message.
    pub rq_psn: u32,
    /// The peer host's IPv4 address.
    pub peer_ip: [u8; 4],
    /// The connection's number between the two hosts (the same on both sides).
    pub index: u32,
    /// This side sends the REQ.
    pub active: bool,
    /// A UD pair: resolved by a SIDR_REQ and SIDR_REP ([`sidr`]) instead of connected by a
    /// REQ, REP and RTU.
    pub sidr: bool,
}

/// Where a connection stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Passive side, no REQ yet (or active side, not started).
    Idle,
    /// Active side: REQ sent, waiting for the REP.
    ReqSent,
    /// Passive side: REP sent, waiting for the RTU.
    RepSent,
    /// Both QPs ready (this side's in RTS).
    Established,
    /// Retries exhausted.
    Failed,
}

/// What the caller does.
// A send holds its whole MAD (a SIDR_REQ's 216 bytes of private data): the actions are
// short-lived, in one reused buffer, so the size costs nothing a box would save.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `msg` to the host at `to` at `at`.
    Send {
        at: TimePs,
        to: [u8; 4],
        msg: CmRepr,
    },
    /// Move connection `conn`'s QP from INIT to RTR toward `remote_qpn`, expecting PSN
    /// `rq_psn` first (its own [`ConnSpec::rq_psn`]), answering at most `dest_rd_atomic`
    /// READs and atomics at once (`max_dest_rd_atomic`). As librdmacm sets it: the passive
    /// side's own [`Params::rd_atomic`], the active side's the REP's initiator depth. Its
    /// packets take the path's `traffic_class`: the REQ's (the active side's own
    /// [`Params::traffic_class`]), as a kernel's passive side takes the REQ's path.
    Rtr {
        conn: usize,
        remote_qpn: u32,
        rq_psn: u32,
        dest_rd_atomic: u8,
        traffic_class: u8,
    },
    /// Move connection `conn`'s QP from RTR to RTS, sending from `sq_psn` (the starting PSN
    /// of the peer's REQ or REP), with at most `rd_atomic` READs and atomics outstanding
    /// (`max_rd_atomic`): the passive side's own [`Params::rd_atomic`], the active side's the
    /// REP's responder resources, what the passive side answers at once. Its transport and
    /// RNR retry counts, as a kernel's CM sets them: the passive side's both from the REQ,
    /// the active side's its own retry count and the REP's RNR retry count.
    Rts {
        conn: usize,
        sq_psn: u32,
        rd_atomic: u8,
        retry_count: u8,
        rnr_retry: u8,
    },
    /// Call [`Agent::on_timer`] for `conn` at `at`.
    Timer { at: TimePs, conn: usize },
    /// UD connection `conn`'s QP goes to RTS (INIT, RTR and RTS at once, as rdma_cm brings a
    /// UD QP up) with the peer's `remote_qpn` as its address handle's QP and Q_Key `qkey`.
    UdUp {
        conn: usize,
        remote_qpn: u32,
        qkey: u32,
    },
    /// Connection `conn` is established on this side at `at`.
    Established { at: TimePs, conn: usize },
    /// Connection `conn` failed: `reason` says why; `unanswered`: its REQs (SIDR_REQs,
    /// REPs) went unanswered to the last retry, rather than the peer refusing it.
    Failed {
        conn: usize,
        reason: String,
        unanswered: bool,
    },
    /// Nothing listens yet for active connection `conn`'s service on the peer (a SIDR_REP
    /// of status 1, unsupported service ID, as a kernel's CM sends before its user listens):
    /// the caller may ask again after a pause, as perftest's client does after a refusal
    /// (see [`Agent::rejected`]); `reason` says what came.
    NotListening { conn: usize, reason: String },
}

/// What every REQ of a host carries besides the connection's own fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// This host's IPv4 address.
    pub ip: [u8; 4],
    /// Host CPU time per MAD received or sent, ps.
    pub mad_ps: TimePs,
    /// CM response timeout, 4.096 µs × 2^n.
    pub response_timeout: u8,
    /// Resends of an unanswered REQ or REP.
    pub max_retries: u8,
    /// IB MTU code of the path (5 = 4096 B).
    pub path_mtu: u8,
    /// The QPs' transport retry count, RNR retry count and local ACK timeout.
    pub retry_count: u8,
    pub rnr_retry: u8,
    pub ack_timeout: u8,
    /// Outstanding READs/atomics each way.
    pub rd_atomic: u8,
    /// Connection `i`'s communication id (a SIDR request's id) is `comm_id_base + i + 1`.
    /// The simulator's hosts start from 0; a live endpoint draws it at random, as Linux's
    /// CM does, so that the peer's CM does not take a new run's REQ or SIDR_REQ for a
    /// duplicate of an earlier run's it still remembers (it drops those unanswered).
    /// Below 2^31, so that no id wraps to 0.
    pub comm_id_base: u32,
    /// IPv4 TOS and TTL of the path.
    pub traffic_class: u8,
    pub hop_limit: u8,
}

impl Params {
    /// The response timeout, ps.
    pub fn timeout_ps(&self) -> TimePs {
        4_096_000u64 << self.response_timeout.min(40)
    }
}

/// One connection's end.
#[derive(Debug, Clone)]
struct Conn {
    spec: ConnSpec,
    state: State,
    /// The transaction (the active side's id, echoed by the passive side).
    tid: u64,
    remote_comm_id: u32,
    /// The PSN the QP sends from: the starting PSN of the peer's REQ or REP (0 until it came).
    sq_psn: u32,
    /// How many times the REQ (active) or REP (passive) has been sent.
    sent: u32,
    /// Passive: the REQ's transport and RNR retry counts, which its QP takes at RTS.
    req_retries: (u8, u8),
    /// When the pending timer is due (a timer event at another time is stale).
    deadline: Option<TimePs>,
}

/// One host's connection manager.
#[derive(Debug)]
pub struct Agent {
    params: Params,
    conns: Vec<Conn>,
    /// Passive connections by (peer address, connection number).
    listen: HashMap<([u8; 4], u32), usize>,
    /// After [`Agent::settle`] (every connection of the run established), what is left of
    /// the connections; `conns` and `listen` are then empty.
    settled: Option<Settled>,
    /// When the CM thread is free.
    busy_until: TimePs,
    /// MADs sent again after a timeout.
    pub resent: u64,
    /// MADs received that matched no connection or state (duplicates, strays).
    pub ignored: u64,
}

impl Agent {
    /// An agent with no connections.
    pub fn new(params: Params) -> Agent {
        Agent {
            params,
            conns: Vec::new(),
            listen: HashMap::new(),
            settled: None,
            busy_until: 0,
            resent: 0,
            ignored: 0,
        }
    }

    /// Adds a connection's end; returns its number on this host.
    pub fn add(&mut self, spec: ConnSpec) -> usize {
        let i = self.conns.len();
        if !spec.active {
            self.listen.insert((spec.peer_ip, spec.index), i);
        }
        self.conns.push(Conn {
            spec,
            state: State::Idle,
            tid: 0,
            remote_comm_id: 0,
            sq_psn: 0,
            sent: 0,
            req_retries: (0, 0),
            deadline: None,
        });
        i
    }

    /// Connection `conn`'s end (during setup: after [`Agent::settle`] the specs are gone).
    pub fn spec(&self, conn: usize) -> &ConnSpec {
        &self.conns[conn].spec
    }

    /// Connection `conn`'s communication ids: this side's and the peer's (0 until the peer's
    /// REQ or REP told it; during setup, before [`Agent::settle`]).
    pub fn comm_ids(&self, conn: usize) -> (u32, u32) {
        (self.comm_id(conn), self.conns[conn].remote_comm_id)
    }

    /// The communication id of connection `i` (never 0; see [`Params::comm_id_base`]).
    fn comm_id(&self, i: usize) -> u32 {
        (self.params.comm_id_base & 0x7FFF_FFFF) + i as u32 + 1
    }

    /// Connection `conn`'s state.
    pub fn state(&self, conn: usize) -> State {
        match self.settled {
            Some(_) => State::Established,
            None => self.conns[conn].state,
        }
    }

    /// Every connection of the run is established (on both sides): keeps only what a late
    /// MAD needs (`Settled`) and gives the rest back. Connections added later, or a
    /// connection not yet established, are a caller's bug.
    pub fn settle(&mut self) {
        debug_assert!(self.conns.iter().all(|c| c.state == State::Established));
        let mut s = Settled::with_capacity(self.conns.len());
        for c in &self.conns {
            s.push(c.spec.peer_ip, c.spec.active, c.remote_comm_id);
        }
        self.settled = Some(s);
        self.conns = Vec::new();
        self.listen = HashMap::new();
    }

    /// The CM thread handles one MAD from `now`; returns when it is done.
    fn work(&mut self, now: TimePs) -> TimePs {
        self.busy_until = self.busy_until.max(now) + self.params.mad_ps;
        self.busy_until
    }

    fn req(&self, conn: usize) -> CmRepr {
        let (c, p) = (&self.conns[conn], &self.params);
        let mut private_data = [0u8; REQ_PRIVATE_DATA_LEN];
        let index = c.spec.index;
        put_cma_private(&mut private_data, p.ip, c.spec.peer_ip, index, &[index]);
        CmRepr {
            transaction_id: c.tid,
            message: CmMessage::Req(CmReq {
                service_id: ip_service_id(PORT_SPACE_TCP, PORT),
                local_comm_id: self.comm_id(conn),
                local_qpn: c.spec.local_qpn,
                responder_resources: p.rd_atomic,
                initiator_depth: p.rd_atomic,
                remote_cm_response_timeout: p.response_timeout,
                starting_psn: c.spec.rq_psn,
                local_cm_response_timeout: p.response_timeout,
                retry_count: p.retry_count,
                pkey: 0xFFFF,
                path_mtu: p.path_mtu,
                rnr_retry_count: p.rnr_retry,
                max_cm_retries: p.max_retries,
                local_gid: ipv4_gid(p.ip),
                remote_gid: ipv4_gid(c.spec.peer_ip),
                hop_limit: p.hop_limit,
                traffic_class: p.traffic_class,
                local_ack_timeout: p.ack_timeout,
                private_data,
                ..CmReq::default()
            }),
        }
    }

    fn rep(&self, conn: usize) -> CmRepr {
        let (c, p) = (&self.conns[conn], &self.params);
        CmRepr {
            transaction_id: c.tid,
            message: CmMessage::Rep(CmRep {
                local_comm_id: self.comm_id(conn),
                remote_comm_id: c.remote_comm_id,
                local_qpn: c.spec.local_qpn,
                starting_psn: c.spec.rq_psn,
                responder_resources: p.rd_atomic,
                initiator_depth: p.rd_atomic,
                rnr_retry_count: p.rnr_retry,
                ..CmRep::default()
            }),
        }
    }

    fn rtu(&self, conn: usize) -> CmRepr {
        let c = &self.conns[conn];
        CmRepr {
            transaction_id: c.tid,
            message: CmMessage::Rtu(CmRtu {
                local_comm_id: self.comm_id(conn),
                remote_comm_id: c.remote_comm_id,
            }),
        }
    }

    /// Sends `msg` of `conn` from `now` (one MAD of CPU time) and, when it waits for an
    /// answer, arms the timer.
    fn send(&mut self, now: TimePs, conn: usize, msg: CmRepr, waits: bool, out: &mut Vec<Action>) {
        let at = self.work(now);
        out.push(Action::Send {
            at,
            to: self.conns[conn].spec.peer_ip,
            msg,
        });
        if waits {
            let due = at + self.params.timeout_ps();
            let c = &mut self.conns[conn];
            c.sent += 1;
            c.deadline = Some(due);
            out.push(Action::Timer { at: due, conn });
        }
    }

    /// Starts active connection `conn` at `now`: its REQ.
    pub fn connect(&mut self, now: TimePs, conn: usize, out: &mut Vec<Action>) {
        let c = &self.conns[conn];
        if !c.spec.active || c.state != State::Idle {
            return;
        }
        let tid = self.active_tid(conn);
        let c = &mut self.conns[conn];
        c.tid = tid;
        c.state = State::ReqSent;
        let req = if c.spec.sidr {
            self.sidr_req(conn)
        } else {
            self.req(conn)
        };
        self.send(now, conn, req, true, out);
    }

    /// The peer rejected connection `conn`'s REQ (it did not listen yet, say): the
    /// connection is as before [`Agent::connect`], which may send a new REQ. Nothing
    /// otherwise.
    pub fn rejected(&mut self, conn: usize) {
        let c = &mut self.conns[conn];
        if c.spec.active && c.state == State::ReqSent {
            c.state = State::Idle;
            c.deadline = None;
            c.sent = 0;
        }
    }

    /// A MAD from `src` reached this host at `now`.
    pub fn handle(&mut self, now: TimePs, src: [u8; 4], m: &CmRepr, out: &mut Vec<Action>) {
        let now = self.work(now);
        match m.message {
            CmMessage::Req(r) => self.on_req(now, src, m.transaction_id, &r, out),
            CmMessage::Rep(r) => self.on_rep(now, &r, out),
            CmMessage::Rtu(r) => self.on_rtu(now, &r, out),
            // The simulator's hosts never disconnect: a DREQ or DREP is a stray.
            CmMessage::Dreq(_) | CmMessage::Drep(_) => self.ignored += 1,
            CmMessage::SidrReq(r) => self.on_sidr_req(now, src, m.transaction_id, &r, out),
            CmMessage::SidrRep(r) => self.on_sidr_rep(now, &r, out),
        }
    }

    /// The connection `id` names as this host's communication id, if it is one.
    fn by_comm_id(&self, id: u32) -> Option<usize> {
        let first = self.comm_id(0);
        let i = id.checked_sub(first)? as usize;
        let n = self.settled.as_ref().map_or(self.conns.len(), Settled::len);
        (i < n).then_some(i)
    }

    /// The transaction id of active connection `conn` (the REQ's, echoed by the REP and RTU).
    fn active_tid(&self, conn: usize) -> u64 {
        u64::from(u32::from_be_bytes(self.params.ip)) << 32 | u64::from(self.comm_id(conn))
    }

    fn on_req(&mut self, now: TimePs, src: [u8; 4], tid: u64, r: &CmReq, out: &mut Vec<Action>) {
        let index = cma_field(&r.private_data, 0);
        let Some(&conn) = self.listen.get(&(src, index)) else {
            self.ignored += 1;
            return;
        };
        match self.conns[conn].state {
            State::Idle => {
                let c = &mut self.conns[conn];
                c.tid = tid;
                c.remote_comm_id = r.local_comm_id;
                c.sq_psn = r.starting_psn;
                c.req_retries = (r.retry_count, r.rnr_retry_count);
                c.state = State::RepSent;
                out.push(Action::Rtr {
                    conn,
                    remote_qpn: r.local_qpn,
                    rq_psn: c.spec.rq_psn,
                    dest_rd_atomic: self.params.rd_atomic,
                    traffic_class: r.traffic_class,
                });
                let rep = self.rep(conn);
                self.send(now, conn, rep, true, out);
            }
            // The REQ again: our REP was lost or is late; the REP timer resends it anyway.
            _ => self.ignored += 1,
        }
    }

    fn on_rep(&mut self, now: TimePs, r: &CmRep, out: &mut Vec<Action>) {
        let Some(conn) = self.by_comm_id(r.remote_comm_id) else {
            self.ignored += 1;
            return;
        };
        if let Some(s) = &self.settled {
            // Settled: every connection is established; a duplicate REP gets the RTU again.
            match s.rtu_again(conn, r.local_comm_id) {
                Some(to) => {
                    let rtu = CmRepr {
                        transaction_id: self.active_tid(conn),
                        message: CmMessage::Rtu(CmRtu {
                            local_comm_id: self.comm_id(conn),
                            remote_comm_id: r.local_comm_id,
                        }),
                    };
                    let at = self.work(now);
                    out.push(Action::Send { at, to, msg: rtu });
                }
                None => self.ignored += 1,
            }
            return;
        }
        match self.conns[conn].state {
            State::ReqSent if self.conns[conn].spec.active => {
                let c = &mut self.conns[conn];
                c.remote_comm_id = r.local_comm_id;
                c.sq_psn = r.starting_psn;
                c.deadline = None;
                c.state = State::Established;
                out.push(Action::Rtr {
                    conn,
                    remote_qpn: r.local_qpn,
                    rq_psn: c.spec.rq_psn,
                    dest_rd_atomic: r.initiator_depth,
                    traffic_class: self.params.traffic_class,
                });
                out.push(Action::Rts {
                    conn,
                    sq_psn: r.starting_psn,
                    rd_atomic: r.responder_resources,
                    retry_count: self.params.retry_count,
                    rnr_retry: r.rnr_retry_count,
                });
                let rtu = self.rtu(conn);
                self.send(now, conn, rtu, false, out);
                out.push(Action::Established {
                    at: self.busy_until,
                    conn,
                });
            }
            // A duplicate REP: the passive side did not get the RTU; send it again.
            State::Established
                if self.conns[conn].spec.active
                    && self.conns[conn].remote_comm_id == r.local_comm_id =>
            {
                let rtu = self.rtu(conn);
                self.send(now, conn, rtu, false, out);
            }
            _ => self.ignored += 1,
        }
    }

    fn on_rtu(&mut self, now: TimePs, r: &CmRtu, out: &mut Vec<Action>) {
        let Some(conn) = self.by_comm_id(r.remote_comm_id) else {
            self.ignored += 1;
            return;
        };
        if self.settled.is_some() {
            // Every connection is established: an RTU is late or duplicated.
            self.ignored += 1;
            return;
        }
        let c = &mut self.conns[conn];
        if c.spec.active || c.state != State::RepSent || c.remote_comm_id != r.local_comm_id {
            self.ignored += 1;
            return;
        }
        c.deadline = None;
        c.state = State::Established;
        out.push(Action::Rts {
            conn,
            sq_psn: c.sq_psn,
            rd_atomic: self.params.rd_atomic,
            retry_count: c.req_retries.0,
            rnr_retry: c.req_retries.1,
        });
        out.push(Action::Established { at: now, conn });
    }

    /// Connection `conn`'s timer at `now`: if still due, the REQ (or REP) goes again, or
    /// the connection fails after `max_retries` resends.
    pub fn on_timer(&mut self, now: TimePs, conn: usize, out: &mut Vec<Action>) {
        if self.settled.is_some() {
            // Every connection is established: no timer is due any more.
            return;
        }
        let c = &self.conns[conn];
        if c.deadline != Some(now) {
            return;
        }
        let (what, msg) = match c.state {
            State::ReqSent if c.spec.sidr => ("SIDR_REP", self.sidr_req(conn)),
            State::ReqSent => ("REP", self.req(conn)),
            State::RepSent => ("RTU", self.rep(conn)),
            _ => return,
        };
        let max = u32::from(self.params.max_retries);
        if c.sent > max {
            let timeout_us = self.params.timeout_ps() as f64 / 1e6;
            let reason = format!(
                "no {what} for QP {:#x} (connection {} with {}) after {} {} sent {timeout_us:.1} µs \
                 apart (host.cm_max_retries = {max}, host.cm_response_timeout = {})",
                c.spec.local_qpn,
                c.spec.index,
                std::net::Ipv4Addr::from(c.spec.peer_ip),
                c.sent,
                match (c.spec.active, c.spec.sidr) {
                    (true, true) => "SIDR_REQs",
                    (true, false) => "REQs",
                    _ => "REPs",
                },
                self.params.response_timeout,
            );
            let c = &mut self.conns[conn];
            c.state = State::Failed;
            c.deadline = None;
            out.push(Action::Failed {
                conn,
                reason,
                unanswered: true,
            });
            return;
        }
        self.resent += 1;
        self.send(now, conn, msg, true, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn params(ip: [u8; 4]) -> Params {
        Params {
            ip,
            mad_ps: 1_000_000,
            response_timeout: 10,
            max_retries: 2,
            path_mtu: 5,
            retry_count: 7,
            rnr_retry: 7,
            ack_timeout: 14,
            rd_atomic: 16,
            comm_id_base: 0,
            traffic_class: 2,
            hop_limit: 64,
        }
    }

    const A: [u8; 4] = [10, 0, 0, 2];
    const P: [u8; 4] = [10, 0, 0, 1];

    fn pair() -> (Agent, Agent) {
        let mut a = Agent::new(params(A));
        let mut p = Agent::new(params(P));
        for k in 0..2 {
            a.add(ConnSpec {
                local_qpn: 0x20 + k,
                rq_psn: 100 + k,
                peer_ip: P,
                index: k,
                active: true,
                sidr: false,
            });
            p.add(ConnSpec {
                local_qpn: 0x40 + k,
                rq_psn: 500 + k,
                peer_ip: A,
                index: k,
                active: false,
                sidr: false,
            });
        }
        (a, p)
    }

    /// When the timer `out` arms is due.
    pub(super) fn timer_due(out: &[Action]) -> TimePs {
        out.iter()
            .find_map(|a| match a {
                Action::Timer { at, .. } => Some(*at),
                _ => None,
            })
            .expect("a timer armed")
    }

    pub(super) fn sent(out: &[Action]) -> Vec<CmRepr> {
        out.iter()
            .filter_map(|a| match a {
                Action::Send { msg, .. } => Some(*msg),
                _ => None,
            })
            .collect()
    }

    /// An active agent of `active` and a passive one of `passive`, with one connection
    /// between them.
    fn one_connection(active: Params, passive: Params) -> (Agent, Agent) {
        let (mut a, mut p) = (Agent::new(active), Agent::new(passive));
        for (agent, active, peer_ip) in [(&mut a, true, P), (&mut p, false, A)] {
            agent.add(ConnSpec {
                local_qpn: 0x20,
                rq_psn: 100,
                peer_ip,
                index: 0,
                active,
                sidr: false,
            });
        }
        (a, p)
    }

    /// Ids drawn from a base (a live endpoint's random one): the REQ carries the base's
    /// ids, and a REP is matched by them, not by the connection's index.
    #[test]
    fn communication_ids_start_from_the_base() {
        let (mut a, mut p) = one_connection(
            Params {
                comm_id_base: 1000,
                ..params(A)
            },
            params(P),
        );
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        let req = sent(&out)[0];
        let CmMessage::Req(r) = req.message else {
            panic!("a REQ: {req:?}")
        };
        assert_eq!(r.local_comm_id, 1001);
        assert_eq!(a.comm_ids(0).0, 1001);
        out.clear();
        p.handle(5_000_000, A, &req, &mut out);
        let rep = sent(&out)[0];
        let mut stray = rep;
        if let CmMessage::Rep(r) = &mut stray.message {
            r.remote_comm_id = 1;
        }
        out.clear();
        a.handle(9_000_000, P, &stray, &mut out);
        assert!(
            out.is_empty(),
            "a REP to id 1 is not connection 0's: {out:?}"
        );
        a.handle(9_000_000, P, &rep, &mut out);
        assert_eq!(a.state(0), State::Established);
    }

    #[test]
    fn req_rep_rtu_moves_both_qps_with_the_peers_qpn_and_psn() {
        let (mut a, mut p) = pair();
        let mut out = Vec::new();
        a.connect(0, 1, &mut out);
        let req = sent(&out)[0];
        // As Linux's CM: the REQ carries the PSN the active side's receive queue expects.
        let CmMessage::Req(r) = req.message else {
            panic!("a REQ first: {req:?}")
        };
        assert_eq!(r.starting_psn, 101);
        out.clear();
        p.handle(5_000_000, A, &req, &mut out);
        // Connection 1 on the passive side (by the REQ's private data): RTR toward 0x21,
        // expecting its own PSN 501 first.
        assert!(out.contains(&Action::Rtr {
            conn: 1,
            remote_qpn: 0x21,
            rq_psn: 501,
            dest_rd_atomic: 16,
            traffic_class: 2
        }));
        let rep = sent(&out)[0];
        let CmMessage::Rep(r) = rep.message else {
            panic!("a REP: {rep:?}")
        };
        assert_eq!(r.starting_psn, 501);
        out.clear();
        a.handle(9_000_000, P, &rep, &mut out);
        assert!(out.contains(&Action::Rtr {
            conn: 1,
            remote_qpn: 0x41,
            rq_psn: 101,
            dest_rd_atomic: 16,
            traffic_class: 2
        }));
        // The active side sends from the PSN the passive side's REP asked for.
        assert!(out.contains(&Action::Rts {
            conn: 1,
            sq_psn: 501,
            rd_atomic: 16,
            retry_count: 7,
            rnr_retry: 7
        }));
        assert_eq!(a.state(1), State::Established);
        let rtu = sent(&out)[0];
        out.clear();
        p.handle(12_000_000, A, &rtu, &mut out);
        assert!(out.contains(&Action::Rts {
            conn: 1,
            sq_psn: 101,
            rd_atomic: 16,
            retry_count: 7,
            rnr_retry: 7
        }));
        assert_eq!(p.state(1), State::Established);
        assert_eq!(p.state(0), State::Idle);
    }

    /// The READ and atomic depths a QP gets from each side's own and the REP's, with the two
    /// sides' numbers different.
    fn depths(out: &[Action]) -> (Option<u8>, Option<u8>) {
        let rtr = out.iter().find_map(|a| match a {
            Action::Rtr { dest_rd_atomic, .. } => Some(*dest_rd_atomic),
            _ => None,
        });
        let rts = out.iter().find_map(|a| match a {
            Action::Rts { rd_atomic, .. } => Some(*rd_atomic),
            _ => None,
        });
        (rtr, rts)
    }

    /// The transport and RNR retry counts an RTS in `out` gives the QP.
    fn retries(out: &[Action]) -> Option<(u8, u8)> {
        out.iter().find_map(|a| match a {
            Action::Rts {
                retry_count,
                rnr_retry,
                ..
            } => Some((*retry_count, *rnr_retry)),
            _ => None,
        })
    }

    /// The traffic class an RTR in `out` gives the QP's packets.
    fn traffic_class(out: &[Action]) -> Option<u8> {
        out.iter().find_map(|a| match a {
            Action::Rtr { traffic_class, .. } => Some(*traffic_class),
            _ => None,
        })
    }

    #[test]
    fn the_active_side_takes_its_read_depths_from_the_rep_as_librdmacm_does() {
        // The active side announces 2, the passive side 5: the passive side keeps its own
        // both ways (as librdmacm's rdma_accept with explicit parameters, perftest's), and
        // the active side posts at most what the REP says the passive side answers.
        // The active side's traffic class 0x60 reaches the passive side in the REQ, and so
        // do its retry counts (2, and 7 for RNR); the passive side's RNR count 5 goes back
        // in the REP.
        let (mut a, mut p) = one_connection(
            Params {
                rd_atomic: 2,
                traffic_class: 0x60,
                retry_count: 2,
                ..params(A)
            },
            Params {
                rd_atomic: 5,
                traffic_class: 0,
                rnr_retry: 5,
                ..params(P)
            },
        );
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        let req = sent(&out)[0];
        out.clear();
        p.handle(5_000_000, A, &req, &mut out);
        assert_eq!(depths(&out), (Some(5), None));
        assert_eq!(traffic_class(&out), Some(0x60), "the REQ's");
        let rep = sent(&out)[0];
        out.clear();
        a.handle(9_000_000, P, &rep, &mut out);
        assert_eq!(depths(&out), (Some(5), Some(5)));
        assert_eq!(traffic_class(&out), Some(0x60), "its own");
        // The active side: its own retry count, the REP's RNR retry count.
        assert_eq!(retries(&out), Some((2, 5)));
        let rtu = sent(&out)[0];
        out.clear();
        p.handle(12_000_000, A, &rtu, &mut out);
        assert_eq!(depths(&out), (None, Some(5)));
        // The passive side: both from the REQ, as a kernel's CM sets them.
        assert_eq!(retries(&out), Some((2, 7)));
    }

    #[test]
    fn a_rejected_req_can_be_sent_again() {
        let (mut a, _) = pair();
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        let first = sent(&out)[0];
        // Not yet rejected: a second connect sends nothing.
        out.clear();
        a.connect(1, 0, &mut out);
        assert!(sent(&out).is_empty());
        a.rejected(0);
        assert_eq!(a.state(0), State::Idle);
        // Its old timer is stale now.
        a.on_timer(1 + a.params.timeout_ps(), 0, &mut out);
        assert!(sent(&out).is_empty());
        a.connect(2, 0, &mut out);
        assert_eq!(sent(&out), vec![first], "the same REQ again");
        assert_eq!(a.state(0), State::ReqSent);
        // A passive side is not affected.
        let (_, mut p) = pair();
        p.rejected(0);
        assert_eq!(p.state(0), State::Idle);
    }

    #[test]
    fn a_lost_req_is_sent_again_and_retries_end_in_a_clear_failure() {
        let (mut a, _) = pair();
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        let due = timer_due;
        let mut t = due(&out);
        // A stale timer does nothing.
        out.clear();
        a.on_timer(t - 1, 0, &mut out);
        assert!(out.is_empty());
        for _ in 0..2 {
            out.clear();
            a.on_timer(t, 0, &mut out);
            assert_eq!(sent(&out).len(), 1, "{out:?}");
            t = due(&out);
        }
        out.clear();
        a.on_timer(t, 0, &mut out);
        let Some(Action::Failed { reason, .. }) = out.first() else {
            panic!("{out:?}")
        };
        assert!(
            reason.contains("no REP") && reason.contains("host.cm_max_retries"),
            "{reason}"
        );
        assert_eq!(a.state(0), State::Failed);
        assert_eq!(a.resent, 2);
    }

    #[test]
    fn settled_agents_answer_late_mads_as_established_connections_did() {
        // Both connections up, then settled: the setup state is gone.
        let (mut a, mut p) = pair();
        let mut out = Vec::new();
        let (mut reqs, mut reps, mut rtus, mut timers) = (vec![], vec![], vec![], vec![]);
        for k in 0..2 {
            out.clear();
            a.connect(0, k, &mut out);
            reqs.push(sent(&out)[0]);
            out.clear();
            p.handle(1, A, &reqs[k], &mut out);
            reps.push(sent(&out)[0]);
            timers.extend(out.iter().filter_map(|x| match x {
                Action::Timer { at, conn } => Some((*at, *conn)),
                _ => None,
            }));
            out.clear();
            a.handle(2, P, &reps[k], &mut out);
            rtus.push(sent(&out)[0]);
            out.clear();
            p.handle(3, A, &rtus[k], &mut out);
        }
        a.settle();
        p.settle();
        assert_eq!(
            (a.state(1), p.state(0)),
            (State::Established, State::Established)
        );
        // A duplicate REP: the same RTU again, to the peer, one MAD of CPU time later.
        out.clear();
        a.handle(10_000_000, P, &reps[1], &mut out);
        assert_eq!(
            out,
            vec![Action::Send {
                at: 12_000_000,
                to: P,
                msg: rtus[1]
            }]
        );
        // A REP whose sender is not the connection's peer end, a late REQ, a late RTU, a
        // REP sent to the passive side: ignored and counted, nothing sent.
        let (ai, pi) = (a.ignored, p.ignored);
        let mut stray = reps[1];
        if let CmMessage::Rep(r) = &mut stray.message {
            r.local_comm_id += 1;
        }
        out.clear();
        a.handle(20_000_000, P, &stray, &mut out);
        p.handle(20_000_000, A, &reqs[0], &mut out);
        p.handle(20_000_000, A, &rtus[0], &mut out);
        p.handle(20_000_000, A, &reps[0], &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!((a.ignored - ai, p.ignored - pi), (1, 3));
        // The REP timers, had they been left in the queue, do nothing.
        for (at, conn) in timers {
            p.on_timer(at, conn, &mut out);
        }
        assert!(out.is_empty(), "{out:?}");
    }

    /// Starts `a`'s connection 0: its REQ, and when the REQ's timer is due.
    fn started(a: &mut Agent) -> (CmRepr, TimePs) {
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        (sent(&out)[0], timer_due(&out))
    }

    /// A loaded passive host answers late: the active side's timer sends the REQ again
    /// before the REP comes. The copy is the same REQ; the passive side, its REP out, moves
    /// no QP again and sends nothing for it; the one REP and RTU connect both ends.
    #[test]
    fn a_req_resent_before_a_late_rep_connects_once() {
        let (mut a, mut p) = pair();
        let (req, due) = started(&mut a);
        let mut out = Vec::new();
        a.on_timer(due, 0, &mut out);
        assert_eq!(sent(&out), vec![req], "the timer resends the same REQ");
        out.clear();
        p.handle(due + 1, A, &req, &mut out);
        let rep = sent(&out)[0];
        let rtrs = |out: &[Action]| {
            out.iter()
                .filter(|x| matches!(x, Action::Rtr { .. }))
                .count()
        };
        assert_eq!(rtrs(&out), 1);
        out.clear();
        let ignored = p.ignored;
        p.handle(due + 2, A, &req, &mut out);
        assert!(
            out.is_empty(),
            "the copy moves no QP and sends nothing: {out:?}"
        );
        assert_eq!((p.state(0), p.ignored), (State::RepSent, ignored + 1));
        a.handle(due + 3, P, &rep, &mut out);
        let rtu = sent(&out)[0];
        assert_eq!(a.state(0), State::Established);
        out.clear();
        p.handle(due + 4, A, &rtu, &mut out);
        assert_eq!(p.state(0), State::Established);
        assert_eq!(rtrs(&out), 0, "the passive QP moved to RTR once: {out:?}");
    }

    #[test]
    fn a_lost_rtu_is_repaired_by_the_rep_timer_and_a_repeated_rtu() {
        let (mut a, mut p) = pair();
        let mut out = Vec::new();
        a.connect(0, 0, &mut out);
        let req = sent(&out)[0];
        out.clear();
        p.handle(1, A, &req, &mut out);
        let rep = sent(&out)[0];
        let rep_due = out
            .iter()
            .find_map(|x| match x {
                Action::Timer { at, .. } => Some(*at),
                _ => None,
            })
            .unwrap();
        out.clear();
        a.handle(2, P, &rep, &mut out);
        out.clear();
        // The RTU is lost: the passive side sends the REP again, the active side the RTU.
        p.on_timer(rep_due, 0, &mut out);
        let rep2 = sent(&out)[0];
        assert_eq!(rep2, rep);
        out.clear();
        a.handle(rep_due + 1, P, &rep2, &mut out);
        let rtu = sent(&out)[0];
        assert!(matches!(rtu.message, CmMessage::Rtu(_)));
        out.clear();
        p.handle(rep_due + 2, A, &rtu, &mut out);
        assert_eq!(p.state(0), State::Established);
    }
}
