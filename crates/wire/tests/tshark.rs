//! An independent judge: tshark decodes a pcap of one frame per opcode. Skipped (passes with a
//! note) when tshark is not installed.

mod common;

use std::process::Command;

use rnic_wire::{Opcode, PcapWriter};

#[test]
fn tshark_decodes_every_opcode() {
    if Command::new("tshark").arg("--version").output().is_err() {
        let required = std::env::var_os("RNIC_REQUIRE_EXTERNAL_TOOLS").is_some_and(|v| v == "1")
            || std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
        assert!(
            !required,
            "tshark is required here: run scripts/install-test-deps.sh"
        );
        eprintln!("tshark not installed; skipping (scripts/install-test-deps.sh installs it)");
        return;
    }
    let path = std::env::temp_dir().join(format!("rnic-wire-{}.pcap", std::process::id()));
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (i, op) in Opcode::ALL.iter().enumerate() {
        w.write_packet(i as u64 * 1_500_000, &common::frame(*op, &[0x5A; 37]))
            .unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let fields = [
        "frame.time_epoch",
        "ip.checksum.status",
        "udp.dstport",
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
        "infiniband.bth.padcnt",
        "infiniband.reth.va",
        "infiniband.aeth.msn",
    ];
    let mut cmd = Command::new("tshark");
    cmd.args(["-r", path.to_str().unwrap(), "-o", "ip.check_checksum:TRUE"]);
    cmd.args([
        "--disable-protocol",
        "rpcordma",
        "-T",
        "fields",
        "-E",
        "separator=,",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_file(&path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), Opcode::ALL.len(), "{text}");
    for (i, (line, op)) in lines.iter().zip(Opcode::ALL).enumerate() {
        let cols: Vec<&str> = line.split(',').collect();
        let time_ns = (i as u64) * 1_500;
        assert!(cols[0].ends_with(&format!("{:09}", time_ns)), "{line}");
        assert_eq!(cols[1], "1", "IPv4 checksum good (1): {line}");
        assert_eq!(cols[2], "4791");
        assert_eq!(cols[3], op.as_u8().to_string(), "{line}");
        assert_eq!(cols[4], "0x000011", "{line}");
        assert_eq!(cols[5], "256", "{line}");
        let pad = if op.has_payload() { "3" } else { "0" };
        assert_eq!(cols[6], pad, "{line}");
        if op.has_reth() {
            assert_eq!(cols[7], "0x0000000000001000", "{line}");
        }
        if op.has_aeth() {
            assert_eq!(cols[8], "3", "{line}");
        }
    }
}
