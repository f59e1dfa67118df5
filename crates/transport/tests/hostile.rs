//! Hostile but well-formed packets: no panic, no memory touched outside registered regions,
//! and the protocol answers as IB says.

mod common;

use common::script::*;
use common::*;
use proptest::prelude::*;
use rnic_transport::*;
use rnic_wire::*;

/// Memory that refuses (panics on) any access outside the allowed ranges.
struct GuardMem {
    inner: PageMem,
    allowed: Vec<(u64, u64)>,
}

impl GuardMem {
    fn check(&self, addr: u64, len: usize) {
        if len == 0 {
            return;
        }
        let end = addr.checked_add(len as u64).expect("range wraps");
        assert!(
            self.allowed.iter().any(|&(a, l)| addr >= a && end <= a + l),
            "access outside registered memory: {addr:#x}+{len}"
        );
    }
}

impl Memory for GuardMem {
    fn read(&self, addr: u64, out: &mut [u8]) {
        self.check(addr, out.len());
        self.inner.read(addr, out);
    }
    fn write(&mut self, addr: u64, data: &[u8]) {
        self.check(addr, data.len());
        self.inner.write(addr, data);
    }
}

const EPSN: u32 = 100; // B's expected PSN (QpParams::default().sq_psn_a)

#[test]
fn malformed_and_misaddressed_frames_are_dropped() {
    let mut p = Pair::with_default();
    let b = &mut p.b;
    assert!(matches!(
        b.dev.handle_packet(0, &[], &mut b.mem),
        Err(RxDrop::Malformed(_))
    ));
    assert!(matches!(
        b.dev.handle_packet(0, &[0xFF; 80], &mut b.mem),
        Err(RxDrop::Malformed(_))
    ));
    let mut good = frame_to_b(roce(bth(Opcode::RcSendOnly, b.qpn, EPSN)));
    let last = good.len() - 1;
    good[last] ^= 1;
    assert!(matches!(
        b.dev.handle_packet(0, &good, &mut b.mem),
        Err(RxDrop::Malformed(WireError::BadIcrc { .. }))
    ));
    let f = frame_to_b(roce(bth(Opcode::RcSendOnly, 0x99_9999, EPSN)));
    assert_eq!(
        b.dev.handle_packet(0, &f, &mut b.mem),
        Err(RxDrop::UnknownQp(0x99_9999))
    );
    let mut r = roce(bth(Opcode::RcSendOnly, b.qpn, EPSN));
    r.bth.pkey = 0x1234;
    assert_eq!(
        b.dev.handle_packet(0, &frame_to_b(r), &mut b.mem),
        Err(RxDrop::PkeyMismatch(0x1234))
    );
    let f = frame_to_a(roce(bth(Opcode::RcSendOnly, b.qpn, EPSN)));
    assert_eq!(
        b.dev.handle_packet(0, &f, &mut b.mem),
        Err(RxDrop::NotForThisDevice)
    );
    let f = frame_to_b(roce(bth(Opcode::UcSendOnly, b.qpn, EPSN)));
    assert_eq!(
        b.dev.handle_packet(0, &f, &mut b.mem),
        Err(RxDrop::UnsupportedOpcode(Opcode::UcSendOnly))
    );
    assert!(b.dev.stats().drops.total() >= 7);
    assert_eq!(b.dev.qp_state(b.qpn), Some(QpState::Rts));
    // A QP in INIT accepts nothing.
    let qpn = b
        .dev
        .create_qp(QpInit {
            pd: b.pd,
            send_cq: b.cq,
            recv_cq: b.cq,
            max_send_wr: 1,
            max_recv_wr: 1,
        })
        .unwrap();
    let f = frame_to_b(roce(bth(Opcode::RcSendOnly, qpn, 0)));
    assert_eq!(
        b.dev.handle_packet(0, &f, &mut b.mem),
        Err(RxDrop::BadQpState)
    );
}

#[test]
fn write_near_the_top_of_the_address_space() {
    for (va, dma_len) in [
        (u64::MAX - 10, 100u32),
        (u64::MAX, 1),
        (BASE, u32::MAX),
        (BASE + MR_LEN - 1, 2),
    ] {
        let mut p = Pair::with_default();
        let mut r = roce(bth(Opcode::RcWriteOnly, p.b.qpn, EPSN));
        r.reth = Some(RethRepr {
            va,
            rkey: p.b.keys.rkey,
            dma_len,
        });
        r.payload = &[1, 2];
        let mut mem = GuardMem {
            inner: PageMem::default(),
            allowed: vec![(BASE, MR_LEN)],
        };
        assert_eq!(p.b.dev.handle_packet(0, &frame_to_b(r), &mut mem), Ok(()));
        let resp = responses(&mut p.b);
        assert_eq!(
            resp,
            vec![(
                Opcode::RcAck,
                EPSN,
                Some(AethSyndrome::Nak(NakCode::RemoteAccessError))
            )]
        );
        assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));
    }
}

