//! Concurrent flows: one flow is `rnic perf` (the same numbers), several flows each verify
//! their bytes, the same seed gives the same result, retransmissions are attributed to the
//! flows whose QPs sent them, and a latency flow feels bulk flows beside it.

use crate::common::*;
use rnic_model::config::Config;
use rnic_model::flow::{FlowClass, FlowSpec, FlowsSpec};
use rnic_model::flow_result::FlowsResult;
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_model::{run_flows, RunOptions};

/// A flow of `test` with `size`-byte messages on `qps` QPs to `clients`, one core.
fn flow(name: &str, test: PerfTest, size: u64, qps: u32, clients: &[u32]) -> FlowSpec {
    let mut s = spec(test, size, qps, 1);
    s.iters = if test.is_latency() { 200 } else { 50 };
    let mut f = FlowSpec::from_perf(&s, size, 1);
    f.name = name.to_string();
    f.clients = clients.to_vec();
    f
}

fn run(cfg: &Config, flows: Vec<FlowSpec>, clients: u32) -> FlowsResult {
    let spec = FlowsSpec {
        flows,
        clients,
        pcap: None,
    };
    run_flows(cfg, &spec, &RunOptions::default())
        .expect("flows run")
        .result
}

#[test]
fn one_flow_gives_the_numbers_of_rnic_perf() {
    let cfg = baseline(10.0);
    for (test, size, qps, clients) in [
        (PerfTest::WriteBw, 4096, 4, 2),
        (PerfTest::WriteLat, 64, 1, 1),
        (PerfTest::ReadBw, 65536, 3, 3),
    ] {
        let mut s = spec(test, size, qps, clients);
        s.iters = 100;
        let perf = crate::common::run(&cfg, &s).result;
        let f = FlowSpec::from_perf(&s, size, cfg.host.cores);
        let r = run(&cfg, vec![f], clients);
        let one = &r.flows[0];
        assert_eq!(r.status, RunStatus::Ok, "{test}: {}", r.reason);
        assert_eq!(one.ops_completed, perf.ops_completed, "{test}");
        assert_eq!(one.measured_us, perf.simulated_time_us, "{test}");
        assert_eq!(one.msg_rate_mops, perf.msg_rate_mops, "{test}");
        assert_eq!(one.goodput_gbps, perf.goodput_gbps, "{test}");
        assert_eq!(one.latency_us, perf.latency_us, "{test}");
        assert_eq!(one.verified_bytes, perf.verified_bytes, "{test}");
        assert_eq!(one.retransmissions, perf.retransmissions, "{test}");
        assert_eq!(r.events, perf.events, "{test}");
    }
}

#[test]
fn two_flows_of_different_verbs_sizes_and_mtus_both_verify() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 2;
    let mut read = flow("read", PerfTest::ReadBw, 8192, 3, &[1, 2]);
    read.qp_profiles = vec![rnic_model::workload::QpProfile {
        pmtu: 1024,
        ..rnic_model::workload::QpProfile::from_config(&cfg)
    }];
    read.cores = 2;
    let mut lat = flow("lat", PerfTest::SendLat, 300, 1, &[2]);
    lat.start_us = 5.0;
    lat.tenant = 9;
    let r = run(&cfg, vec![read, lat], 2);
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert_eq!(r.flows.len(), 2);
    for f in &r.flows {
        assert!(f.bytes_verified && f.verified_bytes > 0, "{f:?}");
    }
    assert_eq!(r.flows[0].ops_completed, 150);
    assert_eq!(r.flows[1].ops_completed, 200);
    assert_eq!((r.flows[1].tenant, r.flows[1].class.as_str()), (9, "ls"));
    assert_eq!(
        r.total.verified_bytes,
        r.flows.iter().map(|f| f.verified_bytes).sum::<u64>()
    );
}

#[test]
fn the_same_seed_gives_the_same_result() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 2;
    cfg.net.impair.loss = 0.002;
    let go = || {
        let mut r = run(
            &cfg,
            vec![
                flow("bw", PerfTest::WriteBw, 16384, 2, &[1]),
                flow("lat", PerfTest::WriteLat, 64, 1, &[2]),
            ],
            2,
        );
        r.wall_seconds = 0.0;
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(go(), go());
}

