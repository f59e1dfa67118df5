//! The progress bar of one run (`rnic perf`, `rnic run`): drawn on standard error, only on a
//! terminal and only once the run has taken about a second, from the model's
//! [`Progress`] reports. It names the phase the run is in, each with its own bar: connection
//! setup (QP ends connected by RDMA CM), a `-D` run's warm-up (the settle test's
//! sub-windows against the most it waits for, or a fixed `sim.warmup_us`), the `-D`
//! window (its simulated µs), or an `-n` run's iterations; then events per second of wall
//! time and the estimated time left, which during a warm-up is a range (its end is not
//! known) and is never "0s" before the run can end. It never changes a result: the model's
//! progress only observes.

use crate::config::Config;
use crate::model::run::{Phase, WarmUp};
use crate::model::Progress;
use crate::perf::{execute_observed, PerfRunner, PerfSpec};
use crate::report::PerfResult;
use std::time::{Duration, Instant};

/// [`crate::perf::execute`] with a progress bar when `show` (a terminal, not `--json -`).
pub fn execute_with_bar(
    runner: &dyn PerfRunner,
    cfg: &Config,
    spec: &PerfSpec,
    profile: &str,
    show: bool,
) -> anyhow::Result<PerfResult> {
    if !show {
        return execute_observed(runner, cfg, spec, profile, None);
    }
    let mut bar = RunProgress::new(true);
    let result = execute_observed(runner, cfg, spec, profile, Some(&mut |p| bar.update(p)));
    bar.finish();
    result
}

/// A run shorter than this draws no bar.
pub const SHOW_AFTER: Duration = Duration::from_secs(1);

/// The progress bar of one run.
pub struct RunProgress {
    enabled: bool,
    start: Instant,
    bar: Option<indicatif::ProgressBar>,
    /// The size and phase the bar was drawn for (a new bar starts at each).
    key: Option<(usize, u8)>,
}

impl RunProgress {
    /// A bar that is drawn only when `enabled` (see [`crate::sweep::progress_wanted`]).
    pub fn new(enabled: bool) -> RunProgress {
        RunProgress {
            enabled,
            start: Instant::now(),
            bar: None,
            key: None,
        }
    }

    /// Whether a bar may be drawn at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Takes one progress report.
    pub fn update(&mut self, p: &Progress) {
        if !self.enabled || self.start.elapsed() < SHOW_AFTER {
            return;
        }
        let Shown { pos, len, text } = shown(p);
        let key = bar_key(p);
        match &self.bar {
            Some(bar) if self.key == Some(key) => {
                bar.set_length(len);
                bar.set_position(pos);
                bar.set_message(text);
            }
            _ => {
                // A new bar for each size of an `-a` run and each phase, set up before it
                // first draws.
                if let Some(old) = self.bar.take() {
                    old.finish_and_clear();
                }
                let prefix = if p.sizes > 1 {
                    format!("{} B ({}/{}) ", p.size_bytes, p.size_index + 1, p.sizes)
                } else {
                    String::new()
                };
                let mut bar = indicatif::ProgressBar::new(len)
                    .with_prefix(prefix)
                    .with_message(text)
                    .with_position(pos)
                    .with_elapsed(self.start.elapsed());
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{prefix}[{elapsed_precise}] {wide_bar} {msg}",
                ) {
                    bar = bar.with_style(style);
                }
                bar.tick();
                self.bar = Some(bar);
                self.key = Some(key);
            }
        }
    }

    /// Removes the bar (before the results are printed).
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

/// What the bar shows of one report: its position and length (each phase has its own
/// bar, from 0) and the text beside it.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    pos: u64,
    len: u64,
    text: String,
}

/// Which bar a report belongs to: a new bar starts with each size and each phase.
fn bar_key(p: &Progress) -> (usize, u8) {
    let phase = match p.phase {
        Phase::Connecting { .. } => 0,
        Phase::WarmUp(_) => 1,
        Phase::Window { .. } => 2,
        Phase::Iterations => 3,
    };
    (p.size_index, phase)
}

/// The bar of report `p`: the phase, how far it has come, events per wall second and the
/// time left. The time left is never "0s" before the run can end: while a `-D` run warms
/// up, its end is not known, so the ETA is the least time left (the window still to come)
/// and, when the settle test has a give-up time, the most.
fn shown(p: &Progress) -> Shown {
    let rate = events_rate(p);
    let now_us = p.now_ps / 1_000_000;
    match p.phase {
        Phase::Connecting { established, ends } => Shown {
            pos: established,
            len: ends.max(1),
            text: format!(
                "connection setup (RDMA CM): {established}/{ends} QP ends connected, {rate}, eta -"
            ),
        },
        Phase::WarmUp(w) => warm_up_shown(p, &w, &rate),
        Phase::Window { start_ps, end_ps } => {
            let len = (end_ps.saturating_sub(start_ps) / 1_000_000).max(1);
            let pos = (p.now_ps.saturating_sub(start_ps) / 1_000_000).min(len);
            let text = if p.now_ps >= end_ps {
                format!(
                    "measuring: the -D window is over, finishing the operations in flight, {rate}"
                )
            } else {
                let left = wall_for(p, end_ps - p.now_ps).map_or("-".into(), fmt_secs);
                format!("measuring: {pos}/{len} us of the -D window, {rate}, eta {left}")
            };
            Shown { pos, len, text }
        }
        Phase::Iterations => match p.ops_asked {
            Some(asked) => {
                let len = asked.max(1);
                let pos = p.ops_done.min(len);
                Shown {
                    pos,
                    len,
                    text: format!(
                        "{}/{asked} iterations, {rate}, eta {}",
                        p.ops_done.min(asked),
                        eta(p, pos, len)
                    ),
                }
            }
            None => Shown {
                pos: 0,
                len: 1,
                text: format!("{now_us} us simulated, {rate}, eta -"),
            },
        },
    }
}

