//! Shared receive queues: several QPs take their receives from one SRQ, in posting order,
//! whichever QP's message arrives first; a multi-packet SEND holds its WQE to its last
//! packet while other QPs' SENDs take the next ones; an empty SRQ draws RNR NAKs; and the
//! verbs refuse what verbs refuse.

mod common;

use common::*;
use rnic_transport::*;

/// Receive buffers on B, one per WQE.
const RECV_AT: u64 = BASE + (1 << 20);
const RECV_LEN: u32 = 8192;

/// A pair whose B side has `qps` fresh QPs on one SRQ of `srq_depth`, each connected to a
/// fresh QP of A's; returns the pair, the SRQ, and the (A, B) QP numbers.
fn pair_on_srq(qps: usize, srq_depth: u32) -> (Pair, SrqId, Vec<(u32, u32)>) {
    let mut p = Pair::with_default();
    let srq = p.b.dev.create_srq(srq_depth).unwrap();
    let params = QpParams::default();
    let mut ends = Vec::new();
    for _ in 0..qps {
        let qa = new_qp(&mut p.a);
        let qb = new_qp(&mut p.b);
        p.b.dev.set_qp_srq(qb, srq).unwrap();
        let peer = |n: &Node, qpn| Peer {
            mac: n.dev.config().mac,
            ip: n.dev.config().ip,
            qpn,
        };
        let (to_b, to_a) = (peer(&p.b, qb), peer(&p.a, qa));
        connect(&mut p.a.dev, qa, to_b, (5000, 100), &params);
        connect(&mut p.b.dev, qb, to_a, (100, 5000), &params);
        ends.push((qa, qb));
    }
    (p, srq, ends)
}

fn new_qp(n: &mut Node) -> u32 {
    n.dev
        .create_qp(QpInit {
            pd: n.pd,
            send_cq: n.cq,
            recv_cq: n.cq,
            max_send_wr: 64,
            max_recv_wr: 64,
        })
        .unwrap()
}

/// Posts WQE `k` on the SRQ: buffer `k`, `wr_id` k.
fn post(p: &mut Pair, srq: SrqId, k: u64) {
    let sge = p.b.sge(RECV_AT + k * u64::from(RECV_LEN), RECV_LEN);
    p.b.dev
        .post_srq_recv(srq, RecvWr::new(k, vec![sge]))
        .unwrap();
}

/// A's QP `qpn` SENDs `len` bytes of seed `seed` from its own buffer `slot`.
fn send(p: &mut Pair, qpn: u32, slot: u64, len: u32, seed: u8) -> Vec<u8> {
    let at = BASE + slot * 0x10000;
    let data = p.a.mem.fill(at, len as usize, seed);
    let sge = p.a.sge(at, len);
    p.a.dev
        .post_send(qpn, SendWr::send(slot, vec![sge]))
        .unwrap();
    data
}

/// B's receive completions: (wr_id, the QP it completed on, bytes).
fn receives(p: &mut Pair) -> Vec<(u64, u32, u32)> {
    p.b.completions()
        .iter()
        .filter(|c| c.opcode == WcOpcode::Recv)
        .map(|c| {
            assert_eq!(c.status, WcStatus::Success, "{c:?}");
            (c.wr_id, c.qpn, c.byte_len)
        })
        .collect()
}

#[test]
fn qps_take_the_srqs_wqes_in_posting_order_whichever_sends_first() {
    let (mut p, srq, ends) = pair_on_srq(2, 8);
    for k in 0..3 {
        post(&mut p, srq, k);
    }
    let first = send(&mut p, ends[1].0, 0, 600, 1);
    p.run(100);
    let second = send(&mut p, ends[0].0, 1, 700, 2);
    let third = send(&mut p, ends[1].0, 2, 800, 3);
    p.run(100);
    let got = receives(&mut p);
    assert_eq!(
        got,
        [
            (0, ends[1].1, 600),
            (1, ends[0].1, 700),
            (2, ends[1].1, 800)
        ]
    );
    for (k, data) in [first, second, third].iter().enumerate() {
        let at = RECV_AT + k as u64 * u64::from(RECV_LEN);
        assert_eq!(&p.b.mem.get(at, data.len()), data, "buffer {k}");
    }
    assert_eq!(p.b.dev.srq_len(srq), Some(0));
}

/// Two QPs' three-packet SENDs, their packets interleaved on the wire: each holds the WQE
/// its first packet took until its last, so neither message spills into the other's buffer.
#[test]
fn a_multi_packet_send_keeps_its_wqe_while_another_qps_send_takes_the_next() {
    let (mut p, srq, ends) = pair_on_srq(2, 8);
    for k in 0..2 {
        post(&mut p, srq, k);
    }
    let a = send(&mut p, ends[0].0, 0, 3000, 7);
    let b = send(&mut p, ends[1].0, 1, 3000, 9);
    p.run(100);
    // The device sends one packet per QP in turn: the two messages are interleaved.
    let first_packets: Vec<_> = p.sent(Dir::AtoB).take(2).map(|s| s.meta.qpn).collect();
    assert_eq!(first_packets, [ends[0].0, ends[1].0]);
    let got = receives(&mut p);
    assert_eq!(got, [(0, ends[0].1, 3000), (1, ends[1].1, 3000)]);
    assert_eq!(p.b.mem.get(RECV_AT, 3000), a);
    assert_eq!(p.b.mem.get(RECV_AT + u64::from(RECV_LEN), 3000), b);
}

