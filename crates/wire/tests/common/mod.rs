//! Helpers shared by the integration tests: building frames of any opcode and patching them.
#![allow(dead_code)]

use rnic_wire::*;

pub const ADDR: FrameAddr = FrameAddr {
    src_mac: [0x02, 0, 0, 0, 0, 1],
    dst_mac: [0x02, 0, 0, 0, 0, 2],
    src_ip: [192, 168, 1, 1],
    dst_ip: [192, 168, 1, 2],
    udp_src_port: 0xC123,
    dscp_ecn: 0x68,
    ttl: 64,
};

/// A RoceRepr for `op` with every header the opcode needs filled with fixed values.
pub fn roce(op: Opcode, payload: &[u8]) -> RoceRepr<'_> {
    let payload = if op.has_payload() { payload } else { &[] };
    let bth = BthRepr {
        opcode: op,
        solicited: false,
        mig_req: true,
        pad_count: pad_len(payload.len()) as u8,
        tver: 0,
        pkey: 0xFFFF,
        fecn: false,
        becn: op == Opcode::Cnp,
        dest_qp: 0x11,
        ack_req: op.is_last() || op.is_only(),
        psn: 0x100,
    };
    RoceRepr::new(bth, payload)
        .with_deth(op.has_deth().then_some(DethRepr {
            qkey: 0x1111_1111,
            src_qp: 0x12,
        }))
        .with_reth(op.has_reth().then_some(RethRepr {
            va: 0x1000,
            rkey: 0x77,
            dma_len: 8192,
        }))
        .with_atomic_eth(op.has_atomic_eth().then_some(AtomicEthRepr {
            va: 0x2000,
            rkey: 0x78,
            swap_add: 5,
            compare: 6,
        }))
        .with_aeth(op.has_aeth().then_some(AethRepr {
            syndrome: AethSyndrome::Ack {
                credits: CREDITS_UNLIMITED,
            },
            msn: 3,
        }))
        .with_atomic_ack(
            op.has_atomic_ack_eth()
                .then_some(AtomicAckEthRepr { orig: 42 }),
        )
        .with_ooo_ack(op.has_ooo_ack_eth().then_some(OooAckEthRepr {
            start_learnt: true,
            bitmap: 0x0000_0000_0000_8005,
        }))
        .with_imm(op.has_immdt().then_some(0xabcd_0123))
        .with_ieth(op.has_ieth().then_some(0x99))
}

pub fn frame(op: Opcode, payload: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    FrameRepr {
        addr: ADDR,
        ip_ident: 7,
        roce: roce(op, payload),
    }
    .emit(&mut buf);
    buf
}

/// Rewrites IPv4 total length, IPv4 checksum, UDP length and ICRC after `f` was edited
/// (the frame is assumed to have no Ethernet padding).
pub fn refresh(f: &mut [u8]) {
    let ip_total = (f.len() - 14) as u16;
    f[16..18].copy_from_slice(&ip_total.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_total - 20).to_be_bytes());
    rnic_wire::ipv4::Packet::new_unchecked(&mut f[14..]).fill_checksum();
    refresh_icrc(f);
}

/// Recomputes the ICRC in place.
pub fn refresh_icrc(f: &mut [u8]) {
    let crc = icrc::compute(f).unwrap();
    let n = f.len();
    f[n - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// Whether tshark is here to judge; when it is not, the test passes with a note, unless
/// `RNIC_REQUIRE_EXTERNAL_TOOLS=1` or CI asks for it, where its absence fails the test.
pub fn tshark_available() -> bool {
    if std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok()
    {
        return true;
    }
    let required = std::env::var_os("RNIC_REQUIRE_EXTERNAL_TOOLS").is_some_and(|v| v == "1")
        || std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    assert!(
        !required,
        "tshark is required here: run scripts/install-test-deps.sh"
    );
    eprintln!("tshark not installed; skipping (scripts/install-test-deps.sh installs it)");
    false
}

/// Writes `frames` (each with its timestamp, ps) to a pcap named after `name`, has tshark
/// print `fields` of each frame separated by `sep` (after `args`), and returns its output,
/// one line per frame.
pub fn tshark_fields(
    name: &str,
    frames: &[(u64, Vec<u8>)],
    args: &[&str],
    fields: &[&str],
    sep: char,
) -> String {
    let path = std::env::temp_dir().join(format!("{name}-{}.pcap", std::process::id()));
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (at_ps, f) in frames {
        w.write_packet(*at_ps, f).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let mut cmd = std::process::Command::new("tshark");
    cmd.args(["-r", path.to_str().unwrap()]);
    cmd.args(args);
    cmd.args(["-T", "fields", "-E", &format!("separator={sep}")]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
