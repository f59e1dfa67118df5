//! DCQCN's CNPs in the capture: two clients writing into the server through one switch
//! with `--set net.cc=dcqcn` (and ECN marking on). The server's port capture must hold the
//! CNPs its NIC sent, as RoCEv2 lays them out (BTH opcode 0x81 with BECN, to the sender's
//! QP, a valid ICRC), as many as the run counted, decoded by tshark as InfiniBand CNPs
//! when it is installed, and byte for byte the same for the same seed.

mod common;

use std::path::{Path, PathBuf};

use common::DCQCN_TWO_FLOWS as TWO_FLOWS;
use rnic_loopback::conformance::external_tool;
use rnic_wire::frame::FrameRepr;
use rnic_wire::Opcode;
use serde_json::Value;

fn scratch(name: &str) -> PathBuf {
    common::capture_scratch("dcqcn-capture", name)
}

/// Runs the two flows with `cc`; returns the capture's bytes and the JSON result.
fn two_flows(dir: &Path, name: &str, cc: &str) -> (Vec<u8>, Value) {
    let cc = format!("net.cc={cc}");
    let args: Vec<&str> = TWO_FLOWS.iter().copied().chain(["--set", &cc]).collect();
    common::run_captured(&args, dir, name)
}

/// The CNPs of a capture, parsed.
fn cnps(pcap: &[u8]) -> Vec<FrameRepr<'_>> {
    common::pcap_frames(pcap)
        .into_iter()
        .filter_map(|f| FrameRepr::parse(f).ok())
        .filter(|f| f.roce.bth.opcode == Opcode::Cnp)
        .collect()
}

fn stat(v: &Value, key: &str) -> u64 {
    common::json_stat(v, key)
}

#[test]
fn the_server_capture_holds_the_cnps_it_sent() {
    let dir = scratch("two-flows");
    let (pcap, v) = two_flows(&dir, "a", "dcqcn");
    let got = cnps(&pcap);
    assert!(!got.is_empty(), "the marked flows get CNPs");
    assert_eq!(got.len() as u64, stat(&v, "server.nic.cc.cnps_sent"));
    // Each reached a client's transport and cut that client's QP.
    assert_eq!(got.len() as u64, stat(&v, "clients.transport.rx_cnps"));
    assert_eq!(got.len() as u64, stat(&v, "clients.nic.cc.rate_cuts"));
    for f in &got {
        assert!(f.roce.bth.becn, "BECN set: {f:?}");
        assert_eq!(f.addr.dscp_ecn & 0b11, 0, "a CNP is Not-ECT: {f:?}");
    }
    let (again, _) = two_flows(&dir, "b", "dcqcn");
    assert!(
        pcap == again,
        "the capture differs between two runs of one seed"
    );
    let (none, _) = two_flows(&dir, "none", "none");
    assert!(cnps(&none).is_empty(), "no CNPs with net.cc = none");

    if external_tool("tshark", &["--version"]) {
        let rows = common::tshark_rows(
            &dir.join("a.pcap"),
            &[
                "-o",
                "ip.check_checksum:TRUE",
                "-Y",
                "infiniband.bth.opcode == 129",
                "-T",
                "fields",
                "-E",
                "separator=|",
                "-e",
                "infiniband.bth.destqp",
                "-e",
                "ip.checksum.status",
                "-e",
                "_ws.malformed",
            ],
        );
        assert_eq!(rows.len(), got.len(), "tshark's CNPs: {rows:?}");
        for (row, f) in rows.iter().zip(&got) {
            let want = format!("0x{:06x}|1|", f.roce.bth.dest_qp);
            assert_eq!(*row, want, "tshark decodes {f:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
