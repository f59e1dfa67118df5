//! The TX route's steps, unit to unit: an SQ doorbell (an RQ doorbell is the host
//! interface's, `HostIf::on_doorbell_rq`), the scheduler's step and its backpressure, the
//! descriptor path (the QPC first, or latency hiding's overlapped read), the WQE read (from
//! host memory or the prefetcher) and decode, the TX payload buffer's admission, the payload
//! read (whole, or as the QP's payload stream), the ready WQE's requester QPC request, the
//! hand-over to the transport, the TX engine's queue of QPs and its one frame per wake, the
//! buffer's releases and the scheduler's wake-ups, and TX isolation's hooks on that way (the
//! engine's order, the WQE FIFOs' admission, the waiting-time samples).
//!
//! Functions of the parts they need ([`TxParts`]: the transmit path, the memory path, the
//! transport, the QP table, the mechanisms' hooks and the parameters; a step that needs
//! less takes less) and `NicCx`, not methods of the `Nic`. What a step asks of the rest of
//! the NIC comes back as a value for the caller (`nic/route_tx.rs`) to route, in the order
//! the step would have done it: the QPC manager's pump ([`on_sched`], [`job_ready`]), the
//! TX payload buffer's pump ([`on_wqes_fetched`], [`Posted`], [`after_send`]: the buffer's
//! admission, [`buffer_admit`], then translation and a scheduler wake-up), a QP's
//! completions ([`Posted`], [`Sent`]), the transport's timer (after [`after_send`]).
//!
//! A module of its own beside the transmit path's stage, which it drives: it names the
//! memory path and the mechanisms' hooks, which the stage does not.

use rnic_sim::{ser_ps, TimePs};
use rnic_transport::Device;
use rnic_wire::Opcode;

use super::TxPath;
use crate::event::{CcEv, NicEv};
use crate::nic::cx::NicCx;
use crate::nic::dma_arbiter::ReadSource;
use crate::nic::doorbell;
use crate::nic::mech::cc::hook::{AnyCc, CongestionControl};
use crate::nic::mech::csrna::latency_hiding::DescriptorPath;
use crate::nic::mech::prefetch::hook::AnyPrefetch;
use crate::nic::mech::prefetch::route as prefetch;
use crate::nic::mem_path::MemPath;
use crate::nic::ports::{
    AfterFrame, DmaToken, QpcCont, SentFrame, TransCont, TxIsolation, TxJob, TxOrder, WqeAdmission,
};
use crate::nic::qp_table::QpHw;
use crate::nic::qpc_manager::{Channel, QpcJob};
use crate::nic::sched_wake;
use crate::nic::scheduler::{Backpressure, SchedStep};
use crate::nic::translation::{TransJob, TransLane};
use crate::params::ModelParams;

/// The parts of the NIC a step of the TX route works with, borrowed for that step. `I` is
/// TX isolation as the route sees it ([`TxIsolation`]), `O` the TX engine's order.
pub(crate) struct TxParts<'a, I, O> {
    /// Timing parameters.
    pub p: &'a ModelParams,
    /// The transport: the protocol state of this RNIC.
    pub dev: &'a mut Device,
    /// The transmit path: scheduler, WQE fetch, TX engine, rate limiter, payload streams.
    pub tx: &'a mut TxPath<O>,
    /// TX isolation: its WQE admission and waiting-time samples.
    pub iso: &'a mut I,
    /// Congestion control, behind its hook.
    pub cc: &'a mut AnyCc,
    /// Resource prefetching, behind its hook (its scheduler trigger).
    pub pf: &'a mut AnyPrefetch,
    /// The memory path: payload and WQE reads.
    pub mem: &'a mut MemPath,
    /// Per-QP state, indexed by QPN.
    pub qps: &'a mut [QpHw],
}

/// What handing a WQE to the transport ([`on_tx_post`]) asks of the NIC, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Posted {
    /// Bytes left the TX payload buffer: its pump runs (`Nic::tx_buffer_pump`).
    pub pump: bool,
    /// The QP is in error and completed the WQE at once: its completions are collected.
    pub collect: Option<u32>,
}

/// A frame the TX engine sent ([`on_tx_wake`]): the completions it asks the NIC to collect
/// first, then where the engine goes on ([`after_send`]).
#[derive(Debug)]
pub(crate) struct Sent {
    /// A UC/UD WQE completed with this frame: collect `(at, qpn)`'s completions.
    pub collect: Option<(TimePs, u32)>,
    /// The engine's next step (opaque to the NIC: it hands it back).
    pub then: AfterSend,
}

