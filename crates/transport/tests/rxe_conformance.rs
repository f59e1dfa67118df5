//! Conformance with what a Linux soft-RoCE (rxe) peer and the IB specification expect, each
//! case played by a scripted peer packet by packet (or by two rnic devices where both sides'
//! completions matter): the packets rnic sends and the completions on both sides are checked,
//! so a later change cannot bring the old behaviour back.

mod common;

use common::script::*;
use common::*;
use rnic_transport::*;
use rnic_wire::*;

const PMTU: u32 = 1024;
/// B's expected PSN and A's first PSN (`QpParams::default()`).
const PSN0: u32 = 100;
const ACK: Option<AethSyndrome> = Some(AethSyndrome::Ack { credits: 0x1F });

fn read_request(qpn: u32, psn: u32, va: u64, rkey: u32, len: u32) -> Vec<u8> {
    let mut r = roce(bth(Opcode::RcReadRequest, qpn, psn));
    r.reth = Some(RethRepr {
        va,
        rkey,
        dma_len: len,
    });
    frame_to_b(r)
}

fn opcodes_and_psns(frames: &[Seen]) -> Vec<(Opcode, u32)> {
    frames.iter().map(|f| (f.opcode, f.psn)).collect()
}

/// READ of 8 packets at PSN 100–107; the requester re-asks from 105, from 107 and from 100.
/// Every replayed packet is identical to the original at its PSN, opcode included: MIDDLE
/// and LAST from the middle, FIRST only at 100, never ONLY for this READ.
#[test]
fn read_retried_from_its_middle_is_replayed_with_the_original_opcodes() {
    let mut p = Pair::with_default();
    let data = p.b.mem.fill(BASE, 8 * PMTU as usize, 5);
    let (qpn, rkey) = (p.b.qpn, p.b.keys.rkey);
    let send = |p: &mut Pair, psn: u32, skip: u32| {
        let f = read_request(
            qpn,
            psn,
            BASE + u64::from(skip * PMTU),
            rkey,
            (8 - skip) * PMTU,
        );
        p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
        sent_frames(&mut p.b)
    };
    let original = send(&mut p, PSN0, 0);
    let mut want = vec![(Opcode::RcReadResponseFirst, PSN0)];
    want.extend((1..7).map(|i| (Opcode::RcReadResponseMiddle, PSN0 + i)));
    want.push((Opcode::RcReadResponseLast, PSN0 + 7));
    assert_eq!(opcodes_and_psns(&original), want);
    let placed: Vec<u8> = original.iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(placed, data);

    for (psn, skip) in [(PSN0 + 5, 5), (PSN0 + 7, 7), (PSN0, 0)] {
        let replay = send(&mut p, psn, skip);
        assert_eq!(
            replay,
            original[skip as usize..].to_vec(),
            "replay from PSN {psn} differs from the original responses"
        );
    }
    assert_eq!(p.b.dev.stats().replayed_read_responses, 3 + 1 + 8);
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Rts));
    assert!(
        p.b.completions().is_empty(),
        "a READ completes nothing at the responder"
    );
}

/// A has a READ of `npkts` packets outstanding; the scripted responder answers with
/// `script` (opcode, packet index). Returns A's completions and what A sent.
fn requester_sees(npkts: u32, script: &[(Opcode, u32)]) -> (Vec<Completion>, Vec<Seen>, Pair) {
    let mut p = Pair::with_default();
    let len = npkts * PMTU;
    let wr = SendWr::read(7, vec![p.a.sge(BASE, len)], p.b.remote(BASE + (1 << 20)));
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    let first = sent_frames(&mut p.a);
    assert_eq!(
        opcodes_and_psns(&first),
        vec![(Opcode::RcReadRequest, PSN0)]
    );
    let mut sent_after = Vec::new();
    for &(op, i) in script {
        let payload = vec![i as u8 + 1; PMTU as usize];
        let mut r = roce(bth(op, p.a.qpn, PSN0 + i));
        if op.has_aeth() {
            r.aeth = Some(AethRepr {
                syndrome: AethSyndrome::Ack { credits: 0x1F },
                msn: 1,
            });
        }
        r.payload = &payload;
        let _ = p.a.dev.handle_packet(0, &frame_to_a(r), &mut p.a.mem);
        sent_after.extend(sent_frames(&mut p.a));
    }
    (p.a.completions(), sent_after, p)
}

