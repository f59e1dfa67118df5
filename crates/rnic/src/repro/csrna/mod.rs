//! csRNA: Kang et al., "Towards Connection-Scalable RNIC Architecture" (published as
//! "csRNA: Connection-Scalable RDMA NIC Architecture in Datacenter Environment", IEEE ICCD
//! 2022). Its seven experiments, one module each, and their claims.
//!
//! The evaluators (`eval_*`) are plain functions of curves (x = QPs or bytes, y = Mops or µs)
//! so they can be tested on synthetic data; the `evaluate` wrappers pull the curves out of
//! the sweeps' results and draw the figures.
//!
//! Simulated time per point: no sweep file sets a warm-up; every point's window opens once
//! its run has settled (`sim.settle_*`, `host/steady.rs`): after the initial posting (QPs ×
//! tx_depth posts, about 30 ms for 51,200 QPs at -t 64) and three turnovers of all in-flight
//! work whose rates agree (49 ms each at that point), then 500 µs of measurement (`-D`).
//! Latency points use the paper's test (`--procs 10`: ten server processes each cycling over
//! its own QPs), and their 2 ms window opens the same way, once every QP has been used in
//! each agreeing sub-window, so the caches are in their steady state; the paper's headline
//! 3.89 µs is checked on the same test at 51,200 QPs, post to completion. perftest's
//! write-lat (half round trip, `latency-pingpong.toml`) is printed beside it.

mod latency;
mod memory;
mod ooocap;
mod placement;
mod rate;
mod ud_latency;

pub use latency::{eval_latency, LatencyCurves};
pub use memory::eval_memory;
pub use ooocap::{eval_ooocap, formula2_claim};
pub use placement::{eval_placement, PlacementPoint, PCIE_BOUND_UTIL, PLACEMENT_EFFECT};
pub use rate::{eval_fcfs, eval_peak};
pub use ud_latency::{eval_ud_latency, UD_FLAT_US, UD_RISE_US};

use super::Paper;

/// The paper's peak message rate, Mops (abstract, §7).
pub const PEAK_MOPS: f64 = 66.4;
/// The paper's latency with latency hiding beyond 50k QPs, µs (abstract, §7).
pub const LH_LATENCY_US: f64 = 3.89;
/// Table 1: csRNA's on-chip memory, bytes (1.4 MB).
pub const CSRNA_ONCHIP_BYTES: f64 = 1.4e6;
/// The cache size of the experiments.
pub const CACHE: f64 = 300.0;

/// The csRNA paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "csrna",
    short: "csRNA",
    title: "Towards Connection-Scalable RNIC Architecture",
    authors: "Ning Kang, Zhan Wang, Fan Yang, Xiaoxiao Ma, Zhenlong Ma, Guojun Yuan, \
              Guangming Tan",
    venue: "Research Square preprint, 2023 (doi:10.21203/rs.3.rs-3076067/v1); published \
            as \"csRNA: Connection-Scalable RDMA NIC Architecture in Datacenter \
            Environment\", IEEE ICCD 2022",
    numbering: "Section, figure and table numbers are the preprint's.",
    experiments: &[
        rate::PEAK,
        rate::FCFS,
        latency::EXPERIMENT,
        ooocap::EXPERIMENT,
        placement::EXPERIMENT,
        memory::EXPERIMENT,
        ud_latency::EXPERIMENT,
    ],
};
