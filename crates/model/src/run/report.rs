//! Reporting a judged run: the perftest-style figures over what completed, latency
//! statistics, the statistics registry of every component, and the verdict.

use std::collections::BTreeMap;

use rnic_sim::{Histogram, TimePs};

use super::build::Built;
use super::options::ModelRun;
use crate::flow::FlowSpec;
use crate::result::RunStatus;
use crate::result::{rates, CacheStats as ReportCache, LatencyStats, PerfResult, SizeResult};
use crate::stats::{Registry, Report, TransportTotals};
use crate::verdict::{Measured, Verdict};
use crate::workload::PerfTest;
use crate::world::World;

/// The measurement of several flows run as one test (`-b`, `--reversed`): their operations
/// over the span of their measurements, from the first one's start to the last one's end.
/// perftest adds the rates each side reports, which is the same when the sides measure the
/// same interval (a `-D` window, which the flows of one test share) and more than went
/// through the network when they do not: flows that finish apart would add up to more than
/// the link they share carries.
fn combined(measured: &[Measured]) -> Measured {
    match measured {
        [one] => *one,
        _ => {
            let ops: u64 = measured.iter().map(|m| m.ops).sum();
            let from_ps = measured.iter().map(|m| m.from_ps).min().unwrap_or(0);
            let to_ps = measured
                .iter()
                .map(|m| m.from_ps + m.time_ps)
                .max()
                .unwrap_or(from_ps);
            Measured {
                ops,
                time_ps: to_ps - from_ps,
                from_ps,
                // Not one run of operations: see peak_mb_s.
                peak: None,
                in_flight_at_open: measured.iter().map(|m| m.in_flight_at_open).sum(),
            }
        }
    }
}

/// perftest's BW peak of `flows` moving `size`-byte operations, MB/s (MB = 2^20 bytes):
/// each side's best run of consecutive operations at the average's own arithmetic (so a
/// peak that is the whole run equals the average to the last bit), added up over the two
/// sides of `-b` as perftest adds them (the flows of one side carry one peak between them,
/// see `one_peak_per_side`); 0 when none was measured, as perftest prints it under `-N`
/// and `-D`.
fn peak_mb_s(size: u64, flows: &[Measured]) -> f64 {
    flows
        .iter()
        .filter_map(|m| m.peak)
        .map(|p| rates(size, p.ops, p.span_ps as f64 / 1e6).2)
        // From +0.0: an empty f64 sum is -0.0, which prints as "-0.00".
        .fold(0.0, |sum, mb_s| sum + mb_s)
}

/// The row of the operations of `flows` (one direction), `size` bytes each.
fn direction_row(size: u64, flows: &[Measured]) -> SizeResult {
    let m = combined(flows);
    let t_us = m.time_ps as f64 / 1e6;
    let (mops, gbps, mb_s) = rates(size, m.ops, t_us);
    SizeResult {
        size_bytes: size,
        iterations: m.ops,
        simulated_time_us: t_us,
        ops_completed: m.ops,
        msg_rate_mops: mops,
        goodput_gbps: gbps,
        bw_avg_mb_s: mb_s,
        bw_peak_mb_s: peak_mb_s(size, flows),
        latency_us: LatencyStats::default(),
        latency_samples_us: Vec::new(),
        long_run: None,
    }
}