/// rnic's requester is as strict as rxe's completer: FIRST only at the READ's first PSN,
/// ONLY only for a one-packet READ, MIDDLE/LAST only after the first PSN. Anything else
/// is a bad response: the READ completes with BadRespErr and the QP goes to ERR.
#[test]
fn requester_accepts_each_read_response_opcode_only_at_its_position() {
    use Opcode::*;
    let good: Vec<(u32, Vec<(Opcode, u32)>)> = vec![
        (
            3,
            vec![
                (RcReadResponseFirst, 0),
                (RcReadResponseMiddle, 1),
                (RcReadResponseLast, 2),
            ],
        ),
        (1, vec![(RcReadResponseOnly, 0)]),
    ];
    for (npkts, script) in good {
        let (c, sent, p) = requester_sees(npkts, &script);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].status, WcStatus::Success, "{script:?}");
        assert_eq!(c[0].opcode, WcOpcode::RdmaRead);
        assert!(sent.is_empty(), "nothing to resend: {sent:?}");
        for i in 0..npkts {
            assert_eq!(
                p.a.mem.get(BASE + u64::from(i * PMTU), PMTU as usize),
                vec![i as u8 + 1; PMTU as usize]
            );
        }
    }
    let bad: Vec<(u32, Vec<(Opcode, u32)>)> = vec![
        // FIRST in the middle (what a READ retried from the middle used to get).
        (3, vec![(RcReadResponseFirst, 0), (RcReadResponseFirst, 1)]),
        // ONLY for a multi-packet READ, at its first PSN or at its last.
        (3, vec![(RcReadResponseOnly, 0)]),
        (
            3,
            vec![
                (RcReadResponseFirst, 0),
                (RcReadResponseMiddle, 1),
                (RcReadResponseOnly, 2),
            ],
        ),
        // MIDDLE or LAST at the first PSN.
        (3, vec![(RcReadResponseMiddle, 0)]),
        (1, vec![(RcReadResponseLast, 0)]),
        (1, vec![(RcReadResponseFirst, 0)]),
    ];
    for (npkts, script) in bad {
        let (c, _, p) = requester_sees(npkts, &script);
        assert_eq!(c.len(), 1, "{script:?}");
        assert_eq!(c[0].status, WcStatus::BadRespErr, "{script:?}");
        assert_eq!(p.a.dev.qp_state(p.a.qpn), Some(QpState::Err));
    }
}

/// A lost middle response: rnic re-reads at once from the lost PSN with a RETH for the rest,
/// and completes when the replay carries MIDDLE/LAST; a replay that starts with FIRST there
/// is refused.
#[test]
fn requester_rereads_from_the_lost_psn_and_takes_the_original_opcodes() {
    use Opcode::*;
    let (c, sent, p) = requester_sees(
        3,
        &[
            (RcReadResponseFirst, 0),
            (RcReadResponseLast, 2), // 1 was lost: out of sequence
            (RcReadResponseMiddle, 1),
            (RcReadResponseLast, 2),
        ],
    );
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, WcStatus::Success);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].opcode, RcReadRequest);
    assert_eq!(sent[0].psn, PSN0 + 1);
    let remote = p.b.remote(BASE + (1 << 20));
    assert_eq!(
        sent[0].reth,
        Some((remote.va + u64::from(PMTU), remote.rkey, 2 * PMTU))
    );
    assert_eq!(p.a.dev.stats().go_back_n, 1);

    let (c, _, _) = requester_sees(
        3,
        &[
            (RcReadResponseFirst, 0),
            (RcReadResponseLast, 2),
            (RcReadResponseFirst, 1),
        ],
    );
    assert_eq!(c[0].status, WcStatus::BadRespErr);
}

