//! The RC transport against what the IBA (vol. 1 ch. 9) and a Linux rxe or ConnectX peer
//! expect, case by case, with a scripted peer or two rnic devices: duplicates, sequence and
//! RNR NAKs, AETH MSNs, implicit ACKs, retry counters, the ACK timeout and error statuses.

mod common;

use common::script::*;
use common::*;
use rnic_transport::*;
use rnic_wire::*;

const EPSN: u32 = 100;
const PMTU: u32 = 1024;
const ACK: Option<AethSyndrome> = Some(AethSyndrome::Ack { credits: 0x1F });

fn write_pkt(p: &Pair, op: Opcode, psn: u32, reth: Option<(u64, u32)>, payload: &[u8]) -> Vec<u8> {
    let mut r = roce(bth(op, p.b.qpn, psn));
    r.reth = reth.map(|(va, len)| RethRepr {
        va,
        rkey: p.b.keys.rkey,
        dma_len: len,
    });
    r.payload = payload;
    frame_to_b(r)
}

/// A three-packet WRITE, then all three packets again after the target memory changed: each
/// duplicate is answered at once with an ACK of the message's last PSN, and nothing is
/// written again (rxe `duplicate_request`).
#[test]
fn duplicate_write_packets_are_reacked_and_not_placed_again() {
    let mut p = Pair::with_default();
    let frames = [
        write_pkt(
            &p,
            Opcode::RcWriteFirst,
            EPSN,
            Some((BASE, 2100)),
            &[1u8; 1024],
        ),
        write_pkt(&p, Opcode::RcWriteMiddle, EPSN + 1, None, &[2u8; 1024]),
        write_pkt(&p, Opcode::RcWriteLast, EPSN + 2, None, &[3u8; 52]),
    ];
    for f in &frames {
        p.b.dev.handle_packet(0, f, &mut p.b.mem).unwrap();
    }
    assert_eq!(responses(&mut p.b), vec![(Opcode::RcAck, EPSN + 2, ACK)]);
    p.b.mem.write(BASE, &[0xEE; 2100]);
    for f in &frames {
        p.b.dev.handle_packet(0, f, &mut p.b.mem).unwrap();
        // Each duplicate answered at once.
        let r = sent_frames(&mut p.b);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].opcode, r[0].psn, r[0].syndrome),
            (Opcode::RcAck, EPSN + 2, ACK)
        );
    }
    assert_eq!(p.b.mem.get(BASE, 2100), vec![0xEE; 2100]);
}

/// A SEND, then the same SEND again without AckReq: the duplicate is ACKed anyway (as rxe does)
/// and consumes no second RECV.
#[test]
fn duplicate_send_is_reacked_without_consuming_a_recv() {
    let mut p = Pair::with_default();
    p.b.dev
        .post_recv(p.b.qpn, RecvWr::new(1, vec![p.b.sge(BASE, 4096)]))
        .unwrap();
    p.b.dev
        .post_recv(p.b.qpn, RecvWr::new(2, vec![p.b.sge(BASE + 4096, 4096)]))
        .unwrap();
    let mut r = roce(bth(Opcode::RcSendOnly, p.b.qpn, EPSN));
    r.payload = &[5u8; 10];
    let f = frame_to_b(r);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    assert_eq!(responses(&mut p.b), vec![(Opcode::RcAck, EPSN, ACK)]);
    let mut r = roce(bth(Opcode::RcSendOnly, p.b.qpn, EPSN));
    r.payload = &[5u8; 10];
    r.bth.ack_req = false;
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    let s = sent_frames(&mut p.b);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].opcode, s[0].psn, s[0].syndrome),
        (Opcode::RcAck, EPSN, ACK)
    );
    assert_eq!(p.b.completions().len(), 1);
}

