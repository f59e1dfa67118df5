//! Results of a run: [`PerfResult`] and its parts. JSON field order is the struct order and
//! maps are `BTreeMap`s, so the same run gives byte-identical JSON (except `wall_seconds`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bytes in perftest's MB (MiB).
pub const MB: f64 = 1_048_576.0;

/// Latency statistics in microseconds. Latency tests report what perftest reports (half the
/// round trip for WRITE and SEND ping-pong, the full round trip for READ and atomics);
/// bandwidth tests report per-operation latency from post to completion, of the operations
/// completed in the `-D` window (of every operation in iteration mode).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyStats {
    pub min: f64,
    pub avg: f64,
    /// Median (perftest's t_typical).
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    /// Standard deviation (perftest's t_stdev).
    pub stdev: f64,
}

impl LatencyStats {
    /// Statistics of samples in µs, with perftest's percentile rule (index ⌈n·q⌉ of the sorted
    /// samples, clamped). Empty input gives all zeros.
    pub fn from_samples_us(samples: &[f64]) -> LatencyStats {
        if samples.is_empty() {
            return LatencyStats::default();
        }
        let mut s: Vec<f64> = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let pick = |q: f64| s[((n as f64 * q).ceil() as usize).min(n - 1)];
        let avg = s.iter().sum::<f64>() / n as f64;
        let var = s.iter().map(|x| (x - avg) * (x - avg)).sum::<f64>() / n as f64;
        let p50 = if n & 1 == 0 {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        } else {
            s[n / 2]
        };
        LatencyStats {
            min: s[0],
            avg,
            p50,
            p99: pick(0.99),
            p999: pick(0.999),
            max: s[n - 1],
            stdev: var.sqrt(),
        }
        .rounding_settled()
    }

    /// The summary a latency test prints, computed from `samples` (µs, one per iteration in
    /// measurement order, already in the test's convention: half the round trip for WRITE
    /// and SEND ping-pong, the full operation for READ and atomics) as perftest computes it.
    ///
    /// What perftest does (`print_report_lat` in its `src/perftest_parameters.c`, with
    /// `get_median` and `LAT_MEASURE_TAIL`): it stamps the time of every post, so `n`
    /// iterations give `n − 1` gaps between consecutive post stamps (the last post has no
    /// successor); those gaps, divided by 2 for WRITE and SEND, are its samples. It sorts
    /// them, then keeps all but the `LAT_MEASURE_TAIL` = 2 largest: `c = n − 3` samples.
    /// * t_avg is the mean of the `c` kept samples;
    /// * t_typical is their median: the middle one when `c` is odd, the mean of the two
    ///   middle ones when `c` is even;
    /// * t_stdev is `sqrt(Σ d² / c)` over the kept samples, where each deviation
    ///   `d = t_avg − sample` is stored in a C `int` before and after squaring, so it is
    ///   truncated toward zero to whole microseconds: deviations under 1 µs count as 0;
    /// * t_min is the smallest sample; t_max is the sample at index `c` of the sorted
    ///   `n − 1`, which is the second largest (only the largest is out of sight);
    /// * the 99 % and 99.9 % percentiles are the samples at index `⌈c·0.99⌉` and
    ///   `⌈c·0.999⌉` of the sorted `n − 1` (at most `c`, so always one of them).
    ///
    /// In rnic an iteration's sample runs from its post to the moment the client sees the
    /// answer, after which the next post follows at once, so iteration `k`'s sample stands
    /// for perftest's gap from post `k` to post `k + 1`; the last iteration's sample has no
    /// such gap and is left out, as perftest leaves it out. (One difference remains:
    /// perftest waits `--latency_gap` before stamping a post, so its gaps include that
    /// wait; rnic's samples do not.)
    /// perftest refuses fewer than 5 iterations, so there are at least 4 gaps; a run that
    /// stopped early with 3 gaps or fewer (not enough to drop the tail and keep one) is
    /// summarised from every gap it has, without the drop. No samples give all zeros.
    pub fn perftest_lat(samples: &[f64]) -> LatencyStats {
        LatencyStats::perftest_lat_of_gaps(perftest_gaps(samples))
    }

