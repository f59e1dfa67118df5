//! The NIC's receive path, unit to unit: RX parse → QPC (responder channel for requests,
//! requester channel for ACKs and responses) → translation of what the frame writes or
//! reads (`rx_translate.rs`: MPT + one MTT lookup per page; a RoCEv2 message on its first
//! packet, an out-of-order packet its own payload; nothing for an RC request the responder
//! will drop, `rx_sequence.rs`) → the transport's checks and data
//! placement (`handle_packet`) → payload DMA write, READ/atomic response data read, ACK
//! generation → CQ unit (CQE DMA write). All stages are in order, so the transport sees each
//! QP's packets in arrival order.
//!
//! Functions of the parts they need ([`Parts`]: the receive path, the memory path, the
//! transport, the QP table, the host interface and the parameters, borrowed for one step;
//! congestion control's hook or the TX path's payload streams where a step needs them) and
//! `NicCx`, not methods of the `Nic`, as resource prefetching's router is. What a step asks
//! of the rest of the NIC comes back as a value the `Nic` routes once the step is done: an
//! [`Ask`] (let the QPC manager or the translation unit work), a frame's [`Handled`] (a
//! READ response's stream to fill, a QP to enlist, CQs to collect), and from a [`CqRun`]
//! a QP whose completion is in error, before its CQE, so the order of events is that of a
//! call in place.

use rnic_sim::TimePs;
use rnic_transport::{Completion, Device};
use rnic_wire::{peek_bth, peek_roce, Opcode};

use super::cx::NicCx;
use super::dma_arbiter::ReadSource;
use super::host_if::HostIf;
use super::mech::cc::hook::AnyCc;
use super::mech::cc::route as cc;
use super::mem_path::MemPath;
use super::payload_stream::Streams;
use super::ports::{DmaToken, QpcCont, TransCont};
use super::qp_table::QpHw;
use super::qpc_manager::{Channel, QpcJob, QpcReady};
use super::rx_path::RxPath;
use super::rx_pipeline::not_placed_count;
use super::rx_translate::{
    consumes_recv, is_ud_send, may_translate, rx_target, scatters_to_cqe, sgl_spans, RxSpan,
    RxTarget,
};
use super::translation::{TransJob, TransLane, Translation};
use crate::event::{CmEv, FramePool, HostEv, NicEv};
use crate::host::driver::encode_cqe;
use crate::params::ModelParams;

/// The parts of the NIC a step of the receive route works with, borrowed for that step.
pub(crate) struct Parts<'a> {
    /// The receive path: RX parse, the receive buffer, the RC request sequence.
    pub rx: &'a mut RxPath,
    /// The memory path: PCIe, the QPC manager, translation and host reads.
    pub mem: &'a mut MemPath,
    /// The transport: the protocol state of this RNIC.
    pub dev: &'a mut Device,
    /// Per-QP state, indexed by QPN.
    pub qps: &'a mut [QpHw],
    /// The host interface: the CQ unit, whether WRITE payloads' landings are watched.
    pub host: &'a mut HostIf,
    /// Timing parameters.
    pub p: &'a ModelParams,
}

/// What a step of the receive route asks of the rest of the NIC once it is done.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// Nothing.
    Nothing,
    /// A frame's QPC lookup was submitted: the QPC manager serves what it can and its
    /// outputs go where they are waited for.
    QpcPump,
    /// A frame's place in the receive lane was submitted: the translation unit works and
    /// its outputs go on.
    TransPump,
}

/// What the transport's handling of a frame asks of the rest of the NIC, in this order,
/// before the NIC arms the transport's timer.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Handled {
    /// A READ request's response data streams ([`Streams`]): the responder stream of this
    /// QP reads what it may.
    pub fill: Option<u32>,
    /// This QP has something to transmit: the TX engine takes it up.
    pub enlist: Option<u32>,
    /// This QP's CQs may hold completions: they become CQEs ([`CqRun`]).
    pub collect: Option<u32>,
}

