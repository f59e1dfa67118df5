//! Physics of the timed model: line rate, PCIe limits, the latency breakdown, the message
//! rate bound.

use crate::common::*;
use rnic_model::breakdown::write_only_frame_len;
use rnic_model::workload::PerfTest;
use rnic_model::write_lat_breakdown;

/// Goodput a 100 Gbps port allows for `msg` byte WRITEs split into `pmtu` packets:
/// payload / (payload + per-packet header, ICRC, FCS, preamble, IFG; RETH once).
fn header_limited_gbps(msg: u64, pmtu: u64, gbps: f64) -> f64 {
    let pkts = msg.div_ceil(pmtu);
    let per_pkt = 14 + 20 + 8 + 12 + 4 + 4 + 20;
    let wire = msg + pkts * per_pkt + 16;
    gbps * msg as f64 / wire as f64
}

#[test]
fn model_one_qp_64k_writes_reach_95_percent_of_header_limited_line_rate() {
    let cfg = baseline(50.0);
    let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
    s.duration_us = Some(2000.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    let limit = header_limited_gbps(65536, 4096, 100.0);
    assert!(limit > 97.9 && limit < 98.1, "limit {limit}");
    let g = r.result.goodput_gbps;
    assert!(
        g >= 0.95 * limit,
        "goodput {g:.2} Gbps < 95 % of {limit:.2}"
    );
    // Counting completions in a window quantizes by one message (0.3 % here).
    assert!(
        g <= limit * 1.01,
        "goodput {g:.2} Gbps above the line-rate limit {limit:.2}"
    );
}

#[test]
fn model_pcie_slower_than_the_link_caps_throughput() {
    let mut cfg = baseline(50.0);
    cfg.pcie.gbps = 50.0;
    let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
    s.duration_us = Some(2000.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    // Host → NIC carries the payload in MPS-sized completions with a TLP header each.
    let tlps = 65536u64.div_ceil(u64::from(cfg.pcie.mps_bytes));
    let pcie_limit = 50.0 * 65536.0 / (65536 + tlps * u64::from(cfg.pcie.tlp_header_bytes)) as f64;
    let g = r.result.goodput_gbps;
    assert!(
        g <= pcie_limit * 1.01,
        "goodput {g:.2} above the PCIe limit {pcie_limit:.2}"
    );
    assert!(
        g >= 0.9 * pcie_limit,
        "goodput {g:.2} far below the PCIe limit {pcie_limit:.2}"
    );
    assert!(g < 0.9 * header_limited_gbps(65536, 4096, 100.0));
}

#[test]
fn model_two_byte_write_lat_is_the_sum_of_its_components() {
    let cfg = baseline(10.0);
    let b = write_lat_breakdown(&cfg, 2);
    assert_eq!(b.components.len(), 20);
    let sum: f64 = b.components.iter().map(|c| c.ns).sum();
    assert!((sum - b.total_ns).abs() < 1e-6);
    let r = run(&cfg, &spec(PerfTest::WriteLat, 2, 1, 1));
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    let measured_ns = r.result.latency_us.p50 * 1000.0;
    let err = (measured_ns - b.total_ns).abs() / b.total_ns;
    assert!(
        err < 0.01,
        "write-lat p50 {measured_ns:.1} ns vs breakdown {:.1} ns ({:.2} %)",
        b.total_ns,
        err * 100.0
    );
    // The breakdown moves with its parameters: each of the two links on the path adds its
    // delay difference and nothing else.
    let mut far = cfg.clone();
    far.net.link_delay_ns = cfg.net.link_delay_ns + 1000.0;
    let b2 = write_lat_breakdown(&far, 2);
    assert!((b2.total_ns - b.total_ns - 2000.0).abs() < 1e-6);
    // The default: 500 ns per link, 1 µs from NIC to NIC through the switch (the csRNA
    // paper's "link delay of 1 µs" as its simulator applies it).
    let links_ns: f64 = b
        .components
        .iter()
        .filter(|c| c.name.starts_with("link_"))
        .map(|c| c.ns)
        .sum();
    assert_eq!(links_ns, 1000.0);
    assert_eq!(write_only_frame_len(2), 14 + 20 + 8 + 12 + 16 + 4 + 4);
}

#[test]
fn model_small_message_rate_is_bounded_by_the_pipeline_and_the_wire() {
    // Peak with the calibrated TX engine: 15 cycles at 1 GHz = 66.7 Mops.
    let cfg = baseline(100.0);
    let mut s = spec(PerfTest::WriteBw, 64, 100, 10);
    s.duration_us = Some(100.0);
    s.tx_depth = 16;
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    let ii_bound = 1e3 / f64::from(cfg.nic.tx_msg_cycles) * cfg.nic.clock_ghz;
    let m = r.result.msg_rate_mops;
    assert!(
        m <= ii_bound * 1.001,
        "{m:.2} Mops above 1/II = {ii_bound:.2}"
    );
    assert!(
        m >= 0.9 * ii_bound,
        "{m:.2} Mops: the TX engine should be the bottleneck"
    );

    // A faster TX engine: now the wire (64 B WRITE frames, 77.16 Mpps) binds.
    let mut fast = cfg.clone();
    fast.nic.tx_msg_cycles = 5;
    let r = run(&fast, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    let frame = write_only_frame_len(64) as f64 + 4.0 + 20.0;
    let wire_mpps = 100e3 / (frame * 8.0);
    assert!((wire_mpps - 77.16).abs() < 0.01);
    let m = r.result.msg_rate_mops;
    assert!(
        m <= wire_mpps * 1.001,
        "{m:.2} Mops above the wire bound {wire_mpps:.2}"
    );
    assert!(
        m > ii_bound,
        "{m:.2} Mops: a faster TX engine should lift the rate"
    );
}

/// `nic.cqe_bytes` is the size of the CQE the NIC writes over PCIe: the requester's PCIe
/// writes of a READ run are its payload and one CQE per READ, and a 2-byte READ's latency
/// grows by the larger CQE's serialization on the 128 Gb/s link (16 B per ns).
#[test]
fn model_cqe_bytes_sets_the_pcie_write_of_each_completion() {
    let measure = |cqe_bytes: u32| {
        let mut cfg = baseline(10.0);
        cfg.nic.cqe_bytes = cqe_bytes;
        let mut s = spec(PerfTest::ReadBw, 64, 1, 1);
        s.iters = 200;
        let r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        let server = &r.nodes[0];
        let cqes = counter(server, "nic.cq.cqes");
        assert_eq!(cqes, 200);
        let up = counter(server, "nic.pcie.up_payload_bytes");
        assert_eq!(
            up,
            200 * 64 + cqes * u64::from(cqe_bytes),
            "cqe {cqe_bytes} B"
        );
        let lat = run(&cfg, &spec(PerfTest::ReadLat, 2, 1, 1));
        assert!(lat.result.bytes_verified, "{:?}", lat.failures);
        lat.result.latency_us.p50 * 1000.0
    };
    let small = measure(64);
    let large = measure(256);
    // 192 more bytes at 16 B/ns.
    assert!(
        (large - small - 12.0).abs() < 0.01,
        "read-lat {small:.3} ns with 64 B CQEs, {large:.3} ns with 256 B"
    );
}

/// `host.mem_latency_ns` is the time a polling core takes to see a DMA write, a CQE as much
/// as a received byte: every latency test pays it once per half round trip (write-lat:
/// the byte; send-lat: the receive CQE) or per operation (read-lat, atomic-lat: the CQE),
/// so moving it moves each test's latency by exactly as much.
#[test]
fn model_a_polling_core_sees_a_cqe_after_the_host_memory_latency() {
    let lat_ns = |test: PerfTest, mem_ns: f64| {
        let mut cfg = baseline(10.0);
        cfg.host.mem_latency_ns = mem_ns;
        let size = if test == PerfTest::AtomicLat { 8 } else { 2 };
        let r = run(&cfg, &spec(test, size, 1, 1));
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        r.result.latency_us.p50 * 1000.0
    };
    for test in [
        PerfTest::WriteLat,
        PerfTest::SendLat,
        PerfTest::ReadLat,
        PerfTest::AtomicLat,
    ] {
        let (none, some) = (lat_ns(test, 0.0), lat_ns(test, 80.0));
        assert!(
            (some - none - 80.0).abs() < 0.01,
            "{test:?}: {none:.3} ns with host.mem_latency_ns = 0, {some:.3} ns with 80"
        );
    }
    // A SEND's receiver sees its CQE, written after the payload, no sooner than a WRITE's
    // receiver sees the payload's last byte.
    assert!(lat_ns(PerfTest::SendLat, 80.0) >= lat_ns(PerfTest::WriteLat, 80.0) - 3.0);
}

/// The per-QP rate limit (`qp.rate_limit_gbps`, perftest --rate_limit) holds a QP to that
/// rate on the wire: every request frame is charged its bytes on the wire (frame, FCS,
/// preamble and inter-frame gap, as the port serializes it), so 64 B WRITEs at 1 Gb/s
/// leave at 1 Gb/s / (162 B x 8) = 0.772 Mpps, not 1 Gb/s / (138 B x 8) = 0.906 Mpps.
#[test]
fn model_the_rate_limit_counts_bytes_on_the_wire() {
    let mut cfg = baseline(50.0);
    cfg.qp.rate_limit_gbps = 1.0;
    let mut s = spec(PerfTest::WriteBw, 64, 1, 1);
    s.duration_us = Some(2000.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    let wire = write_only_frame_len(64) as u64 + 4 + 20;
    assert_eq!(wire, 162);
    let server = &r.nodes[0];
    let frames = counter(server, "nic.tx.frames");
    assert_eq!(
        counter(server, "nic.rate_limit.charged_bytes"),
        frames * wire,
        "{frames} frames"
    );
    let limit_mpps = 1e3 / (wire as f64 * 8.0);
    let m = r.result.msg_rate_mops;
    assert!(
        (m - limit_mpps).abs() < 0.01 * limit_mpps,
        "{m:.4} Mops under a 1 Gb/s limit: {limit_mpps:.4} Mpps of {wire} B on the wire"
    );
}

/// `host.cpu_busy_ps` is the CPU time the application spent on a node: a WRITE initiator
/// pays `host.post_send_ns` per WQE and `host.poll_cq_ns` per CQE, its target nothing; a
/// SEND target pays a post per receive it reposts, in lists or one at a time, and a poll
/// per receive CQE (the receives pre-posted before the test are setup, as in perftest,
/// which posts them before its barrier).
#[test]
fn model_host_cpu_time_is_a_post_per_wqe_and_a_poll_per_cqe() {
    let cpu = |test: PerfTest, list: u32| {
        let mut cfg = baseline(10.0);
        cfg.host.recv_post_list = list;
        let mut s = spec(test, 64, 1, 1);
        s.iters = 96;
        let r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        (
            counter(&r.nodes[0], "host.cpu_busy_ps"),
            counter(&r.nodes[1], "host.cpu_busy_ps"),
        )
    };
    // 96 posts of 50 ns and 96 polls of 20 ns.
    assert_eq!(cpu(PerfTest::WriteBw, 1), (6_720_000, 0));
    let one = cpu(PerfTest::SendBw, 1);
    assert_eq!(
        one,
        (6_720_000, 6_720_000),
        "SEND target, one receive per post"
    );
    let listed = cpu(PerfTest::SendBw, 8);
    assert_eq!(
        listed.1, one.1,
        "a list of 8 receives costs 8 posts of the core, as 8 single posts do"
    );
}