/// The TX engine's step after a frame, once the NIC collected what [`Sent`] asked.
#[derive(Debug)]
pub(crate) struct AfterSend {
    slot: u32,
    done: TimePs,
    freed: bool,
    kick_sched: bool,
}

/// An SQ doorbell of `qpn` with producer index `pi`, rung at `t` (the doorbell unit's
/// time): the QP becomes active.
#[inline]
pub(crate) fn on_doorbell<I: TxIsolation, O>(
    mut s: TxParts<'_, I, O>,
    t: TimePs,
    qpn: u32,
    pi: u32,
    cx: &mut NicCx<'_>,
) {
    let Some(qp) = s.qps.get_mut(qpn as usize) else {
        return;
    };
    doorbell::advance(&mut qp.sq_pi, pi);
    sched_activate(&mut s, qpn, t, cx);
}

/// Resource prefetching's scheduler trigger at `now` ([`prefetch::poll`]).
#[inline]
fn prefetch_poll<I, O>(s: &mut TxParts<'_, I, O>, now: TimePs, cx: &mut NicCx<'_>) {
    let parts = prefetch::Parts {
        pf: &mut *s.pf,
        mem: &mut *s.mem,
        qps: &*s.qps,
        p: s.p,
    };
    prefetch::poll(parts, &mut s.tx.sched.mirror, now, cx);
}

/// What holds the scheduler back now.
#[inline]
fn backpressure<O>(tx: &TxPath<O>, mem: &MemPath) -> Backpressure {
    Backpressure {
        qpc_accepting: mem.qpc.accepting(Channel::Descriptor),
        visits_in_flight: tx.fetch.visits.len(),
        wqes_buffered: tx.fetch.jobs.len(),
        tx_backlog: tx.engine.backlog,
        tx_buffered_bytes: tx.engine.buffered_bytes,
    }
}

/// One scheduler step at `now`: a visit reads its QP's WQEs once the descriptor path (the
/// QPC first, or latency hiding's overlap) allows. Returns whether it submitted a QPC
/// request: the NIC pumps the QPC manager then.
#[inline]
pub(crate) fn on_sched<I: TxIsolation, O>(
    mut s: TxParts<'_, I, O>,
    now: TimePs,
    cx: &mut NicCx<'_>,
) -> bool {
    let bp = backpressure(s.tx, s.mem);
    let step =
        s.tx.sched
            .step(now, s.qps, &bp, &s.p.nic, s.iso.admission());
    prefetch_poll(&mut s, now, cx);
    let SchedStep::Visit {
        visit: v,
        at: t,
        again,
    } = step
    else {
        return false;
    };
    let visit = s.tx.fetch.begin_visit(v);
    if again {
        cx.at(now + s.p.nic.sched_ps, NicEv::Sched);
    }
    let path = DescriptorPath::of(&s.p.nic);
    let (job, wqe_read_at) = path.request(v.qpn, visit, t);
    s.mem.qpc.submit(job);
    if let Some(at) = wqe_read_at {
        wqe_fetch_issue(s, visit, at, cx);
    }
    true
}

/// Visit `visit` may read its WQEs from `at`: from the prefetcher if it has them (or is
/// reading them), else from host memory.
#[inline]
pub(crate) fn wqe_fetch_issue<I, O>(
    s: TxParts<'_, I, O>,
    visit: u32,
    at: TimePs,
    cx: &mut NicCx<'_>,
) {
    let Some(v) = s.tx.fetch.visits.get(visit).copied() else {
        return;
    };
    if s.pf.is_on() {
        let parts = prefetch::Parts {
            pf: &mut *s.pf,
            mem: &mut *s.mem,
            qps: &*s.qps,
            p: s.p,
        };
        if prefetch::prefetched_wqes(parts, visit, v, at, cx) {
            return;
        }
    }
    let bytes = u64::from(v.n) * s.p.nic.wqe_bytes;
    s.mem
        .host_read(at, bytes, DmaToken::Wqe(visit), ReadSource::Wqe, cx);
}

