//! ornic-sizing: the out-of-order structures' dimensions and on-chip memory, derived from
//! the `ornic` profile (link rate, PMTU, path delay difference, round trip, block width,
//! QPs) by the same sizing the bitmaps are built from, printed beside the paper's numbers.

use rnic_model::config::Config;
use rnic_model::nic::mech::ornic::sizing_of;
use rnic_transport::ooo::sizing::Sizing;
use std::fmt::Write as _;

use super::PROFILE;
use crate::repro::claim::{claim, within, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Figure, Outputs};

/// ornic-sizing.
pub const EXPERIMENT: Experiment = Experiment {
    id: "ornic-sizing",
    title: "OTD, BDP window, bitmap width and the bitmap's on-chip memory for 2048 QPs",
    figure: "Sec. 3.3-3.4",
    sweeps: &[],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "otd",
            kind: ClaimKind::Calculation,
            source: "Sec. 3.3, Eq. 3: OTD = MDD x B / packet length, 64 for 100 Gb/s, 4096 B \
                     and 20 us. The exact quotient must be within 10 % of 64 and the register \
                     value 64.",
        },
        ClaimSource {
            id: "bdp-window",
            kind: ClaimKind::Calculation,
            source: "Sec. 3.4, Eq. 5: BDP window = B x RTT / packet length, \"about 256\" at \
                     90 us. The exact quotient must be within 10 % of 256 and the register \
                     value 256.",
        },
        ClaimSource {
            id: "bitmap-width",
            kind: ClaimKind::Calculation,
            source: "Sec. 3.4, Eq. 6: bitmap width = OTD + BDP window = 320, 320 / 16 = 20 \
                     block nodes per QP. Exact.",
        },
        ClaimSource {
            id: "pool-bits",
            kind: ClaimKind::Calculation,
            source: "Sec. 3.4: 2048 x 2 = 4096 pool blocks of 16 bits = 65,536 bits, 12-bit \
                     block ids. Exact.",
        },
        ClaimSource {
            id: "node-array-bits",
            kind: ClaimKind::Calculation,
            source: "Sec. 3.4: 20 x (12 + 1 + 1) = 280 bits per QP, 573,440 bits for 2048 \
                     QPs. Exact.",
        },
    ],
    evaluate: |_: &Outputs| eval_sizing(),
};

/// Derives the dimensions from the profile and checks them against the paper's.
pub fn eval_sizing() -> anyhow::Result<Evaluation> {
    let cfg = Config::resolve(PROFILE, &[])?;
    let s: Sizing = sizing_of(&cfg);
    let rows: [(&str, String, String); 12] = [
        (
            "OTD exact (packets)",
            format!("{:.2}", s.otd_exact),
            "-".into(),
        ),
        ("OTD register (packets)", s.otd.to_string(), "64".into()),
        (
            "BDP window exact (packets)",
            format!("{:.2}", s.bdp_exact),
            "about 256".into(),
        ),
        (
            "BDP window register (packets)",
            s.bdp_window.to_string(),
            "256".into(),
        ),
        (
            "bitmap width (bits per QP)",
            s.bitmap_width.to_string(),
            "320".into(),
        ),
        ("block nodes per QP (N)", s.nodes.to_string(), "20".into()),
        ("pool blocks", s.pool_blocks.to_string(), "4096".into()),
        ("pool bits", s.pool_bits.to_string(), "65536".into()),
        ("block id bits", s.block_id_bits.to_string(), "12".into()),
        (
            "node array bits per QP",
            s.node_array_bits_per_qp.to_string(),
            "280".into(),
        ),
        (
            "node array bits, all QPs",
            s.node_array_bits.to_string(),
            "573440".into(),
        ),
        (
            "MP-RDMA static bitmaps (OTD bits x QPs)",
            s.static_bitmap_bits.to_string(),
            "-".into(),
        ),
    ];
    let mut notes = format!(
        "on-chip memory of the out-of-order bitmap ({} Gb/s, {} B packets, MDD {} ns, RTT {} ns, \
         {}-bit blocks, {} QPs):\n",
        cfg.eth.gbps, cfg.qp.pmtu, cfg.ooo.mdd_ns, cfg.ooo.rtt_ns, s.block_bits, cfg.ooo.qps
    );
    let mut csv = String::from("quantity,rnic,paper\n");
    for (name, ours, paper) in &rows {
        let _ = writeln!(notes, "  {name:<42} {ours:>10}  paper {paper}");
        let _ = writeln!(csv, "{name},{ours},{paper}");
    }
    let _ = writeln!(
        notes,
        "  a BDP-wide static bitmap for every QP (IRN) would take {} bits",
        s.bdp_static_bits
    );
    let claims = vec![
        claim(
            "otd",
            "OTD = MDD x B / packet length is 64 (exact quotient within 10 %, register 64)",
            format!("{:.2} -> {}", s.otd_exact, s.otd),
            within(s.otd_exact, 64.0, 0.10) && s.otd == 64,
        ),
        claim(
            "bdp-window",
            "BDP window = B x RTT / packet length is about 256 (within 10 %, register 256)",
            format!("{:.2} -> {}", s.bdp_exact, s.bdp_window),
            within(s.bdp_exact, 256.0, 0.10) && s.bdp_window == 256,
        ),
        claim(
            "bitmap-width",
            "bitmap width OTD + BDP window = 320 bits = 20 nodes of 16-bit blocks",
            format!(
                "{} bits, {} nodes of {} bits",
                s.bitmap_width, s.nodes, s.block_bits
            ),
            s.bitmap_width == 320 && s.nodes == 20 && s.block_bits == 16,
        ),
        claim(
            "pool-bits",
            "4096 pool blocks for 2048 QPs = 65,536 bits, 12-bit block ids",
            format!(
                "{} blocks, {} bits, {}-bit ids",
                s.pool_blocks, s.pool_bits, s.block_id_bits
            ),
            s.pool_blocks == 4096 && s.pool_bits == 65_536 && s.block_id_bits == 12,
        ),
        claim(
            "node-array-bits",
            "node arrays: 280 bits per QP, 573,440 bits for 2048 QPs",
            format!(
                "{} bits per QP, {} bits",
                s.node_array_bits_per_qp, s.node_array_bits
            ),
            s.node_array_bits_per_qp == 280 && s.node_array_bits == 573_440,
        ),
    ];
    let figures = vec![Figure::table(
        "ornic-sizing",
        "ORNIC out-of-order structures for 2048 QPs, rnic vs paper (Sec. 3.3-3.4)",
        &["quantity", "rnic", "paper"],
        rows.iter()
            .map(|(name, ours, paper)| vec![name.to_string(), ours.clone(), paper.clone()])
            .collect(),
    )];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}