    /// [`LatencyStats::perftest_lat`] of perftest's gaps themselves, for a side that stamps
    /// its posts as perftest does (`rnic live`).
    pub fn perftest_lat_of_gaps(gaps: &[f64]) -> LatencyStats {
        if gaps.len() <= LAT_MEASURE_TAIL {
            return LatencyStats::from_samples_us(gaps);
        }
        let mut s = gaps.to_vec();
        s.sort_by(f64::total_cmp);
        let c = s.len() - LAT_MEASURE_TAIL;
        let kept = &s[..c];
        let avg = kept.iter().sum::<f64>() / c as f64;
        let sum_sq: f64 = kept
            .iter()
            .map(|x| {
                let d = (avg - x).trunc();
                (d * d).trunc()
            })
            .sum();
        let p50 = if c.is_multiple_of(2) {
            (s[c / 2 - 1] + s[c / 2]) / 2.0
        } else {
            s[c / 2]
        };
        let at = |q: f64| s[((c as f64 * q).ceil() as usize).min(c)];
        LatencyStats {
            min: s[0],
            avg,
            p50,
            p99: at(0.99),
            p999: at(0.999),
            max: s[c],
            stdev: (sum_sq / c as f64).sqrt(),
        }
        .rounding_settled()
    }

    /// The average put back between the extremes, where floating-point summation
    /// rounding left it (n equal samples summed may come out a few ulps above their value),
    /// and no spread when every sample is equal.
    pub fn rounding_settled(mut self) -> LatencyStats {
        self.avg = self.avg.clamp(self.min, self.max);
        if self.min == self.max {
            self.stdev = 0.0;
        }
        self
    }
}

/// perftest's `LAT_MEASURE_TAIL`: the largest samples a latency summary leaves out.
pub const LAT_MEASURE_TAIL: usize = 2;

/// The samples of a latency test that stand for perftest's gaps between consecutive posts:
/// every iteration's but the last (see [`LatencyStats::perftest_lat`]).
pub fn perftest_gaps(samples: &[f64]) -> &[f64] {
    &samples[..samples.len().saturating_sub(1)]
}

/// The sorted samples perftest lists under `-H`: the gaps, sorted, without the
/// `LAT_MEASURE_TAIL` largest (all of them when there are too few to drop any).
pub fn perftest_sorted_kept(samples: &[f64]) -> Vec<f64> {
    sorted_kept(perftest_gaps(samples))
}

/// perftest's gaps, sorted, without the `LAT_MEASURE_TAIL` largest (all of them when there
/// are too few to drop any): what `-H` lists.
pub fn sorted_kept(gaps: &[f64]) -> Vec<f64> {
    let mut s = gaps.to_vec();
    s.sort_by(f64::total_cmp);
    if s.len() > LAT_MEASURE_TAIL {
        s.truncate(s.len() - LAT_MEASURE_TAIL);
    }
    s
}

/// One statistic of consecutive runs (the sizes of `-a`) from the value so far and the next
/// run's: counts and busy times add up; a maximum or peak ([`crate::stats::is_extreme`]),
/// a percentile or mean ([`crate::stats::is_summary`]: the largest bounds the whole's) and
/// the properties every run shares ([`crate::stats::is_property`], `buffer_cycle_links`;
/// `cm.done_ps`, when each run's setup ended) take the largest; what a run leaves at its
/// end (`buffer_left_bytes`) is the last run's.
pub fn merge_stat(key: &str, so_far: u64, next: u64) -> u64 {
    use crate::stats::{is_extreme, is_property, is_summary};
    let name = key.rsplit('.').next().unwrap_or(key);
    if name == "buffer_left_bytes" {
        next
    } else if is_extreme(key)
        || is_summary(key)
        || is_property(key)
        || name == "buffer_cycle_links"
        || name == "done_ps"
    {
        so_far.max(next)
    } else {
        so_far.saturating_add(next)
    }
}

