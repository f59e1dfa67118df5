//! Progress of a running simulation, for a caller that wants to show it (a progress bar):
//! [`Progress`] and the loop that reports it, `run_observed`.
//!
//! Progress only observes: the events run in exactly the same order with or without an
//! observer, so the results are identical. The event loop stops every [`CHECK_EVENTS`]
//! events to look at the wall clock, and calls the observer at most once per
//! [`REPORT_INTERVAL`] of wall time, so the cost is one clock read per few thousand
//! events; without an observer the loop is the plain [`World::run_until`].

use std::time::{Duration, Instant};

use rnic_sim::TimePs;

use crate::host::perftest::Perftest;
pub use crate::host::steady::SettleStatus;
use crate::limits::CLOCK_HORIZON_PS;
use crate::world::World;

/// Events run between two looks at the wall clock.
pub const CHECK_EVENTS: u64 = 4096;

/// Least wall time between two reports.
pub const REPORT_INTERVAL: Duration = Duration::from_millis(100);

/// How far a run has come.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// The message size being run, bytes.
    pub size_bytes: u64,
    /// Its position among the run's sizes (0-based; `-a` runs several sizes in turn).
    pub size_index: usize,
    /// Sizes the run has.
    pub sizes: usize,
    /// Simulated time reached, ps.
    pub now_ps: TimePs,
    /// Duration runs (`-D`): when the measurement window ends, ps. Until a window that waits
    /// for warm-up rounds has opened, the earliest it can end.
    pub end_ps: Option<TimePs>,
    /// Operations completed (bandwidth: at the initiator; latency: iterations).
    pub ops_done: u64,
    /// Iteration runs (`-n`): operations asked for.
    pub ops_asked: Option<u64>,
    /// Events processed in this size's run.
    pub events: u64,
    /// Wall time since this size's run started.
    pub wall: Duration,
    /// What the run is doing.
    pub phase: Phase,
}

/// What a run is doing: setting up its connections, warming up before a `-D` window,
/// measuring in that window, or running its iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// RDMA CM is connecting the QPs: `established` of `ends` connection ends (two per QP
    /// pair) so far.
    Connecting {
        /// Ends established.
        established: u64,
        /// Ends in all.
        ends: u64,
    },
    /// A `-D` run whose window has not opened yet.
    WarmUp(WarmUp),
    /// A `-D` run measuring in its window (several flows: the latest window).
    Window {
        /// When it opened, ps.
        start_ps: TimePs,
        /// When it ends, ps.
        end_ps: TimePs,
    },
    /// An iteration run (`-n`): [`Progress::ops_done`] of [`Progress::ops_asked`].
    Iterations,
}

/// A `-D` run before its window opens: what it waits for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WarmUp {
    /// The length of the window that follows, ps.
    pub window_ps: TimePs,
    /// A fixed warm-up (`sim.warmup_us`): the window opens at this time at the earliest.
    pub fixed_until_ps: Option<TimePs>,
    /// The settle test (`None` with a fixed warm-up).
    pub settle: Option<SettleStatus>,
    /// The window also waits until every QP has completed `sim.warmup_rounds` operations
    /// (with the initial posting done): not yet.
    pub rounds_pending: bool,
}

/// Where a run is: `size` of the run's `sizes` sizes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Position {
    pub size_bytes: u64,
    pub size_index: usize,
    pub sizes: usize,
}

/// What the world's state says about its progress.
fn progress(world: &World, at: Position, now: TimePs, wall: Duration) -> Progress {
    // Several flows: the run lasts until the latest duration flow's window ends, and its
    // operations are every iteration flow's.
    let mut end_ps: Option<TimePs> = None;
    let mut ops_asked: Option<u64> = None;
    for app in &world.apps {
        if app.spec.duration_mode {
            let end = if app.window.span_ps.1 == TimePs::MAX {
                app.window
                    .min_start_ps
                    .saturating_add(app.window.duration_ps)
            } else {
                app.window.span_ps.1
            };
            end_ps = Some(end_ps.map_or(end, |e| e.max(end)));
        } else {
            ops_asked = Some(ops_asked.unwrap_or(0) + app.ops_asked());
        }
    }
    Progress {
        phase: phase(world),
        size_bytes: at.size_bytes,
        size_index: at.size_index,
        sizes: at.sizes,
        now_ps: now,
        end_ps,
        ops_done: world.apps.iter().map(|a| a.ops_done()).sum(),
        ops_asked,
        events: world.events,
        wall,
    }
}

/// The phase of `world`'s run: connection setup until the applications start; then, if a
/// duration flow still waits for its window, its warm-up; else the latest open window;
/// else iterations.
fn phase(world: &World) -> Phase {
    if !world.started {
        if let Some(cm) = &world.cm {
            let (established, ends) = cm.ends_established();
            return Phase::Connecting { established, ends };
        }
    }
    let duration = || world.apps.iter().filter(|a| a.spec.duration_mode);
    if let Some(a) = duration().find(|a| a.window.opened.is_none()) {
        return Phase::WarmUp(warm_up(a));
    }
    duration()
        .map(|a| Phase::Window {
            start_ps: a.window.span_ps.0,
            end_ps: a.window.span_ps.1,
        })
        .max_by_key(|w| match w {
            Phase::Window { end_ps, .. } => *end_ps,
            _ => 0,
        })
        .unwrap_or(Phase::Iterations)
}