/// The WQEs of `visit` are in the NIC at `now`: decode them (`scratch`: an empty buffer for
/// their translation jobs) and start their translation, once every earlier visit of its QP
/// is decoded (then any later one that waited for it follows). Returns whether it decoded a
/// visit: the NIC pumps the TX payload buffer then.
pub(crate) fn on_wqes_fetched<I: TxIsolation, O>(
    s: TxParts<'_, I, O>,
    scratch: &mut Vec<TransJob<TransCont>>,
    now: TimePs,
    visit: u32,
    cx: &mut NicCx<'_>,
) -> bool {
    if s.pf.visit_awaits_other_read(visit) {
        // The first of the visit's two reads (see `prefetch::prefetched_wqes`): wait for
        // the other.
        return false;
    }
    let Some(mut v) = s.tx.fetch.take_in_order(visit) else {
        return false;
    };
    let mut visit = visit;
    loop {
        let qp = s.qps[v.qpn as usize];
        let queue = s.iso.admission().queue_of(qp.iso_tag);
        let cached = s.pf.visit_wqes(visit);
        let fit =
            s.tx.fetch
                .decode_visit(now, v, &qp, queue, &*cx.mem, &s.p.nic, &cached, scratch);
        let lane = tx_lane(s.iso, s.qps, v.qpn);
        for tj in scratch.drain(..) {
            s.mem.trans.submit(lane, tj);
        }
        s.qps[v.qpn as usize].chunk_wqes = fit;
        // A later visit of the QP whose WQEs came in first decodes now, after this one.
        let Some(w) = s.tx.fetch.next_in_order(v.qpn) else {
            return true;
        };
        let Some(next) = s.tx.fetch.take_in_order(w) else {
            return true;
        };
        (visit, v) = (w, next);
    }
}

/// The translation lane of `qpn`'s WQEs: their own when the WQE admission says so (LS WQEs
/// when TX isolation caches them separately).
#[inline]
fn tx_lane<I: TxIsolation>(iso: &mut I, qps: &[QpHw], qpn: u32) -> TransLane {
    let own = qps
        .get(qpn as usize)
        .is_some_and(|q| iso.admission().own_lane(q.iso_tag));
    if own {
        TransLane::TxLs
    } else {
        TransLane::Tx
    }
}

/// Starts the translation (and then the payload read) of waiting WQEs at `now` while the TX
/// payload buffer has room; each reserves its payload, or one packet of a longer one. (The
/// NIC then runs translation and wakes the scheduler: the buffer's pump.)
pub(crate) fn buffer_admit<I: TxIsolation, O: TxOrder + Default>(
    s: TxParts<'_, I, O>,
    now: TimePs,
) {
    let cap = s.p.nic.tx_buffer_bytes;
    while s.tx.engine.buffered_bytes < cap {
        let Some((qpn, mut tj)) = s.tx.fetch.next_awaiting_buffer() else {
            break;
        };
        let pmtu = u64::from(s.qps.get(qpn as usize).map_or(4096, |q| q.pmtu));
        // A message longer than the path MTU streams through the buffer packet by packet:
        // it holds at most one packet of it at a time.
        if let Some(qp) = s.qps.get_mut(qpn as usize) {
            s.tx.engine
                .reserve(&mut qp.tx_buffered_bytes, tj.len.min(pmtu));
        }
        tj.at = tj.at.max(now);
        let lane = tx_lane(s.iso, s.qps, qpn);
        s.mem.trans.submit(lane, tj);
    }
}

/// `qpn` queued a frame: an acknowledgement goes ahead at the next packet boundary
/// ([`TxEngine::enlist_ack`]), anything else (a READ response, a request) waits in the TX
/// engine's queue.
///
/// [`TxEngine::enlist_ack`]: crate::nic::tx_pipeline::TxEngine::enlist_ack
#[inline]
pub(crate) fn enlist_rx<O: TxOrder + Default>(
    tx: &mut TxPath<O>,
    qps: &mut [QpHw],
    dev: &Device,
    qpn: u32,
) {
    if acknowledges(dev, qpn) {
        tx.engine.enlist_ack(qpn);
    } else {
        enlist(tx, qps, qpn);
    }
}

/// Whether `qpn`'s next frame is an acknowledgement: a response without payload (ACK, NAK,
/// atomic ACK), not a READ response.
#[inline]
fn acknowledges(dev: &Device, qpn: u32) -> bool {
    dev.peek_transmit_qp(qpn)
        .is_some_and(|p| p.is_response && p.payload_len == 0)
}

/// The first acknowledgement waiting ahead of the queue ([`TxEngine::enlist_ack`]), built
/// into `slot`. A QP whose acknowledgement the queue sent meanwhile, or that has nothing to
/// build, joins the queue as any other (never the acknowledgements again, or this would
/// spin).
///
/// [`TxEngine::enlist_ack`]: crate::nic::tx_pipeline::TxEngine::enlist_ack
fn poll_ack<I, O: TxOrder + Default>(
    s: &mut TxParts<'_, I, O>,
    slot: u32,
    now: TimePs,
    cx: &mut NicCx<'_>,
) -> Option<rnic_transport::TxMeta> {
    while let Some(qpn) = s.tx.engine.pop_ack() {
        if acknowledges(s.dev, qpn) {
            let buf = cx.frames.buf_mut(slot);
            if let Some(m) = s.dev.poll_transmit_qp(qpn, now, &*cx.mem, buf) {
                after_ack(s.tx, s.qps, s.dev, qpn);
                return Some(m);
            }
        }
        rejoin(s.tx, s.qps, s.dev, qpn);
    }
    None
}

