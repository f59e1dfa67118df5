//! An independent judge for connection management: tshark decodes a REQ, REP and RTU that
//! rnic-wire built (each a CM MAD to QP1 over RoCEv2) as InfiniBand CM, with the QPNs and
//! starting PSNs where rnic put them and nothing malformed; rnic-wire parses its own frames
//! back (ICRC checked). Skipped (passes with a note) when tshark is not installed.

mod common;

use rnic_wire::cm::{cm_frame, ipv4_gid, parse_cm_frame, CmMessage, CmRep, CmRepr, CmReq, CmRtu};
use rnic_wire::FrameAddr;

fn messages() -> [CmRepr; 3] {
    let tid = 0x0000_0001_0000_0042;
    [
        CmRepr {
            transaction_id: tid,
            message: CmMessage::Req(CmReq {
                local_comm_id: 0x1111_2222,
                local_ca_guid: 0x0200_00ff_fe00_0001,
                local_qpn: 0x00_0123,
                responder_resources: 16,
                initiator_depth: 16,
                remote_cm_response_timeout: 20,
                starting_psn: 0xAB_CDEF,
                local_cm_response_timeout: 20,
                retry_count: 7,
                pkey: 0xFFFF,
                path_mtu: 5,
                rnr_retry_count: 7,
                max_cm_retries: 15,
                local_gid: ipv4_gid([10, 0, 0, 1]),
                remote_gid: ipv4_gid([10, 0, 0, 2]),
                hop_limit: 64,
                local_ack_timeout: 14,
                ..CmReq::default()
            }),
        },
        CmRepr {
            transaction_id: tid,
            message: CmMessage::Rep(CmRep {
                local_comm_id: 0x3333_4444,
                remote_comm_id: 0x1111_2222,
                local_qpn: 0x00_0456,
                starting_psn: 0x12_3456,
                responder_resources: 16,
                initiator_depth: 16,
                rnr_retry_count: 7,
                local_ca_guid: 0x0200_00ff_fe00_0002,
                ..CmRep::default()
            }),
        },
        CmRepr {
            transaction_id: tid,
            message: CmMessage::Rtu(CmRtu {
                local_comm_id: 0x1111_2222,
                remote_comm_id: 0x3333_4444,
            }),
        },
    ]
}

#[test]
fn tshark_decodes_req_rep_rtu_as_infiniband_cm() {
    let addr = |from: u8, to: u8| FrameAddr {
        src_mac: [2, 0, 0, 0, 0, from],
        dst_mac: [2, 0, 0, 0, 0, to],
        src_ip: [10, 0, 0, from],
        dst_ip: [10, 0, 0, to],
        udp_src_port: 0xC000,
        dscp_ecn: 0,
        ttl: 64,
    };
    let mut frames = Vec::new();
    for (i, m) in messages().iter().enumerate() {
        let (from, to) = if i == 1 { (2, 1) } else { (1, 2) };
        let mut b = Vec::new();
        cm_frame(addr(from, to), i as u16, i as u32, m, &mut b);
        assert_eq!(parse_cm_frame(&b).unwrap(), *m, "message {i}");
        frames.push(b);
    }
    if !common::tshark_available() {
        return;
    }
    let frames: Vec<(u64, Vec<u8>)> = frames
        .into_iter()
        .enumerate()
        .map(|(i, f)| (i as u64 * 1_000_000, f))
        .collect();
    let fields = [
        "_ws.col.Info",
        "infiniband.bth.destqp",
        "infiniband.cm.req.localqpn",
        "infiniband.cm.req.startpsn",
        "infiniband.cm.rep.localqpn",
        "infiniband.cm.rep.startpsn",
        "infiniband.cm.rtu.localcommid",
        "_ws.malformed",
    ];
    let text = common::tshark_fields("rnic-wire-cm", &frames, &[], &fields, '|');
    let lines: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0][0].contains("ConnectRequest"), "{text}");
    assert!(lines[1][0].contains("ConnectReply"), "{text}");
    assert!(lines[2][0].contains("ReadyToUse"), "{text}");
    for l in &lines {
        assert_eq!(l[1], "0x000001", "to QP1: {text}");
        assert_eq!(l[7], "", "malformed: {text}");
    }
    assert_eq!(
        (lines[0][2], lines[0][3]),
        ("0x000123", "0xabcdef"),
        "{text}"
    );
    assert_eq!(
        (lines[1][4], lines[1][5]),
        ("0x000456", "0x123456"),
        "{text}"
    );
    assert_eq!(lines[2][6], "0x11112222", "{text}");
}
