//! ornic-vs-gbn (the paper's Fig. 11): a go-back-N RoCEv2 NIC (the paper's ERNIC and
//! ConnectX-5) and ORNIC (out-of-order WRITE WQEs, `qp.reliability = "ornic"`), each writing
//! one WQE at a time, in order (ECMP keeps the QP on one path) and with every packet sprayed
//! over four paths that differ by up to 20 µs.

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::isolation::header_limited_gbps;
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};
use rnic_model::config::Config;
use std::fmt::Write as _;

use super::PROFILE;

/// ornic-vs-gbn.
pub const EXPERIMENT: Experiment = Experiment {
    id: "ornic-vs-gbn",
    title: "go-back-N and ORNIC RDMA WRITE throughput in order and sprayed over 4 paths \
            (20 µs apart)",
    figure: "Fig. 11",
    sweeps: &[
        sweep_file!("ornic/vs-gbn.toml"),
        sweep_file!("ornic/vs-gbn-ornic.toml"),
    ],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "gbn-in-order",
            kind: ClaimKind::Prediction,
            source: "Fig. 11a: in the sequential scenario the NICs run near the line rate. \
                     rnic's reading: go-back-N reaches at least 90 % of the header-limited \
                     rate at every WQE size (1, 4, 16 MB).",
        },
        ClaimSource {
            id: "gbn-sprayed",
            kind: ClaimKind::Prediction,
            source: "Sec. 4.1, Fig. 11b: with out-of-order packets \"the performance of ERNIC \
                     and Mellanox CX-5 dropped below 1 Gbps\". Below 1 Gb/s at every WQE size, \
                     for round-robin and random spraying.",
        },
        ClaimSource {
            id: "ornic-sprayed",
            kind: ClaimKind::Prediction,
            source: "Sec. 4.1, Fig. 11: under the same reordering \"ORNIC's performance \
                     remained largely unaffected\". rnic's reading: ORNIC sprayed (round \
                     robin and random) reaches at least 90 % of ORNIC in order at every WQE \
                     size (1, 4, 16 MB).",
        },
    ],
    evaluate: eval_vs_gbn,
};

const SIZES_NOTE: &str = "WQE size / completion time, one WQE at a time";

