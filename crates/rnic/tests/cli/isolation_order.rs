//! Slicing never reorders a QP's packets: under v2 (BS WQEs yield the transport after every
//! packet, interleaving eight 1 MB streams of two PMTUs and an LS ping-pong), the server
//! port's capture, checked by `rnic pcap check`'s analysis, shows every QP's request PSNs in
//! order with no gap and nothing sent twice, every frame passing its ICRC, and the payload
//! oracle verifies every byte.

use rnic::model::result::RunStatus;
use rnic::repro::isolation::{build, Arch, Bs, PointSpec};

#[test]
fn sliced_streams_keep_every_qps_psn_order() {
    let bs = |pmtu: u32| Bs {
        pmtu,
        iters: 6,
        ..Bs::beside_ls(1 << 20)
    };
    let p = PointSpec {
        label: "v2".into(),
        arch: Arch::V2,
        ls: true,
        bs: (0..8)
            .map(|i| bs(if i % 2 == 0 { 1024 } else { 2048 }))
            .collect(),
        sets: Vec::new(),
    };
    let (cfg, mut spec) = build(&p).unwrap();
    let pcap = std::env::temp_dir().join(format!("rnic-iso-order-{}.pcap", std::process::id()));
    spec.pcap = Some(rnic_model::workload::PcapOut::of_server(pcap.clone()));
    let run = rnic::model::run_flows(&cfg, &spec, &Default::default()).unwrap();
    assert_eq!(run.result.status, RunStatus::Ok, "{}", run.result.reason);
    assert!(run.result.flows.iter().all(|f| f.bytes_verified));
    assert!(run.nodes[0].get("nic.iso.write_backs").unwrap_or(0) > 1000);
    let report = rnic::pcap_check::check_path(&pcap).unwrap();
    let _ = std::fs::remove_file(&pcap);
    assert_eq!(report.status, "ok");
    assert_eq!(report.roce_frames_failed, 0);
    let mut requests = 0;
    for f in &report.flows {
        assert_eq!(f.psn_gaps, 0, "{f:?}");
        assert_eq!(f.retransmitted_packets, 0, "{f:?}");
        requests += f.messages_total;
    }
    // 8 tenants x 6 messages and the LS writes, every one seen.
    assert!(requests >= 8 * 6 + 40, "{requests}");
}
