//! dcqcn-incast: sixteen clients write into the server at once (16:1) through one switch
//! with PFC; with DCQCN the links pause for a fraction of the time they pause without it.
//!
//! Setup (rnic's, stated in the claim): PFC at its default pause level (256 KiB per
//! ingress), ECN marking below it (Kmin 50 KB, Kmax 200 KB, Pmax 0.2: marking must act
//! before PFC, as DCQCN deployments set it), DCQCN with its defaults; each client writes
//! 100 messages of 64 KiB (the whole burst is judged, start to finish).

use crate::model::ModelRun;
use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Outputs};

/// "A fraction": less than this share of the paused time without DCQCN.
pub const FRACTION: f64 = 0.5;

/// dcqcn-incast.
pub const EXPERIMENT: Experiment = Experiment {
    id: "dcqcn-incast",
    title: "16:1 incast with PFC, DCQCN vs none: the links' paused time",
    figure: "incast under PFC (no figure of the paper redrawn)",
    sweeps: &[],
    runs_flows: true,
    claims: &[ClaimSource {
        id: "pause-fraction",
        kind: ClaimKind::Prediction,
        source: "DCQCN exists to cut PFC's pauses (the paper's motivation): a 16:1 incast \
            with DCQCN and PFC pauses for a fraction of the time it pauses without DCQCN. \
            Ours: the links' paused time over the whole burst (100 WRITEs of 64 KiB per \
            client) with DCQCN is less than half of it without (\"a fraction\" read as less \
            than half); PFC at 256 KiB, Kmin 50 KB, Kmax 200 KB.",
    }],
    evaluate: |o: &Outputs| {
        let plan = if o.dry {
            IncastPlan { clients: 0 }
        } else {
            IncastPlan::full()
        };
        eval_incast(&plan)
    },
};

/// What to run: `clients` senders (0: nothing, the claim's wording only).
#[derive(Debug, Clone, PartialEq)]
pub struct IncastPlan {
    pub clients: u32,
}

impl IncastPlan {
    /// 16:1.
    pub fn full() -> IncastPlan {
        IncastPlan { clients: 16 }
    }
}

/// Messages per client.
const MESSAGES: u64 = 100;

fn run(clients: u32, cc: &str) -> anyhow::Result<ModelRun> {
    let sets = vec![
        "sim.warmup_us=10".to_string(),
        format!("net.clients={clients}"),
        format!("host.cores={}", clients.max(10)),
        "net.pfc=true".into(),
        "net.ecn.enabled=true".into(),
        "net.ecn.kmin_bytes=50000".into(),
        "net.ecn.kmax_bytes=200000".into(),
        format!("net.cc={cc}"),
    ];
    super::run_writes(clients, &sets, None, MESSAGES)
}

fn paused_ps(r: &ModelRun) -> u64 {
    r.net
        .pfc
        .as_ref()
        .map_or(0, |p| p.paused_ps + p.switch_paused_ps)
}

/// Runs the plan and checks the claim.
pub fn eval_incast(plan: &IncastPlan) -> anyhow::Result<Evaluation> {
    let words = "16:1 incast: paused time with DCQCN < 1/2 of without";
    if plan.clients == 0 {
        return Ok(Evaluation::new(
            vec![missing("pause-fraction", words, "no runs")],
            Vec::new(),
        ));
    }
    let none = paused_ps(&run(plan.clients, "none")?);
    let dcqcn = paused_ps(&run(plan.clients, "dcqcn")?);
    let cl = if none == 0 {
        missing("pause-fraction", words, "no pause without DCQCN")
    } else {
        let share = dcqcn as f64 / none as f64;
        claim(
            "pause-fraction",
            words,
            format!(
                "{:.2} ms paused with DCQCN, {:.2} ms without ({:.1} %)",
                dcqcn as f64 / 1e9,
                none as f64 / 1e9,
                100.0 * share
            ),
            share < FRACTION,
        )
    };
    Ok(Evaluation::new(vec![cl], Vec::new()))
}
