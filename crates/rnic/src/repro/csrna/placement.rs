//! csrna-placement (Fig. 9a-e): QPCs in on-board DDR vs host memory, message rate vs QPs by
//! message size, and where the placement matters.

use crate::repro::claim::{claim, missing, within, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::curve;
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};
use crate::sweep::value_text;

/// csrna-placement.
pub const EXPERIMENT: Experiment = Experiment {
    id: "csrna-placement",
    title: "QPCs in on-board DDR vs host memory across message sizes",
    figure: "Fig. 9a-e",
    sweeps: &[sweep_file!("csrna/placement.toml")],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "small",
            kind: ClaimKind::Prediction,
            source: "§5.3 and Fig. 9a-e: \"when the message size is small (below 64 bytes), \
                QPC placement has little effect on performance\", packet processing being the \
                bottleneck. The paper gives no magnitude. Ours: the DDR/host ratio within 5 % \
                of 1, the same line the mid-size effect must cross.",
        },
        ClaimSource {
            id: "mid",
            kind: ClaimKind::Prediction,
            source: "§4.6, §5.3 and Fig. 9: as messages grow the bottleneck shifts to PCIe \
                bandwidth, which host-memory QPCs consume and on-board ones do not. Ours: the \
                largest ratio at a size above 64 B and below the largest, above 1.05, where \
                the host-memory run's PCIe reads are at least 90 % busy.",
        },
        ClaimSource {
            id: "large",
            kind: ClaimKind::Prediction,
            source: "§5.3 and Fig. 9c-e: \"as message sizes continue to increase, the impact \
                of QPC placement on RNIC message rates decreases\", because QPC access is per \
                message. The largest size's ratio below the mid-size peak.",
        },
    ],
    evaluate: evaluate_placement,
};

/// One message size of Fig. 9 at the sweep's largest QP count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlacementPoint {
    /// Message size, bytes.
    pub size: u64,
    /// DDR / host message-rate ratio.
    pub ratio: f64,
    /// Server PCIe host → NIC utilisation of the host-memory run (0..1).
    pub host_pcie_rd_util: f64,
}

/// A DDR/host ratio this far from 1 is an effect; closer is none (the paper: "little
/// effect"). The paper gives the shape of Fig. 9 and no magnitude, so one threshold serves
/// both sides: small sizes must stay within it, the mid-size peak must exceed it.
pub const PLACEMENT_EFFECT: f64 = 0.05;

/// PCIe host → NIC utilisation at or above which the host-memory run is PCIe-bound.
pub const PCIE_BOUND_UTIL: f64 = 0.9;