/// PSNs ahead of the expected one: one PSN-sequence-error NAK carrying the expected PSN, then
/// silence until it arrives; a new gap after progress gets a NAK of its own.
#[test]
fn one_sequence_nak_per_gap_then_silence() {
    let mut p = Pair::with_default();
    let w = |p: &Pair, psn| write_pkt(p, Opcode::RcWriteOnly, psn, Some((BASE, 8)), &[1u8; 8]);
    for psn in [EPSN + 2, EPSN + 3, EPSN + 1, EPSN + 4] {
        let f = w(&p, psn);
        let _ = p.b.dev.handle_packet(0, &f, &mut p.b.mem);
    }
    assert_eq!(
        responses(&mut p.b),
        vec![(
            Opcode::RcAck,
            EPSN,
            Some(AethSyndrome::Nak(NakCode::PsnSequenceError))
        )]
    );
    let f = w(&p, EPSN);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    let f = w(&p, EPSN + 2);
    let _ = p.b.dev.handle_packet(0, &f, &mut p.b.mem);
    let f = w(&p, EPSN + 3);
    let _ = p.b.dev.handle_packet(0, &f, &mut p.b.mem);
    let f = w(&p, EPSN + 1);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    let s = sent_frames(&mut p.b);
    let got: Vec<_> = s.iter().map(|x| (x.psn, x.syndrome)).collect();
    assert_eq!(
        got,
        vec![
            (EPSN, ACK),
            (EPSN + 1, Some(AethSyndrome::Nak(NakCode::PsnSequenceError))),
            (EPSN + 1, ACK)
        ]
    );
}

/// A SEND with no RECV posted: an RNR NAK at its PSN whose timer field is the QP's
/// min_rnr_timer (18 here), silence for the packets after it, and the QP stays in RTS.
#[test]
fn rnr_nak_carries_min_rnr_timer_and_later_packets_are_dropped() {
    let mut p = Pair::new(QpParams {
        min_rnr_timer: 18,
        ..QpParams::default()
    });
    let mut r = roce(bth(Opcode::RcSendOnly, p.b.qpn, EPSN));
    r.payload = &[5u8; 10];
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    let mut r = roce(bth(Opcode::RcSendOnly, p.b.qpn, EPSN + 1));
    r.payload = &[5u8; 10];
    let _ = p.b.dev.handle_packet(0, &frame_to_b(r), &mut p.b.mem);
    let s = sent_frames(&mut p.b);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].psn, s[0].syndrome),
        (EPSN, Some(AethSyndrome::RnrNak { timer: 18 }))
    );
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Rts));
}

/// WRITE at 100 and READ at 101; the responder's only answer is the READ response: it
/// acknowledges the WRITE too (implicit ACK), both complete in order, nothing is resent.
#[test]
fn read_response_implicitly_acks_the_write_before_it() {
    let mut p = Pair::with_default();
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::write(1, vec![p.a.sge(BASE, 10)], p.b.remote(BASE)),
        )
        .unwrap();
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::read(2, vec![p.a.sge(BASE + 4096, 10)], p.b.remote(BASE)),
        )
        .unwrap();
    let s = sent_frames(&mut p.a);
    assert_eq!(s.len(), 2);
    let mut r = roce(bth(Opcode::RcReadResponseOnly, p.a.qpn, EPSN + 1));
    r.aeth = Some(AethRepr {
        syndrome: AethSyndrome::Ack { credits: 0x1F },
        msn: 2,
    });
    r.payload = &[7u8; 10];
    p.a.dev
        .handle_packet(0, &frame_to_a(r), &mut p.a.mem)
        .unwrap();
    let c = p.a.completion_statuses();
    assert_eq!(c, vec![(1, WcStatus::Success), (2, WcStatus::Success)]);
    assert!(sent_frames(&mut p.a).is_empty());
}

/// rnr_retry 7 means infinite: dozens of RNR NAKs fail nothing (retry_cnt 1 is not charged),
/// and the SEND completes once a RECV is posted.
#[test]
fn rnr_retry_7_retries_forever() {
    let mut p = Pair::new(QpParams {
        rnr_retry: 7,
        retry_cnt: 1,
        min_rnr_timer: 1,
        ..QpParams::default()
    });
    p.a.dev
        .post_send(p.a.qpn, SendWr::send(1, vec![p.a.sge(BASE, 10)]))
        .unwrap();
    p.run(100);
    assert!(
        p.a.dev.stats().naks_received.rnr >= 20,
        "{}",
        p.a.dev.stats().naks_received.rnr
    );
    assert!(p.a.completions().is_empty());
    p.b.dev
        .post_recv(p.b.qpn, RecvWr::new(9, vec![p.b.sge(BASE, 4096)]))
        .unwrap();
    p.run(1000);
    let c = p.a.completion_statuses();
    assert_eq!(c, vec![(1, WcStatus::Success)]);
}

