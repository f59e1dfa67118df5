//! prefetch-scale (Fig. 3): message rate vs QPs, 50 × 64 B WRITEs per QP, with chain
//! prefetching, beside rnic's baseline (demand fetch, FCFS QPC manager) where the paper
//! shows a commodity NIC.

use crate::repro::claim::{claim, missing, pct, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::{at, max_point, Curve};
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};

/// The largest QP count of the paper's figure.
pub const MAX_QPS: f64 = 16_384.0;

/// prefetch-scale.
pub const EXPERIMENT: Experiment = Experiment {
    id: "prefetch-scale",
    title: "chain prefetching holds the peak message rate up to 16,384 QPs",
    figure: "Fig. 3",
    sweeps: &[
        sweep_file!("prefetch/scale.toml"),
        sweep_file!("prefetch/scale-baseline.toml"),
    ],
    runs_flows: false,
    claims: &[ClaimSource {
        id: "flat",
        kind: ClaimKind::Prediction,
        source: "§IV-A and Fig. 3: each QP sends 50 messages of 64 B; \"our platform \
            maintains a stable throughput at the peak value under large-scale QPs\", up to \
            16,384. The paper states no tolerance: rnic reads \"at the peak\" as at least \
            90 % of the highest rate of the sweep, at 16,384 QPs.",
    }],
    evaluate: evaluate_scale,
};

/// Fig. 3: the prefetching curve at 16,384 QPs is at least 90 % of its own maximum.
pub fn eval_scale(prefetch: &Curve) -> Vec<Claim> {
    let words = "with prefetching the rate stays at the peak up to 16,384 QPs (>= 90 % of peak)";
    let (Some((xpeak, peak)), Some(last)) = (max_point(prefetch), at(prefetch, MAX_QPS)) else {
        return vec![missing("flat", words, "need 16,384 QPs")];
    };
    vec![claim(
        "flat",
        words,
        format!(
            "{last:.1} Mops at 16,384 QPs = {:.1} % of the peak {peak:.1} (at {xpeak} QPs)",
            pct(last, peak)
        ),
        last >= 0.9 * peak,
    )]
}

fn evaluate_scale(o: &Outputs) -> anyhow::Result<Evaluation> {
    let pf = o.curve(0, &[], "msg_rate_mops")?;
    let base = o.curve(1, &[], "msg_rate_mops")?;
    let claims = eval_scale(&pf);
    let figures = vec![Figure::line(
        "scale",
        "64 B WRITE, 50 per QP, 2 nodes: message rate vs QPs (Fig. 3)",
        "QPs",
        "message rate (Mops)",
        vec![
            ("chain prefetching".into(), pf),
            ("rnic baseline (demand fetch, FCFS)".into(), base),
        ],
        true,
    )];
    Ok(Evaluation::new(claims, figures))
}
