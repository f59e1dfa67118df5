//! isolation-ls-alone and isolation-ls-bs: the LS tenant's latency alone, and its waiting
//! time beside BS tenants by BS message size and by the number of BS tenants.

use crate::config::Config;
use crate::model::ModelParams;
use crate::repro::claim::{claim, missing, Claim, ClaimSource};
use crate::repro::curve::Curve;
use crate::repro::{Evaluation, Experiment, Figure, Outputs};
use std::fmt::Write as _;

use super::points::{run_points, Arch, Bs, PointResult, PointSpec};
use super::{PAPER_V1_WAIT_CYCLES, PROFILE};

/// isolation-ls-alone.
pub const LS_ALONE: Experiment = Experiment {
    id: "isolation-ls-alone",
    title: "a lone LS tenant's latency is not raised by v1 or v2",
    figure: "Overheads",
    sweeps: &[],
    runs_flows: true,
    claims: &[ClaimSource {
        id: "not-raised",
        source: "Overheads: \"Will the latency increase for a single running \
            latency-sensitive tenant? No\". Ours: the LS tenant alone (64 B WRITE ping-pong), \
            p50 and p99 latency under v1 and v2 at most 2 % above the baseline's.",
    }],
    evaluate: |o: &Outputs| eval_ls_alone(&super::plan_of(o, LsAlonePlan::full, LsAlonePlan::none)),
};

/// isolation-ls-bs.
pub const LS_BS: Experiment = Experiment {
    id: "isolation-ls-bs",
    title: "LS waiting time beside BS tenants: grows with BS size under baseline, one \
            transport iteration under v1",
    figure: "LS-BS isolation",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "baseline-grows",
            source: "Root causes and LS-BS results: run-to-completion blocks the LS WQE \
                behind whole BS messages, so the baseline's LS latency grows with the BS \
                message size. Ours: baseline LS waiting p99 never falls by more than 10 % \
                from one size to the next and is at least 10 x larger at the largest size \
                than at the smallest.",
        },
        ClaimSource {
            id: "v1-sizes",
            source: "LS-BS results: \"the optimized-v1 can decrease the waiting latency to \
                about 16 clock cycles, representing one iteration of rdma_transport\", \
                whatever the BS message size. The paper's RTL has no Ethernet port; rnic's \
                transport is paced by the port, so one iteration is one BS slice: the TX \
                engine's per-message cycles plus one 1 KB-PMTU frame on the 100 Gb/s wire. \
                Ours: v1 and v2 LS waiting p99 at most 2 iterations at every size.",
        },
        ClaimSource {
            id: "v1-counts",
            source: "LS-BS results: v1 isolates LS and BS \"irrespective of the number of \
                BS tenants\" (1 to 8 in the setup). Ours: v1 and v2 LS waiting p99 at most \
                2 iterations (as v1-sizes) for 1, 2, 4 and 8 BS tenants of 1 MB messages.",
        },
    ],
    evaluate: |o: &Outputs| eval_ls_bs(&super::plan_of(o, LsBsPlan::full, LsBsPlan::none)),
};

/// The points of isolation-ls-alone.
#[derive(Debug, Clone)]
pub struct LsAlonePlan {
    pub archs: Vec<Arch>,
}

impl LsAlonePlan {
    /// No points.
    pub fn none() -> Self {
        LsAlonePlan { archs: Vec::new() }
    }

    /// Baseline, v1 and v2.
    pub fn full() -> Self {
        LsAlonePlan {
            archs: vec![Arch::Baseline, Arch::V1, Arch::V2],
        }
    }
}

/// Runs the LS tenant alone under each architecture and checks that v1 and v2 do not raise
/// its latency.
pub fn eval_ls_alone(plan: &LsAlonePlan) -> anyhow::Result<Evaluation> {
    let points: Vec<PointSpec> = plan
        .archs
        .iter()
        .map(|&arch| PointSpec {
            label: arch.name().to_string(),
            arch,
            ls: true,
            bs: Vec::new(),
            sets: Vec::new(),
        })
        .collect();
    let res = run_points(&points)?;
    let mut notes = String::from("LS tenant alone, 64 B WRITE ping-pong (half round trip):\n");
    let mut csv = String::from("arch,lat_p50_us,lat_p99_us,wait_p50_ns,wait_p99_ns\n");
    for r in &res {
        let _ = writeln!(
            notes,
            "  {:<9} p50 {:.3} us  p99 {:.3} us  waiting p50 {:.0} ns  p99 {:.0} ns",
            r.label, r.ls_lat_us.0, r.ls_lat_us.1, r.ls_wait_ns.0, r.ls_wait_ns.1
        );
        let _ = writeln!(
            csv,
            "{},{},{},{},{}",
            r.label, r.ls_lat_us.0, r.ls_lat_us.1, r.ls_wait_ns.0, r.ls_wait_ns.1
        );
    }
    let words = "a lone LS tenant's latency is not raised (v1, v2 within +2 % of baseline)";
    let base = res.iter().find(|r| r.label == "baseline");
    let claims = match base {
        Some(b) if res.iter().all(|r| r.ok) && res.len() > 1 => {
            let mut pass = true;
            let mut parts = Vec::new();
            for r in res.iter().filter(|r| r.label != "baseline") {
                pass &=
                    r.ls_lat_us.0 <= 1.02 * b.ls_lat_us.0 && r.ls_lat_us.1 <= 1.02 * b.ls_lat_us.1;
                parts.push(format!(
                    "{} {:.3}/{:.3}",
                    r.label, r.ls_lat_us.0, r.ls_lat_us.1
                ));
            }
            vec![claim(
                "not-raised",
                words,
                format!(
                    "p50/p99 us: baseline {:.3}/{:.3}, {}",
                    b.ls_lat_us.0,
                    b.ls_lat_us.1,
                    parts.join(", ")
                ),
                pass,
            )]
        }
        _ => vec![failed_or_missing("not-raised", words, &res)],
    };
    Ok(Evaluation {
        notes,
        claims,
        figures: Vec::new(),
        csv,
    })
}

