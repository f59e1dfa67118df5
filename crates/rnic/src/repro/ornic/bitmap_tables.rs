//! ornic-bitmap-cycles and ornic-bitmap-blocks (the paper's Tables 2 and 3): MELO+, LEFT,
//! LEFT+ and ORNIC bitmaps timed by the model's bitmap bench.
//!
//! The workload (the paper sketches it: "the incoming packets were shuffled, and the OOO
//! distance did not exceed 64"; with loss, "a random packet in the first bitmap block was
//! dropped"): one WQE of as many packets as the bitmap is wide (320), each window of OTD
//! (64) consecutive packets released in a random order, 100 WQEs. A loss is found by OTD and
//! NAKed with the head block's bits; the resend arrives one round trip (about 275 packet
//! times) later, after the rest of the WQE: the with-loss column covers the loss from its
//! detection to its repair, which is when the designs differ. Every WQE must end whole.

use rnic_model::config::Config;
use rnic_model::nic::mech::ornic::{run_bitmap_bench, sizing_of, BenchResult, BenchSpec};
use rnic_transport::ooo::BitmapDesign;
use std::fmt::Write as _;

use super::PROFILE;
use crate::repro::claim::{claim, missing, within, ClaimKind, ClaimSource};
use crate::repro::{Evaluation, Experiment, Figure, Outputs};

/// The designs of the paper's tables, in its order.
pub const TABLE_DESIGNS: [BitmapDesign; 4] = [
    BitmapDesign::MeloPlus,
    BitmapDesign::Left,
    BitmapDesign::LeftPlus,
    BitmapDesign::Ornic,
];

/// Table 2, cycles per packet: (no loss, with loss) per [`TABLE_DESIGNS`].
pub const PAPER_CYCLES: [(f64, f64); 4] = [(1.75, 7.75), (1.25, 5.25), (1.25, 1.65), (1.0, 1.0)];
/// Table 3, most blocks held: (no loss, with loss) per [`TABLE_DESIGNS`].
pub const PAPER_BLOCKS: [(u32, u32); 4] = [(4, 20), (4, 20), (4, 20), (4, 5)];

/// ornic-bitmap-cycles.
pub const CYCLES: Experiment = Experiment {
    id: "ornic-bitmap-cycles",
    title: "cycles to locate the bitmap block per packet, MELO+/LEFT/LEFT+/ORNIC, no loss and \
            one lost packet",
    figure: "Table 2",
    sweeps: &[],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "ornic-one-cycle",
            kind: ClaimKind::Structural,
            source: "Sec. 4.3, Table 2: ORNIC's array reaches any block in one clock cycle, \
                     1 / 1. Exact. \
                     Structural: rnic's node array is indexed directly, one cycle by construction.",
        },
        ClaimSource {
            id: "melo-plus",
            kind: ClaimKind::Prediction,
            source: "Table 2: MELO+ 1.75 without loss, 7.75 with loss; each within 10 %.",
        },
        ClaimSource {
            id: "left",
            kind: ClaimKind::Prediction,
            source: "Table 2: LEFT 1.25 without loss, 5.25 with loss; each within 10 %.",
        },
        ClaimSource {
            id: "left-plus",
            kind: ClaimKind::Prediction,
            source: "Table 2: LEFT+ 1.25 without loss, 1.65 with loss; each within 10 %.",
        },
        ClaimSource {
            id: "loss-order",
            kind: ClaimKind::Prediction,
            source: "Sec. 4.3: with loss MELO+ needs the most cycles, LEFT fewer, LEFT+ fewer \
                     again, ORNIC the fewest (Table 2's order). Strict order.",
        },
    ],
    evaluate: |_: &Outputs| eval_cycles(&TablePlan::full()?),
};

/// ornic-bitmap-blocks.
pub const BLOCKS: Experiment = Experiment {
    id: "ornic-bitmap-blocks",
    title: "most bitmap blocks a QP holds, MELO+/LEFT/LEFT+/ORNIC, no loss and one lost packet",
    figure: "Table 3",
    sweeps: &[],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "no-loss",
            kind: ClaimKind::Structural,
            source: "Sec. 4.3, Table 3: without loss every design holds at most 4 blocks (the \
                     OOO distance, 64, is four 16-bit blocks). Exact: 4. \
                     Structural: the workload reorders within the OTD, and 64 PSNs span four \
                     blocks.",
        },
        ClaimSource {
            id: "loss-ornic",
            kind: ClaimKind::Structural,
            source: "Table 3: with a lost packet ORNIC holds only the head, tail and lossy \
                     blocks: 5. Exact. \
                     Structural: follows from ORNIC's node array keeping the head, tail and lossy \
                     blocks.",
        },
        ClaimSource {
            id: "loss-lists",
            kind: ClaimKind::Structural,
            source: "Table 3: with a lost packet MELO+, LEFT and LEFT+ keep every block of \
                     the list, towards the whole 320-bit bitmap: 20. Exact. \
                     Structural: a list keeps every block until the lost packet arrives, so it \
                     reaches the whole bitmap's 20.",
        },
    ],
    evaluate: |_: &Outputs| eval_blocks(&TablePlan::full()?),
};