/// The results of the run `b` (`rnic perf`: one flow, or the flows of `-b`/`--reversed`)
/// that ended at `end`, judged `verdict`, having measured `per_flow`.
pub(crate) fn report(b: Built, end: TimePs, verdict: Verdict, per_flow: &[Measured]) -> ModelRun {
    let Built {
        mut world,
        p,
        clients,
        flows,
        wall,
        ..
    } = b;
    close_at_end(&mut world, end);
    let flow = &flows[0];
    let (test, size, q) = (flow.test, flow.size, flow.qps.max(1));
    let op_bytes = test.op_bytes(size);
    let lat = test.is_latency();
    let verified_bytes = verified_bytes(&world, &verdict);
    let a = &world.apps[0];
    let measured = combined(per_flow);
    let (sim_time_ps, ops) = (measured.time_ps, measured.ops);
    let latency = if lat {
        latency_test_stats(a)
    } else {
        // Every direction's operations.
        bw_latency(&world.apps)
    };
    let directions = direction_rows(&world, &flows, per_flow, op_bytes);
    // perftest's `#iterations` is one side's count (its `-b` report adds the two sides'
    // rates, not their iterations): under -b, the server's direction's operations.
    let iterations = directions.first().map_or(ops, |d| d.ops_completed);
    let pcie_util = pcie_utilisation(&world, flow.duration_us.is_some(), sim_time_ps);
    let node_stats = node_registries(&world);
    let transport = TransportTotals::of(world.nics.iter().map(|n| n.dev.stats()));
    let s = &node_stats[0];
    let mut clients_sum = Registry::default();
    for c in &node_stats[1..] {
        clients_sum.add(c);
    }
    let mut result = PerfResult {
        test: test.name().to_string(),
        size_bytes: op_bytes,
        iterations,
        qps: q,
        clients: clients as u32,
        simulated_time_us: sim_time_ps as f64 / 1e6,
        ops_completed: ops,
        latency_us: latency,
        latency_samples_us: if lat {
            a.measure.samples_us.clone()
        } else {
            Vec::new()
        },
        retransmissions: transport.retransmissions,
        naks: transport.naks,
        timeouts: transport.timeouts,
        caches: cache_counts(s, &clients_sum),
        pcie_rd_bytes: s.get("nic.pcie.down_payload_bytes").unwrap_or(0),
        pcie_wr_bytes: s.get("nic.pcie.up_payload_bytes").unwrap_or(0),
        pcie_rd_util: pcie_util.0,
        pcie_wr_util: pcie_util.1,
        onchip_bytes: world.nics[0].onchip(&p),
        events: world.events,
        wall_seconds: wall.elapsed().as_secs_f64(),
        stats: run_registry(&world, s, &clients_sum, &transport),
        bytes_verified: !verdict.has(RunStatus::Corrupt) && verified_bytes > 0,
        verified_bytes,
        status: verdict.status(),
        reason: verdict.reason(),
        // From the applications' start, after connection setup.
        window_open_us: a
            .window
            .opened
            .as_ref()
            .map(|o| (o.at_ps - world.origin_ps) as f64 / 1e6),
        window_settled: a.window.opened.as_ref().map(|o| o.settled),
        window_reason: a.window.opened.as_ref().map(|o| o.reason.clone()),
        seed: p.seed,
        bw_peak_mb_s: peak_mb_s(op_bytes, per_flow),
        directions,
        unreliable: super::unreliable::summary(&world),
        queue_trace: world.net.queue_trace(),
        rate_trace: world.rate_trace(),
        ..PerfResult::default()
    };
    result.fill_rates();
    ModelRun {
        result,
        failures: verdict.reasons(),
        net: world.net.stats(),
        nodes: node_stats,
        transport,
        end_ps: end,
    }
}

/// The run ended at `end`: what is still open (PFC pauses, queue and rate traces, the
/// receive buffers' pauses) is counted up to `end` and closed, so no figure reaches past it.
fn close_at_end(world: &mut World, end: TimePs) {
    if let Some(pfc) = world.net.pfc.as_mut() {
        pfc.end_pauses(end);
    }
    world.net.end_queues(end);
    world.end_rate_traces(end);
    for nic in world.nics.iter_mut() {
        nic.rx.buffer.end_pauses(end);
    }
}