/// READ of 8 KiB at PSN 100, then a WRITE at 108 with a bad R_Key. The responder sends the
/// READ data it owes, then NAK(remote access) at 108: the READ succeeds, only the WRITE fails.
#[test]
fn fatal_nak_comes_after_the_read_data_already_owed() {
    // Scripted requester: what B sends, packet by packet.
    let mut p = Pair::with_default();
    let data = p.b.mem.fill(BASE, 8 * PMTU as usize, 9);
    let f = read_request(p.b.qpn, PSN0, BASE, p.b.keys.rkey, 8 * PMTU);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    let mut w = roce(bth(Opcode::RcWriteOnly, p.b.qpn, PSN0 + 8));
    w.reth = Some(RethRepr {
        va: BASE,
        rkey: p.b.keys.rkey ^ 0x5A5A,
        dma_len: 16,
    });
    w.payload = &[1; 16];
    p.b.dev
        .handle_packet(0, &frame_to_b(w), &mut p.b.mem)
        .unwrap();
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));
    let sent = sent_frames(&mut p.b);
    assert_eq!(sent.len(), 9, "{:?}", opcodes_and_psns(&sent));
    assert_eq!(sent[0].opcode, Opcode::RcReadResponseFirst);
    assert_eq!(sent[7].opcode, Opcode::RcReadResponseLast);
    let read: Vec<u8> = sent[..8].iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(read, data);
    assert_eq!(
        (sent[8].opcode, sent[8].psn, sent[8].syndrome),
        (
            Opcode::RcAck,
            PSN0 + 8,
            Some(AethSyndrome::Nak(NakCode::RemoteAccessError))
        )
    );

    // Two rnic devices: the completions on both sides.
    let mut p = Pair::with_default();
    let data = p.b.mem.fill(BASE, 8 * PMTU as usize, 9);
    let read = SendWr::read(1, vec![p.a.sge(BASE, 8 * PMTU)], p.b.remote(BASE));
    let mut bad = p.b.remote(BASE);
    bad.rkey ^= 0x5A5A;
    let write = SendWr::write(2, vec![p.a.sge(BASE + (1 << 20), 16)], bad);
    p.a.dev.post_send(p.a.qpn, read).unwrap();
    p.a.dev.post_send(p.a.qpn, write).unwrap();
    p.run(1000);
    assert_eq!(
        p.a.completion_statuses(),
        vec![(1, WcStatus::Success), (2, WcStatus::RemAccessErr)]
    );
    assert_eq!(p.a.mem.get(BASE, 8 * PMTU as usize), data);
    assert!(p.b.completions().is_empty());
    assert_eq!(p.b.dev.stats().naks_sent.remote_access_error, 1);
    assert_eq!(p.a.dev.qp_state(p.a.qpn), Some(QpState::Err));
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Err));
}

/// FETCH_ADD at PSN 100, then a WRITE at 101 with a bad R_Key: the atomic ACK goes out before
/// the NAK, so the requester's view (the atomic succeeded, with the original value) matches
/// the target memory (incremented once).
#[test]
fn fatal_nak_comes_after_the_atomic_ack_already_owed() {
    let mut p = Pair::with_default();
    let counter = BASE + (2 << 20);
    p.b.mem.write(counter, &40u64.to_le_bytes());
    let add = SendWr::fetch_add(1, p.a.sge(BASE, 8), p.b.remote(counter), 2);
    let mut bad = p.b.remote(BASE);
    bad.rkey ^= 0x5A5A;
    let write = SendWr::write(2, vec![p.a.sge(BASE + 64, 16)], bad);
    p.a.dev.post_send(p.a.qpn, add).unwrap();
    p.a.dev.post_send(p.a.qpn, write).unwrap();
    p.run(1000);
    let from_b: Vec<_> = p
        .sent(Dir::BtoA)
        .map(|s| (s.meta.opcode, s.meta.psn))
        .collect();
    assert_eq!(
        from_b,
        vec![(Opcode::RcAtomicAck, PSN0), (Opcode::RcAck, PSN0 + 1)]
    );
    assert_eq!(p.b.dev.stats().naks_sent.remote_access_error, 1);
    assert_eq!(
        p.a.completion_statuses(),
        vec![(1, WcStatus::Success), (2, WcStatus::RemAccessErr)]
    );
    assert_eq!(p.a.mem.u64_at(BASE), 40, "the original value reached A");
    assert_eq!(p.b.mem.u64_at(counter), 42, "executed exactly once");
    assert!(p.b.completions().is_empty());
}

