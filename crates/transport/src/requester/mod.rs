//! The requester side of an RC QP: the send queue, segmentation into packets, and the
//! handling of ACKs, NAKs, READ responses and atomic ACKs (Linux rxe `rxe_req.c` +
//! `rxe_comp.c`, IBA chapter 9.7).
//!
//! # Send queue and PSNs
//! `sq` holds every posted WQE that has not completed, oldest first. A WQE gets its PSN range
//! when its first packet is first sent (`started`); ranges are consecutive, so the started
//! WQEs are ordered by start PSN and `Requester::locate` finds the WQE of any PSN by binary
//! search. Any packet can therefore be regenerated from `(wqe, psn)` by re-reading local
//! memory: go-back-N uses this to resend from a PSN, and a selective mode (ORNIC's) can use
//! it to resend single PSNs.
//!
//! Three PSNs track progress: `una` (oldest unacknowledged), `psn` (next to transmit, moved
//! back by a retry) and `fresh_psn` (one past the highest ever sent). A packet with
//! `psn < fresh_psn` is a retransmission.
//!
//! # AckReq policy
//! AckReq is set on the last (or only) packet of every message, on every
//! [`ACK_REQ_INTERVAL_PKTS`]th packet inside a long message (like rxe's
//! `RXE_MAX_PKT_PER_ACK`), and on every READ request and atomic. It depends only on the
//! packet's position in its message, so a regenerated packet is bit-identical to the
//! original.
//!
//! # Acknowledgement
//! ACKs are cumulative. An ACK, NAK or READ response / atomic ACK for PSN `q` acknowledges
//! every SEND/WRITE PSN before it (implicit ACK); a READ or atomic only completes through its
//! own responses, so an ACK that reaches past an incomplete READ/atomic means its responses
//! were lost: the requester retries from it at once (implicit NAK, IBA 9.7.5.1.3).
//! Retries (sequence NAK, implicit NAK, timeout) decrement retry_cnt; RNR NAKs wait the RNR
//! timer and decrement rnr_retry unless it is 7. Any forward progress reloads both counters.
//! An implicit NAK, or a sequence NAK for a hole already NAKed, that would restart the
//! retry already running from the same PSN is ignored, so one loss costs one go-back. A
//! sequence NAK for a later PSN than any NAKed since the running retry started is a new
//! hole, in the resends themselves, and goes back again once the retry has resent that PSN
//! (a NAK cannot move `una` past a READ/atomic still waiting for its response, so `una`
//! alone cannot tell the two apart).
//!
//! # READ responses
//! Only the response at `una` is taken, and it must carry the opcode the READ's response has
//! at that position: FIRST only at the READ's first PSN, MIDDLE/LAST after it (also when it
//! answers a READ retried from the middle), ONLY only for a one-packet READ, and a payload of
//! exactly the length that position holds. Anything else completes the READ with
//! `BadRespErr` and takes the QP to ERR, as rxe's completer does.

pub(crate) mod state;

use crate::cq::WcStatus;
use crate::memory::Memory;
use crate::op::{request_opcode, Pos};
use crate::psn::{psn_add, psn_diff, psn_in, psn_le, psn_lt};
use crate::qp::{post_completion, Ctx, Qp, QpState, TxOut};
use crate::responder::state::read_response_opcode;
use crate::sgl::{gather, scatter};
use crate::timer::{ack_timeout_ps, rnr_timer_ps, Deadline};
use crate::wr::{SendWr, Sge, WrOpcode};
use crate::{RxDrop, TxMeta};
use rnic_wire::{AtomicEthRepr, BthRepr, NakCode, Opcode, RethRepr, RoceRepr};

use state::{OptPsn, SendWqe};
pub use state::{ACK_REQ_INTERVAL_PKTS, MAX_OUTSTANDING_PSNS};

/// Outcome of acknowledging the PSNs before some limit.
struct AckOutcome {
    progress: bool,
    /// The acknowledgement reaches past an incomplete READ/atomic at the front.
    blocked: bool,
}

