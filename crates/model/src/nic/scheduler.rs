//! The QP scheduler: round robin over active QPs (those with doorbelled WQEs not yet
//! fetched and room under `max_outstanding_wqes_per_qp`). One visit takes the QP's context
//! from the QPC manager (descriptor channel) and then fetches up to `wqes_per_fetch` WQEs in
//! one DMA read, as real NICs do; a QP with more work goes back to the tail.
//!
//! With latency hiding (csRNA §4.5, module [`super::mech::csrna::latency_hiding`]) the visit reads the
//! SQ address from the on-chip SQ address table instead and issues the WQE read at once.
//!
//! Chunk: a visit takes about `nic.chunk_bytes` of messages from its QP ("the WQEs
//! containing a certain amount of data", csRNA §4.1; the resource-prefetching paper's `chunk_size`), then the
//! QP goes back to the end of the round robin. The scheduler cannot see the sizes before the
//! WQEs are read, so each QP's scheduling-queue entry keeps how many messages of the size
//! its last visit saw fit in the chunk (`QpHw::chunk_wqes`, 1 byte) and the next visit reads
//! that many (at least 1, at most `wqes_per_fetch`; the first visit reads `wqes_per_fetch`).
//! Small messages therefore share one QPC access per visit among many WQEs, while from the
//! chunk size upwards every message costs a QPC access of its own (csRNA §5.3: "QPC
//! access is message granularity").
//!
//! Backpressure: the scheduler pauses while the descriptor channel's QPC requester cannot
//! take a request (FCFS: request FIFO full; non-blocking: no free index), while the WQE
//! buffer (`max_visits_in_flight × wqes_per_fetch` WQEs, fetched and not yet handed to the
//! transport) has no room for another visit, while
//! `max_visits_in_flight` WQE fetches are outstanding, while `tx_backlog_cap` fetched
//! messages wait for the TX engine, or while the TX payload buffer (`tx_buffer_bytes`,
//! [`super::tx_pipeline`]) is full.
//!
//! Mechanisms reach the scheduler through the seams of [`super::ports`], never as its
//! fields' types: TX isolation is a [`WqeAdmission`] (with separate WQE caching a visit to a
//! BS QP reads no more WQEs than its tenant's FIFO has room for; a full BS FIFO pauses the
//! scheduler (coupled backpressure) or parks that tenant's QPs while the others read
//! (isolated backpressure)); resource prefetching's prefetch queue is a [`SchedQueueMirror`].

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::ports::{SchedQueueMirror, Visit, WqeAdmission};
use super::qp_table::QpHw;
use super::unit::Unit;
use crate::params::NicParams;

/// Counters of the scheduler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SchedStats {
    /// QP visits (WQE fetches) made.
    pub visits: u64,
    /// WQEs fetched.
    pub wqes: u64,
    /// Times the scheduler paused for backpressure.
    pub stalls: u64,
}

/// What may hold the scheduler back, read from the units downstream of it.
#[derive(Debug, Clone, Copy)]
pub struct Backpressure {
    /// The descriptor channel's QPC requester can take a request.
    pub qpc_accepting: bool,
    /// Visits whose WQEs are being read.
    pub visits_in_flight: usize,
    /// Fetched WQEs not yet handed to the transport.
    pub wqes_buffered: usize,
    /// Messages handed to the transport and not yet started by the TX engine.
    pub tx_backlog: u32,
    /// Bytes in the TX payload buffer.
    pub tx_buffered_bytes: u64,
}

/// What one scheduler step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedStep {
    /// Backpressure: paused until [`Scheduler::kick`].
    Stalled,
    /// No QP has work.
    Idle,
    /// A visit, served by the scheduler's unit at `at`; `again`: more QPs wait, step again
    /// one initiation interval later.
    Visit {
        /// The visit.
        visit: Visit,
        /// When the scheduler's unit has served it, ps.
        at: TimePs,
        /// Step again after the initiation interval.
        again: bool,
    },
}

/// The round-robin scheduler.
#[derive(Debug)]
pub struct Scheduler<M> {
    ring: VecDeque<u32>,
    /// A `Sched` event is pending.
    pending: bool,
    /// Paused by backpressure; woken by [`Scheduler::kick`].
    stalled: bool,
    /// The pending step is owed right after the current event instead of being an event
    /// of its own (see [`super::sched_wake`]).
    pub owed: bool,
    /// The scheduler's unit (II per visit).
    pub unit: Unit,
    /// The mechanism mirroring this scheduling queue (resource prefetching's prefetch queue;
    /// disabled unless `nic.prefetch` has the scheduler trigger).
    pub mirror: M,
    /// Counters.
    pub stats: SchedStats,
}