/// After an acknowledgement of `qpn` went ahead: another one next goes ahead too (two
/// queued before the engine woke); otherwise the QP [`rejoin`]s the queue.
fn after_ack<O: TxOrder + Default>(tx: &mut TxPath<O>, qps: &mut [QpHw], dev: &Device, qpn: u32) {
    if acknowledges(dev, qpn) {
        tx.engine.enlist_ack(qpn);
    } else {
        rejoin(tx, qps, dev, qpn);
    }
}

/// A QP with more to send joins the TX engine's queue; one already there keeps its place
/// ([`enlist`] leaves it).
fn rejoin<O: TxOrder + Default>(tx: &mut TxPath<O>, qps: &mut [QpHw], dev: &Device, qpn: u32) {
    if dev.qp_wants_transmit(qpn) {
        enlist(tx, qps, qpn);
    }
}

/// Puts `qpn` in the TX engine's queue if it is not there.
#[inline]
pub(crate) fn enlist<O: TxOrder + Default>(tx: &mut TxPath<O>, qps: &mut [QpHw], qpn: u32) {
    if let Some(qp) = qps.get_mut(qpn as usize) {
        let tag = qp.iso_tag;
        tx.engine.enlist(qpn, &mut qp.in_tx, tag);
    }
}

/// Makes sure the TX engine runs.
#[inline]
pub(crate) fn kick<O: TxOrder + Default>(tx: &mut TxPath<O>, now: TimePs, cx: &mut NicCx<'_>) {
    if let Some(at) = tx.engine.kick(now) {
        cx.at(at, NicEv::TxWake);
    }
}

/// Wakes a paused scheduler if its backpressure may have cleared: its step is due at
/// `now`, as an event or owed right after this one ([`sched_wake`]).
#[inline]
pub(crate) fn sched_kick<O>(tx: &mut TxPath<O>, now: TimePs, cx: &mut NicCx<'_>) {
    if tx.sched.kick() {
        sched_wake::wake(&mut tx.sched, now, cx);
    }
}

/// Makes `qpn` active if it has WQEs to fetch, and starts the scheduler at `at`; resource
/// prefetching's scheduler trigger follows ([`prefetch::poll`]).
#[inline]
pub(crate) fn sched_activate<I: TxIsolation, O>(
    s: &mut TxParts<'_, I, O>,
    qpn: u32,
    at: TimePs,
    cx: &mut NicCx<'_>,
) {
    let max_out = s.p.nic.max_outstanding_wqes_per_qp;
    let Some(qp) = s.qps.get_mut(qpn as usize) else {
        return;
    };
    // A QP with WQEs to read whose FIFO is full waits its turn among the parked QPs.
    let wants = !qp.active && qp.sq_pi != qp.sq_fetched && qp.outstanding < max_out;
    let held = wants && s.iso.admission().hold(qpn, qp.iso_tag);
    if !held && s.tx.sched.activate(qpn, qp, max_out) {
        cx.at(at, NicEv::Sched);
    }
    prefetch_poll(s, at, cx);
}

/// `n` WQEs of `qpn` left their isolation FIFO without starting, or started: QPs parked on
/// it may read again.
fn iso_left_fifo<I: TxIsolation, O>(
    s: &mut TxParts<'_, I, O>,
    qpn: u32,
    n: u32,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    let tag = s.qps.get(qpn as usize).map_or(0, |q| q.iso_tag);
    let parked = s.iso.admission().left(tag, n);
    for q in parked {
        sched_activate(s, q, now, cx);
    }
}

/// Releases up to `bytes` of `qpn`'s share of the TX payload buffer (sent, or never to be
/// sent); `u64::MAX` releases all of it (the QP completed in error: the transport flushes
/// what it had not sent). Returns whether anything was released.
#[inline]
pub(crate) fn buffer_release<O: TxOrder + Default>(
    tx: &mut TxPath<O>,
    qps: &mut [QpHw],
    qpn: u32,
    bytes: u64,
) -> bool {
    let Some(qp) = qps.get_mut(qpn as usize) else {
        return false;
    };
    tx.engine.release(&mut qp.tx_buffered_bytes, bytes)
}

