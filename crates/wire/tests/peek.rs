//! `peek_roce`: the headers of every opcode family from emitted frames, agreement with
//! `FrameRepr::parse`, and errors (never panics) for truncated and inconsistent frames.

mod common;

use common::{frame, refresh, roce, ADDR};
use rnic_wire::*;

/// What `FrameRepr::parse` says `peek_roce` must return; the payload offset is found from where
/// the parsed payload slice lies in the frame, independently of `peek_roce`'s arithmetic.
fn expected(f: &[u8]) -> RoceHeaders {
    let r = FrameRepr::parse(f).expect("valid frame");
    RoceHeaders {
        dst_mac: r.addr.dst_mac,
        dst_ip: r.addr.dst_ip,
        udp_src_port: r.addr.udp_src_port,
        bth: r.roce.bth,
        reth: r.roce.reth,
        atomic_eth: r.roce.atomic_eth,
        aeth: r.roce.aeth,
        payload_offset: r.roce.payload.as_ptr() as usize - f.as_ptr() as usize,
        payload_len: r.roce.payload.len(),
    }
}

const RETH: RethRepr = RethRepr {
    va: 0x1000,
    rkey: 0x77,
    dma_len: 8192,
};
const ACK: AethRepr = AethRepr {
    syndrome: AethSyndrome::Ack {
        credits: CREDITS_UNLIMITED,
    },
    msn: 3,
};

#[test]
fn write_first_has_reth_and_payload() {
    let payload: Vec<u8> = (0..12).collect();
    let f = frame(Opcode::RcWriteFirst, &payload);
    let h = peek_roce(&f).unwrap();
    assert_eq!(h.bth, roce(Opcode::RcWriteFirst, &payload).bth);
    assert_eq!(h.reth, Some(RETH));
    assert_eq!((h.atomic_eth, h.aeth), (None, None));
    assert_eq!(
        (h.payload_offset, h.payload_len),
        (14 + 20 + 8 + 12 + 16, 12)
    );
    assert_eq!(&f[h.payload_range()], &payload[..]);
    assert_eq!(
        (h.dst_mac, h.dst_ip, h.udp_src_port),
        (ADDR.dst_mac, ADDR.dst_ip, ADDR.udp_src_port)
    );
    assert_eq!(h, expected(&f));
}

#[test]
fn read_request_has_reth_and_no_payload() {
    let f = frame(Opcode::RcReadRequest, &[]);
    let h = peek_roce(&f).unwrap();
    assert_eq!(h.reth, Some(RETH));
    assert_eq!((h.payload_offset, h.payload_len), (70, 0));
    assert!(h.payload_range().is_empty());
}

#[test]
fn atomics_have_atomic_eth() {
    for op in [Opcode::RcCompareSwap, Opcode::RcFetchAdd] {
        let h = peek_roce(&frame(op, &[])).unwrap();
        let a = h.atomic_eth.expect("AtomicETH");
        assert_eq!((a.va, a.rkey, a.swap_add, a.compare), (0x2000, 0x78, 5, 6));
        assert_eq!((h.reth, h.aeth), (None, None));
        assert_eq!((h.payload_offset, h.payload_len), (54 + 28, 0));
    }
}

#[test]
fn acks_and_read_responses_have_aeth() {
    let h = peek_roce(&frame(Opcode::RcAck, &[])).unwrap();
    assert_eq!(h.aeth, Some(ACK));
    assert_eq!((h.payload_offset, h.payload_len), (58, 0));

    let h = peek_roce(&frame(Opcode::RcAtomicAck, &[])).unwrap();
    assert_eq!(h.aeth, Some(ACK));
    assert_eq!(h.payload_len, 0);

    let f = frame(Opcode::RcReadResponseFirst, &[7; 256]);
    let h = peek_roce(&f).unwrap();
    assert_eq!(h.aeth, Some(ACK));
    assert_eq!((h.payload_offset, h.payload_len), (58, 256));

    let h = peek_roce(&frame(Opcode::RcReadResponseMiddle, &[7; 256])).unwrap();
    assert_eq!((h.aeth, h.payload_offset), (None, 54));
}

#[test]
fn send_only_imm_payload_excludes_immdt_and_pad() {
    let f = frame(Opcode::RcSendOnlyImm, b"hello");
    let h = peek_roce(&f).unwrap();
    assert_eq!(h.bth.pad_count, 3);
    assert_eq!((h.payload_offset, h.payload_len), (54 + 4, 5));
    assert_eq!(&f[h.payload_range()], b"hello");
    assert_eq!((h.reth, h.atomic_eth, h.aeth), (None, None, None));
}

#[test]
fn every_opcode_agrees_with_parse_with_and_without_ethernet_padding() {
    let payload: Vec<u8> = (0..1027u32).map(|i| i as u8).collect();
    for op in Opcode::ALL {
        let mut f = frame(op, &payload);
        assert_eq!(peek_roce(&f), Ok(expected(&f)), "{op:?}");
        assert_eq!(peek_roce(&f).unwrap().bth, peek_bth(&f).unwrap());
        let h = peek_roce(&f).unwrap();
        f.resize(f.len().max(64) + 3, 0xAA);
        assert_eq!(peek_roce(&f), Ok(h), "{op:?} padded");
    }
}