/// The bar of a `-D` run's warm-up: the settle test's sub-windows against the most it
/// waits for, or a fixed warm-up's simulated time against its end.
fn warm_up_shown(p: &Progress, w: &WarmUp, rate: &str) -> Shown {
    let now_us = p.now_ps / 1_000_000;
    let rounds = if w.rounds_pending {
        ", waiting for every QP's sim.warmup_rounds operations"
    } else {
        ""
    };
    let (pos, len, what, eta) = match (w.settle, w.fixed_until_ps) {
        (Some(s), _) => {
            let spread = s
                .spread
                .map_or("-".to_string(), |x| format!("{:.1} %", x * 100.0));
            let what = format!(
                "warm-up, settle test: {} of at most {} sub-windows closed, the last {} spread \
                 {spread} (settled at <= {:.1} %){rounds}, {now_us} us simulated",
                s.closed,
                s.max_subwindows,
                s.agreeing,
                s.tolerance * 100.0
            );
            // At least the window is left; at most, up to the give-up time and the window.
            let most = s
                .give_up_ps
                .saturating_sub(p.now_ps)
                .saturating_add(w.window_ps);
            let eta = match (wall_for(p, w.window_ps), wall_for(p, most)) {
                (Some(lo), Some(hi)) if fmt_secs(lo) != fmt_secs(hi) => {
                    format!("{} to {}", fmt_secs(lo), fmt_secs(hi))
                }
                (Some(lo), _) => fmt_secs(lo),
                (None, _) => "-".to_string(),
            };
            let pos = u64::from(s.closed.min(s.max_subwindows));
            (pos, u64::from(s.max_subwindows.max(1)), what, eta)
        }
        (None, until) => {
            let until = until.unwrap_or(p.now_ps);
            let len = (until / 1_000_000).max(1);
            let what = format!(
                "warm-up (sim.warmup_us): {}/{len} us simulated{rounds}",
                now_us.min(len)
            );
            // The rest of the warm-up and the window; later if warm-up rounds hold it.
            let left = until.saturating_sub(p.now_ps).saturating_add(w.window_ps);
            let at_least = if w.rounds_pending { ">= " } else { "" };
            let eta =
                wall_for(p, left).map_or("-".to_string(), |s| format!("{at_least}{}", fmt_secs(s)));
            (now_us.min(len), len, what, eta)
        }
    };
    Shown {
        pos,
        len,
        text: format!("{what}, {rate}, eta {eta}"),
    }
}

/// Wall seconds `sim_ps` more of simulated time take at the run's speed so far (`None`
/// before any simulated time has passed).
fn wall_for(p: &Progress, sim_ps: u64) -> Option<f64> {
    (p.now_ps > 0).then(|| p.wall.as_secs_f64() * sim_ps as f64 / p.now_ps as f64)
}

/// Wall time left at the rate so far of this size's run.
fn eta(p: &Progress, pos: u64, len: u64) -> String {
    if pos == 0 {
        return "-".to_string();
    }
    fmt_secs(p.wall.as_secs_f64() * (len - pos) as f64 / pos as f64)
}

