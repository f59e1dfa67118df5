//! Whole-frame parse/emit: hand-checked layouts and every rejection path.

mod common;

use common::{frame, refresh, refresh_icrc, roce, ADDR};
use rnic_wire::*;

#[test]
fn send_only_layout_by_hand() {
    // RC SEND ONLY, 5 payload bytes -> pad 3; bytes after the UDP header written out by hand.
    let f = frame(Opcode::RcSendOnly, b"hello");
    assert_eq!(f.len(), 14 + 20 + 8 + 12 + 5 + 3 + 4);
    assert_eq!(&f[12..14], &[0x08, 0x00]);
    assert_eq!(
        &f[14..24],
        &[0x45, 0x68, 0x00, 0x34, 0x00, 0x07, 0x40, 0x00, 0x40, 0x11]
    );
    assert_eq!(
        &f[34..42],
        &[0xc1, 0x23, 0x12, 0xb7, 0x00, 0x20, 0x00, 0x00]
    );
    #[rustfmt::skip]
    let transport = [
        0x04, 0x70, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x01, 0x00, // BTH
        b'h', b'e', b'l', b'l', b'o', 0, 0, 0, // payload + pad
    ];
    assert_eq!(&f[42..62], &transport);
    assert_eq!(icrc::verify(&f), Ok(()));
    assert!(ipv4::Packet::new_unchecked(&f[14..]).verify_checksum());
}

#[test]
fn write_only_imm_header_order() {
    let f = frame(Opcode::RcWriteOnlyImm, &[1, 2, 3, 4]);
    // BTH, then RETH (va 0x1000, rkey 0x77, len 8192), then ImmDt, then payload.
    assert_eq!(&f[54..62], &[0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(&f[62..70], &[0, 0, 0, 0x77, 0, 0, 0x20, 0]);
    assert_eq!(&f[70..74], &[0xab, 0xcd, 0x01, 0x23]);
    assert_eq!(&f[74..78], &[1, 2, 3, 4]);
    assert_eq!(f.len(), 82);
}

#[test]
fn atomic_ack_header_order() {
    let f = frame(Opcode::RcAtomicAck, &[]);
    assert_eq!(&f[54..58], &[0x1f, 0, 0, 3]); // AETH
    assert_eq!(&f[58..66], &[0, 0, 0, 0, 0, 0, 0, 42]); // AtomicAckETH
    assert_eq!(f.len(), 70);
}

#[test]
fn every_opcode_round_trips_and_peeks() {
    let payload: Vec<u8> = (0..1027u32).map(|i| i as u8).collect();
    for op in Opcode::ALL {
        let f = frame(op, &payload);
        let parsed = FrameRepr::parse(&f).unwrap_or_else(|e| panic!("{op:?}: {e}"));
        assert_eq!(parsed.roce, roce(op, &payload), "{op:?}");
        assert_eq!(parsed.addr, ADDR);
        assert_eq!(peek_bth(&f), Ok(parsed.roce.bth));
        assert_eq!(
            f.len(),
            FrameRepr {
                addr: ADDR,
                ip_ident: 7,
                roce: roce(op, &payload)
            }
            .buffer_len()
        );
    }
}

#[test]
fn ethernet_minimum_frame_padding_is_ignored() {
    let mut f = frame(Opcode::RcAck, &[]);
    assert_eq!(f.len(), 62);
    f.resize(64, 0xAA);
    assert_eq!(FrameRepr::parse(&f).unwrap().roce, roce(Opcode::RcAck, &[]));
}

#[test]
fn every_prefix_is_rejected() {
    let f = frame(Opcode::RcWriteFirst, &[9; 12]);
    for n in 0..f.len() {
        assert!(FrameRepr::parse(&f[..n]).is_err(), "prefix {n}");
    }
    assert!(matches!(
        FrameRepr::parse(&f[..13]),
        Err(WireError::Truncated {
            layer: "ethernet",
            ..
        })
    ));
    assert!(matches!(
        FrameRepr::parse(&f[..30]),
        Err(WireError::Truncated { layer: "ipv4", .. })
    ));
    assert!(matches!(
        FrameRepr::parse(&f[..f.len() - 1]),
        Err(WireError::LengthMismatch {
            layer: "ipv4",
            field: "total_length",
            ..
        })
    ));
}

#[test]
fn network_layer_rejections() {
    let good = frame(Opcode::RcSendOnly, &[0; 8]);
    let mut f = good.clone();
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::NotIpv4 { ethertype: 0x86dd })
    );

    let mut f = good.clone();
    f[23] = 6;
    refresh(&mut f);
    assert_eq!(FrameRepr::parse(&f), Err(WireError::NotUdp { protocol: 6 }));

    let mut f = good.clone();
    f[36..38].copy_from_slice(&4792u16.to_be_bytes());
    refresh(&mut f);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::NotRoce { dst_port: 4792 })
    );

    let mut f = good.clone();
    f[39] -= 4; // UDP length shorter than the IP payload
    refresh_icrc(&mut f);
    assert!(matches!(
        FrameRepr::parse(&f),
        Err(WireError::LengthMismatch {
            layer: "udp",
            field: "length",
            ..
        })
    ));

    let mut f = good.clone();
    f[14] = 0x46;
    assert_eq!(FrameRepr::parse(&f), Err(WireError::BadIpHeaderLen(6)));
    let mut f = good.clone();
    f[22] = 1; // TTL changed, checksum not
    assert_eq!(FrameRepr::parse(&f), Err(WireError::BadIpChecksum));
    let mut f = good;
    let n = f.len();
    f[n - 1] ^= 0x80;
    assert!(matches!(
        FrameRepr::parse(&f),
        Err(WireError::BadIcrc { .. })
    ));
}

