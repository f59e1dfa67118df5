//! The receiver of an unreliable-connection (UC) QP (IBA 9.8.4; Linux rxe's UC paths in
//! `rxe_resp.c`).
//!
//! UC keeps RC's in-order PSN and opcode sequence but never answers: no ACK, no NAK, no RNR.
//! A packet at the expected PSN continues (or opens) a message. A PSN gap means packets were
//! lost: the message being received is abandoned (its WRITE bytes already placed stay, its
//! RECV is not consumed and takes the next SEND from its start), and every MIDDLE/LAST is
//! dropped until a FIRST or ONLY opens a new message, whatever its PSN: the receiver resumes
//! there. A PSN behind the expected one is a duplicate the network made (UC never resends)
//! and is dropped: here rnic departs from rxe, whose `check_psn` opens a new message on any
//! FIRST or ONLY whose PSN is not the expected one, behind it too, so rxe delivers a
//! duplicated or reordered single-packet message that rnic drops (a pcap hunt: `send-bw -c
//! UC -s 100 -n 60` with reordering and duplication delivered 14 of 60 SENDs, none lost).
//! Errors that RC NAKs (opcode sequence, length, R_Key, bounds, access) drop the message
//! instead and the QP stays in RTS; a SEND longer than its RECV completes the
//! RECV with LOC_LEN_ERR, a RECV SGE failing its MR check with LOC_PROT_ERR. A SEND that
//! finds no RECV posted is dropped. Each loss is counted in
//! [`crate::TransportStats::unreliable`].

use crate::cq::{WcOpcode, WcStatus};
use crate::memory::Memory;
use crate::mr::Access;
use crate::op::{classify_request, Pos, ReqKind};
use crate::psn::{psn_add, psn_diff};
use crate::qp::{post_completion, recv_completion, recv_success, Ctx, Qp};
use crate::responder::state::{payload_fits, placement_offset, OpenMsg, MAX_MSG_BYTES};
use crate::sgl::scatter;
use crate::RxDrop;
use rnic_wire::{Opcode, RoceRepr};

/// Why a UC message is dropped (the `RxDrop::UnreliableDiscard` text).
const GAP: &str = "UC message lost a packet (PSN gap); waiting for the next FIRST/ONLY";
const SKIPPED: &str = "UC packet after a lost one; waiting for the next FIRST/ONLY";
const NO_RECV: &str = "UC message with no receive posted";
const RECV_REFUSED: &str = "UC SEND refused by its receive buffer";

/// A UC SEND/WRITE packet for this QP's receiver.
pub(crate) fn handle_request(
    qp: &mut Qp,
    ctx: &mut Ctx<'_>,
    mem: &mut dyn Memory,
    pkt: &RoceRepr<'_>,
) -> Result<(), RxDrop> {
    let op = pkt.bth.opcode;
    // UC opcodes are the RC operation codes with transport bits 001.
    let (kind, pos) = Opcode::from_u8(op.as_u8() & 0x1F)
        .ok()
        .and_then(classify_request)
        .filter(|(k, _)| matches!(k, ReqKind::Send | ReqKind::Write))
        .ok_or(RxDrop::UnsupportedOpcode(op))?;
    let psn = pkt.bth.psn;
    let d = psn_diff(psn, qp.resp.epsn);
    if d < 0 {
        ctx.stats.duplicate_requests += 1;
        return Err(RxDrop::UnreliableDiscard(
            "UC duplicate (PSN behind the expected)",
        ));
    }
    if d > 0 {
        // Packets were lost: what was being received cannot complete.
        abandon(qp, ctx);
    }
    qp.resp.epsn = psn_add(psn, 1);
    if qp.resp.open().is_none() && !pos.starts() {
        ctx.stats.unreliable.uc_packets_skipped += 1;
        return Err(RxDrop::UnreliableDiscard(if d > 0 { GAP } else { SKIPPED }));
    }
    if qp.resp.open().is_some() && pos.starts() {
        // The last packet of the open message was lost at the PSN just before: a new
        // message begins here.
        abandon(qp, ctx);
    }
    match data_packet(qp, ctx, mem, pkt, kind, pos) {
        Ok(()) => Ok(()),
        Err(why) => {
            // One count per lost message, under its cause.
            qp.resp.set_open(None);
            if why != NO_RECV && why != RECV_REFUSED {
                ctx.stats.unreliable.uc_messages_abandoned += 1;
            }
            Err(RxDrop::UnreliableDiscard(why))
        }
    }
}

/// Drops the message being received (its RECV stays posted for the next SEND).
fn abandon(qp: &mut Qp, ctx: &mut Ctx<'_>) {
    if qp.resp.take_open().is_some() {
        ctx.stats.unreliable.uc_messages_abandoned += 1;
    }
}