/// A fresh pair whose B has received a WRITE FIRST of 1,024 bytes (one PMTU) announcing
/// 1,500 in its RETH, at `EPSN`: the message's LAST is owed 476 bytes.
fn write_first_of_1500_to_b() -> Pair {
    let mut p = Pair::with_default();
    let mut r = roce(bth(Opcode::RcWriteFirst, p.b.qpn, EPSN));
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 1500,
    });
    let pmtu_payload = vec![7u8; 1024];
    r.payload = &pmtu_payload;
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    p
}

#[test]
fn write_longer_than_its_reth_is_an_invalid_request() {
    let mut p = write_first_of_1500_to_b();
    let mut r = roce(bth(Opcode::RcWriteLast, p.b.qpn, EPSN + 1));
    let too_long = vec![8u8; 1000];
    r.payload = &too_long;
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    let resp = responses(&mut p.b);
    assert_eq!(
        resp.last(),
        Some(&(
            Opcode::RcAck,
            EPSN + 1,
            Some(AethSyndrome::Nak(NakCode::InvalidRequest))
        ))
    );
    assert_eq!(
        p.b.mem.get(BASE + 1024, 1),
        vec![0],
        "the refused packet wrote nothing"
    );
}

/// A WRITE whose last packet leaves it shorter than its RETH's DMA length: NAK invalid
/// request, QP to ERR, and that packet places nothing (rxe checks a last packet's length
/// against the bytes still owed before it writes), for ONLY and for LAST.
#[test]
fn write_shorter_than_its_reth_is_refused_before_it_is_placed() {
    let nak = Some(AethSyndrome::Nak(NakCode::InvalidRequest));
    // WRITE ONLY of 100 bytes announcing 200.
    let mut p = Pair::with_default();
    let mut r = roce(bth(Opcode::RcWriteOnly, p.b.qpn, EPSN));
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 200,
    });
    let short = vec![9u8; 100];
    r.payload = &short;
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    assert_eq!(responses(&mut p.b), vec![(Opcode::RcAck, EPSN, nak)]);
    assert_eq!(
        p.b.mem.get(BASE, 100),
        vec![0; 100],
        "the refused packet wrote nothing"
    );
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));

    // FIRST of 1024 bytes announcing 1500, then a LAST of 100.
    let mut p = write_first_of_1500_to_b();
    let mut r = roce(bth(Opcode::RcWriteLast, p.b.qpn, EPSN + 1));
    r.payload = &short;
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    assert_eq!(
        responses(&mut p.b).last(),
        Some(&(Opcode::RcAck, EPSN + 1, nak))
    );
    assert_eq!(
        p.b.mem.get(BASE + 1024, 100),
        vec![0; 100],
        "the refused packet wrote nothing"
    );
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));
}

#[test]
fn opcode_sequence_errors() {
    // MIDDLE without FIRST, FIRST inside an open message, short FIRST.
    let cases: Vec<Vec<(Opcode, usize)>> = vec![
        vec![(Opcode::RcSendMiddle, 1024)],
        vec![(Opcode::RcSendLast, 10)],
        vec![(Opcode::RcSendFirst, 1024), (Opcode::RcSendFirst, 1024)],
        vec![(Opcode::RcSendFirst, 1024), (Opcode::RcWriteMiddle, 1024)],
        vec![(Opcode::RcSendFirst, 1000)],
        vec![(Opcode::RcSendOnly, 1025)],
        vec![(Opcode::RcSendFirst, 1024), (Opcode::RcSendLast, 0)],
    ];
    for case in cases {
        let mut p = Pair::with_default();
        p.b.dev
            .post_recv(p.b.qpn, RecvWr::new(1, vec![p.b.sge(BASE, 1 << 20)]))
            .unwrap();
        let n = case.len() as u32;
        for (i, (op, len)) in case.iter().enumerate() {
            let payload = vec![1u8; *len];
            let mut r = roce(bth(*op, p.b.qpn, EPSN + i as u32));
            r.payload = &payload;
            p.b.dev
                .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
                .unwrap();
        }
        let resp = responses(&mut p.b);
        assert_eq!(
            resp.last(),
            Some(&(
                Opcode::RcAck,
                EPSN + n - 1,
                Some(AethSyndrome::Nak(NakCode::InvalidRequest))
            )),
            "{case:?}"
        );
        assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));
        let rc = p.b.completions();
        assert_eq!(rc.len(), 1, "{case:?}");
        assert_ne!(rc[0].status, WcStatus::Success);
    }
}

