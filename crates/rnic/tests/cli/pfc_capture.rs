//! Priority flow control's PAUSE frames in the capture: the incast of the book's networks
//! chapter (four clients writing 64 KB messages into the server) with `--set net.pfc=true --pcap`. The capture
//! must hold the PFC frames the switch sent, as IEEE 802.1Qbb lays them out: read back with
//! rnic-wire's PFC parser (an XOFF of the RoCE priority for 0xFFFF quanta, then its XON,
//! from each paused port, as many as the run counted), decoded by tshark as MAC control
//! PFC frames when it is installed, and byte for byte the same for the same seed.

use std::path::{Path, PathBuf};
use std::process::Command;

use rnic_loopback::conformance::external_tool;
use rnic_wire::pfc::{self, Packet, PfcRepr, XOFF_QUANTA};
use serde_json::Value;

const INCAST: [&str; 12] = [
    "perf",
    "write-bw",
    "-s",
    "65536",
    "-q",
    "4",
    "--clients",
    "4",
    "--reversed",
    "-n",
    "200",
    "--quiet",
];

fn scratch(name: &str) -> PathBuf {
    crate::common::capture_scratch("pfc-capture", name)
}

/// Runs the incast with `extra` settings; returns the capture's bytes and the JSON result.
fn incast(dir: &Path, name: &str, extra: &[&str]) -> (Vec<u8>, Value) {
    let args: Vec<&str> = INCAST.iter().chain(extra).copied().collect();
    crate::common::run_captured(&args, dir, name)
}

fn stat(v: &Value, key: &str) -> u64 {
    crate::common::json_stat(v, key)
}

/// The PFC frames of a capture, parsed; every MAC control frame must parse.
fn pfc_frames(pcap: &[u8]) -> Vec<PfcRepr> {
    crate::common::pcap_frames(pcap)
        .into_iter()
        .filter(|f| pfc::is_mac_control(f))
        .map(|f| {
            assert_eq!(f.len(), pfc::FRAME_LEN, "padded to the minimum frame");
            PfcRepr::parse(&Packet::new_checked(f).unwrap()).expect("a valid PFC frame")
        })
        .collect()
}

#[test]
fn the_incast_capture_holds_its_pause_frames() {
    let dir = scratch("incast");
    let (pcap, v) = incast(&dir, "a", &["--set", "net.pfc=true"]);
    let pfc = pfc_frames(&pcap);
    assert!(!pfc.is_empty(), "the incast pauses its clients");
    assert_eq!(pfc.len() as u64, stat(&v, "net.pfc.frames"));
    assert_eq!(stat(&v, "net.switch_drops"), 0);
    // Each paused port gets an XOFF of priority 3 (the default RoCE class), then its XON.
    let mut xoffs = 0;
    let mut standing = std::collections::BTreeMap::new();
    for r in &pfc {
        let enabled: Vec<usize> = (0..8).filter(|&i| r.quanta[i].is_some()).collect();
        assert_eq!(enabled, [3], "only the RoCE priority: {r:?}");
        match r.quanta[3] {
            Some(XOFF_QUANTA) => {
                xoffs += 1;
                assert_ne!(standing.insert(r.src, ()), Some(()), "XOFF twice: {r:?}");
            }
            Some(0) => assert!(standing.remove(&r.src).is_some(), "XON unpaused: {r:?}"),
            q => panic!("pause time {q:?} is neither XOFF nor XON"),
        }
    }
    assert_eq!(xoffs, stat(&v, "net.pfc.pauses"));
    assert!(standing.is_empty(), "every pause was resumed");
    // Same seed, same capture.
    let (again, _) = incast(&dir, "b", &["--set", "net.pfc=true"]);
    assert!(
        pcap == again,
        "the capture differs between two runs of one seed"
    );

    if external_tool("tshark", &["--version"]) {
        let rows = crate::common::tshark_rows(
            &dir.join("a.pcap"),
            &[
                "-Y",
                "macc.opcode == 0x0101",
                "-T",
                "fields",
                "-E",
                "separator=|",
                "-e",
                "macc.cbfc.enbv",
                "-e",
                "macc.cbfc.pause_time.c3",
                "-e",
                "_ws.malformed",
            ],
        );
        assert_eq!(rows.len(), pfc.len(), "tshark's PFC frames");
        for (row, r) in rows.iter().zip(&pfc) {
            let want = format!("0x0008|{}|", r.quanta[3].unwrap());
            assert_eq!(*row, want, "tshark decodes {r:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_roce_priority_is_configurable() {
    let dir = scratch("priority");
    let (pcap, _) = incast(
        &dir,
        "p5",
        &["--set", "net.pfc=true", "--set", "net.pfc_priority=5"],
    );
    let pfc = pfc_frames(&pcap);
    assert!(!pfc.is_empty());
    for r in &pfc {
        assert!(r.quanta[5].is_some() && r.quanta[3].is_none(), "{r:?}");
    }
    // Without flow control there is none.
    let (pcap, _) = incast(&dir, "off", &[]);
    assert!(pfc_frames(&pcap).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A switch of a topology file takes its buffer from its own `buffer_bytes`: when it
/// drops frames with flow control on, the note names that field, the one that changes the
/// run, not `net.switch_buffer_bytes`, which that switch does not read.
#[test]
fn drops_under_flow_control_name_the_buffer_that_dropped_them() {
    let dir = scratch("topology-buffer");
    let topo = dir.join("one-switch.toml");
    std::fs::write(
        &topo,
        "[[switch]]\nname = \"s\"\nbuffer_bytes = 300000\n\
         [[link]]\nends = [\"node0\", \"s\"]\n\
         [[link]]\nends = [\"node1\", \"s\"]\n\
         [[link]]\nends = [\"node2\", \"s\"]\n",
    )
    .unwrap();
    let topology = format!("net.topology={}", topo.display());
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(["perf", "write-bw", "-s", "65536", "-n", "50", "-q", "2"])
        .args(["--clients", "2", "--reversed", "--set", "net.pfc=true"])
        .args(["--set", &topology])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let note = err
        .lines()
        .find(|l| l.contains("switches dropped"))
        .unwrap_or_else(|| panic!("no drop note: {err}"));
    assert!(
        note.contains("switch[0] (\"s\").buffer_bytes"),
        "the note names the file's field: {note}"
    );
    assert!(
        !note.contains("raise net.switch_buffer_bytes"),
        "the star's field does not set this switch's buffer: {note}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