/// Places one in-sequence packet; `Err` drops the message it belongs to.
fn data_packet(
    qp: &mut Qp,
    ctx: &mut Ctx<'_>,
    mem: &mut dyn Memory,
    pkt: &RoceRepr<'_>,
    kind: ReqKind,
    pos: Pos,
) -> Result<(), &'static str> {
    let pmtu = u64::from(qp.cfg.pmtu);
    let plen = pkt.payload.len() as u64;
    if matches!(qp.resp.open(), Some(o) if o.kind != kind) {
        return Err("UC opcode sequence error (SEND and WRITE packets mixed)");
    }
    if !payload_fits(pos, plen, pmtu) {
        return Err("UC payload length does not fit its position in the message");
    }
    let mut msg = match qp.resp.open() {
        Some(o) => o,
        None => {
            let mut o = OpenMsg::starting(kind, pkt.bth.psn);
            if kind == ReqKind::Write {
                if !qp.cfg.access.contains(Access::REMOTE_WRITE) {
                    return Err("UC WRITE to a QP without REMOTE_WRITE access");
                }
                let reth = pkt.reth.ok_or("UC WRITE FIRST/ONLY without RETH")?;
                if reth.dma_len > 0
                    && ctx
                        .mrs
                        .check(
                            reth.rkey,
                            qp.pd,
                            reth.va,
                            u64::from(reth.dma_len),
                            Access::REMOTE_WRITE,
                        )
                        .is_err()
                {
                    return Err("UC WRITE refused by the R_Key check");
                }
                if u64::from(reth.dma_len) > MAX_MSG_BYTES {
                    return Err("UC WRITE longer than 2^31 bytes");
                }
                o.va = reth.va;
                o.rkey = reth.rkey;
                o.dma_len = reth.dma_len;
            }
            o
        }
    };
    let needs_recv = kind == ReqKind::Send || (pos.ends() && pkt.imm.is_some());
    if needs_recv && qp.resp.rq().is_empty() {
        ctx.stats.unreliable.no_recv_messages += 1;
        return Err(NO_RECV);
    }
    let offset = placement_offset(msg.start_psn, pkt.bth.psn, qp.cfg.pmtu);
    match kind {
        ReqKind::Write => {
            if offset + plen > u64::from(msg.dma_len) {
                return Err("UC WRITE longer than its RETH length");
            }
            if plen > 0 {
                let addr = msg
                    .va
                    .checked_add(offset)
                    .ok_or("UC WRITE address overflow")?;
                ctx.mrs
                    .check(msg.rkey, qp.pd, addr, plen, Access::REMOTE_WRITE)
                    .map_err(|_| "UC WRITE outside its memory region")?;
                mem.write(addr, pkt.payload);
            }
        }
        _ => {
            let Some(recv) = qp.resp.rq().front() else {
                return Err(NO_RECV);
            };
            if let Err(e) = scatter(mem, ctx.mrs, qp.pd, &recv.sgl, offset, pkt.payload) {
                recv_error(qp, ctx, e.local_status());
                return Err(RECV_REFUSED);
            }
        }
    }
    msg.received = (offset + plen) as u32;
    if !pos.ends() {
        qp.resp.set_open(Some(msg));
        return Ok(());
    }
    qp.resp.set_open(None);
    if kind == ReqKind::Write && msg.received != msg.dma_len {
        return Err("UC WRITE shorter than its RETH length");
    }
    qp.resp.msn = psn_add(qp.resp.msn, 1);
    if !needs_recv {
        qp.resp.cold_mut().msgs_received += 1;
    } else {
        let Some(recv) = qp.resp.rq_pop() else {
            return Err(NO_RECV);
        };
        let c = recv_success(qp.qpn, recv.wr_id, kind, msg.received, pkt.imm, None);
        qp.resp.cold_mut().msgs_received += 1;
        if !post_completion(ctx, qp.recv_cq, c) {
            // A CQ overrun is a CQ error for every service: the QP goes to ERR.
            qp.enter_error(ctx);
        }
    }
    Ok(())
}

/// The RECV in use failed (too short, or an SGE refused): it completes with `status`.
pub(crate) fn recv_error(qp: &mut Qp, ctx: &mut Ctx<'_>, status: WcStatus) {
    ctx.stats.unreliable.recv_errors += 1;
    if let Some(r) = qp.resp.rq_pop() {
        let c = recv_completion(qp.qpn, r.wr_id, status, WcOpcode::Recv, 0);
        if !post_completion(ctx, qp.recv_cq, c) {
            qp.enter_error(ctx);
        }
    }
}
