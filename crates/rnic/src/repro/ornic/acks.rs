//! ornic-acks: ACKs per WQE, counted from the transport's out-of-order WRITE state
//! machines: MP-RDMA acknowledges every data packet; ORNIC's register-scheduler sends the
//! latest ACKed PSN once per turn and the completion at once, so the count falls with the
//! turn's length down to one ACK per WQE. 1 MB WQEs, sprayed over 4 paths 20 µs apart.

use rnic_model::config::Config;
use rnic_model::nic::ornic::{run_ack_bench, AckBenchResult, AckBenchSpec};
use rnic_transport::ooo::{AckPolicy, BitmapDesign};
use std::fmt::Write as _;

use super::PROFILE;
use crate::repro::claim::{claim, missing, ClaimSource};
use crate::repro::{Evaluation, Experiment, Figure, Outputs};

/// ornic-acks.
pub const EXPERIMENT: Experiment = Experiment {
    id: "ornic-acks",
    title: "ACKs per 1 MB OOO WRITE WQE: ORNIC's register-scheduler by turn length vs MP-RDMA",
    figure: "Sec. 3.5",
    sweeps: &[],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "mp-rdma-per-packet",
            source: "Sec. 3.5: for MP-RDMA \"the number of ACK packets is equal to the number \
                     of RDMA data packets\". Exact, without loss.",
        },
        ClaimSource {
            id: "ornic-one-per-wqe",
            source: "Sec. 3.5: ORNIC's ACKs \"can be as low as one ACK for each WQE\". Exactly \
                     one per WQE once the scheduler's turn outlasts the WQE.",
        },
        ClaimSource {
            id: "ornic-adapts",
            source: "Sec. 3.5: ORNIC \"is able to adaptively adjust the number of ACK packets \
                     sent\". rnic's reading: ACKs per WQE never rise as the turn grows, and the \
                     shortest turn (one packet time) sends at least 10x as many as the longest.",
        },
    ],
    evaluate: |_: &Outputs| eval_acks(&AcksPlan::full()),
};

/// The points of ornic-acks.
#[derive(Debug, Clone)]
pub struct AcksPlan {
    pub wqe_bytes: u32,
    pub wqes: u32,
    /// Scheduler turns, ns (the first: about one packet time).
    pub turns_ns: Vec<f64>,
}

impl AcksPlan {
    /// 8 WQEs of 1 MB; turns of one packet time (0.33 µs) to 1 ms.
    pub fn full() -> AcksPlan {
        AcksPlan {
            wqe_bytes: 1 << 20,
            wqes: 8,
            // The first: one 4 KB packet at 100 Gb/s.
            turns_ns: vec![327.68, 1_000.0, 10_000.0, 100_000.0, 1_000_000.0],
        }
    }
}

fn spec(plan: &AcksPlan, design: BitmapDesign, policy: AckPolicy) -> AckBenchSpec {
    AckBenchSpec {
        design,
        policy,
        wqe_bytes: plan.wqe_bytes,
        wqes: plan.wqes,
        paths: 4,
        mdd_ns: 20_000.0,
    }
}