fn eval_vs_gbn(o: &Outputs) -> anyhow::Result<Evaluation> {
    let cfg = Config::resolve(PROFILE, &[])?;
    let pmtu = u64::from(cfg.qp.pmtu);
    let in_order = o.curve(0, &[("net.spray.policy", "ecmp")], "goodput_gbps")?;
    let rr = o.curve(0, &[("net.spray.policy", "round_robin")], "goodput_gbps")?;
    let random = o.curve(0, &[("net.spray.policy", "random")], "goodput_gbps")?;
    let o_in = o.curve(1, &[("net.spray.policy", "ecmp")], "goodput_gbps")?;
    let o_rr = o.curve(1, &[("net.spray.policy", "round_robin")], "goodput_gbps")?;
    let o_random = o.curve(1, &[("net.spray.policy", "random")], "goodput_gbps")?;
    let mut notes = format!("go-back-N RDMA WRITE, {SIZES_NOTE}:\n");
    let mut csv = String::from(
        "size_bytes,ecmp_gbps,round_robin_gbps,random_gbps,ornic_ecmp_gbps,\
         ornic_round_robin_gbps,ornic_random_gbps\n",
    );
    for (i, &(x, g)) in in_order.iter().enumerate() {
        let r = rr.get(i).map_or(f64::NAN, |p| p.1);
        let q = random.get(i).map_or(f64::NAN, |p| p.1);
        let _ = writeln!(
            notes,
            "  {:>6.0} KB: in order {g:.2} Gb/s (header-limited {:.2}), round robin {r:.3}, \
             random {q:.3}",
            x / 1024.0,
            header_limited_gbps(&cfg, x as u64, pmtu)
        );
        let at = |c: &[(f64, f64)]| c.iter().find(|p| p.0 == x).map_or(f64::NAN, |p| p.1);
        let (oi, or, oq) = (at(&o_in), at(&o_rr), at(&o_random));
        let _ = writeln!(csv, "{x},{g},{r},{q},{oi},{or},{oq}");
    }
    let _ = writeln!(notes, "ORNIC out-of-order WRITE, {SIZES_NOTE}:");
    for (i, &(x, g)) in o_in.iter().enumerate() {
        let r = o_rr.get(i).map_or(f64::NAN, |p| p.1);
        let q = o_random.get(i).map_or(f64::NAN, |p| p.1);
        let _ = writeln!(
            notes,
            "  {:>6.0} KB: in order {g:.2} Gb/s, round robin {r:.2} ({:.0} %), random {q:.2} \
             ({:.0} %)",
            x / 1024.0,
            100.0 * r / g,
            100.0 * q / g
        );
    }
    let order_words =
        "in order, go-back-N reaches >= 90 % of the header-limited rate at every size";
    let sprayed_words = "sprayed over 4 paths (20 us apart), go-back-N falls below 1 Gb/s at \
                         every size (round robin and random)";
    let gbps = |c: &[(f64, f64)]| {
        c.iter()
            .map(|(x, y)| format!("{:.0} MB {y:.2}", x / 1048576.0))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ornic_words = "ORNIC sprayed (round robin and random) >= 90 % of ORNIC in order at \
                       every size";
    let ornic_claim = if o_in.is_empty() || o_rr.len() != o_in.len() || o_random.len() != o_in.len()
    {
        missing("ornic-sprayed", ornic_words, "no points")
    } else {
        let ok = o_in
            .iter()
            .zip(o_rr.iter().zip(&o_random))
            .all(|(&(_, g), (&(_, r), &(_, q)))| r >= 0.9 * g && q >= 0.9 * g);
        let pcts = o_in
            .iter()
            .zip(o_rr.iter().zip(&o_random))
            .map(|(&(x, g), (&(_, r), &(_, q)))| {
                format!(
                    "{:.0} MB {:.0} / {:.0} %",
                    x / 1048576.0,
                    100.0 * r / g,
                    100.0 * q / g
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        claim(
            "ornic-sprayed",
            ornic_words,
            format!("in order {}; sprayed rr / random: {pcts}", gbps(&o_in)),
            ok,
        )
    };
    let mut claims = if in_order.is_empty() || rr.is_empty() || random.is_empty() {
        vec![
            missing("gbn-in-order", order_words, "no points"),
            missing("gbn-sprayed", sprayed_words, "no points"),
        ]
    } else {
        let near_line = in_order
            .iter()
            .all(|&(x, g)| g >= 0.9 * header_limited_gbps(&cfg, x as u64, pmtu));
        let below_1 = rr.iter().chain(&random).all(|&(_, g)| g < 1.0);
        vec![
            claim(
                "gbn-in-order",
                order_words,
                format!("Gb/s: {}", gbps(&in_order)),
                near_line,
            ),
            claim(
                "gbn-sprayed",
                sprayed_words,
                format!("round robin {}; random {}", gbps(&rr), gbps(&random)),
                below_1,
            ),
        ]
    };
    claims.push(ornic_claim);
    let figures = vec![Figure::line(
        "ornic-vs-gbn",
        "Go-back-N and ORNIC RDMA WRITE throughput, in order and sprayed (Fig. 11)",
        "WQE size (bytes)",
        "throughput (Gb/s)",
        vec![
            ("go-back-N in order (ECMP)".to_string(), in_order),
            ("go-back-N sprayed, round robin".to_string(), rr),
            ("go-back-N sprayed, random".to_string(), random),
            ("ORNIC in order (ECMP)".to_string(), o_in),
            ("ORNIC sprayed, round robin".to_string(), o_rr),
            ("ORNIC sprayed, random".to_string(), o_random),
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
