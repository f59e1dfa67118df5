//! ornic-acks: ACKs per WQE, counted as frames on the simulated wire: `rnic perf write-bw`
//! through the timed model with out-of-order QPs (`qp.reliability`), one WQE at a time.
//! MP-RDMA acknowledges every data packet; ORNIC's register-scheduler sends the latest ACKed
//! PSN once per turn (`ooo.ack_turn_ns`) and the completion at once, so the count falls with
//! the turn's length down to one ACK per WQE. 1 MB WQEs, sprayed over 4 paths 20 µs apart.

use crate::config::{parse_set, Config};
use crate::model::workload::{PerfSpec, PerfTest};
use std::fmt::Write as _;

use super::PROFILE;
use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
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
            kind: ClaimKind::Structural,
            source: "Sec. 3.5: for MP-RDMA \"the number of ACK packets is equal to the number \
                     of RDMA data packets\". Exact, without loss. \
                     Structural: the MP-RDMA arm acknowledges every packet by construction.",
        },
        ClaimSource {
            id: "ornic-one-per-wqe",
            kind: ClaimKind::Structural,
            source: "Sec. 3.5: ORNIC's ACKs \"can be as low as one ACK for each WQE\". Exactly \
                     one per WQE once the scheduler's turn outlasts the WQE. \
                     Structural: the register-scheduler sends a QP's ACK once per turn, so a turn \
                     longer than the WQE sends one.",
        },
        ClaimSource {
            id: "ornic-adapts",
            kind: ClaimKind::Structural,
            source: "Sec. 3.5: ORNIC \"is able to adaptively adjust the number of ACK packets \
                     sent\". rnic's reading: ACKs per WQE never rise as the turn grows, and the \
                     shortest turn (one packet time) sends at least 10x as many as the longest. \
                     Structural: one ACK per turn, so ACKs per WQE follow the WQE's time over the \
                     turn.",
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

/// What one run put on the wire.
#[derive(Debug, Clone, Copy)]
pub struct WireAcks {
    /// ACK and NAK frames the responder's NIC sent.
    pub acks: u64,
    /// Bitmap NAKs among them.
    pub naks: u64,
    /// Data frames the requester's NIC sent.
    pub data_packets: u64,
    /// WQEs completed.
    pub wqes_completed: u64,
    /// Every byte of every WQE placed and checked by the payload oracle.
    pub bytes_ok: bool,
}

impl WireAcks {
    pub fn acks_per_wqe(&self) -> f64 {
        self.acks as f64 / self.wqes_completed.max(1) as f64
    }
}

/// `plan.wqes` WRITE WQEs of `plan.wqe_bytes`, one at a time, sprayed over 4 paths 20 µs
/// apart, with `sets` on the `ornic` profile.
fn run_wire(plan: &AcksPlan, sets: &[String]) -> anyhow::Result<WireAcks> {
    let mut all = vec![
        "net.spray.paths=4".to_string(),
        "net.spray.mdd_ns=20000".to_string(),
        "net.spray.policy=random".to_string(),
    ];
    all.extend_from_slice(sets);
    let parsed = all
        .iter()
        .map(|s| parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    let cfg = Config::resolve(PROFILE, &parsed)?;
    let spec = PerfSpec {
        sizes: vec![u64::from(plan.wqe_bytes)],
        iters: u64::from(plan.wqes),
        tx_depth: 1,
        clients: cfg.net.clients,
        ..PerfSpec::perftest(PerfTest::WriteBw)
    };
    let r = crate::model::run_perf(&cfg, &spec)?;
    let stat = |k: &str| r.stats.get(k).copied().unwrap_or(0);
    Ok(WireAcks {
        acks: stat("clients.nic.tx.acks"),
        naks: r.naks,
        data_packets: stat("server.nic.tx.frames"),
        wqes_completed: r.ops_completed,
        bytes_ok: r.bytes_verified
            && r.verified_bytes == u64::from(plan.wqes) * u64::from(plan.wqe_bytes),
    })
}

/// Runs MP-RDMA and ORNIC at each turn and checks the claims.
pub fn eval_acks(plan: &AcksPlan) -> anyhow::Result<Evaluation> {
    let cfg = Config::resolve(PROFILE, &[])?;
    let mp = run_wire(plan, &["qp.reliability=mp_rdma".to_string()])?;
    let ornic: Vec<(f64, WireAcks)> = plan
        .turns_ns
        .iter()
        .map(|&t| {
            let sets = [
                "qp.reliability=ornic".to_string(),
                format!("ooo.ack_turn_ns={t}"),
            ];
            run_wire(plan, &sets).map(|r| (t, r))
        })
        .collect::<anyhow::Result<_>>()?;
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
            "  ORNIC turn {:>7.2} us {:>6.1} ACKs per WQE ({} NAKs, {} data packets), bytes {}",
            t / 1000.0,
            r.acks_per_wqe(),
            r.naks,
            r.data_packets,
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
    let wqes = u64::from(plan.wqes);
    let all_ok = mp.bytes_ok
        && mp.wqes_completed == wqes
        && ornic
            .iter()
            .all(|(_, r)| r.bytes_ok && r.wqes_completed == wqes);
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
