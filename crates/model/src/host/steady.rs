//! Steady-state detection for `-D` runs: when to open the measurement window without a
//! hand-set warm-up.
//!
//! A run starts far from its steady state: the host makes its initial `-t` posts on every
//! QP, the caches are cold, and the NIC's visits take whatever batches the posting left,
//! which settle only after a pass or two over all the outstanding work (3,000 QPs × 16 WQEs
//! at 66.7 Mops is a 720 µs pass; READ dips by a fifth at the end of the first). A window
//! opened during that transient reports a rate the run never holds.
//!
//! The detector is fed every completion that counts for the run's rate (with the QP pair
//! it belongs to) and cuts the time after it is armed into consecutive **sub-windows**. A
//! sub-window closes at the first completion at which all of these hold:
//! * every QP pair has completed as many operations in it as it keeps in flight (`-t` for
//!   bandwidth tests, one for latency tests), so every operation in flight when it opened
//!   has been replaced: the length follows the run (720 µs for 3,000 QPs × 16 WQEs at
//!   66.7 Mops, 49 ms for 51,200 × 64, under a µs for one QP), and structure with the period
//!   of that turnover averages out instead of reading as instability. A pass that serves
//!   every QP once is not enough: visits take several WQEs of a QP at a time, and READ at
//!   51,200 QPs × 64 dips by a quarter when the first-posted WQEs come round again, after
//!   three such passes had agreed;
//! * it is at least `sim.settle_subwindow_us` long and holds at least `sim.settle_min_ops`
//!   completions, so that with few QPs, or bursty completions (coalesced ACKs, a blocking
//!   QPC manager, READs coming back in beats), the rate is not a count of a handful of
//!   bursts: READ on 8 QPs varies by 4 % between 20 µs sub-windows, by 0.7 % between
//!   100 µs ones (the default).
//!
//! The run has **settled** when the last `sim.settle_windows` sub-windows agree: their
//! rates (completions over length) spread by at most `sim.settle_tolerance` of the largest
//! (`(max − min) / max`). The window then opens at that completion. If it has not settled
//! within `sim.settle_max_windows` sub-windows or by `sim.max_warmup_us`, the window opens
//! at that completion anyway and the result says so (the CLI warns).
//!
//! The defaults, and why:
//! * tolerance 2 %: settled sub-windows of the model agree within 0.3 % (it is
//!   deterministic; what varies is which completions fall on a boundary), while the
//!   transients to leave out are larger: the first turnover on a cold QPC cache runs at a
//!   quarter of the rate, READ's dip costs its turnover 2 to 5 %, the FCFS cliff's second
//!   pass is 3 % low. A first sub-window that holds only the tail of a transient may still
//!   agree; the window opens after it all the same.
//! * three agreeing sub-windows, not two, so a slow drift must stay within the tolerance
//!   over two turnovers;
//! * at most twelve sub-windows: a run that settles needs one to leave the transient and
//!   three that agree, so twelve bounds the wait of one that never does (loss, for
//!   instance: timeouts make every turnover different) to three times that.
//!
//! Deterministic: only simulated time and completion order go in.

use std::collections::VecDeque;

use rnic_sim::TimePs;

pub use crate::params::settle::SettleParams;

/// One closed sub-window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubWindow {
    /// First instant (exclusive: the previous sub-window's last completion), ps.
    pub start_ps: TimePs,
    /// Its last completion, ps.
    pub end_ps: TimePs,
    /// Completions in it.
    pub ops: u64,
}

impl SubWindow {
    /// Completions per µs.
    pub fn rate_per_us(&self) -> f64 {
        self.ops as f64 * 1e6 / (self.end_ps - self.start_ps).max(1) as f64
    }

    /// Length, µs.
    pub fn len_us(&self) -> f64 {
        (self.end_ps - self.start_ps) as f64 / 1e6
    }
}

/// What the detector decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// The last `windows` sub-windows agreed; `spread` is their relative spread and
    /// `subwindow_us` their mean length.
    Settled {
        /// When, ps.
        at_ps: TimePs,
        /// Relative spread of the agreeing sub-windows' rates.
        spread: f64,
        /// Mean length of the agreeing sub-windows, µs.
        subwindow_us: f64,
    },
    /// `max_warmup_ps` passed or `max_windows` sub-windows closed first; `spread` is that of
    /// the last `windows` sub-windows (`None` if fewer had closed).
    NeverSettled {
        /// When, ps.
        at_ps: TimePs,
        /// Relative spread of the last sub-windows, if enough closed.
        spread: Option<f64>,
        /// Sub-windows closed.
        closed: u32,
    },
}

impl Decision {
    /// When it was made, ps.
    pub fn at_ps(&self) -> TimePs {
        match *self {
            Decision::Settled { at_ps, .. } | Decision::NeverSettled { at_ps, .. } => at_ps,
        }
    }