impl Qp {
    /// The BTH of a packet this QP sends its peer (in-order requests, unreliable sends and
    /// the out-of-order path alike): the peer's QPN and this QP's P_Key; no migration, no
    /// padding, no congestion marks (the network sets ECN in the IP header).
    pub(crate) fn peer_bth(
        &self,
        opcode: Opcode,
        psn: u32,
        ack_req: bool,
        solicited: bool,
    ) -> BthRepr {
        BthRepr {
            opcode,
            solicited,
            mig_req: false,
            pad_count: 0,
            tver: 0,
            pkey: self.cfg.pkey,
            fecn: false,
            becn: false,
            dest_qp: self.cfg.dest_qpn,
            ack_req,
            psn,
        }
    }

    /// Queues a validated WR (post_send in RTS/SQD).
    pub(crate) fn push_send(&mut self, wr: SendWr, len: u32) {
        let wqe = SendWqe::new(wr, len, self.cfg.pmtu);
        let sq = &mut self.req.sq;
        if sq.len() == sq.capacity() {
            // The queue holds the WRs the NIC fetched and the peer has not acknowledged,
            // usually far fewer than max_send_wr (one at perftest's -t 1): its room goes 1,
            // 2, 4, ... as needed, never past max_send_wr (a VecDeque's own first growth
            // takes 4, 480 bytes, where one WQE waits at a time).
            let cap = sq.capacity();
            let limit = (self.max_send_wr as usize).max(cap + 1);
            sq.reserve_exact(cap.max(1).min(limit - cap));
        }
        sq.push_back(wqe);
    }

    /// The requester may put a packet on the wire now.
    pub(crate) fn req_can_send(&self) -> bool {
        // An out-of-order QP's WRs go through `ooo/ooo_qp.rs`.
        if self.ooo.is_some() {
            return false;
        }
        if !matches!(self.state, QpState::Rts | QpState::Sqd) || self.req.rnr_deadline_ps.is_some()
        {
            return false;
        }
        let Some(w) = self.req.sq.get(self.req.cursor as usize) else {
            return false;
        };
        if !w.started {
            // SQD: messages already started finish, new ones wait.
            if self.state != QpState::Rts {
                return false;
            }
            if w.wr.opcode.is_read_or_atomic()
                && self.req.rd_atomic_inflight >= self.cfg.max_rd_atomic
            {
                return false;
            }
        }
        if self.req.psn == self.req.fresh_psn {
            // New PSNs: keep the outstanding window below half the PSN space.
            let need = if w.wr.opcode.is_read_or_atomic() {
                w.npkts
            } else {
                1
            };
            let in_flight = psn_diff(self.req.fresh_psn, self.req.una).max(0) as u32;
            if in_flight.saturating_add(need) > self.cfg.max_outstanding_psns {
                return false;
            }
        }
        true
    }

    /// The request packet [`Qp::next_request`] would build now (the caller checked
    /// `req_can_send`): its payload length and whether it is a retransmission.
    pub(crate) fn peek_request(&self) -> Option<crate::TxPeek> {
        let w = self.req.sq.get(self.req.cursor as usize)?;
        let psn = self.req.psn;
        let i = if w.started {
            psn_diff(psn, w.start_psn).max(0) as u32
        } else {
            0
        };
        let payload_len = if w.wr.opcode.is_read_or_atomic() {
            0
        } else {
            let offset = u64::from(i) * u64::from(self.cfg.pmtu);
            u64::from(w.len)
                .saturating_sub(offset)
                .min(u64::from(self.cfg.pmtu)) as u32
        };
        Some(crate::TxPeek {
            is_response: false,
            payload_len,
            is_retransmit: psn_lt(psn, self.req.fresh_psn),
        })
    }

    /// The packet at the transmit cursor: marks its WQE started (its first PSN, and a
    /// READ/atomic counted in flight) and returns (WQE index, PSN, packet index in the WQE,
    /// position). `None` if the cursor names no WQE, or a PSN outside it (cannot happen; the
    /// WQE fails with a local QP error then).
    pub(crate) fn start_cursor_packet(
        &mut self,
        ctx: &mut Ctx<'_>,
    ) -> Option<(usize, u32, u32, Pos)> {
        let idx = self.req.cursor as usize;
        let psn = self.req.psn;
        let w = self.req.sq.get_mut(idx)?;
        if !w.started {
            w.started = true;
            w.start_psn = psn;
            self.req.n_started += 1;
            if w.wr.opcode.is_read_or_atomic() {
                self.req.rd_atomic_inflight += 1;
            }
        }
        let (start_psn, npkts) = (w.start_psn, w.npkts);
        let i = psn_diff(psn, start_psn);
        if i < 0 || i as u32 >= npkts {
            // Cannot happen: the cursor always names the WQE holding `psn`.
            self.fail_wqe(ctx, idx, WcStatus::LocQpOpErr);
            return None;
        }
        let i = i as u32;
        Some((idx, psn, i, Pos::of(i, npkts)))
    }

