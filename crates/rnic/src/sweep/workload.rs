//! Sweeps of a `[workload]`: each point runs the workload's flows as `rnic run` does
//! ([`crate::flows_run`]) and yields a [`WorkloadPoint`], one row of flow-completion-time
//! slowdowns: p50, p95 and p99 of the short flows (up to 100 KB), the long flows (above
//! 1 MB) and all flows, as the dcqcn reproduction splits them
//! ([`rnic_model::traffic::fct::short_tail`]), beside the counts of flows started and
//! completed. The JSON adds the slowdowns by flow-size decade that `rnic run` prints.
//!
//! ```toml
//! name = "ws-load"
//! x = "workload.load"
//! metrics = ["slowdown.short.p99", "slowdown.long.p50"]   # default: DEFAULT_METRICS
//! [set]
//! net.topology = "fat_tree"
//! net.fabric.k = 4
//! net.clients = 15
//! [workload]                            # as in a scenario file
//! cdf = "workloads/websearch.cdf"
//! duration_us = 100
//! [[axis]]
//! key = "workload.load"                 # "workload.<key>", "profile" or a config field
//! values = [0.2, 0.5, 0.8]
//! ```

use rnic_model::flow_result::FlowsResult;
use rnic_model::traffic::fct::{self, SizeBucket, SlowdownTail};
use serde::{Deserialize, Serialize};
use toml::{Table, Value};

use super::{Axis, AxisTarget};
use crate::config::ConfigError;
use crate::report::{Metric, RunStatus};
use crate::traffic::{parse_workload, WorkloadOptions, WORKLOAD_KEYS};

/// Metrics plotted when a workload sweep names none.
pub const DEFAULT_METRICS: &[&str] = &["slowdown.short.p95", "slowdown.long.p95"];

/// `[workload]` keys an axis may vary: the scalar ones (`matrix` and `incast` are tables).
pub const AXIS_KEYS: &[&str] = &[
    "cdf",
    "load",
    "duration_us",
    "start_us",
    "pattern",
    "test",
    "seed",
];

/// The slowdowns of one point by class of flow size.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slowdowns {
    /// Flows up to [`fct::SHORT_MAX_BYTES`].
    pub short: SlowdownTail,
    /// Flows above [`fct::LONG_MIN_BYTES`].
    pub long: SlowdownTail,
    /// Every completed flow.
    pub all: SlowdownTail,
}

/// One point of a workload sweep, as its JSON holds it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadPoint {
    pub profile: String,
    pub seed: u64,
    /// How the run ended, as `rnic run` says it.
    pub status: RunStatus,
    pub reason: String,
    /// Client nodes (hosts are nodes 0 ..= clients).
    pub clients: u32,
    /// Offered load, fraction of each host's link.
    pub load: f64,
    /// Flows the workload started (incast bursts included).
    pub flows_started: u64,
    /// Flows that completed with every byte verified.
    pub flows_completed: u64,
    /// FCT over the ideal FCT on the idle fabric, by class of flow size.
    pub slowdown: Slowdowns,
    /// The slowdowns by flow-size decade, as `rnic run` prints them.
    pub buckets: Vec<SizeBucket>,
    /// Simulated time of the run, µs.
    pub simulated_time_us: f64,
    /// Events processed.
    pub events: u64,
    /// Wall-clock time of the run, s (left out of the sweep's JSON).
    pub wall_seconds: f64,
}

impl WorkloadPoint {
    /// The point's row from a finished run of its flows (`r.workload` set by
    /// [`crate::flows_run::FlowsRun::finish`]).
    pub fn from_run(r: &FlowsResult) -> WorkloadPoint {
        let w = r.workload.clone().unwrap_or_default();
        WorkloadPoint {
            profile: r.profile.clone(),
            seed: r.seed,
            status: r.status,
            reason: r.reason.clone(),
            clients: r.clients,
            load: w.load,
            flows_started: w.flows_started,
            flows_completed: w.flows_completed,
            slowdown: Slowdowns {
                short: fct::short_tail(&w.flows),
                long: fct::long_tail(&w.flows),
                all: fct::tail(&w.flows, |_| true),
            },
            buckets: w.buckets,
            simulated_time_us: r.simulated_time_us,
            events: r.events,
            wall_seconds: r.wall_seconds,
        }
    }