/// Fig. 9: DDR/host message-rate ratio by size at many QPs (`points` by size). Small sizes
/// (≤ 64 B) within [`PLACEMENT_EFFECT`] of 1; the largest ratio at a mid size (above 64 B,
/// below the largest size), above 1 + [`PLACEMENT_EFFECT`], where the host-memory run is
/// PCIe-bound ([`PCIE_BOUND_UTIL`]); the largest size's ratio below that peak.
pub fn eval_placement(points: &[PlacementPoint], qps: f64) -> Vec<Claim> {
    let mut out = Vec::new();
    let text = points
        .iter()
        .map(|p| format!("{} B: {:.2}", p.size, p.ratio))
        .collect::<Vec<_>>()
        .join(", ");
    let small: Vec<f64> = points
        .iter()
        .filter(|p| p.size <= 64)
        .map(|p| p.ratio)
        .collect();
    let pct = PLACEMENT_EFFECT * 100.0;
    let words =
        format!("little effect for small messages (<= 64 B): ddr/host within {pct:.0} % of 1");
    out.push(if small.is_empty() {
        missing("small", words, "no sizes <= 64 B")
    } else {
        claim(
            "small",
            words,
            format!("ddr/host at {qps} QPs: {text}"),
            small.iter().all(|&r| within(r, 1.0, PLACEMENT_EFFECT)),
        )
    });
    let best = points
        .iter()
        .copied()
        .max_by(|a, b| a.ratio.total_cmp(&b.ratio));
    let largest = points.last().copied();
    let words = format!(
        "largest effect at mid sizes (ddr/host above {:.2}), where PCIe is the bottleneck \
         (host run's PCIe reads >= {:.0} % busy)",
        1.0 + PLACEMENT_EFFECT,
        PCIE_BOUND_UTIL * 100.0
    );
    match (best, largest) {
        (Some(b), Some(l)) if points.len() >= 3 => {
            let mid = b.size > 64 && b.size < l.size;
            out.push(claim(
                "mid",
                words,
                format!(
                    "largest ratio {:.2} at {} B, host PCIe reads {:.0} % busy",
                    b.ratio,
                    b.size,
                    b.host_pcie_rd_util * 100.0
                ),
                mid && b.ratio > 1.0 + PLACEMENT_EFFECT && b.host_pcie_rd_util >= PCIE_BOUND_UTIL,
            ));
            out.push(claim(
                "large",
                "less again as messages grow (QPC access is per message)",
                format!(
                    "{:.2} at {} B vs {:.2} at {} B",
                    l.ratio, l.size, b.ratio, b.size
                ),
                l.ratio < b.ratio,
            ));
        }
        _ => {
            out.push(missing("mid", words, "need at least 3 sizes"));
            out.push(missing(
                "large",
                "less again as messages grow (QPC access is per message)",
                "need at least 3 sizes",
            ));
        }
    }
    out
}

fn evaluate_placement(o: &Outputs) -> anyhow::Result<Evaluation> {
    let (sw, r) = o.sweep(0)?;
    let sizes = sw
        .axis("perf.size")
        .ok_or_else(|| anyhow::anyhow!("the placement sweep has no perf.size axis"))?;
    let mut figures = Vec::new();
    let mut points = Vec::new();
    let mut qps = 0.0f64;
    let letters = ["a", "b", "c", "d", "e", "f", "g", "h"];
    for (i, v) in sizes.values.iter().enumerate() {
        let s = value_text(v);
        let host = curve(
            sw,
            r,
            &[("perf.size", &s), ("nic.qpc_placement", "host")],
            "msg_rate_mops",
        );
        let ddr = curve(
            sw,
            r,
            &[("perf.size", &s), ("nic.qpc_placement", "ddr")],
            "msg_rate_mops",
        );
        let host_util = curve(
            sw,
            r,
            &[("perf.size", &s), ("nic.qpc_placement", "host")],
            "pcie_rd_util",
        );
        if let (Some(&(xh, h)), Some(&(xd, d)), Some(&(_, u))) =
            (host.last(), ddr.last(), host_util.last())
        {
            if xh == xd && h > 0.0 {
                points.push(PlacementPoint {
                    size: v.as_integer().unwrap_or(0) as u64,
                    ratio: d / h,
                    host_pcie_rd_util: u,
                });
                qps = xh;
            }
        }
        figures.push(Figure::line(
            format!("placement-msg{s}"),
            &format!(
                "Fig. 9({}) msg = {s} B: message rate, QPC in host memory vs on-board memory",
                letters.get(i).unwrap_or(&"?")
            ),
            "QPs",
            "message rate (Mops)",
            vec![("host".into(), host), ("mem (on-board DDR)".into(), ddr)],
            true,
        ));
    }
    let claims = eval_placement(&points, qps);
    figures.push(Figure::line(
        "placement-ratio",
        &format!("DDR / host message-rate ratio at {qps} QPs"),
        "message size (B)",
        "DDR / host message-rate ratio",
        vec![(
            "ddr/host".into(),
            points.iter().map(|p| (p.size as f64, p.ratio)).collect(),
        )],
        true,
    ));
    Ok(Evaluation::new(claims, figures))
}
