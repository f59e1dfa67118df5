//! Shared receive queues (verbs' SRQ): receive WQEs posted once for several QPs, each taken
//! by whichever of those QPs next receives a message that consumes one.
//!
//! The responder paths (RC, UC, UD, out of order) take receives from their QP's own queue,
//! and stay one path each: a QP on an SRQ keeps its own queue empty between packets. Before
//! a packet that consumes a receive is handled, the device lends the QP the SRQ's oldest
//! WQE; afterwards it takes back whatever the packet left, unless a multi-packet SEND has
//! started in it (that WQE is the message's until its last packet, as a NIC's would be).
//! Posting order is kept: a WQE taken back goes to the front it came from.

use std::collections::VecDeque;

use rnic_wire::Opcode;

use crate::error::VerbsError;
use crate::op::ReqKind;
use crate::responder::state::Responder;
use crate::wr::RecvWr;

/// Handle of a shared receive queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SrqId(pub u32);

/// One SRQ: its depth limit and its posted WQEs, oldest first.
#[derive(Debug)]
struct Srq {
    max_wr: u32,
    wrs: VecDeque<RecvWr>,
}

/// The device's SRQs, indexed by [`SrqId`].
#[derive(Debug, Default)]
pub(crate) struct SrqTable {
    srqs: Vec<Srq>,
}

impl SrqTable {
    /// No SRQ exists: the receive path skips lending altogether.
    pub(crate) fn is_empty(&self) -> bool {
        self.srqs.is_empty()
    }

    pub(crate) fn create(&mut self, max_wr: u32) -> SrqId {
        self.srqs.push(Srq {
            max_wr,
            wrs: VecDeque::new(),
        });
        SrqId(self.srqs.len() as u32 - 1)
    }

    fn get_mut(&mut self, id: SrqId) -> Result<&mut Srq, VerbsError> {
        self.srqs
            .get_mut(id.0 as usize)
            .ok_or(VerbsError::UnknownSrq(id))
    }

    /// Checks that `id` exists.
    pub(crate) fn check(&self, id: SrqId) -> Result<(), VerbsError> {
        match self.srqs.get(id.0 as usize) {
            Some(_) => Ok(()),
            None => Err(VerbsError::UnknownSrq(id)),
        }
    }

    /// Posts `wr` behind the SRQ's others.
    pub(crate) fn post(&mut self, id: SrqId, wr: RecvWr) -> Result<(), VerbsError> {
        let srq = self.get_mut(id)?;
        if srq.wrs.len() >= srq.max_wr as usize {
            return Err(VerbsError::QueueFull {
                queue: "shared receive",
                depth: srq.max_wr,
            });
        }
        srq.wrs.push_back(wr);
        Ok(())
    }

    /// WQEs posted and not yet taken.
    pub(crate) fn len(&self, id: SrqId) -> Option<usize> {
        Some(self.srqs.get(id.0 as usize)?.wrs.len())
    }

    /// The WQE `ahead` places behind the SRQ's oldest.
    pub(crate) fn get(&self, id: SrqId, ahead: usize) -> Option<&RecvWr> {
        self.srqs.get(id.0 as usize)?.wrs.get(ahead)
    }

    /// Before a packet of opcode `op` is handled: lends the SRQ's oldest WQE to a responder
    /// whose own queue is empty, if the packet consumes a receive.
    pub(crate) fn lend(&mut self, id: SrqId, op: Opcode, resp: &mut Responder) {
        if !consumes_recv(op) || !resp.rq().is_empty() {
            return;
        }
        if let Some(wr) = self.srqs[id.0 as usize].wrs.pop_front() {
            resp.cold_mut().rq.push_back(wr);
        }
    }

    /// After the packet: takes back what the responder holds, unless a SEND has started in
    /// it.
    pub(crate) fn take_back(&mut self, id: SrqId, resp: &mut Responder) {
        if resp.open().is_some_and(|m| m.kind == ReqKind::Send) || resp.rq().is_empty() {
            return;
        }
        let srq = &mut self.srqs[id.0 as usize];
        while let Some(wr) = resp.cold_mut().rq.pop_back() {
            srq.wrs.push_front(wr);
        }
    }
}

/// Whether a request of `op` may consume a receive WQE: every SEND packet (a multi-packet
/// SEND holds its WQE from its first packet) and a WRITE with immediate's last or only.
fn consumes_recv(op: Opcode) -> bool {
    use Opcode::*;
    op.has_immdt()
        || matches!(
            op,
            RcSendFirst
                | RcSendMiddle
                | RcSendLast
                | RcSendOnly
                | RcSendLastInv
                | RcSendOnlyInv
                | UcSendFirst
                | UcSendMiddle
                | UcSendLast
                | UcSendOnly
                | UdSendOnly
        )
}
