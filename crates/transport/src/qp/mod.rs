//! The queue pair: its state machine, attributes, and the glue shared by the requester
//! ([`crate::requester`]) and the responder ([`crate::responder`]).
//!
//! `impl Qp` lives in three files: here (state, modify_qp, and [`Qp::send_request`], the
//! send step of every requester), the go-back-N requester and the responder. The parts
//! around them name who handles a packet at the call: the out-of-order reliability mode is
//! [`OooQp`]'s (`OooQp::next(qp, ..)`, in `ooo/`), the unreliable services are functions of
//! their modules (`uc::handle_request(qp, ..)`, `ud::`, `unreliable_tx::`). The state of
//! each part the QP holds sits in a module that imports nothing of the QP
//! (`requester/state.rs`, `responder/state.rs`, `ooo/qp_state.rs`), so the import graph has
//! no loop. The model's architecture test holds both: the three-file bound for every type of
//! this crate, and no import cycle.
//!
//! A QP is kept small (368 bytes when idle, at most 384 by the size test): queues are
//! `VecDeque`s that own no heap memory while empty, attributes are packed integers, and the
//! per-QP timers are two optional deadlines feeding the device-wide heap.

pub(crate) mod attr;
mod service_attr;
pub(crate) mod state;
pub(crate) mod transition;

pub use attr::{AddressVector, QpAttr, QpInit, MAX_RD_ATOMIC};
pub use state::QpState;

use crate::cq::{Completion, CqId, CqTable, WcOpcode, WcStatus};
use crate::mr::{Access, MrTable};
use crate::ooo::qp_state::OooQp;
use crate::pd::PdId;
use crate::psn::psn_sub;
use crate::reliability::ReliabilityMode;
use crate::requester::state::Requester;
use crate::responder::state::{RespItem, Responder};
use crate::service::ServiceType;
use crate::stats::TransportStats;
use crate::timer::ack_timeout_ps;
use rnic_wire::{udp_entropy_port, FrameAddr, FrameRepr, RoceRepr};

/// Everything a QP step may touch besides the QP itself.
pub(crate) struct Ctx<'a> {
    pub mrs: &'a mut MrTable,
    pub cqs: &'a mut CqTable,
    pub stats: &'a mut TransportStats,
    pub now_ps: u64,
}

/// Where a transmitted frame goes and the scratch space to build it.
pub(crate) struct TxOut<'a> {
    pub frame: FrameSink<'a>,
    /// Payload staging (one PMTU); reused for every packet.
    pub scratch: &'a mut Vec<u8>,
}

/// The device's addresses, its IP identification counter and the buffer a frame is built in:
/// apart from [`TxOut::scratch`] so a frame can be emitted while its payload borrows the
/// scratch space.
pub(crate) struct FrameSink<'a> {
    pub src_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub ip_ident: &'a mut u16,
    pub buf: &'a mut Vec<u8>,
}

/// Attributes set by modify_qp, validated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QpConfig {
    pub port: u8,
    pub pkey: u16,
    pub access: Access,
    /// Path MTU in bytes.
    pub pmtu: u32,
    pub dest_qpn: u32,
    pub av: AddressVector,
    /// UDP source port actually used (the AV's, or the entropy port).
    pub udp_sport: u16,
    pub min_rnr_timer: u8,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub max_rd_atomic: u8,
    pub max_dest_rd_atomic: u8,
    /// Packet window: PSNs sent and not yet acknowledged, at most.
    pub max_outstanding_psns: u32,
    /// AckReq on every this many packets inside a long message.
    pub ack_req_every: u32,
    /// UD: the Q_Key received datagrams must carry and sent ones carry.
    pub qkey: u32,
}

impl Default for QpConfig {
    fn default() -> QpConfig {
        QpConfig {
            port: 1,
            pkey: 0xFFFF,
            access: Access::empty(),
            pmtu: 1024,
            dest_qpn: 0,
            av: AddressVector::default(),
            udp_sport: 0xC000,
            min_rnr_timer: 0,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            max_outstanding_psns: crate::requester::state::MAX_OUTSTANDING_PSNS,
            ack_req_every: crate::requester::state::ACK_REQ_INTERVAL_PKTS,
            qkey: crate::service::DEFAULT_QKEY,
        }
    }
}