#[test]
fn huge_read_and_psn_far_away() {
    let mut p = Pair::with_default();
    // READ longer than 2^31 inside a (sparse) 8 GiB region: invalid request.
    let big =
        p.b.dev
            .reg_mr(p.b.pd, 1 << 40, 8 << 30, Access::REMOTE_READ)
            .unwrap();
    let mut r = roce(bth(Opcode::RcReadRequest, p.b.qpn, EPSN));
    r.reth = Some(RethRepr {
        va: 1 << 40,
        rkey: big.rkey,
        dma_len: u32::MAX,
    });
    let mut mem = GuardMem {
        inner: PageMem::default(),
        allowed: vec![(BASE, MR_LEN)],
    };
    p.b.dev.handle_packet(0, &frame_to_b(r), &mut mem).unwrap();
    assert_eq!(
        responses(&mut p.b),
        vec![(
            Opcode::RcAck,
            EPSN,
            Some(AethSyndrome::Nak(NakCode::InvalidRequest))
        )]
    );
    // Outside the region it is an access error.
    let mut p = Pair::with_default();
    r.bth.dest_qp = p.b.qpn;
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: u32::MAX,
    });
    p.b.dev.handle_packet(0, &frame_to_b(r), &mut mem).unwrap();
    assert_eq!(
        responses(&mut p.b),
        vec![(
            Opcode::RcAck,
            EPSN,
            Some(AethSyndrome::Nak(NakCode::RemoteAccessError))
        )]
    );

    let mut p = Pair::with_default();
    // A PSN far ahead: one sequence NAK with the expected PSN, then silence.
    for psn in [EPSN + (1 << 22), EPSN + 5, EPSN + 1] {
        let r = roce(bth(Opcode::RcSendOnly, p.b.qpn, psn));
        let got = p.b.dev.handle_packet(0, &frame_to_b(r), &mut p.b.mem);
        assert_eq!(
            got,
            Err(RxDrop::OutOfSequence {
                psn,
                expected: EPSN
            })
        );
    }
    assert_eq!(
        responses(&mut p.b),
        vec![(
            Opcode::RcAck,
            EPSN,
            Some(AethSyndrome::Nak(NakCode::PsnSequenceError))
        )]
    );
    // A PSN far behind is a duplicate: re-ACKed with the last in-order PSN.
    let r = roce(bth(
        Opcode::RcWriteOnly,
        p.b.qpn,
        EPSN.wrapping_sub(1 << 22) & 0xFF_FFFF,
    ));
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    assert_eq!(
        responses(&mut p.b),
        vec![(
            Opcode::RcAck,
            EPSN - 1,
            Some(AethSyndrome::Ack { credits: 0x1F })
        )]
    );
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Rts));
}

#[test]
fn duplicate_read_and_atomic_without_history_are_dropped() {
    let mut p = Pair::with_default();
    let mut r = roce(bth(Opcode::RcReadRequest, p.b.qpn, EPSN - 3));
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 10,
    });
    assert_eq!(
        p.b.dev.handle_packet(0, &frame_to_b(r), &mut p.b.mem),
        Err(RxDrop::DuplicateNotReplayable(EPSN - 3))
    );
    let mut r = roce(bth(Opcode::RcFetchAdd, p.b.qpn, EPSN - 1));
    r.atomic_eth = Some(AtomicEthRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        swap_add: 1,
        compare: 0,
    });
    assert_eq!(
        p.b.dev.handle_packet(0, &frame_to_b(r), &mut p.b.mem),
        Err(RxDrop::DuplicateNotReplayable(EPSN - 1))
    );
    assert!(responses(&mut p.b).is_empty());
}

