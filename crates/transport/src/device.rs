//! One RNIC's protocol state: PDs, MRs, CQs and QPs, and the sans-IO driving interface.

use crate::cq::{Completion, CqId, CqTable};
use crate::error::{RxDrop, VerbsError};
use crate::memory::Memory;
use crate::mr::{Access, MrKeys, MrTable};
use crate::ooo::qp_state::OooQp;
use crate::op::{is_rc_response, packets_for};
use crate::pd::PdId;
use crate::psn::PSN_MASK;
use crate::qp::{
    post_completion, recv_completion, Ctx, FrameSink, Qp, QpAttr, QpInit, QpState, TxOut,
};
use crate::reliability::ReliabilityMode;
use crate::requester::state::SendWqe;
use crate::responder::state::{ReadBytes, MAX_MSG_BYTES};
use crate::service::ServiceType;
use crate::srq::{SrqId, SrqTable};
use crate::stats::TransportStats;
use crate::timer::TimerHeap;
use crate::wr::{RecvWr, SendWr, Sge, WrOpcode};
use crate::{TxMeta, WcOpcode, WcStatus};
use rnic_wire::{FrameRepr, Opcode};
use std::collections::VecDeque;

/// First QPN handed out (0 and 1 are the special QPs; Linux rxe starts at 0x11).
pub const FIRST_QPN: u32 = 0x11;
/// Bytes of the Ethernet II header before the IPv4 header (rnic's frames are untagged).
const ETH_HEADER_BYTES: usize = 14;

/// Largest QPN (24 bits).
pub const MAX_QPN: u32 = PSN_MASK;

/// Limits and addresses of one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceConfig {
    pub mac: [u8; 6],
    pub ip: [u8; 4],
    /// QPs that may exist at once.
    pub max_qps: u32,
    /// Depth limit of each send and receive queue.
    pub max_qp_wr: u32,
    /// SGEs per work request.
    pub max_sge: u32,
    /// Depth limit of a CQ.
    pub max_cqe: u32,
    pub max_mr: u32,
    /// Reliability mode of new QPs.
    pub reliability: ReliabilityMode,
}

impl Default for DeviceConfig {
    fn default() -> DeviceConfig {
        DeviceConfig {
            mac: [0x02, 0, 0, 0, 0, 0x01],
            ip: [10, 0, 0, 1],
            max_qps: MAX_QPN - FIRST_QPN + 1,
            max_qp_wr: 1 << 15,
            max_sge: 32,
            max_cqe: 1 << 22,
            max_mr: 1 << 24,
            reliability: ReliabilityMode::GoBackN,
        }
    }
}

/// One RNIC's transport: verbs objects and protocol state, driven by the caller with time,
/// packets and memory (see the crate docs).
#[derive(Debug)]
pub struct Device {
    cfg: DeviceConfig,
    /// QP slab indexed by QPN.
    qps: Vec<Option<Qp>>,
    n_qps: u32,
    /// Next never-used QPN; freed QPNs are reused only after these run out.
    next_qpn: u32,
    free_qpns: Vec<u32>,
    n_pds: u32,
    mrs: MrTable,
    cqs: CqTable,
    timers: TimerHeap,
    /// QPs that may want to transmit, round robin; `Qp::in_tx_queue` marks membership.
    tx_queue: VecDeque<u32>,
    stats: TransportStats,
    ip_ident: u16,
    scratch: Vec<u8>,
    /// Latest time handed in; the clock of verbs that take none (modify_qp).
    now_ps: u64,
    /// Bitmap block pools shared by the out-of-order QPs (`ooo/shared_pool.rs`).
    ooo_pools: crate::ooo::DevicePools,
    /// Shared receive queues (`srq.rs`).
    srqs: SrqTable,
}

impl Device {
    pub fn new(cfg: DeviceConfig) -> Device {
        Device {
            cfg,
            qps: Vec::new(),
            n_qps: 0,
            next_qpn: FIRST_QPN,
            free_qpns: Vec::new(),
            n_pds: 0,
            mrs: MrTable::new(),
            cqs: CqTable::default(),
            timers: TimerHeap::default(),
            tx_queue: VecDeque::new(),
            stats: TransportStats::default(),
            ip_ident: 0,
            scratch: Vec::with_capacity(4096),
            now_ps: 0,
            ooo_pools: Default::default(),
            srqs: SrqTable::default(),
        }
    }

    /// Makes room for `n` more QPs at once, so that a caller creating many QPs does not
    /// leave the QP table with up to twice the room it needs (the table grows by doubling).
    pub fn reserve_qps(&mut self, n: u32) {
        let want = (self.next_qpn as usize + n as usize).min(MAX_QPN as usize + 1);
        self.qps.reserve_exact(want.saturating_sub(self.qps.len()));
    }