/// A frame's last bit reaches the NIC at `now`: parse, congestion control's look
/// ([`cc::on_arrival`]), the receive buffer, then the frame's QPC lookup (the NIC pumps the
/// QPC manager when asked) or, for a frame of no known QP, the transport's handling.
pub(crate) fn on_arrive(
    parts: Parts<'_>,
    cc: &mut AnyCc,
    now: TimePs,
    frame: u32,
    cx: &mut NicCx<'_>,
) -> Ask {
    cx.wire.received(cx.node, frame, now, cx.frames);
    let t = parts.rx.pipe.unit.serve(now);
    let bytes = cx.frames.get(frame);
    let frame_bytes = bytes.len() as u64;
    let bth = peek_bth(bytes).ok();
    if bth.is_some_and(|b| b.dest_qp == rnic_wire::cm::GSI_QPN) {
        // A MAD to QP1: the host's connection manager takes it (host/cm).
        parts.rx.pipe.stats.cm_mads += 1;
        cx.cm(t, CmEv::Mad { frame });
        return Ask::Nothing;
    }
    parts.rx.pipe.stats.frames += 1;
    cc::on_arrival(cc, parts.dev, t, frame, bth, cx);
    if let Some(b) = bth.filter(|b| b.opcode.has_payload()) {
        // Payload for host memory: it waits in the receive buffer until written.
        let plen = cx.frames.roce(frame).map_or(0, |h| h.payload_len as u64);
        let payload = host_write_bytes(b.opcode, plen);
        if !parts.rx.buffer_admit(now, frame_bytes, payload, cx) {
            // Lost at the port: the sender's go-back-N resends it.
            cx.frames.release(frame);
            return Ask::Nothing;
        }
    }
    let known = match bth {
        Some(bth) if parts.qps.get(bth.dest_qp as usize).is_some_and(|q| q.valid) => Some(bth),
        _ => None,
    };
    match known {
        Some(bth) => {
            let channel = if bth.opcode.is_request() {
                Channel::Responder
            } else {
                Channel::Requester
            };
            parts.mem.qpc.submit(QpcJob {
                qpn: bth.dest_qp,
                channel,
                cont: QpcCont::RxFrame(frame),
                at: t,
            });
            Ask::QpcPump
        }
        // Not ours to time: the transport parses, counts and drops it.
        None => {
            cx.at(t, NicEv::RxHandle { frame });
            Ask::Nothing
        }
    }
}

/// The QPC of received frame `frame` is ready at `at`: translate what it will write or
/// read, if anything ([`super::rx_translate`]: a RoCEv2 message once on its first
/// packet, one span per element of a scatter list it lands in, an out-of-order packet
/// its own payload's pages). The frame takes its place in the receive lane either way:
/// the NIC then lets the translation unit work ([`Ask::TransPump`]).
pub(crate) fn after_qpc(parts: Parts<'_>, frame: u32, at: TimePs, cx: &mut NicCx<'_>) -> Ask {
    let bth = peek_bth(cx.frames.get(frame)).ok();
    if let Some(b) = bth.filter(|&b| !parts.rx.wait.was_released(frame) && must_wait_in(&parts, b))
    {
        // Its receive WQE is on its way from host memory: it waits for it.
        parts.rx.wait.hold(b.dest_qp, frame);
        parts.rx.pipe.stats.recv_waits += 1;
        return Ask::Nothing;
    }
    // Receive WQEs the messages ahead of this frame will consume before it.
    let mut recvs_ahead = 0;
    if let Some(qp) = bth.and_then(|b| parts.qps.get_mut(b.dest_qp as usize)) {
        recvs_ahead = qp.rx_recvs_ahead;
        if bth.is_some_and(|b| consumes_recv(b.opcode)) {
            qp.rx_recvs_ahead += 1;
        }
    }
    // Parse the rest of the headers only for a frame that may need a translation.
    let may = bth.filter(|b| may_translate(b.opcode));
    let headers = may.and_then(|_| cx.frames.roce(frame).ok());
    // An RC request the responder will drop places nothing: no translation for it.
    let dma_len = headers.and_then(|h| h.reth).map_or(0, |r| r.dma_len);
    let dev: &Device = parts.dev;
    let executes = bth.is_none_or(|b| parts.rx.executes(dev, b, dma_len));
    let bth = may.filter(|_| executes);
    let trans = &mut parts.mem.trans;
    let mut submitted = false;
    if let (Some(b), Some(h)) = (bth, headers) {
        let ooo_target = || dev.ooo_payload_target(b.dest_qp, b.opcode, b.psn);
        let inline_recv_bytes = parts.p.host.inline_recv_bytes;
        submitted = match rx_target(h, ooo_target, inline_recv_bytes) {
            Some(RxTarget::Span(span)) => submit_rx_spans(trans, std::iter::once(span), frame, at),
            Some(RxTarget::RecvBuffer { len_bytes }) => dev
                .recv_target(b.dest_qp, recvs_ahead)
                .is_some_and(|sgl| submit_rx_spans(trans, sgl_spans(sgl, len_bytes), frame, at)),
            Some(RxTarget::ReadBuffer) => {
                dev.read_response_target(b.dest_qp, b.psn)
                    .is_some_and(|(sgl, len_bytes)| {
                        submit_rx_spans(trans, sgl_spans(sgl, len_bytes), frame, at)
                    })
            }
            None => false,
        };
    }
    if !submitted {
        // Nothing to translate: the frame keeps its place in the lane at no cost.
        let pass = TransJob {
            key: 0,
            va: 0,
            len: 0,
            needs: false,
            cont: TransCont::Rx(frame),
            at,
        };
        trans.submit(TransLane::Rx, pass);
    }
    Ask::TransPump
}