/// The payload bytes checked end to end: none when some were corrupt; under UC and UD what
/// arrived, each placed payload compared as it landed (a sender's completion says nothing
/// about arrival); else what the applications moved.
fn verified_bytes(world: &World, verdict: &Verdict) -> u64 {
    if verdict.has(RunStatus::Corrupt) {
        0
    } else if world.drain_rx {
        world.oracle.checked
    } else {
        world.apps.iter().map(|a| a.measure.bytes_moved).sum()
    }
}

/// Under -b, the server's and the clients' directions, each its own row (--report-both),
/// with its own operations' latencies; otherwise none.
fn direction_rows(
    world: &World,
    flows: &[FlowSpec],
    per_flow: &[Measured],
    op_bytes: u64,
) -> Vec<SizeResult> {
    if flows.len() > 1 && flows.iter().any(|f| f.server == 0) {
        vec![
            SizeResult {
                latency_us: bw_latency(&world.apps[..1]),
                ..direction_row(op_bytes, &per_flow[..1])
            },
            SizeResult {
                latency_us: bw_latency(&world.apps[1..]),
                ..direction_row(op_bytes, &per_flow[1..])
            },
        ]
    } else {
        Vec::new()
    }
}

/// The server's PCIe utilisation (reads, writes) over the measured time `sim_time_ps`: the
/// window (duration mode), or from the first post to the last completion (the span the
/// rates are over), with the busy time from the first post on. The run may go on after its
/// last completion (a WAN accelerator draining its buffer to Remote, frames still in
/// flight): not measured.
fn pcie_utilisation(world: &World, duration_mode: bool, sim_time_ps: TimePs) -> (f64, f64) {
    let a = &world.apps[0];
    let end = a.measure.window_pcie_busy[1].unwrap_or_else(|| world.server_pcie_busy());
    let start = match a.measure.window_pcie_busy[0] {
        Some(s) if duration_mode => s,
        _ => world
            .apps
            .iter()
            .filter_map(|a| Some((a.measure.first_post_ps?, a.measure.pcie_busy_at_first_post?)))
            .min()
            .map_or((0, 0), |(_, busy)| busy),
    };
    let f = |busy: u64| (busy as f64 / sim_time_ps.max(1) as f64).min(1.0);
    (
        f(end.0.saturating_sub(start.0)),
        f(end.1.saturating_sub(start.1)),
    )
}

/// The caches' hits and misses the result names: the server's QPC cache and translation
/// (MPT, MTT) caches, and the clients' QPC caches summed (`clients_sum`).
fn cache_counts(server: &Registry, clients_sum: &Registry) -> BTreeMap<String, ReportCache> {
    let cache = |r: &Registry, name: &str| ReportCache {
        hits: r.get(&format!("nic.{name}.hits")).unwrap_or(0),
        misses: r.get(&format!("nic.{name}.misses")).unwrap_or(0),
    };
    // In the order of CACHE_NAMES, which metric names are checked against.
    let sources = [
        (server, "qpc.cache"),
        (server, "translation.mpt"),
        (server, "translation.mtt"),
        (clients_sum, "qpc.cache"),
    ];
    crate::result::CACHE_NAMES
        .iter()
        .zip(sources)
        .map(|(name, (registry, counters))| (name.to_string(), cache(registry, counters)))
        .collect()
}

/// The registry of the whole run: the server's counters, the clients' summed, the
/// network's, the connection manager's and the transport's (with `-e`, the CQ wakeups).
fn run_registry(
    world: &World,
    server: &Registry,
    clients_sum: &Registry,
    transport: &TransportTotals,
) -> BTreeMap<String, u64> {
    let mut stats = server.prefixed("server");
    stats.extend(clients_sum.prefixed("clients"));
    let mut net = Registry::default();
    world.net.report("net", &mut net);
    stats.extend(net.prefixed(""));
    if let Some(cm) = &world.cm {
        let mut r = Registry::default();
        r.record("cm", &cm.stats());
        stats.extend(r.prefixed(""));
    }
    let mut tr = Registry::default();
    tr.record("transport", transport);
    if world.apps.iter().any(|a| a.costs.cq_event_ps.is_some()) {
        // -e: how often a CQE found its core asleep (each an interrupt and a wakeup).
        tr.set(
            "host.cq_wakeups",
            world.apps.iter().map(|a| a.measure.cq_wakeups).sum(),
        );
    }
    host_counters(world, &mut tr);
    stats.extend(tr.prefixed(""));
    stats
}