/// How a run ended. A command-line tool maps it to its exit status.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Everything asked completed and every byte verified.
    #[default]
    Ok,
    /// The run ended without completing what was asked: a limit (`sim.max_events`), error
    /// completions (retries exhausted, a protection error), a stall, a window in which
    /// nothing completed. `reason` says which; the figures cover what did complete.
    Incomplete,
    /// The run was refused as asked: bad input for it (a sweep point whose combination
    /// the model cannot run, found as it was built). `reason` names the field; no figures.
    Refused,
    /// The model contradicted physics (a rate above the wire, an event in the past, a lost
    /// CQE): a bug in the simulator, so the figures are not trustworthy.
    ModelError,
    /// Data did not verify: a placed payload or a final buffer differs from its source.
    Corrupt,
}

impl RunStatus {
    /// The name used in JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Ok => "ok",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Refused => "refused",
            RunStatus::ModelError => "model_error",
            RunStatus::Corrupt => "corrupt",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Hits and misses of one on-chip cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
}

/// The figures of one message size (one row of perftest's table).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeResult {
    pub size_bytes: u64,
    /// perftest's `#iterations` column.
    pub iterations: u64,
    pub simulated_time_us: f64,
    pub ops_completed: u64,
    pub msg_rate_mops: f64,
    pub goodput_gbps: f64,
    pub bw_avg_mb_s: f64,
    pub bw_peak_mb_s: f64,
    pub latency_us: LatencyStats,
    /// Latency tests: every measured sample, µs, in measurement order (`-H` and `-U` print
    /// the ones perftest would: see [`perftest_gaps`] and [`perftest_sorted_kept`]). Not
    /// written to JSON.
    #[serde(skip)]
    pub latency_samples_us: Vec<f64>,
    /// `-D` runs whose window cannot stand for the run: the rate over the run (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_run: Option<LongRun>,
}

/// The rate of a `-D` run from its first post to its window's end, reported beside a
/// window that cannot stand for the run (it never settled, or it is too short for the
/// retransmission timeouts the run saw): the window's figures are what happened in it, this
/// is what the run held over its whole length.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongRun {
    /// The rate settled before the window opened (false: the settle test gave up).
    pub rate_settled: bool,
    /// The window is long enough for the timeouts the run saw (false: too short).
    pub window_long_enough: bool,
    /// Operations completed from the first post to the window's end.
    pub ops_completed: u64,
    /// From the first post to the window's end, µs.
    pub time_us: f64,
    pub msg_rate_mops: f64,
    pub goodput_gbps: f64,
    /// MB = 2^20 B.
    pub bw_avg_mb_s: f64,
    /// Retransmission (ACK) timeouts the run saw.
    pub timeouts: u64,
    /// RNR NAKs the run's requesters waited out (written when there were any).
    #[serde(default, skip_serializing_if = "crate::stats::is_zero")]
    pub rnr_waits: u64,
    /// A `-D` long enough for the timeouts and RNR waits this run saw, seconds (`None` when it saw none:
    /// then the rate varied by itself, and more sub-windows or more spread are the remedy,
    /// not a longer window).
    pub long_enough_duration_s: Option<f64>,
}

/// What stalled a run between bursts of progress, in words: "79 retransmission timeouts",
/// "374 RNR waits", or both joined by "and".
pub fn stalls_in_words(timeouts: u64, rnr_waits: u64) -> String {
    let named_timeouts = format!("{timeouts} retransmission timeouts");
    match (timeouts, rnr_waits) {
        (_, 0) => named_timeouts,
        (0, w) => format!("{w} RNR waits"),
        (_, w) => format!("{named_timeouts} and {w} RNR waits"),
    }
}

impl LongRun {
    /// The stalls the run saw, in words ([`stalls_in_words`]).
    pub fn stalls(&self) -> String {
        stalls_in_words(self.timeouts, self.rnr_waits)
    }