/// Three WRITEs; the responder NAKs the second with each class C code: the first completes
/// (implicitly ACKed by the NAK), the second with the matching status, the third flushed,
/// and the QP goes to ERR.
#[test]
fn fatal_nak_codes_map_to_their_completion_status() {
    for (code, st) in [
        (NakCode::InvalidRequest, WcStatus::RemInvReqErr),
        (NakCode::RemoteAccessError, WcStatus::RemAccessErr),
        (NakCode::RemoteOperationalError, WcStatus::RemOpErr),
    ] {
        let mut p = Pair::with_default();
        for i in 1..=3 {
            p.a.dev
                .post_send(
                    p.a.qpn,
                    SendWr::write(i, vec![p.a.sge(BASE, 10)], p.b.remote(BASE)),
                )
                .unwrap();
        }
        assert_eq!(sent_frames(&mut p.a).len(), 3);
        let mut r = roce(bth(Opcode::RcAck, p.a.qpn, EPSN + 1));
        r.aeth = Some(AethRepr {
            syndrome: AethSyndrome::Nak(code),
            msn: 1,
        });
        let _ = p.a.dev.handle_packet(0, &frame_to_a(r), &mut p.a.mem);
        let c = p.a.completion_statuses();
        assert_eq!(
            c,
            vec![(1, WcStatus::Success), (2, st), (3, WcStatus::WrFlushErr)]
        );
        assert_eq!(p.a.dev.qp_state(p.a.qpn), Some(QpState::Err));
    }
}

/// With every request lost, retransmissions are spaced by the local ACK timeout,
/// 4.096 µs × 2^timeout (plus at most the harness's link rounds), for several codes.
#[test]
fn ack_timeout_is_4_096_us_times_2_to_the_timeout() {
    for t in [1u8, 5, 8] {
        let mut p = Pair::new(QpParams {
            timeout: t,
            retry_cnt: 2,
            ..QpParams::default()
        });
        p.drop = Box::new(|s| s.dir == Dir::AtoB);
        p.a.dev
            .post_send(
                p.a.qpn,
                SendWr::write(1, vec![p.a.sge(BASE, 10)], p.b.remote(BASE)),
            )
            .unwrap();
        p.run(1000);
        let times: Vec<u64> = p.sent(Dir::AtoB).map(|s| s.time_ps).collect();
        assert_eq!(times.len(), 3);
        let want = 4_096_000u64 << t;
        for w in times.windows(2) {
            let d = w[1] - w[0];
            assert!(
                d >= want && d <= want + 2 * LINK_PS,
                "t={t} d={d} want={want}"
            );
        }
    }
}

/// A three-packet WRITE with immediate to a QP with no RECV: the RNR NAK comes at the LAST
/// packet (the only one that needs a RECV), the requester resends only that packet after
/// the RNR wait, and the data and the immediate arrive whole.
#[test]
fn rnr_on_the_last_packet_of_a_write_with_immediate_resends_only_it() {
    let mut p = Pair::new(QpParams {
        min_rnr_timer: 3,
        ..QpParams::default()
    });
    let len = 3 * PMTU as usize - 10;
    let data = p.a.mem.fill(BASE, len, 3);
    let wr = SendWr {
        wr_id: 1,
        opcode: WrOpcode::WriteImm,
        sgl: [p.a.sge(BASE, len as u32)].into(),
        signaled: true,
        imm: Some(0x1234),
        remote: Some(p.b.remote(BASE + (1 << 20))),
        ..SendWr::default()
    };
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    p.run(2);
    assert_eq!(p.b.dev.stats().naks_sent.rnr, 1);
    p.b.dev.post_recv(p.b.qpn, RecvWr::new(9, vec![])).unwrap();
    p.run(1000);
    let c = p.a.completion_statuses();
    assert_eq!(c, vec![(1, WcStatus::Success)]);
    let rc = p.b.completions();
    assert_eq!(rc.len(), 1);
    assert_eq!(
        (rc[0].status, rc[0].byte_len, rc[0].imm),
        (WcStatus::Success, len as u32, Some(0x1234))
    );
    assert_eq!(p.b.mem.get(BASE + (1 << 20), len), data);
    let resent: Vec<_> = p
        .sent(Dir::AtoB)
        .filter(|s| s.meta.is_retransmit)
        .map(|s| s.meta.opcode)
        .collect();
    assert_eq!(resent, vec![Opcode::RcWriteLastImm]);
}