/// Translation of fetched WQE `job` finished at `at`: read its payload, if any — whole
/// (`fifo`), or as the next message of the QP's payload stream, the WQE going on once its
/// first packet's bytes are in (`round_robin`).
#[inline]
pub(crate) fn job_translated<O>(
    tx: &mut TxPath<O>,
    mem: &mut MemPath,
    qps: &[QpHw],
    p: &ModelParams,
    job: u32,
    at: TimePs,
    cx: &mut NicCx<'_>,
) {
    let Some(j) = tx.fetch.jobs.get(job) else {
        return;
    };
    let qpn = j.qpn;
    let bytes = j.wqe.map_or(0, |w| w.payload_to_read());
    if bytes == 0 {
        cx.at(at, NicEv::TxJobReady { job });
        return;
    }
    tx.fetch.stats.payload_bytes += bytes;
    if p.nic.dma_read_arbiter.streams_payload() {
        let pmtu = u64::from(qps.get(qpn as usize).map_or(4096, |q| q.pmtu));
        tx.streams
            .get_mut(qpn, false)
            .push(Some(job), bytes, bytes.min(pmtu), at);
        stream_fill(tx, mem, p, qpn, false, at, cx);
    } else {
        mem.host_read(at, bytes, DmaToken::Payload(job), ReadSource::Other, cx);
    }
}

/// Issues the requests `qpn`'s payload stream (`resp`: READ responses) has room for, none
/// before `now`.
pub(crate) fn stream_fill<O>(
    tx: &mut TxPath<O>,
    mem: &mut MemPath,
    p: &ModelParams,
    qpn: u32,
    resp: bool,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    let ahead = p.nic.payload_read_ahead_bytes;
    let mrrs = p.pcie.mrrs_bytes;
    while let Some((at, len)) = tx.streams.get_mut(qpn, resp).next_request(ahead, mrrs) {
        let token = DmaToken::Chunk { qpn, resp };
        let source = ReadSource::Payload { qpn, resp };
        mem.host_read(at.max(now), len, token, source, cx);
    }
}

/// `len` bytes of `qpn`'s payload stream (`resp`: READ responses) arrived: the WQE whose
/// first packet is now complete, if any (the NIC makes it ready first), and whether the
/// arrival was waited for (for [`after_chunk`]).
#[inline]
pub(crate) fn chunk_arrived<O>(
    tx: &mut TxPath<O>,
    qpn: u32,
    resp: bool,
    len: u64,
) -> (Option<u32>, bool) {
    let s = tx.streams.get_mut(qpn, resp);
    let ready = s.arrive(len);
    // Only an arrival someone waits for wakes the TX engine: earlier wakes would reorder
    // its queue for nothing.
    (ready, std::mem::take(&mut s.waiting))
}

/// After a chunk's arrival at `now` (and its ready WQE): the stream refills, and the QP
/// transmits what it `waited` for.
#[inline]
pub(crate) fn after_chunk<I, O: TxOrder + Default>(
    s: TxParts<'_, I, O>,
    qpn: u32,
    resp: bool,
    waited: bool,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    // Bytes dropped after a reset free read-ahead that no packet will: refill from them
    // (an arrival that counts leaves requested + unsent bytes unchanged: no new request).
    stream_fill(s.tx, s.mem, s.p, qpn, resp, now, cx);
    if waited && s.dev.qp_wants_transmit(qpn) {
        enlist(s.tx, s.qps, qpn);
        kick(s.tx, now, cx);
    }
}

/// Whether `qpn`'s next frame is fresh payload whose bytes are not yet in the NIC; if so
/// its stream is marked waited for.
fn payload_gated<O>(p: &ModelParams, dev: &Device, tx: &mut TxPath<O>, qpn: u32) -> bool {
    if !p.nic.dma_read_arbiter.streams_payload() {
        return false;
    }
    let Some(pk) = dev.peek_transmit_qp(qpn) else {
        return false;
    };
    if pk.payload_len == 0 || pk.is_retransmit {
        // Retransmissions read host memory again; modelled without waiting for their read.
        // A replayed READ response's bytes are read into its stream all the same (every
        // READ the responder queued, a duplicate's replay too: `route_rx::on_handle`) and
        // it counts as sent there; holding replays for them too made the lost READ
        // responses' recovery wait for the ACK timer more often (2026-12-02: `read-bw -s
        // 8192 -n 500 -q 2 --set net.impair.loss=0.01` timed out twice at seed 1), which
        // the requester's dedup of implicit NAKs during a retry cannot tell apart.
        return false;
    }
    // Fresh READ responses wait for their bytes.
    let s = tx.streams.get_mut(qpn, pk.is_response);
    let gated = s.blocks(pk.payload_len);
    s.waiting |= gated;
    gated
}