#[test]
fn duplicate_read_must_stay_inside_the_original() {
    let mut p = Pair::with_default();
    p.b.mem.fill(BASE, 4096, 3);
    let mut r = roce(bth(Opcode::RcReadRequest, p.b.qpn, EPSN));
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 3000,
    });
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    assert_eq!(responses(&mut p.b).len(), 3);
    // Asking for more than the original at a replayed PSN is refused.
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 1 << 20,
    });
    assert_eq!(
        p.b.dev.handle_packet(0, &frame_to_b(r), &mut p.b.mem),
        Err(RxDrop::DuplicateNotReplayable(EPSN))
    );
    // The remaining part from the middle is replayed with the opcodes the original
    // responses had at those PSNs.
    let mut r = roce(bth(Opcode::RcReadRequest, p.b.qpn, EPSN + 1));
    r.reth = Some(RethRepr {
        va: BASE + 1024,
        rkey: p.b.keys.rkey,
        dma_len: 3000 - 1024,
    });
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    let resp = responses(&mut p.b);
    assert_eq!(
        resp.iter().map(|x| (x.0, x.1)).collect::<Vec<_>>(),
        vec![
            (Opcode::RcReadResponseMiddle, EPSN + 1),
            (Opcode::RcReadResponseLast, EPSN + 2)
        ]
    );
}

/// Requester-side hostility: A has a READ of 100 bytes outstanding.
fn requester_with_read() -> (Pair, u32) {
    let mut p = Pair::with_default();
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::read(1, vec![p.a.sge(BASE, 100)], p.b.remote(BASE)),
        )
        .unwrap();
    let mut buf = Vec::new();
    let m = p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).unwrap();
    assert_eq!(m.opcode, Opcode::RcReadRequest);
    (p, m.psn)
}

#[test]
fn ack_for_psns_never_sent_is_ignored() {
    let (mut p, psn) = requester_with_read();
    let mut r = roce(bth(Opcode::RcAck, p.a.qpn, psn + 50));
    r.aeth = Some(AethRepr {
        syndrome: AethSyndrome::Ack { credits: 0x1F },
        msn: 1,
    });
    assert_eq!(
        p.a.dev.handle_packet(0, &frame_to_a(r), &mut p.a.mem),
        Err(RxDrop::UnexpectedResponse(psn + 50))
    );
    r.bth.psn = psn - 1;
    assert_eq!(
        p.a.dev.handle_packet(0, &frame_to_a(r), &mut p.a.mem),
        Err(RxDrop::StaleResponse(psn - 1))
    );
    assert!(p.a.completions().is_empty());
    assert_eq!(p.a.dev.qp_state(p.a.qpn), Some(QpState::Rts));
}

#[test]
fn read_response_longer_than_requested() {
    let (mut p, psn) = requester_with_read();
    let mut r = roce(bth(Opcode::RcReadResponseOnly, p.a.qpn, psn));
    r.aeth = Some(AethRepr {
        syndrome: AethSyndrome::Ack { credits: 0x1F },
        msn: 1,
    });
    let long = vec![9u8; 200];
    r.payload = &long;
    let mut mem = GuardMem {
        inner: PageMem::default(),
        allowed: vec![(BASE, MR_LEN)],
    };
    assert_eq!(
        p.a.dev.handle_packet(0, &frame_to_a(r), &mut mem),
        Err(RxDrop::UnexpectedResponse(psn))
    );
    assert_eq!(p.a.completions()[0].status, WcStatus::BadRespErr);
    assert_eq!(mem.inner.get(BASE, 200), vec![0; 200], "nothing written");
}

#[test]
fn atomic_ack_for_a_read_is_a_bad_response() {
    let (mut p, psn) = requester_with_read();
    let r = atomic_ack(p.a.qpn, psn, 1, 5);
    assert!(p
        .a
        .dev
        .handle_packet(0, &frame_to_a(r), &mut p.a.mem)
        .is_err());
    assert_eq!(p.a.completions()[0].status, WcStatus::BadRespErr);
}

/// Hands `frame` to `dev` and checks that the drop counters grow by one when the packet is
/// refused (`Err`) and stay put when it is taken: a NIC model tells a placed packet from a
/// duplicate or NAKed one by the other counters alone, for packets taken.
fn handle_counted(
    dev: &mut Device,
    now_ps: u64,
    frame: &[u8],
    mem: &mut dyn Memory,
) -> core::result::Result<(), TestCaseError> {
    let before = dev.stats().drops.total();
    let res = dev.handle_packet(now_ps, frame, mem);
    prop_assert_eq!(dev.stats().drops.total() - before, u64::from(res.is_err()));
    Ok(())
}

fn any_opcode() -> impl Strategy<Value = Opcode> {
    proptest::sample::select(Opcode::ALL.to_vec())
}

