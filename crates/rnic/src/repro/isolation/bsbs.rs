//! isolation-bs-bs: two BS tenants with PMTU 1 KB and 2 KB share the port; round robin of
//! packets follows the PMTU, adaptive WRR equalises their bandwidth.

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Outputs};
use std::fmt::Write as _;

use super::points::{run_points, Arch, Bs, PointResult, PointSpec};

/// isolation-bs-bs.
pub const EXPERIMENT: Experiment = Experiment {
    id: "isolation-bs-bs",
    title: "BS tenants with PMTU 1 KB and 2 KB: round robin gives 2 KB twice the bandwidth, \
            adaptive WRR equalises them",
    figure: "BS-BS isolation",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "rr-follows-pmtu",
            kind: ClaimKind::Structural,
            source: "Adaptive WRR slide: \"BS tenant with a larger PMTU value can get more \
                bandwidth\" (message segmented into packets by PMTU), which with round robin \
                over packets means about twice for 2 KB vs 1 KB. Ours: under v2 with nic.iso_bs_arbiter = round_robin (one \
                packet per turn, isolated backpressure: only the arbiter differs from v2) the \
                2 KB tenant's goodput is 1.7 to 2.3 times the 1 KB tenant's. Baseline and v1 \
                are reported beside it: run to completion alternates whole messages, and v1's \
                coupled backpressure ties the tenants' message rates together, so both give \
                equal bandwidth whatever the PMTU. \
                     Structural: round robin over packets gives each backlogged tenant one packet \
                     per turn, so the bytes follow the PMTU by construction.",
        },
        ClaimSource {
            id: "wrr-equal",
            kind: ClaimKind::Structural,
            source: "BS-BS results: \"the adaptive WRR can solve the unfairness caused by \
                packet size\" (weights 4 and 2 for PMTU 1 KB and 2 KB). Ours: under v2 the \
                two goodputs within 10 % of each other. \
                     Structural: weights of 4 and 2 packets per turn give both backlogged tenants 4 \
                     KB per turn by construction.",
        },
    ],
    evaluate: |o: &Outputs| eval_bs_bs(&super::plan_of(o, BsBsPlan::full, BsBsPlan::none)),
};

/// The points of isolation-bs-bs.
#[derive(Debug, Clone)]
pub struct BsBsPlan {
    pub size: u64,
    /// Measurement window, µs: the same for both tenants, opening at `start_us` (a fixed
    /// start, `sim.warmup_us`: each flow's own settle detection would open the two windows
    /// at different times, and a tenant measured while the other has stopped gets the
    /// whole port).
    pub window_us: f64,
    /// When the window opens, µs.
    pub start_us: f64,
    /// Points: (label, architecture, further overrides).
    pub arms: Vec<(&'static str, Arch, Vec<String>)>,
}

impl BsBsPlan {
    /// No points.
    pub fn none() -> Self {
        BsBsPlan {
            arms: Vec::new(),
            ..Self::full()
        }
    }

    /// 1 MB messages, a 10 ms window (at least 100 messages on the wire, the model's
    /// floor for a rate within 1 %), under each architecture.
    pub fn full() -> Self {
        BsBsPlan {
            size: 1 << 20,
            window_us: 10_000.0,
            start_us: 1_000.0,
            arms: vec![
                ("baseline", Arch::Baseline, Vec::new()),
                ("v1", Arch::V1, Vec::new()),
                (RR, Arch::V2, vec!["nic.iso_bs_arbiter=round_robin".into()]),
                ("v2", Arch::V2, Vec::new()),
            ],
        }
    }
}

/// The round-robin arm: v2 with its arbiter switched back to round robin.
pub const RR: &str = "v2-rr";

/// Goodput of the 2 KB tenant over the 1 KB tenant's.
fn ratio(r: &PointResult) -> Option<f64> {
    match r.bs_gbps[..] {
        [a, b] if a > 0.0 => Some(b / a),
        _ => None,
    }
}

/// Runs the two BS tenants under each architecture and checks the bandwidth ratios.
pub fn eval_bs_bs(plan: &BsBsPlan) -> anyhow::Result<Evaluation> {
    let tenant = |pmtu: u32| Bs {
        pmtu,
        iters: 1_000_000,
        duration_us: Some(plan.window_us),
        ..Bs::beside_ls(plan.size)
    };
    let points: Vec<PointSpec> = plan
        .arms
        .iter()
        .map(|(label, arch, sets)| PointSpec {
            label: label.to_string(),
            arch: *arch,
            ls: false,
            bs: vec![tenant(1024), tenant(2048)],
            sets: sets
                .iter()
                .cloned()
                .chain([format!("sim.warmup_us={}", plan.start_us)])
                .collect(),
        })
        .collect();
    let res = run_points(&points)?;
    let mut notes = String::from("two BS tenants, 1 MB WRITEs, PMTU 1 KB (bs1) and 2 KB (bs2):\n");
    let mut csv = String::from("arch,bs1_pmtu1k_gbps,bs2_pmtu2k_gbps,ratio,ok\n");
    for r in &res {
        let (a, b) = (
            r.bs_gbps.first().copied().unwrap_or(0.0),
            r.bs_gbps.get(1).copied().unwrap_or(0.0),
        );
        let q = ratio(r).unwrap_or(0.0);
        let _ = writeln!(
            notes,
            "  {:<9} 1 KB {a:.2} Gb/s  2 KB {b:.2} Gb/s  ratio {q:.2}{}",
            r.label,
            if r.ok { "" } else { " NOT OK" }
        );
        let _ = writeln!(csv, "{},{a},{b},{q},{}", r.label, r.ok);
    }
    let find = |l: &str| res.iter().find(|r| r.label == l);
    let mut claims = Vec::new();
    let judge = |id: &str, words: &str, arm: &str, lo: f64, hi: f64| match find(arm) {
        Some(r) if r.ok => match ratio(r) {
            Some(q) => claim(
                id,
                words,
                format!(
                    "{arm}: {:.2} / {:.2} Gb/s, ratio {q:.2}",
                    r.bs_gbps[1], r.bs_gbps[0]
                ),
                (lo..=hi).contains(&q),
            ),
            None => missing(id, words, "two BS goodputs"),
        },
        Some(r) => claim(
            id,
            words,
            format!("point did not end ok: {}", r.reason),
            false,
        ),
        None => missing(id, words, "no point"),
    };
    claims.push(judge(
        "rr-follows-pmtu",
        "round robin: the 2 KB-PMTU tenant gets about twice the bandwidth (1.7 to 2.3 x)",
        RR,
        1.7,
        2.3,
    ));
    claims.push(judge(
        "wrr-equal",
        "adaptive WRR equalises them (ratio 0.9 to 1.1)",
        "v2",
        1.0 / 1.1,
        1.1,
    ));
    Ok(Evaluation {
        notes,
        claims,
        figures: Vec::new(),
        csv,
    })
}
