//! The progress bar of one run (`rnic perf`, `rnic run`): drawn on standard error, only on a
//! terminal and only once the run has taken about a second, from the model's
//! [`Progress`] reports. It shows the iterations done (`-n` runs) or the simulated time done
//! against the end of the measurement window (`-D` runs), events per second of wall time
//! and the estimated time left. It never changes a result: the model's progress only
//! observes.

use crate::config::Config;
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
    /// The size the bar was drawn for (`-a` runs start again at each size).
    size_index: Option<usize>,
}

impl RunProgress {
    /// A bar that is drawn only when `enabled` (see [`crate::sweep::progress_wanted`]).
    pub fn new(enabled: bool) -> RunProgress {
        RunProgress {
            enabled,
            start: Instant::now(),
            bar: None,
            size_index: None,
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
        let (pos, len, what) = position(p);
        let pos = pos.min(len);
        let msg = format!("{what}, {}, eta {}", events_rate(p), eta(p, pos, len));
        match &self.bar {
            Some(bar) if self.size_index == Some(p.size_index) => {
                bar.set_length(len);
                bar.set_position(pos);
                bar.set_message(msg);
            }
            _ => {
                // A new bar (for each size of an `-a` run), set up before it first draws.
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
                    .with_message(msg)
                    .with_position(pos)
                    .with_elapsed(self.start.elapsed());
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{prefix}[{elapsed_precise}] {wide_bar} {msg}",
                ) {
                    bar = bar.with_style(style);
                }
                bar.tick();
                self.bar = Some(bar);
                self.size_index = Some(p.size_index);
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

/// (position, length, text) of a report: iterations, or simulated time in µs.
fn position(p: &Progress) -> (u64, u64, String) {
    match (p.ops_asked, p.end_ps) {
        (Some(asked), _) => (
            p.ops_done,
            asked.max(1),
            format!("{}/{} iterations", p.ops_done.min(asked), asked),
        ),
        (None, Some(end)) => {
            let (now_us, end_us) = (p.now_ps / 1_000_000, (end / 1_000_000).max(1));
            (
                now_us,
                end_us,
                format!("{}/{} us simulated", now_us.min(end_us), end_us),
            )
        }
        (None, None) => (0, 1, format!("{} us simulated", p.now_ps / 1_000_000)),
    }
}

/// Wall time left at the rate so far of this size's run.
fn eta(p: &Progress, pos: u64, len: u64) -> String {
    if pos == 0 {
        return "-".to_string();
    }
    let left = p.wall.as_secs_f64() * (len - pos) as f64 / pos as f64;
    let s = left.round() as u64;
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

    fn report(ops_asked: Option<u64>, end_ps: Option<u64>) -> Progress {
        Progress {
            size_bytes: 64,
            size_index: 0,
            sizes: 1,
            now_ps: 250_000_000,
            end_ps,
            ops_done: 40,
            ops_asked,
            events: 3_000_000,
            wall: Duration::from_millis(1500),
        }
    }

    #[test]
    fn iterations_or_simulated_time() {
        assert_eq!(
            position(&report(Some(100), None)),
            (40, 100, "40/100 iterations".into())
        );
        assert_eq!(
            position(&report(None, Some(1_000_000_000))),
            (250, 1000, "250/1000 us simulated".into())
        );
        assert_eq!(events_rate(&report(None, None)), "2.0 M events/s");
        // 1.5 s for 250 of 1000 µs: 4.5 s left.
        assert_eq!(eta(&report(None, None), 250, 1000), "5s");
        assert_eq!(eta(&report(None, None), 1, 10_000), "4h09m");
        assert_eq!(eta(&report(None, None), 0, 1000), "-");
    }

    #[test]
    fn a_disabled_bar_draws_nothing() {
        let mut p = RunProgress::new(false);
        p.update(&report(Some(100), None));
        assert!(p.bar.is_none() && !p.enabled());
        p.finish();
    }
}
