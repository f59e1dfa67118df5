//! The responder side of an RC QP: expected PSN, MSN, the receive queue, placement of SEND
//! and WRITE payloads, READ and atomic execution, and the queue of responses (Linux rxe
//! `rxe_resp.c`, IBA chapter 9.7).
//!
//! # Sequence
//! Only the expected PSN (`epsn`) is executed. A PSN ahead of it gets one PSN-sequence-error
//! NAK carrying `epsn`; later ones are dropped silently until `epsn` arrives (`nak_sent`,
//! also set by an RNR NAK, which likewise tells the requester where to resume). A PSN behind
//! it is a duplicate: SEND/WRITE are re-ACKed (at the last SEND/WRITE/atomic PSN executed,
//! never at a READ's), READs are replayed from memory, atomics are answered from the replay
//! table without executing them again. A duplicate READ first abandons every response still
//! queued for its PSN and later ones, so its replay goes out next instead of behind
//! responses the requester, gone back to that PSN, would discard.
//!
//! # ACK coalescing
//! An ACK is generated for every in-order packet with AckReq set and for every duplicate.
//! ACKs are cumulative (PSN = last in-order PSN, MSN = messages completed), so a new ACK
//! replaces an ACK still waiting at the tail of the response queue instead of queueing
//! behind it. READ responses, atomic ACKs and NAKs are never merged, and stay in order with
//! the ACKs around them.
//!
//! # Errors
//! Class C errors (IBA 9.9.3; rxe `do_class_ac_error`) NAK the offending PSN, complete a RECV
//! in use with an error and take the QP to ERR: invalid request (opcode sequence, length,
//! operation not enabled, misaligned atomic, a WRITE longer or shorter than its RETH, refused
//! before its packet is placed), remote access
//! error (R_Key, PD, access right or bounds of a WRITE, READ or atomic), remote operational
//! error (a RECV buffer failing its MR check, a CQ overrun). READ data, atomic ACKs and ACKs
//! the responder already owes for earlier requests are sent first, then the NAK.

pub(crate) mod state;

use crate::cq::{WcOpcode, WcStatus};
use crate::memory::Memory;
use crate::mr::Access;
use crate::op::{classify_request, packets_for, Pos, ReqKind};
use crate::psn::{psn_add, psn_diff};
use crate::qp::{post_completion, recv_completion, recv_success, Ctx, Qp, QpState, TxOut};
use crate::sgl::{scatter, SglError};
use crate::{RxDrop, TxMeta};
use rnic_wire::{AethRepr, AethSyndrome, AtomicAckEthRepr, BthRepr, NakCode, Opcode, RoceRepr};

use state::{payload_fits, read_response_opcode, OpenMsg, ReadResp, ReplayEntry, RespItem};
pub use state::{placement_offset, MAX_MSG_BYTES};

/// Credit code sent in ACKs: end-to-end credits are not used.
const CREDITS_UNLIMITED: u8 = 0x1F;

/// What the responder does about an in-order packet it refuses.
struct Fatal {
    nak: NakCode,
    /// Status of the RECV in use, if a SEND (or WRITE with immediate) was consuming one.
    recv_status: Option<WcStatus>,
}

fn fatal(nak: NakCode, recv_status: Option<WcStatus>) -> Fatal {
    Fatal { nak, recv_status }
}

