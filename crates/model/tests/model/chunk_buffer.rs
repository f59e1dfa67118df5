//! The scheduler's chunk (`nic.chunk_bytes`) and the TX payload buffer
//! (`nic.tx_buffer_bytes`): a visit takes about one chunk of messages from its QP, the
//! payload in the NIC never runs more than one visit past the buffer, the buffer drains to
//! zero however a run ends, and the chunk is what makes QPC placement matter at mid sizes.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::workload::PerfTest;
use rnic_model::ModelRun;

fn config(profile: &str, sets: &[&str]) -> Config {
    let ov: Vec<_> = sets.iter().map(|s| parse_set(s).expect("set")).collect();
    Config::resolve(profile, &ov).expect("profile")
}

/// `iters` WRITEs of `size` bytes on each of `qps` QPs (iteration mode, one client).
fn writes(cfg: &Config, size: u64, qps: u32, iters: u64) -> ModelRun {
    let mut s = spec(PerfTest::WriteBw, size, qps, 1);
    s.iters = iters;
    let r = run(cfg, &s);
    assert!(r.result.bytes_verified, "{size} B: {:?}", r.failures);
    r
}

/// WQEs per scheduler visit at the server when the NIC, not the hosts, is the bottleneck
/// (8 QPs on 8 cores, 10 clients, 128 WQEs outstanding per QP), so every visit finds work
/// waiting. The first visit of each QP reads `wqes_per_fetch` WQEs before it knows their
/// size; over 500 µs that is a small part of the average.
fn wqes_per_visit(cfg: &Config, size: u64) -> f64 {
    let mut cfg = cfg.clone();
    cfg.sim.warmup_us = Some(20.0);
    let mut s = spec(PerfTest::WriteBw, size, 8, 10);
    s.duration_us = Some(500.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{size} B: {:?}", r.failures);
    let v = &r.nodes[0];
    v.get("nic.sched.wqes").unwrap() as f64 / v.get("nic.sched.visits").unwrap() as f64
}

#[test]
fn model_a_visit_takes_one_chunk_of_messages() {
    // Visits may find fewer WQEs waiting than they could take, so the chunk shows as an
    // upper bound, and as a larger average when it is larger. (chunk, size, WQEs/visit)
    let cases = [
        (1024, 64, 5.0..=8.0), // 16 would fit the chunk, the 8-WQE read binds
        (256, 64, 3.0..=4.05),
        (1024, 256, 3.0..=4.05),
        (1024, 4096, 1.0..=1.1), // one message per visit
        (16384, 4096, 2.0..=4.05),
    ];
    for (chunk, size, want) in cases {
        let cfg = config("baseline", &[&format!("nic.chunk_bytes={chunk}")]);
        let w = wqes_per_visit(&cfg, size);
        assert!(
            want.contains(&w),
            "{size} B, chunk {chunk} B: {w:.2} WQEs per visit"
        );
    }
}

#[test]
fn model_the_payload_buffer_bounds_the_fetch_and_drains() {
    for cap in [2048u64, 32768] {
        let cfg = config("baseline", &[&format!("nic.tx_buffer_bytes={cap}")]);
        let r = writes(&cfg, 1024, 64, 100);
        let peak = r.nodes[0].get("nic.tx.buffer_peak_bytes").unwrap();
        // A payload read starts only while the buffer is below its size.
        assert!(peak > 0 && peak < cap + 1024, "cap {cap}: peak {peak}");
        for (i, n) in r.nodes.iter().enumerate() {
            assert_eq!(
                n.get("nic.tx.buffer_left_bytes"),
                Some(0),
                "cap {cap}: node {i} kept bytes"
            );
        }
    }
    // A message longer than the buffer still goes, one packet's worth at a time.
    let cfg = config("baseline", &["nic.tx_buffer_bytes=1024"]);
    let r = writes(&cfg, 65536, 2, 20);
    assert_eq!(r.nodes[0].get("nic.tx.buffer_left_bytes"), Some(0));
}

#[test]
fn model_a_failed_qp_gives_its_buffer_back() {
    // Every packet is lost: the QPs exhaust their retries and flush their WQEs (connected
    // directly: RDMA CM could not connect them at all).
    let cfg = config(
        "baseline",
        &[
            "net.impair.loss=1.0",
            "qp.retry_cnt=1",
            "qp.timeout=1",
            "host.connect=direct",
        ],
    );
    let mut s = spec(PerfTest::WriteBw, 4096, 4, 1);
    s.iters = 50;
    let r = run(&cfg, &s);
    assert!(!r.result.bytes_verified, "nothing can arrive");
    assert!(r.result.timeouts > 0);
    for (i, n) in r.nodes.iter().enumerate() {
        assert_eq!(
            n.get("nic.tx.buffer_left_bytes"),
            Some(0),
            "node {i} kept bytes"
        );
    }
}

#[test]
fn model_one_qp_streams_megabyte_messages_at_line_rate() {
    // The buffer holds one packet of a long message, so it does not throttle one QP.
    let cfg = baseline(0.0);
    let mut s = spec(PerfTest::WriteBw, 1 << 20, 1, 1);
    s.iters = 40;
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    assert!(
        r.result.goodput_gbps > 90.0,
        "{:.1} Gbps",
        r.result.goodput_gbps
    );
}

/// 1 KiB WRITE message rate on 1000 QPs (beyond the 300-entry QPC cache), csRNA.
fn kib_rate(sets: &[&str]) -> (f64, f64) {
    let mut cfg = config("csrna", sets);
    cfg.sim.warmup_us = Some(1000.0);
    let mut s = spec(PerfTest::WriteBw, 1024, 1000, 10);
    s.duration_us = Some(100.0);
    s.tx_depth = 8;
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{sets:?}: {:?}", r.failures);
    (r.result.msg_rate_mops, r.result.pcie_rd_util)
}

#[test]
fn model_the_chunk_makes_qpc_placement_matter_at_mid_sizes() {
    let (host, util) = kib_rate(&["nic.qpc_placement=host"]);
    let (ddr, _) = kib_rate(&["nic.qpc_placement=ddr"]);
    assert!(util > 0.9, "host-memory QPC: PCIe reads {util:.2} busy");
    assert!(
        ddr > 1.05 * host,
        "1 KiB chunk: ddr {ddr:.2} vs host {host:.2} Mops"
    );
    // With an 8 KiB chunk eight messages share a QPC access: placement no longer matters.
    let (host, _) = kib_rate(&["nic.qpc_placement=host", "nic.chunk_bytes=8192"]);
    let (ddr, _) = kib_rate(&["nic.qpc_placement=ddr", "nic.chunk_bytes=8192"]);
    assert!(
        ddr < 1.02 * host,
        "8 KiB chunk: ddr {ddr:.2} vs host {host:.2} Mops"
    );
}
