//! csrna-memory (Table 1, Formula 2): on-chip memory for connection state, computed from the
//! structures' sizes (no simulation).

use super::ooocap::{formula2_claim, FORMULA2_SOURCE};
use super::CSRNA_ONCHIP_BYTES;
use crate::model::nic::mech::csrna::onchip;
use crate::repro::claim::{claim, pct, within, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Figure, Outputs};
use std::fmt::Write as _;

/// csrna-memory.
pub const EXPERIMENT: Experiment = Experiment {
    id: "csrna-memory",
    title: "on-chip memory for connection state (computed from the structures)",
    figure: "Table 1",
    sweeps: &[],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "csrna-1.4MB",
            kind: ClaimKind::Calculation,
            source: "§5.1, Table 1: csRNA uses 1.4 MB of on-chip memory for 128K QPs; §5.2: \
                a 300-entry QPC cache and an SQ address table of 128K entries; §4.7: 10 B per \
                QP in that table and Formula 2 for the pending structures. ±10 % is rnic's \
                tolerance for a number the paper states.",
        },
        ClaimSource {
            id: "less-than-cx5",
            kind: ClaimKind::Calculation,
            source: "§5.1, Table 1 and §5.2: \"despite maintaining more active connections, \
                csRNA occupies less memory footprint\": as many QPs as ConnectX-5 (128K) in \
                less on-chip memory than its 2 MB.",
        },
        ClaimSource {
            id: "formula2",
            kind: ClaimKind::Calculation,
            source: FORMULA2_SOURCE,
        },
    ],
    evaluate: evaluate_memory,
};

/// Table 1 (paper rows + csRNA computed) and Formula 2.
pub fn eval_memory(cfg: &onchip::CsrnaMemoryConfig) -> anyhow::Result<Evaluation> {
    let rows = onchip::table1(cfg)?;
    let items = onchip::csrna_memory(cfg)?;
    let mut notes = String::new();
    let _ = writeln!(
        notes,
        "Table 1: RNIC on-chip memory used by connection information"
    );
    let _ = writeln!(
        notes,
        "{:<12} {:>14} {:>10}  source",
        "RNIC", "on-chip", "max QPs"
    );
    let mut csv = String::from("rnic,on_chip_bytes,on_chip_mb,max_qps,source\n");
    let mut bars = Vec::new();
    for r in &rows {
        let src = match r.source {
            onchip::Source::Paper(s) => format!("paper ({s})"),
            onchip::Source::Computed => "computed by rnic".to_string(),
        };
        let _ = writeln!(
            notes,
            "{:<12} {:>11.3} MB {:>10}  {src}",
            r.rnic,
            r.megabytes(),
            r.max_qps
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},\"{}\"",
            r.rnic,
            r.on_chip_bytes,
            r.megabytes(),
            r.max_qps,
            src.replace('"', "'")
        );
        bars.push((r.rnic.to_string(), r.megabytes()));
    }
    let _ = writeln!(notes, "csRNA breakdown:");
    notes.push_str(&onchip::render(&items));
    let csrna = rows
        .iter()
        .find(|r| r.rnic == "csRNA")
        .ok_or_else(|| anyhow::anyhow!("Table 1 has no csRNA row"))?;
    let cx5 = rows.iter().find(|r| r.rnic == "ConnectX-5");
    let bytes = csrna.on_chip_bytes as f64;
    let mut claims = vec![claim(
        "csrna-1.4MB",
        "csRNA: 1.4 MB for 128K QPs (300 x 256 B cache + 10 B/QP SQ table + pending) (±10 %)",
        format!(
            "{:.3} MB ({} B, {:+.1} %) for {} QPs",
            bytes / 1e6,
            csrna.on_chip_bytes,
            pct(bytes - CSRNA_ONCHIP_BYTES, CSRNA_ONCHIP_BYTES),
            csrna.max_qps
        ),
        within(bytes, CSRNA_ONCHIP_BYTES, 0.10),
    )];
    if let Some(cx5) = cx5 {
        claims.push(claim(
            "less-than-cx5",
            "csRNA holds as many QPs (128K) as ConnectX-5 in less on-chip memory (2 MB)",
            format!(
                "{:.3} MB vs {:.3} MB, {} vs {} QPs",
                bytes / 1e6,
                cx5.megabytes(),
                csrna.max_qps,
                cx5.max_qps
            ),
            csrna.on_chip_bytes < cx5.on_chip_bytes && csrna.max_qps >= cx5.max_qps,
        ));
    }
    claims.push(formula2_claim(&[cfg.ooo_cap]));
    let (names, megabytes) = bars.into_iter().unzip();
    let figures = vec![Figure::categories(
        "memory",
        "Table 1: on-chip memory for connection state",
        "RNIC",
        "on-chip memory (MB = 10⁶ B)",
        names,
        vec![("on-chip MB".into(), megabytes)],
    )];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}

fn evaluate_memory(_: &Outputs) -> anyhow::Result<Evaluation> {
    eval_memory(&onchip::CsrnaMemoryConfig::default())
}
