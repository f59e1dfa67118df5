//! An out-of-order QP in the device: the sans-IO [`OooRequester`] and [`OooResponder`] of
//! [`crate::ooo`] put on the wire with the vendor opcodes of [`rnic_wire::Opcode`]
//! (`OooWrite*`, `OooAck`, `OooNak`), reading payloads from and placing them into host memory
//! through the memory-region checks.
//!
//! A QP whose [`ReliabilityMode`] is ORNIC or MP-RDMA sends each WRITE WR as one OOO WRITE
//! WQE, one at a time (the ORNIC paper's rule: the next WQE is fetched only when the previous
//! one completed): the WR stays at the head of the send queue until the responder's
//! cumulative ACK covers its last PSN, then completes. Other verbs are refused at post time
//! (the paper sends them as standard WQEs; this model has no mixed QP).
//!
//! The responder learns the WQE's start address and R_Key from the first FSpot packet
//! (RETH: the packet's own VA, the R_Key, the WQE length); every placement is checked against
//! that R_Key's region with REMOTE_WRITE, so a hostile packet writes nothing outside it. The
//! ACK scheduler's turns and the requester's timeout are deadlines of the QP's timer.

use crate::cq::WcStatus;
use crate::error::{RxDrop, VerbsError};
use crate::memory::Memory;
use crate::mr::{Access, MrTable};
use crate::ooo::qp_state::OooQp;
use crate::ooo::{OooRequester, OooResponder, OooSegment, PlaceTarget, TimerFired};
use crate::pd::PdId;
use crate::qp::{min_deadline, post_completion, Ctx, Qp, QpState, TxOut};
use crate::sgl::gather;
use crate::wr::{SendWr, WrOpcode};
use crate::TxMeta;
use rnic_wire::{
    AethRepr, AethSyndrome, BthRepr, NakCode, OooAckEthRepr, Opcode, RethRepr, RoceRepr,
    CREDITS_UNLIMITED,
};

/// Host memory behind one R_Key, as a responder's placement target.
struct MrTarget<'a> {
    mrs: &'a MrTable,
    pd: PdId,
    rkey: u32,
    mem: &'a mut dyn Memory,
}

impl PlaceTarget for MrTarget<'_> {
    fn allows(&mut self, addr: u64, len: u64) -> bool {
        self.mrs
            .check(self.rkey, self.pd, addr, len, Access::REMOTE_WRITE)
            .is_ok()
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        self.mem.write(addr, data);
    }
}

impl OooQp {
    /// Creates, resets or completes the out-of-order state after a modify_qp to `qp.state`.
    pub(crate) fn after_modify(qp: &mut Qp) {
        let Some((mode, pool)) = qp.ooo_setup.as_deref().cloned() else {
            return;
        };
        match qp.state {
            QpState::Reset | QpState::Err => qp.ooo = None,
            QpState::Init => {
                if qp.ooo.is_none() {
                    qp.ooo = OooQp::new(mode, pool).map(Box::new);
                }
            }
            QpState::Rtr | QpState::Rts => {
                let (epsn, psn, pmtu) = (qp.resp.epsn, qp.req.psn, qp.cfg.pmtu);
                let o = qp.ooo.get_or_insert_with(|| {
                    Box::new(OooQp::new(mode, pool).expect("an out-of-order mode"))
                });
                if o.resp.is_none() {
                    o.resp = Some(OooResponder::new(
                        o.design,
                        o.params.block_bits,
                        o.params.nodes,
                        o.params.otd,
                        pmtu,
                        o.policy,
                        0,
                        u64::MAX,
                        epsn,
                    ));
                }
                if qp.state == QpState::Rts && o.req.is_none() {
                    // READ responses are numbered in a space of their own, which starts,
                    // like the WRITEs', at the send queue's first PSN.
                    o.read.next_psn = psn;
                    o.req = Some(
                        OooRequester::new(pmtu, o.window(), o.params.timer_ps(), psn)
                            .with_retry_cnt(qp.cfg.retry_cnt),
                    );
                }
            }
            QpState::Sqd | QpState::Sqe => {}
        }
    }