    /// Whether the rate settled.
    pub fn settled(&self) -> bool {
        matches!(self, Decision::Settled { .. })
    }
}

/// Where the settle test stands while it waits ([`Steady::status`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SettleStatus {
    /// Sub-windows closed so far.
    pub closed: u32,
    /// It gives up once this many have closed without agreeing (`sim.settle_max_windows`).
    pub max_subwindows: u32,
    /// Consecutive sub-windows that must agree (`sim.settle_windows`).
    pub agreeing: u32,
    /// Relative spread of the last `agreeing` sub-windows' rates, once that many closed.
    pub spread: Option<f64>,
    /// The spread at which they agree (`sim.settle_tolerance`).
    pub tolerance: f64,
    /// It gives up at this simulated time at the latest (`sim.max_warmup_us` from the
    /// application's start), ps.
    pub give_up_ps: TimePs,
}

/// A fraction as a percentage without trailing zeros (0.02 → `2`, 0.0125 → `1.25`).
fn percent(x: f64) -> String {
    let p = (x * 100.0 * 1000.0).round() / 1000.0;
    format!("{p}")
}

/// The detector.
#[derive(Debug, Clone)]
pub struct Steady {
    p: SettleParams,
    /// Per pair: the number of the last sub-window in which it completed (0: none yet) and
    /// its completions in that sub-window.
    seen: Vec<(u32, u32)>,
    /// Completions each pair needs in a sub-window: its outstanding operations.
    quota: u32,
    /// Pairs that have not yet completed `quota` operations in the current sub-window.
    unseen: usize,
    /// Number of the current sub-window, from 1.
    current: u32,
    /// Start of the current sub-window, ps (`None` until armed).
    start: Option<TimePs>,
    /// Completions in the current sub-window.
    ops: u64,
    /// The last closed sub-windows, at most `windows`.
    recent: VecDeque<SubWindow>,
    /// The decision, once made.
    decision: Option<Decision>,
    /// When the application started (after connection setup): `max_warmup_ps` counts
    /// from it, ps.
    origin: TimePs,
}

impl Steady {
    /// A detector over `pairs` QP pairs that keep `outstanding` operations each in flight
    /// (`-t` for bandwidth tests, 1 for latency tests): a sub-window lasts until each pair
    /// has completed that many, so every operation in flight when it opened has been
    /// replaced.
    pub fn new(p: SettleParams, pairs: usize, outstanding: u32) -> Steady {
        Steady {
            p: SettleParams {
                windows: p.windows.max(2),
                ..p
            },
            seen: vec![(0, 0); pairs],
            quota: outstanding.max(1),
            unseen: pairs,
            current: 1,
            start: None,
            ops: 0,
            recent: VecDeque::new(),
            decision: None,
            origin: 0,
        }
    }

    /// Starts the first sub-window at `t` (bandwidth tests: when the initial posting is
    /// done; it is no part of the steady state).
    pub fn arm(&mut self, t: TimePs) {
        if self.start.is_none() {
            self.start = Some(t);
        }
    }

    /// Moves an armed start and the warm-up bound `dt` later (the application starts after
    /// connection setup).
    pub fn shift_start(&mut self, dt: TimePs) {
        self.origin += dt;
        if let Some(s) = self.start.as_mut() {
            *s += dt;
        }
    }

    /// The decision, once made.
    pub fn decision(&self) -> Option<Decision> {
        self.decision
    }

    /// Why the window opened, one sentence, for results.
    pub fn describe(&self, d: &Decision) -> String {
        let tol = percent(self.p.tolerance);
        let n = self.p.windows;
        match *d {
            Decision::Settled {
                spread,
                subwindow_us,
                ..
            } => format!(
                "settled: rate within {tol} % over {n} sub-windows of {subwindow_us:.1} µs \
                 (spread {} %)",
                percent(spread)
            ),
            Decision::NeverSettled {
                at_ps,
                spread,
                closed,
            } => {
                let bound = if at_ps < self.origin + self.p.max_warmup_ps {
                    format!(
                        "within sim.settle_max_windows = {} sub-windows",
                        self.p.max_windows
                    )
                } else if let Some(window_us) = self.p.capped_for_window_us {
                    format!(
                        "by {} µs, an hour (the longest a run may simulate) less the {} µs \
                         window, earlier than sim.max_warmup_us (a shorter window leaves the \
                         warm-up longer)",
                        self.p.max_warmup_ps as f64 / 1e6,
                        window_us
                    )
                } else {
                    format!(
                        "by sim.max_warmup_us = {} µs",
                        self.p.max_warmup_ps as f64 / 1e6
                    )
                };
                let detail = match spread {
                    Some(x) => format!(
                        "the last {n} of {closed} sub-windows spread {} %, tolerance {tol} %",
                        percent(x)
                    ),
                    None => format!(
                        "{closed} sub-window(s) closed, {n} must agree; a sub-window lasts \
                         until every QP has completed an operation in it"
                    ),
                };
                format!("never settled {bound}: measured anyway ({detail})")
            }
        }
    }

