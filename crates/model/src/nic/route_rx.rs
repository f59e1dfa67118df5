//! The NIC's receive path, unit to unit: RX parse → QPC (responder channel for requests,
//! requester channel for ACKs and responses) → translation of what the frame writes or
//! reads (`rx_translate.rs`: MPT + one MTT lookup per page; a RoCEv2 message on its first
//! packet, an out-of-order packet its own payload; nothing for an RC request the responder
//! will drop, `rx_sequence.rs`) → the transport's checks and data
//! placement (`handle_packet`) → payload DMA write, READ/atomic response data read, ACK
//! generation → CQ unit (CQE DMA write). All stages are in order, so the transport sees each
//! QP's packets in arrival order.

use rnic_sim::TimePs;
use rnic_wire::{peek_bth, peek_roce, Opcode};

use super::cx::NicCx;
use super::dma_arbiter::ReadSource;
use super::mech::cc::route as cc;
use super::ports::{DmaToken, QpcCont, TransCont};
use super::qpc_manager::{Channel, QpcJob};
use super::rx_pipeline::not_placed_count;
use super::rx_translate::{
    consumes_recv, is_ud_send, may_translate, rx_target, scatters_to_cqe, sgl_spans, RxSpan,
    RxTarget,
};
use super::translation::{TransJob, TransLane, Translation};
use super::Nic;
use crate::event::{CmEv, FramePool, HostEv, NicEv};
use crate::host::driver::encode_cqe;

impl Nic {
    /// A frame's last bit reaches the NIC at `now`.
    pub(crate) fn on_rx_arrive(&mut self, now: TimePs, frame: u32, cx: &mut NicCx<'_>) {
        cx.wire.received(cx.node, frame, now, cx.frames);
        let t = self.rx.pipe.unit.serve(now);
        let bytes = cx.frames.get(frame);
        let frame_bytes = bytes.len() as u64;
        let bth = peek_bth(bytes).ok();
        if bth.is_some_and(|b| b.dest_qp == rnic_wire::cm::GSI_QPN) {
            // A MAD to QP1: the host's connection manager takes it (host/cm).
            self.rx.pipe.stats.cm_mads += 1;
            cx.cm(t, CmEv::Mad { frame });
            return;
        }
        self.rx.pipe.stats.frames += 1;
        cc::on_arrival(&mut self.cc, &self.dev, t, frame, bth, cx);
        if let Some(b) = bth.filter(|b| b.opcode.has_payload()) {
            // Payload for host memory: it waits in the receive buffer until written.
            let plen = cx.frames.roce(frame).map_or(0, |h| h.payload_len as u64);
            let payload = host_write_bytes(b.opcode, plen);
            if !self.rx.buffer_admit(now, frame_bytes, payload, cx) {
                // Lost at the port: the sender's go-back-N resends it.
                cx.frames.release(frame);
                return;
            }
        }
        let known = match bth {
            Some(bth) if self.qps.get(bth.dest_qp as usize).is_some_and(|q| q.valid) => Some(bth),
            _ => None,
        };
        match known {
            Some(bth) => {
                let channel = if bth.opcode.is_request() {
                    Channel::Responder
                } else {
                    Channel::Requester
                };
                self.mem.qpc.submit(QpcJob {
                    qpn: bth.dest_qp,
                    channel,
                    cont: QpcCont::RxFrame(frame),
                    at: t,
                });
                self.qpc_pump(now, cx);
            }
            // Not ours to time: the transport parses, counts and drops it.
            None => cx.at(t, NicEv::RxHandle { frame }),
        }
    }

