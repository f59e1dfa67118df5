//! dcqcn-two-flows: two long WRITE flows from two clients into the server share the switch
//! port toward it (2:1). With DCQCN they converge to the fair share, keep the port near
//! full and hold its queue at or below Kmax without PFC; without congestion control PFC
//! holds the queue at its pause level.
//!
//! Setup (rnic's, stated in the claims): 100 Gb/s links, PFC pausing an ingress at 2 MB
//! (above Kmax, as DCQCN deployments set it: marking acts first), ECN marking with its
//! defaults (Kmin 400 KB, Kmax 1600 KB, Pmax 0.2), DCQCN with its defaults.

use crate::model::ModelRun;
use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Outputs};

/// PFC's pause level per ingress in this experiment, bytes (above Kmax).
pub const XOFF_BYTES: u64 = 2_000_000;
/// Converged by then (the claims' "a few ms"), µs.
pub const CONVERGED_US: f64 = 5000.0;
/// Within this fraction of the fair share (the claim's 10 %).
pub const FAIR_TOLERANCE: f64 = 0.10;
/// At least this fraction of the frames join a queue at or below Kmax.
pub const AT_MOST_KMAX_SHARE: f64 = 0.90;
/// "Near full": at least this fraction of the no-congestion-control arm's bytes.
pub const NEAR_FULL: f64 = 0.80;

/// dcqcn-two-flows.
pub const EXPERIMENT: Experiment = Experiment {
    id: "dcqcn-two-flows",
    title: "Two long flows through one 100 Gb/s bottleneck, DCQCN vs none (with PFC)",
    figure: "two-flow convergence (no figure of the paper redrawn)",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "converge",
            kind: ClaimKind::Prediction,
            source: "DCQCN's flows sharing a bottleneck converge to their fair share. Ours: \
                what each of two flows posts from 5 ms to 8 ms (\"within a few ms\" read as \
                5 ms) is within 10 % of the fair share; the window is the difference of a 5 ms \
                and an 8 ms run (runs are deterministic).",
        },
        ClaimSource {
            id: "near-full",
            kind: ClaimKind::Prediction,
            source: "DCQCN keeps the bottleneck busy while it holds the queue down. Ours: over \
                8 ms the two flows move at least 80 % of what the same flows move with \
                net.cc = none (where PFC keeps the port busy).",
        },
        ClaimSource {
            id: "queue-band",
            kind: ClaimKind::Prediction,
            source: "With DCQCN the bottleneck queue stays in the Kmin-Kmax band, below PFC's \
                level. Ours: over 8 ms the queue reaches Kmin, at least 90 % of the frames \
                join a queue at or below Kmax (a per-frame statistic, not a time-sampled one) \
                and PFC never pauses.",
        },
        ClaimSource {
            id: "pfc-level",
            kind: ClaimKind::Prediction,
            source: "Without congestion control, with PFC, the queue sits at PFC's level. \
                Ours: with net.cc = none over 8 ms the mean queue a frame joins is at least \
                the pause level (2 MB per ingress, two ingresses) and PFC paused.",
        },
    ],
    evaluate: |o: &Outputs| {
        let plan = if o.dry {
            TwoFlowPlan::none()
        } else {
            TwoFlowPlan::full()
        };
        eval_two_flows(&plan)
    },
};

/// What to run: the windows, µs (`None`: nothing, the claims' wording only).
#[derive(Debug, Clone, PartialEq)]
pub struct TwoFlowPlan {
    /// (converged-by, end) windows, µs.
    pub windows_us: Option<(f64, f64)>,
}

impl TwoFlowPlan {
    /// 5 ms and 8 ms.
    pub fn full() -> TwoFlowPlan {
        TwoFlowPlan {
            windows_us: Some((CONVERGED_US, 8000.0)),
        }
    }

    /// No runs.
    pub fn none() -> TwoFlowPlan {
        TwoFlowPlan { windows_us: None }
    }
}

/// The overrides of one arm.
fn sets(cc: &str) -> Vec<String> {
    vec![
        "sim.warmup_us=10".into(),
        "net.clients=2".into(),
        "net.pfc=true".into(),
        format!("net.pfc_xoff_bytes={XOFF_BYTES}"),
        format!("net.pfc_xon_bytes={}", XOFF_BYTES / 2),
        "net.ecn.enabled=true".into(),
        format!("net.cc={cc}"),
    ]
}