/// The QP is in error: its payload streams and unstarted messages are forgotten; WQEs that
/// waited for their payload go on at `now`, to be flushed by the transport.
pub(crate) fn streams_reset<I: TxIsolation, O: TxOrder + Default>(
    mut s: TxParts<'_, I, O>,
    qpn: u32,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    let mut waiting = s.tx.streams.get_mut(qpn, false).reset();
    waiting.extend(s.tx.streams.get_mut(qpn, true).reset());
    for job in waiting {
        cx.at(now, NicEv::TxJobReady { job });
    }
    s.tx.engine.forget(qpn);
    if let Some(qp) = s.qps.get(qpn as usize) {
        s.tx.engine.order.forget(qpn, qp.iso_tag);
    }
    let n = s.iso.forget(qpn);
    iso_left_fifo(&mut s, qpn, n, now, cx);
}

/// WQE `job` is ready (payload in the NIC) at `now`: in fetch order, ready WQEs ask the QPC
/// manager for their context on the requester channel (the requester builds the packet
/// headers from it). Returns whether any did: the NIC pumps the QPC manager then.
#[inline]
pub(crate) fn job_ready<O>(tx: &mut TxPath<O>, mem: &mut MemPath, job: u32, now: TimePs) -> bool {
    let mut submitted = false;
    for (head, qpn) in tx.fetch.release_ready(job, now) {
        mem.qpc.submit(QpcJob {
            qpn,
            channel: Channel::Requester,
            cont: QpcCont::TxJob(head),
            at: now,
        });
        submitted = true;
    }
    submitted
}

/// The requester has the QPC of `job` at `now`: hand the WQE to the transport.
#[inline]
pub(crate) fn on_tx_post<I: TxIsolation, O: TxOrder + Default>(
    mut s: TxParts<'_, I, O>,
    now: TimePs,
    job: u32,
    cx: &mut NicCx<'_>,
) -> Posted {
    let Some(j): Option<TxJob> = s.tx.fetch.jobs.remove(job) else {
        return Posted::default();
    };
    let ok = match j.wqe {
        Some(w) => s.dev.post_send(j.qpn, w.to_send_wr()).is_ok(),
        None => false,
    };
    let flushed = ok && s.dev.qp_state(j.qpn) == Some(rnic_transport::QpState::Err);
    if !ok || flushed {
        // Refused, or accepted by a QP in error, which completes it at once with
        // WR_FLUSH_ERR: nothing of it will be sent.
        let unsent = j.wqe.map_or(0, |w| w.payload_to_read());
        let freed = buffer_release(s.tx, s.qps, j.qpn, unsent);
        if !ok {
            s.tx.fetch.stats.post_errors += 1;
        }
        iso_left_fifo(&mut s, j.qpn, 1, now, cx);
        return Posted {
            pump: freed,
            collect: flushed.then_some(j.qpn),
        };
    }
    s.tx.engine.backlog += 1;
    s.tx.engine.posted(j.qpn, j.decoded_at);
    s.iso.ready(j.qpn, j.decoded_at, j.ready_at, now);
    enlist(s.tx, s.qps, j.qpn);
    kick(s.tx, now, cx);
    // The WQE left the WQE buffer: a paused scheduler may have room again.
    sched_kick(s.tx, now, cx);
    Posted::default()
}

/// A frame of `qpn` with `payload` bytes left: its stream's read-ahead has room again.
#[allow(clippy::too_many_arguments)]
fn stream_sent<I, O>(
    s: &mut TxParts<'_, I, O>,
    qpn: u32,
    op: Opcode,
    payload: u32,
    is_retransmit: bool,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    if !s.p.nic.dma_read_arbiter.streams_payload() || payload == 0 {
        return;
    }
    let resp = is_read_response(op);
    if !resp && (!op.is_request() || is_retransmit) {
        return;
    }
    s.tx.streams.get_mut(qpn, resp).sent(u64::from(payload));
    stream_fill(s.tx, s.mem, s.p, qpn, resp, now, cx);
}

/// Whether `qpn`, waiting mid-message for its next packet's payload, gives the engine up
/// instead of holding it (a BS QP under slicing execution).
fn yields_mid_message<O: TxOrder>(tx: &TxPath<O>, qps: &[QpHw], qpn: u32) -> bool {
    qps.get(qpn as usize)
        .is_some_and(|q| tx.engine.order.yields_mid_message(q.iso_tag))
}

