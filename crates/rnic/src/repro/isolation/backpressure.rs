//! isolation-backpressure: a BS tenant that drains slowly (its packet window is two PSNs,
//! so its receiver's acknowledgements pace it) keeps its shallow WQE FIFO full. Coupled
//! backpressure then pauses WQE reads for every QP; isolated backpressure parks only that
//! tenant.

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Outputs};
use std::fmt::Write as _;

use super::linerate::header_limited_gbps;
use super::points::{run_points, Arch, Bs, PointResult, PointSpec};
use super::PROFILE;

/// isolation-backpressure.
pub const EXPERIMENT: Experiment = Experiment {
    id: "isolation-backpressure",
    title: "a slowly drained BS tenant stalls every WQE read under coupled backpressure, \
            only its own under isolated",
    figure: "Isolated backpressure",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "coupled-stalls-all",
            kind: ClaimKind::Prediction,
            source: "Isolated backpressure slide: \"any full queue will prevent \
                wqe_read_schedule from scheduling\". Ours: under v2 with \
                nic.iso_backpressure = coupled, the scheduler pauses for the slow tenant's \
                full FIFO and the fast tenant's goodput is at least 10 % below its goodput \
                with isolated backpressure.",
        },
        ClaimSource {
            id: "isolated-confined",
            kind: ClaimKind::Prediction,
            source: "Isolated backpressure slide: \"a BS QP is eligible only when its state \
                is eligible, and its corresponding BS_queue is not full\". Ours: under v2 the \
                scheduler never pauses for a full FIFO, the slow tenant's QP is parked, and \
                the fast tenant gets at least 90 % of what the port leaves (the \
                header-limited rate minus the slow tenant's goodput).",
        },
    ],
    evaluate: |o: &Outputs| {
        eval_backpressure(&super::plan_of(
            o,
            BackpressurePlan::full,
            BackpressurePlan::none,
        ))
    },
};

/// The points of isolation-backpressure.
#[derive(Debug, Clone)]
pub struct BackpressurePlan {
    pub size: u64,
    /// Messages per tenant.
    pub iters: u64,
    /// The slow tenant's packet window, PSNs.
    pub slow_window_psns: u32,
    /// Points: (label, architecture, further overrides). The claims read `v2-coupled`
    /// and `v2`.
    pub arms: Vec<(&'static str, Arch, Vec<String>)>,
}

impl BackpressurePlan {
    /// No points.
    pub fn none() -> Self {
        BackpressurePlan {
            arms: Vec::new(),
            ..Self::full()
        }
    }

    /// 64 KB messages, 100 per tenant, a window of 2 PSNs for the slow tenant.
    pub fn full() -> Self {
        BackpressurePlan {
            size: 65536,
            iters: 100,
            slow_window_psns: 2,
            arms: vec![
                ("baseline", Arch::Baseline, Vec::new()),
                ("v1", Arch::V1, Vec::new()),
                (
                    "v2-coupled",
                    Arch::V2,
                    vec!["nic.iso_backpressure=coupled".into()],
                ),
                ("v2", Arch::V2, Vec::new()),
            ],
        }
    }
}

/// Runs the slow and the fast tenant under coupled and isolated backpressure (v2 otherwise,
/// plus baseline and v1 for the table).
pub fn eval_backpressure(plan: &BackpressurePlan) -> anyhow::Result<Evaluation> {
    let slow = Bs {
        iters: plan.iters,
        window_psns: Some(plan.slow_window_psns),
        ..Bs::beside_ls(plan.size)
    };
    let fast = Bs {
        iters: plan.iters,
        ..Bs::beside_ls(plan.size)
    };
    let points: Vec<PointSpec> = plan
        .arms
        .iter()
        .map(|(label, arch, sets)| PointSpec {
            label: label.to_string(),
            arch: *arch,
            ls: false,
            bs: vec![slow, fast],
            sets: sets.clone(),
        })
        .collect();
    let res = run_points(&points)?;
    let cfg = crate::config::Config::resolve(PROFILE, &[])?;
    let bound = header_limited_gbps(&cfg, plan.size, u64::from(cfg.qp.pmtu));
    let mut notes = format!(
        "slow BS tenant (window {} PSNs) beside a fast one, {} B WRITEs; header-limited rate \
         {bound:.1} Gb/s\n",
        plan.slow_window_psns, plan.size
    );
    let mut csv = String::from("point,slow_gbps,fast_gbps,coupled_stalls,parks,ok\n");
    for r in &res {
        let (s, f) = gbps(r);
        let (st, pk) = (r.stat("nic.iso.coupled_stalls"), r.stat("nic.iso.parks"));
        let _ = writeln!(
            notes,
            "  {:<11} slow {s:.2} Gb/s  fast {f:.2} Gb/s  full-FIFO pauses {st}  parks {pk}{}",
            r.label,
            if r.ok { "" } else { " NOT OK" }
        );
        let _ = writeln!(csv, "{},{s},{f},{st},{pk},{}", r.label, r.ok);
    }
    let find = |l: &str| res.iter().find(|r| r.label == l && r.ok);
    let mut claims = Vec::new();
    let w1 = "coupled backpressure: a slow tenant's full FIFO stalls the others' WQE reads \
              (fast tenant >= 10 % below isolated)";
    let w2 = "isolated backpressure confines the stall (no global pause; fast tenant >= 90 % \
              of what the port leaves)";
    match (find("v2-coupled"), find("v2")) {
        (Some(c), Some(i)) => {
            let (_, fc) = gbps(c);
            let (si, fi) = gbps(i);
            let stalls = c.stat("nic.iso.coupled_stalls");
            claims.push(claim(
                "coupled-stalls-all",
                w1,
                format!("fast {fc:.1} Gb/s coupled vs {fi:.1} isolated; {stalls} pauses"),
                stalls > 0 && fc <= 0.9 * fi,
            ));
            let left = bound - si;
            let (st, pk) = (i.stat("nic.iso.coupled_stalls"), i.stat("nic.iso.parks"));
            claims.push(claim(
                "isolated-confined",
                w2,
                format!(
                    "fast {fi:.1} of {left:.1} Gb/s left ({:.0} %); {st} pauses, {pk} parks",
                    100.0 * fi / left.max(1e-9)
                ),
                st == 0 && pk > 0 && fi >= 0.9 * left,
            ));
        }
        _ => {
            let why = res
                .iter()
                .find(|r| !r.ok)
                .map_or("no points".to_string(), |r| {
                    format!("point {}: {}", r.label, r.reason)
                });
            claims.push(missing("coupled-stalls-all", w1, &why));
            claims.push(missing("isolated-confined", w2, &why));
        }
    }
    Ok(Evaluation {
        notes,
        claims,
        figures: Vec::new(),
        csv,
    })
}

/// (slow, fast) goodput, Gb/s.
fn gbps(r: &PointResult) -> (f64, f64) {
    (
        r.bs_gbps.first().copied().unwrap_or(0.0),
        r.bs_gbps.get(1).copied().unwrap_or(0.0),
    )
}