/// Watching a run of flows (the progress bar's reports) changes nothing in its result, and
/// the reports count every iteration flow's operations.
#[test]
fn progress_only_observes_a_run_of_flows() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 2;
    let spec = FlowsSpec {
        flows: vec![
            flow("bw", PerfTest::WriteBw, 4096, 4, &[1]),
            flow("lat", PerfTest::WriteLat, 64, 1, &[2]),
        ],
        clients: 2,
        pcap: None,
    };
    let opts = RunOptions::default();
    let mut plain = run_flows(&cfg, &spec, &opts).expect("flows run").result;
    let mut asked = Vec::new();
    let mut watch = |p: &rnic_model::Progress| asked.push(p.ops_asked);
    let mut watched = rnic_model::run::run_flows_observed(&cfg, &spec, &opts, Some(&mut watch))
        .expect("flows run")
        .result;
    plain.wall_seconds = 0.0;
    watched.wall_seconds = 0.0;
    assert_eq!(
        serde_json::to_string(&plain).unwrap(),
        serde_json::to_string(&watched).unwrap()
    );
    // Reports come every 100 ms of wall time: a fast run may have none.
    assert!(asked.iter().all(|&a| a == Some(4 * 50 + 200)), "{asked:?}");
}

/// Over a lossy link the run's totals say what set its retransmissions off, NAKs and
/// timeouts, as `rnic perf` does for the same flow (until 2026-12-01 a run of flows gave
/// the retransmissions alone).
#[test]
fn the_totals_count_naks_and_timeouts_as_rnic_perf() {
    let mut cfg = baseline(10.0);
    cfg.net.impair.loss = 0.02;
    let mut s = spec(PerfTest::WriteBw, 16384, 2, 1);
    s.iters = 100;
    let perf = crate::common::run(&cfg, &s).result;
    let r = run(
        &cfg,
        vec![FlowSpec::from_perf(&s, 16384, cfg.host.cores)],
        1,
    );
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(perf.naks + perf.timeouts > 0, "the loss set resends off");
    assert_eq!(
        (r.total.retransmissions, r.total.naks, r.total.timeouts),
        (perf.retransmissions, perf.naks, perf.timeouts)
    );
}

#[test]
fn retransmissions_are_attributed_to_the_flows_that_sent_them() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 2;
    cfg.net.impair.loss = 0.01;
    let r = run(
        &cfg,
        vec![
            flow("a", PerfTest::WriteBw, 16384, 2, &[1]),
            flow("b", PerfTest::WriteBw, 8192, 2, &[2]),
        ],
        2,
    );
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    let per_flow: u64 = r.flows.iter().map(|f| f.retransmissions).sum();
    assert!(r.total.retransmissions > 0);
    assert_eq!(per_flow, r.total.retransmissions);
    assert!(
        r.flows.iter().all(|f| f.retransmissions > 0),
        "{:?}",
        r.flows
    );
}

#[test]
fn a_latency_flow_beside_bulk_flows_waits_longer_than_alone() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 2;
    let lat = || {
        let mut f = flow("ls", PerfTest::WriteLat, 64, 1, &[1]);
        f.iters = 20;
        f.start_us = 20.0;
        f
    };
    let alone = run(&cfg, vec![lat()], 2);
    let mut flows = vec![lat()];
    for (i, c) in [1u32, 2].into_iter().enumerate() {
        let mut b = flow(&format!("bs{i}"), PerfTest::WriteBw, 1 << 20, 1, &[c]);
        b.iters = 30;
        b.tx_depth = 2;
        b.class = FlowClass::Bs;
        flows.push(b);
    }
    let shared = run(&cfg, flows, 2);
    assert_eq!(shared.status, RunStatus::Ok, "{}", shared.reason);
    let (a, s) = (&alone.flows[0].latency_us, &shared.flows[0].latency_us);
    assert!(s.p50 > 10.0 * a.p50, "alone {a:?}, shared {s:?}");
    assert!(shared.flows.iter().all(|f| f.bytes_verified));
}

