//! TX performance isolation: Liao et al., "Optimize the TX Architecture of RDMA NIC for
//! Performance Isolation in the Cloud Environment" (GLSVLSI '23). Its claims, one module per
//! experiment, each run as concurrent flows (an LS tenant's 64 B WRITE ping-pong beside BS
//! tenants' WRITE streams) under the `isolation` profile, with `nic.tx_isolation` set per
//! arm (baseline, v1, v2) and nothing else changed per figure.
//!
//! The experiments have no sweep files: a sweep runs one perftest flow per point, these need
//! several flows per point, so each experiment builds its points here (`point`) and runs
//! them through the model's flow runner ([`run_points`]). Each experiment's evaluator takes
//! a plan (its points), so the suite's reduced tests run the same evaluator on fewer points.
//!
//! Setup shared by every experiment (the paper's words; rnic's choices are marked):
//! LS tenant: 64 B messages (write-lat, 40 round trips from 20 µs, tenant 9, to client node
//! 9); BS tenants: 4 KB to 1 MB WRITE messages, 128 posted per QP (the authors' RTL
//! testbench fills the BS tenant's send queue of 128 WQEs and keeps it active), tenants
//! 1..=8 each to its own client node; PMTU 1 KB unless stated.

mod backpressure;
mod bsbs;
mod depthmap;
mod linerate;
mod lsbs;
mod points;

pub use backpressure::{eval_backpressure, BackpressurePlan};
pub use bsbs::{eval_bs_bs, BsBsPlan};
pub use depthmap::{eval_depth_map, DepthMapPlan};
pub use linerate::{eval_linerate, header_limited_gbps, LineratePlan};
pub use lsbs::{eval_ls_alone, eval_ls_bs, ratios, LsAlonePlan, LsBsPlan};
pub use points::{alone_label, build, run_points, Arch, Bs, PointResult, PointSpec};

use super::Paper;

/// An experiment's plan: `full()`, or `none()` (no points) when only the claims' wording
/// is wanted (`Outputs::dry`).
pub fn plan_of<P>(o: &super::Outputs, full: fn() -> P, none: fn() -> P) -> P {
    if o.dry {
        none()
    } else {
        full()
    }
}

/// The profile every experiment runs under.
pub const PROFILE: &str = "isolation";
/// LS message size, bytes (the paper's LS tenant).
pub const LS_BYTES: u64 = 64;
/// The LS tenant's id (BS tenants are 1..=8).
pub const LS_TENANT: u16 = 9;
/// The LS tenant's client node: its own, so its round trip shares the server's TX path
/// with the BS tenants but no receiver (a client receiving a BS stream at line rate
/// delays the LS write's DMA into its memory: interference on the receive side, which
/// the paper does not address).
pub const LS_CLIENT: u32 = 9;
/// LS round trips per point.
pub const LS_ITERS: u64 = 40;
/// When the LS flow starts, µs (the BS streams are running by then).
pub const LS_START_US: f64 = 20.0;
/// BS WQEs posted per QP: the authors' RTL testbench writes a whole send queue of 128
/// WQEs for its BS tenant and keeps the queue active for the whole run.
pub const BS_DEPTH: u32 = 128;
/// The paper's LS waiting time under v1: one iteration of the transport, cycles.
pub const PAPER_V1_WAIT_CYCLES: f64 = 16.0;

/// The paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "isolation",
    short: "TX isolation",
    title: "Optimize the TX Architecture of RDMA NIC for Performance Isolation in the Cloud \
            Environment",
    authors: "Yunkun Liao, Jingya Wu, Wenyan Lu, Xiaowei Li, Guihai Yan",
    venue: "33rd Great Lakes Symposium on VLSI (GLSVLSI '23)",
    numbering: "The paper's results are figures without numbered sections; claims cite its \
                slides' titles.",
    experiments: &[
        lsbs::LS_ALONE,
        lsbs::LS_BS,
        depthmap::EXPERIMENT,
        bsbs::EXPERIMENT,
        backpressure::EXPERIMENT,
        linerate::EXPERIMENT,
    ],
};