    /// Every scalar figure with dotted names, in JSON order (`buckets`, whose decades vary
    /// from point to point, and `wall_seconds` left out).
    pub fn metrics(&self) -> Vec<(String, Metric)> {
        use Metric::{Float, Int};
        let mut m = vec![
            ("clients".to_string(), Int(u64::from(self.clients))),
            ("load".to_string(), Float(self.load)),
            ("flows_started".to_string(), Int(self.flows_started)),
            ("flows_completed".to_string(), Int(self.flows_completed)),
        ];
        let s = &self.slowdown;
        for (class, t) in [("short", s.short), ("long", s.long), ("all", s.all)] {
            m.push((format!("slowdown.{class}.flows"), Int(t.flows)));
            for (q, v) in [("p50", t.p50), ("p95", t.p95), ("p99", t.p99)] {
                m.push((format!("slowdown.{class}.{q}"), Float(v)));
            }
        }
        m.push(("simulated_time_us".into(), Float(self.simulated_time_us)));
        m.push(("events".into(), Int(self.events)));
        m.push(("seed".into(), Int(self.seed)));
        m
    }
}

/// The metric names of a workload point.
pub fn metric_names() -> Vec<String> {
    WorkloadPoint::default()
        .metrics()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// The `[workload]` table with `key` set to `value`, read as a scenario's would be (so a
/// bad value is refused naming `workload.<key>`).
pub fn options_with(raw: &Table, sets: &[(&str, &Value)]) -> Result<WorkloadOptions, ConfigError> {
    let mut w = raw.clone();
    for (k, v) in sets {
        w.insert(k.to_string(), (*v).clone());
    }
    let mut t = Table::new();
    t.insert("workload".into(), Value::Table(w));
    parse_workload(&t)?.ok_or_else(|| ConfigError::Inconsistent("`[workload]` is missing".into()))
}

/// Checks `workload.<key>` names a key an axis may vary.
pub fn check_axis_key(key: &str) -> Result<(), ConfigError> {
    if AXIS_KEYS.contains(&key) {
        return Ok(());
    }
    let why = if WORKLOAD_KEYS.contains(&key) {
        "is a table, which an axis cannot vary"
    } else {
        "is not a [workload] key"
    };
    Err(ConfigError::Inconsistent(format!(
        "`workload.{key}` {why}; an axis varies one of workload.{}",
        AXIS_KEYS.join(", workload.")
    )))
}

/// Checks the `[workload]` table with every axis value it will run with, as a scenario's
/// `[workload]` is checked: the table with every workload axis at its first value (so
/// `load` may come from an axis alone), then each workload axis's values with the others at
/// their first values, a bad one refused naming its axis.
pub fn check_values(raw: &Table, axes: &[Axis]) -> Result<(), ConfigError> {
    let varied: Vec<(usize, &Axis, &str)> = axes
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match &a.target {
            AxisTarget::Workload(k) => Some((i, a, k.as_str())),
            _ => None,
        })
        .collect();
    let firsts: Vec<(&str, &Value)> = varied.iter().map(|(_, a, k)| (*k, &a.values[0])).collect();
    // The table itself first, so a bad value written in it is not blamed on an axis (the
    // error names its key either way).
    options_with(raw, &firsts)?;
    for (n, (i, a, k)) in varied.iter().enumerate() {
        for v in &a.values {
            let mut sets = firsts.clone();
            sets[n] = (k, v);
            options_with(raw, &sets).map_err(|e| super::axis_error(*i, &a.key, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_model::quantity::Quantity;

    /// A figure names its axes, never raw keys: every key a workload axis may vary and every
    /// metric of a workload point has a name in `rnic_model::quantity`.
    #[test]
    fn every_axis_key_and_metric_has_a_name() {
        for k in AXIS_KEYS {
            let key = format!("workload.{k}");
            assert_ne!(Quantity::of_axis(&key).name, key);
        }
        // "seed" is its own name.
        for m in metric_names().into_iter().filter(|m| m != "seed") {
            assert_ne!(Quantity::of_metric(&m).name, m);
        }
    }
}
