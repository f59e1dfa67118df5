//! The steady-state detector's parameters (`host/steady.rs`), resolved from `sim.settle_*`
//! and `sim.max_warmup_us`.

use rnic_sim::TimePs;

/// The detector's parameters (from `sim.settle_*` and `sim.max_warmup_us`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettleParams {
    /// Shortest sub-window, ps.
    pub subwindow_min_ps: TimePs,
    /// Fewest completions in a sub-window.
    pub subwindow_min_ops: u64,
    /// Largest relative spread of the agreeing sub-windows' rates.
    pub tolerance: f64,
    /// Consecutive sub-windows that must agree (at least 2).
    pub windows: usize,
    /// Give up waiting at this simulated time, ps (counted from the application's start).
    pub max_warmup_ps: TimePs,
    /// Give up waiting once this many sub-windows have closed without agreeing.
    pub max_windows: u32,
    /// Set by [`SettleParams::within_hour`] when it lowered `max_warmup_ps` below
    /// `sim.max_warmup_us`: the length of the window that follows the warm-up, µs.
    pub capped_for_window_us: Option<f64>,
}

impl SettleParams {
    /// These parameters for a window of `window_us` after the warm-up: the give-up time
    /// moves to an hour (`MAX_SIM_US`, the longest a run may simulate) less the window when
    /// `sim.max_warmup_us` is later, so that warm-up and window together stay within the
    /// hour (the window opens at the first completion from then on). A window of the whole
    /// hour gives up at once: it opens at the first completion.
    pub fn within_hour(self, window_us: f64) -> SettleParams {
        let cap = rnic_sim::us((crate::config::schema::MAX_SIM_US - window_us).max(0.0));
        if self.max_warmup_ps <= cap {
            return self;
        }
        SettleParams {
            max_warmup_ps: cap,
            capped_for_window_us: Some(window_us),
            ..self
        }
    }
}