#[test]
fn transport_rejections() {
    let mut f = frame(Opcode::RcSendOnly, &[0; 8]);
    f[42] = 0x15;
    refresh_icrc(&mut f);
    assert_eq!(FrameRepr::parse(&f), Err(WireError::UnknownOpcode(0x15)));
    assert_eq!(peek_bth(&f), Err(WireError::UnknownOpcode(0x15)));

    let mut f = frame(Opcode::RcSendOnly, &[0; 8]);
    f[43] |= 0x02;
    refresh_icrc(&mut f);
    assert_eq!(FrameRepr::parse(&f), Err(WireError::BadTransportVersion(2)));

    // Pad larger than a payload region of 0 bytes.
    let mut f = frame(Opcode::RcSendOnly, &[]);
    f[43] |= 0x30;
    refresh_icrc(&mut f);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::BadPadCount {
            opcode: 0x04,
            pad: 3
        })
    );

    // Payload + pad not a multiple of 4.
    let mut f = frame(Opcode::RcSendOnly, &[1, 2, 3, 4]);
    f.insert(58, 5);
    refresh(&mut f);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::BadPadCount {
            opcode: 0x04,
            pad: 0
        })
    );

    // Missing extension header: a WRITE FIRST cut right after its BTH.
    let mut f = frame(Opcode::RcWriteFirst, &[]);
    f.drain(54..66);
    refresh(&mut f);
    assert!(matches!(
        FrameRepr::parse(&f),
        Err(WireError::Truncated { layer: "reth", .. })
    ));
}

#[test]
fn payload_where_none_is_allowed() {
    for op in [
        Opcode::RcAck,
        Opcode::RcReadRequest,
        Opcode::RcCompareSwap,
        Opcode::RcAtomicAck,
        Opcode::Cnp,
    ] {
        let mut f = frame(op, &[]);
        let at = f.len() - 4;
        f.splice(at..at, [1, 2, 3, 4]);
        refresh(&mut f);
        assert_eq!(
            FrameRepr::parse(&f),
            Err(WireError::BadField {
                layer: "roce",
                field: "payload_len",
                value: 4
            }),
            "{op:?}"
        );
        let mut f = frame(op, &[]);
        f[43] |= 0x10;
        refresh_icrc(&mut f);
        assert_eq!(
            FrameRepr::parse(&f),
            Err(WireError::BadPadCount {
                opcode: op.as_u8(),
                pad: 1
            })
        );
    }
}

#[test]
fn reserved_aeth_syndrome() {
    let mut f = frame(Opcode::RcAck, &[]);
    f[54] = 0x40;
    refresh_icrc(&mut f);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::BadField {
            layer: "aeth",
            field: "syndrome",
            value: 0x40
        })
    );
}

#[test]
fn peek_bth_checks() {
    let f = frame(Opcode::RcReadRequest, &[]);
    assert_eq!(peek_bth(&f).unwrap().opcode, Opcode::RcReadRequest);
    assert!(matches!(
        peek_bth(&f[..53]),
        Err(WireError::Truncated {
            layer: "bth",
            need: 54,
            have: 53
        })
    ));
    let mut g = f.clone();
    g[37] = 0xb8;
    assert_eq!(peek_bth(&g), Err(WireError::NotRoce { dst_port: 4792 }));
    let mut g = f;
    g[23] = 6;
    assert_eq!(peek_bth(&g), Err(WireError::NotUdp { protocol: 6 }));
}

