//! How much the traces of `net.trace_interval_us` may hold. Their length follows the
//! simulated time, which a run of `-n` iterations does not know ahead, so an interval far
//! below the run's events would fill the memory; each trace stops at its share of one
//! budget of rows instead, and the run says so.

/// Most CSV rows a trace holds: one per switch port or NIC per sample in the queue trace,
/// one per QP per sample in the rate trace. About 80 MB of queue samples (8 B each) and
/// 400 MB of rate samples (40 B each) at most, and a CSV of a few hundred MB.
pub const TRACE_ROW_BUDGET: usize = 10_000_000;

/// Samples each of `series` series may take within the budget (at least one).
pub fn samples_per_series(series: usize) -> usize {
    (TRACE_ROW_BUDGET / series.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_shared_and_never_leaves_a_series_without_a_sample() {
        assert_eq!(samples_per_series(0), TRACE_ROW_BUDGET);
        assert_eq!(samples_per_series(4), TRACE_ROW_BUDGET / 4);
        assert_eq!(samples_per_series(usize::MAX), 1);
    }
}