    /// Where the settle test stands, for a progress report: how far it has come and the
    /// bounds at which it gives up.
    pub fn status(&self) -> SettleStatus {
        SettleStatus {
            closed: self.current - 1,
            max_subwindows: self.p.max_windows,
            agreeing: self.p.windows as u32,
            spread: self.spread(),
            tolerance: self.p.tolerance,
            give_up_ps: self.origin.saturating_add(self.p.max_warmup_ps),
        }
    }

    /// The last closed sub-windows, oldest first.
    pub fn recent(&self) -> impl Iterator<Item = &SubWindow> {
        self.recent.iter()
    }

    /// Records a completion of `pair` at `t`; returns the decision when this completion
    /// makes it. Completions before [`Steady::arm`] or after the decision are ignored.
    pub fn completion(&mut self, t: TimePs, pair: usize) -> Option<Decision> {
        let start = self.start?;
        if self.decision.is_some() {
            return None;
        }
        self.ops += 1;
        if let Some((w, n)) = self.seen.get_mut(pair) {
            if *w != self.current {
                *w = self.current;
                *n = 0;
            }
            *n += 1;
            if *n == self.quota {
                self.unseen -= 1;
            }
        }
        let long_enough = t.saturating_sub(start) >= self.p.subwindow_min_ps
            && self.ops >= self.p.subwindow_min_ops;
        if self.unseen == 0 && long_enough && t > start {
            self.close(start, t);
            if let Some(spread) = self.spread() {
                if spread <= self.p.tolerance {
                    let n = self.recent.len() as f64;
                    let d = Decision::Settled {
                        at_ps: t,
                        spread,
                        subwindow_us: self.recent.iter().map(SubWindow::len_us).sum::<f64>() / n,
                    };
                    self.decision = Some(d);
                    return Some(d);
                }
            }
        }
        if t >= self.origin + self.p.max_warmup_ps || self.current > self.p.max_windows {
            let d = Decision::NeverSettled {
                at_ps: t,
                spread: self.spread(),
                closed: self.current - 1,
            };
            self.decision = Some(d);
            return Some(d);
        }
        None
    }

    fn close(&mut self, start: TimePs, end: TimePs) {
        self.recent.push_back(SubWindow {
            start_ps: start,
            end_ps: end,
            ops: self.ops,
        });
        while self.recent.len() > self.p.windows {
            self.recent.pop_front();
        }
        self.start = Some(end);
        self.ops = 0;
        self.current += 1;
        self.unseen = self.seen.len();
    }