/// Runs MP-RDMA and ORNIC at each turn and checks the claims.
pub fn eval_acks(plan: &AcksPlan) -> anyhow::Result<Evaluation> {
    let cfg = Config::resolve(PROFILE, &[])?;
    let mp = run_ack_bench(
        &cfg,
        &spec(plan, BitmapDesign::MpRdma, AckPolicy::PerPacket),
    );
    let ornic: Vec<(f64, AckBenchResult)> = plan
        .turns_ns
        .iter()
        .map(|&t| {
            let policy = AckPolicy::Aggregated {
                turn_ps: (t * 1000.0) as u64,
            };
            (
                t,
                run_ack_bench(&cfg, &spec(plan, BitmapDesign::Ornic, policy)),
            )
        })
        .collect();
    let packets_per_wqe = plan.wqe_bytes.div_ceil(cfg.qp.pmtu);
    let mut notes = format!(
        "{} OOO WRITE WQEs of {} B ({packets_per_wqe} packets), sprayed over 4 paths 20 us apart:\n",
        plan.wqes, plan.wqe_bytes
    );
    let _ = writeln!(
        notes,
        "  MP-RDMA           {:>8.1} ACKs per WQE ({} ACKs for {} data packets), bytes {}",
        mp.acks_per_wqe(),
        mp.acks,
        mp.data_packets,
        if mp.bytes_ok { "verified" } else { "WRONG" }
    );
    let mut csv = String::from("arm,turn_ns,acks_per_wqe,acks,naks,data_packets,bytes_ok\n");
    let _ = writeln!(
        csv,
        "mp_rdma,,{},{},{},{},{}",
        mp.acks_per_wqe(),
        mp.acks,
        mp.naks,
        mp.data_packets,
        mp.bytes_ok
    );
    for (t, r) in &ornic {
        let _ = writeln!(
            notes,
            "  ORNIC turn {:>7.2} us {:>6.1} ACKs per WQE ({} NAKs, {} packets carried the address), bytes {}",
            t / 1000.0,
            r.acks_per_wqe(),
            r.naks,
            r.address_carrying,
            if r.bytes_ok { "verified" } else { "WRONG" }
        );
        let _ = writeln!(
            csv,
            "ornic,{t},{},{},{},{},{}",
            r.acks_per_wqe(),
            r.acks,
            r.naks,
            r.data_packets,
            r.bytes_ok
        );
    }
    let all_ok = mp.bytes_ok
        && mp.wqes_completed == plan.wqes
        && ornic
            .iter()
            .all(|(_, r)| r.bytes_ok && r.wqes_completed == plan.wqes);
    let per_packet_words = "MP-RDMA sends one ACK per data packet";
    let one_words = "ORNIC sends as few as one ACK per WQE (turn longer than the WQE)";
    let adapt_words = "ORNIC's ACKs per WQE fall as the scheduler's turn grows (>= 10x from \
                       one packet time to 1 ms)";
    let claims = if ornic.is_empty() {
        vec![
            missing("mp-rdma-per-packet", per_packet_words, "no points"),
            missing("ornic-one-per-wqe", one_words, "no points"),
            missing("ornic-adapts", adapt_words, "no points"),
        ]
    } else {
        let per_wqe: Vec<f64> = ornic.iter().map(|(_, r)| r.acks_per_wqe()).collect();
        let first = per_wqe[0];
        let last = *per_wqe.last().unwrap_or(&0.0);
        vec![
            claim(
                "mp-rdma-per-packet",
                per_packet_words,
                format!("{} ACKs for {} data packets", mp.acks, mp.data_packets),
                all_ok && mp.acks == mp.data_packets,
            ),
            claim(
                "ornic-one-per-wqe",
                one_words,
                format!("{last:.2} ACKs per WQE at a 1 ms turn"),
                all_ok && last == 1.0,
            ),
            claim(
                "ornic-adapts",
                adapt_words,
                per_wqe
                    .iter()
                    .map(|a| format!("{a:.1}"))
                    .collect::<Vec<_>>()
                    .join(" -> "),
                all_ok && per_wqe.windows(2).all(|w| w[1] <= w[0]) && first >= 10.0 * last,
            ),
        ]
    };
    let figures = vec![Figure::line(
        "ornic-acks",
        "ACKs per 1 MB OOO WRITE WQE",
        "scheduler turn (ns)",
        "ACKs per WQE",
        vec![
            (
                "ORNIC register-scheduler".to_string(),
                ornic.iter().map(|(t, r)| (*t, r.acks_per_wqe())).collect(),
            ),
            (
                "MP-RDMA (per packet)".to_string(),
                plan.turns_ns
                    .iter()
                    .map(|&t| (t, mp.acks_per_wqe()))
                    .collect(),
            ),
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