/// A claim that cannot be judged: a point failed (its reason) or data is missing.
fn failed_or_missing(id: &str, words: &str, res: &[PointResult]) -> Claim {
    match res.iter().find(|r| !r.ok) {
        Some(r) => claim(
            id,
            words,
            format!("point {} did not end ok: {}", r.label, r.reason),
            false,
        ),
        None => missing(id, words, "no points"),
    }
}

/// The points of isolation-ls-bs.
#[derive(Debug, Clone)]
pub struct LsBsPlan {
    /// BS message sizes beside one BS tenant, bytes.
    pub sizes: Vec<u64>,
    /// BS tenant counts at `count_size`.
    pub counts: Vec<usize>,
    /// Message size of the count axis.
    pub count_size: u64,
    pub archs: Vec<Arch>,
}

impl LsBsPlan {
    /// No points.
    pub fn none() -> Self {
        LsBsPlan {
            sizes: Vec::new(),
            counts: Vec::new(),
            count_size: 1 << 20,
            archs: Vec::new(),
        }
    }

    /// 4 KB to 1 MB beside one BS tenant; 1 to 8 BS tenants of 1 MB.
    pub fn full() -> Self {
        LsBsPlan {
            sizes: vec![4096, 16384, 65536, 262144, 1 << 20],
            counts: vec![1, 2, 4, 8],
            count_size: 1 << 20,
            archs: vec![Arch::Baseline, Arch::V1, Arch::V2],
        }
    }
}

/// One transport iteration of a BS slice in rnic, ns: the TX engine's per-message
/// occupancy plus one PMTU-sized WRITE frame on the wire.
pub fn iteration_ns(cfg: &Config) -> f64 {
    let p = ModelParams::from_config(cfg);
    // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + payload + ICRC 4.
    let frame = 58 + cfg.qp.pmtu as usize;
    (p.nic.tx_msg_ps + p.wire_time_ps(frame)) as f64 / 1e3
}

fn point(arch: Arch, n: usize, size: u64) -> PointSpec {
    PointSpec {
        label: format!("{}-{}bs-{}B", arch.name(), n, size),
        arch,
        ls: true,
        bs: vec![Bs::beside_ls(size); n],
        sets: Vec::new(),
    }
}

