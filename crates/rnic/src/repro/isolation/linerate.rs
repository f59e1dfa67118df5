//! isolation-linerate: a lone BS tenant still reaches the line rate under v1 and v2.

use crate::config::Config;
use crate::model::ModelParams;
use crate::repro::claim::{claim, missing, pct, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Outputs};
use std::fmt::Write as _;

use super::points::{run_points, Arch, Bs, PointSpec};
use super::PROFILE;

/// isolation-linerate.
pub const EXPERIMENT: Experiment = Experiment {
    id: "isolation-linerate",
    title: "a lone BS tenant reaches the 100 Gb/s line rate under baseline, v1 and v2",
    figure: "Overheads",
    sweeps: &[],
    runs_flows: true,
    claims: &[ClaimSource {
        id: "line-rate",
        kind: ClaimKind::Prediction,
        source: "Overheads: \"Can the bandwidth-sensitive tenant still achieve a 100Gbps \
            line rate? Yes\". Ours: a lone BS tenant of 1 MB WRITEs at PMTU 1 KB reaches at \
            least 95 % of the header-limited rate (the payload share of the wire's bytes at \
            100 Gb/s) under baseline, v1 and v2.",
    }],
    evaluate: |o: &Outputs| {
        eval_linerate(&super::plan_of(o, LineratePlan::full, LineratePlan::none))
    },
};

/// The points of isolation-linerate.
#[derive(Debug, Clone)]
pub struct LineratePlan {
    pub size: u64,
    pub iters: u64,
    pub archs: Vec<Arch>,
}

impl LineratePlan {
    /// No points.
    pub fn none() -> Self {
        LineratePlan {
            archs: Vec::new(),
            ..Self::full()
        }
    }

    /// 40 messages of 1 MB under each architecture.
    pub fn full() -> Self {
        LineratePlan {
            size: 1 << 20,
            iters: 40,
            archs: vec![Arch::Baseline, Arch::V1, Arch::V2],
        }
    }
}

/// The goodput of `size`-byte WRITEs at path MTU `pmtu` when the wire is the only limit,
/// Gb/s: payload over the wire bytes of its frames (headers, FCS, preamble, gap).
pub fn header_limited_gbps(cfg: &Config, size: u64, pmtu: u64) -> f64 {
    let p = ModelParams::from_config(cfg);
    let packets = size.div_ceil(pmtu).max(1);
    let mut wire = 0u64;
    for i in 0..packets {
        let payload = pmtu.min(size - i * pmtu);
        // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4, RETH 16 on the first packet.
        let frame = 58 + payload + if i == 0 { 16 } else { 0 };
        wire += p.wire_bytes(frame as usize);
    }
    cfg.eth.gbps * size as f64 / wire as f64
}

/// Runs a lone BS tenant under each architecture and checks its goodput.
pub fn eval_linerate(plan: &LineratePlan) -> anyhow::Result<Evaluation> {
    let points: Vec<PointSpec> = plan
        .archs
        .iter()
        .map(|&arch| PointSpec {
            label: arch.name().to_string(),
            arch,
            ls: false,
            bs: vec![Bs {
                iters: plan.iters,
                ..Bs::beside_ls(plan.size)
            }],
            sets: Vec::new(),
        })
        .collect();
    let res = run_points(&points)?;
    let cfg = Config::resolve(PROFILE, &[])?;
    let bound = header_limited_gbps(&cfg, plan.size, u64::from(cfg.qp.pmtu));
    let mut notes = format!(
        "lone BS tenant, {} B WRITEs, PMTU {} B: header-limited rate {bound:.2} Gb/s\n",
        plan.size, cfg.qp.pmtu
    );
    let mut csv = String::from("arch,goodput_gbps,header_limited_gbps,ok\n");
    let mut parts = Vec::new();
    let mut pass = !res.is_empty();
    for r in &res {
        let g = r.bs_gbps.first().copied().unwrap_or(0.0);
        let _ = writeln!(
            notes,
            "  {:<9} {g:.2} Gb/s ({:.1} %)",
            r.label,
            pct(g, bound)
        );
        let _ = writeln!(csv, "{},{g},{bound},{}", r.label, r.ok);
        parts.push(format!("{} {g:.1} ({:.1} %)", r.label, pct(g, bound)));
        pass &= r.ok && g >= 0.95 * bound;
    }
    let words = "a lone BS tenant reaches the line rate (>= 95 % of the header-limited rate)";
    let claims = if res.is_empty() {
        vec![missing("line-rate", words, "no points")]
    } else {
        vec![claim(
            "line-rate",
            words,
            format!("Gb/s of {bound:.1}: {}", parts.join(", ")),
            pass,
        )]
    };
    Ok(Evaluation {
        notes,
        claims,
        figures: Vec::new(),
        csv,
    })
}
