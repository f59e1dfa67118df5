//! Payload streamed per packet and DMA reads arbitrated per request
//! (`nic.dma_read_arbiter = "round_robin"`), against the whole-message FIFO (`"fifo"`).
//!
//! Thresholds come from the physics, fixed before measuring (baseline PCIe: 128 Gb/s,
//! 500 ns read round trip, 24 B per TLP, MRRS 512 B, MPS 256 B):
//! * one 512 B request's completions take (512 + 2 × 24) B / 16 B/ns = 35 ns on the link;
//!   a 4 KB packet's bytes 8 × 35 = 280 ns; an uncontended read about 0.5 µs;
//! * a whole 1 MB read takes 1 MiB × 280/256 / 16 B/ns ≈ 72 µs: with `fifo` the first
//!   packet cannot leave before that;
//! * with streaming, after the WQE's decode: translation (one MPT and one MTT line miss with
//!   2 MiB pages, ≈ 0.55 µs each), the QPC, then one read round trip and 4 KB: ≈ 2 µs; we
//!   allow 3 µs.

use crate::common::*;
use rnic_model::workload::PerfTest;

fn arbiter(policy: &str) -> rnic_model::config::Config {
    let mut cfg = baseline(0.0);
    cfg.nic.dma_read_arbiter = match policy {
        "fifo" => rnic_model::config::DmaReadArbiter::Fifo,
        _ => rnic_model::config::DmaReadArbiter::RoundRobin,
    };
    // One MTT entry covers the message: the test times the payload path, not the
    // page-by-page translation of 256 pages (which both policies do before the first read).
    cfg.nic.page_bytes = 2 << 20;
    cfg
}

#[test]
fn first_packet_of_a_1mb_write_leaves_one_read_after_decode() {
    let mut s = spec(PerfTest::WriteLat, 1 << 20, 1, 1);
    s.iters = 5;
    let rr = run(&arbiter("round_robin"), &s);
    assert!(rr.result.bytes_verified, "{:?}", rr.failures);
    let first_rr = rr.nodes[0].get("nic.tx.first_frame_wait_max_ps").unwrap();
    assert!(
        first_rr < 3_000_000,
        "round_robin: decode → first frame {first_rr} ps"
    );
    let fifo = run(&arbiter("fifo"), &s);
    assert!(fifo.result.bytes_verified, "{:?}", fifo.failures);
    let first_fifo = fifo.nodes[0].get("nic.tx.first_frame_wait_max_ps").unwrap();
    assert!(
        first_fifo > 60_000_000,
        "fifo: decode → first frame {first_fifo} ps (the whole megabyte first)"
    );
    // The message is no longer read and then sent: its latency drops by about the read.
    assert!(rr.result.latency_us.p50 + 50.0 < fifo.result.latency_us.p50);
}

/// Four QPs streaming 1 MB WRITEs: a WQE or context read waits at PCIe behind at most the
/// streams' read-ahead (4 × 16 KiB ≈ 4.3 µs of completions, when all start at once) and a
/// few requests, not behind whole messages (with `fifo`, WQE reads for later messages wait
/// behind megabytes); the TX engine still runs each message to completion, so a
/// message's first packet still waits about a 1 MB message's wire time (85 µs) there.
#[test]
fn small_reads_do_not_wait_for_whole_messages_but_tx_blocking_stays() {
    let mut s = spec(PerfTest::WriteBw, 1 << 20, 4, 1);
    // More WQEs than the TX buffer admits at once: later WQE reads meet the streams.
    s.iters = 30;
    let rr = run(&arbiter("round_robin"), &s);
    assert!(rr.result.bytes_verified, "{:?}", rr.failures);
    let n = &rr.nodes[0];
    let bound = 500_000 + 4 * 1_070_000 + 8 * 35_000 + 100_000;
    for class in ["wqe", "ctx"] {
        let lat = n.get(&format!("nic.dma.{class}_latency_max_ps")).unwrap();
        assert!(
            lat <= bound,
            "round_robin {class} read latency {lat} ps > {bound}"
        );
    }
    let tx_wait = n.get("nic.tx.first_frame_wait_max_ps").unwrap();
    assert!(tx_wait > 80_000_000, "TX-side wait {tx_wait} ps");

    let fifo = run(&arbiter("fifo"), &s);
    assert!(fifo.result.bytes_verified, "{:?}", fifo.failures);
    let f = &fifo.nodes[0];
    let worst = ["wqe", "ctx"]
        .iter()
        .map(|c| f.get(&format!("nic.dma.{c}_latency_max_ps")).unwrap())
        .max()
        .unwrap();
    assert!(worst > 60_000_000, "fifo: a small read waited {worst} ps");
}

/// READ responses stream too: the bytes are verified and the responder's reads are MRRS
/// requests of its payload stream.
#[test]
fn read_responses_stream_and_verify() {
    let mut s = spec(PerfTest::ReadBw, 1 << 20, 2, 1);
    s.iters = 5;
    let rr = run(&arbiter("round_robin"), &s);
    assert!(rr.result.bytes_verified, "{:?}", rr.failures);
    let reads: u64 = rr
        .nodes
        .iter()
        .map(|n| n.get("nic.dma.payload_reads").unwrap_or(0))
        .sum();
    assert!(reads >= 10 * 2048, "payload requests {reads}");
}

/// A 1 MB READ's responses stream: the responder sends its first response packet about one
/// read round trip after the request arrives, so a read-lat iteration is the wire time of
/// the megabyte (1 MiB + 256 packets of headers at 100 Gb/s ≈ 85.6 µs) plus the small-READ
/// latency (≈ 4 µs), where reading it whole first adds the ≈ 72 µs of its PCIe read.
#[test]
fn a_1mb_read_is_answered_at_the_wire_rate_not_after_its_whole_read() {
    let mut s = spec(PerfTest::ReadLat, 1 << 20, 1, 1);
    s.iters = 5;
    let p50 = |policy: &str| {
        let r = run(&arbiter(policy), &s);
        assert!(r.result.bytes_verified, "{policy}: {:?}", r.failures);
        assert_eq!(
            r.result.status,
            rnic_model::result::RunStatus::Ok,
            "{policy}"
        );
        r.result.latency_us.p50
    };
    let (rr, fifo) = (p50("round_robin"), p50("fifo"));
    assert!(
        (85.6..95.0).contains(&rr),
        "round_robin: 1 MB read-lat p50 {rr} µs"
    );
    assert!(
        fifo > rr + 60.0,
        "fifo: 1 MB read-lat p50 {fifo} µs, streamed {rr} µs"
    );
}
