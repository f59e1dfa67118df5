//! The out-of-order READ of an ORNIC / MP-RDMA QP (see `ooo_qp.rs` for the WRITE).
//!
//! The requester caches the READ WQE's start PSN and local SGL and sends one OOO READ
//! request for the whole range (RETH: VA, R_Key, length; BTH PSN: the first response's PSN).
//! The responder answers with OOO READ responses at PSN `start + i`, in any order the network
//! gives them; the requester places each payload at `(PSN − start PSN) × PMTU` in its SGL and
//! records it in a receive bitmap (the same designs as the WRITE's responder: ORNIC's array,
//! MP-RDMA's static window). Loss is repaired by asking again: a response OTD beyond the head
//! (the first missing PSN) sends one request per missing run of the head's bitmap block, and
//! a timeout without progress asks again for everything from the head on. The timeout is the
//! WRITE requester's: RTT + OTD / B, stretched to the round trip the QP's READs measure and
//! backed off at each timeout ([`crate::ooo::RtoEstimator`]); `retry_cnt` timeouts in a row
//! without a response, and one more, fail the READ with RETRY_EXC_ERR. The WQE completes
//! when every PSN is in (after the last payload is placed, as the paper's READ CQE waits for
//! its last payload).
//!
//! The responder keeps a short queue of ranges to serve; every response is read from host
//! memory through the R_Key's region check (REMOTE_READ), at request time and again at send
//! time.

use std::collections::VecDeque;

use crate::cq::WcStatus;
use crate::error::RxDrop;
use crate::memory::Memory;
use crate::mr::Access;
use crate::ooo::qp_state::OooQp;
use crate::ooo::read_state::{ReadWqe, ServeRange};
use crate::ooo::{Recorded, Retries};
use crate::psn::PSN_MASK;
use crate::qp::{post_completion, Ctx, Qp, QpState, TxOut};
use crate::sgl::scatter;
use crate::TxMeta;
use rnic_wire::{Opcode, RethRepr, RoceRepr};

/// Ranges a responder queues at most; requests beyond are dropped (asked again on timeout).
const MAX_SERVE_RANGES: usize = 64;

impl OooQp {
    /// Starts the send queue's head WR if it is a READ and nothing is in flight; returns
    /// whether it is a READ (in flight or just started).
    pub(crate) fn read_feed(qp: &mut Qp) -> bool {
        let pmtu = u64::from(qp.cfg.pmtu.max(1));
        let Some(w) = qp.req.sq.front() else {
            return false;
        };
        if w.wr.opcode != crate::wr::WrOpcode::Read {
            return false;
        }
        let len = u64::from(w.len);
        let Some(o) = qp.ooo.as_deref_mut() else {
            return false;
        };
        if o.read.wqe.is_some() {
            return true;
        }
        if !o.req.as_ref().is_some_and(|r| r.idle()) {
            return false;
        }
        let packets = len.div_ceil(pmtu).max(1) as u32;
        let start_psn = o.read.next_psn;
        o.read.next_psn = start_psn.wrapping_add(packets) & PSN_MASK;
        let (design, p) = (o.design, o.params);
        let retries = Retries::limited(qp.cfg.retry_cnt);
        o.read.wqe = Some(ReadWqe {
            start_psn,
            packets,
            len,
            bitmap: design.build(p.block_bits, p.nodes, p.otd, 2),
            newest: 0,
            nak_for_head: None,
            ask: VecDeque::from([(0, packets)]),
            deadline_ps: None,
            retries,
            asked: false,
        });
        true
    }

    /// Whether a READ request or response waits to be sent.
    pub(crate) fn read_wants(qp: &Qp) -> (bool, bool) {
        let Some(o) = qp.ooo.as_deref() else {
            return (false, false);
        };
        let responses = !o.read.serve.is_empty();
        let requests = o.read.wqe.as_ref().is_some_and(|w| !w.ask.is_empty())
            || (o.read.wqe.is_none()
                && o.req.as_ref().is_some_and(|r| r.idle())
                && qp
                    .req
                    .sq
                    .front()
                    .is_some_and(|w| w.wr.opcode == crate::wr::WrOpcode::Read));
        (responses, requests)
    }

    /// The payload bytes of the next READ response.
    pub(crate) fn read_peek_response(qp: &Qp) -> Option<u32> {
        let r = qp.ooo.as_deref()?.read.serve.front()?;
        Some(r.left.min(u64::from(qp.cfg.pmtu)) as u32)
    }