/// After a frame of `qpn` with opcode `op` (`resent`: a retransmission), the TX order
/// decides: stay on its message, queue the QP again, or let it leave the queue.
fn after_packet<O: TxOrder + Default>(
    tx: &mut TxPath<O>,
    qps: &mut [QpHw],
    dev: &Device,
    qpn: u32,
    op: Opcode,
    resent: bool,
) {
    let Some(qp) = qps.get(qpn as usize) else {
        return;
    };
    let frame = SentFrame {
        request: op.is_request(),
        mid: op.is_first() || op.is_middle(),
        resent,
    };
    let after = tx
        .engine
        .order
        .after_frame(qpn, qp, frame, || dev.qp_wants_transmit(qpn));
    match after {
        AfterFrame::Stay => tx.engine.stay_on(qpn),
        AfterFrame::Queued => {}
        AfterFrame::Leave => {
            if let Some(qp) = qps.get_mut(qpn as usize) {
                qp.in_tx = false;
            }
        }
    }
}

/// Whether `qpn`'s next frame, a request, must wait for its rate: the rate limiter's
/// (`qp.rate_limit_gbps`) or congestion control's. `Some(wake)`: it waits, and `wake` is
/// the event to schedule, if none is pending yet. Responses are never held.
fn request_held<O>(
    tx: &mut TxPath<O>,
    cc: &mut AnyCc,
    dev: &Device,
    qpn: u32,
    now: TimePs,
) -> Option<Option<(TimePs, NicEv)>> {
    let limited = tx.rate.on() || cc.is_on();
    let request = || dev.peek_transmit_qp(qpn).is_some_and(|p| !p.is_response);
    if !(limited && request()) {
        return None;
    }
    if let Err((at, schedule)) = tx.rate.check(qpn, now) {
        return Some(schedule.then_some((at, NicEv::RateWake { qpn })));
    }
    match cc.may_send(qpn, now) {
        Ok(()) => None,
        Err((at, schedule)) => Some(schedule.then_some((at, NicEv::Cc(CcEv::Wake { qpn })))),
    }
}

/// The network wakes the parked TX engine, the first of its looks that sees a change of
/// its pause: whether it looks (as it did then, [`on_tx_wake`]).
#[inline]
pub(crate) fn look<O>(tx: &mut TxPath<O>) -> bool {
    let Some(end) = tx.engine.park.take() else {
        return false;
    };
    tx.engine.stale_wakes.push(end);
    true
}

/// Marks `qpn` out of the TX engine's queue.
#[inline]
fn leave_queue(qps: &mut [QpHw], qpn: u32) {
    if let Some(qp) = qps.get_mut(qpn as usize) {
        qp.in_tx = false;
    }
}

