//! The requester of the unreliable services (UC and UD): the RC segmentation without any
//! acknowledgement.
//!
//! A WQE is cut into PMTU packets exactly as RC cuts it (UD messages are one packet, checked
//! at post time), with the service's opcodes (UC: the RC operation codes with transport bits
//! 001, a RETH on WRITE FIRST/ONLY; UD: SEND ONLY with a DETH carrying the QP's Q_Key and its
//! own QPN). AckReq is never set and no ACK timer runs: nothing will answer. The WQE completes
//! (a CQE if signaled) as soon as its last packet is built, "at transmission" as IBA 9.8.3
//! and every RNIC do for UC/UD: the sender cannot know whether the message arrived. `una`
//! follows the sent PSNs, so the RC packet window never closes.

use crate::memory::Memory;
use crate::psn::psn_add;
use crate::qp::{Ctx, Qp, TxOut};
use crate::wr::WrOpcode;
use crate::{ServiceType, TxMeta, WcStatus};
use rnic_wire::{DethRepr, RethRepr, RoceRepr};

/// Builds the next UC or UD request packet into `out.buf`, if there is one to send.
pub(crate) fn next_request(
    qp: &mut Qp,
    ctx: &mut Ctx<'_>,
    out: &mut TxOut<'_>,
    mem: &dyn Memory,
) -> Option<TxMeta> {
    if !qp.req_can_send() {
        return None;
    }
    let (idx, psn, i, pos) = qp.start_cursor_packet(ctx)?;
    let pmtu = qp.cfg.pmtu;
    let w = qp.req.sq.get(idx)?;
    let opcode = qp.service.request_opcode(w.wr.opcode, pos);
    let offset = u64::from(i) * u64::from(pmtu);
    let payload_len = (u64::from(w.len) - offset).min(u64::from(pmtu)) as usize;
    let is_write = matches!(w.wr.opcode, WrOpcode::Write | WrOpcode::WriteImm);
    let reth = (is_write && pos.starts()).then(|| {
        let remote = w.wr.remote.unwrap_or_default();
        RethRepr {
            va: remote.va,
            rkey: remote.rkey,
            dma_len: w.len,
        }
    });
    let deth = (qp.service == ServiceType::Ud).then_some(DethRepr {
        qkey: qp.cfg.qkey,
        src_qp: qp.qpn,
    });
    if !qp.gather_payload(ctx, out, mem, idx, offset, payload_len) {
        return None;
    }
    let w = qp.req.sq.get(idx)?;
    let solicited = w.wr.solicited
        && pos.ends()
        && matches!(
            w.wr.opcode,
            WrOpcode::Send | WrOpcode::SendImm | WrOpcode::WriteImm
        );
    let bth = qp.peer_bth(opcode, psn, false, solicited);
    let roce = RoceRepr::new(bth, &out.scratch[..payload_len])
        .with_reth(reth)
        .with_deth(deth)
        .with_imm(opcode.has_immdt().then(|| w.wr.imm.unwrap_or(0)));
    let meta = qp.send_request(&mut out.frame, ctx.stats, roce, false, false);
    let end = w.end_psn();
    let next_psn = psn_add(psn, 1);
    qp.req.psn = next_psn;
    qp.req.fresh_psn = next_psn;
    qp.req.una = next_psn;
    if next_psn == end {
        qp.req.cursor += 1;
        // Sent is done: nothing will acknowledge it.
        qp.complete_front(ctx, WcStatus::Success);
    }
    Some(meta)
}
