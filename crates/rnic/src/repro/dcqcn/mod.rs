//! DCQCN: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments" (SIGCOMM '15).
//! Two experiments on rnic's star (clients into one server through one switch), each run
//! through the model with `net.cc = "dcqcn"` against `net.cc = "none"`, the arms differing
//! only in `net.cc`: two long flows through one bottleneck (`twoflow`) and a 16:1 incast
//! under PFC (`incast`); and one on a fat-tree, the shape of the DCQCN curve of HPCC's
//! FCT-slowdown figure for WebSearch (`fct`). The thresholds are the claims' words, fixed
//! before the runs.
//!
//! Like the long-distance experiments, these build their runs here instead of sweep files.

mod fct;
mod incast;
mod twoflow;

pub use fct::{eval_fct, FctPlan};
pub use incast::{eval_incast, IncastPlan};
pub use twoflow::{eval_two_flows, TwoFlowPlan};

use crate::config::{parse_set, Config};
use crate::model::workload::{Direction, PerfSpec, PerfTest};
use crate::model::ModelRun;

use super::Paper;

/// A run of `clients` clients writing 64 KiB messages into the server, one QP each, under
/// the baseline profile with `sets`; `duration_us` or `iters` messages per QP.
pub(crate) fn run_writes(
    clients: u32,
    sets: &[String],
    duration_us: Option<f64>,
    iters: u64,
) -> anyhow::Result<ModelRun> {
    let mut parsed = Vec::new();
    for s in sets {
        parsed.push(parse_set(s)?);
    }
    let cfg = Config::resolve("baseline", &parsed)?;
    let spec = PerfSpec {
        sizes: vec![65_536],
        qps: clients,
        clients,
        iters,
        duration_us,
        direction: Direction::Reverse,
        ..PerfSpec::perftest(PerfTest::WriteBw)
    };
    let r = crate::model::run_perf_detailed(&cfg, &spec, &Default::default())?
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no run"))?;
    if !r.result.bytes_verified {
        anyhow::bail!("payload not verified: {:?}", r.failures);
    }
    Ok(r)
}

/// The paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "dcqcn",
    short: "DCQCN",
    title: "Congestion Control for Large-Scale RDMA Deployments",
    authors: "Yibo Zhu, Haggai Eran, Daniel Firestone, Chuanxiong Guo, Marina Lipshteyn, \
              Yehonatan Liron, Jitendra Padhye, Shachar Raindel, Mohamad Haj Yahia, Ming Zhang",
    venue: "ACM SIGCOMM 2015",
    numbering: "",
    experiments: &[twoflow::EXPERIMENT, incast::EXPERIMENT, fct::EXPERIMENT],
};
