//! dcqcn-fct-websearch: the shape of the DCQCN curve of the FCT-slowdown figure for
//! WebSearch in "HPCC: High Precision Congestion Control" (SIGCOMM '19): at 30 % load the
//! short flows' 95th-percentile slowdown under DCQCN stands far above the long flows', at
//! around ten, the long flows' at a few.
//!
//! The paper's setup: a three-tier fat-tree of 320 servers (16 per rack) with 100 Gb/s NICs
//! and 400 Gb/s switch-to-switch links (no oversubscription), 1 µs per link, 32 MB switch
//! buffers, PFC, WebSearch flow sizes with Poisson arrivals between random servers at 30 %
//! load, DCQCN with the marking thresholds of the simulator released with the paper (Kmin
//! 400 KB, Kmax 1600 KB, Pmax 0.2 at 100 Gb/s: rnic's defaults). Ours, to run in seconds:
//! a k = 4 fat-tree (16 hosts, 2 per edge switch, 100 Gb/s everywhere, so no
//! oversubscription either), 5 ms of arrivals (the paper: far longer), the rest as the
//! paper's, the NIC's transmit order and its DCQCN settings included (one packet per QP
//! in turn; the run script's DCQCN timers and steps). The arms differ only in `net.cc`.

use rnic_model::traffic::cdf::SizeCdf;
use rnic_model::traffic::fct::{self, WorkloadResult};

use crate::repro::claim::{claim, missing, ClaimKind, ClaimSource};
use crate::repro::figure::Figure;
use crate::repro::{Claim, Evaluation, Experiment, Outputs};
use crate::traffic::{Pattern, WorkloadOptions};

/// "Far above": the short flows' p95 slowdown at least this many times the long flows'.
pub const FAR_ABOVE: f64 = 2.0;
/// "Around ten" on the figure's log axis, read as half a decade either side: the short
/// flows' p95 slowdown under DCQCN lies in this band.
pub const SHORT_P95_BAND: (f64, f64) = (3.0, 30.0);
/// "A few": the long flows' p95 slowdown under DCQCN lies in this band.
pub const LONG_P95_BAND: (f64, f64) = (1.5, 10.0);
/// The paper's load, fraction of each host's link.
pub const LOAD: f64 = 0.3;
/// Arrivals for this long, µs (the run lasts until the last flow completes).
pub const ARRIVALS_US: f64 = 5000.0;

/// The WebSearch distribution shipped with rnic, compiled in.
const WEBSEARCH_CDF: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../workloads/websearch.cdf"
));

/// dcqcn-fct-websearch.
pub const EXPERIMENT: Experiment = Experiment {
    id: "dcqcn-fct-websearch",
    title: "WebSearch at 30 % load over a k = 4 fat-tree: FCT slowdown by size, DCQCN vs none",
    figure:
        "the shape of the DCQCN curve of HPCC's (SIGCOMM '19) FCT-slowdown figure for WebSearch",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "short-above-long",
            kind: ClaimKind::Prediction,
            source: "HPCC's FCT-slowdown figure for WebSearch at 30 % load: under DCQCN the \
                short flows' 95th-percentile slowdown stands far above the long flows' \
                (queueing behind long flows dominates a short flow's FCT). Ours: the p95 \
                slowdown of flows up to 100 KB is at least twice that of flows above 1 MB \
                (\"far above\" read as twice); a k = 4 fat-tree with 100 Gb/s links and 5 ms \
                of arrivals instead of the paper's 320 servers and 400 Gb/s fabric, to run \
                in seconds.",
        },
        ClaimSource {
            id: "short-magnitude",
            kind: ClaimKind::Prediction,
            source: "The same figure puts DCQCN's p95 slowdown of short flows at around ten. \
                Ours: the p95 slowdown of flows up to 100 KB lies between 3 and 30 (half a \
                decade of the figure's log axis either side of ten).",
        },
        ClaimSource {
            id: "long-magnitude",
            kind: ClaimKind::Prediction,
            source: "The same figure puts DCQCN's p95 slowdown of long flows at a few. Ours: \
                the p95 slowdown of flows above 1 MB lies between 1.5 and 10.",
        },
        ClaimSource {
            id: "below-none",
            kind: ClaimKind::Prediction,
            source: "DCQCN exists to keep queues short under PFC (the paper compares congestion \
                controls; rnic adds the no-control arm as the baseline). Ours: with \
                net.cc = none, the same flows and PFC, the p95 slowdown of flows up to \
                100 KB is above DCQCN's.",
        },
    ],
    evaluate: |o: &Outputs| {
        let plan = if o.dry {
            FctPlan { arrivals_us: 0.0 }
        } else {
            FctPlan::full()
        };
        eval_fct(&plan)
    },
};

