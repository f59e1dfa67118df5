//! `run_flows`: concurrent flows in one simulation, built, simulated and judged like a perf
//! run, reported per flow ([`FlowResult`]) and in total.

use rnic_sim::TimePs;

use super::build::{build_flows, Built};
use super::flow_check::{EarlyChecks, FlowMemory};
use super::judge::{judge, FlowJudged};
use super::long_run;
use super::options::RunOptions;
use super::report::{hist_stats, latency_test_stats};
use crate::config::Config;
use crate::flow::FlowsSpec;
use crate::flow_result::{FlowResult, FlowsResult, FlowsTotal};
use crate::host::perftest::Perftest;
use crate::result::{rates, RunStatus};
use crate::stats::TransportTotals;
use crate::traffic::ideal::FctEnd;
use crate::verdict::Verdict;
use crate::world::World;
use crate::UsageError;

/// A run of flows with what the model measured beyond the result.
#[derive(Debug, Clone)]
pub struct FlowsRun {
    /// The per-flow and total figures.
    pub result: FlowsResult,
    /// Every finding, in the order found.
    pub failures: Vec<String>,
    /// Transport statistics summed over nodes.
    pub transport: TransportTotals,
    /// Every node's NIC counters, by dotted name (node 0 = server).
    pub nodes: Vec<crate::stats::Registry>,
    /// Simulated time at the end of the run, ps.
    pub end_ps: TimePs,
    /// How the flows' received bytes were held: checked and freed as each flow completed.
    pub memory: FlowMemory,
}

/// Checks a run of flows without running it: the flows' resources (see
/// [`FlowsSpec::check`]) and each flow alone against the run limits (message size, `-D`
/// window, memory budget).
pub fn check_flows(cfg: &Config, spec: &FlowsSpec) -> Result<(), UsageError> {
    spec.check(cfg.host.cores.max(1)).map_err(UsageError)?;
    let tag_max = crate::nic::mech::isolation::tenant::MAX_TENANT;
    for (i, f) in spec.flows.iter().enumerate() {
        let tenants = std::iter::once(f.tenant).chain(f.qp_profiles.iter().map(|p| p.tenant));
        if let Some(t) = tenants.into_iter().find(|&t| t > tag_max) {
            return Err(UsageError(format!(
                "flow[{i}] ({}): tenant {t} does not fit the 7-bit tenant field of the QP number (nic.isolation's QPN layout); use a tenant id from 0 to {tag_max}",
                f.name
            )));
        }
    }
    // The topology is planned once for the run's nodes; each flow is checked as the perf
    // run of its own clients (its buffers, its windows).
    let nodes = spec.clients.max(1) as usize + 1;
    let switches =
        crate::net::topology::switch_buffers(cfg, nodes).map_err(|e| UsageError(e.to_string()))?;
    for (i, f) in spec.flows.iter().enumerate() {
        crate::limits::check_flow_mrs(cfg, i, f)?;
        let one = f.as_perf();
        // Named by the flow's own key (perftest's -D and -n are no keys of a flow).
        for &size in &one.sizes {
            if let Some(short) = crate::limits::short_window(cfg, &one, size) {
                return Err(UsageError(format!(
                    "`flow[{i}].duration_us` = {} µs is too short to measure {}; use \
                     duration_us = {} or more, or iters",
                    crate::words::short_num(short.window_us),
                    short.why,
                    // Whole ns, rounded up: the least window that measures.
                    short.need_ps.div_ceil(1000) as f64 / 1e3
                )));
            }
        }
        crate::limits::check_run_on(cfg, &one, &switches)
            .map_err(|e| UsageError(format!("flow[{i}] ({}): {}", f.name, e.0)))?;
    }
    Ok(())
}

/// Runs the flows of `spec` concurrently: setup problems are errors; a run that falls short
/// says so in its result's status and reasons.
pub fn run_flows(cfg: &Config, spec: &FlowsSpec, opts: &RunOptions) -> anyhow::Result<FlowsRun> {
    run_flows_observed(cfg, spec, opts, None)
}

