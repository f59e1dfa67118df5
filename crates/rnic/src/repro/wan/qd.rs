//! wan-qd: the queue depth that keeps a long link busy is bandwidth × RTT / frame size
//! (`rnic calc qd`: 2991 for 100 Gbit/s, 100 km and 4178 B frames), and a sweep of the
//! queue depth at 100 km reaches the line rate at about that depth.

use std::fmt::Write as _;

use crate::calc::{queue_depth, rtt_us, QdInput, FIBRE_US_PER_KM};
use crate::config::Config;
use crate::repro::claim::{claim, missing, within, ClaimKind, ClaimSource};
use crate::repro::figure::Figure;
use crate::repro::{Evaluation, Experiment, Outputs};

use super::points::{header_limited_gbps, run_points, Arm, WanPoint};
use super::standard::PERFTEST_SIZE;
use super::PROFILE;

/// The paper's numbers: 100 km, 100 Gbit/s, 4178 B frames give about 2991.
pub const PAPER_KM: f64 = 100.0;
pub const PAPER_FRAME_BYTES: u64 = 4178;
pub const PAPER_QD: f64 = 2991.0;

/// wan-qd.
pub const EXPERIMENT: Experiment = Experiment {
    id: "wan-qd",
    title:
        "queue depth = bandwidth x RTT / frame size; a QD sweep at 100 km reaches line rate there",
    figure: "§4.1",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "formula",
            kind: ClaimKind::Calculation,
            source: "§4.1: \"For 100 km, an ideal QD is about 2991 when the total frame size \
                is 4178\" at 100 Gbit/s, QD = bandwidth × RTT / frame size, RTT 1 ms for \
                100 km (5 µs/km one way). Checked on `rnic calc qd` within ±1 %.",
        },
        ClaimSource {
            id: "knee",
            kind: ClaimKind::Prediction,
            source: "§4.1: the formula gives the QD that sends \"without stalling\". Ours: at \
                100 km (WRITEs of 64 KB, tx depth 2048 so the packet window is the only \
                limit), the smallest swept QD whose goodput reaches 95 % of the \
                header-limited line rate is within ±10 % of the formula's QD, and smaller \
                QDs stay below it.",
        },
    ],
    evaluate: |o: &Outputs| eval_qd(&super::plan_of(o, QdPlan::full, QdPlan::none)),
};

/// The queue depths of wan-qd, as fractions of the formula's.
#[derive(Debug, Clone)]
pub struct QdPlan {
    pub fractions: Vec<f64>,
    /// Measurement window per point once the rate has settled, µs.
    pub window_us: f64,
}

impl QdPlan {
    /// No points.
    pub fn none() -> Self {
        QdPlan {
            fractions: Vec::new(),
            window_us: 0.0,
        }
    }

    /// A quarter to one and a half times the formula's QD.
    pub fn full() -> Self {
        QdPlan {
            fractions: vec![0.25, 0.5, 0.75, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.25, 1.5],
            window_us: 4000.0,
        }
    }
}

/// The formula's QD for the paper's case.
pub fn paper_qd() -> Result<f64, String> {
    let rtt = rtt_us(PAPER_KM, FIBRE_US_PER_KM)?;
    Ok(queue_depth(QdInput {
        gbps: 100.0,
        rtt_us: rtt,
        frame_bytes: PAPER_FRAME_BYTES,
    })?
    .queue_depth as f64)
}

/// Checks the formula and sweeps the queue depth at 100 km.
pub fn eval_qd(plan: &QdPlan) -> anyhow::Result<Evaluation> {
    let qd = paper_qd().map_err(anyhow::Error::msg)?;
    let mut claims = vec![claim(
        "formula",
        "QD for 100 Gb/s, 100 km, 4178 B frames about 2991 (±1 %)",
        format!("rnic calc qd: {qd}"),
        within(qd, PAPER_QD, 0.01),
    )];
    let points: Vec<WanPoint> = plan
        .fractions
        .iter()
        .map(|f| {
            let n = (f * qd).round() as u32;
            WanPoint {
                duration_us: Some(plan.window_us),
                ..WanPoint::new(Arm::Qd(n), PAPER_KM, PERFTEST_SIZE, 1)
            }
        })
        .collect();
    let res = run_points(&points)?;
    let cfg = Config::resolve(PROFILE, &[])?;
    let line = header_limited_gbps(&cfg, PERFTEST_SIZE, u64::from(cfg.qp.pmtu));
    let mut notes = format!(
        "QD sweep at {PAPER_KM} km, 64 KB WRITEs, tx depth 2048; formula QD {qd}, \
         header-limited rate {line:.2} Gb/s:\n"
    );
    let mut curve = Vec::new();
    let mut knee: Option<u32> = None;
    let mut all_ok = !res.is_empty();
    for r in &res {
        let Arm::Qd(n) = r.point.arm else { continue };
        let reached = r.gbps >= 0.95 * line;
        if reached && knee.is_none() {
            knee = Some(n);
        }
        all_ok &= r.ok;
        let _ = writeln!(
            notes,
            "  QD {n:>5} ({:.2} x)  {:>7.2} Gb/s{}{}",
            f64::from(n) / qd,
            r.gbps,
            if reached { "  >= 95 % of line" } else { "" },
            if r.ok { "" } else { "  (not ok)" }
        );
        curve.push((f64::from(n), r.gbps));
    }
    let words = "smallest QD reaching line rate (>= 95 %) at 100 km within ±10 % of the formula's";
    claims.push(match knee {
        None if res.is_empty() => missing("knee", words, "no points"),
        None => claim("knee", words, "no swept QD reached 95 %".into(), false),
        Some(n) => claim(
            "knee",
            words,
            format!("QD {n} ({:.2} x formula)", f64::from(n) / qd),
            all_ok && within(f64::from(n), qd, 0.10),
        ),
    });
    let figures = vec![Figure::line(
        "wan-qd",
        "WRITE throughput vs queue depth at 100 km",
        "queue depth (packets)",
        "throughput (Gb/s)",
        vec![
            ("measured".into(), curve.clone()),
            ("formula QD".into(), vec![(qd, 0.0), (qd, line)]),
        ],
        false,
    )];
    Ok(Evaluation {
        notes,
        ..Evaluation::new(claims, figures)
    })
}