#[test]
fn emit_masks_out_of_range_fields_and_overrides_pad() {
    let payload = [7u8; 3];
    let mut r = roce(Opcode::UcSendOnly, &payload);
    r.bth.pad_count = 0;
    r.bth.psn = 0x0100_0005;
    let mut buf = vec![0xEE; 3];
    FrameRepr {
        addr: ADDR,
        ip_ident: 0,
        roce: r,
    }
    .emit(&mut buf);
    let p = FrameRepr::parse(&buf).unwrap();
    assert_eq!((p.roce.bth.pad_count, p.roce.bth.psn), (1, 5));
}

#[test]
fn parse_on_port_reads_roce_sent_to_another_port() {
    // A sender that used port 4792: the ICRC covers the port, so it is computed with 4792.
    let mut f = frame(Opcode::RcWriteOnly, b"moved port");
    f[36..38].copy_from_slice(&4792u16.to_be_bytes());
    refresh_icrc(&mut f);
    assert_eq!(
        FrameRepr::parse(&f),
        Err(WireError::NotRoce { dst_port: 4792 })
    );
    let r = FrameRepr::parse_on_port(&f, 4792).unwrap();
    assert_eq!(r.roce.payload, b"moved port");
    assert_eq!(r.roce, roce(Opcode::RcWriteOnly, b"moved port"));
    // The same bytes relabelled without recomputing the ICRC fail it.
    let mut g = frame(Opcode::RcWriteOnly, b"moved port");
    g[36..38].copy_from_slice(&4792u16.to_be_bytes());
    assert!(matches!(
        FrameRepr::parse_on_port(&g, 4792),
        Err(WireError::BadIcrc { .. })
    ));
    assert_eq!(FrameRepr::parse_on_port(&f, 4791), FrameRepr::parse(&f));
}

#[test]
fn ooo_write_fspot_layout_by_hand() {
    // OOO WRITE FSpot (0xC0): BTH, then the RETH-like address (VA 0x1000, R_Key 0x77, WQE
    // length 8192), then the payload; Spot (0xC1) has no header between BTH and payload.
    let f = frame(Opcode::OooWriteFspot, &[1, 2, 3, 4]);
    assert_eq!(f[42], 0xC0);
    assert_eq!(&f[54..62], &[0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(&f[62..70], &[0, 0, 0, 0x77, 0, 0, 0x20, 0]);
    assert_eq!(&f[70..74], &[1, 2, 3, 4]);
    assert_eq!(icrc::verify(&f), Ok(()));
    let s = frame(Opcode::OooWriteSpot, &[1, 2, 3, 4]);
    assert_eq!(s[42], 0xC1);
    assert_eq!(&s[54..58], &[1, 2, 3, 4]);
    assert_eq!(s.len(), f.len() - 16);
    let last_frame = frame(Opcode::OooWriteLast, &[7; 8]);
    let last = FrameRepr::parse(&last_frame).unwrap();
    assert!(last.roce.bth.opcode.is_last() && last.roce.reth.is_none());
}

#[test]
fn ooo_nak_layout_by_hand() {
    // OOO NAK (0xC5): BTH (PSN = the first missing PSN), AETH, then the OOO ACK ETH: flags
    // (0x80 = start learnt), 3 reserved bytes, the 64-bit bitmap (PSNs 0x100, 0x102, 0x10F).
    #[rustfmt::skip]
    let transport = [
        0xC5, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x80, 0x00, 0x01, 0x00, // BTH
        0x1f, 0x00, 0x00, 0x03, // AETH (ACK syndrome of the common builder, MSN 3)
        0x80, 0x00, 0x00, 0x00, // flags + reserved
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x05, // bitmap
    ];
    let f = frame(Opcode::OooNak, &[]);
    assert_eq!(&f[42..70], &transport);
    assert_eq!(f.len(), 74);
    let parsed = FrameRepr::parse(&f).unwrap();
    assert_eq!(
        parsed.roce.ooo_ack,
        Some(OooAckEthRepr {
            start_learnt: true,
            bitmap: 0x8005
        })
    );
    // A NAK cut inside its bitmap is truncated, named by the header.
    let mut cut = f[..66].to_vec();
    cut.extend_from_slice(&[0; 4]);
    refresh(&mut cut);
    assert!(matches!(
        FrameRepr::parse(&cut),
        Err(WireError::Truncated {
            layer: "ooo_ack_eth",
            ..
        })
    ));
}
