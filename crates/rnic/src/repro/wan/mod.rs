//! Long-distance RDMA: Masutani et al., "Long-distance RDMA-acceleration Frameworks" (NTT
//! Technical Review, 2024). Its claims, one module per experiment, each run as perftest
//! write-bw flows under the `wan` profile (Local, the accelerator's site, a long link of
//! `net.wan_km`, Remote; 100 Gb/s; a standard NIC's queue depth of 85 packets, calibrated on
//! the paper's standard-RDMA measurements), with one arm's settings changed per curve
//! ([`points::Arm`]): standard RDMA, the large-queue-depth framework (QD 16,384, tx depth
//! 2048), the WAN accelerator (`net.wan_accel`), or a given QD.
//!
//! Like the isolation experiments, these build their points here instead of sweep files
//! (each evaluator takes a plan, so the reduced tests run the same evaluator on fewer
//! points).

mod accel;
mod apn;
mod loss;
mod points;
mod qd;
mod sizes;
mod standard;

pub use accel::{accel_claims, eval_accel};
pub use apn::{apn_claims, eval_apn};
pub use loss::{eval_loss, LossPlan};
pub use points::{
    events_per_sim_ms, header_limited_gbps, iters_for, run_point, run_points, Arm, WanPoint,
    WanResult,
};
pub use qd::{eval_qd, paper_qd, QdPlan};
pub use sizes::{run_sizes, SizeCurves, SizesPlan};
pub use standard::{eval_standard, StandardPlan};

use super::Paper;

/// The profile every experiment runs under.
pub const PROFILE: &str = "wan";

/// Message sizes of Fig. 4 and Fig. 6 (rnic's choice: the paper's axis is not legible in
/// its text; 64 B to 1 MB covers both claims' sizes, 256 B, 512 B and 8 KB).
pub const FIG_SIZES: &[u64] = &[
    64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384, 65_536, 262_144, 1_048_576,
];

/// An experiment's plan: `full()`, or `none()` (no points) when only the claims' wording
/// is wanted (`Outputs::dry`).
pub fn plan_of<P>(o: &super::Outputs, full: fn() -> P, none: fn() -> P) -> P {
    if o.dry {
        none()
    } else {
        full()
    }
}

/// The paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "wan",
    short: "Long-distance RDMA",
    title: "Long-distance RDMA-acceleration Frameworks",
    authors: "Hitoshi Masutani, Junki Ichikawa, Kiwami Inoue, Tomoya Hibi, Kazuaki Obana, \
              Takeshi Kugimoto, Tsuyoshi Ogura, Koki Yube, Hirokazu Takahashi, Koichi Takasugi",
    venue: "NTT Technical Review, Vol. 22, No. 3, pp. 75-82, March 2024",
    numbering: "Section and figure numbers are the article's.",
    experiments: &[
        standard::EXPERIMENT,
        qd::EXPERIMENT,
        apn::EXPERIMENT,
        accel::EXPERIMENT,
        loss::EXPERIMENT,
    ],
};
