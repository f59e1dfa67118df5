//! The transmit path, one stage of the NIC: the QP scheduler, WQE fetch and decode, the TX
//! engine (with the TX payload buffer), the per-QP rate limiter and the payload streams.
//!
//! The hooks of the mechanisms that change its decisions (TX isolation's order and WQE
//! admission, prefetching's scheduler mirror, congestion control's rate) are chosen once in
//! `Nic::new`; the stage's units are generic over them. The TX route's steps, which drive
//! these units and name the memory path and the hooks, are functions of `route.rs` (a module
//! apart: the stage itself imports no other stage); the `Nic` carries what they ask on
//! (`route_tx.rs`).

mod park;
pub(crate) mod route;

use super::mech::prefetch::hook::SchedMirror;
use super::payload_stream::Streams;
use super::ports::TxOrder;
use super::rate_limiter::RateLimiter;
use super::scheduler::Scheduler;
use super::tx_pipeline::TxEngine;
use super::wqe_fetch::WqeFetch;
use crate::params::ModelParams;

/// The NIC's transmit units; `O` is the TX engine's order (TX isolation's hook).
pub struct TxPath<O> {
    /// QP scheduler.
    pub sched: Scheduler<SchedMirror>,
    /// WQE fetch and decode.
    pub fetch: WqeFetch,
    /// TX engine, serving QPs in TX isolation's order (its [`super::ports::TxOrder`] hook).
    pub engine: TxEngine<O>,
    /// The per-QP rate limiter of the TX engine.
    pub rate: RateLimiter,
    /// Payload streams of every QP (`nic.dma_read_arbiter = "round_robin"`).
    pub streams: Streams,
}

impl<O: TxOrder + Default> TxPath<O> {
    /// The transmit path of a NIC with the parameters `p`; `mirror` is prefetching's view of
    /// the scheduler's queue, `order` the TX engine's.
    pub fn new(p: &ModelParams, mirror: SchedMirror, order: O) -> Self {
        let n = &p.nic;
        let mut sched = Scheduler::new(n.sched_ps);
        sched.mirror = mirror;
        TxPath {
            sched,
            fetch: WqeFetch::new(n.wqe_decode_ps),
            engine: TxEngine::with_order(order),
            rate: RateLimiter::new(p.rate_limit_gbps, p.rate_limit_burst_bytes),
            streams: Streams::default(),
        }
    }
}

impl<O> crate::stats::Report for TxPath<O> {
    /// Each unit's counters under its own name (`sched`, `fetch`, `tx`, `rate_limit`).
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        let at = |unit: &str| format!("{prefix}.{unit}");
        self.sched.report(&at("sched"), reg);
        self.fetch.report(&at("fetch"), reg);
        self.engine.report(&at("tx"), reg);
        self.rate.report(&at("rate_limit"), reg);
    }
}
