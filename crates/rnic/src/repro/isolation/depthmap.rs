//! isolation-depth-map (beyond the paper): the LS tenant's end-to-end P99 latency increase
//! ratio against how many WQEs the BS tenants keep posted and how many BS tenants there
//! are, under baseline, v1 and v2.
//!
//! The paper's figure measures the LS latency from the WQE cache on (see isolation-ls-bs),
//! so it cannot show the time an LS WQE waits to be read at all. Under coupled backpressure
//! (baseline's and v1's) a full BS FIFO pauses every WQE read: once a BS tenant keeps more
//! WQEs posted than its FIFO holds, its FIFO stays full and the LS WQE is read only when a
//! BS WQE starts. Isolated backpressure (v2) parks only the full tenant's QPs.

use crate::config::Config;
use crate::repro::claim::{claim, missing, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::Curve;
use crate::repro::{Evaluation, Experiment, Figure, Outputs};
use std::fmt::Write as _;

use super::lsbs::ratios;
use super::points::{alone_label, run_points, Arch, Bs, PointSpec};
use super::PROFILE;

/// isolation-depth-map.
pub const EXPERIMENT: Experiment = Experiment {
    id: "isolation-depth-map",
    title: "LS end-to-end P99 latency increase ratio against the BS tenants' posting depth \
            and count (beyond the paper)",
    figure: "LS-BS isolation, by BS posting depth (beyond the paper)",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "v1-regime",
            kind: ClaimKind::Prediction,
            source: "Beyond the paper. Its sentence (\"the optimized-v1 can well isolate LS \
                and BS tenants irrespective of the number of BS tenants and the message \
                size\") read end to end: the LS tenant's P99 latency from post to \
                completion, beside BS tenants of 256 KB, over the LS tenant alone. v1 keeps \
                coupled backpressure (\"any full queue will prevent wqe_read_schedule from \
                scheduling\"), so it can hold only while each BS tenant's posted WQEs fit its \
                FIFO. Ours: under v1 the ratio is at most 2 at every grid depth up to the \
                FIFO depth (nic.iso_bs_fifo_depth) and above 2 at every grid depth beyond \
                it, for 1, 4 and 8 BS tenants.",
        },
        ClaimSource {
            id: "v2-any-depth",
            kind: ClaimKind::Prediction,
            source: "Beyond the paper. Isolated backpressure (\"a BS QP is eligible only when \
                its state is eligible, and its corresponding BS_queue is not full\") leaves \
                the LS tenant's WQE reads alone whatever the BS tenants keep posted. Ours: \
                under v2 the end-to-end ratio (as v1-regime) is at most 2 at every grid \
                depth up to 128 and for 1, 4 and 8 BS tenants.",
        },
    ],
    evaluate: |o: &Outputs| {
        eval_depth_map(&super::plan_of(o, DepthMapPlan::full, DepthMapPlan::none))
    },
};

/// The points of isolation-depth-map.
#[derive(Debug, Clone)]
pub struct DepthMapPlan {
    /// BS message size, bytes.
    pub size: u64,
    /// WQEs each BS tenant keeps posted.
    pub depths: Vec<u32>,
    /// BS tenant counts.
    pub counts: Vec<usize>,
    pub archs: Vec<Arch>,
    /// Messages per BS tenant beyond its posting depth (`None`: enough to outlast the LS
    /// tenant at line rate, [`Bs::posting`]).
    pub bs_extra_iters: Option<u64>,
    /// Further `--set` overrides at every point, the LS tenant alone included.
    pub sets: Vec<String>,
}

impl DepthMapPlan {
    /// No points.
    pub fn none() -> Self {
        DepthMapPlan {
            depths: Vec::new(),
            counts: Vec::new(),
            archs: Vec::new(),
            ..Self::full()
        }
    }

    /// 256 KB messages (a quarter of the paper's largest: every wait scales with the
    /// message, and the run moves a quarter of the bytes); depths 1, 16 (the FIFO), 32 and
    /// 128 (the authors' RTL and perftest's default); 1, 4 and 8 BS tenants; every
    /// architecture.
    pub fn full() -> Self {
        DepthMapPlan {
            size: 256 << 10,
            depths: vec![1, 16, 32, 128],
            counts: vec![1, 4, 8],
            archs: vec![Arch::Baseline, Arch::V1, Arch::V2],
            bs_extra_iters: None,
            sets: Vec::new(),
        }
    }

    fn point(&self, arch: Arch, n: usize, depth: u32) -> PointSpec {
        let bs = Bs::posting(self.size, depth).with_iters_beyond_depth(self.bs_extra_iters);
        PointSpec {
            label: format!("{}-{n}bs-d{depth}", arch.name()),
            arch,
            ls: true,
            bs: vec![bs; n],
            sets: self.sets.clone(),
        }
    }