/// What to run: `arrivals_us` of arrivals (0: nothing, the claims' wording only).
#[derive(Debug, Clone, PartialEq)]
pub struct FctPlan {
    pub arrivals_us: f64,
}

impl FctPlan {
    /// 5 ms of arrivals.
    pub fn full() -> FctPlan {
        FctPlan {
            arrivals_us: ARRIVALS_US,
        }
    }
}

/// The DCQCN of the simulator that drew the figure, as its run script sets it for DCQCN at
/// 100 Gb/s (its Mellanox DCQCN): α every 1 µs, the rate cut at most once per 4 µs check
/// (its receiver flags every ACK of a marked packet; rnic's receiver sends at most one CNP
/// per QP per 4 µs), the increase timer every 300 µs with no byte counter, one fast
/// recovery step, additive 20 Mb/s and hyper 200 Mb/s (5 and 50 Mb/s per 25 Gb/s), a
/// 1 Gb/s floor; g = 1/256 and no target clamp are rnic's defaults already.
const HPCC_SIM_DCQCN: [&str; 8] = [
    "net.dcqcn.alpha_period_us=1",
    "net.dcqcn.cnp_interval_us=4",
    "net.dcqcn.increase_period_us=300",
    "net.dcqcn.byte_counter_bytes=0",
    "net.dcqcn.fast_recovery_steps=1",
    "net.dcqcn.rate_ai_mbps=20",
    "net.dcqcn.rate_hai_mbps=200",
    "net.dcqcn.min_rate_mbps=1000",
];

/// The overrides of one arm: the paper's fabric, reduced to k = 4, and the paper's NIC.
///
/// The NIC sends one packet of each QP with data in turn
/// (`nic.iso_transport = "qp_round_robin"`), as the NIC of the simulator that drew the
/// figure does (its RDMA egress queue serves the QPs round robin, one packet per turn),
/// not run to completion as rnic's baseline does: under run to completion a short flow
/// waits behind its own host's long WRITE before the network sees it. Its packets carry
/// 1000 payload bytes: the nearest path MTU is 1024. Its DCQCN is [`HPCC_SIM_DCQCN`].
fn sets(cc: &str) -> Vec<String> {
    let mut sets: Vec<String> = HPCC_SIM_DCQCN.iter().map(|s| s.to_string()).collect();
    sets.extend(fabric_sets(cc));
    sets
}

/// The fabric, the NIC's order and MTU, and the congestion control of one arm.
fn fabric_sets(cc: &str) -> Vec<String> {
    vec![
        "nic.iso_transport=qp_round_robin".into(),
        "qp.pmtu=1024".into(),
        "net.topology=fat_tree".into(),
        "net.fabric.k=4".into(),
        "net.clients=15".into(),
        "net.link_delay_ns=1000".into(),
        "net.switch_buffer=shared".into(),
        format!("net.switch_buffer_bytes={}", 32u64 << 20),
        "net.pfc=true".into(),
        "net.ecn.enabled=true".into(),
        format!("net.cc={cc}"),
    ]
}