    pub fn config(&self) -> &DeviceConfig {
        &self.cfg
    }

    pub fn stats(&self) -> &TransportStats {
        &self.stats
    }

    /// Bitmap blocks the out-of-order QPs hold now, over the device's shared pools.
    pub fn ooo_pool_blocks_in_use(&self) -> u32 {
        self.ooo_pools.in_use()
    }

    // ---- verbs ----

    pub fn alloc_pd(&mut self) -> PdId {
        // PDs are plain numbers: a PD owns nothing, so there is nothing to run out of.
        let pd = PdId(self.n_pds);
        self.n_pds = self.n_pds.wrapping_add(1);
        pd
    }

    fn check_pd(&self, pd: PdId) -> Result<(), VerbsError> {
        if pd.0 < self.n_pds {
            Ok(())
        } else {
            Err(VerbsError::UnknownPd(pd))
        }
    }

    /// Registers `[addr, addr + len)`. As in libibverbs, REMOTE_WRITE and REMOTE_ATOMIC need
    /// LOCAL_WRITE too.
    pub fn reg_mr(
        &mut self,
        pd: PdId,
        addr: u64,
        len: u64,
        access: Access,
    ) -> Result<MrKeys, VerbsError> {
        self.check_pd(pd)?;
        if addr.checked_add(len).is_none() {
            return Err(VerbsError::InvalidMr {
                reason: "addr + len overflows 64 bits",
            });
        }
        let needs_local_write =
            access.contains(Access::REMOTE_WRITE) || access.contains(Access::REMOTE_ATOMIC);
        if needs_local_write && !access.contains(Access::LOCAL_WRITE) {
            return Err(VerbsError::InvalidMr {
                reason: "REMOTE_WRITE and REMOTE_ATOMIC require LOCAL_WRITE",
            });
        }
        if self.mrs.len() as u64 >= u64::from(self.cfg.max_mr) {
            return Err(VerbsError::ResourceExhausted {
                resource: "memory regions",
                max: self.cfg.max_mr.into(),
            });
        }
        let key =
            self.mrs
                .register(pd, addr, len, access)
                .ok_or(VerbsError::ResourceExhausted {
                    resource: "memory region keys",
                    max: 0x00FF_FFFF,
                })?;
        Ok(MrKeys {
            lkey: key,
            rkey: key,
        })
    }

    pub fn dereg_mr(&mut self, lkey: u32) -> Result<(), VerbsError> {
        if self.mrs.deregister(lkey) {
            Ok(())
        } else {
            Err(VerbsError::UnknownKey(lkey))
        }
    }

    pub fn create_cq(&mut self, depth: u32) -> Result<CqId, VerbsError> {
        if depth == 0 || depth > self.cfg.max_cqe {
            return Err(VerbsError::AttrOutOfRange {
                attr: "cq depth",
                value: depth.into(),
                range: "1..=max_cqe",
            });
        }
        Ok(self.cqs.create(depth))
    }

    pub fn poll_cq(&mut self, cq: CqId) -> Option<Completion> {
        self.cqs.get_mut(cq)?.pop()
    }

    /// Completions waiting in `cq`.
    pub fn cq_len(&self, cq: CqId) -> usize {
        self.cqs.get(cq).map_or(0, |c| c.len())
    }

    /// Completions lost because `cq` was full.
    pub fn cq_overruns(&self, cq: CqId) -> u64 {
        self.cqs.get(cq).map_or(0, |c| c.overruns())
    }

    /// Creates an RC QP running the device's default reliability mode.
    pub fn create_qp(&mut self, init: QpInit) -> Result<u32, VerbsError> {
        self.create_qp_with(init, self.cfg.reliability)
    }

    /// Creates an RC QP running reliability mode `mode` (a per-QP choice, as a vendor QP
    /// type would be).
    pub fn create_qp_with(
        &mut self,
        init: QpInit,
        mode: ReliabilityMode,
    ) -> Result<u32, VerbsError> {
        self.create_qp_service(init, mode, ServiceType::Rc)
    }