    /// Its scalar figures in JSON order (`long_enough_duration_s` when it has one).
    pub fn metrics(&self) -> Vec<(&'static str, Metric)> {
        use Metric::{Bool, Float, Int};
        let mut m = vec![
            ("rate_settled", Bool(self.rate_settled)),
            ("window_long_enough", Bool(self.window_long_enough)),
            ("ops_completed", Int(self.ops_completed)),
            ("time_us", Float(self.time_us)),
            ("msg_rate_mops", Float(self.msg_rate_mops)),
            ("goodput_gbps", Float(self.goodput_gbps)),
            ("bw_avg_mb_s", Float(self.bw_avg_mb_s)),
            ("timeouts", Int(self.timeouts)),
        ];
        if self.rnr_waits > 0 {
            m.push(("rnr_waits", Int(self.rnr_waits)));
        }
        if let Some(d) = self.long_enough_duration_s {
            m.push(("long_enough_duration_s", Float(d)));
        }
        m
    }
}

/// The result of one run, as written by `--json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerfResult {
    /// Test name, e.g. `write-bw`.
    pub test: String,
    /// Message size. For `-a` runs, the largest size (perftest's last row).
    pub size_bytes: u64,
    /// perftest's `#iterations` column, as perftest 4.5 prints it: one side's operations
    /// measured. Bandwidth tests in iteration mode: `-n` × `-q` (perftest multiplies its
    /// per-QP count by the QPs; the QPs of all clients, which share `-q`); under `-b`, one
    /// direction's (perftest adds the two sides' rates, not their iterations; rnic's is
    /// the server's direction); with `-D`, the operations completed in the window. Latency
    /// tests: the iterations. `ops_completed` counts every direction's operations.
    pub iterations: u64,
    /// QPs on the server (`-q`), spread round robin over the clients.
    pub qps: u32,
    /// Client hosts.
    pub clients: u32,
    /// Simulated time of the measurement, µs.
    pub simulated_time_us: f64,
    /// Operations completed in the measurement (all clients, all QPs).
    pub ops_completed: u64,
    /// Millions of operations per second (perftest's MsgRate\[Mpps\]).
    pub msg_rate_mops: f64,
    /// Payload bits per second / 10^9.
    pub goodput_gbps: f64,
    /// Payload MB/s with MB = 2^20 bytes (perftest's BW average[MB/sec]).
    pub bw_avg_mb_s: f64,
    /// perftest's BW peak[MB/sec] column: the best rate over any run of consecutive
    /// operations, from one's post to a later one's completion (`host/bw_peak.rs`); 0 when
    /// not measured, as perftest prints it: `-N`/`host.bw_peak = false`, `-D`, latency
    /// tests. With several sides (`-b`, `--reversed`) the sum of their peaks.
    pub bw_peak_mb_s: f64,
    /// Latency, µs.
    pub latency_us: LatencyStats,
    /// Latency tests: every measured sample, µs, in measurement order (`-H` and `-U` print
    /// the ones perftest would: see [`perftest_gaps`] and [`perftest_sorted_kept`]). Not
    /// written to JSON.
    #[serde(skip)]
    pub latency_samples_us: Vec<f64>,
    /// Packets retransmitted (all QPs, both directions).
    pub retransmissions: u64,
    /// NAKs sent (PSN sequence errors, RNR, and the rest).
    pub naks: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Per cache (`qpc`, `wqe`, `mpt`, `mtt`, ...): hits and misses.
    pub caches: BTreeMap<String, CacheStats>,
    /// Bytes the NIC read from host memory over PCIe (host → NIC), payload and descriptors.
    pub pcie_rd_bytes: u64,
    /// Bytes the NIC wrote to host memory over PCIe (NIC → host).
    pub pcie_wr_bytes: u64,
    /// Fraction of the measurement the server's PCIe link was busy host → NIC (read
    /// completions, doorbells), with TLP overheads; 1 means PCIe was the bottleneck.
    pub pcie_rd_util: f64,
    /// Fraction of the measurement the server's PCIe link was busy NIC → host (DMA writes,
    /// read requests, write-backs).
    pub pcie_wr_util: f64,
    /// On-chip memory by structure, bytes.
    pub onchip_bytes: BTreeMap<String, u64>,
    /// Every component's counters by dotted name (the statistics registry): `server.nic.*`
    /// (node 0), `clients.nic.*` (summed over the clients), `net.*`, `transport.*`.
    pub stats: BTreeMap<String, u64>,
    /// Simulation events processed.
    pub events: u64,
    /// Wall-clock seconds of the run (the only field that differs between identical runs).
    pub wall_seconds: f64,
    /// Payload bytes were checked end to end and matched.
    pub bytes_verified: bool,
    /// Payload bytes checked against their source as they landed, each counted once: over
    /// RC what the completed operations moved; over UC and UD every payload that arrived,
    /// the packets of a message that lost a later one included (a sender's completion says
    /// nothing about arrival), so it need not be a whole number of messages. 0 when any
    /// byte was corrupt.
    pub verified_bytes: u64,
    /// How the run ended (`ok`, `incomplete`, `model_error`, `corrupt`).
    pub status: RunStatus,
    /// Why the run is not `ok` (empty when it is).
    pub reason: String,
    /// `-D` runs: the simulated time at which the measurement window opened, µs (the run
    /// lasts this warm-up plus `-D`). Absent in iteration mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_open_us: Option<f64>,
    /// `-D` runs: whether the window's figures stand for the run: it opened on a settled
    /// rate (or after a fixed `sim.warmup_us`) and is long enough for the retransmission
    /// timeouts the run saw. False when the rate never settled (within
    /// `sim.settle_max_windows` sub-windows or by `sim.max_warmup_us`) and the window was
    /// measured anyway, or when the window is too short (`window_reason` says which, and
    /// `long_run` gives the rate over the run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_settled: Option<bool>,
    /// `-D` runs: why the window opened when it did (and why it is too short, if it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_reason: Option<String>,
    /// `-D` runs whose window cannot stand for the run (`window_settled` false): the rate
    /// from the first post to the window's end, and a `-D` long enough (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_run: Option<LongRun>,
    pub seed: u64,
    pub profile: String,
    /// One entry per size for `-a` runs, empty otherwise.
    pub per_size: Vec<SizeResult>,
    /// `-b`: the server's direction, then the clients', each over its own time (the
    /// top-level figures are their sum); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub directions: Vec<SizeResult>,
    /// UC and UD runs: the messages the unreliable service lost (absent for RC runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreliable: Option<UnreliableResult>,
    /// The queue trace, when `net.trace_interval_us` asks for one (written as its own CSV
    /// file, not in the JSON).
    #[serde(skip)]
    pub queue_trace: Option<crate::net::queue_trace::QueueTrace>,
    /// The rate trace, when DCQCN runs and `net.trace_interval_us` asks for one (its own
    /// CSV file, not in the JSON).
    #[serde(skip)]
    pub rate_trace: Option<crate::nic::mech::cc::rate_trace::RateTrace>,
}