    /// `(max − min) / max` of the last `windows` sub-windows' rates, once that many closed.
    fn spread(&self) -> Option<f64> {
        if self.recent.len() < self.p.windows {
            return None;
        }
        let rates = self.recent.iter().map(SubWindow::rate_per_us);
        let (lo, hi) = rates.fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        });
        Some(if hi > 0.0 { (hi - lo) / hi } else { 0.0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: TimePs = 1_000_000;

    fn params() -> SettleParams {
        SettleParams {
            subwindow_min_ps: 10 * US,
            subwindow_min_ops: 10,
            tolerance: 0.02,
            windows: 3,
            max_warmup_ps: 10_000 * US,
            max_windows: 1000,
            capped_for_window_us: None,
        }
    }

    #[test]
    fn the_give_up_leaves_the_window_room_within_an_hour() {
        let hour = rnic_sim::us(crate::config::schema::MAX_SIM_US);
        let p = params();
        assert_eq!(p.within_hour(1000.0), p, "10 ms is well within the hour");
        let q = p.within_hour(3.6e9 - 5000.0);
        assert_eq!(q.max_warmup_ps, 5000 * US);
        assert_eq!(q.capped_for_window_us, Some(3.6e9 - 5000.0));
        assert_eq!(
            p.within_hour(3.6e9).max_warmup_ps,
            0,
            "a window of the hour"
        );
        let mut s = Steady::new(q, 1, 1);
        s.arm(0);
        let d = s
            .completion(5000 * US, 0)
            .expect("gives up at the capped time");
        assert!(!d.settled() && d.at_ps() + 3_599_995_000 * US <= hour);
        assert!(
            s.describe(&d)
                .starts_with("never settled by 5000 µs, an hour"),
            "{}",
            s.describe(&d)
        );
    }

    /// Feeds `n` completions at `rate` per µs over `pairs` pairs round robin from `t0`;
    /// returns the time after the last and the decision, if one was made.
    fn feed(
        s: &mut Steady,
        t0: TimePs,
        n: u64,
        rate: f64,
        pairs: usize,
    ) -> (TimePs, Option<Decision>) {
        let step = (1e6 / rate) as TimePs;
        let mut t = t0;
        for k in 0..n {
            t += step;
            if let Some(d) = s.completion(t, (k as usize) % pairs) {
                return (t, Some(d));
            }
        }
        (t, None)
    }

    #[test]
    fn a_constant_rate_settles_after_the_agreeing_sub_windows() {
        let mut s = Steady::new(params(), 4, 1);
        s.arm(0);
        let (_, d) = feed(&mut s, 0, 100_000, 10.0, 4);
        // Three sub-windows of 10 µs (100 completions each at 10 per µs).
        match d {
            Some(Decision::Settled {
                at_ps,
                spread,
                subwindow_us,
            }) => {
                assert_eq!(at_ps, 30 * US);
                assert!(spread < 1e-9, "{spread}");
                assert!((subwindow_us - 10.0).abs() < 1e-6, "{subwindow_us}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_ramp_does_not_settle_until_it_is_flat() {
        let mut s = Steady::new(params(), 1, 1);
        s.arm(0);
        let mut t = 0;
        for step in 1..=10 {
            // 10 µs each at 1, 2, ... 10 per µs: every sub-window differs by far.
            let (t1, d) = feed(&mut s, t, 10 * step, step as f64, 1);
            assert_eq!(d, None, "settled on the ramp at step {step}");
            t = t1;
        }
        let (_, d) = feed(&mut s, t, 10_000, 10.0, 1);
        assert!(matches!(d, Some(Decision::Settled { .. })), "{d:?}");
    }

    #[test]
    fn a_sub_window_waits_for_every_pair() {
        let mut s = Steady::new(params(), 3, 1);
        s.arm(0);
        // Only pairs 0 and 1 complete: no sub-window closes, nothing settles.
        let (t, d) = feed(&mut s, 0, 5_000, 10.0, 2);
        assert_eq!(d, None);
        assert_eq!(s.recent().count(), 0);
        // Pair 2 completes: the first sub-window closes there.
        assert_eq!(s.completion(t + 1, 2), None);
        assert_eq!(s.recent().count(), 1);
    }

    #[test]
    fn a_rate_that_never_agrees_gives_up_at_the_maximum() {
        let mut p = params();
        p.max_warmup_ps = 200 * US;
        let mut s = Steady::new(p, 1, 1);
        s.arm(0);
        let mut t = 0;
        let mut d = None;
        // Alternating 5 and 10 per µs: a 50 % spread, never within 2 %.
        for k in 0.. {
            let rate = if k % 2 == 0 { 5.0 } else { 10.0 };
            let (t1, d1) = feed(&mut s, t, (rate * 10.0) as u64, rate, 1);
            t = t1;
            if d1.is_some() {
                d = d1;
                break;
            }
        }
        match d {
            Some(Decision::NeverSettled {
                at_ps,
                spread,
                closed,
            }) => {
                assert!((200 * US..201 * US).contains(&at_ps), "{at_ps}");
                assert!(spread.is_some_and(|s| s > 0.4), "{spread:?}");
                assert!(closed >= 19, "{closed}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn it_gives_up_after_the_most_sub_windows() {
        let mut p = params();
        p.max_windows = 5;
        let mut s = Steady::new(p, 1, 1);
        s.arm(0);
        let mut t = 0;
        let mut decided = None;
        for k in 0..10 {
            let rate = if k % 2 == 0 { 5.0 } else { 10.0 };
            let (t1, d) = feed(&mut s, t, (rate * 10.0) as u64, rate, 1);
            t = t1;
            if let Some(d) = d {
                decided = Some((k, d));
                break;
            }
        }
        // It gives up as the fifth sub-window closes without agreement.
        match decided {
            Some((4, d @ Decision::NeverSettled { closed: 5, .. })) => {
                let why = s.describe(&d);
                assert!(
                    why.starts_with(
                        "never settled within sim.settle_max_windows = 5 sub-windows: \
                         measured anyway (the last 3 of 5 sub-windows spread 50 %"
                    ),
                    "{why}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nothing_counts_before_it_is_armed() {
        let mut s = Steady::new(params(), 1, 1);
        let (t, d) = feed(&mut s, 0, 10_000, 10.0, 1);
        assert_eq!(d, None);
        s.arm(t);
        let (_, d) = feed(&mut s, t, 10_000, 10.0, 1);
        assert!(matches!(d, Some(Decision::Settled { at_ps, .. }) if at_ps == t + 30 * US));
    }
}
