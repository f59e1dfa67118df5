//! Progress of a running simulation, for a caller that wants to show it (a progress bar):
//! [`Progress`] and the loop that reports it, [`run_observed`].
//!
//! Progress only observes: the events run in exactly the same order with or without an
//! observer, so the results are identical. The event loop stops every [`CHECK_EVENTS`]
//! events to look at the wall clock, and calls the observer at most once per
//! [`REPORT_INTERVAL`] of wall time, so the cost is one clock read per few thousand
//! events; without an observer the loop is the plain [`World::run_until`].

use std::time::{Duration, Instant};

use rnic_sim::TimePs;

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
        if app.duration_mode {
            let end = if app.window.1 == TimePs::MAX {
                app.window_min_start.saturating_add(app.duration_ps)
            } else {
                app.window.1
            };
            end_ps = Some(end_ps.map_or(end, |e| e.max(end)));
        } else {
            ops_asked = Some(ops_asked.unwrap_or(0) + app.ops_asked());
        }
    }
    Progress {
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

/// Runs `world` as [`World::run_until`]`(CLOCK_HORIZON_PS, max_events)` does (a run stops
/// at the clock's horizon rather than wrap it; see [`CLOCK_HORIZON_PS`]), telling `observer`
/// how far it has come about every [`REPORT_INTERVAL`]; returns the time of the last event.
pub(crate) fn run_observed(
    world: &mut World,
    max_events: u64,
    at: Position,
    observer: Option<&mut dyn FnMut(&Progress)>,
) -> TimePs {
    let Some(observer) = observer else {
        return world.run_until(CLOCK_HORIZON_PS, max_events);
    };
    let start = Instant::now();
    let mut last_report = start;
    let mut last = 0;
    loop {
        let before = world.events;
        let stop = max_events.min(before.saturating_add(CHECK_EVENTS));
        let t = world.run_until(CLOCK_HORIZON_PS, stop);
        if world.events > before {
            last = t;
        }
        // `run_until` stopped for the same reasons a single call would (the application
        // finished, the event limit, an empty queue), or at the chunk's end.
        if world.done() || world.events >= max_events || world.events < stop {
            return last;
        }
        let now = Instant::now();
        if now.duration_since(last_report) >= REPORT_INTERVAL {
            last_report = now;
            observer(&progress(world, at, last, now.duration_since(start)));
        }
    }
}
