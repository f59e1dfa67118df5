//! The NIC's transmit path, unit to unit: doorbell → scheduler → descriptor QPC request
//! (or latency hiding's overlapped read) → WQE fetch and decode → TX payload buffer →
//! translation → payload read → requester QPC request → transport → TX engine → port.
//!
//! Each step is a function of the parts it needs ([`tx`], `nic/tx_path/route.rs`); here the
//! `Nic` only dispatches: it builds a step's parts ([`TxParts`], `tx_parts!`) and carries
//! out what the step asks of the rest of the NIC, in the step's order (the QPC manager's or
//! the TX payload buffer's pump, a QP's completions, the transport's timer).

use rnic_sim::TimePs;

use super::cx::NicCx;
use super::tx_path::route::{self as tx, TxParts};
use super::Nic;

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
    /// An SQ doorbell of `qpn` with producer index `pi` reaches the NIC at `now`: the
    /// doorbell unit rings, the QP becomes active ([`tx::on_doorbell`]).
    pub(crate) fn on_doorbell(&mut self, now: TimePs, qpn: u32, pi: u32, cx: &mut NicCx<'_>) {
        let t = self.host.doorbell.ring_sq(now);
        tx::on_doorbell(tx_parts!(self), t, qpn, pi, cx);
    }

    /// Makes `qpn` active if it has WQEs to fetch, and starts the scheduler at `at`
    /// ([`tx::sched_activate`]).
    pub(crate) fn sched_activate(&mut self, qpn: u32, at: TimePs, cx: &mut NicCx<'_>) {
        tx::sched_activate(&mut tx_parts!(self), qpn, at, cx);
    }

    /// Wakes a paused scheduler if its backpressure may have cleared ([`tx::sched_kick`]).
    pub(crate) fn sched_kick(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        tx::sched_kick(&mut self.tx, now, cx);
    }

    /// One scheduler step at `now` ([`tx::on_sched`]), then the QPC manager's pump if it
    /// asked for a context.
    pub(crate) fn on_sched(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if tx::on_sched(tx_parts!(self), now, cx) {
            self.qpc_pump(now, cx);
        }
    }

    /// Runs the scheduler step owed by the event just handled at `now`, if any
    /// (`nic/sched_wake.rs` says when a wake-up is owed instead of queued); called before
    /// the next event is popped.
    pub fn run_owed_step(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if std::mem::take(&mut self.tx.sched.owed) {
            self.on_sched(now, cx);
        }
    }

    /// Visit `visit` may read its WQEs from `at` ([`tx::wqe_fetch_issue`]).
    pub(crate) fn wqe_fetch_issue(&mut self, visit: u32, at: TimePs, cx: &mut NicCx<'_>) {
        tx::wqe_fetch_issue(tx_parts!(self), visit, at, cx);
    }

    /// The WQEs of `visit` are in the NIC: decode them and start their translation
    /// ([`tx::on_wqes_fetched`]), then the TX payload buffer's pump.
    pub(crate) fn on_wqes_fetched(&mut self, now: TimePs, visit: u32, cx: &mut NicCx<'_>) {
        let scratch = &mut self.scratch_trans;
        if tx::on_wqes_fetched(tx_parts!(self), scratch, now, visit, cx) {
            self.tx_buffer_pump(now, cx);
        }
    }

    /// WQEs were decoded or bytes left the TX payload buffer at `now`: admit the waiting
    /// payload reads that fit ([`tx::buffer_admit`]), run translation, wake the scheduler.
    pub(crate) fn tx_buffer_pump(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        tx::buffer_admit(tx_parts!(self), now);
        self.trans_pump(cx);
        self.sched_kick(now, cx);
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

    /// Queues `qpn` for the TX engine when its receive path, its timer or congestion
    /// control queued a frame: an acknowledgement goes ahead at the next packet boundary
    /// ([`tx::enlist_rx`]).
    pub fn tx_enlist_rx(&mut self, qpn: u32) {
        tx::enlist_rx(&mut self.tx, &mut self.qps, &self.dev, qpn);
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