/// One RC queue pair.
#[derive(Debug)]
pub(crate) struct Qp {
    pub qpn: u32,
    pub state: QpState,
    pub pd: PdId,
    pub send_cq: CqId,
    pub recv_cq: CqId,
    pub max_send_wr: u32,
    pub max_recv_wr: u32,
    /// An ORNIC / MP-RDMA QP's mode and the device's bitmap block pool it shares with the
    /// others; `None`: go-back-N (boxed: the parameters take 48 bytes that a go-back-N QP,
    /// most of them, would carry for nothing).
    pub ooo_setup: Option<Box<(ReliabilityMode, crate::ooo::SharedPool)>>,
    /// RC, UC or UD (fixed at creation).
    pub service: ServiceType,
    pub cfg: QpConfig,
    pub req: Requester,
    pub resp: Responder,
    /// Deadline of the heap entry this QP owns (see [`crate::timer`]).
    pub armed_ps: crate::timer::Deadline,
    /// The QP has an entry in the device's transmit queue.
    pub in_tx_queue: bool,
    /// Send WRs finished so far (completed, signaled or not, or flushed): how a NIC that
    /// counts its outstanding WQEs learns of the unsignaled ones, which post no CQE.
    pub sq_done: u64,
    /// The out-of-order engine of an ORNIC / MP-RDMA QP (see `ooo/ooo_qp.rs`).
    pub ooo: Option<Box<crate::ooo::qp_state::OooQp>>,
}

impl Qp {
    /// A QP in RESET: go-back-N, or with `ooo` an out-of-order mode and the device's pool
    /// its bitmaps draw blocks from.
    pub(crate) fn new(
        qpn: u32,
        init: &QpInit,
        ooo: Option<(ReliabilityMode, crate::ooo::SharedPool)>,
        service: ServiceType,
    ) -> Qp {
        Qp {
            qpn,
            service,
            state: QpState::Reset,
            pd: init.pd,
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            max_send_wr: init.max_send_wr,
            max_recv_wr: init.max_recv_wr,
            ooo_setup: ooo.map(Box::new),
            cfg: QpConfig::default(),
            req: Requester::default(),
            resp: Responder::default(),
            armed_ps: crate::timer::Deadline::NONE,
            in_tx_queue: false,
            sq_done: 0,
            ooo: None,
        }
    }

    /// The QP's reliability mode.
    pub(crate) fn mode(&self) -> ReliabilityMode {
        self.ooo_setup
            .as_deref()
            .map_or_else(Default::default, |s| s.0)
    }

