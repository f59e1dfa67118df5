//! What a run takes beyond the config and the perf spec, and what it gives back.

use rnic_sim::TimePs;

use crate::net::graph::NetStats;
use crate::net::hooks::Hooks;
use crate::result::PerfResult;
use crate::stats::{Registry, TransportTotals};

/// Options of a model run beyond the config and the perf spec.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Test hooks.
    pub hooks: Hooks,
}

/// A run with everything the model measured.
#[derive(Debug, Clone)]
pub struct ModelRun {
    /// The perftest-style result.
    pub result: PerfResult,
    /// Why verification failed (empty when `result.bytes_verified`).
    pub failures: Vec<String>,
    /// Every node's NIC counters, by dotted name (`nic.qpc.cache.hits`; node 0 = server).
    pub nodes: Vec<Registry>,
    /// Network statistics.
    pub net: NetStats,
    /// Transport statistics summed over nodes.
    pub transport: TransportTotals,
    /// Simulated time at the end of the run, ps.
    pub end_ps: TimePs,
}