    /// An out-of-order QP takes WRITE and READ WRs only.
    pub(crate) fn check_wr(qp: &Qp, wr: &SendWr) -> Result<(), VerbsError> {
        if qp.mode().ooo().is_some() && !matches!(wr.opcode, WrOpcode::Write | WrOpcode::Read) {
            return Err(VerbsError::InvalidWr {
                reason: "an out-of-order QP (qp.reliability = \"ornic\" or \"mp_rdma\") posts \
                         WRITE and READ only; use a go-back-N QP for other verbs",
            });
        }
        Ok(())
    }

    /// Hands the send queue's head WR to the requester when it is idle.
    fn feed(qp: &mut Qp) {
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return;
        }
        let Some(o) = qp.ooo.as_deref_mut() else {
            return;
        };
        let Some(req) = o.req.as_mut() else { return };
        if o.posted || !req.idle() {
            return;
        }
        if o.read.wqe.is_some() {
            return;
        }
        if let Some(w) = qp.req.sq.front() {
            if w.wr.opcode != WrOpcode::Write {
                return;
            }
            let remote = w.wr.remote.unwrap_or_default();
            req.post_len(u64::from(w.len), remote.va);
            o.posted = true;
        }
    }

    /// The QP has an out-of-order frame to send now.
    pub(crate) fn wants_transmit(qp: &Qp) -> bool {
        let Some(o) = qp.ooo.as_deref() else {
            return false;
        };
        let (read_responses, read_requests) = OooQp::read_wants(qp);
        let resp = o.resp.as_ref().is_some_and(|r| r.has_queued()) || o.ack_due || read_responses;
        let sending = matches!(qp.state, QpState::Rts | QpState::Sqd);
        let req = sending
            && match &o.req {
                Some(r) if o.posted => r.peek_packet().is_some(),
                Some(_) => qp
                    .req
                    .sq
                    .front()
                    .is_some_and(|w| w.wr.opcode == WrOpcode::Write && o.read.wqe.is_none()),
                None => false,
            };
        resp || req || (sending && read_requests)
    }

    /// What [`OooQp::next`] would build next.
    pub(crate) fn peek(qp: &Qp) -> Option<crate::TxPeek> {
        let o = qp.ooo.as_deref()?;
        if o.resp.as_ref().is_some_and(|r| r.has_queued()) || o.ack_due {
            return Some(crate::TxPeek {
                is_response: true,
                payload_len: 0,
                is_retransmit: false,
            });
        }
        if let Some(n) = OooQp::read_peek_response(qp) {
            return Some(crate::TxPeek {
                is_response: true,
                payload_len: n,
                is_retransmit: false,
            });
        }
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return None;
        }
        if OooQp::read_wants(qp).1 {
            return Some(crate::TxPeek {
                is_response: false,
                payload_len: 0,
                is_retransmit: false,
            });
        }
        let req = o.req.as_ref()?;
        let (payload_len, is_retransmit) = if o.posted {
            req.peek_packet()?
        } else {
            let w = qp
                .req
                .sq
                .front()
                .filter(|w| w.wr.opcode == WrOpcode::Write)?;
            (w.len.min(qp.cfg.pmtu), false)
        };
        Some(crate::TxPeek {
            is_response: false,
            payload_len,
            is_retransmit,
        })
    }

    /// Earliest out-of-order deadline: the requester's timeout, the ACK scheduler's turn.
    pub(crate) fn deadline(qp: &Qp) -> Option<u64> {
        let o = qp.ooo.as_deref()?;
        let a = o.req.as_ref().and_then(|r| r.poll_timeout());
        // A turn that came is served by the next transmit, not fired again.
        let b = if o.ack_due {
            None
        } else {
            o.resp.as_ref().and_then(|r| r.next_turn_ps())
        };
        min_deadline(min_deadline(a, b), o.read.deadline())
    }

    /// Fires the out-of-order deadlines at or before `now_ps`.
    pub(crate) fn on_timer(qp: &mut Qp, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ps;
        let Some(o) = qp.ooo.as_deref_mut() else {
            return;
        };
        if let Some(r) = o.req.as_mut() {
            if r.poll_timeout().is_some_and(|d| d <= now) {
                ctx.stats.ack_timeouts += 1;
                if r.handle_timeout(now) == TimerFired::RetriesExhausted {
                    qp.fail_wqe(ctx, 0, WcStatus::RetryExcErr);
                    return;
                }
            }
        }
        if o.resp
            .as_ref()
            .and_then(|r| r.next_turn_ps())
            .is_some_and(|t| t <= now)
        {
            o.ack_due = true;
        }
        OooQp::read_on_timer(qp, ctx);
    }

    /// Builds the next out-of-order frame (responder output first, then data).
    pub(crate) fn next(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
    ) -> Option<TxMeta> {
        qp.ooo.as_ref()?;
        if let Some(m) = OooQp::next_ack(qp, ctx, out) {
            return Some(m);
        }
        if let Some(m) = OooQp::read_next_response(qp, ctx, out, mem) {
            return Some(m);
        }
        if let Some(m) = OooQp::read_next_request(qp, ctx, out) {
            return Some(m);
        }
        OooQp::next_data(qp, ctx, out, mem)
    }

    fn next_ack(qp: &mut Qp, ctx: &mut Ctx<'_>, out: &mut TxOut<'_>) -> Option<TxMeta> {
        let o = qp.ooo.as_deref_mut()?;
        let resp = o.resp.as_mut()?;
        let seg = resp.poll_transmit(ctx.now_ps);
        o.ack_due = false;
        let (opcode, psn, syndrome, ooo_ack) = match seg? {
            OooSegment::Ack {
                psn, start_learnt, ..
            } => (
                Opcode::OooAck,
                psn,
                AethSyndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
                OooAckEthRepr {
                    start_learnt,
                    bitmap: 0,
                },
            ),
            OooSegment::Nak { head, missing } => (
                Opcode::OooNak,
                head,
                AethSyndrome::Nak(NakCode::PsnSequenceError),
                OooAckEthRepr {
                    start_learnt: resp.start_learnt(),
                    bitmap: missing,
                },
            ),
            OooSegment::Write { .. } => return None,
        };
        let msn = resp.msn() & crate::psn::PSN_MASK;
        let bth = OooQp::bth(qp, opcode, psn, false);
        let roce = RoceRepr::new(bth, &[])
            .with_aeth(AethRepr { syndrome, msn })
            .with_ooo_ack(ooo_ack);
        let frame_len = out.frame.emit(&qp.cfg, roce, ctx.stats);
        let s = &mut *ctx.stats;
        s.tx_acks += 1;
        if opcode == Opcode::OooNak {
            s.naks_sent.count(NakCode::PsnSequenceError);
        }
        Some(TxMeta {
            qpn: qp.qpn,
            opcode,
            psn,
            payload_len: 0,
            frame_len,
            is_retransmit: false,
            starts_ooo_wqe: false,
        })
    }

    pub(crate) fn bth(qp: &Qp, opcode: Opcode, psn: u32, ack_req: bool) -> BthRepr {
        qp.peer_bth(opcode, psn & crate::psn::PSN_MASK, ack_req, false)
    }

    fn next_data(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
    ) -> Option<TxMeta> {
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return None;
        }
        OooQp::feed(qp);
        let o = qp.ooo.as_deref_mut()?;
        let p = o.req.as_mut()?.poll_packet(ctx.now_ps)?;
        let w = qp.req.sq.front()?;
        let remote = w.wr.remote.unwrap_or_default();
        let len = p.len as usize;
        out.scratch.resize(len, 0);
        if len > 0 {
            if let Err(e) = gather(
                mem,
                ctx.mrs,
                qp.pd,
                w.sgl.as_slice(),
                p.offset,
                &mut out.scratch[..len],
            ) {
                qp.fail_wqe(ctx, 0, e.local_status());
                return None;
            }
        }
        let opcode = match (p.addr.is_some(), p.last) {
            (true, false) => Opcode::OooWriteFspot,
            (false, false) => Opcode::OooWriteSpot,
            (true, true) => Opcode::OooWriteLastFspot,
            (false, true) => Opcode::OooWriteLast,
        };
        let reth = p.addr.map(|va| RethRepr {
            va,
            rkey: remote.rkey,
            dma_len: w.len,
        });
        let bth = OooQp::bth(qp, opcode, p.psn, p.last);
        let roce = RoceRepr::new(bth, &out.scratch[..len]).with_reth(reth);
        let starts_wqe = p.offset == 0 && !p.retransmit;
        Some(qp.send_request(&mut out.frame, ctx.stats, roce, p.retransmit, starts_wqe))
    }

    /// An out-of-order frame for this QP: data at the responder, ACK/NAK at the requester.
    pub(crate) fn receive(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let op = pkt.bth.opcode;
        if qp.ooo.is_none() {
            return Err(RxDrop::UnsupportedOpcode(op));
        }
        if op == Opcode::OooReadRequest {
            return OooQp::read_request(qp, ctx, pkt);
        }
        if op == Opcode::OooReadResponse {
            return OooQp::read_response(qp, ctx, mem, pkt);
        }
        if op.is_request() {
            OooQp::receive_data(qp, ctx, mem, pkt)
        } else {
            OooQp::receive_ack(qp, ctx, pkt)
        }
    }

    /// The `(R_Key, address)` a Spot packet (an OOO WRITE without a RETH) of PSN `psn` would
    /// be written at, from the responder's learnt start address, or where an OOO READ
    /// response of PSN `psn` lands in the local buffer (`(L_Key, address)`, from the READ
    /// WQE's start PSN and SGL the requester caches). `None` when nothing would be written
    /// (start not learnt, PSN outside the WQE, no READ in flight).
    pub(crate) fn payload_target(qp: &Qp, opcode: Opcode, psn: u32) -> Option<(u32, u64)> {
        let o = qp.ooo.as_deref()?;
        match opcode {
            Opcode::OooReadResponse => {
                let sgl = qp.req.sq.front()?.sgl.as_slice();
                o.read.response_target(psn, qp.cfg.pmtu, sgl)
            }
            Opcode::OooWriteSpot | Opcode::OooWriteLast => {
                let addr = o.resp.as_ref()?.place_addr(psn)?;
                Some((o.rkey, addr))
            }
            _ => None,
        }
    }

    fn receive_data(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let pd = qp.pd;
        let o = qp.ooo.as_deref_mut().ok_or(RxDrop::BadQpState)?;
        let resp = o.resp.as_mut().ok_or(RxDrop::BadQpState)?;
        let op = pkt.bth.opcode;
        let last = op.is_last();
        let addr = pkt.reth.map(|r| r.va);
        let learnt_before = resp.start_learnt();
        let rkey = match pkt.reth {
            Some(r) if !learnt_before => r.rkey,
            _ => o.rkey,
        };
        let before = resp.stats;
        let mut target = MrTarget {
            mrs: ctx.mrs,
            pd,
            rkey,
            mem,
        };
        resp.handle_write(
            pkt.bth.psn,
            addr,
            pkt.reth.map(|r| u64::from(r.dma_len)),
            last,
            pkt.payload,
            &mut o.pool.borrow_mut(),
            &mut target,
        );
        if !learnt_before && resp.start_learnt() {
            o.rkey = rkey;
        }
        resp.arm_turn(ctx.now_ps);
        let after = resp.stats;
        ctx.stats.rx_requests += 1;
        if after.written_packets > before.written_packets {
            return Ok(());
        }
        if after.duplicates > before.duplicates {
            ctx.stats.duplicate_requests += 1;
            return Ok(());
        }
        Err(RxDrop::OooNotPlaced(pkt.bth.psn))
    }

    fn receive_ack(qp: &mut Qp, ctx: &mut Ctx<'_>, pkt: &RoceRepr<'_>) -> Result<(), RxDrop> {
        let now = ctx.now_ps;
        let o = qp.ooo.as_deref_mut().ok_or(RxDrop::BadQpState)?;
        let req = o.req.as_mut().ok_or(RxDrop::BadQpState)?;
        let ext = pkt.ooo_ack.unwrap_or_default();
        let msn = pkt.aeth.map_or(0, |a| a.msn);
        ctx.stats.rx_acks += 1;
        let seg = if pkt.bth.opcode == Opcode::OooNak {
            ctx.stats.naks_received.count(NakCode::PsnSequenceError);
            OooSegment::Nak {
                head: pkt.bth.psn,
                missing: ext.bitmap,
            }
        } else {
            OooSegment::Ack {
                psn: pkt.bth.psn,
                msn,
                start_learnt: ext.start_learnt,
            }
        };
        req.handle_segment(now, seg);
        while req.poll_completion().is_some() {
            o.posted = false;
            let Some(w) = qp.req.sq.pop_front() else {
                break;
            };
            qp.sq_done += 1;
            if w.wr.signaled {
                let c = w.completion(qp.qpn, WcStatus::Success);
                post_completion(ctx, qp.send_cq, c);
            }
        }
        Ok(())
    }
}
