//! ornic-vs-gbn-paths (the paper's multipath setting; its Fig. 11 used a reordering emulator
//! instead, see [`super::vs_gbn`]): go-back-N and ORNIC WRITEs, one WQE at a time, with every
//! packet sprayed over four paths whose one-way delays are 0, 6.7, 13.3 and 20 µs above the
//! link's (round robin and random), against the same WRITEs in order on each of the same
//! four paths in turn (`net.spray.policy = "pinned"`), averaged by completion time as a QP
//! hashed onto a path at random would see. Every arm sees the same path delays: the in-order
//! arm does not get the shortest path for free. One WQE at a time over paths 10 µs longer on
//! average, in order is below the line rate (77 Gb/s at 1 MB): it is the reference of the
//! sprayed arms here, not a claim (the sequential scenario of Fig. 11a is
//! `ornic-vs-gbn/gbn-in-order`, on the emulator's single link).

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::curve::{at, Curve};
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};
use std::fmt::Write as _;

use super::vs_gbn::{gbps_list, unaffected_claim, COLLAPSED_GBPS, SIZES_NOTE};

/// The paths of the sweeps (net.spray.paths) the in-order arm is pinned to in turn.
pub const PATHS: u32 = 4;

/// ornic-vs-gbn-paths.
pub const EXPERIMENT: Experiment = Experiment {
    id: "ornic-vs-gbn-paths",
    title: "go-back-N and ORNIC RDMA WRITE throughput sprayed over 4 paths (20 µs apart) \
            against in order on the same 4 paths",
    figure: "Fig. 11 (multipath)",
    sweeps: &[
        sweep_file!("ornic/paths-in-order.toml"),
        sweep_file!("ornic/paths-gbn.toml"),
        sweep_file!("ornic/paths-ornic.toml"),
    ],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "gbn-sprayed",
            kind: ClaimKind::Prediction,
            source: "Sec. 4.1, Fig. 11b, applied to the paper's multipath setting (four paths \
                     20 µs apart: the MDD its OTD of 64 is sized for) instead of its emulator: \
                     go-back-N \"dropped below 1 Gbps\". Below 1 Gb/s at every WQE size, for \
                     round-robin and random spraying.",
        },
        ClaimSource {
            id: "ornic-sprayed",
            kind: ClaimKind::Prediction,
            source: "Sec. 4.1, Fig. 11, applied to the paper's multipath setting: \"ORNIC's \
                     performance remained largely unaffected\". rnic's reading: ORNIC sprayed \
                     (round robin and random) reaches at least 90 % of ORNIC in order over the \
                     same 4 paths (each path in turn, averaged by completion time) at every \
                     WQE size (1, 4, 16 MB).",
        },
    ],
    evaluate: eval_paths,
};

/// The in-order rate of `reliability` averaged over the paths by completion time (the
/// harmonic mean of the paths' rates: the same bytes cross each path), per size; `None`
/// when a path's point is missing.
pub fn in_order_over_paths(o: &Outputs, reliability: &str) -> anyhow::Result<Option<Curve>> {
    let mut per_path = Vec::new();
    for path in 0..PATHS {
        let p = path.to_string();
        per_path.push(o.curve(
            0,
            &[("qp.reliability", reliability), ("net.spray.path", &p)],
            "goodput_gbps",
        )?);
    }
    Ok(harmonic_mean(&per_path))
}

/// Pointwise harmonic mean of `curves` (same x values in each); `None` if one lacks a point
/// or all are empty.
pub fn harmonic_mean(curves: &[Curve]) -> Option<Curve> {
    let first = curves.first().filter(|c| !c.is_empty())?;
    first
        .iter()
        .map(|&(x, _)| {
            let inv: Option<f64> = curves
                .iter()
                .map(|c| at(c, x).filter(|&g| g > 0.0).map(|g| 1.0 / g))
                .sum();
            inv.map(|s| (x, curves.len() as f64 / s))
        })
        .collect()
}

fn eval_paths(o: &Outputs) -> anyhow::Result<Evaluation> {
    let g_in = in_order_over_paths(o, "gbn")?.unwrap_or_default();
    let o_in = in_order_over_paths(o, "ornic")?.unwrap_or_default();
    let policy = |p: &'static str| [("net.spray.policy", p)];
    let g_rr = o.curve(1, &policy("round_robin"), "goodput_gbps")?;
    let g_rand = o.curve(1, &policy("random"), "goodput_gbps")?;
    let o_rr = o.curve(2, &policy("round_robin"), "goodput_gbps")?;
    let o_rand = o.curve(2, &policy("random"), "goodput_gbps")?;
    let mut notes = format!(
        "{SIZES_NOTE}; in order: each of the {PATHS} paths in turn, averaged by completion \
         time; sprayed: every packet over the same {PATHS} paths:\n"
    );
    let mut csv = String::from(
        "size_bytes,gbn_in_order_gbps,gbn_round_robin_gbps,gbn_random_gbps,\
         ornic_in_order_gbps,ornic_round_robin_gbps,ornic_random_gbps\n",
    );
    for &(x, g) in &g_in {
        let val = |c: &Curve| at(c, x).unwrap_or(f64::NAN);
        let oi = val(&o_in);
        let (gr, gq, or, oq) = (val(&g_rr), val(&g_rand), val(&o_rr), val(&o_rand));
        let _ = writeln!(
            notes,
            "  {:>6.0} KB: go-back-N in order {g:.2} Gb/s, round robin {gr:.3}, random {gq:.3}; \
             ORNIC in order {oi:.2}, round robin {or:.2} ({:.0} %), random {oq:.2} ({:.0} %)",
            x / 1024.0,
            100.0 * or / oi,
            100.0 * oq / oi
        );
        let _ = writeln!(csv, "{x},{g},{gr},{gq},{oi},{or},{oq}");
    }
    let sprayed_words = "sprayed over 4 paths (20 us apart), go-back-N falls below 1 Gb/s at \
                         every size (round robin and random)";
    let ornic_words = "ORNIC sprayed (round robin and random) >= 90 % of ORNIC in order on the \
                       same 4 paths at every size";
    let sprayed = if g_rr.is_empty() || g_rand.is_empty() {
        missing("gbn-sprayed", sprayed_words, "no points")
    } else {
        let below = g_rr.iter().chain(&g_rand).all(|&(_, g)| g < COLLAPSED_GBPS);
        claim(
            "gbn-sprayed",
            sprayed_words,
            format!(
                "round robin {}; random {}",
                gbps_list(&g_rr),
                gbps_list(&g_rand)
            ),
            below,
        )
    };
    let claims = vec![
        sprayed,
        unaffected_claim(
            "ornic-sprayed",
            ornic_words,
            &o_in,
            &[("round robin", &o_rr), ("random", &o_rand)],
        ),
    ];
    let figures = vec![Figure::line(
        "ornic-vs-gbn-paths",
        "Go-back-N and ORNIC RDMA WRITE throughput over 4 paths 20 us apart, in order (each \
         path, averaged) and sprayed",
        "WQE size (bytes)",
        "throughput (Gb/s)",
        vec![
            ("go-back-N in order (4 paths, averaged)".to_string(), g_in),
            ("go-back-N sprayed, round robin".to_string(), g_rr),
            ("go-back-N sprayed, random".to_string(), g_rand),
            ("ORNIC in order (4 paths, averaged)".to_string(), o_in),
            ("ORNIC sprayed, round robin".to_string(), o_rr),
            ("ORNIC sprayed, random".to_string(), o_rand),
        ],
        true,
    )];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}