prop_compose! {
    fn hostile_packet()(
        op in any_opcode(),
        psn_off in prop_oneof![0u32..4, 0xFF_FFF0u32..=0xFF_FFFF, any::<u32>()],
        dest_ok in prop::bool::weighted(0.9),
        va in prop_oneof![BASE..BASE + MR_LEN, any::<u64>(), (u64::MAX - 4096)..=u64::MAX, Just(BASE + MR_LEN - 8)],
        key_ok in prop::bool::weighted(0.8),
        dma_len in prop_oneof![0u32..5000, any::<u32>()],
        payload_len in prop_oneof![0usize..4, 1020usize..1030, 0usize..2100],
        swap_add in any::<u64>(),
        syndrome in 0u8..=0x7F,
        msn in any::<u32>(),
    ) -> (Opcode, u32, bool, u64, bool, u32, usize, u64, u8, u32) {
        (op, psn_off, dest_ok, va, key_ok, dma_len, payload_len, swap_add, syndrome, msn)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    /// Random well-formed packets at both a responder and a requester that has traffic
    /// outstanding: nothing panics, nothing outside the registered region is touched, and the
    /// devices keep answering.
    #[test]
    fn random_packets_never_panic_or_escape_mrs(
        pkts in proptest::collection::vec(hostile_packet(), 1..40)
    ) {
        let mut p = Pair::with_default();
        // Some outstanding work on A, so responses have something to hit.
        p.a.dev.post_send(p.a.qpn, SendWr::read(1, vec![p.a.sge(BASE, 3000)], p.b.remote(BASE))).unwrap();
        p.a.dev.post_send(p.a.qpn, SendWr::write(2, vec![p.a.sge(BASE, 5000)], p.b.remote(BASE))).unwrap();
        p.b.dev.post_recv(p.b.qpn, RecvWr::new(1, vec![p.b.sge(BASE, 3000)])).unwrap();
        let mut buf = Vec::new();
        while p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).is_some() {}
        let mut mem_a = GuardMem { inner: PageMem::default(), allowed: vec![(BASE, MR_LEN)] };
        let mut mem_b = GuardMem { inner: PageMem::default(), allowed: vec![(BASE, MR_LEN)] };
        let rkey = p.b.keys.rkey;
        for (i, (op, psn_off, dest_ok, va, key_ok, dma_len, payload_len, swap_add, syndrome, msn)) in pkts.into_iter().enumerate() {
            let rk = if key_ok { rkey } else { rkey ^ 0x300 };
            let payload = vec![0x5Au8; if op.has_payload() { payload_len } else { 0 }];
            let mut r = roce(bth(op, 0, EPSN.wrapping_add(psn_off) & 0xFF_FFFF));
            r.reth = Some(RethRepr { va, rkey: rk, dma_len });
            r.atomic_eth = Some(AtomicEthRepr { va, rkey: rk, swap_add, compare: swap_add });
            r.aeth = AethSyndrome::from_u8(syndrome).ok().map(|s| AethRepr { syndrome: s, msn: msn & 0xFF_FFFF });
            if op.has_aeth() && r.aeth.is_none() {
                r.aeth = Some(AethRepr { syndrome: AethSyndrome::Ack { credits: 0x1F }, msn: 0 });
            }
            r.atomic_ack = Some(AtomicAckEthRepr { orig: swap_add });
            r.imm = Some(msn);
            r.ieth = Some(rk);
            r.payload = &payload;
            if i % 2 == 0 {
                r.bth.dest_qp = if dest_ok { p.b.qpn } else { p.b.qpn + 1 };
                handle_counted(&mut p.b.dev, i as u64, &frame_to_b(r), &mut mem_b)?;
            } else {
                // Responses to A use A's outstanding PSNs (A's sq_psn is EPSN too).
                r.bth.dest_qp = if dest_ok { p.a.qpn } else { p.a.qpn + 1 };
                handle_counted(&mut p.a.dev, i as u64, &frame_to_a(r), &mut mem_a)?;
            }
            while p.b.dev.poll_transmit(i as u64, &mem_b, &mut buf).is_some() {
                prop_assert!(FrameRepr::parse(&buf).is_ok());
            }
            while p.a.dev.poll_transmit(i as u64, &mem_a, &mut buf).is_some() {
                prop_assert!(FrameRepr::parse(&buf).is_ok());
            }
            if let Some(t) = p.a.dev.poll_timeout() { p.a.dev.handle_timeout(t); }
            if let Some(t) = p.b.dev.poll_timeout() { p.b.dev.handle_timeout(t); }
        }
        // Nothing completes twice: at most one completion per posted WR.
        let ca = p.a.completions();
        prop_assert!(ca.len() <= 2);
        let mut ids: Vec<u64> = ca.iter().map(|c| c.wr_id).collect();
        ids.dedup();
        prop_assert_eq!(ids.len(), ca.len());
        prop_assert!(p.b.completions().len() <= 1);
    }
}