/// Runs one arm: the workload's flows, every byte checked, and their FCTs.
fn run(cc: &str, arrivals_us: f64) -> anyhow::Result<WorkloadResult> {
    let mut parsed = Vec::new();
    for s in sets(cc) {
        parsed.push(crate::config::parse_set(&s)?);
    }
    let mut cfg = crate::config::Config::resolve("baseline", &parsed)?;
    let w = WorkloadOptions {
        cdf: "workloads/websearch.cdf".into(),
        load: LOAD,
        duration_us: arrivals_us,
        start_us: 0.0,
        pattern: Pattern::AllToAll,
        test: crate::perf::PerfTest::WriteBw,
        seed: None,
        incast: None,
    };
    let cdf = SizeCdf::parse("workloads/websearch.cdf", WEBSEARCH_CDF)?;
    let e = crate::traffic::expand_with_cdf(&w, &cdf, &cfg)?;
    crate::traffic::fit_cores(&mut cfg, &e.flows)?;
    let spec = crate::flows::resolve(&e.flows, &cfg)?;
    let r = crate::model::run_flows(&cfg, &spec, &Default::default())?.result;
    crate::traffic::summarise(&e, &cfg, &r)
}

/// The p95 slowdown of a class of flows, and how many there are.
fn p95(t: fct::SlowdownTail) -> (f64, usize) {
    (t.p95, t.flows as usize)
}

/// Short and long flows' p95 slowdowns of one arm.
struct Tails {
    short: (f64, usize),
    long: (f64, usize),
}

fn tails(w: &WorkloadResult) -> Tails {
    Tails {
        short: p95(fct::short_tail(&w.flows)),
        long: p95(fct::long_tail(&w.flows)),
    }
}

/// Each claim's id and the words the table prints.
const WORDS: [(&str, &str); 4] = [
    (
        "short-above-long",
        "DCQCN: p95 slowdown of flows <= 100 KB >= 2 x that of flows > 1 MB",
    ),
    (
        "short-magnitude",
        "DCQCN: p95 slowdown of flows <= 100 KB around ten (3 to 30)",
    ),
    (
        "long-magnitude",
        "DCQCN: p95 slowdown of flows > 1 MB a few (1.5 to 10)",
    ),
    (
        "below-none",
        "no CC + PFC: p95 slowdown of flows <= 100 KB above DCQCN's",
    ),
];

/// Runs the plan and checks the claims.
pub fn eval_fct(plan: &FctPlan) -> anyhow::Result<Evaluation> {
    if plan.arrivals_us <= 0.0 {
        let claims = WORDS
            .iter()
            .map(|(id, w)| missing(*id, *w, "no runs"))
            .collect();
        return Ok(Evaluation::new(claims, Vec::new()));
    }
    let dcqcn = run("dcqcn", plan.arrivals_us)?;
    let none = run("none", plan.arrivals_us)?;
    let claims = judge(&dcqcn, &none);
    let mut e = Evaluation::new(claims, vec![figure(&dcqcn, &none)]);
    e.notes = notes(&dcqcn, &none);
    e.csv = csv(&dcqcn, &none);
    Ok(e)
}