fn run(cc: &str, us: f64) -> anyhow::Result<ModelRun> {
    super::run_writes(2, &sets(cc), Some(us), 0)
}

/// Payload bytes each client sent.
fn per_client(r: &ModelRun) -> Vec<u64> {
    r.nodes[1..]
        .iter()
        .map(|n| n.get("transport.tx_payload_bytes").unwrap_or(0))
        .collect()
}

fn pauses(r: &ModelRun) -> u64 {
    r.net.pfc.as_ref().map_or(0, |p| p.pauses + p.switch_pauses)
}

/// Runs the plan and checks the claims.
pub fn eval_two_flows(plan: &TwoFlowPlan) -> anyhow::Result<Evaluation> {
    let words = claim_words();
    let Some((early_us, end_us)) = plan.windows_us else {
        let claims = words
            .iter()
            .map(|(id, w)| missing(*id, *w, "no runs"))
            .collect();
        return Ok(Evaluation::new(claims, Vec::new()));
    };
    let early = run("dcqcn", early_us)?;
    let dcqcn = run("dcqcn", end_us)?;
    let none = run("none", end_us)?;
    let kmin = crate::config::Config::default().net.ecn.kmin_bytes;
    let mut claims = vec![converge(&early, &dcqcn, words[0].1)];
    let (d, n) = (dcqcn.result.goodput_gbps, none.result.goodput_gbps);
    claims.push(claim(
        "near-full",
        words[1].1,
        format!(
            "{d:.1} Gb/s with DCQCN, {n:.1} without ({:.0} %)",
            100.0 * d / n
        ),
        d >= NEAR_FULL * n,
    ));
    claims.push(match dcqcn.net.ecn_ports.iter().max_by_key(|p| p.frames) {
        None => missing("queue-band", words[2].1, "no ECN port statistics"),
        Some(q) => {
            let share = 1.0 - q.above_kmax as f64 / q.frames.max(1) as f64;
            claim(
                "queue-band",
                words[2].1,
                format!(
                    "max {} B, {:.1} % of frames at or below Kmax, {} PFC pauses",
                    q.max_queue_bytes,
                    100.0 * share,
                    pauses(&dcqcn)
                ),
                q.max_queue_bytes > kmin && share >= AT_MOST_KMAX_SHARE && pauses(&dcqcn) == 0,
            )
        }
    });
    claims.push(match none.net.ecn_ports.iter().max_by_key(|p| p.frames) {
        None => missing("pfc-level", words[3].1, "no ECN port statistics"),
        Some(q) => claim(
            "pfc-level",
            words[3].1,
            format!(
                "mean queue {} B, {} PFC pauses",
                q.mean_queue_bytes,
                pauses(&none)
            ),
            q.mean_queue_bytes >= XOFF_BYTES && pauses(&none) > 0,
        ),
    });
    Ok(Evaluation::new(claims, Vec::new()))
}

/// The converge claim from the 5 ms and the 8 ms run.
fn converge(early: &ModelRun, late: &ModelRun, words: &str) -> crate::repro::Claim {
    let window: Vec<u64> = per_client(late)
        .iter()
        .zip(per_client(early))
        .map(|(l, e)| l.saturating_sub(e))
        .collect();
    let fair = window.iter().sum::<u64>() as f64 / 2.0;
    if fair == 0.0 {
        return missing("converge", words, "nothing sent from 5 to 8 ms");
    }
    let worst = window
        .iter()
        .map(|&w| (w as f64 - fair).abs() / fair)
        .fold(0.0, f64::max);
    claim(
        "converge",
        words,
        format!(
            "bytes from 5 to 8 ms {window:?}, worst {:.1} % off",
            100.0 * worst
        ),
        worst <= FAIR_TOLERANCE,
    )
}

/// Each claim's id and the words the table prints.
fn claim_words() -> [(&'static str, &'static str); 4] {
    [
        (
            "converge",
            "each flow within 10 % of the fair share from 5 ms on",
        ),
        (
            "near-full",
            "DCQCN moves >= 80 % of the no-CC arm's bytes over 8 ms",
        ),
        (
            "queue-band",
            "queue reaches Kmin, >= 90 % of frames at or below Kmax, no PFC pause",
        ),
        (
            "pfc-level",
            "no CC + PFC: mean queue >= the pause level (2 MB), PFC paused",
        ),
    ]
}
