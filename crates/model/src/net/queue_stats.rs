//! The occupancy of every switch output port over time: percentiles weighted by time (the
//! fraction of the run a queue spent at or below a level, what an operator's queue monitor
//! reports; a percentile over enqueues would weigh a burst's many arrivals over the long
//! quiet between them), and, with `net.trace_interval_us`, the queue sampled every
//! interval for the queue trace (FILE-queues.csv).
//!
//! A queue holds a frame from the moment the switch has received it (it then occupies the
//! port's buffer) until its last bit has left the port, as the buffer accounting counts it.
//! Departures are known ahead (or, in a pausable port, once the frame starts), so each
//! queue's level is a step function kept exactly, not sampled by events: recording it adds
//! no event to the run and moves nothing else.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use rnic_sim::TimePs;

/// One switch output port's queue over the run, as `--json` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QueuePortStats {
    /// The switch (index among the switches).
    pub switch: u32,
    /// Its output port.
    pub port: u32,
    /// Frames that joined the queue.
    pub frames: u64,
    /// Queue length the port spent half the run at or below, bytes.
    pub p50_bytes: u64,
    /// ... 95 % of the run, bytes.
    pub p95_bytes: u64,
    /// ... 99 % of the run, bytes.
    pub p99_bytes: u64,
    /// Longest queue, bytes.
    pub max_bytes: u64,
    /// Mean queue over the run, bytes.
    pub mean_bytes: u64,
}

/// One queue's level over time.
#[derive(Debug, Clone, Default)]
pub struct QueueTracker {
    level: u64,
    last_ps: TimePs,
    leaving: BinaryHeap<Reverse<(TimePs, u64)>>,
    /// Time spent at each level, ps (a hash map: it is added to at every change of level,
    /// on every frame in and out, and read in level order only for the report; as a
    /// `BTreeMap` its searches were 4 % of a fabric run's CPU time).
    time_at: FxHashMap<u64, u64>,
    frames: u64,
    max: u64,
    /// With a trace: the level at each multiple of `interval_ps` passed so far.
    samples: Vec<u64>,
    interval_ps: Option<TimePs>,
    /// Most samples the trace keeps (its share of
    /// [`crate::params::trace::TRACE_ROW_BUDGET`]).
    max_samples: usize,
    /// A sample was due past `max_samples`: the trace ends early.
    cut: bool,
}

impl QueueTracker {
    /// A queue, empty at time 0, sampled every `interval_ps` if given, at most
    /// `max_samples` times.
    pub fn new(interval_ps: Option<TimePs>, max_samples: usize) -> Self {
        QueueTracker {
            interval_ps: interval_ps.filter(|&i| i > 0),
            max_samples,
            ..QueueTracker::default()
        }
    }

    /// Takes the samples due at times for which `due(sample time)` holds, up to the cap.
    fn sample_while(&mut self, due: impl Fn(TimePs) -> bool) {
        let Some(i) = self.interval_ps else { return };
        while due((self.samples.len() as u64).saturating_mul(i)) {
            if self.samples.len() >= self.max_samples {
                self.cut = true;
                return;
            }
            self.samples.push(self.level);
        }
    }

    /// Time runs on to `t` at the current level.
    fn advance(&mut self, t: TimePs) {
        if t <= self.last_ps {
            return;
        }
        *self.time_at.entry(self.level).or_default() += t - self.last_ps;
        self.sample_while(|at| at < t);
        self.last_ps = t;
    }

    /// The simulation is at `now`: frames whose last bit has left by then are gone.
    pub fn settle(&mut self, now: TimePs) {
        while let Some(&Reverse((end, b))) = self.leaving.peek() {
            if end > now {
                break;
            }
            self.leaving.pop();
            self.advance(end);
            self.level -= b;
        }
        self.advance(now);
    }

    /// A frame of `len` bytes joins the queue at `now`.
    pub fn joined(&mut self, now: TimePs, len: u64) {
        self.settle(now);
        self.level += len;
        self.frames += 1;
        self.max = self.max.max(self.level);
    }

    /// A frame of `len` bytes in the queue leaves at `end` (its last bit out).
    pub fn leaves_at(&mut self, end: TimePs, len: u64) {
        self.leaving.push(Reverse((end, len)));
    }

    /// The run ended at `end`: time runs on to it, and the samples up to it are taken.
    pub fn finish(&mut self, end: TimePs) {
        self.settle(end);
        self.sample_while(|at| at <= end);
    }

