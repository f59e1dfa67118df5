//! Per-QP attributes travel from the workload to the NIC and the transport: two QPs with
//! different path MTUs in one run are each packetised by their own (read back from the
//! capture), and a small packet window bounds a QP's throughput by window / round trip.

use crate::common::*;
use rnic_model::config::Reliability;
use rnic_model::result::RunStatus;
use rnic_model::workload::{PerfTest, QpProfile};

fn profile(pmtu: u32, window_psns: u32) -> QpProfile {
    QpProfile {
        pmtu,
        window_psns,
        ack_req_every: 16,
        reliability: Reliability::Gbn,
        tenant: 0,
    }
}

/// The payload lengths of the WRITE packets in a classic pcap, by destination QP.
fn payloads_by_qp(pcap: &[u8]) -> std::collections::BTreeMap<u32, Vec<usize>> {
    let mut out: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    let mut at = 24; // global header
    while at + 16 <= pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &pcap[at + 16..at + 16 + incl];
        at += 16 + incl;
        if let Ok(h) = rnic_wire::peek_roce(frame) {
            if h.bth.opcode.is_request() && h.payload_len > 0 {
                // RC payloads only, not the connection managers' MADs to QP1.
                if h.bth.dest_qp != rnic_wire::cm::GSI_QPN {
                    out.entry(h.bth.dest_qp).or_default().push(h.payload_len);
                }
            }
        }
    }
    out
}

#[test]
fn each_qp_is_packetised_by_its_own_pmtu() {
    let cfg = baseline(10.0);
    let pcap = std::env::temp_dir().join(format!("rnic-pmtu-{}.pcap", std::process::id()));
    let mut s = spec(PerfTest::WriteBw, 8192, 2, 1);
    s.iters = 5;
    s.qp_profiles = vec![profile(1024, 8_388_607), profile(4096, 8_388_607)];
    s.pcap = Some(rnic_model::workload::PcapOut::of_server(pcap.clone()));
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    let bytes = std::fs::read(&pcap).unwrap();
    let _ = std::fs::remove_file(&pcap);
    let by_qp = payloads_by_qp(&bytes);
    let mut maxes: Vec<(usize, usize)> = by_qp
        .values()
        .map(|v| (*v.iter().max().unwrap(), v.len()))
        .collect();
    maxes.sort();
    // 5 WRITEs of 8 KiB: 8 packets of 1024 B each on one QP, 2 of 4096 B on the other.
    assert_eq!(maxes, vec![(1024, 40), (4096, 10)], "{by_qp:?}");
}

#[test]
fn a_small_packet_window_bounds_the_rate_by_window_over_round_trip() {
    let mut cfg = baseline(10.0);
    cfg.net.link_delay_ns = 10_000.0; // 40 µs round trip on the wire
    let goodput = |window| {
        let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
        s.iters = 200;
        s.qp_profiles = vec![profile(4096, window)];
        let r = run(&cfg, &s);
        assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
        r.result.goodput_gbps
    };
    let small = goodput(16);
    let large = goodput(8_388_607);
    // 16 packets of 4 KiB per ~41 µs round trip: about 13 Gb/s, far below the wire.
    assert!(small < 16.0 && small > 8.0, "{small}");
    // The unlimited window keeps 128 WRITEs (8 MB) in flight: the wire, less the start-up.
    assert!(large > 85.0, "{large}");
}

#[test]
fn many_memory_regions_make_the_mpt_cache_miss() {
    let cfg = baseline(10.0);
    let misses = |mrs| {
        let mut s = spec(PerfTest::WriteBw, 4096, 512, 1);
        s.iters = 20;
        s.mrs = mrs;
        let r = run(&cfg, &s);
        assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
        r.result.caches["mpt"].misses
    };
    let one = misses(1);
    let many = misses(512);
    // One region: one compulsory miss. 512 regions used in turn by 512 QPs overflow the
    // 256-entry MPT cache.
    assert_eq!(one, 1);
    assert!(many > 512 * 10, "{many}");
}
