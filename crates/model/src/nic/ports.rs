//! The typed values that travel between the NIC's units: what a unit hands to the next and
//! what a waiting request continues with. A continuation says who waits for what (the QPC
//! of a scheduler visit, a prefetch nobody waits for, the context of a fetched WQE or of a
//! received frame, the MPT/MTT entry a translation lane needs), never bits inside an index.

use rnic_sim::TimePs;

use super::qp_table::QpHw;
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
    /// The WQE-cache FIFO it waits in (0: the shared one; see [`WqeAdmission::queue_of`]).
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

/// What a mechanism may say about the scheduler's WQE reads and the WQE FIFOs they fill
/// (TX isolation's separate WQE caching): the scheduler asks before each visit, the TX path
/// asks where a fetched WQE waits and says when it leaves; the mechanism keeps its own state.
/// The baseline (one shared FIFO) admits everything and pauses nothing.
pub trait WqeAdmission {
    /// Whether WQE reads pause for every QP now (coupled backpressure); counts the stall.
    fn pauses_all(&mut self) -> bool;
    /// How many of `k` (at least 1) WQEs of `qpn`, tagged `iso_tag`, may be read now: `k`,
    /// fewer, or 0 when the QP must wait (the mechanism parks it and wakes it later).
    fn admit(&mut self, qpn: u32, iso_tag: u32, k: u32) -> u32;
    /// The WQE FIFO a fetched WQE of the QP tagged `iso_tag` waits in (0: the shared one):
    /// WQEs go on to the transport in fetch order within their FIFO.
    fn queue_of(&self, iso_tag: u32) -> u32;
    /// Whether the WQEs of the QP tagged `iso_tag` are translated in a lane of their own
    /// ([`TransLane::TxLs`]) instead of behind every other fetched WQE.
    fn own_lane(&self, iso_tag: u32) -> bool;
    /// `n` WQEs of the QP tagged `iso_tag` left their FIFO (their first packet left, or they
    /// were refused or flushed): the parked QPs that may read again.
    fn left(&mut self, iso_tag: u32, n: u32) -> Vec<u32>;
    /// `qpn`, tagged `iso_tag`, has WQEs to read and is about to be activated (a doorbell,
    /// a completion): whether it must wait parked instead, behind the QPs parked before it,
    /// until [`WqeAdmission::left`] wakes them in turn (the mechanism parks it). Activated
    /// now, it would go ahead of them.
    fn hold(&mut self, _qpn: u32, _iso_tag: u32) -> bool {
        false
    }
}

/// What the TX route tells TX isolation beside its two hooks, and where it finds the
/// scheduler's [`WqeAdmission`] (the `Nic`'s `iso`): the waiting-time samples and per-tenant
/// bytes of the WQEs it hands to the transport and starts. Without a mechanism and with no
/// tenant but 0, each is a no-op or keeps a counter nobody reports.
pub trait TxIsolation {
    /// The scheduler's WQE admission.
    type Admission: WqeAdmission;
    /// The scheduler's WQE admission.
    fn admission(&mut self) -> &mut Self::Admission;
    /// A WQE of `qpn` that entered the NIC at `in_nic` and became ready at `ready` went to
    /// the transport at `now`.
    fn ready(&mut self, qpn: u32, in_nic: TimePs, ready: TimePs, now: TimePs);
    /// The first packet of `qpn`'s oldest ready WQE (the QP tagged `tag`) left at `now`.
    fn started(&mut self, qpn: u32, tag: u32, now: TimePs);
    /// `bytes` of first transmissions of `tenant` left.
    fn sent(&mut self, tenant: u16, bytes: u64);
    /// `qpn` went to error: how many of its ready WQEs will not start.
    fn forget(&mut self, qpn: u32) -> u32;
}

/// What a mechanism sees of the scheduling queue (resource prefetching mirrors it): each QP
/// pushed onto its tail and each pop from its head.
pub trait SchedQueueMirror {
    /// `qpn` was pushed onto the scheduling queue.
    fn pushed(&mut self, qpn: u32);
    /// The scheduling queue's head was popped.
    fn popped(&mut self);
}

/// A frame the TX engine sent, as its [`TxOrder`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentFrame {
    /// A request packet (not an ACK or a READ response).
    pub request: bool,
    /// Not the last packet of its message (a first or middle packet).
    pub mid: bool,
    /// A retransmission.
    pub resent: bool,
}

/// What the TX engine does with a QP after one of its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFrame {
    /// Serve the same QP next (run to completion, or its slice goes on).
    Stay,
    /// The order took the QP back: it has more to send.
    Queued,
    /// The QP has nothing more to send now: it leaves the engine's queue.
    Leave,
}

/// The order in which the TX engine serves QPs with something to send (TX isolation's
/// slicing execution serves LS QPs first and BS tenants in turns of slices; the baseline is
/// one FIFO of QPs, each message run to completion).
pub trait TxOrder {
    /// Queues `qpn`, tagged `iso_tag`, which is not queued.
    fn enlist(&mut self, qpn: u32, iso_tag: u32);
    /// The next QP to serve, if any.
    fn pop(&mut self) -> Option<u32>;
    /// When [`TxOrder::pop`] has none although QPs are queued: a queued QP whose next frame
    /// is a response (`responds`), which the order may serve although it holds the QP's
    /// requests back (slicing: a tenant waits for the QP of its unfinished WQE). A response
    /// starts no WQE, and the peer's requests wait for it.
    fn pop_response(&mut self, _responds: impl Fn(u32) -> bool) -> Option<u32> {
        None
    }
    /// No QP is queued.
    fn is_empty(&self) -> bool;
    /// `frame` of `qpn` (record `qp`) left: stay on it, or queue it again if `wants` (it
    /// has more to send; asked only when needed), or let it leave.
    fn after_frame(
        &mut self,
        qpn: u32,
        qp: &QpHw,
        frame: SentFrame,
        wants: impl FnOnce() -> bool,
    ) -> AfterFrame;
    /// `qpn`, tagged `iso_tag`, went to error: what the order keeps of its WQE goes.
    fn forget(&mut self, qpn: u32, iso_tag: u32);
    /// Whether a QP tagged `iso_tag`, in the middle of a message whose next packet's payload
    /// is not in yet, gives the engine up (slicing) instead of holding it (run to completion).
    fn yields_mid_message(&self, iso_tag: u32) -> bool;
    /// Whether resends after a timeout must go through this order: a sweep of every QP
    /// would pass it.
    fn orders_resends(&self) -> bool;
}