    /// The QPC of received frame `frame` is ready at `at`: translate what it will write or
    /// read, if anything ([`super::rx_translate`]: a RoCEv2 message once on its first
    /// packet, one span per element of a scatter list it lands in, an out-of-order packet
    /// its own payload's pages).
    pub(crate) fn rx_after_qpc(&mut self, frame: u32, at: TimePs, cx: &mut NicCx<'_>) {
        let bth = peek_bth(cx.frames.get(frame)).ok();
        // Receive WQEs the messages ahead of this frame will consume before it.
        let mut recvs_ahead = 0;
        if let Some(qp) = bth.and_then(|b| self.qps.get_mut(b.dest_qp as usize)) {
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
        let executes = bth.is_none_or(|b| self.rx.executes(&self.dev, b, dma_len));
        let bth = may.filter(|_| executes);
        let mut submitted = false;
        if let (Some(b), Some(h)) = (bth, headers) {
            let dev = &self.dev;
            let ooo_target = || dev.ooo_payload_target(b.dest_qp, b.opcode, b.psn);
            let inline_recv_bytes = self.p.host.inline_recv_bytes;
            let trans = &mut self.mem.trans;
            submitted = match rx_target(h, ooo_target, inline_recv_bytes) {
                Some(RxTarget::Span(span)) => {
                    submit_rx_spans(trans, std::iter::once(span), frame, at)
                }
                Some(RxTarget::RecvBuffer { len_bytes }) => {
                    dev.recv_target(b.dest_qp, recvs_ahead).is_some_and(|sgl| {
                        submit_rx_spans(trans, sgl_spans(sgl, len_bytes), frame, at)
                    })
                }
                Some(RxTarget::ReadBuffer) => dev
                    .read_response_target(b.dest_qp, b.psn)
                    .is_some_and(|(sgl, len_bytes)| {
                        submit_rx_spans(trans, sgl_spans(sgl, len_bytes), frame, at)
                    }),
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
            self.mem.trans.submit(TransLane::Rx, pass);
        }
        self.trans_pump(cx);
    }

    /// The transport handles received frame `frame` at `now`.
    pub(crate) fn on_rx_handle(&mut self, now: TimePs, frame: u32, cx: &mut NicCx<'_>) {
        let bth = peek_bth(cx.frames.get(frame)).ok();
        // The whole header chain only for what carries data or a target (not for ACKs).
        let full = bth.is_some_and(|b| b.opcode.has_payload() || b.opcode.has_reth());
        let read = full && cx.frames.roce(frame).is_ok();
        let frames: &FramePool = cx.frames;
        let headers = read.then(|| frames.remembered_roce(frame)).flatten();
        let bytes = frames.get(frame);
        if let Some(b) = bth.filter(|b| b.opcode.is_request()) {
            self.rx.sequence.handled(b.dest_qp, b.psn);
        }
        let before = not_placed_count(self.dev.stats());
        let res = self.dev.handle_packet(now, bytes, cx.mem);
        let placed = res.is_ok() && not_placed_count(self.dev.stats()) == before;
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
            if let Some(qp) = self.qps.get_mut(qpn as usize) {
                qp.rx_recvs_ahead = qp.rx_recvs_ahead.saturating_sub(1);
            }
        }
        if let (Some(h), true) = (headers, placed && plen > 0) {
            if let Some(payload) = bytes.get(h.payload_range()) {
                cx.observer
                    .placed(cx.node, qpn, h.bth.opcode, h.bth.psn, payload);
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
            self.rx.pipe.stats.dropped += 1;
        }
        let mut enlist = true;
        if let (Some(op), true) = (op, res.is_ok()) {
            match op {
                // An out-of-order READ request (ORNIC) reads its range from host memory
                // like a standard one before its responses leave.
                Opcode::RcReadRequest | Opcode::OooReadRequest
                    if self.streaming() && dma_len > 0 =>
                {
                    // The response data streams: each arrival lets the QP transmit what
                    // it covers.
                    enlist = false;
                    let s = self.tx.streams.get_mut(qpn, true);
                    s.push(None, dma_len, 0, now);
                    // The response waits for its data: the first arrival enlists the QP.
                    s.waiting = true;
                    self.stream_fill(qpn, true, now, cx);
                }
                Opcode::RcReadRequest | Opcode::OooReadRequest => {
                    enlist = false;
                    let token = DmaToken::ReadResp(qpn);
                    self.mem
                        .host_read(now, dma_len.max(1), token, ReadSource::Other, cx);
                }
                Opcode::RcCompareSwap | Opcode::RcFetchAdd => {
                    enlist = false;
                    self.mem.pcie.posted_write(now, 8);
                    let token = DmaToken::ReadResp(qpn);
                    self.mem.host_read(now, 8, token, ReadSource::Other, cx);
                }
                Opcode::RcAtomicAck => {
                    self.mem.pcie.posted_write(now, 8);
                }
                _ if scatters_to_cqe(op, plen, self.p.host.inline_recv_bytes) => {
                    // Scatter to CQE: the payload travels in the completion's write.
                    self.rx.pipe.stats.inline_recv_bytes += plen;
                }
                _ if plen > 0 || is_ud_send(op) => {
                    self.rx.pipe.stats.payload_bytes += plen;
                    let land = self.mem.pcie.posted_write(now, host_write_bytes(op, plen));
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
                    if self.host.watch_writes && is_write_end {
                        cx.host(land, HostEv::Landed { qpn });
                    }
                }
                _ => {}
            }
        }
        if enlist && op.is_some() && self.dev.qp_wants_transmit(qpn) {
            self.tx_enlist(qpn);
            self.tx_kick(now, cx);
        }
        if op.is_some() {
            self.cq_collect(now, qpn, cx);
        }
        self.arm_timer(now, cx);
    }

    /// Moves the completions of `qpn`'s CQs from the transport into CQEs at `now`.
    pub(crate) fn cq_collect(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let Some(core) = self.qps.get(qpn as usize).map(|q| q.core as usize) else {
            return;
        };
        let mut activate = std::mem::take(&mut self.scratch_qpns);
        let mut freed = false;
        for idx in [2 * core, 2 * core + 1] {
            let Some(ctx) = self.host.cq.ctxs.get(idx).copied() else {
                continue;
            };
            while let Some(c) = self.dev.poll_cq(ctx.id) {
                if c.status != rnic_transport::WcStatus::Success {
                    // The QP is in error: what it had not sent never will be.
                    if self.tx_buffer_release(c.qpn, u64::MAX) {
                        freed = true;
                    }
                    self.streams_reset(c.qpn, now, cx);
                    self.tx_kick(now, cx);
                }
                let Some(write) = self.host.cq.place(now, idx, &c, &*cx.mem) else {
                    continue;
                };
                let bytes = encode_cqe(&c, write.pass);
                rnic_transport::Memory::write(cx.mem, write.addr, &bytes);
                // The CQE goes over PCIe at its configured size (`nic.cqe_bytes`); the
                // ring keeps the driver's 64-byte encoding.
                let land = self.mem.pcie.posted_write(write.at, self.p.nic.cqe_bytes);
                if !matches!(
                    c.opcode,
                    rnic_transport::WcOpcode::Recv | rnic_transport::WcOpcode::RecvRdmaWithImm
                ) {
                    self.retire_finished(c.qpn);
                    activate.push(c.qpn);
                }
                cx.host(land, HostEv::CqeLanded { cq: idx as u32 });
            }
        }
        if freed {
            self.tx_buffer_pump(now, cx);
        }
        // Unsignaled WRs finish without a CQE (perftest -Q): they free their place too.
        if self.retire_finished(qpn) {
            activate.push(qpn);
        }
        for &a in &activate {
            // Room under max_outstanding_wqes_per_qp may reactivate the QP.
            self.sched_activate(a, now, cx);
        }
        activate.clear();
        self.scratch_qpns = activate;
    }

    /// Takes the send WRs the transport finished since the last look off `qpn`'s
    /// outstanding count; returns whether there were any.
    fn retire_finished(&mut self, qpn: u32) -> bool {
        let done = self.dev.sq_done(qpn);
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return false;
        };
        let d = done.saturating_sub(qp.sq_done_seen);
        qp.sq_done_seen = done;
        qp.outstanding = qp.outstanding.saturating_sub(d as u32);
        d > 0
    }
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