    /// Builds the next READ response, if one is queued.
    pub(crate) fn read_next_response(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
    ) -> Option<TxMeta> {
        let pmtu = u64::from(qp.cfg.pmtu.max(1));
        let pd = qp.pd;
        let o = qp.ooo.as_deref_mut()?;
        let r = o.read.serve.front_mut()?;
        let n = r.left.min(pmtu) as usize;
        let (psn, va, rkey) = (r.psn, r.va, r.rkey);
        r.psn = (r.psn + 1) & PSN_MASK;
        r.va = r.va.wrapping_add(n as u64);
        r.left -= n as u64;
        if r.left == 0 {
            o.read.serve.pop_front();
        }
        if ctx
            .mrs
            .check(rkey, pd, va, n as u64, Access::REMOTE_READ)
            .is_err()
        {
            // The region went away since the request: nothing is read.
            o.read.serve.clear();
            return None;
        }
        out.scratch.resize(n, 0);
        mem.read(va, &mut out.scratch[..n]);
        let bth = OooQp::bth(qp, Opcode::OooReadResponse, psn, false);
        let roce = RoceRepr::new(bth, &out.scratch[..n]);
        let frame_len = out.frame.emit(&qp.cfg, roce, ctx.stats);
        let s = &mut *ctx.stats;
        s.tx_read_responses += 1;
        Some(TxMeta {
            qpn: qp.qpn,
            opcode: Opcode::OooReadResponse,
            psn,
            payload_len: n as u32,
            frame_len,
            is_retransmit: false,
            starts_ooo_wqe: false,
        })
    }

