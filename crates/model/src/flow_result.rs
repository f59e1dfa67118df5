//! Results of a run of concurrent flows ([`crate::flow`]): one [`FlowResult`] per flow and
//! their [`FlowsTotal`]. JSON field order is the struct order and keys carry their units, so
//! the same run gives byte-identical JSON (except `wall_seconds`).

use serde::{Deserialize, Serialize};

use crate::result::{LatencyStats, RunStatus};

/// The figures of one flow over its own measurement: a duration flow's window (from its
/// start time plus `sim.warmup_us`), otherwise from its first post to its last completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowResult {
    /// The flow's name.
    pub name: String,
    /// Its test, e.g. `write-lat`.
    pub test: String,
    /// Tenant label.
    pub tenant: u16,
    /// Class: `ls` (latency-sensitive) or `bs` (bandwidth-sensitive).
    pub class: String,
    /// Message size, bytes (with `size_mix`: the largest).
    pub size_bytes: u64,
    /// The sizes each message was drawn from, if the flow has a mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mix: Option<crate::size_mix::SizeMix>,
    /// QPs of the flow.
    pub qps: u32,
    /// Its server node.
    pub server: u32,
    /// The client nodes it uses.
    pub clients: Vec<u32>,
    /// When it started, µs.
    pub start_us: f64,
    /// How the flow ended (its own findings; see the run's `reason` for the others).
    pub status: RunStatus,
    /// Why, unless `ok`.
    pub reason: String,
    /// Operations completed in the measurement.
    pub ops_completed: u64,
    /// Length of the measurement, µs.
    pub measured_us: f64,
    /// Millions of operations per second.
    pub msg_rate_mops: f64,
    /// Payload bits per second / 10^9.
    pub goodput_gbps: f64,
    /// Latency, µs: per operation (post to completion) for bandwidth tests; perftest's for
    /// latency tests (half the round trip of a WRITE/SEND ping-pong).
    pub latency_us: LatencyStats,
    /// Request packets the flow's QPs sent again.
    pub retransmissions: u64,
    /// Payload bytes the flow's completed operations moved, verified (0 if not).
    pub verified_bytes: u64,
    /// Every byte the flow moved verified.
    pub bytes_verified: bool,
    /// Bandwidth flows of iterations over UC or UD, or behind the WAN accelerator, whose
    /// senders complete before their receivers have the bytes: from the first post to the
    /// moment a receiver of the flow placed its last payload, µs (a workload flow's FCT
    /// there, [`crate::traffic::ideal::FctEnd`]). Absent otherwise, and when nothing
    /// arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_byte_us: Option<f64>,
    /// Duration flows: whether the window's figures stand for the flow, as for a `-D` run
    /// of `rnic perf` (`run/long_run.rs`): false when the rate never settled or the window
    /// is shorter than the run's retransmission timeouts need. Absent for iteration flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_settled: Option<bool>,
    /// Duration flows: why the window opened when it did (and why it is too short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_reason: Option<String>,
    /// Duration flows whose window cannot stand for the flow: its rate from its first post
    /// to its window's end, and a `duration_us` long enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_run: Option<crate::result::LongRun>,
}

/// All flows together: every operation they completed (a duration flow's outside its window
/// too), over the span from the first flow's first post to the last one's last completion.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowsTotal {
    /// Operations the flows completed in the span.
    pub ops_completed: u64,
    /// The span, µs.
    pub measured_us: f64,
    /// Millions of operations per second over the span.
    pub msg_rate_mops: f64,
    /// Payload Gbit/s over the span.
    pub goodput_gbps: f64,
    /// Request packets sent again (every node's transport).
    pub retransmissions: u64,
    /// NAKs received (every node's transport), as `rnic perf` reports them: with
    /// `timeouts`, what set the retransmissions off.
    #[serde(default)]
    pub naks: u64,
    /// Retransmission timeouts (every node's transport).
    #[serde(default)]
    pub timeouts: u64,
    /// Verified payload bytes.
    pub verified_bytes: u64,
}

/// The result of a run of flows, as written by `--json`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowsResult {
    /// The scenario's name.
    pub name: String,
    /// Config profile.
    pub profile: String,
    /// Seed.
    pub seed: u64,
    /// How the run ended: the worst of every finding.
    pub status: RunStatus,
    /// Why, unless `ok` (a flow's findings name the flow).
    pub reason: String,
    /// Client nodes in the network.
    pub clients: u32,
    /// Simulated time from the applications' start (after connection setup) to the end of
    /// the run, µs.
    pub simulated_time_us: f64,
    /// Each flow, in file order.
    pub flows: Vec<FlowResult>,
    /// All flows together.
    pub total: FlowsTotal,
    /// UC and UD runs: the messages the unreliable service lost, all flows together
    /// (absent for RC runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreliable: Option<crate::result::UnreliableResult>,
    /// Runs with a `[workload]`: each workload flow's completion time and slowdown, and
    /// the slowdowns by flow size (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::traffic::fct::WorkloadResult>,
    /// Per switch output port that queued a frame: its queue's percentiles over time
    /// (weighted by time), when ECN, PFC, a shared buffer or the queue trace is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<crate::net::queue_stats::QueuePortStats>,
    /// The queue trace, when `net.trace_interval_us` asks for one (written as its own CSV
    /// file, not in the JSON).
    #[serde(skip)]
    pub queue_trace: Option<crate::net::queue_trace::QueueTrace>,
    /// The rate trace, when DCQCN runs and `net.trace_interval_us` asks for one (its own
    /// CSV file, not in the JSON).
    #[serde(skip)]
    pub rate_trace: Option<crate::nic::mech::cc::rate_trace::RateTrace>,
    /// Events processed.
    pub events: u64,
    /// Wall-clock time of the run, s.
    pub wall_seconds: f64,
}