    /// Gathers `len` payload bytes of the WQE at `idx`, from byte `offset` of its message,
    /// into `out.scratch`; false (the WQE failed with the local error) if its SGL cannot be
    /// read.
    pub(crate) fn gather_payload(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
        idx: usize,
        offset: u64,
        len: usize,
    ) -> bool {
        if len == 0 {
            return true;
        }
        let Some(w) = self.req.sq.get(idx) else {
            return false;
        };
        out.scratch.resize(len, 0);
        match gather(
            mem,
            ctx.mrs,
            self.pd,
            w.sgl.as_slice(),
            offset,
            &mut out.scratch[..len],
        ) {
            Ok(()) => true,
            Err(e) => {
                self.fail_wqe(ctx, idx, e.local_status());
                false
            }
        }
    }

    /// Builds the next request packet into `out.buf`, if the requester may send one.
    pub(crate) fn next_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
    ) -> Option<TxMeta> {
        if self.service != crate::ServiceType::Rc {
            return crate::unreliable_tx::next_request(self, ctx, out, mem);
        }
        if !self.req_can_send() {
            return None;
        }
        let (idx, psn, i, pos) = self.start_cursor_packet(ctx)?;
        let pmtu = self.cfg.pmtu;
        let w = self.req.sq.get(idx)?;
        let opcode = request_opcode(w.wr.opcode, pos);
        let offset = u64::from(i) * u64::from(pmtu);
        let remote = w.wr.remote.unwrap_or_default();
        let mut reth = None;
        let mut atomic_eth = None;
        let mut payload_len = 0usize;
        let next_psn;
        match w.wr.opcode {
            WrOpcode::Read => {
                // A READ resent from the middle asks for the remaining part only, with a
                // fresh RETH at this PSN.
                reth = Some(RethRepr {
                    va: remote.va.wrapping_add(offset),
                    rkey: remote.rkey,
                    dma_len: w.len - offset as u32,
                });
                next_psn = w.end_psn();
            }
            WrOpcode::CompareSwap | WrOpcode::FetchAdd => {
                let args = w.wr.atomic.unwrap_or_default();
                let (swap_add, compare) = if w.wr.opcode == WrOpcode::CompareSwap {
                    (args.swap, args.compare_add)
                } else {
                    (args.compare_add, 0)
                };
                atomic_eth = Some(AtomicEthRepr {
                    va: remote.va,
                    rkey: remote.rkey,
                    swap_add,
                    compare,
                });
                next_psn = psn_add(psn, 1);
            }
            _ => {
                payload_len = (u64::from(w.len) - offset).min(u64::from(pmtu)) as usize;
                if pos.starts() && matches!(w.wr.opcode, WrOpcode::Write | WrOpcode::WriteImm) {
                    reth = Some(RethRepr {
                        va: remote.va,
                        rkey: remote.rkey,
                        dma_len: w.len,
                    });
                }
                next_psn = psn_add(psn, 1);
            }
        }
        if !self.gather_payload(ctx, out, mem, idx, offset, payload_len) {
            return None;
        }
        let w = self.req.sq.get(idx)?;
        // The packet that fills the PSN window asks for an ACK too: without one, a window
        // smaller than `ack_req_every` would only move on by retransmission timeouts.
        let fills_window =
            psn_diff(psn_add(psn, 1), self.req.una).max(0) as u32 >= self.cfg.max_outstanding_psns;
        let ack_req = pos.ends()
            || w.wr.opcode.is_read_or_atomic()
            || (i + 1).is_multiple_of(self.cfg.ack_req_every)
            || fills_window;
        let solicited = w.wr.solicited
            && pos.ends()
            && matches!(
                w.wr.opcode,
                WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv | WrOpcode::WriteImm
            );
        let bth = self.peer_bth(opcode, psn, ack_req, solicited);
        let roce = RoceRepr::new(bth, &out.scratch[..payload_len])
            .with_reth(reth)
            .with_atomic_eth(atomic_eth)
            .with_imm(opcode.has_immdt().then(|| w.wr.imm.unwrap_or(0)))
            .with_ieth(opcode.has_ieth().then(|| w.wr.invalidate_rkey.unwrap_or(0)));
        let is_retransmit = psn_lt(psn, self.req.fresh_psn);
        let meta = self.send_request(&mut out.frame, ctx.stats, roce, is_retransmit, false);
        let end = w.end_psn();

        // Advance.
        self.req.psn = next_psn;
        if next_psn == end {
            self.req.cursor += 1;
        }
        if psn_lt(self.req.fresh_psn, next_psn) {
            self.req.fresh_psn = next_psn;
        }
        if self.req.ack_deadline_ps.is_none() {
            self.req.ack_deadline_ps = ack_timeout_ps(self.cfg.timeout)
                .map(|t| ctx.now_ps.saturating_add(t))
                .into();
        }
        Some(meta)
    }

    /// An ACK, atomic ACK or READ response for this QP's requester.
    pub(crate) fn handle_response(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let q = pkt.bth.psn;
        if psn_lt(q, self.req.una) {
            ctx.stats.duplicate_responses += 1;
            return Err(RxDrop::StaleResponse(q));
        }
        if !psn_lt(q, self.req.fresh_psn) {
            return Err(RxDrop::UnexpectedResponse(q));
        }
        match pkt.bth.opcode {
            Opcode::RcAck => {
                let aeth = pkt.aeth.ok_or(RxDrop::UnexpectedResponse(q))?;
                match aeth.syndrome {
                    rnic_wire::AethSyndrome::Ack { .. } => self.on_ack(ctx, q),
                    rnic_wire::AethSyndrome::RnrNak { timer } => self.on_rnr_nak(ctx, q, timer),
                    rnic_wire::AethSyndrome::Nak(code) => self.on_nak(ctx, q, code),
                }
            }
            Opcode::RcAtomicAck => {
                let orig = pkt.atomic_ack.ok_or(RxDrop::UnexpectedResponse(q))?.orig;
                self.on_atomic_ack(ctx, mem, q, orig)
            }
            op @ (Opcode::RcReadResponseFirst
            | Opcode::RcReadResponseMiddle
            | Opcode::RcReadResponseLast
            | Opcode::RcReadResponseOnly) => self.on_read_response(ctx, mem, q, op, pkt.payload),
            _ => Err(RxDrop::UnexpectedResponse(q)),
        }
    }

    /// Acknowledges every SEND/WRITE PSN before `limit`, completing the WQEs it covers.
    fn ack_before(&mut self, ctx: &mut Ctx<'_>, limit: u32) -> AckOutcome {
        let mut out = AckOutcome {
            progress: false,
            blocked: false,
        };
        while psn_lt(self.req.una, limit) {
            let Some(w) = self.req.sq.front() else { break };
            if !w.started {
                break;
            }
            if w.wr.opcode.is_read_or_atomic() {
                out.blocked = true;
                break;
            }
            let end = w.end_psn();
            out.progress = true;
            if psn_le(end, limit) {
                self.req.una = end;
                self.complete_front(ctx, WcStatus::Success);
            } else {
                self.req.una = limit;
                break;
            }
        }
        if out.progress {
            self.on_progress(ctx);
        }
        out
    }

    /// Forward progress: reload the retry counters, restart the ACK timer, and move the
    /// transmit position past what the peer already has.
    fn on_progress(&mut self, ctx: &mut Ctx<'_>) {
        self.req.retry_left = self.cfg.retry_cnt;
        self.req.rnr_left = self.cfg.rnr_retry;
        self.req.retry_from = OptPsn::NONE;
        self.req.retry_nak = OptPsn::NONE;
        if psn_lt(self.req.psn, self.req.una) {
            self.req.psn = self.req.una;
            self.req.cursor = self.req.locate(self.req.una);
        }
        self.req.ack_deadline_ps = if self.req.outstanding() {
            ack_timeout_ps(self.cfg.timeout)
                .map(|t| ctx.now_ps.saturating_add(t))
                .into()
        } else {
            Deadline::NONE
        };
    }

    /// Completes (and pops) the front WQE; an error or a CQ overrun takes the QP to ERR.
    pub(crate) fn complete_front(&mut self, ctx: &mut Ctx<'_>, status: WcStatus) {
        let Some(w) = self.req.sq.pop_front() else {
            return;
        };
        self.sq_done += 1;
        if w.started {
            self.req.n_started = self.req.n_started.saturating_sub(1);
            if w.wr.opcode.is_read_or_atomic() {
                self.req.rd_atomic_inflight = self.req.rd_atomic_inflight.saturating_sub(1);
            }
        }
        self.req.cursor = self.req.cursor.saturating_sub(1);
        let ok = if status != WcStatus::Success || w.wr.signaled {
            post_completion(ctx, self.send_cq, w.completion(self.qpn, status))
        } else {
            true
        };
        if !ok || status != WcStatus::Success {
            self.enter_error(ctx);
        }
    }

    /// The WQE at `idx` failed with `status`: earlier ones are flushed, it completes with
    /// `status`, the rest are flushed and the QP goes to ERR.
    pub(crate) fn fail_wqe(&mut self, ctx: &mut Ctx<'_>, idx: usize, status: WcStatus) {
        let mut i = 0usize;
        while let Some(w) = self.req.sq.pop_front() {
            self.sq_done += 1;
            let st = if i == idx {
                status
            } else {
                WcStatus::WrFlushErr
            };
            post_completion(ctx, self.send_cq, w.completion(self.qpn, st));
            i += 1;
        }
        self.enter_error(ctx);
    }

    /// Moves the transmit position back to `psn` (go-back-N).
    fn rewind(&mut self, psn: u32) {
        self.req.psn = psn;
        self.req.cursor = self.req.locate(psn);
        self.req.ack_deadline_ps = Deadline::NONE;
    }

    /// A retry from the oldest unacknowledged PSN is running (no forward progress since it
    /// started).
    fn retry_running(&self) -> bool {
        self.req.retry_from.get() == Some(self.req.una)
    }

    /// Go-back-N from the oldest unacknowledged PSN, charged to retry_cnt. `dedup`: ignore the
    /// request if a retry is already running (more out-of-order responses after the first
    /// implicit NAK; a sequence NAK decides in [`Qp::on_sequence_nak`] first). True if a
    /// retry started.
    fn go_back(&mut self, ctx: &mut Ctx<'_>, dedup: bool) -> bool {
        let from = self.req.una;
        if !self.req.outstanding() || (dedup && self.retry_running()) {
            return false;
        }
        if self.req.retry_left == 0 {
            self.fail_wqe(ctx, 0, WcStatus::RetryExcErr);
            return false;
        }
        self.req.retry_left -= 1;
        self.req.retry_from = OptPsn::some(from);
        self.req.retry_nak = OptPsn::NONE;
        ctx.stats.go_back_n += 1;
        self.rewind(from);
        true
    }

    /// A PSN-sequence-error NAK asking for `q` (after acknowledging what it could): go back
    /// from `una`, unless the retry already running covers it.
    ///
    /// A NAK for SEND/WRITE PSNs moves `una` to `q`, so a retry running from `una` was
    /// started for this very hole. But a NAK cannot acknowledge past a READ/atomic still
    /// waiting for its response: `una` stays there through any number of holes, and
    /// `retry_from == una` alone would ignore a NAK for a hole in the resends themselves,
    /// leaving them to the ACK timer (67 ms at timeout 14). So while a retry runs, the
    /// highest PSN NAKed since it started is kept (`retry_nak`), and a NAK starts a new
    /// retry only if both
    /// - it asks for a later PSN than that: the responder NAKs a hole once and its expected
    ///   PSN only moves on once the hole is filled, so a later PSN is a new loss, and a NAK
    ///   for the same PSN (duplicated) or an earlier one (delayed) is a hole being repaired;
    /// - the retry has already resent `q`: otherwise that resend is still to come and going
    ///   back would only send `una..psn` once more.
    ///
    /// A retry started by a timeout or an implicit NAK has no NAK yet: the first one may
    /// have left the responder before the resends reached it (a hole of the first pass,
    /// which the retry covers), so it is only noted, as before; a later one goes back.
    /// Each new retry costs one retry_cnt, and without progress the QP fails with
    /// RetryExcErr when they run out.
    fn on_sequence_nak(&mut self, ctx: &mut Ctx<'_>, q: u32) {
        if self.retry_running() {
            let seen = self.req.retry_nak.get();
            let later = seen.is_none_or(|n| psn_lt(n, q));
            if later {
                self.req.retry_nak = OptPsn::some(q);
            }
            if seen.is_none() || !later || !psn_lt(q, self.req.psn) {
                return;
            }
        }
        if self.go_back(ctx, false) {
            self.req.retry_nak = OptPsn::some(q);
        }
    }

    fn on_ack(&mut self, ctx: &mut Ctx<'_>, q: u32) -> Result<(), RxDrop> {
        let o = self.ack_before(ctx, psn_add(q, 1));
        if o.blocked {
            // An ACK beyond an incomplete READ/atomic: its responses were lost.
            self.go_back(ctx, true);
        }
        Ok(())
    }

    fn on_nak(&mut self, ctx: &mut Ctx<'_>, q: u32, code: NakCode) -> Result<(), RxDrop> {
        ctx.stats.naks_received.count(code);
        let o = self.ack_before(ctx, q);
        if self.state == QpState::Err {
            return Ok(());
        }
        match code {
            NakCode::PsnSequenceError => {
                if self.req.rnr_deadline_ps.is_some() && !o.progress {
                    // Already going back to this PSN after the RNR wait.
                    return Ok(());
                }
                self.on_sequence_nak(ctx, q);
            }
            _ => {
                let status = match code {
                    NakCode::RemoteAccessError => WcStatus::RemAccessErr,
                    NakCode::RemoteOperationalError => WcStatus::RemOpErr,
                    _ => WcStatus::RemInvReqErr,
                };
                let idx = (self.req.locate(q) as usize).min(self.req.sq.len().saturating_sub(1));
                self.fail_wqe(ctx, idx, status);
            }
        }
        Ok(())
    }

    fn on_rnr_nak(&mut self, ctx: &mut Ctx<'_>, q: u32, timer: u8) -> Result<(), RxDrop> {
        ctx.stats.naks_received.rnr += 1;
        let o = self.ack_before(ctx, q);
        if self.state == QpState::Err {
            return Ok(());
        }
        if self.req.rnr_deadline_ps.is_some() && !o.progress {
            return Ok(());
        }
        if self.req.rnr_left == 0 {
            self.fail_wqe(ctx, 0, WcStatus::RnrRetryExcErr);
            return Ok(());
        }
        if self.cfg.rnr_retry != 7 {
            self.req.rnr_left -= 1;
        }
        let from = self.req.una;
        self.rewind(from);
        self.req.rnr_deadline_ps = Deadline::at(ctx.now_ps.saturating_add(rnr_timer_ps(timer)));
        Ok(())
    }

    /// The ACK timer expired (called by the device when the deadline passed).
    pub(crate) fn on_ack_timeout(&mut self, ctx: &mut Ctx<'_>) {
        self.req.ack_deadline_ps = Deadline::NONE;
        if !self.req.outstanding() || self.req.rnr_deadline_ps.is_some() {
            return;
        }
        ctx.stats.ack_timeouts += 1;
        self.go_back(ctx, false);
    }

    /// The RNR wait ended: resend from the NAKed PSN.
    pub(crate) fn on_rnr_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.req.rnr_deadline_ps = Deadline::NONE;
        ctx.stats.rnr_waits += 1;
    }

    /// Checks that the READ/atomic answered at `q` is the front WQE and `q` its next
    /// expected response. `Ok(false)`: responses before `q` were lost (retry started, packet
    /// dropped).
    fn response_target(
        &mut self,
        ctx: &mut Ctx<'_>,
        q: u32,
        want_read: bool,
    ) -> Result<bool, RxDrop> {
        let o = self.ack_before(ctx, q);
        if self.state == QpState::Err {
            return Err(RxDrop::BadQpState);
        }
        let Some(w) = self.req.sq.front() else {
            return Err(RxDrop::UnexpectedResponse(q));
        };
        let kind_ok = if want_read {
            w.wr.opcode == WrOpcode::Read
        } else {
            w.wr.opcode.is_atomic()
        };
        if !w.started || !w.wr.opcode.is_read_or_atomic() {
            // A response to a SEND/WRITE PSN: the responder is confused or hostile.
            self.fail_wqe(ctx, 0, WcStatus::BadRespErr);
            return Err(RxDrop::UnexpectedResponse(q));
        }
        if q != self.req.una {
            // Earlier responses of the front READ/atomic are missing.
            if o.blocked {
                self.go_back(ctx, true);
            }
            return Ok(false);
        }
        if !kind_ok {
            self.fail_wqe(ctx, 0, WcStatus::BadRespErr);
            return Err(RxDrop::UnexpectedResponse(q));
        }
        Ok(true)
    }

    /// The local buffer a RoCEv2 READ's responses or an atomic's ATOMIC ACKNOWLEDGE fill,
    /// asked at the response of PSN `psn` before it is handled: the WQE's scatter list and
    /// its length in bytes (the bytes the responses place, from the list's start; an
    /// atomic's 8) when `psn` is the first PSN of a started READ or atomic WQE, so that
    /// the NIC translates every element it fills once, on the first response, as a
    /// responder does a WRITE's on its RETH. `None` for any other PSN (a READ's later
    /// responses ride on that translation) and when no started READ or atomic begins there.
    pub(crate) fn read_response_target(&self, psn: u32) -> Option<(&[Sge], u64)> {
        let i = self.req.locate(psn);
        if i >= self.req.n_started {
            return None;
        }
        let w = self.req.sq.get(i as usize)?;
        if !w.wr.opcode.is_read_or_atomic() || w.start_psn != psn {
            return None;
        }
        Some((w.sgl.as_slice(), u64::from(w.len)))
    }

    fn on_read_response(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        q: u32,
        op: Opcode,
        payload: &[u8],
    ) -> Result<(), RxDrop> {
        if !self.response_target(ctx, q, true)? {
            return Err(RxDrop::OutOfSequence {
                psn: q,
                expected: self.req.una,
            });
        }
        let pmtu = self.cfg.pmtu;
        let Some(w) = self.req.sq.front() else {
            return Err(RxDrop::UnexpectedResponse(q));
        };
        debug_assert!(psn_in(q, w.start_psn, w.end_psn()));
        let i = psn_diff(q, w.start_psn).max(0) as u32;
        let last = i + 1 == w.npkts;
        let offset = u64::from(i) * u64::from(pmtu);
        let expect = if last {
            u64::from(w.len).saturating_sub(offset)
        } else {
            u64::from(pmtu)
        };
        // Strict, as rxe's completer: each PSN must carry the opcode the READ's response has
        // at that position (FIRST only at the first PSN, ONLY only for a one-packet READ),
        // also when it answers a READ retried from the middle.
        if op != read_response_opcode(i, w.npkts) || payload.len() as u64 != expect {
            self.fail_wqe(ctx, 0, WcStatus::BadRespErr);
            return Err(RxDrop::UnexpectedResponse(q));
        }
        if let Err(e) = scatter(mem, ctx.mrs, self.pd, w.sgl.as_slice(), offset, payload) {
            self.fail_wqe(ctx, 0, e.local_status());
            return Ok(());
        }
        self.req.una = psn_add(q, 1);
        if last {
            self.complete_front(ctx, WcStatus::Success);
        }
        if self.state != QpState::Err {
            self.on_progress(ctx);
        }
        Ok(())
    }

    fn on_atomic_ack(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        q: u32,
        orig: u64,
    ) -> Result<(), RxDrop> {
        if !self.response_target(ctx, q, false)? {
            return Err(RxDrop::OutOfSequence {
                psn: q,
                expected: self.req.una,
            });
        }
        let Some(w) = self.req.sq.front() else {
            return Err(RxDrop::UnexpectedResponse(q));
        };
        if let Err(e) = scatter(
            mem,
            ctx.mrs,
            self.pd,
            w.sgl.as_slice(),
            0,
            &orig.to_le_bytes(),
        ) {
            self.fail_wqe(ctx, 0, e.local_status());
            return Ok(());
        }
        self.req.una = psn_add(q, 1);
        self.complete_front(ctx, WcStatus::Success);
        if self.state != QpState::Err {
            self.on_progress(ctx);
        }
        Ok(())
    }
}
