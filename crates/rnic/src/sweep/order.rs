//! The order the workers take a sweep's points in: the biggest first.
//!
//! Workers take the next point as they become free. Taken in grid order, a sweep whose
//! largest point comes last (QP counts grow along the axis) ends with one worker on that
//! point while the others idle. Starting the biggest points first (longest processing time
//! first) lets the small ones fill in beside them. "Biggest" is the QP count: it sets how
//! long the warm-up takes before the window opens (every QP must complete its warm-up
//! operations) and the per-QP state the run walks, and it is what separates the longest
//! points of the committed sweeps (tens of seconds at 51,200 QPs against well under a
//! second at a few QPs); a workload point has one QP per flow. Points with equal QP counts keep their grid order. The results
//! do not depend on the order: each point is its own simulation, and the outputs are
//! written in grid order.

use super::{Job, ResolvedPoint};

/// Indices of `points` in the order to run them: QP count descending, grid order among
/// equals.
pub(super) fn run_order(points: &[ResolvedPoint]) -> Vec<usize> {
    by_qps_descending(&points.iter().map(qps).collect::<Vec<_>>())
}

/// A point's QP count: a perf run's, or one per flow of a workload.
fn qps(p: &ResolvedPoint) -> u32 {
    match &p.job {
        Job::Perf(spec) => spec.qps,
        Job::Workload(run) => run.spec.flows.iter().map(|f| f.qps).sum(),
    }
}

/// Indices of `qps` by value descending, index ascending among equals.
fn by_qps_descending(qps: &[u32]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..qps.len()).collect();
    // Stable: equal QP counts stay in grid order.
    order.sort_by_key(|&i| std::cmp::Reverse(qps[i]));
    order
}

#[cfg(test)]
mod tests {
    use super::by_qps_descending;

    #[test]
    fn biggest_first_grid_order_among_equals() {
        assert_eq!(
            by_qps_descending(&[1, 51_200, 300, 51_200, 1]),
            vec![1, 3, 2, 0, 4]
        );
        assert!(by_qps_descending(&[]).is_empty());
    }
}
