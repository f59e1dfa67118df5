//! Connection setup by RDMA CM on the simulated wire (`host.connect = "cm"`, the default;
//! perftest -R): before the application starts, each QP pair is connected the way rdma_cm
//! connects it. The pair's client (perftest's client, the side that calls rdma_connect)
//! sends a REQ MAD to QP1 of the server's host, the server's CM answers with a REP, the
//! client's with an RTU, and each QP moves INIT → RTR → RTS as the MADs arrive
//! ([`agent`]: responder RTR on the REQ, requester RTR and RTS on the REP, responder RTS on
//! the RTU). The MADs are RoCEv2 frames built by `rnic-wire` (UD SEND to QP1, GSI Q_Key,
//! ICRC): they leave through the NIC's port like any frame and cross the links, switches
//! and link elements (impairments, the WAN accelerator, which learns connections from
//! them), and appear in captures. A lost MAD is sent again after the CM response timeout;
//! after `host.cm_max_retries` resends the run fails with an error naming the connection.
//!
//! The application starts when every connection is established on both sides (perftest
//! connects all its QPs, then synchronises over its out-of-band channel), and every
//! measurement starts after that: a run's figures are those of `host.connect = "direct"`,
//! which connects the QPs with modify_qp at build time and sends nothing.
//!
//! What is simplified: the host's CM costs `host.cm_mad_ns` of one CM thread per MAD
//! received or sent; the MADs reach the port and leave the NIC's receive parser without the
//! NIC's send path, PCIe or a UD QP's receive queue (none of that is measured).

pub mod agent;
pub(crate) mod modify;
mod settled;

use std::collections::HashMap;

use rnic_sim::{EventQueue, TimePs};
use rnic_wire::cm::{cm_frame, parse_cm_frame_from, GSI_QPN};
use rnic_wire::FrameAddr;

use crate::config::{Config, QpConfig};
use crate::event::{CmEv, Ev, FramePool};
use crate::net::addr::{ip_node, node_ip, node_mac};
use crate::net::graph::Network;
use crate::nic::cx::Wire;
use crate::workload::QpProfile;
use agent::{Action, Agent, ConnSpec, Params};

/// The transports the connection managers drive, one per node: the world hands them over
/// without the NICs around them (the CM modifies QPs through the verbs, as a host does).
pub trait NodeDevices {
    /// Node `node`'s transport.
    fn device(&mut self, node: usize) -> &mut rnic_transport::Device;
}

/// What the connection manager touches while it handles an event.
pub struct CmCx<'a> {
    /// The event queue.
    pub q: &'a mut EventQueue<Ev>,
    /// Every node's transport (its QPs move to RTR and RTS).
    pub devices: &'a mut dyn NodeDevices,
    /// The network (the MADs leave through the nodes' ports).
    pub net: &'a mut Network,
    /// Frames in flight.
    pub frames: &'a mut FramePool,
}

/// One end of a connection: its QP's attributes and its peer's node.
#[derive(Debug, Clone, Copy)]
struct End {
    peer: usize,
    profile: QpProfile,
    /// The PSN the QP sends from (a UD QP's own; an RC QP's comes in the peer's message).
    sq_psn: u32,
}

/// Counters of the connection managers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CmStats {
    /// QP pairs connected.
    pub connections: u64,
    /// MADs sent (REQ, REP, RTU, resends included).
    pub mads_sent: u64,
    /// MADs sent again after a response timeout.
    pub resent: u64,
    /// MADs received that matched no connection or state (duplicates).
    pub ignored: u64,
    /// MADs received that did not parse (a corrupted frame's ICRC): dropped.
    pub malformed: u64,
    /// When the last connection was established, ps.
    pub done_ps: u64,
}

/// The connection managers of every host.
#[derive(Debug)]
pub struct ConnectionManager {
    agents: Vec<Agent>,
    ends: Vec<Vec<End>>,
    qp: QpConfig,
    /// Connections between two nodes so far (the next one's number).
    numbered: HashMap<(usize, usize), u32>,
    /// Connection ends not yet established.
    pending: usize,
    ready_at: TimePs,
    /// Per node: the IPv4 identification and UD PSN of its next MAD.
    ip_ident: Vec<u16>,
    psn: Vec<u32>,
    stats: CmStats,
    /// Why the setup failed, if it did.
    pub error: Option<String>,
    out: Vec<Action>,
}

/// Whether a run's QP pairs are brought up by the connection managers (`host.connect =
/// "cm"`): RC pairs by REQ, REP and RTU; UD pairs by SIDR_REQ and SIDR_REP when
/// `host.cm_ud` says so; UC pairs never (librdmacm connects no UC QP).
pub fn connects(cfg: &Config) -> bool {
    use crate::config::{Connect, Transport};
    cfg.host.connect == Connect::Cm
        && match cfg.qp.transport {
            Transport::Rc => true,
            Transport::Ud => cfg.host.cm_ud,
            Transport::Uc => false,
        }
}

/// The IB MTU code of a path MTU in bytes.
fn mtu_code(pmtu: u32) -> u8 {
    match pmtu {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    }
}

