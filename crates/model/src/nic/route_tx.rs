//! The NIC's transmit path, unit to unit: doorbell → scheduler → descriptor QPC request
//! (or latency hiding's overlapped read) → WQE fetch and decode → TX payload buffer →
//! translation → payload read → requester QPC request → transport → TX engine → port.

use rnic_sim::TimePs;

use super::cx::NicCx;
use super::dma_arbiter::ReadSource;
use super::mech::csrna::latency_hiding::DescriptorPath;
use super::mech::prefetch::route as prefetch;
use super::ports::{DmaToken, WqeAdmission};
use super::qpc_manager::Channel;
use super::scheduler::{Backpressure, SchedStep};
use super::translation::TransLane;
use super::tx_path::route::{self as tx, TxParts};
use super::Nic;
use crate::event::NicEv;

/// The parts of `$nic` (a `Nic`) the TX route's steps work with ([`TxParts`]), borrowed
/// field by field so that the caller may borrow its other fields beside them.
macro_rules! tx_parts {
    ($nic:ident) => {
        TxParts {
            p: &$nic.p,
            dev: &mut $nic.dev,
            tx: &mut $nic.tx,
            iso: &mut $nic.iso,
            cc: &mut $nic.cc,
            pf: &mut $nic.pf,
            mem: &mut $nic.mem,
            qps: &mut $nic.qps,
        }
    };
}

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

    /// Makes `qpn` active if it has WQEs to fetch, and starts the scheduler at `at`
    /// ([`tx::sched_activate`]).
    pub(crate) fn sched_activate(&mut self, qpn: u32, at: TimePs, cx: &mut NicCx<'_>) {
        tx::sched_activate(&mut tx_parts!(self), qpn, at, cx);
    }

    /// Resource prefetching's scheduler trigger at `now` ([`prefetch::poll`]).
    fn prefetch_poll(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        prefetch::poll(pf_parts!(self), &mut self.tx.sched.mirror, now, cx);
    }

    /// Wakes a paused scheduler if its backpressure may have cleared ([`tx::sched_kick`]).
    pub(crate) fn sched_kick(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        tx::sched_kick(&mut self.tx, now, cx);
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

    /// Releases up to `bytes` of `qpn`'s share of the TX payload buffer
    /// ([`tx::buffer_release`]); returns whether anything was released.
    pub(crate) fn tx_buffer_release(&mut self, qpn: u32, bytes: u64) -> bool {
        tx::buffer_release(&mut self.tx, &mut self.qps, qpn, bytes)
    }

    /// Translation of fetched WQE `job` finished at `at`: its payload read
    /// ([`tx::job_translated`]).
    pub(crate) fn tx_job_translated(&mut self, job: u32, at: TimePs, cx: &mut NicCx<'_>) {
        tx::job_translated(&mut self.tx, &mut self.mem, &self.qps, &self.p, job, at, cx);
    }

    /// Issues the requests `qpn`'s payload stream (`resp`: READ responses) has room for,
    /// none before `now` ([`tx::stream_fill`]).
    pub(crate) fn stream_fill(&mut self, qpn: u32, resp: bool, now: TimePs, cx: &mut NicCx<'_>) {
        tx::stream_fill(&mut self.tx, &mut self.mem, &self.p, qpn, resp, now, cx);
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
        let (ready, waited) = tx::chunk_arrived(&mut self.tx, qpn, resp, len);
        if let Some(job) = ready {
            self.on_tx_job_ready(now, job, cx);
        }
        tx::after_chunk(tx_parts!(self), qpn, resp, waited, now, cx);
    }

    /// The QP is in error: its payload streams and unstarted messages are forgotten
    /// ([`tx::streams_reset`]).
    pub(crate) fn streams_reset(&mut self, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
        tx::streams_reset(tx_parts!(self), qpn, now, cx);
    }

    /// WQE `job` is ready at `now`: its requester QPC request, then the QPC manager's pump
    /// ([`tx::job_ready`]).
    pub(crate) fn on_tx_job_ready(&mut self, now: TimePs, job: u32, cx: &mut NicCx<'_>) {
        if tx::job_ready(&mut self.tx, &mut self.mem, job, now) {
            self.qpc_pump(now, cx);
        }
    }

    /// The requester has the QPC of `job`: the WQE goes to the transport
    /// ([`tx::on_tx_post`]); a refused or flushed one frees its TX payload buffer bytes and
    /// completes.
    pub(crate) fn on_tx_post(&mut self, now: TimePs, job: u32, cx: &mut NicCx<'_>) {
        let posted = tx::on_tx_post(tx_parts!(self), now, job, cx);
        if posted.pump {
            self.tx_buffer_pump(now, cx);
        }
        if let Some(qpn) = posted.collect {
            self.cq_collect(now, qpn, cx);
        }
    }

    /// Puts `qpn` in the TX engine's queue if it is not there.
    pub fn tx_enlist(&mut self, qpn: u32) {
        tx::enlist(&mut self.tx, &mut self.qps, qpn);
    }

    /// Makes sure the TX engine runs.
    pub(crate) fn tx_kick(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        tx::kick(&mut self.tx, now, cx);
    }

    /// The TX engine sends at most one frame at `now` ([`tx::on_tx_wake`]); the NIC
    /// collects the completions it asks for, the engine goes on ([`tx::after_send`]), the
    /// TX payload buffer's pump runs if the frame freed bytes, and the transport's timer is
    /// armed.
    pub(crate) fn on_tx_wake(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        let Some(sent) = tx::on_tx_wake(tx_parts!(self), now, cx) else {
            return;
        };
        if let Some((at, qpn)) = sent.collect {
            self.cq_collect(at, qpn, cx);
        }
        if tx::after_send(&mut self.tx, sent.then, now, cx) {
            self.tx_buffer_pump(now, cx);
        }
        self.arm_timer(now, cx);
    }

    /// The network wakes the parked TX engine at `now`, the first of its looks that sees a
    /// change of its pause: it looks as it did then.
    pub(crate) fn on_tx_look(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if tx::look(&mut self.tx) {
            self.on_tx_wake(now, cx);
        }
    }
}
