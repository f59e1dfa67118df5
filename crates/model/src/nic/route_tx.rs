//! The NIC's transmit path, unit to unit: doorbell → scheduler → descriptor QPC request
//! (or latency hiding's overlapped read) → WQE fetch and decode → TX payload buffer →
//! translation → payload read → requester QPC request → transport → TX engine → port.

use rnic_sim::{ser_ps, TimePs};
use rnic_wire::Opcode;

use super::cx::NicCx;
use super::dma_arbiter::ReadSource;
use super::mech::cc::hook::CongestionControl;
use super::mech::csrna::latency_hiding::DescriptorPath;
use super::mech::prefetch::route as prefetch;
use super::ports::{AfterFrame, DmaToken, QpcCont, SentFrame, TxJob, TxOrder, WqeAdmission};
use super::qpc_manager::{Channel, QpcJob};
use super::scheduler::{Backpressure, SchedStep};
use super::translation::TransLane;
use super::Nic;
use crate::event::{CcEv, NicEv};

impl Nic {
    /// An SQ doorbell of `qpn` with producer index `pi` reaches the NIC at `now`.
    pub(crate) fn on_doorbell(&mut self, now: TimePs, qpn: u32, pi: u32, cx: &mut NicCx<'_>) {
        let t = self.host.doorbell.ring_sq(now);
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return;
        };
        super::doorbell::advance(&mut qp.sq_pi, pi);
        self.sched_activate(qpn, t, cx);
    }

    /// An RQ doorbell: fetch the new receive WQEs (one DMA read per `wqes_per_fetch`).
    pub(crate) fn on_doorbell_rq(&mut self, now: TimePs, qpn: u32, pi: u32, cx: &mut NicCx<'_>) {
        let per = self.p.nic.wqes_per_fetch;
        let wqe = self.p.nic.wqe_bytes;
        let t = self.host.doorbell.ring_rq(now);
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return;
        };
        super::doorbell::advance(&mut qp.rq_pi, pi);
        loop {
            let qp = &mut self.qps[qpn as usize];
            if qp.rq_pi == qp.rq_fetched {
                break;
            }
            let first = qp.rq_fetched;
            let to_wrap = qp.rq_mask + 1 - (first & qp.rq_mask);
            let k = qp.rq_pi.wrapping_sub(first).min(per).min(to_wrap);
            qp.rq_fetched = first.wrapping_add(k);
            let slot = self.host.rq_reads.insert((qpn, first, k));
            let len = u64::from(k) * wqe;
            self.mem
                .host_read(t, len, DmaToken::RqWqe(slot), ReadSource::Wqe, cx);
        }
    }

    /// Makes `qpn` active if it has WQEs to fetch, and starts the scheduler at `at`.
    pub(crate) fn sched_activate(&mut self, qpn: u32, at: TimePs, cx: &mut NicCx<'_>) {
        let max_out = self.p.nic.max_outstanding_wqes_per_qp;
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return;
        };
        if self.tx.sched.activate(qpn, qp, max_out) {
            cx.at(at, NicEv::Sched);
        }
        self.prefetch_poll(at, cx);
    }

    /// Resource prefetching's scheduler trigger at `now` ([`prefetch::poll`]).
    fn prefetch_poll(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        prefetch::poll(pf_parts!(self), &mut self.tx.sched.mirror, now, cx);
    }

    /// Wakes a paused scheduler if its backpressure may have cleared: its step is due at
    /// `now`, as an event or owed right after this one ([`super::sched_wake`]).
    pub(crate) fn sched_kick(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if self.tx.sched.kick() {
            super::sched_wake::wake(&mut self.tx.sched, now, cx);
        }
    }

    /// What holds the scheduler back now.
    fn backpressure(&self) -> Backpressure {
        Backpressure {
            qpc_accepting: self.mem.qpc.accepting(Channel::Descriptor),
            visits_in_flight: self.tx.fetch.visits.len(),
            wqes_buffered: self.tx.fetch.jobs.len(),
            tx_backlog: self.tx.engine.backlog,
            tx_buffered_bytes: self.tx.engine.buffered_bytes,
        }
    }

    /// One scheduler step at `now`: a visit reads its QP's WQEs once the descriptor path
    /// (the QPC first, or latency hiding's overlap) allows.
    pub(crate) fn on_sched(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        let bp = self.backpressure();
        let step = self.tx.sched.step(
            now,
            &mut self.qps,
            &bp,
            &self.p.nic,
            &mut self.iso.admission,
        );
        self.prefetch_poll(now, cx);
        let SchedStep::Visit {
            visit: v,
            at: t,
            again,
        } = step
        else {
            return;
        };
        let visit = self.tx.fetch.visits.insert(v);
        if again {
            cx.at(now + self.p.nic.sched_ps, NicEv::Sched);
        }
        let path = DescriptorPath::of(&self.p.nic);
        let (job, wqe_read_at) = path.request(v.qpn, visit, t);
        self.mem.qpc.submit(job);
        if let Some(at) = wqe_read_at {
            self.wqe_fetch_issue(visit, at, cx);
        }
        self.qpc_pump(now, cx);
    }

    /// Visit `visit` may read its WQEs from `at`.
    pub(crate) fn wqe_fetch_issue(&mut self, visit: u32, at: TimePs, cx: &mut NicCx<'_>) {
        let Some(v) = self.tx.fetch.visits.get(visit).copied() else {
            return;
        };
        if self.pf.is_on() && prefetch::prefetched_wqes(pf_parts!(self), visit, v, at, cx) {
            return;
        }
        let bytes = u64::from(v.n) * self.p.nic.wqe_bytes;
        self.mem
            .host_read(at, bytes, DmaToken::Wqe(visit), ReadSource::Wqe, cx);
    }

    /// The WQEs of `visit` are in the NIC: decode them and start their translation.
    pub(crate) fn on_wqes_fetched(&mut self, now: TimePs, visit: u32, cx: &mut NicCx<'_>) {
        if self.pf.visit_awaits_other_read(visit) {
            // The first of the visit's two reads (see `prefetch::prefetched_wqes`): wait for
            // the other.
            return;
        }
        let Some(v) = self.tx.fetch.visits.remove(visit) else {
            return;
        };
        let qp = self.qps[v.qpn as usize];
        let queue = self.iso.admission.queue_of(qp.iso_tag);
        let mut to_translate = std::mem::take(&mut self.scratch_trans);
        let cached = self.pf.visit_wqes(visit);
        let fit = self.tx.fetch.decode_visit(
            now,
            v,
            &qp,
            queue,
            &*cx.mem,
            &self.p.nic,
            &cached,
            &mut to_translate,
        );
        let lane = self.tx_lane(v.qpn);
        for tj in to_translate.drain(..) {
            self.mem.trans.submit(lane, tj);
        }
        self.scratch_trans = to_translate;
        self.qps[v.qpn as usize].chunk_wqes = fit;
        self.tx_buffer_pump(now, cx);
    }

    /// The translation lane of `qpn`'s WQEs: their own when the WQE admission says so (LS
    /// WQEs when TX isolation caches them separately).
    fn tx_lane(&self, qpn: u32) -> TransLane {
        let own = self
            .qps
            .get(qpn as usize)
            .is_some_and(|q| self.iso.admission.own_lane(q.iso_tag));
        if own {
            TransLane::TxLs
        } else {
            TransLane::Tx
        }
    }

    /// Starts the translation (and then the payload read) of waiting WQEs while the TX
    /// payload buffer has room; each reserves its payload, or one packet of a longer one.
    fn tx_buffer_admit(&mut self, now: TimePs) {
        let cap = self.p.nic.tx_buffer_bytes;
        while self.tx.engine.buffered_bytes < cap {
            let Some((qpn, mut tj)) = self.tx.fetch.next_awaiting_buffer() else {
                break;
            };
            let pmtu = u64::from(self.qps.get(qpn as usize).map_or(4096, |q| q.pmtu));
            // A message longer than the path MTU streams through the buffer packet by
            // packet: it holds at most one packet of it at a time.
            self.tx_buffer_reserve(qpn, tj.len.min(pmtu));
            tj.at = tj.at.max(now);
            let lane = self.tx_lane(qpn);
            self.mem.trans.submit(lane, tj);
        }
    }

    /// WQEs were decoded or bytes left the TX payload buffer at `now`: admit the waiting
    /// payload reads that fit, run translation, wake the scheduler.
    pub(crate) fn tx_buffer_pump(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        self.tx_buffer_admit(now);
        self.trans_pump(cx);
        self.sched_kick(now, cx);
    }

    /// Reserves `bytes` of the TX payload buffer for a payload read of `qpn`.
    fn tx_buffer_reserve(&mut self, qpn: u32, bytes: u64) {
        if let Some(qp) = self.qps.get_mut(qpn as usize) {
            self.tx.engine.reserve(&mut qp.tx_buffered_bytes, bytes);
        }
    }

    /// Releases up to `bytes` of `qpn`'s share of the TX payload buffer (sent, or never to
    /// be sent); `u64::MAX` releases all of it (the QP completed in error: the transport
    /// flushes what it had not sent). Returns whether anything was released.
    pub(crate) fn tx_buffer_release(&mut self, qpn: u32, bytes: u64) -> bool {
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return false;
        };
        self.tx.engine.release(&mut qp.tx_buffered_bytes, bytes)
    }

    /// Translation of a fetched WQE finished at `at`: read its payload, if any — whole
    /// (`fifo`), or as the next message of the QP's payload stream, the WQE going on once
    /// its first packet's bytes are in (`round_robin`).
    pub(crate) fn tx_job_translated(&mut self, job: u32, at: TimePs, cx: &mut NicCx<'_>) {
        let Some(j) = self.tx.fetch.jobs.get(job) else {
            return;
        };
        let qpn = j.qpn;
        let bytes = j.wqe.map_or(0, |w| w.payload_to_read());
        if bytes == 0 {
            cx.at(at, NicEv::TxJobReady { job });
            return;
        }
        self.tx.fetch.stats.payload_bytes += bytes;
        if self.streaming() {
            let pmtu = u64::from(self.qps.get(qpn as usize).map_or(4096, |q| q.pmtu));
            self.tx
                .streams
                .get_mut(qpn, false)
                .push(Some(job), bytes, bytes.min(pmtu), at);
            self.stream_fill(qpn, false, at, cx);
        } else {
            self.mem
                .host_read(at, bytes, DmaToken::Payload(job), ReadSource::Other, cx);
        }
    }

    /// Issues the requests `qpn`'s payload stream (`resp`: READ responses) has room for,
    /// none before `now`.
    pub(crate) fn stream_fill(&mut self, qpn: u32, resp: bool, now: TimePs, cx: &mut NicCx<'_>) {
        let ahead = self.p.nic.payload_read_ahead_bytes;
        let mrrs = self.p.pcie.mrrs_bytes;
        while let Some((at, len)) = self.tx.streams.get_mut(qpn, resp).next_request(ahead, mrrs) {
            let token = DmaToken::Chunk { qpn, resp };
            let source = ReadSource::Payload { qpn, resp };
            self.mem.host_read(at.max(now), len, token, source, cx);
        }
    }

    /// `len` bytes of `qpn`'s payload stream arrived at `now`: the WQE whose first packet
    /// is now complete goes on; the QP may transmit what it waited for.
    pub(crate) fn on_chunk(
        &mut self,
        now: TimePs,
        qpn: u32,
        resp: bool,
        len: u64,
        cx: &mut NicCx<'_>,
    ) {
        let s = self.tx.streams.get_mut(qpn, resp);
        let ready = s.arrive(len);
        // Only an arrival someone waits for wakes the TX engine: earlier wakes would
        // reorder its queue for nothing.
        let waited = std::mem::take(&mut s.waiting);
        if let Some(job) = ready {
            self.on_tx_job_ready(now, job, cx);
        }
        // Bytes dropped after a reset free read-ahead that no packet will: refill from them
        // (an arrival that counts leaves requested + unsent bytes unchanged: no new request).
        self.stream_fill(qpn, resp, now, cx);
        if waited && self.dev.qp_wants_transmit(qpn) {
            self.tx_enlist(qpn);
            self.tx_kick(now, cx);
        }
    }

    /// Whether `qpn`'s next frame is fresh payload whose bytes are not yet in the NIC; if
    /// so its stream is marked waited for.
    fn payload_gated(&mut self, qpn: u32) -> bool {
        if !self.streaming() {
            return false;
        }
        let Some(pk) = self.dev.peek_transmit_qp(qpn) else {
            return false;
        };
        if pk.payload_len == 0 || pk.is_retransmit {
            // Retransmissions read host memory again; modelled without their read.
            return false;
        }
        // READ responses, replays included: every accepted READ request was read again.
        let s = self.tx.streams.get_mut(qpn, pk.is_response);
        let gated = s.blocks(pk.payload_len);
        s.waiting |= gated;
        gated
    }

    /// The QP is in error: its payload streams and unstarted messages are forgotten; WQEs
    /// that waited for their payload go on at `now`, to be flushed by the transport.
    pub(crate) fn streams_reset(&mut self, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
        let mut waiting = self.tx.streams.get_mut(qpn, false).reset();
        waiting.extend(self.tx.streams.get_mut(qpn, true).reset());
        for job in waiting {
            cx.at(now, NicEv::TxJobReady { job });
        }
        self.tx.engine.forget(qpn);
        if let Some(qp) = self.qps.get(qpn as usize) {
            self.tx.engine.order.forget(qpn, qp.iso_tag);
        }
        let n = self.iso.forget(qpn);
        self.iso_left_fifo(qpn, n, now, cx);
    }

    /// `n` WQEs of `qpn` left their isolation FIFO without starting: QPs parked on it may
    /// read again.
    fn iso_left_fifo(&mut self, qpn: u32, n: u32, now: TimePs, cx: &mut NicCx<'_>) {
        let tag = self.qps.get(qpn as usize).map_or(0, |q| q.iso_tag);
        let parked = self.iso.admission.left(tag, n);
        self.iso_unpark(parked, now, cx);
    }

    /// Re-activates QPs that isolated backpressure parked.
    fn iso_unpark(&mut self, parked: Vec<u32>, now: TimePs, cx: &mut NicCx<'_>) {
        for q in parked {
            self.sched_activate(q, now, cx);
        }
    }

    /// The WQE `job` is ready (payload in the NIC): in fetch order, ready WQEs ask the QPC
    /// manager for their context on the requester channel (the requester builds the packet
    /// headers from it).
    pub(crate) fn on_tx_job_ready(&mut self, now: TimePs, job: u32, cx: &mut NicCx<'_>) {
        let mut submitted = false;
        for (head, qpn) in self.tx.fetch.release_ready(job, now) {
            self.mem.qpc.submit(QpcJob {
                qpn,
                channel: Channel::Requester,
                cont: QpcCont::TxJob(head),
                at: now,
            });
            submitted = true;
        }
        if submitted {
            self.qpc_pump(now, cx);
        }
    }

    /// The requester has the QPC of `job`: hand the WQE to the transport.
    pub(crate) fn on_tx_post(&mut self, now: TimePs, job: u32, cx: &mut NicCx<'_>) {
        let Some(j): Option<TxJob> = self.tx.fetch.jobs.remove(job) else {
            return;
        };
        let ok = match j.wqe {
            Some(w) => self.dev.post_send(j.qpn, w.to_send_wr()).is_ok(),
            None => false,
        };
        let flushed = ok && self.dev.qp_state(j.qpn) == Some(rnic_transport::QpState::Err);
        if !ok || flushed {
            // Refused, or accepted by a QP in error, which completes it at once with
            // WR_FLUSH_ERR: nothing of it will be sent.
            let unsent = j.wqe.map_or(0, |w| w.payload_to_read());
            let freed = self.tx_buffer_release(j.qpn, unsent);
            if !ok {
                self.tx.fetch.stats.post_errors += 1;
            }
            self.iso_left_fifo(j.qpn, 1, now, cx);
            if freed {
                self.tx_buffer_pump(now, cx);
            }
            if flushed {
                self.cq_collect(now, j.qpn, cx);
            }
            return;
        }
        self.tx.engine.backlog += 1;
        self.tx.engine.posted(j.qpn, j.decoded_at);
        self.iso.ready(j.qpn, j.decoded_at, j.ready_at, now);
        self.tx_enlist(j.qpn);
        self.tx_kick(now, cx);
        // The WQE left the WQE buffer: a paused scheduler may have room again.
        self.sched_kick(now, cx);
    }

    /// A frame of `qpn` with `payload` bytes left: its stream's read-ahead has room again.
    fn stream_sent(
        &mut self,
        qpn: u32,
        op: Opcode,
        payload: u32,
        is_retransmit: bool,
        now: TimePs,
        cx: &mut NicCx<'_>,
    ) {
        if !self.streaming() || payload == 0 {
            return;
        }
        let resp = is_read_response(op);
        if !resp && (!op.is_request() || is_retransmit) {
            return;
        }
        self.tx.streams.get_mut(qpn, resp).sent(u64::from(payload));
        self.stream_fill(qpn, resp, now, cx);
    }

    /// Whether `qpn`, waiting mid-message for its next packet's payload, gives the engine
    /// up instead of holding it (a BS QP under slicing execution).
    fn yields_mid_message(&self, qpn: u32) -> bool {
        self.qps
            .get(qpn as usize)
            .is_some_and(|q| self.tx.engine.order.yields_mid_message(q.iso_tag))
    }

    /// After a frame of `qpn` with opcode `op` (`resent`: a retransmission), the TX order
    /// decides: stay on its message, queue the QP again, or let it leave the queue.
    fn tx_after_packet(&mut self, qpn: u32, op: Opcode, resent: bool) {
        let Some(qp) = self.qps.get(qpn as usize) else {
            return;
        };
        let frame = SentFrame {
            request: op.is_request(),
            mid: op.is_first() || op.is_middle(),
            resent,
        };
        let dev = &self.dev;
        let after = self
            .tx
            .engine
            .order
            .after_frame(qpn, qp, frame, || dev.qp_wants_transmit(qpn));
        match after {
            AfterFrame::Stay => self.tx.engine.stay_on(qpn),
            AfterFrame::Queued => {}
            AfterFrame::Leave => {
                if let Some(qp) = self.qps.get_mut(qpn as usize) {
                    qp.in_tx = false;
                }
            }
        }
    }

    /// Whether `qpn`'s next frame, a request, must wait for its rate: the rate limiter's
    /// (`qp.rate_limit_gbps`) or congestion control's. `Some(wake)`: it waits, and `wake` is
    /// the event to schedule, if none is pending yet. Responses are never held.
    fn request_held(&mut self, qpn: u32, now: TimePs) -> Option<Option<(TimePs, NicEv)>> {
        let limited = self.tx.rate.on() || self.cc.is_on();
        let request = || {
            self.dev
                .peek_transmit_qp(qpn)
                .is_some_and(|p| !p.is_response)
        };
        if !(limited && request()) {
            return None;
        }
        if let Err((at, schedule)) = self.tx.rate.check(qpn, now) {
            return Some(schedule.then_some((at, NicEv::RateWake { qpn })));
        }
        match self.cc.may_send(qpn, now) {
            Ok(()) => None,
            Err((at, schedule)) => Some(schedule.then_some((at, NicEv::Cc(CcEv::Wake { qpn })))),
        }
    }

    /// Puts `qpn` in the TX engine's queue if it is not there.
    pub fn tx_enlist(&mut self, qpn: u32) {
        if let Some(qp) = self.qps.get_mut(qpn as usize) {
            let tag = qp.iso_tag;
            self.tx.engine.enlist(qpn, &mut qp.in_tx, tag);
        }
    }

    /// Makes sure the TX engine runs.
    pub(crate) fn tx_kick(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if let Some(at) = self.tx.engine.kick(now) {
            cx.at(at, NicEv::TxWake);
        }
    }

    /// The TX engine sends at most one frame at `now`.
    pub(crate) fn on_tx_wake(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        let np = &self.p.nic;
        let (msg_ps, pkt_ps, ack_ps) = (np.tx_msg_ps, np.tx_pkt_ps, np.ack_ps);
        // The 64-bit path of the same value: a paused port makes this run every pause
        // quantum, and the 128-bit division was 1 % of a fabric run.
        let slack = ser_ps(np.tx_port_slack_bytes, self.p.eth.mbps);
        self.tx.engine.wake_pending = false;
        let wake_at = self
            .tx
            .engine
            .unit
            .free_at()
            .max(cx.wire.port_free_at(cx.node, now).saturating_sub(slack));
        if wake_at > now {
            return self.tx.wait(now, wake_at, slack, cx);
        }
        let slot = cx.frames.alloc();
        let (meta, qpn_used) = loop {
            if self.tx.engine.sweep {
                match self
                    .dev
                    .poll_transmit(now, &*cx.mem, cx.frames.buf_mut(slot))
                {
                    Some(m) => break (m, None),
                    None => {
                        self.tx.engine.sweep = false;
                        continue;
                    }
                }
            }
            let Some((qpn, mid)) = self.tx.engine.next_qp() else {
                cx.frames.release(slot);
                return;
            };
            if self.payload_gated(qpn) {
                if mid && !self.yields_mid_message(qpn) {
                    // Run to completion: the engine waits for this message's next packet;
                    // its payload's arrival wakes it (`on_chunk`).
                    self.tx.engine.stay_on(qpn);
                    self.tx.engine.stats.payload_stalls += 1;
                    cx.frames.release(slot);
                    return;
                }
                // A response or message whose bytes are not in yet: the arrival re-enlists.
                if let Some(qp) = self.qps.get_mut(qpn as usize) {
                    qp.in_tx = false;
                }
                continue;
            }
            if let Some(wake) = self.request_held(qpn, now) {
                // The QP's rate: it waits, out of the queue, until it may send.
                if let Some(qp) = self.qps.get_mut(qpn as usize) {
                    qp.in_tx = false;
                }
                if let Some((at, ev)) = wake {
                    cx.at(at, ev);
                }
                continue;
            }
            match self
                .dev
                .poll_transmit_qp(qpn, now, &*cx.mem, cx.frames.buf_mut(slot))
            {
                Some(m) => break (m, Some(qpn)),
                None => {
                    if let Some(qp) = self.qps.get_mut(qpn as usize) {
                        qp.in_tx = false;
                    }
                }
            }
        };
        let op = meta.opcode;
        let starts = op.is_first() || op.is_only() || meta.starts_ooo_wqe;
        let cost = if matches!(
            op,
            Opcode::RcAck | Opcode::Cnp | Opcode::OooAck | Opcode::OooNak
        ) {
            self.tx.engine.stats.acks += 1;
            ack_ps
        } else if starts {
            msg_ps
        } else {
            pkt_ps
        };
        let done = self.tx.engine.unit.serve_for(now, cost);
        self.tx.engine.stats.frames += 1;
        if meta.is_retransmit {
            self.tx.engine.stats.retransmits += 1;
            if op.is_request() {
                let v = &mut self.tx.engine.retransmits_by_qpn;
                let q = meta.qpn as usize;
                if v.len() <= q {
                    crate::per_qp::grow_for(v, q, || 0);
                }
                v[q] += 1;
            }
        }
        if op.is_request() {
            // The limit is on the wire: the frame as the port serializes it.
            let wire = self.p.eth.wire_bytes(meta.frame_len as u64);
            self.tx.rate.charge(meta.qpn, wire, now);
            self.cc.sent(meta.qpn, wire, now);
        }
        let mut kick_sched = false;
        // A fresh request's payload leaves the TX buffer whichever way it was polled: the
        // sweep after a timeout also sends packets that were never sent before.
        let freed = op.is_request()
            && !meta.is_retransmit
            && meta.payload_len > 0
            && self.tx_buffer_release(meta.qpn, u64::from(meta.payload_len));
        self.stream_sent(meta.qpn, op, meta.payload_len, meta.is_retransmit, now, cx);
        if op.is_request() && !meta.is_retransmit && meta.payload_len > 0 {
            let t = self.qps.get(meta.qpn as usize).map_or(0, |q| q.tenant);
            self.iso.sent(t, u64::from(meta.payload_len));
        }
        if op.is_request() && starts && !meta.is_retransmit {
            self.tx.engine.started(meta.qpn, now);
            let tag = self.qps.get(meta.qpn as usize).map_or(0, |q| q.iso_tag);
            self.iso.started(meta.qpn, tag, now);
            self.iso_left_fifo(meta.qpn, 1, now, cx);
            self.tx.engine.stats.messages += 1;
            self.tx.engine.backlog = self.tx.engine.backlog.saturating_sub(1);
            kick_sched = true;
        }
        if let Some(qpn) = qpn_used {
            self.tx_after_packet(qpn, op, meta.is_retransmit);
        }
        if op.is_request() && !rnic_transport::ServiceType::Rc.carries(op) {
            // UC/UD: a WQE completes when its last packet is sent; its CQE goes out now.
            self.cq_collect(done, meta.qpn, cx);
        }
        let more = self.tx.engine.has_more();
        cx.send(slot, done);
        if more {
            self.tx.engine.wake_pending = true;
            cx.at(done, NicEv::TxWake);
        }
        if freed {
            self.tx_buffer_pump(now, cx);
        } else if kick_sched {
            self.sched_kick(now, cx);
        }
        self.arm_timer(now, cx);
    }

    /// The network wakes the parked TX engine at `now`, the first of its looks that sees a
    /// change of its pause: it looks as it did then.
    pub(crate) fn on_tx_look(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        let Some(end) = self.tx.engine.park.take() else {
            return;
        };
        self.tx.engine.stale_wakes.push(end);
        self.on_tx_wake(now, cx);
    }
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
