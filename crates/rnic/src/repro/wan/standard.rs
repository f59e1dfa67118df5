//! wan-standard (Fig. 3): standard RDMA's WRITE throughput falls with distance, about 25,
//! 3 and 0.3 Gbit/s at 10, 100 and 1000 km.

use std::fmt::Write as _;

use crate::repro::claim::{claim, missing, within, ClaimKind, ClaimSource};
use crate::repro::figure::Figure;
use crate::repro::{Evaluation, Experiment, Outputs};

use super::points::{events_per_sim_ms, run_points, Arm, WanPoint};

/// The paper's measurements: (km, Gbit/s).
pub const PAPER_POINTS: [(f64, f64); 3] = [(10.0, 25.0), (100.0, 3.0), (1000.0, 0.3)];

/// wan-standard.
pub const EXPERIMENT: Experiment = Experiment {
    id: "wan-standard",
    title: "standard RDMA WRITE throughput vs distance, 0 to 1000 km",
    figure: "Fig. 3",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "10km",
            kind: ClaimKind::Calibration,
            source: "§2.2 and Fig. 3: \"For 10-km communication, network throughput dropped \
                to 25.0 Gbit/s\" (perftest ib_write_bw defaults, 100 Gbit/s line). ±10 % is \
                rnic's tolerance for a number the paper states. The queue depth of the \
                standard NIC is calibrated on the three points of this experiment together \
                (the `wan` profile), so they check the calibration, not a prediction.",
        },
        ClaimSource {
            id: "100km",
            kind: ClaimKind::Calibration,
            source: "§2.2 and Fig. 3: \"the throughput decreased to 3.0 Gbit/s at 100 km\". \
                ±10 %; calibration point (see 10km).",
        },
        ClaimSource {
            id: "1000km",
            kind: ClaimKind::Calibration,
            source: "§2.2 and Fig. 3: \"performance degradation to 0.3 Gbit/s for 1000-km \
                communication\". ±10 %; calibration point (see 10km).",
        },
    ],
    evaluate: |o: &Outputs| {
        eval_standard(&super::plan_of(o, StandardPlan::full, StandardPlan::none))
    },
};

/// The distances of wan-standard.
#[derive(Debug, Clone)]
pub struct StandardPlan {
    pub kms: Vec<f64>,
    /// perftest's 64 KB default message, this many per point.
    pub iters: u64,
}

impl StandardPlan {
    /// No points.
    pub fn none() -> Self {
        StandardPlan {
            kms: Vec::new(),
            iters: 0,
        }
    }

    /// 0 to 1000 km.
    pub fn full() -> Self {
        StandardPlan {
            kms: vec![
                0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0,
            ],
            iters: 1000,
        }
    }
}

/// perftest's default WRITE size.
pub const PERFTEST_SIZE: u64 = 65_536;

/// Runs standard RDMA at each distance and checks the paper's three points.
pub fn eval_standard(plan: &StandardPlan) -> anyhow::Result<Evaluation> {
    let points: Vec<WanPoint> = plan
        .kms
        .iter()
        .map(|&km| WanPoint::new(Arm::Standard, km, PERFTEST_SIZE, plan.iters))
        .collect();
    let res = run_points(&points)?;
    let mut notes = String::from("standard RDMA, 64 KB WRITEs, tx depth 128:\n");
    let mut curve = Vec::new();
    for r in &res {
        let _ = writeln!(
            notes,
            "  {:>6} km  {:>8.3} Gb/s{}",
            r.point.km,
            r.gbps,
            if r.ok { "" } else { "  (not ok)" }
        );
        curve.push((r.point.km, r.gbps));
    }
    let _ = writeln!(
        notes,
        "simulation speed: {:.0} events per simulated ms",
        events_per_sim_ms(&res)
    );
    let mut claims = Vec::new();
    for (km, paper) in PAPER_POINTS {
        let id = format!("{}km", km as u64);
        let words = format!("standard RDMA at {km} km about {paper} Gb/s (±10 %)");
        match res.iter().find(|r| r.point.km == km) {
            None => claims.push(missing(id, words, "no point at that distance")),
            Some(r) => claims.push(claim(
                id,
                words,
                format!(
                    "{:.3} Gb/s ({:+.1} %)",
                    r.gbps,
                    100.0 * (r.gbps / paper - 1.0)
                ),
                r.ok && within(r.gbps, paper, 0.10),
            )),
        }
    }
    let figures = vec![Figure::line(
        "wan-standard",
        "Standard RDMA WRITE throughput vs distance (Fig. 3)",
        "distance (km)",
        "throughput (Gb/s)",
        vec![("standard".into(), curve)],
        false,
    )];
    Ok(Evaluation {
        notes,
        ..Evaluation::new(claims, figures)
    })
}