    fn alone(&self, arch: Arch) -> PointSpec {
        PointSpec {
            sets: self.sets.clone(),
            ..PointSpec::ls_alone(arch)
        }
    }
}

/// Runs the grid and checks where v1 and v2 keep the LS tenant isolated end to end.
pub fn eval_depth_map(plan: &DepthMapPlan) -> anyhow::Result<Evaluation> {
    let mut points: Vec<PointSpec> = plan.archs.iter().map(|&a| plan.alone(a)).collect();
    for &arch in &plan.archs {
        for &n in &plan.counts {
            for &d in &plan.depths {
                points.push(plan.point(arch, n, d));
            }
        }
    }
    let res = run_points(&points)?;
    let fifo = Config::resolve(PROFILE, &[])?.nic.iso_bs_fifo_depth;
    let find = |label: &str| res.iter().find(|r| r.label == label);
    let ratio = |arch: Arch, n: usize, d: u32| -> Option<f64> {
        let r = find(&plan.point(arch, n, d).label)?;
        Some(ratios(r, find(&alone_label(arch))?).1)
    };
    let mut notes = format!(
        "LS end-to-end P99 latency (post to completion) beside BS tenants of {} B over LS \
         alone; BS FIFOs of {fifo} WQEs. Rows: architecture and BS tenants; columns: WQEs \
         each BS tenant keeps posted\n  {:<14}",
        plan.size, ""
    );
    for d in &plan.depths {
        let _ = write!(notes, "{:>9}", format!("d={d}"));
    }
    let mut csv = String::from("arch,bs_tenants,depth,lat_p99_us,e2e_ratio,ok\n");
    let mut series = Vec::new();
    for &arch in &plan.archs {
        for &n in &plan.counts {
            let _ = write!(notes, "\n  {:<14}", format!("{} {n} BS", arch.name()));
            let mut c: Curve = Vec::new();
            for &d in &plan.depths {
                let q = ratio(arch, n, d).unwrap_or(f64::NAN);
                let _ = write!(notes, "{q:>8.1}x");
                if let Some(r) = find(&plan.point(arch, n, d).label) {
                    let _ = writeln!(
                        csv,
                        "{},{n},{d},{},{q},{}",
                        arch.name(),
                        r.ls_lat_us.1,
                        r.ok
                    );
                }
                c.push((f64::from(d), q));
            }
            series.push((format!("{} {n} BS", arch.name()), c));
        }
    }
    notes.push('\n');
    let all_ok = res.iter().all(|r| r.ok);
    let judge = |id: &str, words: &str, arch: Arch, fits: &dyn Fn(u32) -> bool| -> Claim {
        if !all_ok || !plan.archs.contains(&arch) || plan.depths.is_empty() {
            return match res.iter().find(|r| !r.ok) {
                Some(r) => claim(
                    id,
                    words,
                    format!("point {} failed: {}", r.label, r.reason),
                    false,
                ),
                None => missing(id, words, "no points"),
            };
        }
        let mut wrong = Vec::new();
        let mut cells = 0;
        for &n in &plan.counts {
            for &d in &plan.depths {
                let q = ratio(arch, n, d).unwrap_or(f64::NAN);
                cells += 1;
                let isolated = q <= 2.0;
                if isolated != fits(d) {
                    wrong.push(format!("{n} BS d={d}: {q:.1} x"));
                }
            }
        }
        let ours = if wrong.is_empty() {
            format!("as stated at all {cells} points")
        } else {
            format!("not at {} of {cells}: {}", wrong.len(), wrong.join("; "))
        };
        claim(id, words, ours, wrong.is_empty())
    };
    let claims = vec![
        judge(
            "v1-regime",
            &format!(
                "v1 LS end-to-end P99 ratio <= 2 x while the BS tenants' posted WQEs fit their \
                 FIFOs (depth <= {fifo}), > 2 x beyond"
            ),
            Arch::V1,
            &|d| d <= fifo,
        ),
        judge(
            "v2-any-depth",
            "v2 LS end-to-end P99 ratio <= 2 x at every posting depth up to 128 and BS count",
            Arch::V2,
            &|_| true,
        ),
    ];
    let fig = Figure::line(
        "ls-ratio-by-depth",
        &format!(
            "LS end-to-end P99 latency increase ratio beside BS tenants of {} B",
            plan.size
        ),
        "WQEs each BS tenant keeps posted",
        "LS P99 latency / LS alone",
        series,
        true,
    )
    .y_log();
    Ok(Evaluation {
        notes,
        claims,
        figures: vec![fig],
        csv,
    })
}
