//! The typed values that travel between the NIC's units: what a unit hands to the next and
//! what a waiting request continues with. A continuation says who waits for what (the QPC
//! of a scheduler visit, a prefetch nobody waits for, the context of a fetched WQE or of a
//! received frame, the MPT/MTT entry a translation lane needs), never bits inside an index.

use super::translation::{TransLane, TransRead};
use crate::host::driver::SqWqe;

/// One scheduler visit: `n` WQEs of `qpn` from SQ index `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visit {
    /// QPN.
    pub qpn: u32,
    /// First SQ index.
    pub first: u32,
    /// WQEs.
    pub n: u32,
}

/// A fetched WQE on its way to the transport.
#[derive(Debug, Clone)]
pub struct TxJob {
    /// QPN.
    pub qpn: u32,
    /// The decoded WQE (`None` if the bytes did not decode).
    pub wqe: Option<SqWqe>,
    /// Payload (if any) is in the NIC: all of it, or with streaming its first packet.
    pub ready: bool,
    /// When the WQE was decoded, ps.
    pub decoded_at: rnic_sim::TimePs,
    /// When it became ready (payload, or its first packet's, in the NIC), ps.
    pub ready_at: rnic_sim::TimePs,
    /// The WQE-cache FIFO it waits in (0: the shared one; see
    /// [`super::isolation::Isolation::queue_of`]).
    pub queue: u32,
}

/// Who waits for a QPC request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpcCont {
    /// The descriptor unit: scheduler visit `visit` reads its WQEs once the context is here.
    Visit(u32),
    /// A latency-hiding prefetch: the WQE read did not wait; nobody continues.
    Prefetch,
    /// The requester: fetched WQE `job` goes to the transport once its context is here.
    TxJob(u32),
    /// The requester or responder: received frame `frame` continues to translation.
    RxFrame(u32),
}

/// Who waits for a translation job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransCont {
    /// A fetched WQE (job slot).
    TxJob(u32),
    /// A received frame (frame slot).
    Rx(u32),
    /// One span of a received frame that translates several (the elements of a scatter
    /// list), before its last: nobody continues; the frame goes on with its last span's
    /// `Rx`, which the in-order lane finishes after this one.
    RxSpan,
}

/// What to do when a DMA read completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaToken {
    /// The QPC entry of a QPN, for the QPC manager.
    QpcFill(u32),
    /// The MPT entry or MTT lines a translation lane reads.
    TransFill {
        /// The lane that reads them.
        lane: TransLane,
        /// What was read.
        read: TransRead,
    },
    /// The WQEs of a scheduler visit.
    Wqe(u32),
    /// The payload of a fetched WQE.
    Payload(u32),
    /// Receive WQEs (slot in the NIC's receive-WQE reads).
    RqWqe(u32),
    /// READ response / atomic data of a QP is in the NIC: it may transmit.
    ReadResp(u32),
    /// A prefetch read (slot in the prefetcher's reads, [`super::mech::prefetch`]).
    Prefetch(u32),
    /// One request of a QP's payload stream (`resp`: its READ responses) arrived.
    Chunk {
        /// QPN.
        qpn: u32,
        /// The READ response stream.
        resp: bool,
    },
}

/// What a mechanism may say about the scheduler's WQE reads (TX isolation's WQE FIFOs): the
/// scheduler asks before each visit, and the mechanism keeps its own state.
pub trait WqeAdmission {
    /// Whether WQE reads pause for every QP now (coupled backpressure); counts the stall.
    fn pauses_all(&mut self) -> bool;
    /// How many of `k` (at least 1) WQEs of `qpn`, tagged `iso_tag`, may be read now: `k`,
    /// fewer, or 0 when the QP must wait (the mechanism parks it and wakes it later).
    fn admit(&mut self, qpn: u32, iso_tag: u32, k: u32) -> u32;
}

/// What a mechanism sees of the scheduling queue (resource prefetching mirrors it): each QP
/// pushed onto its tail and each pop from its head.
pub trait SchedQueueMirror {
    /// `qpn` was pushed onto the scheduling queue.
    fn pushed(&mut self, qpn: u32);
    /// The scheduling queue's head was popped.
    fn popped(&mut self);
}

/// The queue of BS QPs the TX engine serves between latency-sensitive ones (TX isolation's
/// slicing keeps it per tenant).
pub trait BsQueue {
    /// Enlists `qpn` of `tenant`.
    fn push(&mut self, qpn: u32, tenant: u16);
    /// The next QP to serve, if any.
    fn pop(&mut self) -> Option<u32>;
    /// No QP is enlisted.
    fn is_empty(&self) -> bool;
}
