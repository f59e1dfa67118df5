//! The measurement window: when the operations count, and (duration mode) when posting
//! stops.

use rnic_sim::TimePs;

use crate::host::steady::Steady;

/// The window the test is measured over, and how a `-D` window decides to open. In
/// iteration mode it is the whole run, `[0, MAX)`.
#[derive(Debug, Clone)]
pub struct Window {
    /// The window [start, end), ps. While a `-D` window waits (for warm-up rounds or the
    /// steady state) it is `(MAX, MAX)`: nothing counts and posting goes on.
    pub span_ps: (TimePs, TimePs),
    /// Length of the window (duration mode), ps.
    pub duration_ps: TimePs,
    /// Earliest start of the window (`sim.warmup_us`), ps.
    pub min_start_ps: TimePs,
    /// Steady-state detection (`-D` runs without `sim.warmup_us`): the window opens when it
    /// has decided.
    pub steady: Option<Steady>,
    /// When the window opened and why (`-D` runs, once it has).
    pub opened: Option<WindowOpened>,
    /// `-b` and `--reversed`: the run's flows are one test, measured over one window that
    /// opens when the last of them is ready (their rates add up only over a common window).
    pub joint: bool,
    /// With `joint`: this flow is ready to open (settled, and why).
    pub ready: Option<(bool, String)>,
    /// When the application started (after connection setup), ps.
    pub origin_ps: TimePs,
}

/// When and why the `-D` window opened.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowOpened {
    /// Simulated time, ps.
    pub at_ps: TimePs,
    /// The rate settled (or a fixed warm-up was asked for); false: it never settled within
    /// `sim.settle_max_windows` or by `sim.max_warmup_us` and was measured anyway.
    pub settled: bool,
    /// Why, one sentence.
    pub reason: String,
}

impl Window {
    /// Whether `t` is inside the window.
    pub(crate) fn contains(&self, t: TimePs) -> bool {
        t >= self.span_ps.0 && t < self.span_ps.1
    }

    /// Whether the window waits to open (duration mode, before it has).
    pub(crate) fn waiting(&self) -> bool {
        self.span_ps.0 == TimePs::MAX
    }

    /// Opens the window at `start` (it ends `duration_ps` later), for `reason`.
    pub(crate) fn open(&mut self, start: TimePs, settled: bool, reason: String) {
        self.span_ps = (start, start + self.duration_ps);
        self.opened = Some(WindowOpened {
            at_ps: start,
            settled,
            reason,
        });
    }

    /// Moves every time the window was built with `t0` later (the application starts at
    /// `t0`, after connection setup, instead of at 0).
    pub(crate) fn shift_origin(&mut self, t0: TimePs) {
        self.origin_ps = t0;
        if t0 == 0 {
            return;
        }
        let later = |t: TimePs| later_by(t, t0);
        self.span_ps = (later(self.span_ps.0), later(self.span_ps.1));
        self.min_start_ps = later(self.min_start_ps);
        if let Some(s) = self.steady.as_mut() {
            s.shift_start(t0);
        }
        if let Some(o) = self.opened.as_mut() {
            o.at_ps = later(o.at_ps);
        }
    }
}

/// `t` moved `t0` later, unless it is `MAX` (never).
pub(crate) fn later_by(t: TimePs, t0: TimePs) -> TimePs {
    if t == TimePs::MAX {
        t
    } else {
        t + t0
    }
}