/// The TX engine sends at most one frame at `now`: the frame sent, what it asks of the
/// NIC and where the engine goes on ([`Sent`]), or nothing sent.
pub(crate) fn on_tx_wake<I: TxIsolation, O: TxOrder + Default>(
    mut s: TxParts<'_, I, O>,
    now: TimePs,
    cx: &mut NicCx<'_>,
) -> Option<Sent> {
    let np = &s.p.nic;
    let (msg_ps, pkt_ps, ack_ps) = (np.tx_msg_ps, np.tx_pkt_ps, np.ack_ps);
    // The 64-bit path of the same value: a paused port makes this run every pause
    // quantum, and the 128-bit division was 1 % of a fabric run.
    let slack = ser_ps(np.tx_port_slack_bytes, s.p.eth.mbps);
    s.tx.engine.wake_pending = false;
    let wake_at =
        s.tx.engine
            .unit
            .free_at()
            .max(cx.wire.port_free_at(cx.node, now).saturating_sub(slack));
    if wake_at > now {
        s.tx.wait(now, wake_at, slack, cx);
        return None;
    }
    let slot = cx.frames.alloc();
    let (meta, qpn_used) = loop {
        if s.tx.engine.sweep {
            match s.dev.poll_transmit(now, &*cx.mem, cx.frames.buf_mut(slot)) {
                Some(m) => break (m, None),
                None => {
                    s.tx.engine.sweep = false;
                    continue;
                }
            }
        }
        if let Some(m) = poll_ack(&mut s, slot, now, cx) {
            break (m, None);
        }
        let responds = |q| s.dev.peek_transmit_qp(q).is_some_and(|p| p.is_response);
        let Some((qpn, mid)) = s.tx.engine.next_qp(responds) else {
            cx.frames.release(slot);
            return None;
        };
        if payload_gated(s.p, s.dev, s.tx, qpn) {
            if mid && !yields_mid_message(s.tx, s.qps, qpn) {
                // Run to completion: the engine waits for this message's next packet;
                // its payload's arrival wakes it (`after_chunk`).
                s.tx.engine.stay_on(qpn);
                s.tx.engine.stats.payload_stalls += 1;
                cx.frames.release(slot);
                return None;
            }
            // A response or message whose bytes are not in yet: the arrival re-enlists.
            leave_queue(s.qps, qpn);
            continue;
        }
        if let Some(wake) = request_held(s.tx, s.cc, s.dev, qpn, now) {
            // The QP's rate: it waits, out of the queue, until it may send.
            leave_queue(s.qps, qpn);
            if let Some((at, ev)) = wake {
                cx.at(at, ev);
            }
            continue;
        }
        match s
            .dev
            .poll_transmit_qp(qpn, now, &*cx.mem, cx.frames.buf_mut(slot))
        {
            Some(m) => break (m, Some(qpn)),
            None => leave_queue(s.qps, qpn),
        }
    };
    let op = meta.opcode;
    let starts = op.is_first() || op.is_only() || meta.starts_ooo_wqe;
    let cost = if matches!(
        op,
        Opcode::RcAck | Opcode::Cnp | Opcode::OooAck | Opcode::OooNak
    ) {
        s.tx.engine.stats.acks += 1;
        ack_ps
    } else if starts {
        msg_ps
    } else {
        pkt_ps
    };
    let done = s.tx.engine.unit.serve_for(now, cost);
    s.tx.engine.stats.frames += 1;
    if meta.is_retransmit {
        s.tx.engine.stats.retransmits += 1;
        if op.is_request() {
            let v = &mut s.tx.engine.retransmits_by_qpn;
            let q = meta.qpn as usize;
            if v.len() <= q {
                crate::per_qp::grow_for(v, q, || 0);
            }
            v[q] += 1;
        }
    }
    if op.is_request() {
        // The limit is on the wire: the frame as the port serializes it.
        let wire = s.p.eth.wire_bytes(meta.frame_len as u64);
        s.tx.rate.charge(meta.qpn, wire, now);
        s.cc.sent(meta.qpn, wire, now);
    }
    let mut kick_sched = false;
    // A fresh request's payload leaves the TX buffer whichever way it was polled: the
    // sweep after a timeout also sends packets that were never sent before.
    let freed = op.is_request()
        && !meta.is_retransmit
        && meta.payload_len > 0
        && buffer_release(s.tx, s.qps, meta.qpn, u64::from(meta.payload_len));
    stream_sent(
        &mut s,
        meta.qpn,
        op,
        meta.payload_len,
        meta.is_retransmit,
        now,
        cx,
    );
    if op.is_request() && !meta.is_retransmit && meta.payload_len > 0 {
        let t = s.qps.get(meta.qpn as usize).map_or(0, |q| q.tenant);
        s.iso.sent(t, u64::from(meta.payload_len));
    }
    if op.is_request() && starts && !meta.is_retransmit {
        s.tx.engine.started(meta.qpn, now);
        let tag = s.qps.get(meta.qpn as usize).map_or(0, |q| q.iso_tag);
        s.iso.started(meta.qpn, tag, now);
        iso_left_fifo(&mut s, meta.qpn, 1, now, cx);
        s.tx.engine.stats.messages += 1;
        s.tx.engine.backlog = s.tx.engine.backlog.saturating_sub(1);
        kick_sched = true;
    }
    if let Some(qpn) = qpn_used {
        after_packet(s.tx, s.qps, s.dev, qpn, op, meta.is_retransmit);
    }
    // UC/UD: a WQE completes when its last packet is sent; its CQE goes out now.
    let collect = (op.is_request() && !rnic_transport::ServiceType::Rc.carries(op))
        .then_some((done, meta.qpn));
    Some(Sent {
        collect,
        then: AfterSend {
            slot,
            done,
            freed,
            kick_sched,
        },
    })
}

/// The TX engine goes on at `now` after frame `then` (its completions collected): the frame
/// goes to the port, the engine wakes again when it has more, the scheduler may read again.
/// Returns whether the frame freed TX payload buffer bytes: the NIC pumps the buffer then
/// (which wakes the scheduler), before it arms the transport's timer.
#[inline]
pub(crate) fn after_send<O: TxOrder + Default>(
    tx: &mut TxPath<O>,
    then: AfterSend,
    now: TimePs,
    cx: &mut NicCx<'_>,
) -> bool {
    let AfterSend {
        slot,
        done,
        freed,
        kick_sched,
    } = then;
    let more = tx.engine.has_more();
    cx.send(slot, done);
    if more {
        tx.engine.wake_pending = true;
        cx.at(done, NicEv::TxWake);
    }
    if !freed && kick_sched {
        sched_kick(tx, now, cx);
    }
    freed
}

/// A READ response packet, standard or out-of-order (its payload comes from the responder's
/// stream).
fn is_read_response(op: Opcode) -> bool {
    matches!(
        op,
        Opcode::RcReadResponseFirst
            | Opcode::RcReadResponseMiddle
            | Opcode::RcReadResponseLast
            | Opcode::RcReadResponseOnly
            | Opcode::OooReadResponse
    )
}
