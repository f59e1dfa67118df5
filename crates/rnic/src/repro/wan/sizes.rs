//! The message-size experiments (Fig. 4 and Fig. 6): standard RDMA, the large-queue-depth
//! framework and the WAN accelerator over the same 100 km link (500 µs one way), one
//! curve per arm; run once and read by both evaluators.

use std::fmt::Write as _;

use crate::repro::curve::Curve;

use super::points::{events_per_sim_ms, iters_for, run_points, Arm, WanPoint, WanResult};

/// The link of both figures: 500 µs one way.
pub const SIZES_KM: f64 = 100.0;

/// Sizes and arms to run.
#[derive(Debug, Clone)]
pub struct SizesPlan {
    pub sizes: Vec<u64>,
    pub arms: Vec<Arm>,
}

impl SizesPlan {
    /// No points.
    pub fn none() -> Self {
        SizesPlan {
            sizes: Vec::new(),
            arms: Vec::new(),
        }
    }
}

/// The curves of one run of a plan: per arm, (size, Gb/s), and whether every point ended
/// ok with every byte verified.
#[derive(Debug, Clone, Default)]
pub struct SizeCurves {
    pub curves: Vec<(Arm, Curve)>,
    pub all_ok: bool,
    pub notes: String,
}

impl SizeCurves {
    /// The curve of `arm`.
    pub fn of(&self, arm: Arm) -> Option<&Curve> {
        self.curves.iter().find(|(a, _)| *a == arm).map(|(_, c)| c)
    }
}

/// Runs every arm at every size.
pub fn run_sizes(plan: &SizesPlan) -> anyhow::Result<SizeCurves> {
    let mut points = Vec::new();
    for &arm in &plan.arms {
        for &s in &plan.sizes {
            points.push(WanPoint::new(arm, SIZES_KM, s, iters_for(s)));
        }
    }
    let res: Vec<WanResult> = run_points(&points)?;
    let mut out = SizeCurves {
        all_ok: !res.is_empty(),
        ..SizeCurves::default()
    };
    let _ = write!(
        out.notes,
        "WRITE throughput at {SIZES_KM} km (Gb/s):\n  {:>9}",
        "size"
    );
    for arm in &plan.arms {
        let _ = write!(out.notes, " {:>10}", arm.name());
    }
    out.notes.push('\n');
    for &arm in &plan.arms {
        let c: Curve = res
            .iter()
            .filter(|r| r.point.arm == arm)
            .map(|r| (r.point.size as f64, r.gbps))
            .collect();
        out.curves.push((arm, c));
    }
    for &s in &plan.sizes {
        let _ = write!(out.notes, "  {s:>9}");
        for &arm in &plan.arms {
            let r = res.iter().find(|r| r.point.arm == arm && r.point.size == s);
            match r {
                Some(r) => {
                    let _ = write!(
                        out.notes,
                        " {:>10.3}{}",
                        r.gbps,
                        if r.ok { "" } else { "!" }
                    );
                }
                None => out.notes.push_str("          -"),
            }
        }
        out.notes.push('\n');
    }
    for r in &res {
        if !r.ok {
            out.all_ok = false;
            let _ = writeln!(out.notes, "  not ok: {}: {}", r.point.label(), r.reason);
        }
    }
    let _ = writeln!(
        out.notes,
        "simulation speed: {:.0} events per simulated ms",
        events_per_sim_ms(&res)
    );
    Ok(out)
}
