//! The receiver of an unreliable-datagram (UD) QP (IBA 9.8.5 and 11.4.1.2; Linux rxe's UD
//! paths).
//!
//! A UD message is one packet, SEND ONLY (with immediate), with a DETH naming the Q_Key and
//! the sending QP. The receiver takes datagrams from any peer (no connected address check),
//! ignores the PSN (datagrams have no order to keep), and drops a datagram whose Q_Key is not
//! the QP's, one longer than the path MTU, and one that finds no receive posted. An accepted
//! datagram consumes the next RECV: as the verbs require for UD, the first 40 bytes of the
//! receive buffer are the GRH area (for RoCEv2 over IPv4 the first 20 bytes are zero and the
//! last 20 hold the packet's IPv4 header, as ConnectX and rxe write it) and the payload
//! follows. The completion carries `40 + payload` bytes and the source QP from the DETH. A
//! receive shorter than that completes with LOC_LEN_ERR, one whose SGE fails its MR check
//! with LOC_PROT_ERR; the QP stays in RTS.

use crate::cq::{Completion, WcOpcode, WcStatus};
use crate::memory::Memory;
use crate::psn::psn_add;
use crate::qp::{post_completion, Ctx, Qp};
use crate::sgl::{scatter, SglError};
use crate::RxDrop;
use rnic_wire::RoceRepr;

/// Bytes at the start of every UD receive buffer that hold the GRH (verbs).
pub const GRH_BYTES: usize = 40;

/// A UD SEND ONLY for this QP's receiver; `ip_header` is the packet's IPv4 header (20
/// bytes) for the GRH area.
pub(crate) fn handle_request(
    qp: &mut Qp,
    ctx: &mut Ctx<'_>,
    mem: &mut dyn Memory,
    pkt: &RoceRepr<'_>,
    ip_header: &[u8],
) -> Result<(), RxDrop> {
    let deth = pkt.deth.ok_or(RxDrop::UnsupportedOpcode(pkt.bth.opcode))?;
    if deth.qkey != qp.cfg.qkey {
        ctx.stats.unreliable.ud_qkey_mismatches += 1;
        return Err(RxDrop::QkeyMismatch(deth.qkey));
    }
    if pkt.payload.len() > qp.cfg.pmtu as usize {
        return Err(RxDrop::UnreliableDiscard(
            "UD datagram longer than the path MTU",
        ));
    }
    qp.resp.epsn = psn_add(pkt.bth.psn, 1);
    let Some(recv) = qp.resp.rq().front() else {
        ctx.stats.unreliable.no_recv_messages += 1;
        return Err(RxDrop::UnreliableDiscard(
            "UD datagram with no receive posted",
        ));
    };
    let mut grh = [0u8; GRH_BYTES];
    let n = ip_header.len().min(20);
    grh[GRH_BYTES - 20..GRH_BYTES - 20 + n].copy_from_slice(&ip_header[..n]);
    let total = GRH_BYTES as u64 + pkt.payload.len() as u64;
    let placed = if total > recv.sgl_len() {
        Err(SglError::TooLong)
    } else {
        scatter(mem, ctx.mrs, qp.pd, &recv.sgl, 0, &grh).and_then(|()| {
            scatter(
                mem,
                ctx.mrs,
                qp.pd,
                &recv.sgl,
                GRH_BYTES as u64,
                pkt.payload,
            )
        })
    };
    let (status, byte_len) = match placed {
        Ok(()) => (WcStatus::Success, total as u32),
        Err(e) => (e.local_status(), 0),
    };
    let Some(recv) = qp.resp.rq_pop() else {
        return Err(RxDrop::UnreliableDiscard(
            "UD datagram with no receive posted",
        ));
    };
    if status == WcStatus::Success {
        qp.resp.msn = psn_add(qp.resp.msn, 1);
        qp.resp.cold_mut().msgs_received += 1;
    } else {
        ctx.stats.unreliable.recv_errors += 1;
    }
    let c = Completion {
        wr_id: recv.wr_id,
        status,
        opcode: WcOpcode::Recv,
        byte_len,
        qpn: qp.qpn,
        imm: pkt.imm,
        invalidated_rkey: None,
        src_qp: Some(deth.src_qp),
    };
    if !post_completion(ctx, qp.recv_cq, c) {
        qp.enter_error(ctx);
    }
    Ok(())
}