/// Seconds as `<1s`, `4s`, `2m05s` or `4h09m` (never `0s`: a run that is not over has
/// time left).
fn fmt_secs(secs: f64) -> String {
    if secs < 0.5 {
        return "<1s".to_string();
    }
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn events_rate(p: &Progress) -> String {
    let secs = p.wall.as_secs_f64();
    if secs > 0.0 {
        format!("{:.1} M events/s", p.events as f64 / secs / 1e6)
    } else {
        "- events/s".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::run::SettleStatus;

    const MS: u64 = 1_000_000_000;

    /// A report 250 µs (or `now_ps`) in after 1.5 s of wall time.
    fn report(ops_asked: Option<u64>, phase: Phase) -> Progress {
        Progress {
            size_bytes: 64,
            size_index: 0,
            sizes: 1,
            now_ps: 250_000_000,
            end_ps: None,
            ops_done: 40,
            ops_asked,
            events: 3_000_000,
            wall: Duration::from_millis(1500),
            phase,
        }
    }

    fn settle(closed: u32, spread: Option<f64>) -> SettleStatus {
        SettleStatus {
            closed,
            max_subwindows: 12,
            agreeing: 3,
            spread,
            tolerance: 0.02,
            give_up_ps: 2000 * MS,
        }
    }

    fn warm_up(settle: Option<SettleStatus>, fixed_until_ps: Option<u64>) -> Phase {
        Phase::WarmUp(WarmUp {
            window_ps: MS,
            fixed_until_ps,
            settle,
            rounds_pending: false,
        })
    }

    #[test]
    fn iterations_show_done_of_asked() {
        let s = shown(&report(Some(100), Phase::Iterations));
        assert_eq!((s.pos, s.len), (40, 100));
        assert_eq!(s.text, "40/100 iterations, 2.0 M events/s, eta 2s");
        // 1.5 s for 250 of 1000: 4.5 s left.
        assert_eq!(eta(&report(None, Phase::Iterations), 250, 1000), "5s");
        assert_eq!(eta(&report(None, Phase::Iterations), 1, 10_000), "4h09m");
        assert_eq!(eta(&report(None, Phase::Iterations), 0, 1000), "-");
        assert_eq!(
            eta(&report(None, Phase::Iterations), 999_999, 1_000_000),
            "<1s"
        );
    }

    #[test]
    fn connection_setup_is_its_own_phase() {
        let s = shown(&report(
            None,
            Phase::Connecting {
                established: 6,
                ends: 64,
            },
        ));
        assert_eq!((s.pos, s.len), (6, 64));
        assert!(
            s.text
                .starts_with("connection setup (RDMA CM): 6/64 QP ends connected,"),
            "{}",
            s.text
        );
        assert!(s.text.ends_with("eta -"), "{}", s.text);
    }

    /// The bug this pins: a `-D` run past its earliest window end while the automatic
    /// warm-up went on read "11002/11002 us simulated, eta 0s", a full bar that claimed to be
    /// done. The warm-up's bar counts sub-windows against the most the test waits for, and
    /// its ETA is a range from the window still to come to the give-up time plus the window.
    #[test]
    fn a_warm_up_never_claims_to_be_done() {
        let mut p = report(None, warm_up(Some(settle(5, Some(0.93439))), None));
        p.now_ps = 11_002 * 1_000_000;
        let s = shown(&p);
        assert_eq!((s.pos, s.len), (5, 12), "sub-windows of the most");
        assert!(s.pos < s.len);
        assert_eq!(
            s.text,
            "warm-up, settle test: 5 of at most 12 sub-windows closed, the last 3 spread \
             93.4 % (settled at <= 2.0 %), 11002 us simulated, 2.0 M events/s, eta <1s to 4m31s"
        );
        // Before three sub-windows closed there is no spread yet.
        let s = shown(&report(None, warm_up(Some(settle(1, None)), None)));
        assert!(s.text.contains("the last 3 spread - "), "{}", s.text);
        // 1.5 s of wall for 250 µs: the 1 ms window alone is 6 s more, and giving up at 2 s
        // simulated is hours more.
        assert!(s.text.ends_with("eta 6s to 3h20m"), "{}", s.text);
        assert!(!s.text.contains("eta 0s"));
    }

    #[test]
    fn a_fixed_warm_up_counts_to_its_end_and_the_window_after_it() {
        let s = shown(&report(None, warm_up(None, Some(500_000_000))));
        assert_eq!((s.pos, s.len), (250, 500));
        // 250 µs of warm-up left and the 1000 µs window: 7.5 s at 6 ms of wall per µs.
        assert!(
            s.text
                .starts_with("warm-up (sim.warmup_us): 250/500 us simulated, "),
            "{}",
            s.text
        );
        assert!(s.text.ends_with("eta 8s"), "{}", s.text);
        // While warm-up rounds hold the window, only the least time left is known.
        let mut p = report(None, warm_up(None, Some(500_000_000)));
        if let Phase::WarmUp(w) = &mut p.phase {
            w.rounds_pending = true;
        }
        assert!(shown(&p).text.ends_with("eta >= 8s"), "{}", shown(&p).text);
    }

    #[test]
    fn the_window_counts_its_own_time() {
        let window = Phase::Window {
            start_ps: 200_000_000,
            end_ps: 1_200_000_000,
        };
        let s = shown(&report(None, window));
        assert_eq!((s.pos, s.len), (50, 1000));
        assert_eq!(
            s.text,
            "measuring: 50/1000 us of the -D window, 2.0 M events/s, eta 6s"
        );
        let mut p = report(None, window);
        p.now_ps = 1_300_000_000;
        let s = shown(&p);
        assert_eq!((s.pos, s.len), (1000, 1000));
        assert!(s.text.contains("window is over"), "{}", s.text);
    }

    #[test]
    fn each_size_and_phase_has_its_own_bar() {
        let a = report(None, warm_up(None, Some(1)));
        let b = report(None, Phase::Iterations);
        assert_ne!(bar_key(&a), bar_key(&b));
        let mut c = a;
        c.size_index = 1;
        assert_ne!(bar_key(&a), bar_key(&c));
    }

    #[test]
    fn a_disabled_bar_draws_nothing() {
        let mut p = RunProgress::new(false);
        p.update(&report(Some(100), Phase::Iterations));
        assert!(p.bar.is_none() && !p.enabled());
        p.finish();
    }
}