    /// The time spent at each level, ps, in level order.
    fn levels(&self) -> Vec<(u64, u64)> {
        let mut levels: Vec<(u64, u64)> = self.time_at.iter().map(|(&l, &ps)| (l, ps)).collect();
        levels.sort_unstable();
        levels
    }

    /// The smallest level the queue spent at least `fraction` of the time at or below.
    pub fn percentile(&self, fraction: f64) -> u64 {
        percentile_of(&self.levels(), fraction, self.level)
    }

    /// The level at each sample time (with a trace).
    pub fn samples(&self) -> &[u64] {
        &self.samples
    }

    /// Whether the trace stopped at its cap before the run ended.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// Its figures as reported, for output port `port` of switch `switch`.
    pub fn stats(&self, switch: usize, port: usize) -> QueuePortStats {
        let levels = self.levels();
        let total: u64 = levels.iter().map(|&(_, ps)| ps).sum();
        let weighted: u128 = levels
            .iter()
            .map(|&(l, ps)| u128::from(l) * u128::from(ps))
            .sum();
        QueuePortStats {
            switch: switch as u32,
            port: port as u32,
            frames: self.frames,
            p50_bytes: percentile_of(&levels, 0.50, self.level),
            p95_bytes: percentile_of(&levels, 0.95, self.level),
            p99_bytes: percentile_of(&levels, 0.99, self.level),
            max_bytes: self.max,
            mean_bytes: weighted.checked_div(u128::from(total)).unwrap_or(0) as u64,
        }
    }
}

/// The smallest level of `levels` ((level, ps) in level order) at or below which at least
/// `fraction` of their time was spent; `otherwise` when they hold no time.
fn percentile_of(levels: &[(u64, u64)], fraction: f64, otherwise: u64) -> u64 {
    let total: u64 = levels.iter().map(|&(_, ps)| ps).sum();
    let want = (fraction * total as f64).ceil() as u64;
    let mut seen = 0;
    for &(level, ps) in levels {
        seen += ps;
        if seen >= want.max(1) {
            return level;
        }
    }
    otherwise
}

/// The queues of every switch output port.
#[derive(Debug, Clone)]
pub struct Queues {
    /// Per switch, per output port.
    pub ports: Vec<Vec<QueueTracker>>,
    /// The trace's sampling interval, ps (`None`: no trace).
    pub interval_ps: Option<TimePs>,
}

impl Queues {
    /// The queues of switches with `ports_per_switch` output ports each, sampled every
    /// `interval_ps` if given, at most `max_samples` times.
    pub fn new(
        ports_per_switch: &[usize],
        interval_ps: Option<TimePs>,
        max_samples: usize,
    ) -> Self {
        Queues {
            ports: ports_per_switch
                .iter()
                .map(|&n| vec![QueueTracker::new(interval_ps, max_samples); n])
                .collect(),
            interval_ps: interval_ps.filter(|&i| i > 0),
        }
    }

    /// Output port `out` of switch `s`.
    pub fn port(&mut self, s: usize, out: usize) -> &mut QueueTracker {
        &mut self.ports[s][out]
    }

    /// The run ended at `end`.
    pub fn finish(&mut self, end: TimePs) {
        for q in self.ports.iter_mut().flatten() {
            q.finish(end);
        }
    }