/// FIRST and MIDDLE of a WRITE, then the FIRST again: re-ACKed at the MIDDLE's PSN (the last
/// packet placed), and the message goes on to complete normally with its LAST.
#[test]
fn duplicate_first_packet_inside_an_open_write_is_acked_at_the_last_packet_placed() {
    let mut p = Pair::with_default();
    let first = write_pkt(
        &p,
        Opcode::RcWriteFirst,
        EPSN,
        Some((BASE, 2100)),
        &[1u8; 1024],
    );
    let mut mid = roce(bth(Opcode::RcWriteMiddle, p.b.qpn, EPSN + 1));
    let two = [2u8; 1024];
    mid.payload = &two;
    mid.bth.ack_req = false;
    let mid = frame_to_b(mid);
    p.b.dev.handle_packet(0, &first, &mut p.b.mem).unwrap();
    p.b.dev.handle_packet(0, &mid, &mut p.b.mem).unwrap();
    let s = sent_frames(&mut p.b);
    assert_eq!(s.iter().map(|x| x.psn).collect::<Vec<_>>(), vec![EPSN]);
    p.b.dev.handle_packet(0, &first, &mut p.b.mem).unwrap();
    let s = sent_frames(&mut p.b);
    assert_eq!(s.iter().map(|x| x.psn).collect::<Vec<_>>(), vec![EPSN + 1]);
    let last = write_pkt(&p, Opcode::RcWriteLast, EPSN + 2, None, &[3u8; 52]);
    p.b.dev.handle_packet(0, &last, &mut p.b.mem).unwrap();
    let s = sent_frames(&mut p.b);
    assert_eq!(
        s.iter().map(|x| (x.psn, x.syndrome)).collect::<Vec<_>>(),
        vec![(EPSN + 2, ACK)]
    );
    assert_eq!(p.b.mem.get(BASE + 2048, 52), vec![3u8; 52]);
}

fn with_msn(node: &mut Node) -> Vec<(Opcode, u32, Option<u32>)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while node.dev.poll_transmit(0, &node.mem, &mut buf).is_some() {
        let f = FrameRepr::parse(&buf).unwrap();
        out.push((
            f.roce.bth.opcode,
            f.roce.bth.psn,
            f.roce.aeth.map(|a| a.msn),
        ));
    }
    out
}