    /// Creates a QP of service `service` (RC, UC or UD; see [`crate::service`]) running
    /// reliability mode `mode` (which only RC uses).
    pub fn create_qp_service(
        &mut self,
        init: QpInit,
        mode: ReliabilityMode,
        service: ServiceType,
    ) -> Result<u32, VerbsError> {
        self.check_pd(init.pd)?;
        for cq in [init.send_cq, init.recv_cq] {
            if self.cqs.get(cq).is_none() {
                return Err(VerbsError::UnknownCq(cq));
            }
        }
        for (attr, v) in [
            ("max_send_wr", init.max_send_wr),
            ("max_recv_wr", init.max_recv_wr),
        ] {
            if v > self.cfg.max_qp_wr {
                return Err(VerbsError::AttrOutOfRange {
                    attr,
                    value: v.into(),
                    range: "0..=max_qp_wr",
                });
            }
        }
        if self.n_qps >= self.cfg.max_qps {
            return Err(VerbsError::ResourceExhausted {
                resource: "QPs",
                max: self.cfg.max_qps.into(),
            });
        }
        let qpn = if self.next_qpn <= MAX_QPN {
            self.next_qpn += 1;
            self.next_qpn - 1
        } else {
            self.free_qpns.pop().ok_or(VerbsError::ResourceExhausted {
                resource: "QP numbers",
                max: u64::from(MAX_QPN - FIRST_QPN + 1),
            })?
        };
        let idx = qpn as usize;
        if self.qps.len() <= idx {
            self.qps.resize_with(idx + 1, || None);
        }
        let ooo = mode
            .ooo()
            .map(|p| (mode, self.ooo_pools.get(p.block_bits, p.pool_blocks)));
        self.qps[idx] = Some(Qp::new(qpn, &init, ooo, service));
        self.n_qps += 1;
        Ok(qpn)
    }

    /// Destroys a QP without completions (like ibv_destroy_qp).
    pub fn destroy_qp(&mut self, qpn: u32) -> Result<(), VerbsError> {
        let slot = self
            .qps
            .get_mut(qpn as usize)
            .ok_or(VerbsError::UnknownQp(qpn))?;
        if slot.take().is_none() {
            return Err(VerbsError::UnknownQp(qpn));
        }
        self.n_qps -= 1;
        self.free_qpns.push(qpn);
        self.clean_timers();
        Ok(())
    }

    /// Number of QPs that exist.
    pub fn qp_count(&self) -> u32 {
        self.n_qps
    }

    /// Bytes of one QP's protocol context while its queues are empty (for memory accounting;
    /// queued WRs and responses add heap memory on top).
    pub fn qp_context_bytes() -> usize {
        core::mem::size_of::<Option<Qp>>()
    }

    fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)?.as_ref()
    }

    fn qp_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        self.qps.get_mut(qpn as usize)?.as_mut()
    }

    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        self.qp(qpn).map(|q| q.state)
    }

    /// The service type (RC, UC, UD) of a QP.
    pub fn qp_service(&self, qpn: u32) -> Option<ServiceType> {
        self.qp(qpn).map(|q| q.service)
    }

    /// The reliability mode a QP runs.
    pub fn qp_reliability(&self, qpn: u32) -> Option<ReliabilityMode> {
        self.qp(qpn).map(|q| q.mode())
    }

    /// The connected peer's QPN of `qpn`, for a frame the NIC sends to it on the QP's
    /// behalf (a CNP answering ECN-marked traffic): `None` for an unknown QP or a UD QP,
    /// which has no one peer.
    pub fn qp_dest_qpn(&self, qpn: u32) -> Option<u32> {
        self.qp(qpn)
            .filter(|q| q.service != ServiceType::Ud)
            .map(|q| q.cfg.dest_qpn)
    }

    /// Changes QP state and attributes per the IB transition table: the transition must
    /// exist, every required attribute must be given, no attribute outside the required and
    /// optional sets may be given, and every value must be in range.
    pub fn modify_qp(&mut self, qpn: u32, attr: &QpAttr) -> Result<(), VerbsError> {
        let now_ps = self.now_ps;
        let qp = self
            .qps
            .get_mut(qpn as usize)
            .and_then(Option::as_mut)
            .ok_or(VerbsError::UnknownQp(qpn))?;
        attr.validate_ranges()?;
        let (from, to) = (qp.state, attr.state);
        let (required, optional) = qp
            .service
            .rules(from, to)
            .ok_or(VerbsError::InvalidTransition { from, to })?;
        let given = attr.mask();
        if let Some(name) = required.minus(given).first_name() {
            return Err(VerbsError::MissingAttr {
                attr: name,
                from,
                to,
            });
        }
        if let Some(name) = given.minus(required.union(optional)).first_name() {
            return Err(VerbsError::AttrNotAllowed {
                attr: name,
                from,
                to,
            });
        }
        let mut ctx = Ctx {
            mrs: &mut self.mrs,
            cqs: &mut self.cqs,
            stats: &mut self.stats,
            now_ps,
        };
        qp.apply_modify(attr, &mut ctx);
        self.after_qp_change(qpn);
        Ok(())
    }

    /// Posts a send WR. RESET, INIT and RTR refuse it; in ERR it completes at once with
    /// WrFlushErr (like rxe); in SQD it waits for RTS.
    pub fn post_send(&mut self, qpn: u32, wr: SendWr) -> Result<(), VerbsError> {
        let max_sge = self.cfg.max_sge;
        let now_ps = self.now_ps;
        let qp = self
            .qps
            .get_mut(qpn as usize)
            .and_then(Option::as_mut)
            .ok_or(VerbsError::UnknownQp(qpn))?;
        if matches!(qp.state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err(VerbsError::InvalidState {
                op: "post_send",
                state: qp.state,
            });
        }
        qp.service.check_wr(&wr, wr.sgl_len(), qp.cfg.pmtu)?;
        let len = validate_send_wr(&wr, max_sge, &qp.cfg)?;
        OooQp::check_wr(qp, &wr)?;
        if qp.state == QpState::Err {
            let mut ctx = Ctx {
                mrs: &mut self.mrs,
                cqs: &mut self.cqs,
                stats: &mut self.stats,
                now_ps,
            };
            let c = SendWqe::new(wr, len, qp.cfg.pmtu).completion(qpn, WcStatus::WrFlushErr);
            qp.sq_done += 1;
            post_completion(&mut ctx, qp.send_cq, c);
            return Ok(());
        }
        if qp.req.sq.len() >= qp.max_send_wr as usize {
            return Err(VerbsError::QueueFull {
                queue: "send",
                depth: qp.max_send_wr,
            });
        }
        qp.push_send(wr, len);
        self.schedule(qpn);
        Ok(())
    }

    /// Posts a receive WR (allowed from INIT on; in ERR it completes at once with
    /// WrFlushErr).
    pub fn post_recv(&mut self, qpn: u32, wr: RecvWr) -> Result<(), VerbsError> {
        let max_sge = self.cfg.max_sge;
        let now_ps = self.now_ps;
        let qp = self
            .qps
            .get_mut(qpn as usize)
            .and_then(Option::as_mut)
            .ok_or(VerbsError::UnknownQp(qpn))?;
        if qp.state == QpState::Reset {
            return Err(VerbsError::InvalidState {
                op: "post_recv",
                state: qp.state,
            });
        }
        check_sge_count(wr.sgl.len(), max_sge)?;
        if qp.resp.srq().is_some() {
            return Err(VerbsError::InvalidWr {
                reason: "the QP takes its receives from a shared receive queue: post_srq_recv",
            });
        }
        if qp.state == QpState::Err {
            let mut ctx = Ctx {
                mrs: &mut self.mrs,
                cqs: &mut self.cqs,
                stats: &mut self.stats,
                now_ps,
            };
            let c = recv_completion(qpn, wr.wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, 0);
            post_completion(&mut ctx, qp.recv_cq, c);
            return Ok(());
        }
        if qp.resp.rq().len() >= qp.max_recv_wr as usize {
            return Err(VerbsError::QueueFull {
                queue: "receive",
                depth: qp.max_recv_wr,
            });
        }
        let rq = &mut qp.resp.cold_mut().rq;
        if rq.capacity() == 0 {
            // No more room than the queue's depth (see `push_send`).
            rq.reserve_exact(qp.max_recv_wr.clamp(1, 4) as usize);
        }
        rq.push_back(wr);
        Ok(())
    }

    /// Creates a shared receive queue of at most `max_wr` WQEs (ibv_create_srq).
    pub fn create_srq(&mut self, max_wr: u32) -> Result<SrqId, VerbsError> {
        if max_wr == 0 || max_wr > self.cfg.max_qp_wr {
            return Err(VerbsError::AttrOutOfRange {
                attr: "max_wr",
                value: max_wr.into(),
                range: "1..=max_qp_wr",
            });
        }
        Ok(self.srqs.create(max_wr))
    }

    /// Makes QP `qpn`, still in RESET, take its receives from `srq` (verbs sets it at
    /// ibv_create_qp): its own receive queue is not used, and post_recv on it is refused.
    pub fn set_qp_srq(&mut self, qpn: u32, srq: SrqId) -> Result<(), VerbsError> {
        self.srqs.check(srq)?;
        let qp = self.qp_mut(qpn).ok_or(VerbsError::UnknownQp(qpn))?;
        if qp.state != QpState::Reset {
            return Err(VerbsError::InvalidState {
                op: "set_qp_srq",
                state: qp.state,
            });
        }
        qp.resp.cold_mut().srq = Some(srq);
        Ok(())
    }

    /// Posts a receive WR on shared receive queue `srq` (ibv_post_srq_recv).
    pub fn post_srq_recv(&mut self, srq: SrqId, wr: RecvWr) -> Result<(), VerbsError> {
        check_sge_count(wr.sgl.len(), self.cfg.max_sge)?;
        self.srqs.post(srq, wr)
    }

    /// Receive WQEs a message arriving at `qpn` now could land in: those its receive queue
    /// holds, and those its shared receive queue holds that no QP has taken (`None`: no
    /// such QP).
    pub fn recvs_posted(&self, qpn: u32) -> Option<u32> {
        let resp = &self.qp(qpn)?.resp;
        let shared = resp.srq().and_then(|srq| self.srqs.len(srq)).unwrap_or(0);
        Some((resp.rq().len() + shared) as u32)
    }

    /// The shared receive queue QP `qpn` takes its receive WQEs from, if any.
    pub fn qp_srq(&self, qpn: u32) -> Option<SrqId> {
        self.qp(qpn)?.resp.srq()
    }

    /// WQEs posted on `srq` that no QP has taken yet (`None`: no such SRQ).
    pub fn srq_len(&self, srq: SrqId) -> Option<usize> {
        self.srqs.len(srq)
    }

    // ---- driving ----

    /// Takes one received frame. `Err` says why it was dropped (also counted in
    /// [`TransportStats::drops`]); it never changes device state beyond counters.
    pub fn handle_packet(
        &mut self,
        now_ps: u64,
        frame: &[u8],
        mem: &mut dyn Memory,
    ) -> Result<(), RxDrop> {
        self.now_ps = self.now_ps.max(now_ps);
        self.stats.rx_packets += 1;
        self.stats.rx_bytes += frame.len() as u64;
        let r = self.receive(now_ps, frame, mem);
        if let Err(d) = &r {
            self.stats.drops.count(d);
        }
        r
    }

    fn receive(&mut self, now_ps: u64, frame: &[u8], mem: &mut dyn Memory) -> Result<(), RxDrop> {
        let f = FrameRepr::parse(frame)?;
        if f.addr.dst_ip != self.cfg.ip {
            return Err(RxDrop::NotForThisDevice);
        }
        let op = f.roce.bth.opcode;
        if op == Opcode::Cnp {
            self.stats.rx_cnps += 1;
            return Ok(());
        }
        let is_request = op.is_request();
        if !(op.is_ooo() || is_request || is_rc_response(op)) {
            return Err(RxDrop::UnsupportedOpcode(op));
        }
        let qpn = f.roce.bth.dest_qp;
        let qp = self
            .qps
            .get_mut(qpn as usize)
            .and_then(Option::as_mut)
            .ok_or(RxDrop::UnknownQp(qpn))?;
        if !qp.accepts(is_request) {
            return Err(RxDrop::BadQpState);
        }
        if !qp.pkey_matches(f.roce.bth.pkey) {
            return Err(RxDrop::PkeyMismatch(f.roce.bth.pkey));
        }
        if !qp.service.carries(op) {
            return Err(RxDrop::UnsupportedOpcode(op));
        }
        // A UD QP takes datagrams from any peer; RC and UC only from the connected one.
        if qp.service != ServiceType::Ud && f.addr.src_ip != qp.cfg.av.dest_ip {
            return Err(RxDrop::AddressMismatch);
        }
        // A QP on a shared receive queue borrows its WQE for this packet (`srq.rs`).
        let srq = if self.srqs.is_empty() {
            None
        } else {
            qp.resp.srq()
        };
        if let Some(srq) = srq {
            self.srqs.lend(srq, op, &mut qp.resp);
        }
        let mut ctx = Ctx {
            mrs: &mut self.mrs,
            cqs: &mut self.cqs,
            stats: &mut self.stats,
            now_ps,
        };
        let r = if op.is_ooo() {
            OooQp::receive(qp, &mut ctx, mem, &f.roce)
        } else if qp.service == ServiceType::Uc {
            ctx.stats.rx_requests += 1;
            crate::uc::handle_request(qp, &mut ctx, mem, &f.roce)
        } else if qp.service == ServiceType::Ud {
            ctx.stats.rx_requests += 1;
            let ip = frame
                .get(ETH_HEADER_BYTES..ETH_HEADER_BYTES + 20)
                .unwrap_or(&[]);
            crate::ud::handle_request(qp, &mut ctx, mem, &f.roce, ip)
        } else if is_request {
            ctx.stats.rx_requests += 1;
            qp.handle_request(&mut ctx, mem, &f.roce)
        } else {
            match op {
                Opcode::RcAck => ctx.stats.rx_acks += 1,
                Opcode::RcAtomicAck => ctx.stats.rx_atomic_acks += 1,
                _ => ctx.stats.rx_read_responses += 1,
            }
            qp.handle_response(&mut ctx, mem, &f.roce)
        };
        if let Some(srq) = srq {
            self.srqs.take_back(srq, &mut qp.resp);
        }
        self.after_qp_change(qpn);
        r
    }

    /// Builds the next frame of any QP into `buf` (round robin between QPs, one packet per
    /// turn; a QP's queued responses go before its new requests).
    pub fn poll_transmit(
        &mut self,
        now_ps: u64,
        mem: &dyn Memory,
        buf: &mut Vec<u8>,
    ) -> Option<TxMeta> {
        self.now_ps = self.now_ps.max(now_ps);
        while let Some(qpn) = self.tx_queue.pop_front() {
            let Some(qp) = self.qp_mut(qpn) else { continue };
            qp.in_tx_queue = false;
            let meta = self.transmit_one(qpn, now_ps, mem, buf);
            self.after_qp_change(qpn);
            if meta.is_some() {
                return meta;
            }
        }
        None
    }

    /// Builds the next frame of one QP (for a scheduler outside the transport).
    pub fn poll_transmit_qp(
        &mut self,
        qpn: u32,
        now_ps: u64,
        mem: &dyn Memory,
        buf: &mut Vec<u8>,
    ) -> Option<TxMeta> {
        self.now_ps = self.now_ps.max(now_ps);
        self.qp(qpn)?;
        let meta = self.transmit_one(qpn, now_ps, mem, buf);
        self.after_qp_change(qpn);
        meta
    }

    /// What [`Device::poll_transmit_qp`] would build next for `qpn` now (`None`: nothing).
    /// Does not change any state.
    pub fn peek_transmit_qp(&self, qpn: u32) -> Option<crate::TxPeek> {
        self.qp(qpn)?.peek_transmit()
    }

    /// Send WRs of `qpn` finished so far: completed (with or without a CQE, as unsignaled
    /// WRs have none) or flushed. Monotonic; 0 for an unknown QP.
    pub fn sq_done(&self, qpn: u32) -> u64 {
        self.qp(qpn).map_or(0, |q| q.sq_done)
    }

    /// Requests `qpn`'s responder has taken so far: over RC its message sequence number
    /// (24 bits: modulo 2^24), over UC and UD its messages received whole. 0 for a QP that
    /// has only sent, and for unknown QPs.
    pub fn qp_requests_taken(&self, qpn: u32) -> u64 {
        self.qp(qpn)
            .map_or(0, |q| u64::from(q.resp.msn) + q.resp.msgs_received())
    }

    /// UC/UD messages `qpn` received whole so far (0 for RC QPs and unknown QPs): with
    /// the sender's `sq_done`, what the unreliable services lost.
    pub fn qp_messages_received(&self, qpn: u32) -> u64 {
        self.qp(qpn).map_or(0, |q| q.resp.msgs_received())
    }

    /// The SEND `qpn` is receiving (its first packets placed, its last not yet): the
    /// `wr_id` of the receive WQE it holds and the payload bytes placed so far, at the start
    /// of that WQE's buffer (SEND packets are placed in order). `None` when no SEND is open,
    /// and for unknown QPs.
    pub fn open_send(&self, qpn: u32) -> Option<(u64, u32)> {
        let q = self.qp(qpn)?;
        let msg = q
            .resp
            .open()
            .filter(|m| m.kind == crate::op::ReqKind::Send)?;
        Some((q.resp.rq().front()?.wr_id, msg.received))
    }

    /// Where the payload of a received out-of-order data frame of `qpn` without a write
    /// address would go, as the QP's state knows it now, before the frame is handled: a Spot
    /// packet's `(R_Key, address)` at the WRITE responder, an OOO READ response's
    /// `(L_Key, address)` at the requester. `None` when nothing would be written, and for
    /// other QPs and opcodes. The NIC translates that page before the frame is placed.
    pub fn ooo_payload_target(&self, qpn: u32, opcode: Opcode, psn: u32) -> Option<(u32, u64)> {
        OooQp::payload_target(self.qp(qpn)?, opcode, psn)
    }

    /// The local buffer of the RoCEv2 READ or atomic whose first response has PSN `psn`
    /// on `qpn`: its scatter list and the bytes its responses place (an atomic's 8), asked
    /// before the response is handled, so that the NIC translates every element they fill
    /// once; `None` for any other PSN, QP or service (see `Qp::read_response_target`).
    pub fn read_response_target(&self, qpn: u32, psn: u32) -> Option<(&[Sge], u64)> {
        self.qp(qpn)?.read_response_target(psn)
    }

    /// The scatter list of the receive WQE the next message of `qpn` that consumes one
    /// will land in, when `ahead` messages received before it (their frames still on their
    /// way to [`Device::handle_packet`]) will each consume one first: the WQE `ahead` places
    /// behind the receive queue's head, as the responder will find it at its head once
    /// those messages are placed. `None` when that many receive WQEs are not posted (the
    /// message will find none: RNR NAK for RC, dropped for UC and UD), and for unknown QPs.
    /// Asked before a SEND's first packet is handled, so that the NIC translates the
    /// buffer before it writes into it.
    /// On a shared receive queue: the WQE the QP holds, then the SRQ's in order (as if no
    /// other QP of the SRQ received meanwhile).
    pub fn recv_target(&self, qpn: u32, ahead: u32) -> Option<&[Sge]> {
        let resp = &self.qp(qpn)?.resp;
        let held = resp.rq().len();
        let recv = match resp.srq() {
            Some(srq) if ahead as usize >= held => self.srqs.get(srq, ahead as usize - held)?,
            _ => resp.rq().get(ahead as usize)?,
        };
        Some(recv.sgl.as_slice())
    }

    /// Where an RC request of `qpn` stands in its responder's sequence before it is handled:
    /// the PSN the responder expects now, and how many PSNs a request of `opcode` moving
    /// `dma_len` bytes takes when executed in sequence (a READ request its response
    /// packets, any other request one). `None` for UC, UD and unknown QPs and for opcodes
    /// that are not RC requests. Asked before a request is translated, so that the NIC
    /// translates only requests the responder will execute (see `Qp::handle_request`).
    pub fn rc_request_sequence(
        &self,
        qpn: u32,
        opcode: Opcode,
        dma_len: u32,
    ) -> Option<(u32, u32)> {
        let qp = self.qp(qpn)?;
        if qp.service != ServiceType::Rc || !opcode.is_request() || opcode.is_ooo() {
            return None;
        }
        let span_psns = if opcode == Opcode::RcReadRequest {
            packets_for(u64::from(dma_len), qp.cfg.pmtu) as u32
        } else {
            1
        };
        Some((qp.resp.epsn, span_psns))
    }

    /// What the READ requests `qpn`'s responder took since the last call did to its queued
    /// READ response data: the bytes queued (new READs and replays; `None` when the request
    /// was refused) and the bytes abandoned because a duplicate READ went back before them.
    /// A NIC that fetches READ response data from host memory asks after each READ request
    /// it hands over, so that it reads exactly the bytes packets will carry (not a refused
    /// READ's RETH length) and stops fetching, or counting on, bytes no packet will carry.
    /// Nothing for unknown QPs.
    pub fn take_read_bytes(&mut self, qpn: u32) -> ReadBytes {
        self.qp_mut(qpn)
            .map_or_else(ReadBytes::default, |q| q.resp.take_read_bytes())
    }

    pub fn qp_wants_transmit(&self, qpn: u32) -> bool {
        self.qp(qpn).is_some_and(Qp::wants_transmit)
    }

    fn transmit_one(
        &mut self,
        qpn: u32,
        now_ps: u64,
        mem: &dyn Memory,
        buf: &mut Vec<u8>,
    ) -> Option<TxMeta> {
        let qp = self.qps.get_mut(qpn as usize)?.as_mut()?;
        let mut ctx = Ctx {
            mrs: &mut self.mrs,
            cqs: &mut self.cqs,
            stats: &mut self.stats,
            now_ps,
        };
        let mut out = TxOut {
            frame: FrameSink {
                src_mac: self.cfg.mac,
                src_ip: self.cfg.ip,
                ip_ident: &mut self.ip_ident,
                buf,
            },
            scratch: &mut self.scratch,
        };
        if let Some(m) = qp.next_response(&mut ctx, &mut out, mem) {
            return Some(m);
        }
        if let Some(m) = OooQp::next(qp, &mut ctx, &mut out, mem) {
            return Some(m);
        }
        qp.next_request(&mut ctx, &mut out, mem)
    }

    /// Earliest protocol deadline of any QP (exact: stale heap entries are removed eagerly).
    pub fn poll_timeout(&self) -> Option<u64> {
        self.timers.peek().map(|(deadline, _)| deadline)
    }

    /// Fires every deadline at or before `now_ps`.
    pub fn handle_timeout(&mut self, now_ps: u64) {
        self.now_ps = self.now_ps.max(now_ps);
        while let Some((deadline, qpn)) = self.timers.peek() {
            if deadline > now_ps {
                break;
            }
            self.timers.pop();
            let Some(qp) = self.qps.get_mut(qpn as usize).and_then(Option::as_mut) else {
                continue;
            };
            if qp.armed_ps.get() != Some(deadline) {
                continue;
            }
            qp.armed_ps = crate::timer::Deadline::NONE;
            let mut ctx = Ctx {
                mrs: &mut self.mrs,
                cqs: &mut self.cqs,
                stats: &mut self.stats,
                now_ps,
            };
            if qp.req.rnr_deadline_ps.get().is_some_and(|d| d <= now_ps) {
                qp.on_rnr_timer(&mut ctx);
            }
            if qp.req.ack_deadline_ps.get().is_some_and(|d| d <= now_ps) {
                qp.on_ack_timeout(&mut ctx);
            }
            if OooQp::deadline(qp).is_some_and(|d| d <= now_ps) {
                OooQp::on_timer(qp, &mut ctx);
            }
            self.after_qp_change(qpn);
        }
        self.clean_timers();
    }

    // ---- bookkeeping ----

    /// After anything touched QP `qpn`: register its deadline, queue it for transmit, and
    /// keep the timer heap's top exact.
    fn after_qp_change(&mut self, qpn: u32) {
        self.sync_timer(qpn);
        self.schedule(qpn);
        self.clean_timers();
    }

    fn schedule(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(qpn as usize).and_then(Option::as_mut) else {
            return;
        };
        if !qp.in_tx_queue && qp.wants_transmit() {
            qp.in_tx_queue = true;
            self.tx_queue.push_back(qpn);
        }
    }

    /// Pushes a heap entry if the QP's deadline is earlier than the one it owns.
    fn sync_timer(&mut self, qpn: u32) {
        let Some(qp) = self.qps.get_mut(qpn as usize).and_then(Option::as_mut) else {
            return;
        };
        if let Some(d) = qp.next_deadline() {
            if qp.armed_ps.get().is_none_or(|a| d < a) {
                qp.armed_ps = crate::timer::Deadline::at(d);
                self.timers.push(d, qpn);
            }
        }
    }

    /// Removes orphaned entries from the heap top and moves early ones to their real
    /// deadline, so the top is a live, exact deadline.
    fn clean_timers(&mut self) {
        while let Some((e, qpn)) = self.timers.peek() {
            let Some(qp) = self.qps.get_mut(qpn as usize).and_then(Option::as_mut) else {
                self.timers.pop();
                continue;
            };
            if qp.armed_ps.get() != Some(e) {
                self.timers.pop();
                continue;
            }
            match qp.next_deadline() {
                None => {
                    self.timers.pop();
                    qp.armed_ps = crate::timer::Deadline::NONE;
                }
                Some(d) if d > e => {
                    self.timers.pop();
                    qp.armed_ps = crate::timer::Deadline::at(d);
                    self.timers.push(d, qpn);
                }
                Some(_) => break,
            }
        }
    }

    /// Entries in the timer heap (live and orphaned), for tests and memory accounting.
    pub fn timer_heap_len(&self) -> usize {
        self.timers.len()
    }
}