    /// Builds the next READ request (the whole WQE, or a range asked for again).
    pub(crate) fn read_next_request(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
    ) -> Option<TxMeta> {
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) || !OooQp::read_feed(qp) {
            return None;
        }
        let pmtu = u64::from(qp.cfg.pmtu.max(1));
        let params = qp.ooo.as_deref()?.params;
        let remote = qp.req.sq.front()?.wr.remote.unwrap_or_default();
        let read = &mut qp.ooo.as_deref_mut()?.read;
        let w = read.wqe.as_mut()?;
        let (off, n) = w.ask.pop_front()?;
        // Only the READ's first request starts it; a range asked again after a timeout is a
        // retransmission even when nothing came back and it is the whole range again.
        let first_ask = !w.asked;
        let from = u64::from(off) * pmtu;
        let bytes = (u64::from(n) * pmtu).min(w.len - from.min(w.len));
        let psn = w.start_psn.wrapping_add(off) & PSN_MASK;
        let passes = 2 * u64::from(n) * params.packet_ps;
        // The READ's first ask is timed to its first response (Karn's rule: asking again
        // makes the answer ambiguous).
        if first_ask {
            read.rto.sent_new(0, ctx.now_ps);
        } else {
            read.rto.discard();
        }
        w.asked = true;
        w.deadline_ps = Some(ctx.now_ps + read.rto.timeout_ps() + passes);
        let reth = RethRepr {
            va: remote.va.wrapping_add(from),
            rkey: remote.rkey,
            dma_len: bytes as u32,
        };
        let bth = OooQp::bth(qp, Opcode::OooReadRequest, psn, true);
        let roce = RoceRepr::new(bth, &[]).with_reth(reth);
        Some(qp.send_request(&mut out.frame, ctx.stats, roce, !first_ask, first_ask))
    }

    /// An OOO READ request at the responder: queue its range after the region check.
    pub(crate) fn read_request(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let pd = qp.pd;
        let r = pkt.reth.ok_or(RxDrop::OooNotPlaced(pkt.bth.psn))?;
        let o = qp.ooo.as_deref_mut().ok_or(RxDrop::BadQpState)?;
        ctx.stats.rx_requests += 1;
        let len = u64::from(r.dma_len);
        if len > 0
            && ctx
                .mrs
                .check(r.rkey, pd, r.va, len, Access::REMOTE_READ)
                .is_err()
        {
            return Err(RxDrop::OooNotPlaced(pkt.bth.psn));
        }
        // A range asked again (the requester's timer fired while this responder was still
        // busy with other QPs' responses) that is queued and not begun is served once: the
        // queued range sends the same bytes, and a second copy would only hold the other
        // QPs' responses back by its whole length and time them out in turn. The request
        // is dropped as a busy responder's, so the NIC reads no second copy either.
        let queued = |s: &ServeRange| s.psn == pkt.bth.psn && s.va == r.va && s.left == len.max(1);
        if o.read.serve.len() >= MAX_SERVE_RANGES || o.read.serve.iter().any(queued) {
            return Err(RxDrop::ResponderBusy);
        }
        o.read.serve.push_back(ServeRange {
            psn: pkt.bth.psn,
            va: r.va,
            left: len.max(1),
            rkey: r.rkey,
        });
        Ok(())
    }

    /// An OOO READ response at the requester: place it by PSN, record it, ask again for what
    /// OTD says is lost, complete the WQE when whole.
    pub(crate) fn read_response(
        qp: &mut Qp,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let pmtu = u64::from(qp.cfg.pmtu.max(1));
        let pd = qp.pd;
        let psn = pkt.bth.psn;
        let not_placed = RxDrop::OooNotPlaced(psn);
        // Counted as received whatever becomes of it, as the go-back-N path counts each
        // type before handling it (`rx_packets` is the sum of the typed counts).
        ctx.stats.rx_read_responses += 1;
        let o = qp.ooo.as_deref_mut().ok_or(RxDrop::BadQpState)?;
        let (block_bits, otd) = (o.params.block_bits, o.params.otd);
        let shared = o.pool.clone();
        let mut pool = shared.borrow_mut();
        let w = o.read.wqe.as_mut().ok_or(RxDrop::StaleResponse(psn))?;
        let sq_front = qp.req.sq.front().ok_or(RxDrop::StaleResponse(psn))?;
        let off = psn.wrapping_sub(w.start_psn) & PSN_MASK;
        if off >= w.packets {
            return Err(RxDrop::StaleResponse(psn));
        }
        let at = u64::from(off) * pmtu;
        let want = (w.len - at.min(w.len)).min(pmtu) as usize;
        if pkt.payload.len() != want && !(w.len == 0 && pkt.payload.is_empty()) {
            return Err(not_placed);
        }
        if w.bitmap.contains(off, &pool) {
            ctx.stats.duplicate_responses += 1;
            return Ok(());
        }
        // Check the local range before recording, so a refused payload leaves no trace.
        if want > 0 {
            let probe_ok = crate::sgl::gather_check(ctx.mrs, pd, sq_front.sgl.as_slice(), at, want);
            if !probe_ok {
                return Err(not_placed);
            }
        }
        match w.bitmap.record(off, &mut pool) {
            Recorded::New { .. } => {}
            Recorded::Duplicate { .. } => {
                ctx.stats.duplicate_responses += 1;
                return Ok(());
            }
            Recorded::OutOfWindow | Recorded::PoolExhausted => return Err(not_placed),
        }
        if want > 0 && scatter(mem, ctx.mrs, pd, sq_front.sgl.as_slice(), at, pkt.payload).is_err()
        {
            return Err(not_placed);
        }
        w.newest = w.newest.max(off);
        w.retries.reload();
        o.read.rto.acked(1, ctx.now_ps);
        w.deadline_ps = Some(ctx.now_ps + o.read.rto.timeout_ps());
        let head = w.bitmap.head();
        if head >= w.packets {
            drop(pool);
            OooQp::read_complete(qp, ctx);
            return Ok(());
        }
        if w.newest >= head + otd && w.nak_for_head != Some(head) {
            w.nak_for_head = Some(head);
            let missing = w.bitmap.missing_mask(block_bits, &pool);
            push_runs(&mut w.ask, head, missing, w.packets);
        }
        Ok(())
    }

    fn read_complete(qp: &mut Qp, ctx: &mut Ctx<'_>) {
        if let Some(o) = qp.ooo.as_deref_mut() {
            if let Some(mut w) = o.read.wqe.take() {
                w.bitmap.release(&mut o.pool.borrow_mut());
            }
        }
        if let Some(w) = qp.req.sq.pop_front() {
            qp.sq_done += 1;
            if w.wr.signaled {
                post_completion(ctx, qp.send_cq, w.completion(qp.qpn, WcStatus::Success));
            }
        }
    }

    /// The READ's timeout fired at `now_ps`: ask again for everything from the head on.
    pub(crate) fn read_on_timer(qp: &mut Qp, ctx: &mut Ctx<'_>) {
        let now = ctx.now_ps;
        let Some(o) = qp.ooo.as_deref_mut() else {
            return;
        };
        let Some(w) = o.read.wqe.as_mut() else {
            return;
        };
        if w.deadline_ps.is_none_or(|d| d > now) {
            return;
        }
        ctx.stats.ack_timeouts += 1;
        if !w.retries.spend() {
            // As a go-back-N READ: retry_cnt timeouts in a row without a response, and one
            // more, fail it (the responder is gone; resending for ever would never end).
            qp.fail_wqe(ctx, 0, WcStatus::RetryExcErr);
            return;
        }
        let head = w.bitmap.head();
        w.ask.clear();
        w.ask.push_back((head, w.packets - head));
        w.nak_for_head = None;
        o.read.rto.timed_out();
        w.deadline_ps = Some(now + o.read.rto.timeout_ps());
    }
}

/// Appends a request per run of set bits of `missing` (bit i = offset `head + i`), within
/// the WQE.
fn push_runs(ask: &mut VecDeque<(u32, u32)>, head: u32, missing: u64, packets: u32) {
    let mut i = 0u32;
    while i < 64 {
        if missing & (1u64 << i) == 0 {
            i += 1;
            continue;
        }
        let from = i;
        while i < 64 && missing & (1u64 << i) != 0 {
            i += 1;
        }
        let (off, end) = (head + from, (head + i).min(packets));
        if off < end {
            ask.push_back((off, end - off));
        }
    }
}
