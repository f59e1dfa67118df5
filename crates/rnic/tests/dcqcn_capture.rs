//! DCQCN's CNPs in the capture: two clients writing into the server through one switch
//! with `--set net.cc=dcqcn` (and ECN marking on). The server's port capture must hold the
//! CNPs its NIC sent, as RoCEv2 lays them out (BTH opcode 0x81 with BECN, to the sender's
//! QP, a valid ICRC), as many as the run counted, decoded by tshark as InfiniBand CNPs
//! when it is installed, and byte for byte the same for the same seed.

use std::path::{Path, PathBuf};
use std::process::Command;

use rnic_loopback::conformance::external_tool;
use rnic_wire::frame::FrameRepr;
use rnic_wire::Opcode;
use serde_json::Value;

const TWO_FLOWS: [&str; 14] = [
    "perf",
    "write-bw",
    "-s",
    "65536",
    "-q",
    "2",
    "--clients",
    "2",
    "--reversed",
    "-n",
    "300",
    "--quiet",
    "--set",
    "net.ecn.enabled=true",
];

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-dcqcn-capture-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// Runs the two flows with `cc`; returns the capture's bytes and the JSON result.
fn two_flows(dir: &Path, name: &str, cc: &str) -> (Vec<u8>, Value) {
    let pcap = dir.join(format!("{name}.pcap"));
    let json = dir.join(format!("{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(TWO_FLOWS)
        .args(["--set", &format!("net.cc={cc}")])
        .arg("--pcap")
        .arg(&pcap)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run rnic");
    assert!(
        out.status.success(),
        "rnic failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&std::fs::read(&json).expect("json written")).expect("json");
    (std::fs::read(&pcap).expect("pcap written"), v)
}

/// The frames of a classic pcap file (rnic writes little-endian, nanosecond timestamps).
fn frames(pcap: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 24;
    while at < pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(&pcap[at + 16..at + 16 + incl]);
        at += 16 + incl;
    }
    out
}

/// The CNPs of a capture, parsed.
fn cnps(pcap: &[u8]) -> Vec<FrameRepr<'_>> {
    frames(pcap)
        .into_iter()
        .filter_map(|f| FrameRepr::parse(f).ok())
        .filter(|f| f.roce.bth.opcode == Opcode::Cnp)
        .collect()
}

fn stat(v: &Value, key: &str) -> u64 {
    v["stats"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("stat {key} in {}", v["stats"]))
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
        let out = Command::new("tshark")
            .arg("-r")
            .arg(dir.join("a.pcap"))
            .args(["-o", "ip.check_checksum:TRUE"])
            .args(["-Y", "infiniband.bth.opcode == 129", "-T", "fields", "-E"])
            .args(["separator=|", "-e", "infiniband.bth.destqp", "-e"])
            .args(["ip.checksum.status", "-e", "_ws.malformed"])
            .output()
            .expect("tshark runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), got.len(), "tshark's CNPs: {text}");
        for (row, f) in rows.iter().zip(&got) {
            let want = format!("0x{:06x}|1|", f.roce.bth.dest_qp);
            assert_eq!(*row, want, "tshark decodes {f:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