/// The bench settings of both tables.
#[derive(Debug, Clone)]
pub struct TablePlan {
    pub cfg: Config,
    pub packets: u32,
    pub reorder_distance: u32,
    pub trials: u32,
}

impl TablePlan {
    /// The `ornic` profile: a WQE as long as the bitmap is wide, reordered within the OTD,
    /// 100 WQEs per cell.
    pub fn full() -> anyhow::Result<TablePlan> {
        let cfg = Config::resolve(PROFILE, &[])?;
        let s = sizing_of(&cfg);
        Ok(TablePlan {
            packets: s.bitmap_width,
            reorder_distance: s.otd,
            trials: 100,
            cfg,
        })
    }

    /// One design, no loss and with loss.
    fn run(&self, d: BitmapDesign) -> (BenchResult, BenchResult) {
        let spec = |lose_one| BenchSpec {
            packets: self.packets,
            reorder_distance: self.reorder_distance,
            lose_one,
            trials: self.trials,
        };
        (
            run_bitmap_bench(&self.cfg, d, &spec(false)),
            run_bitmap_bench(&self.cfg, d, &spec(true)),
        )
    }

    /// Every table design and MP-RDMA.
    fn run_all(&self) -> Vec<(BenchResult, BenchResult)> {
        BitmapDesign::ALL.iter().map(|&d| self.run(d)).collect()
    }
}

fn workload_note(plan: &TablePlan) -> String {
    format!(
        "{} WQEs of {} packets, reordered within windows of {} packets; with loss: one random \
         packet of the first block lost, NAKed by OTD, resent one RTT later\n",
        plan.trials, plan.packets, plan.reorder_distance
    )
}

fn bars(stem: &str, title: &str, y: &str, rows: &[(String, f64, f64)]) -> Figure {
    Figure::categories(
        stem,
        title,
        "bitmap",
        y,
        rows.iter().map(|r| r.0.clone()).collect(),
        vec![
            ("no loss".into(), rows.iter().map(|r| r.1).collect()),
            ("with loss".into(), rows.iter().map(|r| r.2).collect()),
        ],
    )
}

/// All WQEs whole, or a claim-failing note.
fn all_complete(res: &[(BenchResult, BenchResult)]) -> bool {
    res.iter().all(|(a, b)| a.complete && b.complete)
}