#[test]
fn flows_that_do_not_fit_are_refused_with_the_field_and_the_fix() {
    let mut cfg = baseline(10.0);
    cfg.host.cores = 2;
    let mut f = flow("a", PerfTest::WriteBw, 64, 1, &[1]);
    f.cores = 3;
    let spec = FlowsSpec {
        flows: vec![f.clone()],
        clients: 1,
        pcap: None,
    };
    let e = run_flows(&cfg, &spec, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("host.cores = 2") && e.contains("raise host.cores"),
        "{e}"
    );
    f.cores = 1;
    f.clients = vec![2];
    let spec = FlowsSpec {
        flows: vec![f],
        clients: 1,
        pcap: None,
    };
    let e = run_flows(&cfg, &spec, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("flow[0].clients names node 2"), "{e}");
}

/// A flow whose message sizes are drawn from a mix: every byte still verifies (the oracle
/// draws the same k-th size of each QP as the sender), also when packets are lost and
/// resent, and the bytes moved lie strictly between all-smallest and all-largest.
#[test]
fn a_size_mix_moves_drawn_sizes_and_verifies_them() {
    use rnic_model::size_mix::SizeMix;
    let mix = SizeMix {
        values: vec![64, 3000, 20000],
        weights: vec![5, 3, 2],
    };
    for (test, loss) in [
        (PerfTest::WriteBw, 0.0),
        (PerfTest::SendBw, 0.0),
        (PerfTest::ReadBw, 0.0),
        (PerfTest::WriteBw, 0.01),
        (PerfTest::ReadBw, 0.01),
    ] {
        let mut cfg = baseline(10.0);
        cfg.net.clients = 1;
        cfg.net.impair.loss = loss;
        let mut f = flow("mix", test, mix.max(), 3, &[1]);
        f.size_mix = Some(mix.clone());
        f.qp_profiles = vec![rnic_model::workload::QpProfile {
            pmtu: 1024,
            ..rnic_model::workload::QpProfile::from_config(&cfg)
        }];
        let r = run(&cfg, vec![f], 1);
        let fr = &r.flows[0];
        assert_eq!(r.status, RunStatus::Ok, "{test} loss {loss}: {}", r.reason);
        assert!(fr.bytes_verified, "{test} loss {loss}");
        assert_eq!(fr.ops_completed, 150, "{test}");
        let (lo, hi) = (64 * 150, 20000 * 150);
        assert!(
            fr.verified_bytes > lo && fr.verified_bytes < hi,
            "{test}: {} bytes",
            fr.verified_bytes
        );
        let want_gbps = fr.verified_bytes as f64 * 8.0 / (fr.measured_us * 1e3);
        assert!((fr.goodput_gbps - want_gbps).abs() < 1e-9 * want_gbps.max(1.0));
        assert_eq!(fr.size_mix.as_ref(), Some(&mix));
    }
}

/// Any node may be a flow's server: three servers (nodes 1..=3) write into node 0 at once
/// (an incast), sharing node 0's port, while nodes 2 and 3 ping-pong and atomics run between
/// clients; every flow verifies its bytes.
#[test]
fn flows_run_between_any_nodes() {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 3;
    cfg.host.cores = 8;
    let with_server = |mut f: FlowSpec, server: u32| {
        f.server = server;
        f
    };
    let mut flows: Vec<FlowSpec> = (1..=3)
        .map(|s| {
            let mut f = flow(&format!("in{s}"), PerfTest::WriteBw, 65536, 2, &[0]);
            f.iters = 100;
            with_server(f, s)
        })
        .collect();
    flows.push(with_server(flow("sl", PerfTest::SendLat, 64, 1, &[3]), 2));
    flows.push(with_server(flow("rl", PerfTest::ReadLat, 4096, 1, &[1]), 3));
    flows.push(with_server(flow("at", PerfTest::AtomicBw, 8, 2, &[2]), 1));
    let r = run(&cfg, flows, 3);
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    for f in &r.flows {
        assert!(f.bytes_verified, "{}: {}", f.name, f.reason);
    }
    assert_eq!(r.flows[0].server, 1);
    // The three writers share node 0's 100 Gb/s port.
    let incast: f64 = r.flows[..3].iter().map(|f| f.goodput_gbps).sum();
    let each = r.flows[0].goodput_gbps;
    assert!(incast < 100.0, "incast {incast} Gb/s");
    assert!(each < 45.0, "one writer of three {each} Gb/s");
}