/// What duration application `a`, whose window has not opened, waits for.
fn warm_up(a: &Perftest) -> WarmUp {
    let settle = a.window.steady.as_ref().map(|s| s.status());
    WarmUp {
        window_ps: a.window.duration_ps,
        fixed_until_ps: settle.is_none().then_some(a.window.min_start_ps),
        settle,
        rounds_pending: !a.rounds_done(),
    }
}

/// What happens to a flow whose application just finished (see [`World::watch_finish`]):
/// called with the world and the flow's number, between two events.
pub(crate) type OnFinish<'a> = &'a mut dyn FnMut(&mut World, usize);

/// Runs `world` as [`World::run_until`]`(CLOCK_HORIZON_PS, max_events)` does (a run stops
/// at the clock's horizon rather than wrap it; see [`CLOCK_HORIZON_PS`]), telling `observer`
/// how far it has come about every [`REPORT_INTERVAL`] and calling `on_finish` with each
/// application that finished as soon as it did; returns the time of the last event.
pub(crate) fn run_observed(
    world: &mut World,
    max_events: u64,
    at: Position,
    mut observer: Option<&mut dyn FnMut(&Progress)>,
    mut on_finish: Option<OnFinish<'_>>,
) -> TimePs {
    let start = Instant::now();
    let mut last_report = start;
    let mut last = 0;
    loop {
        let before = world.events;
        let stop = match observer {
            Some(_) => max_events.min(before.saturating_add(CHECK_EVENTS)),
            None => max_events,
        };
        let t = world.run_until(CLOCK_HORIZON_PS, stop);
        if world.events > before {
            last = t;
        }
        // `run_until` stops after an event that finished an application: the flow is
        // handled before the next event, and the run goes on as one call would.
        let finished = std::mem::take(&mut world.just_finished);
        for &f in &finished {
            if let Some(on_finish) = on_finish.as_mut() {
                on_finish(world, f);
            }
        }
        // `run_until` stopped for the same reasons a single call would (the application
        // finished, the event limit, an empty queue), not at the chunk's end nor for a flow
        // that finished.
        let stopped_early = world.events < stop && finished.is_empty();
        if world.done() || world.events >= max_events || stopped_early {
            return last;
        }
        let Some(observer) = observer.as_mut() else {
            continue;
        };
        let now = Instant::now();
        if now.duration_since(last_report) >= REPORT_INTERVAL {
            last_report = now;
            observer(&progress(world, at, last, now.duration_since(start)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::workload::{PerfSpec, PerfTest};

    /// The phases a run reports, in order, each once (stepping the world a few events at a
    /// time as the observed loop does).
    fn phases(spec: &PerfSpec) -> Vec<Phase> {
        let cfg = Config::default();
        let opts = super::super::options::RunOptions::default();
        let mut b = super::super::build::build(&cfg, spec, spec.sizes[0], &opts).expect("build");
        b.world.start();
        let at = Position {
            size_bytes: spec.sizes[0],
            size_index: 0,
            sizes: 1,
        };
        let mut seen: Vec<Phase> = Vec::new();
        while !b.world.done() && b.world.events < b.max_events {
            let before = b.world.events;
            let t = b.world.run_until(CLOCK_HORIZON_PS, before + 4);
            if b.world.events == before {
                break;
            }
            let p = progress(&b.world, at, t, Duration::ZERO).phase;
            let kind = |p: &Phase| std::mem::discriminant(p);
            if seen.last().is_none_or(|s| kind(s) != kind(&p)) {
                seen.push(p);
            }
        }
        seen
    }

    /// A `-D` run goes from connection setup (RDMA CM, rnic's default) through the warm-up's
    /// settle test to its window, in that order: the progress bar names each phase instead
    /// of reading "done" while the warm-up goes on.
    #[test]
    fn a_duration_run_reports_setup_then_warm_up_then_its_window() {
        let spec = PerfSpec {
            sizes: vec![64],
            qps: 2,
            duration_us: Some(200.0),
            ..PerfSpec::perftest(PerfTest::WriteBw)
        };
        let seen = phases(&spec);
        assert!(
            matches!(
                seen.as_slice(),
                [
                    Phase::Connecting { .. },
                    Phase::WarmUp(_),
                    Phase::Window { .. }
                ]
            ),
            "{seen:?}"
        );
        let Phase::WarmUp(w) = seen[1] else {
            unreachable!()
        };
        let s = w.settle.expect("the settle test");
        assert_eq!((s.max_subwindows, s.agreeing), (12, 3));
        assert_eq!(w.window_ps, 200_000_000);
        let Phase::Window { start_ps, end_ps } = seen[2] else {
            unreachable!()
        };
        assert_eq!(end_ps - start_ps, 200_000_000);
        // An iteration run has no warm-up.
        let spec = PerfSpec {
            sizes: vec![64],
            iters: 200,
            ..PerfSpec::perftest(PerfTest::WriteBw)
        };
        let seen = phases(&spec);
        assert!(
            matches!(
                seen.as_slice(),
                [Phase::Connecting { .. }, Phase::Iterations]
            ),
            "{seen:?}"
        );
    }
}