/// What a UC or UD run lost: the senders' messages (complete at transmission) against the
/// receivers' (received whole), with the receivers' counts by cause. Loss is the service's
/// nature, not an error: what arrived is verified byte for byte, what did not is counted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnreliableResult {
    /// `uc` or `ud`.
    pub transport: String,
    /// Messages the senders transmitted whole (their send completions).
    pub messages_sent: u64,
    /// Messages the receivers took whole (placed, and their receive consumed if any).
    pub messages_received: u64,
    /// `messages_sent - messages_received`.
    pub messages_lost: u64,
    /// UC messages begun and abandoned after a lost (PSN gap) or refused packet.
    pub uc_messages_abandoned: u64,
    /// Messages that found no receive posted (no RNR NAK without ACKs).
    pub no_recv_messages: u64,
    /// UD datagrams refused for their Q_Key.
    pub qkey_mismatches: u64,
    /// Receives completed in error (too short, refused SGE).
    pub recv_errors: u64,
    /// Ping-pong latency tests: iterations the client gave up after `qp.timeout` because
    /// their ping or pong was lost (no latency sample).
    pub iterations_given_up: u64,
}

impl UnreliableResult {
    /// Every count by its JSON name, in JSON order (the metrics `unreliable.<name>`).
    pub fn counts(&self) -> [(&'static str, u64); 8] {
        [
            ("messages_sent", self.messages_sent),
            ("messages_received", self.messages_received),
            ("messages_lost", self.messages_lost),
            ("uc_messages_abandoned", self.uc_messages_abandoned),
            ("no_recv_messages", self.no_recv_messages),
            ("qkey_mismatches", self.qkey_mismatches),
            ("recv_errors", self.recv_errors),
            ("iterations_given_up", self.iterations_given_up),
        ]
    }

    /// The counts of two runs (the sizes of an `-a` run) added up.
    pub fn plus(&self, o: &UnreliableResult) -> UnreliableResult {
        UnreliableResult {
            transport: self.transport.clone(),
            messages_sent: self.messages_sent + o.messages_sent,
            messages_received: self.messages_received + o.messages_received,
            messages_lost: self.messages_lost + o.messages_lost,
            uc_messages_abandoned: self.uc_messages_abandoned + o.uc_messages_abandoned,
            no_recv_messages: self.no_recv_messages + o.no_recv_messages,
            qkey_mismatches: self.qkey_mismatches + o.qkey_mismatches,
            recv_errors: self.recv_errors + o.recv_errors,
            iterations_given_up: self.iterations_given_up + o.iterations_given_up,
        }
    }
}

/// A scalar figure of a result, for CSV and plots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    Int(u64),
    Float(f64),
    Bool(bool),
}