    /// Every port that queued a frame.
    pub fn stats(&self) -> Vec<QueuePortStats> {
        let mut out = Vec::new();
        for (s, ports) in self.ports.iter().enumerate() {
            for (p, q) in ports.iter().enumerate().filter(|(_, q)| q.frames > 0) {
                out.push(q.stats(s, p));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn percentiles_weigh_each_level_by_its_time() {
        let mut q = QueueTracker::new(None, usize::MAX);
        // 1000 bytes from 0 to 90, 5000 from 90 to 99, 9000 from 99 to 100.
        q.joined(0, 1000);
        q.leaves_at(90, 1000);
        q.joined(90, 5000);
        q.leaves_at(99, 5000);
        q.joined(99, 9000);
        q.leaves_at(100, 9000);
        q.finish(100);
        let s = q.stats(0, 0);
        assert_eq!((s.p50_bytes, s.p95_bytes, s.p99_bytes), (1000, 5000, 5000));
        assert_eq!(q.percentile(1.0), 9000);
        assert_eq!(s.max_bytes, 9000);
        assert_eq!(s.mean_bytes, (1000 * 90 + 5000 * 9 + 9000) / 100);
        assert_eq!(s.frames, 3);
    }

    #[test]
    fn an_enqueue_percentile_would_differ_a_burst_is_short() {
        // 100 frames queue within 1 ps of each other, then the port is idle 999 ps: by time
        // the queue is empty most of the run.
        let mut q = QueueTracker::new(None, usize::MAX);
        for i in 0..100 {
            q.joined(0, 100);
            q.leaves_at(1 + i / 100, 100);
        }
        q.finish(1000);
        assert_eq!(q.percentile(0.5), 0);
        assert_eq!(q.percentile(0.99), 0);
        assert_eq!(q.stats(0, 0).max_bytes, 10_000);
    }

    #[test]
    fn the_trace_samples_the_level_at_each_interval() {
        let mut q = QueueTracker::new(Some(10), usize::MAX);
        q.joined(5, 100); // in from 5
        q.leaves_at(25, 100); // out at 25
        q.joined(30, 40);
        q.finish(40);
        // Samples at 0, 10, 20, 30, 40: the level just after each instant.
        assert_eq!(q.samples(), &[0, 100, 100, 40, 40]);
        assert!(!q.cut());
    }

    #[test]
    fn the_trace_stops_at_its_cap_and_says_so_the_statistics_go_on() {
        let mut q = QueueTracker::new(Some(10), 3);
        q.joined(5, 100);
        q.leaves_at(25, 100);
        q.joined(30, 40);
        q.finish(40);
        assert_eq!(q.samples(), &[0, 100, 100]);
        assert!(q.cut());
        assert_eq!(q.stats(0, 0).max_bytes, 100);
        let mut exact = QueueTracker::new(Some(10), 5);
        exact.finish(40);
        assert!(!exact.cut(), "five samples due, five kept");
    }

    proptest! {
        /// The percentiles are ordered, never above the longest queue, and the level
        /// returns to 0 once every frame has left.
        #[test]
        fn percentiles_are_ordered_and_bounded(
            frames in prop::collection::vec((0u64..100, 1u64..5000, 1u64..500), 1..100),
        ) {
            let mut q = QueueTracker::new(Some(7), usize::MAX);
            let (mut now, mut last_end) = (0, 0);
            for (dt, len, stay) in frames {
                now += dt;
                q.joined(now, len);
                q.leaves_at(now + stay, len);
                last_end = last_end.max(now + stay);
            }
            q.finish(last_end);
            let s = q.stats(0, 0);
            prop_assert!(s.p50_bytes <= s.p95_bytes && s.p95_bytes <= s.p99_bytes);
            prop_assert!(s.p99_bytes <= s.max_bytes && s.mean_bytes <= s.max_bytes);
            prop_assert_eq!(q.level, 0);
            prop_assert_eq!(q.samples().len() as u64, last_end / 7 + 1);
        }

        /// Against the queue's level read off every picosecond (each frame counts from
        /// the instant it joins to the instant its last bit leaves), with departures told
        /// in any order: the same time at each level, longest queue and samples.
        #[test]
        fn the_level_is_the_frames_in_the_queue_at_each_instant(
            frames in prop::collection::vec((0u64..30, 1u64..5000, 1u64..200), 1..40),
        ) {
            let mut q = QueueTracker::new(Some(5), usize::MAX);
            let mut spans = Vec::new();
            let mut now = 0;
            for (dt, len, stay) in frames {
                now += dt;
                q.joined(now, len);
                q.leaves_at(now + stay, len);
                spans.push((now, now + stay, len));
            }
            let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
            q.finish(end);
            let level = |t: u64| -> u64 {
                spans.iter().filter(|s| s.0 <= t && t < s.1).map(|s| s.2).sum()
            };
            let mut time_at: FxHashMap<u64, u64> = FxHashMap::default();
            for t in 0..end {
                *time_at.entry(level(t)).or_default() += 1;
            }
            let mut want: Vec<(u64, u64)> = time_at.into_iter().collect();
            want.sort_unstable();
            prop_assert_eq!(q.levels(), want);
            prop_assert_eq!(q.stats(0, 0).max_bytes, (0..end).map(level).max().unwrap_or(0));
            let samples: Vec<u64> = (0..=end / 5).map(|k| level(k * 5)).collect();
            prop_assert_eq!(q.samples(), &samples[..]);
        }
    }
}
