//! An independent judge: tshark decodes a pcap of one frame per opcode. Skipped (passes with a
//! note) when tshark is not installed.

mod common;

use rnic_wire::Opcode;

#[test]
fn tshark_decodes_every_opcode() {
    if !common::tshark_available() {
        return;
    }
    let frames: Vec<(u64, Vec<u8>)> = Opcode::ALL
        .iter()
        .enumerate()
        .map(|(i, op)| (i as u64 * 1_500_000, common::frame(*op, &[0x5A; 37])))
        .collect();
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
        "infiniband.deth.q_key",
        "infiniband.deth.srcqp",
        "_ws.malformed",
    ];
    let text = common::tshark_fields(
        "rnic-wire",
        &frames,
        &[
            "-o",
            "ip.check_checksum:TRUE",
            "--disable-protocol",
            "rpcordma",
        ],
        &fields,
        ',',
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
        // tshark's InfiniBand dissector does not know the vendor opcodes (the out-of-order
        // WRITE's): it decodes their BTH and leaves the rest as data, without calling the
        // frame malformed.
        if op.has_reth() && !op.is_ooo() {
            assert_eq!(cols[7], "0x0000000000001000", "{line}");
        }
        if op.has_aeth() && !op.is_ooo() {
            assert_eq!(cols[8], "3", "{line}");
        }
        // UD SENDs: the DETH's Q_Key and source QP; nothing else has a DETH.
        if op.has_deth() {
            let qkey = u64::from_str_radix(cols[9].trim_start_matches("0x"), 16);
            assert_eq!(qkey, Ok(0x1111_1111), "{line}");
            let src_qp = u64::from_str_radix(cols[10].trim_start_matches("0x"), 16);
            assert_eq!(src_qp, Ok(0x12), "{line}");
        } else {
            assert_eq!(cols[9], "", "{line}");
        }
        assert_eq!(cols.get(11).copied().unwrap_or(""), "", "malformed: {line}");
    }
}