/// The AETH MSN in every kind of response: ACK, READ response FIRST/LAST (MIDDLE has no
/// AETH), atomic ACK, sequence NAK, RNR NAK and a duplicate's re-ACK.
#[test]
fn aeth_msn_counts_messages_in_every_response() {
    let mut p = Pair::with_default();
    let w = write_pkt(&p, Opcode::RcWriteOnly, EPSN, Some((BASE, 8)), &[1u8; 8]);
    p.b.dev.handle_packet(0, &w, &mut p.b.mem).unwrap();
    let mut r = roce(bth(Opcode::RcReadRequest, p.b.qpn, EPSN + 1));
    r.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey,
        dma_len: 3000,
    });
    p.b.dev
        .handle_packet(0, &frame_to_b(r), &mut p.b.mem)
        .unwrap();
    let mut a = roce(bth(Opcode::RcFetchAdd, p.b.qpn, EPSN + 4));
    a.atomic_eth = Some(AtomicEthRepr {
        va: BASE + 64,
        rkey: p.b.keys.rkey,
        swap_add: 1,
        compare: 0,
    });
    p.b.dev
        .handle_packet(0, &frame_to_b(a), &mut p.b.mem)
        .unwrap();
    let w2 = write_pkt(
        &p,
        Opcode::RcWriteOnly,
        EPSN + 7,
        Some((BASE, 8)),
        &[1u8; 8],
    );
    let _ = p.b.dev.handle_packet(0, &w2, &mut p.b.mem);
    let mut s = roce(bth(Opcode::RcSendOnly, p.b.qpn, EPSN + 5));
    s.payload = &[1u8; 4];
    let _ = p.b.dev.handle_packet(0, &frame_to_b(s), &mut p.b.mem);
    p.b.dev.handle_packet(0, &w, &mut p.b.mem).unwrap();
    assert_eq!(
        with_msn(&mut p.b),
        vec![
            (Opcode::RcAck, EPSN, Some(1)),
            (Opcode::RcReadResponseFirst, EPSN + 1, Some(2)),
            (Opcode::RcReadResponseMiddle, EPSN + 2, None),
            (Opcode::RcReadResponseLast, EPSN + 3, Some(2)),
            (Opcode::RcAtomicAck, EPSN + 4, Some(3)),
            (Opcode::RcAck, EPSN + 5, Some(3)), // NAK seq
            (Opcode::RcAck, EPSN + 5, Some(3)), // RNR
            (Opcode::RcAck, EPSN + 4, Some(3)), // dup
        ]
    );
}

/// A zero-length READ, the usual fence after WRITEs: it needs no valid R_Key (IBA C9-88,
/// as rxe), and its response comes only after every WRITE before it has landed, even when
/// one was lost and had to be resent. It completes last, with no payload.
#[test]
fn a_zero_length_read_completes_after_every_write_before_it() {
    let mut p = Pair::with_default();
    // The first transmission of the second WRITE is lost.
    p.drop = Box::new(|s: &Sent| s.dir == Dir::AtoB && s.nth == 1);
    let data = p.a.mem.fill(BASE, 3000, 9);
    for i in 0..3u64 {
        let at = BASE + 1000 * i;
        let wr = SendWr::write(i, vec![p.a.sge(at, 1000)], p.b.remote(at));
        p.a.dev.post_send(p.a.qpn, wr).unwrap();
    }
    let no_key = RemoteAddr {
        va: 0,
        rkey: 0xDEAD,
    };
    let fence = SendWr::read(9, vec![p.a.sge(BASE + 8192, 0)], no_key);
    p.a.dev.post_send(p.a.qpn, fence).unwrap();
    p.run(10_000);
    let done = p.a.completion_statuses();
    let ids: Vec<u64> = done.iter().map(|&(id, _)| id).collect();
    assert_eq!(ids, vec![0, 1, 2, 9], "in order, the fence last");
    assert!(
        done.iter().all(|&(_, s)| s == WcStatus::Success),
        "{done:?}"
    );
    assert_eq!(p.b.mem.get(BASE, 3000), data, "every WRITE landed");
    let responses: Vec<&Sent> = p
        .log
        .iter()
        .filter(|s| s.dir == Dir::BtoA && s.meta.opcode == Opcode::RcReadResponseOnly)
        .collect();
    assert_eq!(responses.len(), 1, "one READ response");
    assert_eq!(responses[0].meta.payload_len, 0, "with no payload");
    assert!(
        p.log
            .iter()
            .any(|s| s.dir == Dir::AtoB && s.meta.is_retransmit),
        "the lost WRITE was resent"
    );
}

/// Posts on A the signaled fetch-and-add of 1 number `i` (wr_id `i`, its result at
/// `BASE + 8 i`) on B's `target`.
fn post_fetch_add(p: &mut Pair, i: u64, target: u64) {
    let wr = SendWr::fetch_add(i, p.a.sge(BASE + 8 * i, 8), p.b.remote(target), 1);
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
}