/// Runs the LS tenant beside BS tenants and checks the waiting-time claims.
pub fn eval_ls_bs(plan: &LsBsPlan) -> anyhow::Result<Evaluation> {
    let mut points = Vec::new();
    for &arch in &plan.archs {
        for &s in &plan.sizes {
            points.push(point(arch, 1, s));
        }
        for &n in &plan.counts {
            if !(n == 1 && plan.sizes.contains(&plan.count_size)) {
                points.push(point(arch, n, plan.count_size));
            }
        }
    }
    let res = run_points(&points)?;
    let cfg = Config::resolve(PROFILE, &[])?;
    let it_ns = iteration_ns(&cfg);
    let get = |arch: Arch, n: usize, s: u64| {
        let label = point(arch, n, s).label;
        res.iter().find(|r| r.label == label)
    };
    let curve_of = |arch: Arch, by_size: bool, f: &dyn Fn(&PointResult) -> f64| -> Curve {
        if by_size {
            plan.sizes
                .iter()
                .filter_map(|&s| get(arch, 1, s).map(|r| (s as f64, f(r))))
                .collect()
        } else {
            plan.counts
                .iter()
                .filter_map(|&n| get(arch, n, plan.count_size).map(|r| (n as f64, f(r))))
                .collect()
        }
    };
    let p99 = |r: &PointResult| r.ls_wait_ns.1;
    let mut notes = format!(
        "LS waiting time (WQE ready -> first packet leaves the TX engine); one transport \
         iteration in rnic = {it_ns:.0} ns ({:.0} cycles at {} GHz; the paper: {} cycles)\n",
        it_ns * cfg.nic.clock_ghz,
        cfg.nic.clock_ghz,
        PAPER_V1_WAIT_CYCLES
    );
    let mut csv = String::from(
        "arch,bs_tenants,bs_bytes,wait_p50_ns,wait_p99_ns,wait_max_ns,wait_fifo_max_ns,\
         wait_engine_max_ns,lat_p50_us,lat_p99_us,bs_gbps_total,ok\n",
    );
    for r in &res {
        let bs: f64 = r.bs_gbps.iter().sum();
        let _ = writeln!(
            notes,
            "  {:<24} waiting p50 {:>9.0} ns  p99 {:>9.0} ns  max {:>9.0} ns (FIFO {:>9.0}, \
             engine {:>9.0}) | latency p50 {:>8.3} us p99 {:>8.3} us | BS {:>5.1} Gb/s{}",
            r.label,
            r.ls_wait_ns.0,
            r.ls_wait_ns.1,
            r.ls_wait_ns.2,
            r.ls_wait_parts_max_ns.0,
            r.ls_wait_parts_max_ns.1,
            r.ls_lat_us.0,
            r.ls_lat_us.1,
            bs,
            if r.ok { "" } else { " NOT OK" }
        );
        let mut f = r.label.splitn(3, '-');
        let (a, n, s) = (
            f.next().unwrap_or(""),
            f.next().unwrap_or("").trim_end_matches("bs"),
            f.next().unwrap_or("").trim_end_matches('B'),
        );
        let _ = writeln!(
            csv,
            "{a},{n},{s},{},{},{},{},{},{},{},{bs},{}",
            r.ls_wait_ns.0,
            r.ls_wait_ns.1,
            r.ls_wait_ns.2,
            r.ls_wait_parts_max_ns.0,
            r.ls_wait_parts_max_ns.1,
            r.ls_lat_us.0,
            r.ls_lat_us.1,
            r.ok
        );
    }
    let mut claims = Vec::new();
    let all_ok = res.iter().all(|r| r.ok);
    // baseline-grows
    let words = "baseline LS waiting p99 grows with BS message size (>= 10 x from smallest to \
                 largest, no step down > 10 %)";
    let base = curve_of(Arch::Baseline, true, &p99);
    if all_ok && base.len() >= 2 {
        let mono = base.windows(2).all(|w| w[1].1 >= 0.9 * w[0].1);
        let (first, last) = (base[0], base[base.len() - 1]);
        claims.push(claim(
            "baseline-grows",
            words,
            format!(
                "p99 {:.0} ns at {} B -> {:.0} ns at {} B ({:.0} x)",
                first.1,
                first.0,
                last.1,
                last.0,
                last.1 / first.1.max(1.0)
            ),
            mono && last.1 >= 10.0 * first.1,
        ));
    } else {
        claims.push(failed_or_missing("baseline-grows", words, &res));
    }
    // v1-sizes, v1-counts
    let bar = 2.0 * it_ns;
    for (id, by_size, axis) in [("v1-sizes", true, "size"), ("v1-counts", false, "tenants")] {
        let words = format!(
            "v1/v2 LS waiting p99 about one transport iteration whatever the BS {axis} \
             (<= 2 x {it_ns:.0} ns)"
        );
        let mut worst: Option<(String, f64)> = None;
        let mut n = 0;
        for arch in [Arch::V1, Arch::V2] {
            if !plan.archs.contains(&arch) {
                continue;
            }
            for (x, y) in curve_of(arch, by_size, &p99) {
                n += 1;
                if worst.as_ref().is_none_or(|w| y > w.1) {
                    worst = Some((format!("{} at {x}", arch.name()), y));
                }
            }
        }
        match worst {
            Some((at, y)) if all_ok && n > 1 => claims.push(claim(
                id,
                words,
                format!(
                    "worst p99 {y:.0} ns ({at}) = {:.2} iterations over {n} points",
                    y / it_ns
                ),
                y <= bar,
            )),
            _ => claims.push(failed_or_missing(id, &words, &res)),
        }
    }
    let series = |by_size: bool, f: &dyn Fn(&PointResult) -> f64| -> Vec<(String, Curve)> {
        plan.archs
            .iter()
            .map(|&a| (a.name().to_string(), curve_of(a, by_size, f)))
            .collect()
    };
    let figures = vec![
        Figure::line(
            "ls-wait-by-size",
            "LS waiting time p99 beside one BS tenant, by BS message size",
            "BS message size (bytes)",
            "LS waiting p99 (ns)",
            series(true, &p99),
            true,
        ),
        Figure::line(
            "ls-wait-by-tenants",
            "LS waiting time p99 beside BS tenants of 1 MB messages",
            "BS tenants",
            "LS waiting p99 (ns)",
            series(false, &p99),
            false,
        ),
        Figure::line(
            "ls-latency-by-size",
            "LS latency p99 (half round trip) beside one BS tenant",
            "BS message size (bytes)",
            "LS latency p99 (µs)",
            series(true, &|r: &PointResult| r.ls_lat_us.1),
            true,
        ),
    ];
    Ok(Evaluation {
        notes,
        claims,
        figures,
        csv,
    })
}