impl ConnectionManager {
    /// The connection managers of `nodes` hosts, with the config's CM and QP fields.
    pub fn new(cfg: &Config, nodes: usize) -> ConnectionManager {
        let (h, qp) = (&cfg.host, &cfg.qp);
        let agents = (0..nodes)
            .map(|i| {
                Agent::new(Params {
                    ip: node_ip(i),
                    mad_ps: rnic_sim::ns(h.cm_mad_ns),
                    response_timeout: h.cm_response_timeout,
                    max_retries: h.cm_max_retries,
                    path_mtu: mtu_code(qp.pmtu),
                    retry_count: qp.retry_cnt,
                    rnr_retry: qp.rnr_retry,
                    ack_timeout: qp.timeout,
                    rd_atomic: qp.max_rd_atomic,
                    // Deterministic: a simulated run's MADs are the same every time.
                    comm_id_base: 0,
                    traffic_class: qp.traffic_class,
                    hop_limit: qp.hop_limit,
                })
            })
            .collect();
        ConnectionManager {
            agents,
            ends: vec![Vec::new(); nodes],
            qp: cfg.qp.clone(),
            numbered: HashMap::new(),
            pending: 0,
            ready_at: 0,
            ip_ident: vec![0; nodes],
            psn: vec![0; nodes],
            stats: CmStats::default(),
            error: None,
            out: Vec::new(),
        }
    }

    /// A QP pair to connect: QP `active.1` of node `active.0` (the client, which sends the
    /// REQ) and QP `passive.1` of node `passive.0`, both in INIT, each sending from its
    /// starting PSN (`.2`), with the attributes `profile`. As in Linux's CM, each side asks
    /// for its peer's starting PSN as its receive PSN in its REQ or REP, and the peer sends
    /// from what it was asked: so a QP sends from the same PSN with and without the CM.
    /// With `sidr` the pair is UD, resolved by a SIDR_REQ and SIDR_REP ([`agent`]).
    pub fn add_pair(
        &mut self,
        active: (usize, u32, u32),
        passive: (usize, u32, u32),
        profile: QpProfile,
        sidr: bool,
    ) {
        let n = self.numbered.entry((active.0, passive.0)).or_insert(0);
        let index = *n;
        *n += 1;
        for (me, peer, is_active) in [(active, passive, true), (passive, active, false)] {
            self.agents[me.0].add(ConnSpec {
                local_qpn: me.1,
                rq_psn: peer.2,
                peer_ip: node_ip(peer.0),
                index,
                active: is_active,
                sidr,
            });
            self.ends[me.0].push(End {
                peer: peer.0,
                profile,
                sq_psn: me.2,
            });
        }
        self.pending += 2;
        self.stats.connections += 1;
    }

    /// The counters.
    pub fn stats(&self) -> CmStats {
        let mut s = self.stats;
        s.resent = self.agents.iter().map(|a| a.resent).sum();
        s.ignored = self.agents.iter().map(|a| a.ignored).sum();
        s
    }

    /// Connection ends established so far and in all (two per QP pair), for a progress
    /// report.
    pub fn ends_established(&self) -> (u64, u64) {
        let all = 2 * self.stats.connections;
        (all.saturating_sub(self.pending as u64), all)
    }

    /// Every client starts its connections at time 0, one REQ after another.
    pub fn start(&mut self, cx: &mut CmCx<'_>) {
        if self.pending == 0 {
            cx.q.push(
                0,
                Ev::Cm {
                    node: 0,
                    ev: CmEv::Ready,
                },
            );
            return;
        }
        for node in 0..self.agents.len() {
            for conn in 0..self.ends[node].len() {
                if self.agents[node].spec(conn).active {
                    let mut out = std::mem::take(&mut self.out);
                    self.agents[node].connect(0, conn, &mut out);
                    self.apply(0, node, &mut out, cx);
                    self.out = out;
                }
            }
        }
    }

    /// An event of node `node`'s connection manager at `now`.
    pub fn handle(&mut self, now: TimePs, node: usize, ev: CmEv, cx: &mut CmCx<'_>) {
        let mut out = std::mem::take(&mut self.out);
        match ev {
            CmEv::Mad { frame } => {
                let parsed = parse_cm_frame_from(cx.frames.get(frame));
                cx.frames.release(frame);
                match parsed {
                    Ok((src, m)) => self.agents[node].handle(now, src, &m, &mut out),
                    Err(_) => self.stats.malformed += 1,
                }
            }
            CmEv::Timeout { conn } => self.agents[node].on_timer(now, conn as usize, &mut out),
            CmEv::Ready => {}
            CmEv::Send { frame } => cx.net.send(node, frame, now, cx.q, cx.frames),
        }
        self.apply(now, node, &mut out, cx);
        self.out = out;
        if self.pending == 0 && !self.ends.is_empty() {
            self.settle(cx);
        }
    }

