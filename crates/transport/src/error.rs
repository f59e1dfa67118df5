//! Errors of the verbs (returned to the caller) and reasons a received packet was dropped.

use crate::cq::CqId;
use crate::pd::PdId;
use crate::qp::state::QpState;
use rnic_wire::{Opcode, WireError};
use thiserror::Error;

/// A verb was refused. Each variant names what was wrong and, for ranges, what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerbsError {
    #[error("unknown protection domain {0:?}")]
    UnknownPd(PdId),
    #[error("unknown completion queue {0:?}")]
    UnknownCq(CqId),
    #[error("unknown QP {0:#x}")]
    UnknownQp(u32),
    #[error("unknown shared receive queue {0:?}")]
    UnknownSrq(crate::SrqId),
    #[error("unknown memory key {0:#x}")]
    UnknownKey(u32),
    #[error("{attr} = {value} is out of range (allowed: {range})")]
    AttrOutOfRange {
        attr: &'static str,
        value: u64,
        range: &'static str,
    },
    #[error("modify_qp {from:?} -> {to:?} requires attribute {attr}")]
    MissingAttr {
        attr: &'static str,
        from: QpState,
        to: QpState,
    },
    #[error("modify_qp {from:?} -> {to:?} does not accept attribute {attr}")]
    AttrNotAllowed {
        attr: &'static str,
        from: QpState,
        to: QpState,
    },
    #[error("modify_qp: no transition {from:?} -> {to:?}")]
    InvalidTransition { from: QpState, to: QpState },
    #[error("{op} is not allowed in QP state {state:?}")]
    InvalidState { op: &'static str, state: QpState },
    #[error("{queue} queue is full ({depth} entries)")]
    QueueFull { queue: &'static str, depth: u32 },
    #[error("{given} scatter/gather elements, at most {max} allowed")]
    TooManySges { given: usize, max: u32 },
    #[error("message of {len} bytes is longer than the maximum {max}")]
    MessageTooLong { len: u64, max: u64 },
    #[error("invalid work request: {reason}")]
    InvalidWr { reason: &'static str },
    #[error("invalid memory region: {reason}")]
    InvalidMr { reason: &'static str },
    #[error("{op} is not carried by a {service} QP: it carries {carries}")]
    NotOnService {
        op: &'static str,
        service: &'static str,
        carries: &'static str,
    },
    #[error(
        "a UD message of {len} bytes exceeds the QP's path_mtu of {pmtu} bytes: a UD message \
         is one packet; send at most path_mtu bytes or raise path_mtu"
    )]
    UdMessageTooLong { len: u64, pmtu: u32 },
    #[error("no more {resource} (limit {max})")]
    ResourceExhausted { resource: &'static str, max: u64 },
}

/// Why `handle_packet` discarded a packet. Counted in [`crate::TransportStats::drops`]; never
/// fatal for the device. Protocol-normal events that still produce an answer (a duplicate
/// request that is re-ACKed, an RNR NAK) are not drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RxDrop {
    /// The frame failed to parse (headers, lengths, ICRC).
    #[error("malformed frame: {0}")]
    Malformed(#[from] WireError),
    /// The IPv4 destination is not this device.
    #[error("frame addressed to another device")]
    NotForThisDevice,
    /// An opcode of another service than the QP's (a UC opcode to an RC QP...), or a
    /// transport this device does not serve.
    #[error("unsupported opcode {0:?}")]
    UnsupportedOpcode(Opcode),
    /// No QP with this number.
    #[error("unknown destination QP {0:#x}")]
    UnknownQp(u32),
    /// The QP is in a state that does not accept this packet (RESET/INIT/ERR, or a response
    /// to a QP in RTR).
    #[error("QP state does not accept the packet")]
    BadQpState,
    /// The BTH P_Key does not match the QP's.
    #[error("P_Key {0:#06x} does not match the QP")]
    PkeyMismatch(u16),
    /// The source IP is not the QP's connected peer.
    #[error("source address is not the QP's peer")]
    AddressMismatch,
    /// A request ahead of the expected PSN (the first one of a gap was answered with a
    /// sequence-error NAK, the later ones are dropped silently).
    #[error("request PSN {psn:#x} ahead of expected {expected:#x}")]
    OutOfSequence { psn: u32, expected: u32 },
    /// A duplicate READ or atomic that is no longer in the replay table, or that does not
    /// match the original request.
    #[error("duplicate request PSN {0:#x} cannot be replayed")]
    DuplicateNotReplayable(u32),
    /// A READ was not queued: too many responses are, or (an out-of-order READ asked
    /// again) its range is queued and not begun, and will send the same bytes.
    #[error("responder queue full")]
    ResponderBusy,
    /// A response for PSNs already acknowledged (or a duplicate NAK).
    #[error("stale response PSN {0:#x}")]
    StaleResponse(u32),
    /// A response for a PSN never sent, or one that does not fit the outstanding request.
    #[error("unexpected response PSN {0:#x}")]
    UnexpectedResponse(u32),
    /// An out-of-order data packet not placed: its WQE's start address not yet known (a
    /// Spot before any FSpot), beyond the receive bitmap or the WQE, no bitmap block free, or
    /// a write outside the R_Key's region; the requester resends it.
    #[error("out-of-order packet PSN {0:#x} not placed")]
    OooNotPlaced(u32),
    /// A UD datagram whose DETH Q_Key is not the QP's.
    #[error("Q_Key {0:#010x} does not match the UD QP's")]
    QkeyMismatch(u32),
    /// A UC or UD packet discarded by design: the rest of a UC message after a lost packet
    /// or a refused one, a message with no receive posted, a UD datagram too long for the
    /// path MTU (counted in [`crate::TransportStats::unreliable`]).
    #[error("unreliable-service packet discarded: {0}")]
    UnreliableDiscard(&'static str),
}