impl<M: SchedQueueMirror + Default> Scheduler<M> {
    /// A scheduler whose unit serves a visit every `ii_ps`.
    pub fn new(ii_ps: TimePs) -> Self {
        Scheduler {
            ring: VecDeque::new(),
            pending: false,
            stalled: false,
            owed: false,
            unit: Unit::new(ii_ps),
            mirror: M::default(),
            stats: SchedStats::default(),
        }
    }

    /// Active QPs.
    pub fn active(&self) -> usize {
        self.ring.len()
    }

    /// Makes `qpn` active if it has WQEs to fetch; returns whether a step must be scheduled.
    pub fn activate(&mut self, qpn: u32, qp: &mut QpHw, max_out: u32) -> bool {
        if qp.active || qp.sq_pi == qp.sq_fetched || qp.outstanding >= max_out {
            return false;
        }
        qp.active = true;
        self.ring.push_back(qpn);
        self.mirror.pushed(qpn);
        if !self.pending && !self.stalled {
            self.pending = true;
            return true;
        }
        false
    }

    /// Wakes a paused scheduler; returns whether a step must be scheduled now.
    pub fn kick(&mut self) -> bool {
        if self.stalled && !self.pending {
            self.stalled = false;
            if !self.ring.is_empty() {
                self.pending = true;
                return true;
            }
        }
        false
    }

    /// One step at `now`: pauses under backpressure, else picks the next QP with work and
    /// takes about one chunk of its WQEs.
    pub fn step(
        &mut self,
        now: TimePs,
        qps: &mut [QpHw],
        bp: &Backpressure,
        p: &NicParams,
        admission: &mut impl WqeAdmission,
    ) -> SchedStep {
        let per = p.wqes_per_fetch;
        let max_visits = p.max_visits_in_flight as usize;
        self.pending = false;
        // The WQE buffer holds `max_visits_in_flight × wqes_per_fetch` WQEs, from the read
        // that brings them in until the requester hands them to the transport; a visit needs
        // room for its WQEs. (Without this bound nothing stops the fetch stage from running
        // ahead of a stalled requester and flooding the PCIe read tags with WQE and payload
        // reads, which then delay the QPC reads the requester waits for.)
        let buffered = bp.wqes_buffered + bp.visits_in_flight * per as usize;
        if !bp.qpc_accepting
            || bp.visits_in_flight >= max_visits
            || buffered + per as usize > max_visits * per as usize
            || bp.tx_backlog >= p.tx_backlog_cap
            || bp.tx_buffered_bytes >= p.tx_buffer_bytes
        {
            self.stalled = true;
            self.stats.stalls += 1;
            return SchedStep::Stalled;
        }
        if admission.pauses_all() {
            self.stalled = true;
            self.stats.stalls += 1;
            return SchedStep::Stalled;
        }
        loop {
            let Some(qpn) = self.ring.pop_front() else {
                return SchedStep::Idle;
            };
            self.mirror.popped();
            let qp = &mut qps[qpn as usize];
            let avail = qp.sq_pi.wrapping_sub(qp.sq_fetched);
            let room = p.max_outstanding_wqes_per_qp.saturating_sub(qp.outstanding);
            let to_wrap = qp.sq_mask + 1 - (qp.sq_fetched & qp.sq_mask);
            let chunk = if qp.chunk_wqes == 0 {
                per
            } else {
                u32::from(qp.chunk_wqes)
            };
            let mut k = avail.min(room).min(per).min(to_wrap).min(chunk);
            if k == 0 {
                qp.active = false;
                continue;
            }
            k = admission.admit(qpn, qp.iso_tag, k);
            if k == 0 {
                qp.active = false;
                continue;
            }
            let first = qp.sq_fetched;
            qp.sq_fetched = first.wrapping_add(k);
            qp.outstanding += k;
            let more = qp.sq_pi != qp.sq_fetched && qp.outstanding < p.max_outstanding_wqes_per_qp;
            if more {
                self.ring.push_back(qpn);
                self.mirror.pushed(qpn);
            } else {
                qp.active = false;
            }
            self.stats.visits += 1;
            self.stats.wqes += u64::from(k);
            let at = self.unit.serve(now);
            let again = !self.ring.is_empty();
            self.pending = again;
            return SchedStep::Visit {
                visit: Visit { qpn, first, n: k },
                at,
                again,
            };
        }
    }
}

impl<M> crate::stats::Report for Scheduler<M> {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.unit"), &self.unit.stats);
    }
}
