//! Resource prefetching: Ma et al., "Toward Scalable RDMA Through Resource Prefetching"
//! (IEEE Computer Architecture Letters, 2025). Its four experiments, one module each, run
//! under one profile, `prefetch` (the paper's two nodes, 100 Gb/s, PCIe 128 Gb/s with a
//! 500 ns round trip; chain prefetching with both triggers over the non-blocking QPC
//! manager), with no per-figure parameter: each sweep sets only what the paper's experiment
//! states (QPs, MRs, the QPC cache of 100 for Fig. 6) or the arm it compares (`nic.prefetch`,
//! the FCFS baseline, the csRNA profile).
//!
//! The evaluators (`eval_*`) are plain functions of curves, so they can be tested on
//! synthetic data; the `evaluate` wrappers pull the curves out of the sweeps' results and
//! draw the figures.

mod light;
mod memory;
mod scale;
mod window;

pub use light::eval_light;
pub use memory::eval_memory;
pub use scale::eval_scale;
pub use window::{eval_window, formula_window, ChainReads, FormulaInputs};

use super::Paper;

/// The profile every experiment runs under.
pub const PROFILE: &str = "prefetch";

/// The paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "prefetch",
    short: "Prefetching",
    title: "Toward Scalable RDMA Through Resource Prefetching",
    authors: "Zhenlong Ma, Ning Kang, Fan Yang, Chongyang Hong, Jing Xu, Guojun Yuan, \
              Peiheng Zhang, Zhan Wang, Ninghui Sun",
    venue: "IEEE Computer Architecture Letters, vol. 24, no. 1, 2025 \
            (doi:10.1109/LCA.2025.3534188)",
    numbering: "",
    experiments: &[
        scale::EXPERIMENT,
        window::EXPERIMENT,
        memory::EXPERIMENT,
        light::EXPERIMENT,
    ],
};
