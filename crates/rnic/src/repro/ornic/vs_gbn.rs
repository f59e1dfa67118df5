//! ornic-vs-gbn (the paper's Fig. 11), the go-back-N arm: a go-back-N RoCEv2 NIC (the
//! paper's ERNIC and ConnectX-5) writing one WQE at a time, in order (ECMP keeps the QP on
//! one path) and with every packet sprayed over four paths that differ by up to 20 µs. The
//! ORNIC arm needs the out-of-order transport, which rnic does not have yet.

use crate::repro::claim::{claim, missing, ClaimSource};
use crate::repro::isolation::header_limited_gbps;
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};
use rnic_model::config::Config;
use std::fmt::Write as _;

use super::PROFILE;

/// ornic-vs-gbn.
pub const EXPERIMENT: Experiment = Experiment {
    id: "ornic-vs-gbn",
    title: "go-back-N RDMA WRITE throughput in order and sprayed over 4 paths (20 µs apart)",
    figure: "Fig. 11",
    sweeps: &[sweep_file!("ornic/vs-gbn.toml")],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "gbn-in-order",
            source: "Fig. 11a: in the sequential scenario the NICs run near the line rate. \
                     rnic's reading: go-back-N reaches at least 90 % of the header-limited \
                     rate at every WQE size (1, 4, 16 MB).",
        },
        ClaimSource {
            id: "gbn-sprayed",
            source: "Sec. 4.1, Fig. 11b: with out-of-order packets \"the performance of ERNIC \
                     and Mellanox CX-5 dropped below 1 Gbps\". Below 1 Gb/s at every WQE size, \
                     for round-robin and random spraying.",
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
    let mut notes = format!("go-back-N RDMA WRITE, {SIZES_NOTE}:\n");
    let mut csv = String::from("size_bytes,ecmp_gbps,round_robin_gbps,random_gbps\n");
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
        let _ = writeln!(csv, "{x},{g},{r},{q}");
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
    let claims = if in_order.is_empty() || rr.is_empty() || random.is_empty() {
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
    let figures = vec![Figure::line(
        "ornic-vs-gbn",
        "Go-back-N RDMA WRITE throughput, in order and sprayed (Fig. 11)",
        "WQE size (bytes)",
        "throughput (Gb/s)",
        vec![
            ("in order (ECMP)".to_string(), in_order),
            ("sprayed, round robin".to_string(), rr),
            ("sprayed, random".to_string(), random),
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