impl Qp {
    /// A request packet (SEND, WRITE, READ request, atomic) for this QP's responder.
    pub(crate) fn handle_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), RxDrop> {
        let op = pkt.bth.opcode;
        let Some((kind, pos)) = classify_request(op) else {
            return Err(RxDrop::UnsupportedOpcode(op));
        };
        let psn = pkt.bth.psn;
        let d = psn_diff(psn, self.resp.epsn);
        if d > 0 {
            if !self.resp.nak_sent {
                self.resp.nak_sent = true;
                let (epsn, msn) = (self.resp.epsn, self.resp.msn);
                self.queue_nak(epsn, msn, AethSyndrome::Nak(NakCode::PsnSequenceError));
            }
            return Err(RxDrop::OutOfSequence {
                psn,
                expected: self.resp.epsn,
            });
        }
        if d < 0 {
            ctx.stats.duplicate_requests += 1;
            return self.duplicate_request(pkt, kind);
        }
        self.resp.nak_sent = false;
        let result = match kind {
            ReqKind::Send | ReqKind::Write => self.data_packet(ctx, mem, pkt, kind, pos),
            ReqKind::Read => self.read_request(ctx, pkt),
            ReqKind::Atomic => self.atomic_request(ctx, mem, pkt),
        };
        if let Err(f) = result {
            self.responder_fatal(ctx, psn, f);
        }
        Ok(())
    }

    fn queue_nak(&mut self, psn: u32, msn: u32, syndrome: AethSyndrome) {
        self.resp
            .resp_q
            .push_back(RespItem::Nak { psn, msn, syndrome });
    }

    /// Class C error: NAK `psn`, complete the RECV in use with an error, QP to ERR.
    ///
    /// Responses already owed for earlier requests (READ data, atomic ACKs, ACKs) still go
    /// out, before the NAK, as rxe and ConnectX do: the requester completes those operations
    /// successfully and only the offending one fails. Dropping them would flush a READ the
    /// responder had accepted, or report an atomic as flushed although the target memory
    /// already changed.
    fn responder_fatal(&mut self, ctx: &mut Ctx<'_>, psn: u32, f: Fatal) {
        if let Some(status) = f.recv_status {
            if let Some(r) = self.resp.rq_pop() {
                let c = recv_completion(self.qpn, r.wr_id, status, WcOpcode::Recv, 0);
                post_completion(ctx, self.recv_cq, c);
            }
        }
        let msn = self.resp.msn;
        let owed = std::mem::take(&mut self.resp.resp_q);
        self.enter_error(ctx);
        self.resp.resp_q = owed;
        self.queue_nak(psn, msn, AethSyndrome::Nak(f.nak));
    }

    /// Status for a class C error of the message in progress: the RECV of an open SEND
    /// completes with `status`.
    fn open_send_status(&self, status: WcStatus) -> Option<WcStatus> {
        match self.resp.open() {
            Some(OpenMsg {
                kind: ReqKind::Send,
                ..
            }) => Some(status),
            _ => None,
        }
    }

    /// SEND and WRITE packets, in order: checked, opened (or continued), placed, and on the
    /// last packet completed; each step below is one of these.
    fn data_packet(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
        kind: ReqKind,
        pos: Pos,
    ) -> Result<(), Fatal> {
        let psn = pkt.bth.psn;
        let plen = pkt.payload.len() as u64;
        self.check_data_packet(kind, pos, plen)?;
        let mut msg = self.open_or_continue(ctx, pkt, kind)?;
        // A SEND, or the last packet of a WRITE with immediate, needs a RECV.
        let needs_recv = kind == ReqKind::Send || (pos.ends() && pkt.imm.is_some());
        if needs_recv && self.resp.rq().is_empty() {
            self.resp.nak_sent = true;
            let (msn, timer) = (self.resp.msn, self.cfg.min_rnr_timer);
            self.queue_nak(psn, msn, AethSyndrome::RnrNak { timer });
            return Ok(());
        }

        let offset = placement_offset(msg.start_psn, psn, self.cfg.pmtu);
        if offset + plen > MAX_MSG_BYTES {
            return Err(self.invalid_data_request());
        }
        match kind {
            ReqKind::Write => self.place_write(ctx, mem, pkt, pos, &msg, offset)?,
            _ => self.place_send(ctx, mem, pkt, offset)?,
        }
        msg.received = (offset + plen) as u32;
        self.resp.epsn = psn_add(psn, 1);
        self.resp.ack_psn = psn;

        if pos.ends() {
            self.complete_message(ctx, pkt, kind, &msg, needs_recv)?;
        } else {
            self.resp.set_open(Some(msg));
        }
        if pkt.bth.ack_req {
            let msn = self.resp.msn;
            self.resp.push_ack(psn, msn);
        }
        Ok(())
    }

    /// The class C error of a malformed SEND or WRITE packet: invalid request, and the RECV
    /// of an open SEND completes with a remote invalid-request error.
    fn invalid_data_request(&self) -> Fatal {
        fatal(
            NakCode::InvalidRequest,
            self.open_send_status(WcStatus::RemInvReqErr),
        )
    }

    /// Refuses a SEND or WRITE packet out of opcode sequence, of a length its position does
    /// not allow, or a WRITE the QP does not enable, before anything about it is kept.
    fn check_data_packet(&self, kind: ReqKind, pos: Pos, plen: u64) -> Result<(), Fatal> {
        // Opcode sequence: FIRST/ONLY open a message, MIDDLE/LAST continue one of the same kind.
        match (pos.starts(), self.resp.open()) {
            (true, Some(_)) => return Err(self.invalid_data_request()),
            (false, None) => return Err(self.invalid_data_request()),
            (false, Some(o)) if o.kind != kind => return Err(self.invalid_data_request()),
            _ => {}
        }
        if !payload_fits(pos, plen, u64::from(self.cfg.pmtu)) {
            return Err(self.invalid_data_request());
        }
        if kind == ReqKind::Write && !self.cfg.access.contains(Access::REMOTE_WRITE) {
            return Err(self.invalid_data_request());
        }
        Ok(())
    }

    /// The message this packet belongs to: the open one, or a new one starting at its PSN
    /// (a WRITE's from its RETH, whose R_Key and length are checked here, once per message).
    fn open_or_continue(
        &self,
        ctx: &mut Ctx<'_>,
        pkt: &RoceRepr<'_>,
        kind: ReqKind,
    ) -> Result<OpenMsg, Fatal> {
        if let Some(o) = self.resp.open() {
            return Ok(o);
        }
        let mut o = OpenMsg::starting(kind, pkt.bth.psn);
        if kind == ReqKind::Write {
            let reth = pkt.reth.ok_or_else(|| self.invalid_data_request())?;
            // A zero-length WRITE needs no valid R_Key (IBA 9.4.3, rxe). The R_Key
            // check comes before the length checks, as in rxe.
            if reth.dma_len > 0 {
                ctx.mrs
                    .check(
                        reth.rkey,
                        self.pd,
                        reth.va,
                        u64::from(reth.dma_len),
                        Access::REMOTE_WRITE,
                    )
                    .map_err(|_| fatal(NakCode::RemoteAccessError, None))?;
            }
            if u64::from(reth.dma_len) > MAX_MSG_BYTES {
                return Err(self.invalid_data_request());
            }
            o.va = reth.va;
            o.rkey = reth.rkey;
            o.dma_len = reth.dma_len;
        }
        Ok(o)
    }

    /// Writes a WRITE packet's payload at `offset` into the message's RETH buffer.
    fn place_write(
        &self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
        pos: Pos,
        msg: &OpenMsg,
        offset: u64,
    ) -> Result<(), Fatal> {
        let plen = pkt.payload.len() as u64;
        // Too long for the RETH, or a last packet that leaves the message short:
        // refused before anything is placed (rxe's length check, pktlen == resid
        // for the last packet, comes before it writes).
        let end = offset + plen;
        if end > u64::from(msg.dma_len) || (pos.ends() && end != u64::from(msg.dma_len)) {
            return Err(self.invalid_data_request());
        }
        if plen > 0 {
            let addr = msg
                .va
                .checked_add(offset)
                .ok_or(fatal(NakCode::RemoteAccessError, None))?;
            ctx.mrs
                .check(msg.rkey, self.pd, addr, plen, Access::REMOTE_WRITE)
                .map_err(|_| fatal(NakCode::RemoteAccessError, None))?;
            mem.write(addr, pkt.payload);
        }
        Ok(())
    }

    /// Scatters a SEND packet's payload at `offset` into the SGL of the RECV in use.
    fn place_send(
        &self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
        offset: u64,
    ) -> Result<(), Fatal> {
        let Some(recv) = self.resp.rq().front() else {
            return Err(fatal(NakCode::RemoteOperationalError, None));
        };
        match scatter(mem, ctx.mrs, self.pd, &recv.sgl, offset, pkt.payload) {
            Ok(()) => Ok(()),
            Err(SglError::TooLong) => {
                Err(fatal(NakCode::InvalidRequest, Some(WcStatus::LocLenErr)))
            }
            Err(SglError::Protection(_)) => Err(fatal(
                NakCode::RemoteOperationalError,
                Some(WcStatus::LocProtErr),
            )),
        }
    }

    /// The last packet of a SEND or WRITE is placed: invalidates the R_Key an IETH names,
    /// counts the message (MSN), closes it and, if it used a RECV, completes that RECV.
    fn complete_message(
        &mut self,
        ctx: &mut Ctx<'_>,
        pkt: &RoceRepr<'_>,
        kind: ReqKind,
        msg: &OpenMsg,
        needs_recv: bool,
    ) -> Result<(), Fatal> {
        let mut invalidated = None;
        if let Some(rkey) = pkt.ieth {
            if ctx.mrs.invalidate(rkey, self.pd).is_err() {
                return Err(fatal(NakCode::InvalidRequest, Some(WcStatus::RemInvReqErr)));
            }
            invalidated = Some(rkey);
        }
        self.resp.msn = psn_add(self.resp.msn, 1);
        self.resp.set_open(None);
        if needs_recv {
            let Some(recv) = self.resp.rq_pop() else {
                return Err(fatal(NakCode::RemoteOperationalError, None));
            };
            let c = recv_success(
                self.qpn,
                recv.wr_id,
                kind,
                msg.received,
                pkt.imm,
                invalidated,
            );
            if !post_completion(ctx, self.recv_cq, c) {
                return Err(fatal(NakCode::RemoteOperationalError, None));
            }
        }
        Ok(())
    }

    /// The checks every new READ and atomic passes: no message open, operation enabled on
    /// the QP, and the QP accepts READs/atomics at all (`max_dest_rd_atomic` > 0).
    ///
    /// How many are outstanding is not checked: as in rxe, keeping within the limit is the
    /// requester's job, and the responder recycles its oldest replay entry instead of
    /// refusing the request (an rxe requester rounds `max_rd_atomic` up to a power of two,
    /// so a limit enforced here with a fatal NAK would break a peer configured alike).
    fn rd_atomic_admission(&self, need: Access) -> Result<(), Fatal> {
        let inv = fatal(
            NakCode::InvalidRequest,
            self.open_send_status(WcStatus::RemInvReqErr),
        );
        if self.resp.open().is_some()
            || !self.cfg.access.contains(need)
            || self.cfg.max_dest_rd_atomic == 0
        {
            return Err(inv);
        }
        Ok(())
    }

    /// READs and atomics kept for duplicate replay: `max_dest_rd_atomic` rounded up to a
    /// power of two, so a peer that rounds its `max_rd_atomic` up (rxe) still finds every
    /// outstanding request replayable.
    fn replay_capacity(&self) -> usize {
        usize::from(self.cfg.max_dest_rd_atomic).next_power_of_two()
    }

    fn read_request(&mut self, ctx: &mut Ctx<'_>, pkt: &RoceRepr<'_>) -> Result<(), Fatal> {
        self.rd_atomic_admission(Access::REMOTE_READ)?;
        let psn = pkt.bth.psn;
        let reth = pkt.reth.ok_or(fatal(NakCode::InvalidRequest, None))?;
        let len = u64::from(reth.dma_len);
        if len > 0 {
            ctx.mrs
                .check(reth.rkey, self.pd, reth.va, len, Access::REMOTE_READ)
                .map_err(|_| fatal(NakCode::RemoteAccessError, None))?;
        }
        if len > MAX_MSG_BYTES {
            return Err(fatal(NakCode::InvalidRequest, None));
        }
        let npkts = packets_for(len, self.cfg.pmtu) as u32;
        self.resp.epsn = psn_add(psn, npkts);
        self.resp.msn = psn_add(self.resp.msn, 1);
        let msn = self.resp.msn;
        self.resp.remember(
            ReplayEntry::Read {
                first_psn: psn,
                npkts,
                va: reth.va,
                rkey: reth.rkey,
                len: reth.dma_len,
                msn,
            },
            self.replay_capacity(),
        );
        self.resp.queue_read(ReadResp {
            next_psn: psn,
            va: reth.va,
            remaining: reth.dma_len,
            rkey: reth.rkey,
            msn,
            replay: false,
            read_first_psn: psn,
            read_npkts: npkts,
        });
        Ok(())
    }

    fn atomic_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        mem: &mut dyn Memory,
        pkt: &RoceRepr<'_>,
    ) -> Result<(), Fatal> {
        self.rd_atomic_admission(Access::REMOTE_ATOMIC)?;
        let psn = pkt.bth.psn;
        let ae = pkt.atomic_eth.ok_or(fatal(NakCode::InvalidRequest, None))?;
        if ae.va % 8 != 0 {
            return Err(fatal(NakCode::InvalidRequest, None));
        }
        ctx.mrs
            .check(ae.rkey, self.pd, ae.va, 8, Access::REMOTE_ATOMIC)
            .map_err(|_| fatal(NakCode::RemoteAccessError, None))?;
        // Host memory holds the u64 little-endian.
        let mut b = [0u8; 8];
        mem.read(ae.va, &mut b);
        let orig = u64::from_le_bytes(b);
        let new = match pkt.bth.opcode {
            Opcode::RcCompareSwap => (orig == ae.compare).then_some(ae.swap_add),
            _ => Some(orig.wrapping_add(ae.swap_add)),
        };
        if let Some(v) = new {
            mem.write(ae.va, &v.to_le_bytes());
        }
        self.resp.epsn = psn_add(psn, 1);
        self.resp.ack_psn = psn;
        self.resp.msn = psn_add(self.resp.msn, 1);
        let msn = self.resp.msn;
        self.resp.remember(
            ReplayEntry::Atomic { psn, orig, msn },
            self.replay_capacity(),
        );
        self.resp.resp_q.push_back(RespItem::AtomicAck {
            psn,
            msn,
            orig,
            replay: false,
        });
        Ok(())
    }

    /// A request behind `epsn`: re-ACK, replay a READ, or answer an atomic from the table.
    fn duplicate_request(&mut self, pkt: &RoceRepr<'_>, kind: ReqKind) -> Result<(), RxDrop> {
        let psn = pkt.bth.psn;
        let replay_cap = 2 * usize::from(self.cfg.max_dest_rd_atomic) + 16;
        match kind {
            ReqKind::Send | ReqKind::Write => {
                let (last, msn) = (self.resp.ack_psn, self.resp.msn);
                self.resp.push_ack(last, msn);
                Ok(())
            }
            ReqKind::Read => {
                let reth = pkt.reth.ok_or(RxDrop::DuplicateNotReplayable(psn))?;
                let pmtu = self.cfg.pmtu;
                let found = self.resp.replay().iter().find_map(|e| match *e {
                    ReplayEntry::Read {
                        first_psn,
                        npkts,
                        va,
                        rkey,
                        len,
                        msn,
                    } if (psn_diff(psn, first_psn) as i64) >= 0
                        && (psn_diff(psn, first_psn) as i64) < i64::from(npkts) =>
                    {
                        Some((first_psn, npkts, va, rkey, len, msn))
                    }
                    _ => None,
                });
                let Some((first_psn, npkts, va, rkey, len, msn)) = found else {
                    return Err(RxDrop::DuplicateNotReplayable(psn));
                };
                // A retried READ asks for exactly the rest of the original from its PSN (the
                // requester restarts at that PSN with the RETH moved on by whole packets);
                // anything else is not a replay of this READ.
                let skipped = psn_diff(psn, first_psn) as u32;
                let done = u64::from(skipped) * u64::from(pmtu);
                let fits = reth.rkey == rkey
                    && reth.va == va.wrapping_add(done)
                    && u64::from(reth.dma_len) == u64::from(len).saturating_sub(done);
                if !fits {
                    return Err(RxDrop::DuplicateNotReplayable(psn));
                }
                // The requester went back to `psn`: the responses queued for `psn` and later
                // would only be discarded there (see `Responder::abandon_from`), so the
                // replay takes their place instead of waiting behind them (IBA 9.7.5.1.1,
                // rxe's `duplicate_request`). The NIC takes the abandoned byte count
                // (`Device::take_read_bytes`) to forget their payload reads.
                self.resp.abandon_from(psn, pmtu);
                if self.resp.resp_q.len() >= replay_cap {
                    return Err(RxDrop::ResponderBusy);
                }
                self.resp.queue_read(ReadResp {
                    next_psn: psn,
                    va: reth.va,
                    remaining: reth.dma_len,
                    rkey,
                    msn,
                    replay: true,
                    read_first_psn: first_psn,
                    read_npkts: npkts,
                });
                Ok(())
            }
            ReqKind::Atomic => {
                let found = self.resp.replay().iter().find_map(|e| match *e {
                    ReplayEntry::Atomic { psn: p, orig, msn } if p == psn => Some((orig, msn)),
                    _ => None,
                });
                let Some((orig, msn)) = found else {
                    return Err(RxDrop::DuplicateNotReplayable(psn));
                };
                if self.resp.resp_q.len() >= replay_cap {
                    return Err(RxDrop::ResponderBusy);
                }
                self.resp.resp_q.push_back(RespItem::AtomicAck {
                    psn,
                    msn,
                    orig,
                    replay: true,
                });
                Ok(())
            }
        }
    }

    /// Builds the next queued response (ACK/NAK, atomic ACK, READ response packet).
    pub(crate) fn next_response(
        &mut self,
        ctx: &mut Ctx<'_>,
        out: &mut TxOut<'_>,
        mem: &dyn Memory,
    ) -> Option<TxMeta> {
        loop {
            let item = *self.resp.resp_q.front()?;
            let bth = |opcode: Opcode, psn: u32, pkey: u16, dest_qp: u32| BthRepr {
                opcode,
                solicited: false,
                mig_req: false,
                pad_count: 0,
                tver: 0,
                pkey,
                fecn: false,
                becn: false,
                dest_qp,
                ack_req: false,
                psn,
            };
            let (pkey, dest) = (self.cfg.pkey, self.cfg.dest_qpn);
            let mut roce = RoceRepr::new(bth(Opcode::RcAck, 0, pkey, dest), &[]);
            let ack = |msn| AethRepr {
                syndrome: AethSyndrome::Ack {
                    credits: CREDITS_UNLIMITED,
                },
                msn,
            };
            let mut replay = false;
            let mut payload_len = 0usize;
            match item {
                RespItem::Ack { psn, msn } => {
                    self.resp.resp_q.pop_front();
                    roce.bth = bth(Opcode::RcAck, psn, pkey, dest);
                    roce.aeth = Some(ack(msn));
                }
                RespItem::Nak { psn, msn, syndrome } => {
                    self.resp.resp_q.pop_front();
                    // Counted as it leaves: a duplicate READ may abandon a queued NAK
                    // (`Responder::abandon_from`).
                    match syndrome {
                        AethSyndrome::Nak(code) => ctx.stats.naks_sent.count(code),
                        AethSyndrome::RnrNak { .. } => ctx.stats.naks_sent.rnr += 1,
                        AethSyndrome::Ack { .. } => {}
                    }
                    roce.bth = bth(Opcode::RcAck, psn, pkey, dest);
                    roce.aeth = Some(AethRepr { syndrome, msn });
                }
                RespItem::AtomicAck {
                    psn,
                    msn,
                    orig,
                    replay: r,
                } => {
                    self.resp.resp_q.pop_front();
                    replay = r;
                    roce.bth = bth(Opcode::RcAtomicAck, psn, pkey, dest);
                    roce.aeth = Some(ack(msn));
                    roce.atomic_ack = Some(AtomicAckEthRepr { orig });
                }
                RespItem::Read(r) => {
                    let pmtu = self.cfg.pmtu;
                    let plen = r.remaining.min(pmtu);
                    let last = r.remaining <= pmtu;
                    let index = psn_diff(r.next_psn, r.read_first_psn).max(0) as u32;
                    let opcode = read_response_opcode(index, r.read_npkts);
                    if plen > 0 {
                        // Checked again per packet: the region may have been deregistered.
                        let ok = ctx
                            .mrs
                            .check(r.rkey, self.pd, r.va, u64::from(plen), Access::REMOTE_READ)
                            .is_ok();
                        if !ok {
                            if self.state == QpState::Err {
                                // An owed READ that can no longer be read: the NAK already
                                // queued behind it still goes out.
                                self.resp.resp_q.pop_front();
                            } else {
                                // Everything queued behind answers later requests, which
                                // the NAK of this PSN makes the requester flush.
                                self.resp.resp_q.clear();
                                self.responder_fatal(
                                    ctx,
                                    r.next_psn,
                                    fatal(NakCode::RemoteAccessError, None),
                                );
                            }
                            continue;
                        }
                        out.scratch.resize(plen as usize, 0);
                        mem.read(r.va, &mut out.scratch[..plen as usize]);
                    }
                    payload_len = plen as usize;
                    replay = r.replay;
                    roce.bth = bth(opcode, r.next_psn, pkey, dest);
                    if opcode.has_aeth() {
                        roce.aeth = Some(ack(r.msn));
                    }
                    roce.payload = &out.scratch[..payload_len];
                    if last {
                        self.resp.resp_q.pop_front();
                    } else if let Some(RespItem::Read(next)) = self.resp.resp_q.front_mut() {
                        next.next_psn = psn_add(r.next_psn, 1);
                        next.va = r.va.wrapping_add(u64::from(plen));
                        next.remaining -= plen;
                    }
                }
            }
            let opcode = roce.bth.opcode;
            let psn = roce.bth.psn;
            let frame_len = out.frame.emit(&self.cfg, roce, ctx.stats);
            let s = &mut *ctx.stats;
            match opcode {
                Opcode::RcAck => s.tx_acks += 1,
                Opcode::RcAtomicAck => {
                    s.tx_atomic_acks += 1;
                    // Counted as it leaves: a later duplicate READ may abandon it queued.
                    if replay {
                        s.atomic_replays += 1;
                    }
                }
                _ => {
                    s.tx_read_responses += 1;
                    if replay {
                        s.replayed_read_responses += 1;
                    }
                }
            }
            return Some(TxMeta {
                qpn: self.qpn,
                opcode,
                psn,
                payload_len: payload_len as u32,
                frame_len,
                is_retransmit: replay,
                starts_ooo_wqe: false,
            });
        }
    }
}
