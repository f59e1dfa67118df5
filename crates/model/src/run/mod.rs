//! `run_perf`: a perftest-style run on the timed model in four steps, each a module:
//! [`build`] the world (nodes, QPs, buffers, application, network, observers), simulate it,
//! [`judge`] it (verdict, buffer verification, the wire's bound) and [`report`] it.

mod build;
mod flows;
mod judge;
mod report;

use rnic_sim::TimePs;

use crate::config::Config;
use crate::net::graph::NetStats;
use crate::result::PerfResult;
use crate::stats::{Registry, TransportTotals};
use crate::workload::PerfSpec;
use crate::world::Hooks;
use anyhow::bail;

pub(crate) use build::{buffer_slots, buffer_stride};
pub use flows::{check_flows, run_flows, FlowsRun};

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

/// Runs a perftest-style benchmark on the timed model (every size of `spec.sizes` in
/// turn). Setup problems are errors; a run whose bytes do not verify returns a result with
/// `bytes_verified = false` (see [`run_perf_detailed`] for the reasons).
pub fn run_perf(cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult> {
    let runs = run_perf_detailed(cfg, spec, &RunOptions::default())?;
    Ok(PerfResult::from_sizes(
        runs.into_iter().map(|r| r.result).collect(),
    ))
}

/// Like [`run_perf`], one [`ModelRun`] per size, with options.
pub fn run_perf_detailed(
    cfg: &Config,
    spec: &PerfSpec,
    opts: &RunOptions,
) -> anyhow::Result<Vec<ModelRun>> {
    if spec.sizes.is_empty() {
        bail!("no message size given");
    }
    super::limits::check_run(cfg, spec)?;
    spec.sizes
        .iter()
        .map(|&s| run_one(cfg, spec, s, opts))
        .collect()
}

/// One size: build, simulate, judge, report.
fn run_one(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    opts: &RunOptions,
) -> anyhow::Result<ModelRun> {
    let mut b = build::build(cfg, spec, size, opts)?;
    b.world.start();
    let end = b.world.run_until(TimePs::MAX, b.max_events);
    if let Some(w) = b.world.net.pcap.as_mut() {
        w.flush()
            .map_err(|e| crate::OutputError(format!("cannot write the pcap: {e}")))?;
    }

    let (verdict, flows) = judge::judge(&b, cfg, end)?;
    Ok(report::report(b, end, verdict, flows[0].measured))
}