/// Requester max_rd_atomic 4 against a responder with max_dest_rd_atomic 3: the fourth READ
/// is served like the others (rxe does not enforce the limit), with no NAK and no error.
#[test]
fn reads_beyond_max_dest_rd_atomic_are_served_not_naked() {
    // Scripted requester: four READ requests back to back.
    let mut p = Pair::new(QpParams {
        max_dest_rd_atomic: 3,
        ..QpParams::default()
    });
    p.b.mem.fill(BASE, 4 * PMTU as usize, 3);
    for i in 0..4 {
        let f = read_request(
            p.b.qpn,
            PSN0 + i,
            BASE + u64::from(i * PMTU),
            p.b.keys.rkey,
            PMTU,
        );
        p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    }
    let sent = sent_frames(&mut p.b);
    assert_eq!(
        sent.iter()
            .map(|f| (f.opcode, f.psn, f.syndrome))
            .collect::<Vec<_>>(),
        (0..4)
            .map(|i| (Opcode::RcReadResponseOnly, PSN0 + i, ACK))
            .collect::<Vec<_>>()
    );
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Rts));
    assert_eq!(p.b.dev.stats().naks_sent.total(), 0);

    // Two rnic devices: all four READs complete, also when every response of the first is
    // lost once, so all four are replayed from the recycled table.
    let mut p = Pair::new(QpParams {
        max_rd_atomic: 4,
        max_dest_rd_atomic: 3,
        ..QpParams::default()
    });
    let data = p.b.mem.fill(BASE, 4 * 2 * PMTU as usize, 3);
    p.drop = Box::new(|s| s.dir == Dir::BtoA && s.nth < 2);
    for i in 0..4u64 {
        let off = i * 2 * u64::from(PMTU);
        let wr = SendWr::read(
            i,
            vec![p.a.sge(BASE + off, 2 * PMTU)],
            p.b.remote(BASE + off),
        );
        p.a.dev.post_send(p.a.qpn, wr).unwrap();
    }
    p.run(10_000);
    assert_eq!(
        p.a.completion_statuses(),
        (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
    );
    assert_eq!(p.a.mem.get(BASE, data.len()), data);
    assert_eq!(p.b.dev.stats().naks_sent.total(), 0);
    assert!(p.b.completions().is_empty());
    assert_eq!(p.b.dev.qp_state(p.b.qpn), Some(QpState::Rts));
}