/// The applications' counters that only some tests have: receive WQEs posted (SEND tests)
/// and write-lat's polls that saw an older value (a late UC answer of a given-up iteration).
fn host_counters(world: &World, reg: &mut Registry) {
    let receives: u64 = world.apps.iter().map(|a| a.measure.receives_posted).sum();
    if receives > 0 {
        reg.set("host.receives_posted", receives);
    }
    let write_lat = world.apps.iter().any(|a| a.spec.test == PerfTest::WriteLat);
    if write_lat {
        let stale = world.apps.iter().map(|a| a.ping.stale_polls).sum();
        reg.set("host.write_lat_stale_polls", stale);
    }
}

/// The summary of latency-test application `a`: perftest's for a ping-pong or post-and-poll
/// test in iteration mode (`rnic perf` and a latency flow alike); every sample under
/// `--procs` (csRNA's test, not perftest's) and in duration mode (whose table shows only
/// the average).
pub(crate) fn latency_test_stats(a: &crate::host::perftest::Perftest) -> LatencyStats {
    if a.procs.list.is_empty() && !a.spec.duration_mode {
        LatencyStats::perftest_lat(&a.measure.samples_us)
    } else {
        LatencyStats::from_samples_us(&a.measure.samples_us)
    }
}

/// The per-operation latencies of bandwidth applications `apps` together (post to
/// completion, of the operations each measured).
fn bw_latency(apps: &[crate::host::perftest::Perftest]) -> LatencyStats {
    let Some((a, rest)) = apps.split_first() else {
        return LatencyStats::default();
    };
    let mut h = a.measure.latency_hist_ps.clone();
    let (mut sum, mut sumsq) = (a.measure.lat_sum_us, a.measure.lat_sumsq_us);
    for o in rest {
        h.merge(&o.measure.latency_hist_ps);
        sum += o.measure.lat_sum_us;
        sumsq += o.measure.lat_sumsq_us;
    }
    hist_stats(&h, sum, sumsq)
}

pub(crate) fn hist_stats(h: &Histogram, sum: f64, sumsq: f64) -> LatencyStats {
    let n = h.count();
    if n == 0 {
        return LatencyStats::default();
    }
    let us = |v: Option<u64>| v.unwrap_or(0) as f64 / 1e6;
    let avg = sum / n as f64;
    LatencyStats {
        min: us(h.min()),
        avg,
        p50: us(h.percentile(50.0)),
        p99: us(h.percentile(99.0)),
        p999: us(h.percentile(99.9)),
        max: us(h.max()),
        stdev: (sumsq / n as f64 - avg * avg).max(0.0).sqrt(),
    }
    .rounding_settled()
}

/// Every node's NIC counters, by dotted name (`nic.dma.payload_reads`; node 0 = server).
pub(crate) fn node_registries(world: &crate::world::World) -> Vec<Registry> {
    world
        .nics
        .iter()
        .map(|n| {
            let mut r = Registry::default();
            n.report("nic", &mut r);
            // The transport's own counters: NAKs by code, drops by reason, timeouts, RNR
            // waits (what a NIC's hardware counters tell, and the run's totals do not).
            r.record("transport", n.dev.stats());
            r
        })
        .enumerate()
        .map(|(i, mut r)| {
            // The applications' CPU time on the node (every flow's).
            let cpu = world
                .apps
                .iter()
                .filter_map(|a| a.nodes.get(i))
                .map(|n| n.cpu_busy_ps)
                .sum();
            r.set("host.cpu_busy_ps", cpu);
            r
        })
        .collect()
}
