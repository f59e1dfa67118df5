//! wan-loss (beyond the paper): the WAN accelerator under 0.01 %, 0.1 % and 1 % loss on the
//! long link, both ways: throughput and retransmissions, and every byte verified at Remote.
//! Local has been told its WRITEs arrived (pseudo-ACKs) long before they do, so only the
//! accelerator's buffer and its retransmissions stand between a lost frame and lost data.

use std::fmt::Write as _;

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::figure::Figure;
use crate::repro::{Evaluation, Experiment, Outputs};

use super::points::{run_points, Arm, WanPoint};

/// wan-loss.
pub const EXPERIMENT: Experiment = Experiment {
    id: "wan-loss",
    title: "beyond the paper: the WAN accelerator under 0.01 %, 0.1 % and 1 % loss at 100 km",
    figure: "beyond",
    sweeps: &[],
    runs_flows: true,
    claims: &[ClaimSource {
        id: "no-data-lost",
        kind: ClaimKind::Structural,
        source: "Beyond the paper (its accelerator keeps RC's reliability by design, §5.1 \
            and §5.2, but it measures no loss). Ours: 4 KB WRITEs through the accelerator \
            at 100 km with 0.01 %, 0.1 % and 1 % of frames lost on the long link in each \
            direction: every run terminates, every byte is verified at Remote, Local never \
            retransmits (the accelerator repairs every loss from its buffer) and the \
            accelerator did resend at the highest loss rate. Throughput is reported \
            twice: perftest's (Local's, paced by pseudo-ACKs) and delivered (bytes verified \
            at Remote over the whole run, until the accelerator's buffer is empty). \
                 Structural: the accelerator's buffer and resending are the model's \
                 construction; the claim checks that the implementation keeps them.",
    }],
    evaluate: |o: &Outputs| eval_loss(&super::plan_of(o, LossPlan::full, LossPlan::none)),
};

/// The loss rates of wan-loss.
#[derive(Debug, Clone)]
pub struct LossPlan {
    pub rates: Vec<f64>,
    pub size: u64,
    pub iters: u64,
}

impl LossPlan {
    /// No points.
    pub fn none() -> Self {
        LossPlan {
            rates: Vec::new(),
            size: 0,
            iters: 0,
        }
    }

    /// 0.01 %, 0.1 %, 1 %; 4000 WRITEs of 4 KB.
    pub fn full() -> Self {
        LossPlan {
            rates: vec![0.0, 1e-4, 1e-3, 1e-2],
            size: 4096,
            iters: 4000,
        }
    }
}

/// Runs the accelerator at each loss rate.
pub fn eval_loss(plan: &LossPlan) -> anyhow::Result<Evaluation> {
    let points: Vec<WanPoint> = plan
        .rates
        .iter()
        .map(|&p| WanPoint {
            sets: vec![format!("net.impair.loss={p}")],
            ..WanPoint::new(Arm::Accel, 100.0, plan.size, plan.iters)
        })
        .collect();
    let res = run_points(&points)?;
    let mut notes = format!(
        "WAN accelerator, {} B WRITEs x {}, 100 km, loss on the long link both ways:\n",
        plan.size, plan.iters
    );
    let mut curve = Vec::new();
    let mut parts = Vec::new();
    let mut pass = res.iter().any(|r| r.point.sets[0] != "net.impair.loss=0");
    for r in &res {
        let p: f64 = r.point.sets[0]
            .rsplit('=')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let delivered = if r.drained_us > 0.0 {
            r.verified_bytes as f64 * 8.0 / (r.drained_us * 1e3)
        } else {
            0.0
        };
        let _ = writeln!(
            notes,
            "  loss {:>6.2} %  perftest {:>7.3} Gb/s  delivered {:>7.3} Gb/s  lost {:>5}  \
             accel resent {:>7}  Local resent {:>4}  verified {} B{}",
            100.0 * p,
            r.gbps,
            delivered,
            r.lost_frames,
            r.accel_retransmitted,
            r.nic_retransmissions,
            r.verified_bytes,
            if r.ok { "" } else { "  NOT OK" }
        );
        curve.push((100.0 * p, delivered));
        if p > 0.0 {
            pass &= r.ok && r.nic_retransmissions == 0;
            parts.push(format!(
                "{}%: {} lost, {} resent, {}",
                100.0 * p,
                r.lost_frames,
                r.accel_retransmitted,
                if r.ok { "verified" } else { "NOT verified" }
            ));
        }
    }
    let words = "with loss on the long link: run ends, every byte verified, the accelerator \
                 (never Local) resends";
    let top_resent = res.last().is_some_and(|r| r.accel_retransmitted > 0);
    pass &= top_resent;
    let claims = vec![if parts.is_empty() {
        missing("no-data-lost", words, "no lossy points")
    } else {
        claim("no-data-lost", words, parts.join("; "), pass)
    }];
    let figures = vec![Figure::line(
        "wan-loss",
        "WAN accelerator: delivered throughput vs loss on the 100 km link",
        "loss (%)",
        "delivered throughput (Gb/s)",
        vec![("WAN accelerator".into(), curve)],
        false,
    )];
    Ok(Evaluation {
        notes,
        ..Evaluation::new(claims, figures)
    })
}