/// A WRITE at PSN 100 (ACKed), a READ at 101–102 (answered), then the WRITE again as a
/// duplicate: the re-ACK carries PSN 100, the last SEND/WRITE/atomic PSN the responder
/// executed, never a PSN of the READ (rxe's `ack_psn`, which READs do not move), and the MSN
/// that counts both. An ACK at 102 would tell the requester the READ's responses were
/// lost (implicit NAK, IBA 9.7.5.1.3) when they may be on their way.
#[test]
fn duplicate_write_after_a_read_is_acked_at_the_write_not_the_read() {
    // Scripted requester.
    let mut p = Pair::with_default();
    p.b.mem.fill(BASE, 2 * PMTU as usize, 4);
    let mut w = roce(bth(Opcode::RcWriteOnly, p.b.qpn, PSN0));
    w.reth = Some(RethRepr {
        va: BASE + (1 << 20),
        rkey: p.b.keys.rkey,
        dma_len: 16,
    });
    w.payload = &[1; 16];
    let write = frame_to_b(w);
    p.b.dev.handle_packet(0, &write, &mut p.b.mem).unwrap();
    let f = read_request(p.b.qpn, PSN0 + 1, BASE, p.b.keys.rkey, 2 * PMTU);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    assert_eq!(
        opcodes_and_psns(&sent_frames(&mut p.b)),
        vec![
            (Opcode::RcAck, PSN0),
            (Opcode::RcReadResponseFirst, PSN0 + 1),
            (Opcode::RcReadResponseLast, PSN0 + 2)
        ]
    );
    p.b.dev.handle_packet(0, &write, &mut p.b.mem).unwrap();
    let sent = sent_frames(&mut p.b);
    assert_eq!(
        sent.iter()
            .map(|f| (f.opcode, f.psn, f.syndrome))
            .collect::<Vec<_>>(),
        vec![(Opcode::RcAck, PSN0, ACK)],
        "the duplicate WRITE is re-ACKed at its own PSN"
    );
    // An atomic moves the PSN a duplicate is ACKed at (rxe: atomics set ack_psn).
    let mut a = roce(bth(Opcode::RcFetchAdd, p.b.qpn, PSN0 + 3));
    a.atomic_eth = Some(AtomicEthRepr {
        va: BASE + (2 << 20),
        rkey: p.b.keys.rkey,
        swap_add: 1,
        compare: 0,
    });
    p.b.dev
        .handle_packet(0, &frame_to_b(a), &mut p.b.mem)
        .unwrap();
    let f = read_request(p.b.qpn, PSN0 + 4, BASE, p.b.keys.rkey, PMTU);
    p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    assert_eq!(sent_frames(&mut p.b).len(), 2);
    p.b.dev.handle_packet(0, &write, &mut p.b.mem).unwrap();
    assert_eq!(
        opcodes_and_psns(&sent_frames(&mut p.b)),
        vec![(Opcode::RcAck, PSN0 + 3)]
    );

    // Two rnic devices: the WRITE's ACK and the READ's response are lost; after the
    // timeout the requester resends both, and the replayed response completes the READ
    // without a second retry.
    let mut p = Pair::with_default();
    let data = p.b.mem.fill(BASE, PMTU as usize, 4);
    p.drop = Box::new(|s| s.dir == Dir::BtoA && s.nth < 2);
    let write = SendWr::write(1, vec![p.a.sge(BASE, 16)], p.b.remote(BASE + (1 << 20)));
    let read = SendWr::read(2, vec![p.a.sge(BASE + (1 << 20), PMTU)], p.b.remote(BASE));
    p.a.dev.post_send(p.a.qpn, write).unwrap();
    p.a.dev.post_send(p.a.qpn, read).unwrap();
    p.run(1000);
    assert_eq!(
        p.a.completion_statuses(),
        vec![(1, WcStatus::Success), (2, WcStatus::Success)]
    );
    assert_eq!(p.a.mem.get(BASE + (1 << 20), PMTU as usize), data);
    let a = p.a.dev.stats();
    assert_eq!(
        (a.ack_timeouts, a.go_back_n),
        (1, 1),
        "one retry, by the timeout"
    );
    assert_eq!(
        p.sent(Dir::AtoB)
            .filter(|s| s.meta.opcode == Opcode::RcReadRequest)
            .count(),
        2
    );
}

/// Sends at most `n` of B's queued frames.
fn sent_up_to(node: &mut Node, n: usize) -> Vec<(Opcode, u32)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    while out.len() < n {
        let Some(m) = node.dev.poll_transmit(0, &node.mem, &mut buf) else {
            break;
        };
        out.push((m.opcode, m.psn));
    }
    out
}

/// Four READs of four packets are outstanding at B (PSN 100–115) and B has sent 100 and
/// 101 when the requester, having lost 101, comes back for it. The duplicate's replay goes
/// out next, and the responses B still had queued for 102–115 are never sent: the
/// requester, gone back to 101, would drop them as out of sequence and asks for each READ
/// again (IBA 9.7.5.1.1; rxe makes the duplicate's resource the current one). Each later
/// duplicate is answered at once, so every PSN leaves B once more and only once.
#[test]
fn a_duplicate_read_is_answered_before_the_responses_it_makes_stale() {
    let mut p = Pair::with_default();
    let data = p.b.mem.fill(BASE, 16 * PMTU as usize, 9);
    let (qpn, rkey) = (p.b.qpn, p.b.keys.rkey);
    let read_at = |k: u32, skip: u32| {
        read_request(
            qpn,
            PSN0 + 4 * k + skip,
            BASE + u64::from((4 * k + skip) * PMTU),
            rkey,
            (4 - skip) * PMTU,
        )
    };
    for k in 0..4 {
        p.b.dev
            .handle_packet(0, &read_at(k, 0), &mut p.b.mem)
            .unwrap();
    }
    assert_eq!(
        sent_up_to(&mut p.b, 2),
        vec![
            (Opcode::RcReadResponseFirst, PSN0),
            (Opcode::RcReadResponseMiddle, PSN0 + 1)
        ]
    );
    let mut again = Vec::new();
    for (k, skip) in [(0, 1), (1, 0), (2, 0), (3, 0)] {
        p.b.dev
            .handle_packet(0, &read_at(k, skip), &mut p.b.mem)
            .unwrap();
        again.extend(sent_frames(&mut p.b));
    }
    let psns: Vec<u32> = again.iter().map(|f| f.psn).collect();
    assert_eq!(psns, (PSN0 + 1..PSN0 + 16).collect::<Vec<_>>());
    let bytes: Vec<u8> = again.iter().flat_map(|f| f.payload.clone()).collect();
    assert_eq!(bytes, data[PMTU as usize..]);
    let s = p.b.dev.stats();
    assert_eq!((s.tx_read_responses, s.replayed_read_responses), (17, 15));
    assert_eq!(s.drops.total(), 0);
}

