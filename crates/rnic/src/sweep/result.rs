//! What a sweep point yields: a perf run's [`PerfResult`], or a workload run's
//! [`WorkloadPoint`]. Serialised untagged, so a perf sweep's JSON is the result itself, as
//! it always was.

use serde::Serialize;

use super::workload::WorkloadPoint;
use crate::report::{Metric, PerfResult, RunStatus};

/// One point's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PointResult {
    Perf(Box<PerfResult>),
    Workload(Box<WorkloadPoint>),
}

impl From<PerfResult> for PointResult {
    fn from(r: PerfResult) -> PointResult {
        PointResult::Perf(Box::new(r))
    }
}

impl From<WorkloadPoint> for PointResult {
    fn from(w: WorkloadPoint) -> PointResult {
        PointResult::Workload(Box::new(w))
    }
}

impl PointResult {
    /// How the point's run ended.
    pub fn status(&self) -> RunStatus {
        match self {
            PointResult::Perf(r) => r.status,
            PointResult::Workload(w) => w.status,
        }
    }

    /// Why, unless `ok`.
    pub fn reason(&self) -> &str {
        match self {
            PointResult::Perf(r) => &r.reason,
            PointResult::Workload(w) => &w.reason,
        }
    }

    /// Every scalar figure with dotted names, in JSON order.
    pub fn metrics(&self) -> Vec<(String, Metric)> {
        match self {
            PointResult::Perf(r) => r.metrics(),
            PointResult::Workload(w) => w.metrics(),
        }
    }

    /// One metric by name.
    pub fn metric(&self, name: &str) -> Option<Metric> {
        self.metrics()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    /// The perf run's result, owned, if the point ran one.
    pub fn into_perf(self) -> Option<PerfResult> {
        match self {
            PointResult::Perf(r) => Some(*r),
            PointResult::Workload(_) => None,
        }
    }

    /// The perf run's result, if the point ran one.
    pub fn perf(&self) -> Option<&PerfResult> {
        match self {
            PointResult::Perf(r) => Some(r),
            PointResult::Workload(_) => None,
        }
    }
}