/// The run's simulated time covers every flow's measurement: a flow's last completion is
/// counted when its core has polled the CQE (`host.poll_cq_ns` after the CQE's event), which
/// can be after the run's last event.
#[test]
fn the_simulated_time_covers_every_flows_measurement() {
    // The flows post from their start (after connection setup, where the run's time
    // starts): `start_us + measured_us` is where each measurement ends.
    let cfg = baseline(10.0);
    for (test, size, qps, clients) in [
        (PerfTest::WriteBw, 4096, 4, 2),
        (PerfTest::WriteLat, 64, 1, 1),
        (PerfTest::ReadBw, 65536, 3, 3),
        (PerfTest::SendBw, 1024, 2, 1),
    ] {
        let mut s = spec(test, size, qps, clients);
        s.iters = 100;
        let f = FlowSpec::from_perf(&s, size, cfg.host.cores);
        let r = run(&cfg, vec![f], clients);
        assert_eq!(r.status, RunStatus::Ok, "{test}: {}", r.reason);
        for f in &r.flows {
            let end_us = f.start_us + f.measured_us;
            assert!(
                r.simulated_time_us >= end_us,
                "{test}: the run's {} µs end before flow {}'s measurement ({} µs from {} µs)",
                r.simulated_time_us,
                f.name,
                f.measured_us,
                f.start_us
            );
        }
    }
}

/// Connection setup is not measured: the run's simulated time counts from the
/// applications' start, as `rnic perf`'s does, so a run connected by RDMA CM reports the
/// time of the same run connected directly (it added the setup's round trips: 15 µs in
/// the committed example, 1.5 ms over the wan profile's 100 km).
#[test]
fn connection_setup_is_not_in_the_simulated_time() {
    let time_us = |connect| {
        let mut cfg = baseline(10.0);
        cfg.host.connect = connect;
        let mut s = spec(PerfTest::WriteBw, 4096, 2, 2);
        s.iters = 50;
        let f = FlowSpec::from_perf(&s, 4096, cfg.host.cores);
        let r = run(&cfg, vec![f], 2);
        assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
        r.simulated_time_us
    };
    let cm = time_us(rnic_model::config::Connect::Cm);
    let direct = time_us(rnic_model::config::Connect::Direct);
    assert_eq!(cm, direct);
}

/// The total counts every operation the flows completed over its span. A duration flow
/// runs from its start, and its window opens later: the operations it completed before
/// the window are in the span too. Here both flows leave node 0's port, which the 1 KB
/// SENDs keep busy from start to end (92.6 Gb/s of payload alone), so the total is near
/// that rate; counting only the window's operations over the whole span reported 36 Gb/s.
#[test]
fn the_total_counts_every_operation_in_its_span() {
    // The duration flow's window opens 200 µs after its start, long after the WRITEs end.
    let cfg = baseline(200.0);
    let writes = flow("writes", PerfTest::WriteBw, 4096, 1, &[1]);
    let mut sends = flow("sends", PerfTest::SendBw, 1024, 1, &[2]);
    sends.iters = 0;
    sends.duration_us = Some(100.0);
    let r = run(&cfg, vec![writes, sends], 2);
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    let (w, s) = (&r.flows[0], &r.flows[1]);
    let sends_all = s.verified_bytes / 1024;
    assert!(
        sends_all > s.ops_completed,
        "the SENDs before the window: {sends_all} in all, {} in the window",
        s.ops_completed
    );
    assert_eq!(r.total.ops_completed, w.ops_completed + sends_all);
    let bits = (w.verified_bytes + s.verified_bytes) as f64 * 8.0;
    let gbps = bits / (r.total.measured_us * 1e3);
    assert!(
        (r.total.goodput_gbps - gbps).abs() < 1e-9 * gbps,
        "{} vs {gbps}",
        r.total.goodput_gbps
    );
    assert!(
        r.total.goodput_gbps > 85.0 && r.total.goodput_gbps < 100.0,
        "node 0's port over the span: {} Gb/s",
        r.total.goodput_gbps
    );
}