/// Like [`run_flows`], calling `observer` with the run's [`super::progress::Progress`] about every
/// 100 ms of wall time (iterations of every iteration flow, or simulated time against the
/// latest window's end). The results are those of [`run_flows`].
pub fn run_flows_observed(
    cfg: &Config,
    spec: &FlowsSpec,
    opts: &RunOptions,
    observer: Option<&mut dyn FnMut(&super::progress::Progress)>,
) -> anyhow::Result<FlowsRun> {
    check_flows(cfg, spec)?;
    let mut b = build_flows(cfg, spec, opts)?;
    for app in &mut b.world.apps {
        // Flows report no BW peak: record no stamps for it.
        app.measure.peak = None;
    }
    b.world.start();
    let at = super::progress::Position {
        size_bytes: 0,
        size_index: 0,
        sizes: 1,
    };
    // Each flow's buffers are checked, and freed, as soon as it completes; not behind the
    // WAN accelerator, whose pseudo-ACKs complete a WRITE before Remote has placed it (the
    // flows are checked at the end of the run then, as `rnic perf` checks its own).
    b.world.watch_finish = true;
    let mut early = EarlyChecks::new(b.flows.len());
    let layouts = &b.layouts;
    let check_early = !cfg.net.wan_accel;
    let mut flow_finished = |w: &mut World, f: usize| {
        if check_early {
            early.flow_finished(w, &layouts[f], f)
        }
    };
    let (world, max_events) = (&mut b.world, b.max_events);
    let end =
        super::progress::run_observed(world, max_events, at, observer, Some(&mut flow_finished));
    super::capture::finish(b.world.net.pcap.as_mut(), spec.pcap.as_ref())?;
    if let Some(pfc) = b.world.net.pfc.as_mut() {
        pfc.end_pauses(end);
    }
    b.world.net.end_queues(end);
    b.world.end_rate_traces(end);
    let mut memory = early.stats;
    let (verdict, judged) = judge(&b, cfg, end, &mut early)?;
    memory.bytes_held_at_end = b.world.mems.iter().map(|m| m.resident_bytes()).sum();
    memory.backed_ranges_at_end = b.world.mems.iter().map(|m| m.backed_ranges() as u64).sum();
    let mut run = report_flows(&b, end, &verdict, &judged, cfg);
    run.memory = memory;
    Ok(run)
}

/// Marks a duration flow's row whose window cannot stand for the flow, as `rnic perf`
/// marks a `-D` run (`long_run.rs`), with the run's `stalls` (the flows share the network
/// and the hosts that caused them).
fn mark_window(
    row: &mut FlowResult,
    a: &crate::host::perftest::Perftest,
    end: TimePs,
    stalls: long_run::Stalls,
) {
    let Some(opened) = a.window.opened.as_ref() else {
        return;
    };
    row.window_settled = Some(opened.settled);
    row.window_reason = Some(opened.reason.clone());
    let Some(span) = long_run::run_span(std::slice::from_ref(a), end) else {
        return;
    };
    let ask = long_run::Ask::DurationUs;
    let mark = long_run::unsettled(stalls, opened.settled, span, a.spec.op_bytes(), ask);
    if let Some(mark) = mark {
        mark.apply(
            &mut row.window_settled,
            &mut row.window_reason,
            &mut row.long_run,
        );
    }
}

/// The figures of every flow and their total.
/// Retransmissions by the flow's QPs on every node.
fn flow_retransmissions(w: &World, a: &Perftest) -> u64 {
    let retx = |node: usize, qpn: u32| {
        w.nics[node]
            .tx
            .engine
            .retransmits_by_qpn
            .get(qpn as usize)
            .copied()
            .unwrap_or(0)
    };
    a.pairs
        .iter()
        .map(|p| retx(a.server, p.s_qpn) + retx(p.c_node as usize, p.c_qpn))
        .sum()
}

/// The bytes a flow that passed verification moved: for UC/UD what its QPs received, each
/// placed payload compared as it landed (as `rnic perf` counts it; a sender's completion
/// says nothing about arrival), else what its operations moved.
fn flow_verified_bytes(w: &World, a: &Perftest) -> u64 {
    if !w.drain_rx {
        return a.measure.bytes_moved;
    }
    a.pairs
        .iter()
        .map(|p| {
            w.oracle.checked_on(a.server, p.s_qpn) + w.oracle.checked_on(p.c_node as usize, p.c_qpn)
        })
        .sum()
}

/// When a receiver of a bandwidth flow of iterations placed its last payload, µs after the
/// flow's first post, where its FCT runs to that moment ([`FctEnd::LastByte`]: over UC and
/// UD, and behind the WAN accelerator, a sender completes before its receiver has the bytes).
fn flow_last_byte_us(w: &World, a: &Perftest, cfg: &Config) -> Option<f64> {
    if FctEnd::of(cfg) != FctEnd::LastByte || a.spec.duration_mode || a.spec.test.is_latency() {
        return None;
    }
    let first = a.measure.first_post_ps?;
    let last = a
        .pairs
        .iter()
        .flat_map(|p| [(a.server, p.s_qpn), (p.c_node as usize, p.c_qpn)])
        .filter_map(|(node, qpn)| w.oracle.last_placed_on(node, qpn))
        .max()?;
    Some(last.saturating_sub(first) as f64 / 1e6)
}