    /// Earliest protocol deadline of this QP.
    ///
    /// Written as plain comparisons: it runs after every packet, and the array-and-flatten
    /// form compiled to stack stores and a wider reload that stalled on them.
    #[inline]
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        let d = min_deadline(
            self.req.ack_deadline_ps.get(),
            self.req.rnr_deadline_ps.get(),
        );
        if self.ooo.is_none() {
            return d;
        }
        min_deadline(d, OooQp::deadline(self))
    }

    /// The QP has a packet to send now: queued responses, or requester work it may start.
    pub(crate) fn wants_transmit(&self) -> bool {
        !self.resp.resp_q.is_empty() || self.req_can_send() || OooQp::wants_transmit(self)
    }

    /// What the next transmitted frame would be: the queued response first (as
    /// `Device::poll_transmit_qp` sends it), else the request the requester may send.
    pub(crate) fn peek_transmit(&self) -> Option<crate::TxPeek> {
        if let Some(item) = self.resp.resp_q.front() {
            let (payload_len, is_retransmit) = match item {
                RespItem::Read(r) => (r.remaining.min(self.cfg.pmtu), r.replay),
                RespItem::AtomicAck { replay, .. } => (0, *replay),
                _ => (0, false),
            };
            return Some(crate::TxPeek {
                is_response: true,
                payload_len,
                is_retransmit,
            });
        }
        if self.ooo.is_some() {
            return OooQp::peek(self);
        }
        if !self.req_can_send() {
            return None;
        }
        self.peek_request()
    }

    /// The request packet checks common to both directions: may this QP take a request
    /// (`is_request`) or a response in its current state?
    pub(crate) fn accepts(&self, is_request: bool) -> bool {
        match self.state {
            QpState::Rtr => is_request,
            QpState::Rts | QpState::Sqd | QpState::Sqe => true,
            QpState::Reset | QpState::Init | QpState::Err => false,
        }
    }

    /// BTH P_Key check: the low 15 bits must match and at least one side must be a full
    /// member (bit 15).
    pub(crate) fn pkey_matches(&self, pkey: u16) -> bool {
        (pkey & 0x7FFF) == (self.cfg.pkey & 0x7FFF) && (pkey | self.cfg.pkey) & 0x8000 != 0
    }

    /// Applies a modify_qp whose transition and attribute mask were already checked.
    pub(crate) fn apply_modify(&mut self, attr: &QpAttr, ctx: &mut Ctx<'_>) {
        let from = self.state;
        let to = attr.state;
        let c = &mut self.cfg;
        if let Some(v) = attr.port {
            c.port = v;
        }
        if let Some(v) = attr.pkey {
            c.pkey = v;
        }
        if let Some(v) = attr.access {
            c.access = v;
        }
        if let Some(v) = attr.path_mtu {
            c.pmtu = v;
        }
        if let Some(v) = attr.dest_qp_num {
            c.dest_qpn = v;
        }
        if let Some(v) = attr.min_rnr_timer {
            c.min_rnr_timer = v;
        }
        if let Some(v) = attr.av {
            c.av = v;
        }
        if let Some(v) = attr.timeout {
            c.timeout = v;
        }
        if let Some(v) = attr.retry_cnt {
            c.retry_cnt = v;
            self.req.retry_left = v;
        }
        if let Some(v) = attr.rnr_retry {
            c.rnr_retry = v;
            self.req.rnr_left = v;
        }
        if let Some(v) = attr.max_rd_atomic {
            c.max_rd_atomic = v;
        }
        if let Some(v) = attr.max_dest_rd_atomic {
            c.max_dest_rd_atomic = v;
        }
        if let Some(v) = attr.max_outstanding_psns {
            c.max_outstanding_psns = v;
        }
        if let Some(v) = attr.ack_req_every {
            c.ack_req_every = v;
        }
        if let Some(v) = attr.qkey {
            c.qkey = v;
        }
        if attr.av.is_some() || attr.dest_qp_num.is_some() {
            c.udp_sport =
                c.av.udp_src_port
                    .unwrap_or_else(|| udp_entropy_port(self.qpn, c.dest_qpn));
        }
        match to {
            QpState::Reset => self.reset(),
            QpState::Err if from != QpState::Err => self.enter_error(ctx),
            QpState::Rtr => {
                if let Some(psn) = attr.rq_psn {
                    self.resp.epsn = psn;
                    self.resp.ack_psn = psn_sub(psn, 1);
                }
                self.resp.msn = 0;
            }
            QpState::Rts if from == QpState::Rtr => {
                if let Some(psn) = attr.sq_psn {
                    self.req.psn = psn;
                    self.req.fresh_psn = psn;
                    self.req.una = psn;
                }
            }
            _ => {}
        }
        self.state = to;
        OooQp::after_modify(self);
        // A changed timeout applies from the next (re)arm; an armed timer keeps its deadline.
        if ack_timeout_ps(self.cfg.timeout).is_none() {
            self.req.ack_deadline_ps = crate::timer::Deadline::NONE;
        }
    }

    /// Puts one request packet on the wire to the peer, counts it (and a retransmission)
    /// and describes it: the one send step of the go-back-N, unreliable and out-of-order
    /// requesters, so the three count and describe their packets alike.
    pub(crate) fn send_request(
        &self,
        frame: &mut FrameSink<'_>,
        stats: &mut TransportStats,
        roce: RoceRepr<'_>,
        is_retransmit: bool,
        starts_ooo_wqe: bool,
    ) -> crate::TxMeta {
        let (opcode, psn) = (roce.bth.opcode, roce.bth.psn);
        let payload_len = roce.payload.len() as u32;
        let frame_len = frame.emit(&self.cfg, roce, stats);
        stats.tx_requests += 1;
        if is_retransmit {
            stats.retransmitted_packets += 1;
        }
        crate::TxMeta {
            qpn: self.qpn,
            opcode,
            psn,
            payload_len,
            frame_len,
            is_retransmit,
            starts_ooo_wqe,
        }
    }

    /// Back to RESET: queues dropped without completions (IB), attributes cleared.
    fn reset(&mut self) {
        self.state = QpState::Reset;
        self.cfg = QpConfig::default();
        self.req = Requester::default();
        self.resp = Responder::default();
    }

    /// Moves the QP to ERR: every outstanding send and receive WR completes with
    /// WrFlushErr, in queue order; protocol state and timers are cleared. Queued responses
    /// are dropped (the responder's class C error path keeps the ones it owes and queues
    /// its NAK after them).
    pub(crate) fn enter_error(&mut self, ctx: &mut Ctx<'_>) {
        self.state = QpState::Err;
        while let Some(w) = self.req.sq.pop_front() {
            self.sq_done += 1;
            let c = w.completion(self.qpn, WcStatus::WrFlushErr);
            post_completion(ctx, self.send_cq, c);
        }
        while let Some(r) = self.resp.rq_pop() {
            let c = recv_completion(self.qpn, r.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
            post_completion(ctx, self.recv_cq, c);
        }
        self.req.clear_progress();
        self.resp.clear_progress();
        self.ooo = None;
    }
}

