//! What the application counts for the report: operations, bytes, latencies and the
//! instants that bound the measured span.

use rnic_sim::{Histogram, TimePs};

use super::window::Window;
use crate::host::bw_peak::BwPeak;

/// The measurement: what is counted, and when. It only accumulates; the report and the
/// judges read it after the run.
#[derive(Debug, Clone, Default)]
pub struct Measurement {
    /// Operations completed inside the window.
    pub ops_in_window: u64,
    /// Payload bytes of the bandwidth operations completed inside the window.
    pub bytes_in_window: u64,
    /// Duration mode: operations completed from the first post to the window's end, for
    /// the long-run rate beside a window too short to stand for its run
    /// (`run/long_run.rs`).
    pub ops_to_window_end: u64,
    /// Duration mode: operations posted and not yet completed when the window opened. Their
    /// frames may have crossed the wire before it, and their completions (a CQE for
    /// `cq_mod` operations, READs interleaved over many QPs) may land inside it.
    pub in_flight_at_open: u64,
    /// First post, ps (`None` before it: a post at time 0 is a post).
    pub first_post_ps: Option<TimePs>,
    /// Last completion, ps.
    pub last_completion_ps: TimePs,
    /// Latency histogram (bandwidth tests) of the operations completed in the window, ps.
    pub latency_hist_ps: Histogram,
    /// Latency samples (latency tests), µs.
    pub samples_us: Vec<f64>,
    /// Sum of bandwidth-test latencies, µs.
    pub lat_sum_us: f64,
    /// Sum of squared bandwidth-test latencies, µs².
    pub lat_sumsq_us: f64,
    /// Payload bytes the completed operations moved (a ping-pong iteration moves its
    /// message both ways; an atomic moves 8 bytes).
    pub bytes_moved: u64,
    /// Receive WQEs posted.
    pub receives_posted: u64,
    /// CQEs that found their core asleep (`host.cq_events`): interrupts taken.
    pub cq_wakeups: u64,
    /// Busy time of the server's PCIe link (host → NIC, NIC → host), ps, when the window
    /// opened and when it closed (duration mode), for the window's utilisation.
    pub window_pcie_busy: [Option<(u64, u64)>; 2],
    /// Busy time of the server's PCIe link when `first_post_ps` was stamped (iteration
    /// mode): what setup and warm-up used is not in the measured span's utilisation.
    pub pcie_busy_at_first_post: Option<(u64, u64)>,
    /// Bandwidth tests in iteration mode with `host.bw_peak`: the measured operations'
    /// post and completion stamps, for perftest's BW peak (`None`: not measured).
    pub peak: Option<BwPeak>,
}

impl Measurement {
    /// A measured post began at `start`: the first one starts the measured span.
    pub(crate) fn posted(&mut self, start: TimePs) {
        if self.first_post_ps.is_none_or(|f| start < f) {
            self.first_post_ps = Some(start);
        }
    }

    /// A completion was polled at `t`: the latest poll, not the last handled, ends the
    /// span (a busy core polls its CQE later than another core polls a later one).
    pub(crate) fn completed(&mut self, t: TimePs) {
        self.last_completion_ps = self.last_completion_ps.max(t);
    }

    /// Counts `ops` measured operations completed at `t` if it is before the window's end
    /// (every one while the window waits).
    fn count_to_window_end(&mut self, t: TimePs, ops: u64, window: &Window) {
        if t < window.span_ps.1 {
            self.ops_to_window_end += ops;
        }
    }

    /// A latency sample of `sample_ps` ended at `t`: kept, and counted, if inside the
    /// window.
    pub(crate) fn sample(&mut self, t: TimePs, sample_ps: f64, window: &Window) {
        if window.contains(t) {
            self.samples_us.push(sample_ps / 1e6);
            self.ops_in_window += 1;
        }
        self.count_to_window_end(t, 1, window);
        self.completed(t);
    }

    /// A measured bandwidth CQE polled at `t` reported `ops` operations of `bytes`, the
    /// signaled one's latency `lat_ps`: it ends the span so far and stamps the peak's
    /// completions; the operations count, with the latency, if inside the window.
    pub(crate) fn bw_completion(
        &mut self,
        t: TimePs,
        ops: u64,
        bytes: u64,
        lat_ps: TimePs,
        window: &Window,
    ) {
        self.completed(t);
        if let Some(peak) = self.peak.as_mut() {
            // perftest's tcompleted: once per CQE, as it is polled.
            peak.complete(t, ops);
        }
        self.count_to_window_end(t, ops, window);
        if window.contains(t) {
            self.ops_in_window += ops;
            self.bytes_in_window += bytes;
            self.latency_hist_ps.record(lat_ps);
            let us = lat_ps as f64 / 1e6;
            self.lat_sum_us += us;
            self.lat_sumsq_us += us * us;
        }
    }
}