/// What a duplicate READ abandons besides READ data: an atomic ACK and a READ queued after
/// its PSN go (the requester asks for both again, and the atomic is answered from the
/// replay table without executing twice); a READ whose unsent packets straddle the
/// duplicate's PSN keeps those before it, with their original opcodes.
#[test]
fn a_duplicate_read_abandons_later_responses_and_keeps_earlier_ones() {
    let mut p = Pair::with_default();
    p.b.mem.fill(BASE, 8 * PMTU as usize, 3);
    let (qpn, rkey) = (p.b.qpn, p.b.keys.rkey);
    let atomic_va = BASE + (2 << 20);
    // READ 100–103, READ 104–107, fetch-and-add 108, READ 109.
    let read = |psn: u32, first: u32, n: u32| {
        read_request(qpn, psn, BASE + u64::from(first * PMTU), rkey, n * PMTU)
    };
    let mut fadd = roce(bth(Opcode::RcFetchAdd, qpn, PSN0 + 8));
    fadd.atomic_eth = Some(AtomicEthRepr {
        va: atomic_va,
        rkey,
        swap_add: 5,
        compare: 0,
    });
    let fadd = frame_to_b(fadd);
    for f in [
        read(PSN0, 0, 4),
        read(PSN0 + 4, 4, 4),
        fadd.clone(),
        read(PSN0 + 9, 0, 1),
    ] {
        p.b.dev.handle_packet(0, &f, &mut p.b.mem).unwrap();
    }
    assert_eq!(p.b.mem.u64_at(atomic_va), 5);
    assert_eq!(
        sent_up_to(&mut p.b, 1),
        vec![(Opcode::RcReadResponseFirst, PSN0)]
    );
    // A stale duplicate of the second READ from its middle (106): 101–105 stay queued.
    p.b.dev
        .handle_packet(0, &read(PSN0 + 6, 6, 2), &mut p.b.mem)
        .unwrap();
    assert_eq!(
        opcodes_and_psns(&sent_frames(&mut p.b)),
        vec![
            (Opcode::RcReadResponseMiddle, PSN0 + 1),
            (Opcode::RcReadResponseMiddle, PSN0 + 2),
            (Opcode::RcReadResponseLast, PSN0 + 3),
            (Opcode::RcReadResponseFirst, PSN0 + 4),
            (Opcode::RcReadResponseMiddle, PSN0 + 5),
            (Opcode::RcReadResponseMiddle, PSN0 + 6),
            (Opcode::RcReadResponseLast, PSN0 + 7),
        ]
    );
    // The atomic and the last READ are asked again: answered from the replay table and
    // replayed, the atomic not executed again.
    p.b.dev.handle_packet(0, &fadd, &mut p.b.mem).unwrap();
    p.b.dev
        .handle_packet(0, &read(PSN0 + 9, 0, 1), &mut p.b.mem)
        .unwrap();
    let rest = sent_frames(&mut p.b);
    assert_eq!(
        opcodes_and_psns(&rest),
        vec![
            (Opcode::RcAtomicAck, PSN0 + 8),
            (Opcode::RcReadResponseOnly, PSN0 + 9)
        ]
    );
    assert_eq!(rest[0].orig, Some(0));
    assert_eq!(p.b.mem.u64_at(atomic_va), 5);
    assert_eq!(p.b.dev.stats().tx_atomic_acks, 1);
}
