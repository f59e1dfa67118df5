//! The QP scheduler: round robin over active QPs (those with doorbelled WQEs not yet
//! fetched and room under `max_outstanding_wqes_per_qp`). One visit takes the QP's context
//! from the QPC manager (descriptor channel) and then fetches up to `wqes_per_fetch` WQEs in
//! one DMA read, as real NICs do; a QP with more work goes back to the tail.
//!
//! With latency hiding (seed 000 §4.5, module [`super::latency_hiding`]) the visit reads the
//! SQ address from the on-chip SQ address table instead and issues the WQE read at once.
//!
//! Chunk: a visit takes about `nic.chunk_bytes` of messages from its QP ("the WQEs
//! containing a certain amount of data", seed 000 §4.1; seed 002's `chunk_size`), then the
//! QP goes back to the end of the round robin. The scheduler cannot see the sizes before the
//! WQEs are read, so each QP's scheduling-queue entry keeps how many messages of the size
//! its last visit saw fit in the chunk (`QpHw::chunk_wqes`, 1 byte) and the next visit reads
//! that many (at least 1, at most `wqes_per_fetch`; the first visit reads `wqes_per_fetch`).
//! Small messages therefore share one QPC access per visit among many WQEs, while from the
//! chunk size upwards every message costs a QPC access of its own (seed 000 §5.3: "QPC
//! access is message granularity").
//!
//! Backpressure: the scheduler pauses while the descriptor channel's QPC requester cannot
//! take a request (FCFS: request FIFO full; non-blocking: no free index), while the WQE
//! buffer (`max_visits_in_flight × wqes_per_fetch` WQEs, fetched and not yet handed to the
//! transport) has no room for another visit, while
//! `max_visits_in_flight` WQE fetches are outstanding, while `tx_backlog_cap` fetched
//! messages wait for the TX engine, or while the TX payload buffer (`tx_buffer_bytes`,
//! [`super::tx_pipeline`]) is full.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::qpc_manager::Channel;
use super::wqe_fetch::Visit;
use crate::event::Ev;
use crate::world::World;

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

/// The round-robin scheduler.
#[derive(Debug, Default)]
pub struct Scheduler {
    ring: VecDeque<u32>,
    /// A `Sched` event is pending.
    pub pending: bool,
    /// Paused by backpressure; woken by `World::sched_kick`.
    pub stalled: bool,
    /// Counters.
    pub stats: SchedStats,
}

impl Scheduler {
    /// Active QPs.
    pub fn active(&self) -> usize {
        self.ring.len()
    }
}

impl World {
    /// Makes `qpn` active if it has WQEs to fetch, and starts the scheduler at `at`.
    pub(crate) fn sched_activate(&mut self, n: usize, qpn: u32, at: TimePs) {
        let max_out = self.p.nic.max_outstanding_wqes_per_qp;
        let nic = &mut self.nodes[n].nic;
        let Some(qp) = nic.qps.get_mut(qpn as usize) else {
            return;
        };
        if qp.active || qp.sq_pi == qp.sq_fetched || qp.outstanding >= max_out {
            return;
        }
        qp.active = true;
        nic.sched.ring.push_back(qpn);
        if !nic.sched.pending && !nic.sched.stalled {
            nic.sched.pending = true;
            self.q.push(at, Ev::Sched { node: n as u32 });
        }
    }

    /// Wakes a paused scheduler if its backpressure has cleared.
    pub(crate) fn sched_kick(&mut self, n: usize, now: TimePs) {
        let nic = &mut self.nodes[n].nic;
        if nic.sched.stalled && !nic.sched.pending {
            nic.sched.stalled = false;
            if !nic.sched.ring.is_empty() {
                nic.sched.pending = true;
                self.q.push(now, Ev::Sched { node: n as u32 });
            }
        }
    }

    /// One scheduler step at `now`.
    pub(crate) fn on_sched(&mut self, n: usize, now: TimePs) {
        let p = &self.p.nic;
        let (per, max_out, max_visits, backlog_cap, buffer_cap, sched_ps) = (
            p.wqes_per_fetch,
            p.max_outstanding_wqes_per_qp,
            p.max_visits_in_flight as usize,
            p.tx_backlog_cap,
            p.tx_buffer_bytes,
            p.sched_ps,
        );
        let (hiding, sq_table_ps) = (p.latency_hiding, p.sq_table_ps);
        let nic = &mut self.nodes[n].nic;
        nic.sched.pending = false;
        loop {
            // The WQE buffer holds `max_visits_in_flight × wqes_per_fetch` WQEs, from the
            // read that brings them in until the requester hands them to the transport; a
            // visit needs room for its WQEs. (Without this bound nothing stops the fetch
            // stage from running ahead of a stalled requester and flooding the PCIe read
            // tags with WQE and payload reads, which then delay the QPC reads the requester
            // waits for.)
            let buffered = nic.fetch.jobs.len() + nic.fetch.visits.len() * per as usize;
            if !nic.qpc.accepting(Channel::Descriptor)
                || nic.fetch.visits.len() >= max_visits
                || buffered + per as usize > max_visits * per as usize
                || nic.tx.backlog >= backlog_cap
                || nic.tx.buffered_bytes >= buffer_cap
            {
                nic.sched.stalled = true;
                nic.sched.stats.stalls += 1;
                return;
            }
            let Some(qpn) = nic.sched.ring.pop_front() else {
                return;
            };
            let qp = &mut nic.qps[qpn as usize];
            let avail = qp.sq_pi.wrapping_sub(qp.sq_fetched);
            let room = max_out.saturating_sub(qp.outstanding);
            let to_wrap = qp.sq_mask + 1 - (qp.sq_fetched & qp.sq_mask);
            let chunk = if qp.chunk_wqes == 0 {
                per
            } else {
                u32::from(qp.chunk_wqes)
            };
            let k = avail.min(room).min(per).min(to_wrap).min(chunk);
            if k == 0 {
                qp.active = false;
                continue;
            }
            let first = qp.sq_fetched;
            qp.sq_fetched = first.wrapping_add(k);
            qp.outstanding += k;
            let more = qp.sq_pi != qp.sq_fetched && qp.outstanding < max_out;
            if more {
                nic.sched.ring.push_back(qpn);
            } else {
                qp.active = false;
            }
            nic.sched.stats.visits += 1;
            nic.sched.stats.wqes += u64::from(k);
            let t = nic.sched_unit.serve(now);
            let visit = nic.fetch.visits.insert(Visit { qpn, first, n: k });
            if !nic.sched.ring.is_empty() {
                nic.sched.pending = true;
                self.q.push(now + sched_ps, Ev::Sched { node: n as u32 });
            }
            self.descriptor_qpc_request(n, qpn, visit, t, hiding, sq_table_ps);
            self.qpc_pump(n, now);
            return;
        }
    }
}
