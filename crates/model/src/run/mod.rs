//! `run_perf`: a perftest-style run on the timed model in four steps, each a module:
//! `build` the world (nodes, QPs, buffers, application, network, observers), simulate it,
//! `judge` it (verdict, buffer verification, the wire's bound) and `report` it. A caller
//! may watch the simulation's [`progress`] ([`run_perf_with_progress`]).

mod build;
mod capture;
mod flow_check;
mod flows;
mod judge;
pub mod long_run;
mod options;
pub mod progress;
mod report;
mod unreliable;

use crate::config::Config;
use crate::result::PerfResult;
use crate::workload::PerfSpec;
use anyhow::bail;

pub use flow_check::FlowMemory;
pub use flows::{check_flows, run_flows, run_flows_observed, FlowsRun};
pub use options::{ModelRun, RunOptions};
pub use progress::{Phase, Progress, SettleStatus, WarmUp};

/// Runs a perftest-style benchmark on the timed model (every size of `spec.sizes` in
/// turn). Setup problems are errors; a run whose bytes do not verify returns a result with
/// `bytes_verified = false` (see [`run_perf_detailed`] for the reasons).
pub fn run_perf(cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult> {
    let runs = run_perf_detailed(cfg, spec, &RunOptions::default())?;
    Ok(PerfResult::from_sizes(
        runs.into_iter().map(|r| r.result).collect(),
    ))
}

/// Like [`run_perf`], calling `observer` with the run's [`Progress`] about every 100 ms of
/// wall time (never for a run shorter than that). The results are those of [`run_perf`].
pub fn run_perf_with_progress(
    cfg: &Config,
    spec: &PerfSpec,
    observer: &mut dyn FnMut(&Progress),
) -> anyhow::Result<PerfResult> {
    let runs = run_sizes(cfg, spec, &RunOptions::default(), Some(observer))?;
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
    run_sizes(cfg, spec, opts, None)
}

fn run_sizes(
    cfg: &Config,
    spec: &PerfSpec,
    opts: &RunOptions,
    mut observer: Option<&mut dyn FnMut(&Progress)>,
) -> anyhow::Result<Vec<ModelRun>> {
    if spec.sizes.is_empty() {
        bail!("no message size given");
    }
    super::limits::check_run(cfg, spec)?;
    let sizes = spec.sizes.len();
    let mut runs = Vec::with_capacity(sizes);
    for (size_index, &size_bytes) in spec.sizes.iter().enumerate() {
        let at = progress::Position {
            size_bytes,
            size_index,
            sizes,
        };
        let this_size: Option<&mut dyn FnMut(&Progress)> = match observer {
            Some(ref mut o) => Some(&mut **o),
            None => None,
        };
        runs.push(run_one(cfg, spec, at, opts, this_size)?);
    }
    Ok(runs)
}

/// perftest's peak is one side's: the flows that go the same way (every client's under
/// `--reversed`, the clients' half of `-b`) go through the server's one port, and a peak
/// read from each flow's stamps alone and added would count stretches that fell at
/// different times as if they overlapped, passing the port's rate. Their stamps are
/// merged into the side's first flow and read as one sequence; the other flows keep none.
fn one_peak_per_side(b: &mut build::Built) {
    let mut first_of_side: [Option<usize>; 2] = [None, None];
    for (i, f) in b.flows.iter().enumerate() {
        let side = usize::from(f.server != 0);
        let Some(peak) = b.world.apps[i].measure.peak.take() else {
            continue;
        };
        match first_of_side[side] {
            None => {
                first_of_side[side] = Some(i);
                b.world.apps[i].measure.peak = Some(peak);
            }
            Some(first) => {
                if let Some(into) = b.world.apps[first].measure.peak.as_mut() {
                    into.absorb(peak);
                }
            }
        }
    }
    for app in &mut b.world.apps {
        if let Some(peak) = app.measure.peak.as_mut() {
            peak.finish();
        }
    }
}

/// One size: build, simulate, judge, report.
fn run_one(
    cfg: &Config,
    spec: &PerfSpec,
    at: progress::Position,
    opts: &RunOptions,
    observer: Option<&mut dyn FnMut(&Progress)>,
) -> anyhow::Result<ModelRun> {
    let size = at.size_bytes;
    let mut b = build::build(cfg, spec, size, opts)?;
    b.world.start();
    let end = progress::run_observed(&mut b.world, b.max_events, at, observer, None);
    capture::finish(b.world.net.pcap.as_mut(), spec.pcap.as_ref())?;

    one_peak_per_side(&mut b);
    // One flow (or one per direction): its buffers are checked at the end.
    let mut at_end = flow_check::EarlyChecks::default();
    let (verdict, flows) = judge::judge(&b, cfg, end, &mut at_end)?;
    let measured: Vec<_> = flows.iter().map(|f| f.measured).collect();
    let span = long_run::run_span(&b.world.apps, end);
    let stalls = long_run::Stalls::of_devices(cfg, b.world.nics.iter().map(|n| n.dev.stats()));
    let mut run = report::report(b, end, verdict, &measured);
    if let Some(span) = span {
        let op_bytes = run.result.size_bytes;
        long_run::judge(&mut run.result, span, op_bytes, stalls);
    }
    if let Some(why) = flows.iter().find_map(|f| f.above_wire.as_deref()) {
        let r = &mut run.result;
        long_run::mark_above_wire(&mut r.window_settled, &mut r.window_reason, why);
    }
    Ok(run)
}
