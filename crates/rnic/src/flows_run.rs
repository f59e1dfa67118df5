//! A run of concurrent flows, as `rnic run` does it for a scenario of `[[flow]]`s and a
//! `[workload]`, and `rnic sweep` for each point of a workload sweep: one path, so a sweep
//! point's figures are those `rnic run` prints for the same config.
//!
//! [`FlowsRun::prepare`] resolves the config, expands the workload into its flows (raising
//! `host.cores` to hold them) and resolves the flows; [`FlowsRun::finish`] names the result
//! and adds each workload flow's completion time and slowdown.

use std::time::Instant;

use rnic_model::flow::FlowsSpec;
use rnic_model::flow_result::FlowsResult;

use crate::config::Config;
use crate::flows::FlowOptions;
use crate::perf::{PerfRunner, RunInputs};
use crate::traffic::{Expanded, WorkloadOptions};

/// A run of flows, resolved and ready.
#[derive(Debug, Clone)]
pub struct FlowsRun {
    pub cfg: Config,
    pub spec: FlowsSpec,
    /// The workload the flows came from, if any.
    pub workload: Option<Expanded>,
}

impl FlowsRun {
    /// The config of `inputs`, the `[[flow]]`s and the workload's flows, resolved and checked
    /// (not yet against a runner: [`FlowsRun::check`]).
    pub fn prepare(
        inputs: &RunInputs,
        flows: &[FlowOptions],
        workload: Option<&WorkloadOptions>,
    ) -> anyhow::Result<FlowsRun> {
        inputs.refuse_unread_window(
            "a [[flow]] runs for its own duration_us or iters, and a [workload]'s flows run \
             to completion; only rnic perf's -D (a [perf] duration) reads it",
        )?;
        let mut cfg = inputs.config()?;
        let (flows, workload) = crate::traffic::with_workload(flows, workload, &mut cfg)?;
        let mut spec = crate::flows::resolve(&flows, &cfg)?;
        spec.pcap = inputs.capture()?;
        Ok(FlowsRun {
            cfg,
            spec,
            workload,
        })
    }

    /// Refuses a run `runner` cannot do (its memory budget), without running it.
    pub fn check(&self, runner: &dyn PerfRunner) -> Result<(), crate::UsageError> {
        runner.check_flows(&self.cfg, &self.spec)
    }

    /// Runs the flows without progress reports and finishes the result.
    pub fn run(
        &self,
        runner: &dyn PerfRunner,
        name: &str,
        profile: &str,
    ) -> anyhow::Result<FlowsResult> {
        let start = Instant::now();
        let mut result = runner.run_flows(&self.cfg, &self.spec)?;
        self.finish(&mut result, name, profile, start)?;
        Ok(result)
    }

    /// Names the result, times it from `start`, and adds the workload's completion times
    /// and slowdowns.
    pub fn finish(
        &self,
        result: &mut FlowsResult,
        name: &str,
        profile: &str,
        start: Instant,
    ) -> anyhow::Result<()> {
        result.name = name.to_string();
        result.profile = profile.to_string();
        result.wall_seconds = start.elapsed().as_secs_f64();
        if let Some(e) = &self.workload {
            result.workload = Some(crate::traffic::summarise(e, &self.cfg, result)?);
        }
        Ok(())
    }
}