/// Whether request `b` waits for a receive WQE on its way
/// ([`super::rx_wait::RecvWait::must_wait`]).
#[inline]
fn must_wait_in(parts: &Parts<'_>, b: rnic_wire::BthRepr) -> bool {
    parts.rx.wait.must_wait(parts.qps, parts.dev, parts.host, b)
}

/// `k` receive WQEs of the RQ ring of QP `ring` landed and went to the transport
/// ([`super::rx_wait`]): the requests they release go back, in order, to the step they
/// waited before, as QPC answers ready `now` for the NIC to route ([`after_qpc`] through
/// the QPC route). Whether any went back.
pub(crate) fn on_rq_landed(
    parts: Parts<'_>,
    ring: u32,
    k: u32,
    now: TimePs,
    frames: &FramePool,
) -> bool {
    if let Some(q) = parts.qps.get_mut(ring as usize) {
        q.rq_landed = q.rq_landed.wrapping_add(k);
    }
    let (qps, dev, host) = (&*parts.qps, &*parts.dev, &*parts.host);
    let back = parts.rx.wait.release(ring, (qps, dev, host), frames);
    for &(qpn, frame) in &back {
        parts.mem.qpc_out.responses.push(QpcReady {
            req: QpcJob {
                qpn,
                channel: Channel::Responder,
                cont: QpcCont::RxFrame(frame),
                at: now,
            },
            ready_at: now,
            hit: false,
        });
    }
    !back.is_empty()
}