/// `n` signaled fetch-and-adds of 1 posted on A (PSNs `EPSN..EPSN + n`), sent and drained:
/// the scripted peer plays B's side.
fn atomics_outstanding(p: &mut Pair, n: u64) {
    let target = BASE + 0x1000;
    for i in 0..n {
        post_fetch_add(p, i, target);
    }
    let psns: Vec<u32> = sent_frames(&mut p.a).iter().map(|s| s.psn).collect();
    assert_eq!(psns, (EPSN..EPSN + n as u32).collect::<Vec<_>>());
}

/// B's PSN-sequence-error NAK asking A for `psn`.
fn seq_nak_to_a(p: &mut Pair, psn: u32) {
    let mut r = roce(bth(Opcode::RcAck, p.a.qpn, psn));
    r.aeth = Some(AethRepr {
        syndrome: AethSyndrome::Nak(NakCode::PsnSequenceError),
        msn: 0,
    });
    let _ = p.a.dev.handle_packet(0, &frame_to_a(r), &mut p.a.mem);
}

/// The PSNs A transmits now.
fn a_resends(p: &mut Pair) -> Vec<u32> {
    sent_frames(&mut p.a).iter().map(|s| s.psn).collect()
}

/// A sequence NAK cannot acknowledge past an atomic (or READ) whose response is missing, so
/// `una` stays at it while a retry runs from it. A NAK for a later PSN than the one that
/// started the retry is a new hole, in the resends themselves: A must go back again at once
/// (not wait for the ACK timer). A second NAK for the same PSN, or an older one arriving
/// late, is the same hole and restarts nothing.
#[test]
fn sequence_nak_for_a_later_psn_during_a_retry_goes_back_again() {
    let mut p = Pair::with_default();
    atomics_outstanding(&mut p, 4);
    let all: Vec<u32> = (EPSN..EPSN + 4).collect();
    // B lost EPSN + 1; the atomic ACK of EPSN is lost too.
    seq_nak_to_a(&mut p, EPSN + 1);
    assert_eq!(a_resends(&mut p), all, "go-back-N from una");
    // The same hole NAKed again: no new retry, no storm.
    seq_nak_to_a(&mut p, EPSN + 1);
    assert_eq!(a_resends(&mut p), Vec::<u32>::new());
    // The resend of EPSN + 2 is lost: B now asks for EPSN + 2.
    seq_nak_to_a(&mut p, EPSN + 2);
    assert_eq!(a_resends(&mut p), all, "a new hole: go back again");
    // A NAK older than the one that started the running retry is stale.
    seq_nak_to_a(&mut p, EPSN + 1);
    seq_nak_to_a(&mut p, EPSN + 2);
    assert_eq!(a_resends(&mut p), Vec::<u32>::new());
    let s = p.a.dev.stats();
    assert_eq!((s.go_back_n, s.ack_timeouts), (2, 0));
    assert_eq!(s.naks_received.psn_sequence_error, 5);
    // The atomic ACKs complete everything.
    for (i, psn) in all.iter().enumerate() {
        let r = atomic_ack(p.a.qpn, *psn, i as u32 + 1, i as u64);
        p.a.dev
            .handle_packet(0, &frame_to_a(r), &mut p.a.mem)
            .unwrap();
    }
    assert_eq!(
        p.a.completion_statuses(),
        (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
    );
    assert_eq!(p.a.mem.u64_at(BASE + 24), 3);
}

/// A NAK for a PSN the running retry has not resent yet needs no new retry: the resend of
/// that PSN is still to come.
#[test]
fn sequence_nak_for_a_psn_the_retry_has_not_reached_restarts_nothing() {
    let mut p = Pair::with_default();
    atomics_outstanding(&mut p, 4);
    seq_nak_to_a(&mut p, EPSN + 1);
    seq_nak_to_a(&mut p, EPSN + 2);
    assert_eq!(a_resends(&mut p), (EPSN..EPSN + 4).collect::<Vec<_>>());
    assert_eq!(p.a.dev.stats().go_back_n, 1);
}

/// A retry started by an implicit NAK (the atomic ACK of EPSN + 1 before that of EPSN) has
/// no NAK of its own: the first sequence NAK during it may have left B before the resends
/// reached it (a hole the retry already covers), so it is only noted; a NAK for a later
/// PSN is a new hole and goes back.
#[test]
fn after_an_implicit_nak_the_first_sequence_nak_is_noted_and_a_later_one_goes_back() {
    let mut p = Pair::with_default();
    atomics_outstanding(&mut p, 4);
    let all: Vec<u32> = (EPSN..EPSN + 4).collect();
    let r = atomic_ack(p.a.qpn, EPSN + 1, 2, 1);
    assert!(p
        .a
        .dev
        .handle_packet(0, &frame_to_a(r), &mut p.a.mem)
        .is_err());
    assert_eq!(a_resends(&mut p), all, "implicit NAK: go back from una");
    seq_nak_to_a(&mut p, EPSN + 2);
    assert_eq!(a_resends(&mut p), Vec::<u32>::new(), "noted only");
    seq_nak_to_a(&mut p, EPSN + 3);
    assert_eq!(a_resends(&mut p), all, "a later hole: go back again");
    assert_eq!(p.a.dev.stats().go_back_n, 2);
}

/// Each new hole costs one retry from retry_cnt: without progress the budget runs out and
/// the QP fails with RetryExcErr (the rest flushed), no endless going back.
#[test]
fn later_sequence_naks_spend_retry_cnt_until_retry_exc_err() {
    let mut p = Pair::new(QpParams {
        retry_cnt: 2,
        ..QpParams::default()
    });
    atomics_outstanding(&mut p, 4);
    for psn in [EPSN + 1, EPSN + 2] {
        seq_nak_to_a(&mut p, psn);
        assert_eq!(a_resends(&mut p).len(), 4);
    }
    seq_nak_to_a(&mut p, EPSN + 3);
    assert_eq!(a_resends(&mut p), Vec::<u32>::new());
    assert_eq!(
        p.a.completion_statuses(),
        vec![
            (0, WcStatus::RetryExcErr),
            (1, WcStatus::WrFlushErr),
            (2, WcStatus::WrFlushErr),
            (3, WcStatus::WrFlushErr),
        ]
    );
    assert_eq!(p.a.dev.qp_state(p.a.qpn), Some(QpState::Err));
    assert_eq!(p.a.dev.stats().go_back_n, 2);
}

/// Two devices: the first transmission of the second atomic and the atomic ACK of the first
/// are lost, so B NAKs the second while A still waits for the first's ACK; in the retry the
/// resend of the third atomic and the replayed ACK of the first are lost too, and B NAKs
/// the third. A goes back again on that NAK: all four complete, each applied once, with no
/// ACK timeout.
#[test]
fn a_loss_inside_an_atomic_retry_is_repaired_without_the_ack_timer() {
    let mut p = Pair::with_default();
    let target = BASE + 0x1000;
    p.b.mem.write(target, &40u64.to_le_bytes());
    for i in 0..4u64 {
        post_fetch_add(&mut p, i, target);
    }
    // A→B: EPSN..EPSN+3 (the second lost), then the retry EPSN..EPSN+3 (its third lost).
    // B→A: the atomic ACK of EPSN (lost), NAK(EPSN+1), the replayed ACK of EPSN (lost).
    let mut acks_of_first = 0;
    p.drop = Box::new(move |s: &Sent| match s.dir {
        Dir::AtoB => s.nth == 1 || s.nth == 6,
        Dir::BtoA => {
            let first = s.meta.psn == EPSN && s.meta.opcode == Opcode::RcAtomicAck;
            acks_of_first += u32::from(first);
            first && acks_of_first <= 2
        }
    });
    p.run(10_000);
    assert_eq!(
        p.a.completion_statuses(),
        (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
    );
    let got: Vec<u64> = (0..4).map(|i| p.a.mem.u64_at(BASE + 8 * i)).collect();
    assert_eq!(got, vec![40, 41, 42, 43], "each applied once, in order");
    assert_eq!(p.b.mem.u64_at(target), 44);
    let s = p.a.dev.stats();
    assert_eq!(s.naks_received.psn_sequence_error, 2, "{s:?}");
    assert_eq!((s.ack_timeouts, s.go_back_n), (0, 2));
}