fn report_flows(
    b: &Built,
    end: TimePs,
    verdict: &Verdict,
    judged: &[FlowJudged],
    cfg: &Config,
) -> FlowsRun {
    let w = &b.world;
    let corrupt = verdict.has(RunStatus::Corrupt);
    let transport = TransportTotals::of(w.nics.iter().map(|n| n.dev.stats()));
    let stalls = long_run::Stalls::of_devices(cfg, w.nics.iter().map(|n| n.dev.stats()));
    let mut flows = Vec::with_capacity(b.flows.len());
    // The total's span, ps: from the first post of any flow to the last completion (or
    // measured end) of any; and every operation the flows completed in it.
    let (mut span0, mut span1) = (TimePs::MAX, 0);
    let (mut total_ops, mut total_bits) = (0, 0.0);
    for ((f, a), j) in b.flows.iter().zip(&w.apps).zip(judged) {
        let m = j.measured;
        let from = if a.spec.duration_mode {
            a.window.span_ps.0
        } else {
            a.measure.first_post_ps.unwrap_or(0)
        };
        if m.time_ps > 0 || a.measure.first_post_ps.is_some() {
            span0 = span0.min(a.measure.first_post_ps.unwrap_or(from).min(from));
            span1 = span1.max((from + m.time_ps).max(a.measure.last_completion_ps));
        }
        // A duration flow runs before its window opens and drains after it closes: those
        // operations are in the total's span, so the total counts them (an iteration
        // flow's measurement holds all of its own). Ping-pong iterations given up (UC/UD)
        // completed nothing: they are in neither the flow's row nor the total.
        total_ops += a.ops_completed();
        total_bits += a.bytes_done() as f64 * 8.0;
        let time_us = m.time_ps as f64 / 1e6;
        // A size mix: the bytes its measured operations moved (`ops` of them, all in the
        // window); one size: `ops` × that size.
        let bytes = match f.size_mix {
            Some(_) => a.measure.bytes_in_window,
            None => a.spec.op_bytes() * m.ops,
        };
        let (mops, mut gbps, _) = rates(a.spec.op_bytes(), m.ops, time_us);
        if f.size_mix.is_some() {
            gbps = rates(bytes, 1, time_us).1;
        }
        let latency_us = if f.test.is_latency() {
            // As `rnic perf` summarises it.
            latency_test_stats(a)
        } else {
            hist_stats(
                &a.measure.latency_hist_ps,
                a.measure.lat_sum_us,
                a.measure.lat_sumsq_us,
            )
        };
        let retransmissions = flow_retransmissions(w, a);
        let bad = corrupt || j.verdict.has(RunStatus::Corrupt);
        let verified_bytes = if bad { 0 } else { flow_verified_bytes(w, a) };
        flows.push(FlowResult {
            name: f.name.clone(),
            test: f.test.name().to_string(),
            tenant: f.tenant,
            class: f.class.name().to_string(),
            size_bytes: f.test.op_bytes(f.size),
            size_mix: f.size_mix.clone(),
            qps: f.qps,
            server: f.server,
            clients: f.clients.clone(),
            start_us: f.start_us,
            status: j.verdict.status(),
            reason: j.verdict.reason(),
            ops_completed: m.ops,
            measured_us: time_us,
            msg_rate_mops: mops,
            goodput_gbps: gbps,
            latency_us,
            retransmissions,
            verified_bytes,
            bytes_verified: !bad && verified_bytes > 0,
            last_byte_us: flow_last_byte_us(w, a, cfg),
            ..FlowResult::default()
        });
        let row = flows.last_mut().expect("just pushed");
        mark_window(row, a, end, stalls);
        if let Some(why) = j.above_wire.as_deref() {
            long_run::mark_above_wire(&mut row.window_settled, &mut row.window_reason, why);
        }
    }
    let span_us = span1.saturating_sub(span0.min(span1)) as f64 / 1e6;
    // A flow's last completion counts when its core has polled the CQE (`host.poll_cq_ns`
    // after the CQE's event), which can be after the run's last event: the run's time
    // covers every flow's measurement.
    let end = end.max(span1);
    let total = FlowsTotal {
        ops_completed: total_ops,
        measured_us: span_us,
        msg_rate_mops: if span_us > 0.0 {
            total_ops as f64 / span_us
        } else {
            0.0
        },
        goodput_gbps: if span_us > 0.0 {
            total_bits / (span_us * 1e3)
        } else {
            0.0
        },
        retransmissions: transport.retransmissions,
        naks: transport.naks,
        timeouts: transport.timeouts,
        verified_bytes: flows.iter().map(|f| f.verified_bytes).sum(),
    };
    let result = FlowsResult {
        seed: b.p.seed,
        status: verdict.status(),
        reason: verdict.reason(),
        clients: b.clients as u32,
        // From the applications' start: connection setup is not measured, as in `rnic perf`.
        simulated_time_us: end.saturating_sub(w.origin_ps) as f64 / 1e6,
        flows,
        total,
        unreliable: super::unreliable::summary(w),
        events: w.events,
        wall_seconds: b.wall.elapsed().as_secs_f64(),
        queues: w.net.queues.as_ref().map_or_else(Vec::new, |q| q.stats()),
        queue_trace: w.net.queue_trace(),
        rate_trace: w.rate_trace(),
        ..FlowsResult::default()
    };
    FlowsRun {
        result,
        failures: verdict.reasons(),
        transport,
        nodes: super::report::node_registries(w),
        end_ps: end,
        memory: FlowMemory::default(),
    }
}