/// The transport handles received frame `frame` at `now`: its checks and data placement,
/// the payload's DMA write, a READ's or an atomic's read of its response data (into the TX
/// path's payload `streams` when they stream). What follows for the TX engine and the CQs
/// comes back as the frame's [`Handled`].
pub(crate) fn on_handle(
    parts: Parts<'_>,
    streams: &mut Streams,
    now: TimePs,
    frame: u32,
    cx: &mut NicCx<'_>,
) -> Handled {
    let bth = peek_bth(cx.frames.get(frame)).ok();
    // The whole header chain only for what carries data or a target (not for ACKs).
    let full = bth.is_some_and(|b| b.opcode.has_payload() || b.opcode.has_reth());
    let read = full && cx.frames.roce(frame).is_ok();
    let frames: &FramePool = cx.frames;
    let headers = read.then(|| frames.remembered_roce(frame)).flatten();
    let bytes = frames.get(frame);
    if let Some(b) = bth.filter(|b| b.opcode.is_request()) {
        parts.rx.sequence.handled(b.dest_qp, b.psn);
    }
    let before = not_placed_count(parts.dev.stats());
    let res = parts.dev.handle_packet(now, bytes, cx.mem);
    let placed = res.is_ok() && not_placed_count(parts.dev.stats()) == before;
    let plen = headers.map_or(0, |h| h.payload_len as u64);
    let dma_len = headers
        .and_then(|h| h.reth)
        .map_or(0, |r| u64::from(r.dma_len));
    let (op, qpn) = match bth {
        Some(b) => (Some(b.opcode), b.dest_qp),
        None => (None, 0),
    };
    if op.is_some_and(consumes_recv) {
        // Its receive WQE, if it takes one, is off the RQ now.
        if let Some(qp) = parts.qps.get_mut(qpn as usize) {
            qp.rx_recvs_ahead = qp.rx_recvs_ahead.saturating_sub(1);
        }
    }
    if let (Some(h), true) = (headers, placed && plen > 0) {
        if let Some(payload) = bytes.get(h.payload_range()) {
            cx.observer
                .placed(now, cx.node, qpn, h.bth.opcode, h.bth.psn, payload);
        }
    }
    if res.is_ok() && bth.is_some_and(|b| b.opcode == Opcode::RcAtomicAck) {
        // The AtomicAckETH ends the headers: the value as it travelled.
        if let Ok(h) = peek_roce(bytes) {
            let mut wire = [0u8; 8];
            if let Some(b) = bytes.get(h.payload_offset - 8..h.payload_offset) {
                wire.copy_from_slice(b);
            }
            cx.observer
                .atomic_returned(cx.node, qpn, h.bth.psn, wire, cx.mem);
        }
    }
    cx.frames.release(frame);
    if res.is_err() {
        parts.rx.pipe.stats.dropped += 1;
    }
    let mut handled = Handled::default();
    let mut enlist = true;
    let streaming = parts.p.nic.dma_read_arbiter.streams_payload();
    // The READ response data to read from host memory: what the responder queued, which
    // is nothing for a refused READ (an R_Key, length or state error: its NAK carries no
    // data) and the rest from the PSN asked for a replayed one; an OOO READ request that
    // was not refused queues its whole range.
    let mut read_len = None;
    if op == Some(Opcode::RcReadRequest) {
        let taken = parts.dev.take_read_bytes(qpn);
        // A duplicate READ made the responder abandon the responses queued from its PSN
        // on (the requester went back there), even when it then found no room for the
        // replay: their data, fetched or still to fetch, is for no packet, so the stream
        // forgets it before the replay's.
        if streaming && taken.abandoned > 0 {
            streams.get_mut(qpn, true).abandon(taken.abandoned);
        }
        read_len = taken.queued;
    } else if op == Some(Opcode::OooReadRequest) && res.is_ok() {
        read_len = Some(dma_len);
    }
    if let (Some(op), true) = (op, res.is_ok()) {
        match (op, read_len) {
            (_, Some(len)) if streaming && len > 0 => {
                // The response data streams: each arrival lets the QP transmit what
                // it covers.
                enlist = false;
                let s = streams.get_mut(qpn, true);
                s.push(None, len, 0, now);
                // The response waits for its data: the first arrival enlists the QP.
                s.waiting = true;
                handled.fill = Some(qpn);
            }
            (_, Some(len)) => {
                enlist = false;
                let token = DmaToken::ReadResp(qpn);
                parts
                    .mem
                    .host_read(now, len.max(1), token, ReadSource::Other, cx);
            }
            // A duplicate atomic is answered from the responder's replay table, and a
            // duplicate response or a NAKed request places nothing: none touches host
            // memory (until 2026-12-02 each was read and written as if placed).
            (Opcode::RcCompareSwap | Opcode::RcFetchAdd, _) if placed => {
                enlist = false;
                parts.mem.pcie.posted_write(now, 8);
                let token = DmaToken::ReadResp(qpn);
                parts.mem.host_read(now, 8, token, ReadSource::Other, cx);
            }
            (Opcode::RcAtomicAck, _) if placed => {
                parts.mem.pcie.posted_write(now, 8);
            }
            _ if placed && scatters_to_cqe(op, plen, parts.p.host.inline_recv_bytes) => {
                // Scatter to CQE: the payload travels in the completion's write.
                parts.rx.pipe.stats.inline_recv_bytes += plen;
            }
            _ if placed && (plen > 0 || is_ud_send(op)) => {
                parts.rx.pipe.stats.payload_bytes += plen;
                let land = parts.mem.pcie.posted_write(now, host_write_bytes(op, plen));
                let is_write_end = matches!(
                    op,
                    Opcode::RcWriteOnly
                        | Opcode::RcWriteLast
                        | Opcode::RcWriteOnlyImm
                        | Opcode::RcWriteLastImm
                        | Opcode::UcWriteOnly
                        | Opcode::UcWriteLast
                        | Opcode::UcWriteOnlyImm
                        | Opcode::UcWriteLastImm
                );
                if parts.host.watch_writes && is_write_end {
                    cx.host(land, HostEv::Landed { qpn });
                }
            }
            _ => {}
        }
    }
    if enlist && op.is_some() && parts.dev.qp_wants_transmit(qpn) {
        handled.enlist = Some(qpn);
    }
    if op.is_some() {
        handled.collect = Some(qpn);
    }
    handled
}

/// A collection of the completions in the CQs of a QP's core into CQEs, in steps
/// ([`CqRun::step`]): it stops before the CQE of a completion in error, for the NIC to stop
/// what that QP would still send, and the next step goes on with that completion.
#[derive(Debug)]
pub(crate) struct CqRun {
    /// The QP whose core's CQs are collected.
    qpn: u32,
    /// The next CQ to look at, of the core's two.
    idx: usize,
    /// One past the core's last CQ.
    end: usize,
    /// The completion in error the NIC was told of: its CQE is next.
    failed: Option<Completion>,
}

impl CqRun {
    /// A collection of the CQs of `qpn`'s core; none for a QP the NIC does not know.
    #[inline]
    pub(crate) fn new(qps: &[QpHw], qpn: u32) -> Option<CqRun> {
        let core = qps.get(qpn as usize)?.core as usize;
        Some(CqRun {
            qpn,
            idx: 2 * core,
            end: 2 * core + 2,
            failed: None,
        })
    }