#[test]
fn every_prefix_is_an_error() {
    for op in [Opcode::RcWriteFirst, Opcode::RcCompareSwap, Opcode::RcAck] {
        let f = frame(op, &[9; 12]);
        for n in 0..f.len() {
            assert!(peek_roce(&f[..n]).is_err(), "{op:?} prefix {n}");
        }
    }
    let f = frame(Opcode::RcWriteFirst, &[9; 12]);
    assert!(matches!(
        peek_roce(&f[..13]),
        Err(WireError::Truncated {
            layer: "ethernet",
            ..
        })
    ));
    assert!(matches!(
        peek_roce(&f[..f.len() - 1]),
        Err(WireError::LengthMismatch {
            layer: "ipv4",
            field: "total_length",
            ..
        })
    ));
}

/// A frame whose IP total length and UDP length say `ip_total` bytes, checksums refreshed.
fn with_ip_total(mut f: Vec<u8>, ip_total: u16) -> Vec<u8> {
    f[16..18].copy_from_slice(&ip_total.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_total - 20).to_be_bytes());
    ipv4::Packet::new_unchecked(&mut f[14..]).fill_checksum();
    f
}

#[test]
fn inconsistent_lengths_are_errors() {
    // IP total length shorter than the RETH needs: the extension header is cut.
    let f = with_ip_total(frame(Opcode::RcWriteFirst, &[]), 20 + 8 + 12 + 8 + 4);
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::Truncated { layer: "reth", .. })
    ));
    // Too short for a BTH and an ICRC.
    let f = with_ip_total(frame(Opcode::RcSendOnly, &[]), 20 + 8 + 12);
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::Truncated { layer: "icrc", .. })
    ));
    // Shorter than the IP and UDP headers.
    let mut f = frame(Opcode::RcSendOnly, &[]);
    f[16..18].copy_from_slice(&10u16.to_be_bytes());
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::LengthMismatch { stated: 10, .. })
    ));
    // UDP length disagreeing with the IP payload.
    let mut f = frame(Opcode::RcSendOnly, &[0; 8]);
    f[39] -= 4;
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::LengthMismatch { layer: "udp", .. })
    ));
    // Payload + pad not whole words, and a pad larger than the payload.
    let mut f = frame(Opcode::RcSendOnly, &[1, 2, 3, 4]);
    f.insert(58, 5);
    refresh(&mut f);
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::BadPadCount { pad: 0, .. })
    ));
    let mut f = frame(Opcode::RcSendOnly, &[]);
    f[43] |= 0x30;
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::BadPadCount { pad: 3, .. })
    ));
    // Payload on an opcode that carries none.
    let mut f = frame(Opcode::RcAck, &[]);
    f.splice(58..58, [0u8; 4]);
    refresh(&mut f);
    assert!(matches!(
        peek_roce(&f),
        Err(WireError::BadField {
            field: "payload_len",
            ..
        })
    ));
}

#[test]
fn foreign_and_bad_headers_are_errors() {
    let good = frame(Opcode::RcAck, &[]);
    let cases: [(usize, u8, WireError); 5] = [
        (12, 0x86, WireError::NotIpv4 { ethertype: 0x86dd }),
        (14, 0x46, WireError::BadIpHeaderLen(6)),
        (23, 6, WireError::NotUdp { protocol: 6 }),
        (42, 0x15, WireError::UnknownOpcode(0x15)),
        (
            54,
            0x40,
            WireError::BadField {
                layer: "aeth",
                field: "syndrome",
                value: 0x40,
            },
        ),
    ];
    for (at, value, err) in cases {
        let mut f = good.clone();
        f[at] = value;
        if at == 12 {
            f[13] = 0xdd;
        }
        assert_eq!(peek_roce(&f), Err(err), "byte {at}");
    }
    let mut f = good;
    f[36..38].copy_from_slice(&4792u16.to_be_bytes());
    assert_eq!(peek_roce(&f), Err(WireError::NotRoce { dst_port: 4792 }));
}

#[test]
fn checksums_are_not_verified() {
    let good = frame(Opcode::RcWriteOnly, &[3; 64]);
    let h = peek_roce(&good).unwrap();
    let mut f = good.clone();
    f[70] ^= 0xFF; // a payload byte: the ICRC no longer matches
    assert!(matches!(
        FrameRepr::parse(&f),
        Err(WireError::BadIcrc { .. })
    ));
    assert_eq!(peek_roce(&f), Ok(h));
    let mut f = good;
    f[22] -= 1; // TTL changed, IP checksum not
    assert_eq!(FrameRepr::parse(&f), Err(WireError::BadIpChecksum));
    assert_eq!(peek_roce(&f), Ok(h));
}