/// A work request of `given` SGEs against the device's `max_sge`.
fn check_sge_count(given: usize, max_sge: u32) -> Result<(), VerbsError> {
    if given > max_sge as usize {
        return Err(VerbsError::TooManySges {
            given,
            max: max_sge,
        });
    }
    Ok(())
}

/// Checks a send WR's shape against the QP's attributes; returns its message length.
fn validate_send_wr(
    wr: &SendWr,
    max_sge: u32,
    cfg: &crate::qp::QpConfig,
) -> Result<u32, VerbsError> {
    let (pmtu, max_rd_atomic, window) = (cfg.pmtu, cfg.max_rd_atomic, cfg.max_outstanding_psns);
    check_sge_count(wr.sgl.len(), max_sge)?;
    let len = wr.sgl_len();
    if len > MAX_MSG_BYTES {
        return Err(VerbsError::MessageTooLong {
            len,
            max: MAX_MSG_BYTES,
        });
    }
    let op = wr.opcode;
    if op.needs_remote() && wr.remote.is_none() {
        return Err(VerbsError::InvalidWr {
            reason: "WRITE, READ and atomics need `remote`",
        });
    }
    if matches!(op, WrOpcode::SendImm | WrOpcode::WriteImm) && wr.imm.is_none() {
        return Err(VerbsError::InvalidWr {
            reason: "SendImm and WriteImm need `imm`",
        });
    }
    if op == WrOpcode::SendInv && wr.invalidate_rkey.is_none() {
        return Err(VerbsError::InvalidWr {
            reason: "SendInv needs `invalidate_rkey`",
        });
    }
    if op.is_atomic() {
        if wr.atomic.is_none() {
            return Err(VerbsError::InvalidWr {
                reason: "atomics need `atomic` arguments",
            });
        }
        if len != 8 {
            return Err(VerbsError::InvalidWr {
                reason: "an atomic's SGL must name exactly 8 bytes",
            });
        }
    }
    if op.is_read_or_atomic() && max_rd_atomic == 0 {
        return Err(VerbsError::InvalidWr {
            reason: "READ/atomic on a QP with max_rd_atomic 0",
        });
    }
    // A READ's responses all fall inside the packet window, so a longer READ could never go.
    if op == WrOpcode::Read && packets_for(len, pmtu) > u64::from(window) {
        return Err(VerbsError::MessageTooLong {
            len,
            max: u64::from(window) * u64::from(pmtu),
        });
    }
    Ok(len as u32)
}
