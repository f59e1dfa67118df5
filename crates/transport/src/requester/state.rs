//! The requester's state, which the QP owns: the send queue of posted WQEs with their PSN
//! ranges, the three progress PSNs and the retry counters and timers (how they move is
//! [`super`]'s). It imports nothing of the QP, so the QP can hold it without an import loop.

use crate::cq::{Completion, WcOpcode, WcStatus};
use crate::inline_sgl::Sgl;
use crate::op::packets_for;
use crate::psn::{psn_add, psn_le, psn_lt, PSN_HALF_WINDOW, PSN_MASK};
use crate::timer::Deadline;
use crate::wr::{SendWr, WrOpcode};
use std::collections::VecDeque;
use std::num::NonZeroU32;

/// AckReq is set on every this-many-th packet inside a long message.
pub const ACK_REQ_INTERVAL_PKTS: u32 = 16;

/// Most PSNs outstanding (sent, unacknowledged) at once: below half the PSN space, so PSN
/// comparisons are never ambiguous.
pub const MAX_OUTSTANDING_PSNS: u32 = PSN_HALF_WINDOW - 1;

/// A PSN or none, in four bytes: PSNs are 24 bits, so `psn + 1` is never zero and
/// `Option<NonZeroU32>` needs no tag, where an `Option<u32>` takes eight (the two retry PSNs
/// keep [`Requester`] at 80 bytes and the QP within `qp_stays_small`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct OptPsn(Option<NonZeroU32>);

impl OptPsn {
    pub(crate) const NONE: OptPsn = OptPsn(None);

    pub(crate) fn some(psn: u32) -> OptPsn {
        debug_assert!(psn <= PSN_MASK);
        OptPsn(NonZeroU32::new((psn & PSN_MASK) + 1))
    }

    pub(crate) fn get(self) -> Option<u32> {
        self.0.map(|v| v.get() - 1)
    }
}

/// A posted send work request and its place in the PSN space.
#[derive(Debug, Clone)]
pub(crate) struct SendWqe {
    /// The WR without its SGL.
    pub wr: WrHead,
    /// The WR's SGL, moved from it (one element inline, see [`Sgl`]).
    pub sgl: Sgl,
    /// Message length in bytes.
    pub len: u32,
    /// PSNs the message takes (READ: as many as response packets).
    pub npkts: u32,
    /// First PSN; valid once `started`.
    pub start_psn: u32,
    pub started: bool,
}

/// A send WR's fields but its SGL (the same names as [`SendWr`]'s).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WrHead {
    pub wr_id: u64,
    pub opcode: WrOpcode,
    pub signaled: bool,
    pub solicited: bool,
    pub imm: Option<u32>,
    pub remote: Option<crate::wr::RemoteAddr>,
    pub atomic: Option<crate::wr::AtomicArgs>,
    pub invalidate_rkey: Option<u32>,
}

impl SendWqe {
    pub(crate) fn new(wr: SendWr, len: u32, pmtu: u32) -> SendWqe {
        let npkts = if wr.opcode.is_atomic() {
            1
        } else {
            packets_for(u64::from(len), pmtu)
        };
        let SendWr {
            wr_id,
            opcode,
            sgl,
            signaled,
            solicited,
            imm,
            remote,
            atomic,
            invalidate_rkey,
        } = wr;
        SendWqe {
            wr: WrHead {
                wr_id,
                opcode,
                signaled,
                solicited,
                imm,
                remote,
                atomic,
                invalidate_rkey,
            },
            sgl,
            len,
            npkts: npkts as u32,
            start_psn: 0,
            started: false,
        }
    }

    /// One past the last PSN.
    pub(crate) fn end_psn(&self) -> u32 {
        psn_add(self.start_psn, self.npkts)
    }

    pub(crate) fn completion(&self, qpn: u32, status: WcStatus) -> Completion {
        let opcode = match self.wr.opcode {
            WrOpcode::Send | WrOpcode::SendImm | WrOpcode::SendInv => WcOpcode::Send,
            WrOpcode::Write | WrOpcode::WriteImm => WcOpcode::RdmaWrite,
            WrOpcode::Read => WcOpcode::RdmaRead,
            WrOpcode::CompareSwap => WcOpcode::CompSwap,
            WrOpcode::FetchAdd => WcOpcode::FetchAdd,
        };
        Completion {
            wr_id: self.wr.wr_id,
            status,
            opcode,
            byte_len: self.len,
            qpn,
            imm: None,
            invalidated_rkey: None,
            src_qp: None,
        }
    }
}

/// Requester state of one QP.
#[derive(Debug, Default)]
pub(crate) struct Requester {
    pub sq: VecDeque<SendWqe>,
    /// `sq[..n_started]` have PSN ranges.
    pub n_started: u32,
    /// Index in `sq` of the WQE `psn` belongs to (or of the next WQE to start).
    pub cursor: u32,
    /// Next PSN to transmit.
    pub psn: u32,
    /// One past the highest PSN ever transmitted.
    pub fresh_psn: u32,
    /// Oldest unacknowledged PSN.
    pub una: u32,
    pub retry_left: u8,
    pub rnr_left: u8,
    /// Started READs/atomics not yet completed.
    pub rd_atomic_inflight: u8,
    /// The go-back-N retry running from this PSN (no forward progress since it started).
    pub retry_from: OptPsn,
    /// The highest PSN a sequence NAK asked for since the running retry started (the NAK
    /// that started it, if one did); none when no retry runs or no NAK came since a timeout
    /// or implicit NAK started it. A NAK for this PSN or an earlier one while the retry runs
    /// is about a hole being repaired; a later one is a new hole.
    pub retry_nak: OptPsn,
    pub ack_deadline_ps: Deadline,
    pub rnr_deadline_ps: Deadline,
}

impl Requester {
    /// Forgets every WQE position and timer (the queue itself is drained by the caller).
    pub(crate) fn clear_progress(&mut self) {
        self.n_started = 0;
        self.cursor = 0;
        self.rd_atomic_inflight = 0;
        self.retry_from = OptPsn::NONE;
        self.retry_nak = OptPsn::NONE;
        self.ack_deadline_ps = Deadline::NONE;
        self.rnr_deadline_ps = Deadline::NONE;
        self.psn = self.fresh_psn;
        self.una = self.fresh_psn;
    }

    /// Index of the started WQE whose PSN range holds `psn`, or `n_started` if none does
    /// (`psn` at or past the end of the started ones). Binary search: started WQEs are in
    /// PSN order.
    pub(crate) fn locate(&self, psn: u32) -> u32 {
        let (mut lo, mut hi) = (0u32, self.n_started);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.sq.get(mid as usize) {
                Some(w) if psn_le(w.end_psn(), psn) => lo = mid + 1,
                _ => hi = mid,
            }
        }
        lo
    }

    /// Some PSN is sent and unacknowledged.
    pub(crate) fn outstanding(&self) -> bool {
        psn_lt(self.una, self.fresh_psn)
    }
}
