//! Property tests: emit→parse round trips for every opcode, and no panics on hostile bytes.

mod common;

use proptest::prelude::*;
use rnic_wire::*;

/// Owned inputs for one frame; `repr()` borrows the payload.
#[derive(Debug, Clone)]
struct Case {
    addr: FrameAddr,
    ip_ident: u16,
    bth: BthRepr,
    deth: DethRepr,
    reth: RethRepr,
    atomic_eth: AtomicEthRepr,
    aeth: AethRepr,
    atomic_ack: AtomicAckEthRepr,
    ooo_ack: OooAckEthRepr,
    imm: u32,
    ieth: u32,
    payload: Vec<u8>,
}

impl Case {
    fn repr(&self) -> FrameRepr<'_> {
        let op = self.bth.opcode;
        let payload: &[u8] = if op.has_payload() { &self.payload } else { &[] };
        FrameRepr {
            addr: self.addr,
            ip_ident: self.ip_ident,
            roce: RoceRepr::new(
                BthRepr {
                    pad_count: pad_len(payload.len()) as u8,
                    ..self.bth
                },
                payload,
            )
            .with_deth(op.has_deth().then_some(self.deth))
            .with_reth(op.has_reth().then_some(self.reth))
            .with_atomic_eth(op.has_atomic_eth().then_some(self.atomic_eth))
            .with_aeth(op.has_aeth().then_some(self.aeth))
            .with_atomic_ack(op.has_atomic_ack_eth().then_some(self.atomic_ack))
            .with_imm(op.has_immdt().then_some(self.imm))
            .with_ieth(op.has_ieth().then_some(self.ieth))
            .with_ooo_ack(op.has_ooo_ack_eth().then_some(self.ooo_ack)),
        }
    }

    fn frame(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.repr().emit(&mut buf);
        buf
    }
}

const U24: core::ops::Range<u32> = 0..0x100_0000;