    /// Every connection is established on both sides and the applications start: gives
    /// back what only the setup needed. Each agent keeps 8 bytes per end for a late MAD
    /// ([`settled`]); the ends' attributes and the connection numbering go; the response
    /// timers still pending (all stale now: each connection's REQ or REP was answered) leave
    /// the event queue, where they would wait for seconds of simulated time and then do
    /// nothing; and the frame buffers kept from the REQ burst go back to the allocator. The
    /// run's results are the same (only the count of events popped drops, by the stale
    /// timers a long run would have popped).
    fn settle(&mut self, cx: &mut CmCx<'_>) {
        for a in &mut self.agents {
            a.settle();
        }
        self.ends = Vec::new();
        self.numbered = HashMap::new();
        cx.q.retain_far(|ev| {
            !matches!(
                ev,
                Ev::Cm {
                    ev: CmEv::Timeout { .. },
                    ..
                }
            )
        });
        cx.frames.trim();
    }

    /// Carries out node `node`'s actions.
    fn apply(&mut self, now: TimePs, node: usize, out: &mut Vec<Action>, cx: &mut CmCx<'_>) {
        for a in out.drain(..) {
            match a {
                Action::Send { at, to, msg } => {
                    let Some(peer) = ip_node(to) else { continue };
                    let addr = FrameAddr {
                        src_mac: node_mac(node),
                        dst_mac: node_mac(peer),
                        src_ip: node_ip(node),
                        dst_ip: to,
                        udp_src_port: rnic_wire::udp_entropy_port(GSI_QPN, GSI_QPN),
                        // The MADs travel the connection's path: its TOS and TTL.
                        dscp_ecn: self.qp.traffic_class,
                        ttl: self.qp.hop_limit,
                    };
                    let slot = cx.frames.alloc();
                    cm_frame(
                        addr,
                        self.ip_ident[node],
                        self.psn[node],
                        &msg,
                        cx.frames.buf_mut(slot),
                    );
                    self.ip_ident[node] = self.ip_ident[node].wrapping_add(1);
                    self.psn[node] = (self.psn[node] + 1) & 0x00FF_FFFF;
                    self.stats.mads_sent += 1;
                    if at > now {
                        // The port takes it once the CM thread has done its work.
                        cx.q.push(
                            at,
                            Ev::Cm {
                                node: node as u32,
                                ev: CmEv::Send { frame: slot },
                            },
                        );
                    } else {
                        cx.net.send(node, slot, now, cx.q, cx.frames);
                    }
                }
                // The simulator's hosts share one `qp.max_rd_atomic`: the agent's depths are it.
                Action::Rtr {
                    conn,
                    remote_qpn,
                    rq_psn,
                    ..
                } => {
                    let (e, qpn) = (
                        self.ends[node][conn],
                        self.agents[node].spec(conn).local_qpn,
                    );
                    let dev = cx.devices.device(node);
                    let r = modify::to_rtr(
                        dev, &self.qp, &e.profile, node, qpn, e.peer, remote_qpn, rq_psn,
                    );
                    self.fail_on(r);
                }
                Action::Rts { conn, sq_psn, .. } => {
                    let e = self.ends[node][conn];
                    let qpn = self.agents[node].spec(conn).local_qpn;
                    let dev = cx.devices.device(node);
                    let r = modify::to_rts(dev, &self.qp, &e.profile, node, qpn, sq_psn);
                    self.fail_on(r);
                }
                Action::UdUp {
                    conn,
                    remote_qpn,
                    qkey,
                } => {
                    let (e, spec) = (self.ends[node][conn], *self.agents[node].spec(conn));
                    let r = modify::ud_up(
                        cx.devices.device(node),
                        &self.qp,
                        &e.profile,
                        (node, spec.local_qpn),
                        (e.peer, remote_qpn),
                        qkey,
                        (e.sq_psn, spec.rq_psn),
                    );
                    self.fail_on(r);
                }
                Action::Timer { at, conn } => cx.q.push(
                    at,
                    Ev::Cm {
                        node: node as u32,
                        ev: CmEv::Timeout { conn: conn as u32 },
                    },
                ),
                Action::Established { at, .. } => {
                    self.pending -= 1;
                    self.ready_at = self.ready_at.max(at);
                    if self.pending == 0 {
                        self.stats.done_ps = self.ready_at;
                        cx.q.push(
                            self.ready_at,
                            Ev::Cm {
                                node: 0,
                                ev: CmEv::Ready,
                            },
                        );
                    }
                }
                Action::Failed { reason, .. } | Action::NotListening { reason, .. } => {
                    let node_ip = std::net::Ipv4Addr::from(node_ip(node));
                    self.error.get_or_insert_with(|| {
                        format!("RDMA CM connection setup failed on node {node} ({node_ip}): {reason}; the network lost the MADs (see net.impair.*), or set host.connect = \"direct\"")
                    });
                }
            }
        }
    }

    fn fail_on(&mut self, r: anyhow::Result<()>) {
        if let Err(e) = r {
            self.error
                .get_or_insert_with(|| format!("RDMA CM connection setup: {e}"));
        }
    }
}