/// Over UC and UD a flow's verified bytes are what arrived and was compared, as
/// `rnic perf` reports them: a sender's completion says nothing about arrival. At 10 %
/// loss the flow claimed every sent byte verified (1,024,000 B for 1,000 UD SENDs of
/// which 98 were lost).
#[test]
fn an_unreliable_flow_verifies_what_arrived() {
    use rnic_model::config::Transport;
    for (transport, test, size) in [
        (Transport::Ud, PerfTest::SendBw, 1024),
        (Transport::Uc, PerfTest::WriteBw, 8192),
        (Transport::Ud, PerfTest::SendLat, 256),
    ] {
        let mut cfg = baseline(0.0);
        cfg.qp.transport = transport;
        cfg.net.impair.loss = 0.1;
        let mut s = spec(test, size, 2, 1);
        s.iters = 500;
        // A lost ping or pong gives its iteration up after 65 µs.
        cfg.qp.timeout = 4;
        let perf = crate::common::run(&cfg, &s).result;
        let f = FlowSpec::from_perf(&s, size, cfg.host.cores);
        let r = run(&cfg, vec![f], 1);
        let lost = perf
            .unreliable
            .as_ref()
            .expect("a UC/UD result")
            .messages_lost;
        assert!(lost > 0, "{test}: nothing lost");
        assert_eq!(r.flows[0].verified_bytes, perf.verified_bytes, "{test}");
        assert_eq!(r.total.verified_bytes, perf.verified_bytes, "{test}");
    }
}

/// A duration flow whose window is far shorter than the timeouts its run saw is marked as
/// `rnic perf -D` marks such a run: not settled, why, the rate over the run, and a
/// `duration_us` long enough; a lossless duration flow beside it is not.
#[test]
fn a_window_shorter_than_the_runs_timeouts_is_marked_not_settled() {
    // The settle test opens the window: under loss it waits out timeouts first.
    let mut cfg = Config::default();
    cfg.net.clients = 1;
    cfg.net.impair.loss = 0.02;
    let mut f = flow("lossy", PerfTest::SendBw, 1024, 4, &[1]);
    f.duration_us = Some(200.0);
    let r = run(&cfg, vec![f], 1);
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    let row = &r.flows[0];
    assert_eq!(row.window_settled, Some(false), "{row:?}");
    let why = row.window_reason.as_deref().unwrap_or_default();
    assert!(
        why.contains("too short") && why.ends_with("or longer"),
        "{why}"
    );
    assert!(why.contains("duration_us = "), "{why}");
    let l = row.long_run.as_ref().expect("the rate over the run");
    assert!(!l.window_long_enough && l.timeouts > 0, "{l:?}");
    assert!(l.time_us > row.measured_us, "{l:?}");

    cfg.net.impair.loss = 0.0;
    let mut f = flow("clean", PerfTest::SendBw, 1024, 4, &[1]);
    f.duration_us = Some(200.0);
    let r = run(&cfg, vec![f], 1);
    assert_eq!(r.flows[0].window_settled, Some(true), "{:?}", r.flows[0]);
    assert_eq!(r.flows[0].long_run, None);
}

/// A flow is checked against the memory budget for its own clients, not for every node of
/// the network: a 64 MiB WRITE between two of 200 nodes needs about 200 MB, not the 13 GB
/// of 200 clients' buffers that refused it before.
#[test]
fn a_flow_between_two_of_many_nodes_is_budgeted_for_its_own_two() {
    let mut cfg = baseline(10.0);
    cfg.sim.max_memory_gb = 1.0;
    let mut f = flow("big", PerfTest::WriteBw, 64 << 20, 1, &[7]);
    f.server = 3;
    let spec = FlowsSpec {
        flows: vec![f.clone()],
        clients: 199,
        pcap: None,
    };
    rnic_model::run::check_flows(&cfg, &spec).expect("two nodes' buffers fit in 1 GB");
    // The same flow to every other node does not.
    f.clients = (0..200).filter(|&n| n != 3).collect();
    let all = FlowsSpec {
        flows: vec![f],
        ..spec
    };
    let e = rnic_model::run::check_flows(&cfg, &all).unwrap_err().0;
    assert!(
        e.contains("flow[0] (big)") && e.contains("sim.max_memory_gb"),
        "{e}"
    );
}