impl Metric {
    pub fn as_f64(self) -> f64 {
        match self {
            Metric::Int(v) => v as f64,
            Metric::Float(v) => v,
            Metric::Bool(b) => f64::from(u8::from(b)),
        }
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Metric::Int(v) => write!(f, "{v}"),
            Metric::Float(v) => write!(f, "{v}"),
            Metric::Bool(v) => write!(f, "{v}"),
        }
    }
}

/// Metric names that are always present (map-valued metrics add `caches.<name>.hits`,
/// `caches.<name>.misses` and `onchip_bytes.<name>`).
pub fn fixed_metric_names() -> Vec<String> {
    PerfResult::default()
        .metrics()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// The caches every model run reports hits and misses of (`caches.<name>.hits`): the
/// server's QPC, MPT and MTT caches and the clients' QPC caches summed.
pub const CACHE_NAMES: [&str; 4] = ["qpc", "mpt", "mtt", "clients.qpc"];

/// The `caches.<name>.hits|misses` and `onchip_bytes.<name>` metric names any run can have
/// ([`CACHE_NAMES`], [`crate::nic::onchip::ONCHIP_STRUCTURES`]).
pub fn map_metric_names() -> Vec<String> {
    let caches = CACHE_NAMES
        .iter()
        .flat_map(|c| [format!("caches.{c}.hits"), format!("caches.{c}.misses")]);
    let onchip = crate::nic::onchip::ONCHIP_STRUCTURES
        .iter()
        .map(|s| format!("onchip_bytes.{s}"));
    caches.chain(onchip).collect()
}

/// Metric names that only `-D` runs have.
pub const WINDOW_METRIC_NAMES: [&str; 2] = ["window_open_us", "window_settled"];

/// Whether `name` can be a metric of some result.
pub fn is_metric_name(name: &str) -> bool {
    fixed_metric_names().iter().any(|n| n == name)
        || WINDOW_METRIC_NAMES.contains(&name)
        // -D runs whose window cannot stand for the run: the rate over the run.
        || name.strip_prefix("long_run.").is_some_and(|k| {
            LongRun {
                long_enough_duration_s: Some(0.0),
                ..LongRun::default()
            }
            .metrics()
            .iter()
            .any(|(n, _)| *n == k)
        })
        // UC and UD runs: what the service lost.
        || name.strip_prefix("unreliable.").is_some_and(|k| {
            UnreliableResult::default()
                .counts()
                .iter()
                .any(|(n, _)| *n == k)
        })
        || map_metric_names().iter().any(|n| n == name)
}

impl PerfResult {
    /// Sets `msg_rate_mops`, `goodput_gbps` and `bw_avg_mb_s` from `size_bytes`,
    /// `ops_completed` and `simulated_time_us` (`bw_peak_mb_s` is measured, not derived).
    pub fn fill_rates(&mut self) {
        let (mops, gbps, mb_s) = rates(self.size_bytes, self.ops_completed, self.simulated_time_us);
        self.msg_rate_mops = mops;
        self.goodput_gbps = gbps;
        self.bw_avg_mb_s = mb_s;
    }

    /// This result as one size row.
    pub fn size_row(&self) -> SizeResult {
        SizeResult {
            size_bytes: self.size_bytes,
            iterations: self.iterations,
            simulated_time_us: self.simulated_time_us,
            ops_completed: self.ops_completed,
            msg_rate_mops: self.msg_rate_mops,
            goodput_gbps: self.goodput_gbps,
            bw_avg_mb_s: self.bw_avg_mb_s,
            bw_peak_mb_s: self.bw_peak_mb_s,
            latency_us: self.latency_us,
            latency_samples_us: self.latency_samples_us.clone(),
            long_run: self.long_run.clone(),
        }
    }

    /// The rows of perftest's table: `per_size`, or this result's own row.
    pub fn rows(&self) -> Vec<SizeResult> {
        if self.per_size.is_empty() {
            vec![self.size_row()]
        } else {
            self.per_size.clone()
        }
    }

    /// Combines the results of several sizes (run in order) into one: `per_size` gets every
    /// size's row; the per-size figures at the top level are the last size's; counters
    /// (retransmissions, NAKs, timeouts, cache hits/misses, PCIe bytes, events, verified bytes,
    /// wall seconds, and the `stats` registry as [`merge_stat`] combines it) are summed; `simulated_time_us` is summed; on-chip bytes take the maximum
    /// per structure; `bytes_verified` holds only if every size verified. A single result is
    /// returned unchanged.
    pub fn from_sizes(results: Vec<PerfResult>) -> PerfResult {
        if results.len() == 1 {
            return results.into_iter().next().unwrap_or_default();
        }
        let mut out = match results.last() {
            Some(last) => last.clone(),
            None => return PerfResult::default(),
        };
        out.per_size = results.iter().map(|r| r.size_row()).collect();
        out.simulated_time_us = results.iter().map(|r| r.simulated_time_us).sum();
        out.retransmissions = results.iter().map(|r| r.retransmissions).sum();
        out.naks = results.iter().map(|r| r.naks).sum();
        out.timeouts = results.iter().map(|r| r.timeouts).sum();
        // UC/UD: every size's losses.
        out.unreliable = results
            .iter()
            .filter_map(|r| r.unreliable.clone())
            .reduce(|a, b| a.plus(&b));
        out.pcie_rd_bytes = results.iter().map(|r| r.pcie_rd_bytes).sum();
        out.pcie_wr_bytes = results.iter().map(|r| r.pcie_wr_bytes).sum();
        out.events = results.iter().map(|r| r.events).sum();
        out.wall_seconds = results.iter().map(|r| r.wall_seconds).sum();
        out.verified_bytes = results.iter().map(|r| r.verified_bytes).sum();
        out.bytes_verified = results.iter().all(|r| r.bytes_verified);
        out.status = results.iter().map(|r| r.status).max().unwrap_or_default();
        out.reason = results
            .iter()
            .filter(|r| r.status != RunStatus::Ok)
            .map(|r| format!("{} B: {}", r.size_bytes, r.reason))
            .collect::<Vec<_>>()
            .join("; ");
        if results.iter().any(|r| r.window_settled.is_some()) {
            out.window_settled = Some(results.iter().all(|r| r.window_settled != Some(false)));
            out.window_reason = Some(
                results
                    .iter()
                    .filter_map(|r| {
                        Some(format!("{} B: {}", r.size_bytes, r.window_reason.as_ref()?))
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
        out.stats = BTreeMap::new();
        for r in &results {
            for (k, &v) in &r.stats {
                let e = out.stats.entry(k.clone()).or_insert(0);
                *e = merge_stat(k, *e, v);
            }
        }
        out.caches = BTreeMap::new();
        out.onchip_bytes = BTreeMap::new();
        for r in &results {
            for (k, c) in &r.caches {
                let e = out.caches.entry(k.clone()).or_default();
                e.hits += c.hits;
                e.misses += c.misses;
            }
            for (k, b) in &r.onchip_bytes {
                let e = out.onchip_bytes.entry(k.clone()).or_default();
                *e = (*e).max(*b);
            }
        }
        out
    }

    /// Every scalar figure, flattened with dotted names (`latency_us.avg`, `caches.qpc.hits`),
    /// in JSON order. Strings, `per_size` and `wall_seconds` (not deterministic) are left out.
    pub fn metrics(&self) -> Vec<(String, Metric)> {
        use Metric::{Bool, Float, Int};
        let mut m: Vec<(String, Metric)> = Vec::new();
        let mut push = |k: &str, v: Metric| m.push((k.to_string(), v));
        push("size_bytes", Int(self.size_bytes));
        push("iterations", Int(self.iterations));
        push("qps", Int(u64::from(self.qps)));
        push("clients", Int(u64::from(self.clients)));
        push("simulated_time_us", Float(self.simulated_time_us));
        push("ops_completed", Int(self.ops_completed));
        push("msg_rate_mops", Float(self.msg_rate_mops));
        push("goodput_gbps", Float(self.goodput_gbps));
        push("bw_avg_mb_s", Float(self.bw_avg_mb_s));
        push("bw_peak_mb_s", Float(self.bw_peak_mb_s));
        let l = &self.latency_us;
        for (k, v) in [
            ("min", l.min),
            ("avg", l.avg),
            ("p50", l.p50),
            ("p99", l.p99),
            ("p999", l.p999),
            ("max", l.max),
            ("stdev", l.stdev),
        ] {
            push(&format!("latency_us.{k}"), Float(v));
        }
        push("retransmissions", Int(self.retransmissions));
        push("naks", Int(self.naks));
        push("timeouts", Int(self.timeouts));
        for (k, c) in &self.caches {
            push(&format!("caches.{k}.hits"), Int(c.hits));
            push(&format!("caches.{k}.misses"), Int(c.misses));
        }
        push("pcie_rd_bytes", Int(self.pcie_rd_bytes));
        push("pcie_wr_bytes", Int(self.pcie_wr_bytes));
        push("pcie_rd_util", Float(self.pcie_rd_util));
        push("pcie_wr_util", Float(self.pcie_wr_util));
        for (k, b) in &self.onchip_bytes {
            push(&format!("onchip_bytes.{k}"), Int(*b));
        }
        push("events", Int(self.events));
        push("bytes_verified", Bool(self.bytes_verified));
        push("verified_bytes", Int(self.verified_bytes));
        if let Some(t) = self.window_open_us {
            push("window_open_us", Float(t));
        }
        if let Some(b) = self.window_settled {
            push("window_settled", Bool(b));
        }
        if let Some(l) = &self.long_run {
            for (k, v) in l.metrics() {
                push(&format!("long_run.{k}"), v);
            }
        }
        push("seed", Int(self.seed));
        if let Some(u) = &self.unreliable {
            for (k, v) in u.counts() {
                push(&format!("unreliable.{k}"), Int(v));
            }
        }
        m
    }

    /// One metric by name.
    pub fn metric(&self, name: &str) -> Option<Metric> {
        self.metrics()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }
}

/// (Mops, Gb/s, MB/s with MB = 2^20 B) of `ops` messages of `size` bytes in `time_us`.
/// Zero time gives zeros.
pub fn rates(size_bytes: u64, ops: u64, time_us: f64) -> (f64, f64, f64) {
    if time_us <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let secs = time_us * 1e-6;
    let bytes = size_bytes as f64 * ops as f64;
    (
        ops as f64 / time_us,
        bytes * 8.0 / secs / 1e9,
        bytes / secs / MB,
    )
}