/// The claims from both arms; each fails as missing if a flow of either arm did not
/// complete with its bytes verified.
fn judge(dcqcn: &WorkloadResult, none: &WorkloadResult) -> Vec<Claim> {
    let lost = [("dcqcn", dcqcn), ("none", none)]
        .iter()
        .find(|(_, w)| w.flows_completed < w.flows_started)
        .map(|(cc, w)| {
            format!(
                "net.cc = {cc}: {} of {} flows completed with their bytes verified",
                w.flows_completed, w.flows_started
            )
        });
    if let Some(why) = lost {
        return WORDS.iter().map(|(id, w)| missing(*id, *w, &why)).collect();
    }
    let (d, n) = (tails(dcqcn), tails(none));
    let in_band = |x: f64, (lo, hi): (f64, f64)| (lo..=hi).contains(&x);
    vec![
        claim(
            WORDS[0].0,
            WORDS[0].1,
            format!(
                "{:.2} ({} flows) against {:.2} ({} flows): {:.1} x",
                d.short.0,
                d.short.1,
                d.long.0,
                d.long.1,
                d.short.0 / d.long.0
            ),
            d.short.1 > 0 && d.long.1 > 0 && d.short.0 >= FAR_ABOVE * d.long.0,
        ),
        claim(
            WORDS[1].0,
            WORDS[1].1,
            format!("{:.2} ({} flows)", d.short.0, d.short.1),
            d.short.1 > 0 && in_band(d.short.0, SHORT_P95_BAND),
        ),
        claim(
            WORDS[2].0,
            WORDS[2].1,
            format!("{:.2} ({} flows)", d.long.0, d.long.1),
            d.long.1 > 0 && in_band(d.long.0, LONG_P95_BAND),
        ),
        claim(
            WORDS[3].0,
            WORDS[3].1,
            format!(
                "{:.2} without CC against {:.2} with DCQCN",
                n.short.0, d.short.0
            ),
            n.short.1 > 0 && n.short.0 > d.short.0,
        ),
    ]
}

/// Both arms' slowdowns by decade of size, printed before the claims.
fn notes(dcqcn: &WorkloadResult, none: &WorkloadResult) -> String {
    let mut s = String::from(
        "FCT slowdown by flow size (WebSearch, 30 % load, k = 4 fat-tree):\n\
         cc     size bucket              flows    p50     p95     p99\n",
    );
    for (cc, w) in [("dcqcn", dcqcn), ("none", none)] {
        for b in &w.buckets {
            s.push_str(&format!(
                "{cc:<6} ({:>9}, {:>9}] B {:>7} {:>7.2} {:>7.2} {:>7.2}\n",
                b.above_bytes,
                b.up_to_bytes,
                b.flows,
                b.slowdown_p50,
                b.slowdown_p95,
                b.slowdown_p99
            ));
        }
    }
    s
}

/// The figure in the HPCC paper's style: the p95 and p50 slowdown by flow size (each decade
/// at its upper bound), both axes logarithmic, one curve per arm and percentile.
fn figure(dcqcn: &WorkloadResult, none: &WorkloadResult) -> Figure {
    let curve = |w: &WorkloadResult, p95: bool| -> Vec<(f64, f64)> {
        w.buckets
            .iter()
            .map(|b| {
                let y = if p95 { b.slowdown_p95 } else { b.slowdown_p50 };
                (b.up_to_bytes as f64, y)
            })
            .collect()
    };
    let series = vec![
        ("DCQCN p95".to_string(), curve(dcqcn, true)),
        ("no CC p95".to_string(), curve(none, true)),
        ("DCQCN p50".to_string(), curve(dcqcn, false)),
        ("no CC p50".to_string(), curve(none, false)),
    ];
    Figure::line(
        "fct-slowdown",
        "FCT slowdown by flow size, WebSearch at 30 % load, k = 4 fat-tree",
        "flow size, decade's upper bound (B)",
        "FCT slowdown",
        series,
        true,
    )
    .y_log()
}

/// Both arms' buckets as CSV, one line per arm and bucket.
fn csv(dcqcn: &WorkloadResult, none: &WorkloadResult) -> String {
    let mut s = String::new();
    for (cc, w) in [("dcqcn", dcqcn), ("none", none)] {
        for (i, line) in fct::buckets_csv(&w.buckets).lines().enumerate() {
            if i == 0 && s.is_empty() {
                s.push_str(&format!("cc,{line}\n"));
            } else if i > 0 {
                s.push_str(&format!("{cc},{line}\n"));
            }
        }
    }
    s
}
