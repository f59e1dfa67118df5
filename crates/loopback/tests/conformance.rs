//! Acceptance 3: every opcode the transport produces (RC, UC and UD), judged by independent
//! tools.
//! tshark decodes each frame's opcode, QPN, PSN, RETH and AETH as we meant them, with nothing
//! malformed; scapy recomputes every ICRC. With RNIC_REQUIRE_EXTERNAL_TOOLS=1 or CI set, a
//! missing tool fails the test instead of skipping it.

use std::path::PathBuf;
use std::process::Command;

use rnic_loopback::conformance::{
    external_tool, run, ConformanceRun, RC_OPCODES, UD_QKEY, UNRELIABLE_OPCODES,
};

fn capture() -> (ConformanceRun, PathBuf) {
    let run = run(1).expect("scripted run completes as the spec says");
    let dir = std::env::temp_dir().join(format!("rnic-conformance-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("every_opcode.pcap");
    std::fs::write(&path, &run.pcap).unwrap();
    (run, path)
}

#[test]
fn the_run_covers_every_rc_opcode_and_every_nak() {
    let (run, _) = capture();
    let seen = run.opcodes();
    for op in RC_OPCODES.iter().chain(&UNRELIABLE_OPCODES) {
        assert!(seen.contains(&op.as_u8()), "opcode {op:?} never sent");
    }
    // ACK, RNR NAK, and NAK codes 0x60-0x63.
    let aeth: std::collections::BTreeSet<u8> = run
        .frames
        .iter()
        .filter_map(|f| f.aeth.map(|a| a.0))
        .collect();
    assert!(aeth.iter().any(|s| s & 0xe0 == 0x00), "no ACK");
    assert!(aeth.iter().any(|s| s & 0xe0 == 0x20), "no RNR NAK");
    for nak in [0x60, 0x61, 0x62, 0x63] {
        assert!(aeth.contains(&nak), "NAK {nak:#x} never sent: {aeth:x?}");
    }
}

fn num(s: &str) -> u64 {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap_or_else(|_| panic!("hex field {s}")),
        None => s.parse().unwrap_or_else(|_| panic!("decimal field {s}")),
    }
}

#[test]
fn tshark_decodes_every_frame_as_intended() {
    if !external_tool("tshark", &["--version"]) {
        return;
    }
    let (run, path) = capture();
    let fields = [
        "infiniband.bth.opcode",
        "infiniband.bth.destqp",
        "infiniband.bth.psn",
        "infiniband.reth.va",
        "infiniband.reth.r_key",
        "infiniband.reth.dmalen",
        "infiniband.aeth.syndrome",
        "infiniband.aeth.msn",
        "infiniband.atomiceth.swapdt",
        "infiniband.atomiceth.cmpdt",
        "infiniband.atomicacketh.origremdt",
        "_ws.malformed",
        "_ws.expert.severity",
        "infiniband.deth.q_key",
        "infiniband.deth.srcqp",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(&path).args([
        "--disable-protocol",
        "rpcordma",
        "-T",
        "fields",
        "-E",
        "separator=|",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark runs");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(
        rows.len(),
        run.frames.len(),
        "tshark saw a different number of frames"
    );
    for (i, (row, want)) in rows.iter().zip(&run.frames).enumerate() {
        let ctx = format!("frame {} ({want:?}): tshark row {row:?}", i + 1);
        assert_eq!(num(row[0]) as u8, want.opcode, "opcode, {ctx}");
        assert_eq!(num(row[1]) as u32, want.dest_qp, "dest QP, {ctx}");
        assert_eq!(num(row[2]) as u32, want.psn, "PSN, {ctx}");
        match (want.reth, want.atomic) {
            (Some((va, rkey, len)), _) => {
                assert_eq!(num(row[3]), va, "RETH VA, {ctx}");
                assert_eq!(num(row[4]) as u32, rkey, "RETH R_Key, {ctx}");
                assert_eq!(num(row[5]) as u32, len, "RETH DMA length, {ctx}");
            }
            // tshark shows the AtomicETH VA and R_Key under the RETH field names.
            (None, Some((va, rkey, swap, cmp))) => {
                assert_eq!(num(row[3]), va, "AtomicETH VA, {ctx}");
                assert_eq!(num(row[4]) as u32, rkey, "AtomicETH R_Key, {ctx}");
                assert_eq!(num(row[8]), swap, "AtomicETH swap/add, {ctx}");
                assert_eq!(num(row[9]), cmp, "AtomicETH compare, {ctx}");
            }
            (None, None) => assert!(row[3].is_empty(), "unexpected RETH, {ctx}"),
        }
        match want.atomic_orig {
            Some(orig) => assert_eq!(num(row[10]), orig, "AtomicAckETH, {ctx}"),
            None => assert!(row[10].is_empty(), "unexpected AtomicAckETH, {ctx}"),
        }
        match want.aeth {
            Some((syn, msn)) => {
                assert_eq!(num(row[6]) as u8, syn, "AETH syndrome, {ctx}");
                assert_eq!(num(row[7]) as u32, msn, "AETH MSN, {ctx}");
            }
            None => assert!(row[6].is_empty(), "unexpected AETH, {ctx}"),
        }
        match want.deth {
            Some((qkey, src_qp)) => {
                assert_eq!(num(row[13]) as u32, qkey, "DETH Q_Key, {ctx}");
                assert_eq!(num(row[14]) as u32, src_qp, "DETH source QP, {ctx}");
                assert_eq!(qkey, UD_QKEY, "{ctx}");
            }
            None => assert!(row[13].is_empty(), "unexpected DETH, {ctx}"),
        }
        assert!(
            row[11].is_empty(),
            "tshark marks the frame malformed, {ctx}"
        );
        // Expert severities are numeric: 0x00600000 is a warning, 0x00800000 an error.
        for sev in row[12].split(',').filter(|s| !s.is_empty()) {
            assert!(
                num(sev) < 0x0060_0000,
                "tshark expert warning/error {sev}, {ctx}"
            );
        }
    }
}

#[test]
fn scapy_finds_every_icrc_valid() {
    if !external_tool("python3", &["-c", "import scapy.contrib.roce"]) {
        return;
    }
    let (run, path) = capture();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/check_icrc.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "scapy: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("checked {} frames, 0 bad", run.frames.len())),
        "scapy checked a different number of frames: {text}"
    );
}