    /// Moves completions from the transport into CQEs at `now` until the CQs are empty
    /// (`None`) or a completion is in error (its QP: the QP is in error, and what it had
    /// not sent never will be). A QP that finished send WRs goes on `activate` (room under
    /// `max_outstanding_wqes_per_qp` may reactivate it).
    pub(crate) fn step(
        &mut self,
        mut parts: Parts<'_>,
        activate: &mut Vec<u32>,
        now: TimePs,
        cx: &mut NicCx<'_>,
    ) -> Option<u32> {
        while self.idx < self.end {
            let idx = self.idx;
            if let Some(ctx) = parts.host.cq.ctxs.get(idx).copied() {
                loop {
                    let c = match self.failed.take() {
                        Some(c) => c,
                        None => {
                            let Some(c) = parts.dev.poll_cq(ctx.id) else {
                                break;
                            };
                            if c.status != rnic_transport::WcStatus::Success {
                                let qpn = c.qpn;
                                self.failed = Some(c);
                                return Some(qpn);
                            }
                            c
                        }
                    };
                    place_cqe(&mut parts, idx, &c, activate, now, cx);
                }
            }
            self.idx += 1;
        }
        None
    }

    /// The collection is over: unsignaled WRs finish without a CQE (perftest -Q), they free
    /// their place too (the QP goes on `activate`).
    #[inline]
    pub(crate) fn finish(self, dev: &Device, qps: &mut [QpHw], activate: &mut Vec<u32>) {
        if retire_finished(dev, qps, self.qpn) {
            activate.push(self.qpn);
        }
    }
}

/// Writes completion `c` of CQ `idx` as a CQE into its ring at `now`, if the ring has room.
fn place_cqe(
    parts: &mut Parts<'_>,
    idx: usize,
    c: &Completion,
    activate: &mut Vec<u32>,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    let Some(write) = parts.host.cq.place(now, idx, c, &*cx.mem) else {
        return;
    };
    let bytes = encode_cqe(c, write.pass);
    rnic_transport::Memory::write(cx.mem, write.addr, &bytes);
    // The CQE goes over PCIe at its configured size (`nic.cqe_bytes`); the ring keeps the
    // driver's 64-byte encoding.
    let land = parts.mem.pcie.posted_write(write.at, parts.p.nic.cqe_bytes);
    if !matches!(
        c.opcode,
        rnic_transport::WcOpcode::Recv | rnic_transport::WcOpcode::RecvRdmaWithImm
    ) {
        retire_finished(parts.dev, parts.qps, c.qpn);
        activate.push(c.qpn);
    }
    cx.host(land, HostEv::CqeLanded { cq: idx as u32 });
}

/// Takes the send WRs the transport `dev` finished since the last look off `qpn`'s
/// outstanding count; returns whether there were any.
fn retire_finished(dev: &Device, qps: &mut [QpHw], qpn: u32) -> bool {
    let done = dev.sq_done(qpn);
    let Some(qp) = qps.get_mut(qpn as usize) else {
        return false;
    };
    let d = done.saturating_sub(qp.sq_done_seen);
    qp.sq_done_seen = done;
    qp.outstanding = qp.outstanding.saturating_sub(d as u32);
    d > 0
}

/// Bytes the NIC writes to host memory for a packet of opcode `op` carrying `payload_len`
/// bytes: the payload, and before a UD SEND's payload the 40-byte GRH area its receive
/// buffer starts with.
fn host_write_bytes(op: Opcode, payload_len: u64) -> u64 {
    let grh = if is_ud_send(op) {
        rnic_transport::ud::GRH_BYTES as u64
    } else {
        0
    };
    payload_len + grh
}

/// Queues on the receive lane the spans of received frame `frame` at `at`, in order: the
/// last continues the frame, the others no one. Returns whether there was any span (a
/// frame without one still needs its place in the lane).
fn submit_rx_spans(
    trans: &mut Translation<TransCont>,
    spans: impl Iterator<Item = RxSpan>,
    frame: u32,
    at: TimePs,
) -> bool {
    let mut spans = spans.peekable();
    let mut any = false;
    while let Some(span) = spans.next() {
        let cont = if spans.peek().is_some() {
            TransCont::RxSpan
        } else {
            TransCont::Rx(frame)
        };
        trans.submit(
            TransLane::Rx,
            TransJob {
                key: span.key,
                va: span.va,
                len: span.len_bytes,
                needs: true,
                cont,
                at,
            },
        );
        any = true;
    }
    any
}