/// Table 2: average cycles to locate the block per packet.
pub fn eval_cycles(plan: &TablePlan) -> anyhow::Result<Evaluation> {
    let res = plan.run_all();
    let whole = all_complete(&res);
    let mut notes = workload_note(plan);
    let mut csv = String::from("bitmap,no_loss_cycles,loss_cycles,paper_no_loss,paper_loss\n");
    let mut rows = Vec::new();
    for (i, (a, b)) in res.iter().enumerate() {
        let paper = PAPER_CYCLES.get(i).copied();
        let p = paper.map_or("-".to_string(), |(x, y)| format!("{x} / {y}"));
        let _ = writeln!(
            notes,
            "  {:<8} {:.2} / {:.2} cycles  (paper {p}){}",
            a.design.name(),
            a.avg_cycles,
            b.avg_cycles,
            if b.dropped_out_of_window > 0 {
                format!(
                    "; drops {:.1} packets per WQE beyond its {}-bit window",
                    b.dropped_out_of_window as f64 / f64::from(plan.trials.max(1)),
                    plan.reorder_distance
                )
            } else {
                String::new()
            }
        );
        let (px, py) = paper.unwrap_or((f64::NAN, f64::NAN));
        let _ = writeln!(
            csv,
            "{},{},{},{px},{py}",
            a.design.name(),
            a.avg_cycles,
            b.avg_cycles
        );
        if paper.is_some() {
            rows.push((a.design.name().to_string(), a.avg_cycles, b.avg_cycles));
        }
    }
    let cyc = |i: usize| rows.get(i).map(|r| (r.1, r.2));
    let values = |i: usize, id: &str, name: &str| {
        let (px, py) = PAPER_CYCLES[i];
        let words = format!("{name} {px} / {py} cycles without / with loss (each within 10 %)");
        match cyc(i) {
            Some((x, y)) => claim(
                id,
                words,
                format!("{x:.2} / {y:.2}"),
                whole && within(x, px, 0.10) && within(y, py, 0.10),
            ),
            None => missing(id, words, "no results"),
        }
    };
    let one_words = "ORNIC locates every packet's block in 1 cycle, without and with loss";
    let order_words = "with loss: MELO+ > LEFT > LEFT+ > ORNIC cycles";
    let claims = if rows.len() < 4 {
        vec![
            missing("ornic-one-cycle", one_words, "no results"),
            values(0, "melo-plus", "MELO+"),
            values(1, "left", "LEFT"),
            values(2, "left-plus", "LEFT+"),
            missing("loss-order", order_words, "no results"),
        ]
    } else {
        let l: Vec<f64> = rows.iter().map(|r| r.2).collect();
        vec![
            claim(
                "ornic-one-cycle",
                one_words,
                format!("{:.2} / {:.2}", rows[3].1, rows[3].2),
                whole && rows[3].1 == 1.0 && rows[3].2 == 1.0,
            ),
            values(0, "melo-plus", "MELO+"),
            values(1, "left", "LEFT"),
            values(2, "left-plus", "LEFT+"),
            claim(
                "loss-order",
                order_words,
                format!("{:.2} > {:.2} > {:.2} > {:.2}", l[0], l[1], l[2], l[3]),
                whole && l[0] > l[1] && l[1] > l[2] && l[2] > l[3],
            ),
        ]
    };
    let figures = vec![bars(
        "ornic-bitmap-cycles",
        "Cycles to locate the bitmap block per packet (Table 2)",
        "cycles per packet",
        &rows,
    )];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}

/// Table 3: the most pool blocks a QP holds.
pub fn eval_blocks(plan: &TablePlan) -> anyhow::Result<Evaluation> {
    let res = plan.run_all();
    let whole = all_complete(&res);
    let mut notes = workload_note(plan);
    let mut csv = String::from("bitmap,no_loss_blocks,loss_blocks,paper_no_loss,paper_loss\n");
    let mut rows = Vec::new();
    for (i, (a, b)) in res.iter().enumerate() {
        let Some(&(px, py)) = PAPER_BLOCKS.get(i) else {
            let _ = writeln!(
                notes,
                "  {:<8} preallocated: {} bits per QP, no pool blocks",
                a.design.name(),
                plan.reorder_distance
            );
            continue;
        };
        let _ = writeln!(
            notes,
            "  {:<8} {} / {} blocks  (paper {px} / {py})",
            a.design.name(),
            a.max_blocks,
            b.max_blocks
        );
        let _ = writeln!(
            csv,
            "{},{},{},{px},{py}",
            a.design.name(),
            a.max_blocks,
            b.max_blocks
        );
        rows.push((
            a.design.name().to_string(),
            f64::from(a.max_blocks),
            f64::from(b.max_blocks),
        ));
    }
    let no_loss_words = "without loss every design holds at most 4 blocks (4)";
    let ornic_words = "with a lost packet ORNIC holds 5 blocks (head, tail, lossy)";
    let lists_words = "with a lost packet MELO+, LEFT and LEFT+ hold 20 blocks (the whole bitmap)";
    let claims = if rows.len() < 4 {
        vec![
            missing("no-loss", no_loss_words, "no results"),
            missing("loss-ornic", ornic_words, "no results"),
            missing("loss-lists", lists_words, "no results"),
        ]
    } else {
        let fmt = |pick: fn(&(String, f64, f64)) -> f64, idx: &[usize]| {
            idx.iter()
                .map(|&i| format!("{} {}", rows[i].0, pick(&rows[i])))
                .collect::<Vec<_>>()
                .join(", ")
        };
        vec![
            claim(
                "no-loss",
                no_loss_words,
                fmt(|r| r.1, &[0, 1, 2, 3]),
                whole && rows.iter().all(|r| r.1 == 4.0),
            ),
            claim(
                "loss-ornic",
                ornic_words,
                fmt(|r| r.2, &[3]),
                whole && rows[3].2 == 5.0,
            ),
            claim(
                "loss-lists",
                lists_words,
                fmt(|r| r.2, &[0, 1, 2]),
                whole && rows[..3].iter().all(|r| r.2 == 20.0),
            ),
        ]
    };
    let figures = vec![bars(
        "ornic-bitmap-blocks",
        "Most bitmap blocks held by a QP (Table 3)",
        "blocks",
        &rows,
    )];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}