fn addr() -> impl Strategy<Value = FrameAddr> {
    (
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        any::<[u8; 4]>(),
        any::<[u8; 4]>(),
        any::<u16>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(
            |(src_mac, dst_mac, src_ip, dst_ip, udp_src_port, dscp_ecn, ttl)| FrameAddr {
                src_mac,
                dst_mac,
                src_ip,
                dst_ip,
                udp_src_port,
                dscp_ecn,
                ttl,
            },
        )
}

fn bth() -> impl Strategy<Value = BthRepr> {
    let flags = (
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    );
    (
        prop::sample::select(&Opcode::ALL[..]),
        flags,
        any::<u16>(),
        U24,
        U24,
    )
        .prop_map(
            |(opcode, (solicited, mig_req, fecn, becn, ack_req), pkey, dest_qp, psn)| BthRepr {
                opcode,
                solicited,
                mig_req,
                pad_count: 0,
                tver: 0,
                pkey,
                fecn,
                becn,
                dest_qp,
                ack_req,
                psn,
            },
        )
}

fn aeth() -> impl Strategy<Value = AethRepr> {
    let nak = prop::sample::select(vec![
        NakCode::PsnSequenceError,
        NakCode::InvalidRequest,
        NakCode::RemoteAccessError,
        NakCode::RemoteOperationalError,
        NakCode::InvalidRdRequest,
    ]);
    let syndrome = prop_oneof![
        (0..32u8).prop_map(|credits| AethSyndrome::Ack { credits }),
        (0..32u8).prop_map(|timer| AethSyndrome::RnrNak { timer }),
        nak.prop_map(AethSyndrome::Nak),
    ];
    (syndrome, U24).prop_map(|(syndrome, msn)| AethRepr { syndrome, msn })
}

fn case() -> impl Strategy<Value = Case> {
    let ext = (
        (any::<u32>(), U24).prop_map(|(qkey, src_qp)| DethRepr { qkey, src_qp }),
        any::<(u64, u32, u32)>().prop_map(|(va, rkey, dma_len)| RethRepr { va, rkey, dma_len }),
        any::<(u64, u32, u64, u64)>().prop_map(|(va, rkey, swap_add, compare)| AtomicEthRepr {
            va,
            rkey,
            swap_add,
            compare,
        }),
        aeth(),
        (
            any::<u64>().prop_map(|orig| AtomicAckEthRepr { orig }),
            any::<(bool, u64)>().prop_map(|(start_learnt, bitmap)| OooAckEthRepr {
                start_learnt,
                bitmap,
            }),
        ),
        any::<(u32, u32)>(),
    );
    let payload = prop::collection::vec(any::<u8>(), 0..=4096);
    (addr(), any::<u16>(), bth(), ext, payload).prop_map(
        |(
            addr,
            ip_ident,
            bth,
            (deth, reth, atomic_eth, aeth, (atomic_ack, ooo_ack), (imm, ieth)),
            payload,
        )| Case {
            addr,
            ip_ident,
            bth,
            deth,
            reth,
            atomic_eth,
            aeth,
            atomic_ack,
            ooo_ack,
            imm,
            ieth,
            payload,
        },
    )
}

/// `peek_roce` accepts what `FrameRepr::parse` accepts, with the same headers, and rejects
/// what it rejects for any reason but the two checksums it does not verify.
fn peek_agrees_with_parse(bytes: &[u8]) -> core::result::Result<(), TestCaseError> {
    match (FrameRepr::parse(bytes), peek_roce(bytes)) {
        (Ok(r), Ok(h)) => {
            prop_assert_eq!(h.bth, r.roce.bth);
            prop_assert_eq!(
                (h.reth, h.atomic_eth, h.aeth),
                (r.roce.reth, r.roce.atomic_eth, r.roce.aeth)
            );
            prop_assert_eq!(
                (h.dst_mac, h.dst_ip, h.udp_src_port),
                (r.addr.dst_mac, r.addr.dst_ip, r.addr.udp_src_port)
            );
            prop_assert_eq!(&bytes[h.payload_range()], r.roce.payload);
        }
        (Err(WireError::BadIcrc { .. } | WireError::BadIpChecksum), _) => {}
        (Err(e), h) => prop_assert_eq!(h, Err(e)),
        (Ok(_), Err(e)) => prop_assert!(false, "peek_roce rejects a valid frame: {}", e),
    }
    Ok(())
}

/// Exercises every entry point on `bytes`; each must return, never panic.
fn poke(bytes: &[u8]) {
    let _ = FrameRepr::parse(bytes);
    let _ = peek_bth(bytes);
    let _ = peek_roce(bytes);
    let _ = icrc::verify(bytes);
    if let Ok(p) = bth::Packet::new_checked(bytes) {
        let _ = BthRepr::parse(&p);
    }
    if let Ok(p) = aeth::Packet::new_checked(bytes) {
        let _ = AethRepr::parse(&p);
    }
    if let Ok(p) = ipv4::Packet::new_checked(bytes) {
        let _ = Ipv4Repr::parse(&p);
        let _ = p.payload();
    }
    if let Ok(p) = udp::Packet::new_checked(bytes) {
        let _ = UdpRepr::parse(&p);
        let _ = p.payload();
    }
}

proptest! {
    #[test]
    fn emit_then_parse_is_identity(c in case()) {
        let repr = c.repr();
        let f = c.frame();
        prop_assert_eq!(f.len(), repr.buffer_len());
        prop_assert_eq!(FrameRepr::parse(&f), Ok(repr));
        prop_assert_eq!(peek_bth(&f), Ok(repr.roce.bth));
        peek_agrees_with_parse(&f)?;
        prop_assert_eq!(f.len() % 2, 0);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        poke(&bytes);
    }

    #[test]
    fn mutated_frames_never_panic(
        c in case(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        do_cut in any::<bool>(),
    ) {
        let mut f = c.frame();
        for (i, v) in edits {
            let at = i.index(f.len());
            f[at] = v;
        }
        if do_cut {
            f.truncate(cut.index(f.len() + 1));
        }
        poke(&f);
        peek_agrees_with_parse(&f)?;
        // Also with lengths and checksums made consistent again, to reach the deeper checks.
        if f.len() >= 62 {
            let mut g = f.clone();
            g[14] = 0x45;
            common::refresh(&mut g);
            poke(&g);
            peek_agrees_with_parse(&g)?;
        }
    }

    /// Every byte after the IP header is protected: by the UDP port/length checks or the ICRC.
    /// Exceptions by design: the UDP checksum (ignored, may be anything) and BTH byte 4
    /// (FECN/BECN, which switches rewrite and the ICRC therefore masks).
    #[test]
    fn single_byte_flip_after_ip_header_is_detected(
        c in case(),
        at in any::<prop::sample::Index>(),
        xor in 1..=255u8,
    ) {
        let mut f = c.frame();
        let offsets: Vec<usize> = (34..f.len()).filter(|o| ![40, 41, 46].contains(o)).collect();
        let o = offsets[at.index(offsets.len())];
        f[o] ^= xor;
        prop_assert!(FrameRepr::parse(&f).is_err(), "flip at {} xor {:#x} accepted", o, xor);
    }
}
