//! Completion queues: bounded rings of work completions.
//!
//! A completion that does not fit is an overrun. IB makes an overrun a CQ error that takes the
//! affiliated QPs to the error state; here the overrun is counted, the completion is lost and
//! the QP that produced it goes to ERR (the responder also answers with a remote operational
//! error NAK).

use std::collections::VecDeque;

/// Handle of a completion queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CqId(pub u32);

/// Completion status (the `ibv_wc_status` values this transport can produce).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcStatus {
    Success,
    /// A received message was longer than the posted RECV buffers.
    LocLenErr,
    /// Internal QP consistency error.
    LocQpOpErr,
    /// A local SGE failed its memory-region check (lkey, PD, bounds or LOCAL_WRITE).
    LocProtErr,
    /// The QP went to the error state before this work request completed.
    WrFlushErr,
    /// The responder sent a response that does not fit the request (opcode, length).
    BadRespErr,
    /// Local access error.
    LocAccessErr,
    /// The responder NAKed with invalid request (0x61).
    RemInvReqErr,
    /// The responder NAKed with remote access error (0x62).
    RemAccessErr,
    /// The responder NAKed with remote operational error (0x63).
    RemOpErr,
    /// Local ACK timeouts or sequence-error retries exhausted retry_cnt.
    RetryExcErr,
    /// RNR NAKs exhausted rnr_retry.
    RnrRetryExcErr,
}

impl WcStatus {
    /// The verbs name (`ibv_wc_status` without its `IBV_WC_` prefix), e.g. `RETRY_EXC_ERR`.
    pub fn verbs_name(self) -> &'static str {
        match self {
            WcStatus::Success => "SUCCESS",
            WcStatus::LocLenErr => "LOC_LEN_ERR",
            WcStatus::LocQpOpErr => "LOC_QP_OP_ERR",
            WcStatus::LocProtErr => "LOC_PROT_ERR",
            WcStatus::WrFlushErr => "WR_FLUSH_ERR",
            WcStatus::BadRespErr => "BAD_RESP_ERR",
            WcStatus::LocAccessErr => "LOC_ACCESS_ERR",
            WcStatus::RemInvReqErr => "REM_INV_REQ_ERR",
            WcStatus::RemAccessErr => "REM_ACCESS_ERR",
            WcStatus::RemOpErr => "REM_OP_ERR",
            WcStatus::RetryExcErr => "RETRY_EXC_ERR",
            WcStatus::RnrRetryExcErr => "RNR_RETRY_EXC_ERR",
        }
    }
}

/// What completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    Send,
    RdmaWrite,
    RdmaRead,
    CompSwap,
    FetchAdd,
    /// A RECV consumed by a SEND.
    Recv,
    /// A RECV consumed by a WRITE with immediate.
    RecvRdmaWithImm,
}

/// One work completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub status: WcStatus,
    pub opcode: WcOpcode,
    /// Bytes transferred: message length (RECV: bytes received; atomics: 8).
    pub byte_len: u32,
    pub qpn: u32,
    pub imm: Option<u32>,
    pub invalidated_rkey: Option<u32>,
    /// UD receives: the sender's QP number from the DETH (`ibv_wc.src_qp`).
    pub src_qp: Option<u32>,
}

/// A completion could not be queued: the ring is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CqOverrun;

/// A bounded ring of completions.
#[derive(Debug)]
pub(crate) struct Cq {
    entries: VecDeque<Completion>,
    depth: u32,
    overruns: u64,
}

impl Cq {
    pub(crate) fn new(depth: u32) -> Cq {
        Cq {
            entries: VecDeque::new(),
            depth,
            overruns: 0,
        }
    }

    pub(crate) fn push(&mut self, c: Completion) -> Result<(), CqOverrun> {
        if self.entries.len() >= self.depth as usize {
            self.overruns += 1;
            return Err(CqOverrun);
        }
        self.entries.push_back(c);
        Ok(())
    }

    pub(crate) fn pop(&mut self) -> Option<Completion> {
        self.entries.pop_front()
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn overruns(&self) -> u64 {
        self.overruns
    }
}

/// Every CQ of one device, indexed by [`CqId`].
#[derive(Debug, Default)]
pub(crate) struct CqTable {
    cqs: Vec<Cq>,
}

impl CqTable {
    pub(crate) fn create(&mut self, depth: u32) -> CqId {
        self.cqs.push(Cq::new(depth));
        CqId((self.cqs.len() - 1) as u32)
    }

    pub(crate) fn get(&self, id: CqId) -> Option<&Cq> {
        self.cqs.get(id.0 as usize)
    }

    pub(crate) fn get_mut(&mut self, id: CqId) -> Option<&mut Cq> {
        self.cqs.get_mut(id.0 as usize)
    }

    /// Queues `c` on `id`; an unknown CQ counts as an overrun (it cannot happen: QPs are only
    /// created with existing CQs and CQs are never destroyed).
    pub(crate) fn push(&mut self, id: CqId, c: Completion) -> Result<(), CqOverrun> {
        match self.get_mut(id) {
            Some(cq) => cq.push(c),
            None => Err(CqOverrun),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wc(id: u64) -> Completion {
        Completion {
            wr_id: id,
            status: WcStatus::Success,
            opcode: WcOpcode::Send,
            byte_len: 0,
            qpn: 0x11,
            imm: None,
            invalidated_rkey: None,
            src_qp: None,
        }
    }

    #[test]
    fn ring_is_bounded_and_fifo() {
        let mut cq = Cq::new(2);
        assert!(cq.push(wc(1)).is_ok());
        assert!(cq.push(wc(2)).is_ok());
        assert_eq!(cq.push(wc(3)), Err(CqOverrun));
        assert_eq!(cq.overruns(), 1);
        assert_eq!(cq.len(), 2);
        assert_eq!(cq.pop().map(|c| c.wr_id), Some(1));
        assert_eq!(cq.pop().map(|c| c.wr_id), Some(2));
        assert_eq!(cq.pop(), None);
    }
}