impl FrameSink<'_> {
    /// Builds and emits one frame to the QP's peer (addressed by `cfg`); returns its length.
    pub(crate) fn emit(
        &mut self,
        cfg: &QpConfig,
        roce: RoceRepr<'_>,
        stats: &mut crate::TransportStats,
    ) -> usize {
        let payload_bytes = roce.payload.len() as u64;
        let frame = FrameRepr {
            addr: FrameAddr {
                src_mac: self.src_mac,
                dst_mac: cfg.av.dest_mac,
                src_ip: self.src_ip,
                dst_ip: cfg.av.dest_ip,
                udp_src_port: cfg.udp_sport,
                dscp_ecn: cfg.av.dscp_ecn,
                ttl: cfg.av.ttl,
            },
            ip_ident: *self.ip_ident,
            roce,
        };
        *self.ip_ident = self.ip_ident.wrapping_add(1);
        frame.emit(self.buf);
        stats.tx_packets += 1;
        stats.tx_bytes += self.buf.len() as u64;
        stats.tx_payload_bytes += payload_bytes;
        self.buf.len()
    }
}

/// The earlier of two optional deadlines.
#[inline]
pub(crate) fn min_deadline(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Queues a completion; counts it, and counts (and reports) an overrun.
pub(crate) fn post_completion(ctx: &mut Ctx<'_>, cq: CqId, c: Completion) -> bool {
    ctx.stats.completions += 1;
    if c.status != WcStatus::Success {
        ctx.stats.completion_errors += 1;
    }
    if ctx.cqs.push(cq, c).is_ok() {
        true
    } else {
        ctx.stats.cq_overruns += 1;
        false
    }
}

/// The successful completion of a message that consumed a receive WQE: a SEND (`Recv`) or a
/// WRITE with immediate (`RecvRdmaWithImm`), with its immediate and invalidated rkey.
pub(crate) fn recv_success(
    qpn: u32,
    wr_id: u64,
    kind: crate::op::ReqKind,
    byte_len: u32,
    imm: Option<u32>,
    invalidated_rkey: Option<u32>,
) -> Completion {
    let opcode = if kind == crate::op::ReqKind::Send {
        WcOpcode::Recv
    } else {
        WcOpcode::RecvRdmaWithImm
    };
    Completion {
        imm,
        invalidated_rkey,
        ..recv_completion(qpn, wr_id, WcStatus::Success, opcode, byte_len)
    }
}

/// A receive completion.
pub(crate) fn recv_completion(
    qpn: u32,
    wr_id: u64,
    status: WcStatus,
    opcode: WcOpcode,
    byte_len: u32,
) -> Completion {
    Completion {
        wr_id,
        status,
        opcode,
        byte_len,
        qpn,
        imm: None,
        invalidated_rkey: None,
        src_qp: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_stays_small() {
        // 368 bytes before the responder's receive queue, open message, replay table and
        // UC/UD count moved out of line (`responder::RespCold`), 272 before the three
        // deadlines took 8 bytes each (`timer::Deadline`).
        let size = core::mem::size_of::<Qp>();
        println!("size_of::<Qp>() = {size} bytes");
        assert!(size <= 248, "Qp is {size} bytes");
    }

    #[test]
    fn the_send_queue_grows_one_then_doubling_up_to_max_send_wr() {
        for (max_send_wr, want) in [
            (2, vec![1, 2]),
            (3, vec![1, 2, 3]),
            (8, vec![1, 2, 4, 4, 8]),
        ] {
            let init = QpInit {
                pd: PdId::default(),
                send_cq: CqId::default(),
                recv_cq: CqId::default(),
                max_send_wr,
                max_recv_wr: 1,
            };
            let mut qp = Qp::new(1, &init, None, ServiceType::Rc);
            let mut caps = Vec::new();
            for i in 0..want.len() {
                let sge = crate::Sge {
                    addr: 0,
                    len: 64,
                    lkey: 1,
                };
                let remote = crate::wr::RemoteAddr { va: 0, rkey: 2 };
                qp.push_send(crate::SendWr::write(i as u64, vec![sge], remote), 64);
                caps.push(qp.req.sq.capacity());
            }
            assert_eq!(caps, want, "max_send_wr {max_send_wr}");
        }
    }
}
