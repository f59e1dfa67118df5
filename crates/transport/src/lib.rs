//! Sans-IO RoCEv2 transport: reliable connection (RC), and the unreliable services UC and
//! UD ([`service`], [`uc`], [`ud`]).
//!
//! One [`Device`] is the protocol state of one RNIC: protection domains, memory regions,
//! completion queues and queue pairs with their requester and responder state machines.
//! Like quinn-proto it owns no clock, socket or thread: the caller hands in time (`now_ps`,
//! picoseconds) and received frames ([`Device::handle_packet`]), and takes out frames
//! ([`Device::poll_transmit`]), completions ([`Device::poll_cq`]) and the next timer deadline
//! ([`Device::poll_timeout`] / [`Device::handle_timeout`]). Host memory is reached only
//! through the [`Memory`] trait, and only after the memory-region check of [`mr`] allowed the
//! exact byte range: a hostile but well-formed packet cannot touch anything outside a
//! registered region.
//!
//! # Behaviour
//! Linux rxe and the IB specification (IBA 1.4 chapter 9.7): cumulative coalesced ACKs with
//! MSN; one PSN-sequence-error NAK per gap and go-back-N resend from the NAKed PSN; RNR NAK
//! with the IB timer table; local ACK timeout 4.096 µs × 2^timeout; retry_cnt / rnr_retry
//! (7 = infinite) exhaustion completes with RetryExcErr / RnrRetryExcErr; READ responses and
//! atomic ACKs acknowledge earlier requests implicitly; duplicate READs are replayed and
//! duplicate atomics answered from a replay table, never executed twice; class C errors NAK
//! (invalid request 0x61, remote access 0x62, remote operational 0x63) and take both QPs to
//! ERR, flushing outstanding work requests with WrFlushErr. The AckReq and ACK coalescing
//! policies are documented in [`requester`] and [`responder`].
//!
//! # Seam for out-of-order reliability (ORNIC)
//! Each QP carries a [`ReliabilityMode`] (only `GoBackN` today). Two pieces are shaped for an
//! out-of-order mode: the requester regenerates any packet from `(WQE, PSN)` by re-reading
//! local memory (its send queue is searched by PSN), which is what selective retransmission
//! needs; and the responder places every payload through one function,
//! [`responder::placement_offset`] = `(psn - start_psn) × PMTU`, the ORNIC direct-write
//! equation. An out-of-order mode adds a receive bitmap and OTD loss detection beside the
//! in-order `ePSN` check, and NAKs that carry a bitmap block, without touching segmentation,
//! placement or the verbs.
//!
//! # Memory per QP
//! A QP is a few hundred bytes while idle (see the `qp_stays_small` test): queues are empty
//! `VecDeque`s, and the device keeps one deadline heap (lazy deletion, O(log n) per change)
//! and one transmit queue (round robin, O(1) amortized) for all QPs.

mod cq;
mod device;
mod error;
mod inline_sgl;
mod memory;
pub mod mr;
pub mod ooo;
mod op;
mod pd;
pub mod psn;
mod qp;
mod reliability;
pub mod requester;
pub mod responder;
pub mod service;
mod sgl;
mod srq;
mod stats;
pub mod timer;
pub mod uc;
pub mod ud;
mod unreliable_tx;
mod wr;

pub use cq::{Completion, CqId, WcOpcode, WcStatus};
pub use device::{Device, DeviceConfig, FIRST_QPN, MAX_QPN};
pub use error::{RxDrop, VerbsError};
pub use inline_sgl::Sgl;
pub use memory::Memory;
pub use mr::{Access, MrCheckError, MrKeys};
pub use op::packets_for;
pub use pd::PdId;
pub use qp::{AddressVector, QpAttr, QpInit, QpState, MAX_RD_ATOMIC};
pub use reliability::{OooParams, ReliabilityMode};
pub use responder::state::ReadBytes;
pub use service::ServiceType;
pub use srq::SrqId;
pub use stats::{DropCounts, NakCounts, TransportStats, UnreliableCounts};
pub use wr::{AtomicArgs, RecvWr, RemoteAddr, SendWr, Sge, WrOpcode};

use rnic_wire::Opcode;

/// What [`Device::poll_transmit`] put in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxMeta {
    pub qpn: u32,
    pub opcode: Opcode,
    pub psn: u32,
    pub payload_len: u32,
    /// Bytes written to the buffer (the whole frame without FCS).
    pub frame_len: usize,
    /// A request packet sent again, or a READ response / atomic ACK replayed for a duplicate.
    pub is_retransmit: bool,
    /// The first transmission of an out-of-order WRITE WQE's first packet: where such a WQE
    /// starts, which its opcode (FSpot/Spot) does not say. False for every other frame
    /// (a go-back-N message starts where its opcode is FIRST or ONLY).
    pub starts_ooo_wqe: bool,
}

/// What the next frame [`Device::poll_transmit_qp`] would build for a QP is, without
/// building it: a NIC that reads payload from host memory packet by packet asks this to
/// learn whether that payload is already in the NIC before it lets the QP transmit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxPeek {
    /// A queued response (ACK, NAK, READ response, atomic ACK), not a request.
    pub is_response: bool,
    /// Payload bytes the frame carries (0 for ACKs, READ requests, atomics).
    pub payload_len: u32,
    /// A request packet sent before (go-back-N) or a replayed READ response.
    pub is_retransmit: bool,
}