/// An empty SRQ draws an RNR NAK; a WQE posted later is taken by the resent SEND. A WRITE
/// (no immediate) takes none.
#[test]
fn an_empty_srq_draws_rnr_naks_and_writes_take_no_wqe() {
    let (mut p, srq, ends) = pair_on_srq(1, 4);
    let data = send(&mut p, ends[0].0, 0, 500, 4);
    p.run(3);
    assert!(p.b.dev.stats().naks_sent.rnr > 0, "an RNR NAK for the SEND");
    assert!(receives(&mut p).is_empty());
    post(&mut p, srq, 0);
    post(&mut p, srq, 1);
    let sge = p.a.sge(BASE + 0x80000, 256);
    let mut write = SendWr::write(9, vec![sge], p.b.remote(BASE + 0x200000));
    write.signaled = true;
    p.a.dev.post_send(ends[0].0, write).unwrap();
    p.run(10_000);
    assert_eq!(receives(&mut p), [(0, ends[0].1, 500)]);
    assert_eq!(p.b.mem.get(RECV_AT, 500), data);
    assert_eq!(p.b.dev.srq_len(srq), Some(1), "the WRITE took no WQE");
}

#[test]
fn the_verbs_refuse_what_verbs_refuse() {
    let (mut p, srq, ends) = pair_on_srq(1, 2);
    let sge = p.b.sge(RECV_AT, 64);
    // A QP on an SRQ takes no receives of its own.
    let e =
        p.b.dev
            .post_recv(ends[0].1, RecvWr::new(0, vec![sge]))
            .unwrap_err();
    assert!(matches!(e, VerbsError::InvalidWr { .. }), "{e:?}");
    // The SRQ is set while the QP is in RESET only.
    let e = p.b.dev.set_qp_srq(ends[0].1, srq).unwrap_err();
    assert!(matches!(e, VerbsError::InvalidState { .. }), "{e:?}");
    let qp = new_qp(&mut p.b);
    let e = p.b.dev.set_qp_srq(qp, SrqId(7)).unwrap_err();
    assert!(matches!(e, VerbsError::UnknownSrq(SrqId(7))), "{e:?}");
    // Its depth bounds what is posted.
    post(&mut p, srq, 0);
    post(&mut p, srq, 1);
    let e =
        p.b.dev
            .post_srq_recv(srq, RecvWr::new(2, vec![sge]))
            .unwrap_err();
    assert!(matches!(e, VerbsError::QueueFull { depth: 2, .. }), "{e:?}");
    let e = p.b.dev.create_srq(0).unwrap_err();
    assert!(matches!(e, VerbsError::AttrOutOfRange { .. }), "{e:?}");
}

mod hostile {
    use super::*;
    use common::script::{bth, frame_to_b};
    use proptest::prelude::*;
    use rnic_wire::{Opcode, RoceRepr};

    const OPS: [Opcode; 6] = [
        Opcode::RcSendFirst,
        Opcode::RcSendMiddle,
        Opcode::RcSendLast,
        Opcode::RcSendOnly,
        Opcode::RcSendOnlyImm,
        Opcode::RcWriteLastImm,
    ];

    proptest! {
        /// Any sequence of SEND packets, in or out of order, with any payload, to two QPs on
        /// an SRQ of 4 WQEs: nothing panics, and no WQE is completed twice, invented, or
        /// both completed and still on the SRQ.
        #[test]
        fn hostile_sends_never_duplicate_or_invent_a_wqe(
            packets in prop::collection::vec((0usize..2, 0usize..OPS.len(), 0u32..4, 0usize..1200), 1..40)
        ) {
            let (mut p, srq, ends) = pair_on_srq(2, 4);
            for k in 0..4 {
                post(&mut p, srq, k);
            }
            let payload = vec![0x5Au8; 1200];
            let mut psn = [100u32; 2];
            for (qp, op, skip, len) in packets {
                let mut r = RoceRepr::new(bth(OPS[op], ends[qp].1, psn[qp] + skip), &payload[..len]);
                if OPS[op].has_immdt() {
                    r.imm = Some(7);
                }
                let frame = frame_to_b(r);
                let _ = p.b.dev.handle_packet(0, &frame, &mut p.b.mem);
                if skip == 0 {
                    psn[qp] += 1;
                }
            }
            let done: Vec<u64> = p.b.completions().iter()
                .filter(|c| matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm))
                .map(|c| c.wr_id)
                .collect();
            let mut unique = done.clone();
            unique.sort_unstable();
            unique.dedup();
            prop_assert_eq!(unique.len(), done.len(), "a WQE completed twice: {:?}", done);
            prop_assert!(done.iter().all(|&w| w < 4), "{:?}", done);
            let left = p.b.dev.srq_len(srq).unwrap();
            prop_assert!(done.len() + left <= 4, "{} completed, {} left", done.len(), left);
        }
    }
}
