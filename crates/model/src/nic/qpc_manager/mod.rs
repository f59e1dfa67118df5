//! The QPC manager: the one unit through which every pipeline stage reaches a QP context.
//!
//! The seam is the [`QpcManager`] trait: stages [`submit`](QpcManager::submit) a
//! [`QpcJob`] (QPN, channel, arrival time, and the [`QpcCont`] saying who waits for the
//! answer), the NIC [`pump`](QpcManager::pump)s the manager, performs the memory reads it
//! asks for ([`QpcAction`]), hands back each fill with [`on_fill`](QpcManager::on_fill),
//! and routes each [`QpcReady`] by its continuation. Inside the non-blocking manager a job
//! becomes the hardware request of [`csrna`](super::mech::csrna) ([`super::mech::csrna::QpcRequest`]: QPN,
//! channel, the requester's 8-bit index), the job itself waiting in the requester's SRAM.
//!
//! Implementations:
//! * [`fcfs::Fcfs`] — the baseline first-come-first-served manager of csRNA §3 (Fig. 2):
//!   requests are served strictly in arrival order, so one outstanding miss blocks every
//!   later request, hits included (head-of-line blocking).
//!
//! * [`NonBlocking`](super::mech::csrna::nonblocking::NonBlocking) — csRNA's non-blocking
//!   manager (§4.3–§4.4), in the paper's folder and named only by [`any`]: the clock-free
//!   [`csrna::NonBlockingQpcManager`](super::mech::csrna::NonBlockingQpcManager)
//!   stepped once per manager cycle, behind three non-blocking QPC requesters of `ooo_cap`
//!   indices each. Requests of different QPs overtake a miss; requests of one QP never do.
//!
//! csRNA's latency-hiding QPC scheduling (§4.5) needs nothing more from the managers: the
//! scheduler issues the WQE read without waiting for the descriptor channel's response, so
//! that request acts as a prefetch overlapping the WQE read (see
//! [`super::mech::csrna::latency_hiding`]).

pub mod any;
pub mod fcfs;

use rnic_sim::TimePs;

pub use super::mech::csrna::Channel;
use super::ports::QpcCont;
use super::qpc_cache::{CacheStats, QpcCache};

/// A pipeline stage's request for one QP context, with who waits for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpcJob {
    /// Queue pair number.
    pub qpn: u32,
    /// Requesting stage (csRNA's three QPC requesters).
    pub channel: Channel,
    /// Who continues once the context is here.
    pub cont: QpcCont,
    /// Time the request reaches the manager, ps.
    pub at: TimePs,
}

/// A served job: the QPC is available to the requester from `ready_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QpcReady {
    /// The job.
    pub req: QpcJob,
    /// When the context is handed to the requester, ps.
    pub ready_at: TimePs,
    /// Whether the lookup hit the cache.
    pub hit: bool,
}

/// A memory operation the manager asks the NIC to perform on the QPC backing store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpcAction {
    /// Read the entry of `qpn`; call [`QpcManager::on_fill`] when it arrives.
    Fetch {
        /// QPN to read.
        qpn: u32,
        /// Issue time, ps.
        at: TimePs,
    },
    /// Write the (dirty, evicted) entry of `qpn` back; nothing waits on it.
    WriteBack {
        /// QPN written back.
        qpn: u32,
        /// Issue time, ps.
        at: TimePs,
    },
}

/// Buffers the manager writes into (reused, never reallocated on the hot path).
#[derive(Debug, Default)]
pub struct QpcOutputs {
    /// Served requests, in the order served.
    pub responses: Vec<QpcReady>,
    /// Memory operations to perform.
    pub actions: Vec<QpcAction>,
}

/// Statistics every manager reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct QpcManagerStats {
    /// Requests submitted.
    pub requests: u64,
    /// Requests served.
    pub served: u64,
    /// Total time the manager was blocked by an outstanding miss, ps.
    pub blocked_ps: u64,
    /// Largest number of requests queued at once.
    pub max_queued: u64,
    /// The cache's counters.
    pub cache: CacheStats,
    /// Requests that found no free requester index and waited for one (non-blocking
    /// requesters: the unit stalls).
    pub index_stalls: u64,
}

/// The seam between the pipeline stages and QPC management.
pub trait QpcManager {
    /// Queues a job.
    fn submit(&mut self, req: QpcJob);
    /// Requests queued and not yet served, from `channel`.
    fn queued(&self, channel: Channel) -> u32;
    /// Whether `channel`'s requester can take another request without stalling (FCFS: its
    /// request FIFO has room; non-blocking: its index FIFO has a free index).
    fn accepting(&self, channel: Channel) -> bool;

    /// Serves what can be served; writes responses and memory actions into `out`.
    fn pump(&mut self, now: TimePs, out: &mut QpcOutputs);
    /// The entry of `qpn` arrived from the backing store at `now`.
    fn on_fill(&mut self, now: TimePs, qpn: u32, out: &mut QpcOutputs);
    /// Counters.
    fn stats(&self) -> QpcManagerStats;
    /// The QPC cache.
    fn cache(&self) -> &QpcCache;
    /// The QPC cache, to fill with a prefetched context nobody waits for (resource
    /// prefetching, [`crate::nic::mech::prefetch`]).
    fn cache_mut(&mut self) -> &mut QpcCache;
    /// Modelled on-chip bytes of the manager's own structures (FIFOs, tables), by name;
    /// the cache is reported separately.
    fn onchip(&self) -> Vec<(&'static str, u64)>;
}
