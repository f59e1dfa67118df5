//! UC and UD state machines driven directly: two devices, frames moved by hand, chosen
//! frames dropped. What the spec says each service does with loss, errors and addressing.

mod common;

use common::PageMem;
use rnic_transport::*;
use rnic_wire::{FrameRepr, Opcode};

const BASE: u64 = 0x10_0000;
const MR_LEN: u64 = 1 << 20;
const PMTU: u32 = 1024;
const QKEY: u32 = 0x1111_1111;

struct End {
    dev: Device,
    mem: PageMem,
    pd: PdId,
    cq: CqId,
    qpn: u32,
    keys: MrKeys,
}

fn end(ip: [u8; 4], mac: [u8; 6], service: ServiceType) -> End {
    let (mut dev, pd, cq, keys) = common::device(ip, mac, 4096, (BASE, MR_LEN));
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: 256,
        max_recv_wr: 256,
    };
    let qpn = dev
        .create_qp_service(init, ReliabilityMode::GoBackN, service)
        .unwrap();
    End {
        dev,
        mem: PageMem::default(),
        pd,
        cq,
        qpn,
        keys,
    }
}

const A: ([u8; 4], [u8; 6]) = ([10, 0, 0, 1], [2, 0, 0, 0, 0, 0xA]);
const B: ([u8; 4], [u8; 6]) = ([10, 0, 0, 2], [2, 0, 0, 0, 0, 0xB]);

/// RESET -> INIT -> RTR -> RTS with the attributes the service's transitions require.
fn bring_up(e: &mut End, service: ServiceType, peer: ([u8; 4], [u8; 6]), peer_qpn: u32, qkey: u32) {
    let av = AddressVector::new(peer.1, peer.0);
    match service {
        ServiceType::Uc => {
            e.dev
                .modify_qp(e.qpn, &QpAttr::to_init(Access::REMOTE_WRITE))
                .unwrap();
            let rtr = QpAttr {
                state: QpState::Rtr,
                av: Some(av),
                path_mtu: Some(PMTU),
                dest_qp_num: Some(peer_qpn),
                rq_psn: Some(500),
                ..QpAttr::default()
            };
            e.dev.modify_qp(e.qpn, &rtr).unwrap();
        }
        _ => {
            let init = QpAttr {
                state: QpState::Init,
                port: Some(1),
                pkey: Some(0xFFFF),
                qkey: Some(qkey),
                ..QpAttr::default()
            };
            e.dev.modify_qp(e.qpn, &init).unwrap();
            let rtr = QpAttr {
                state: QpState::Rtr,
                av: Some(av),
                path_mtu: Some(PMTU),
                dest_qp_num: Some(peer_qpn),
                ..QpAttr::default()
            };
            e.dev.modify_qp(e.qpn, &rtr).unwrap();
        }
    }
    let rts = QpAttr {
        state: QpState::Rts,
        sq_psn: Some(500),
        ..QpAttr::default()
    };
    e.dev.modify_qp(e.qpn, &rts).unwrap();
}

fn pair(service: ServiceType) -> (End, End) {
    let mut a = end(A.0, A.1, service);
    let mut b = end(B.0, B.1, service);
    let (qa, qb) = (a.qpn, b.qpn);
    bring_up(&mut a, service, B, qb, QKEY);
    bring_up(&mut b, service, A, qa, QKEY);
    (a, b)
}

/// Every frame `a` has to send now.
fn drain(a: &mut End) -> Vec<(TxMeta, Vec<u8>)> {
    let mut out = Vec::new();
    loop {
        let mut buf = Vec::new();
        match a.dev.poll_transmit(0, &a.mem, &mut buf) {
            Some(m) => out.push((m, buf)),
            None => return out,
        }
    }
}

fn completions(e: &mut End) -> Vec<Completion> {
    std::iter::from_fn(|| e.dev.poll_cq(e.cq)).collect()
}

fn sge(e: &End, addr: u64, len: u32) -> Sge {
    Sge {
        addr,
        len,
        lkey: e.keys.lkey,
    }
}

#[test]
fn uc_write_and_send_complete_at_transmission_without_acks() {
    let (mut a, mut b) = pair(ServiceType::Uc);
    let src = a.mem.fill(BASE, 3000, 7);
    let wr = SendWr::write(
        1,
        vec![sge(&a, BASE, 3000)],
        RemoteAddr {
            va: BASE + 0x8000,
            rkey: b.keys.rkey,
        },
    );
    a.dev.post_send(a.qpn, wr).unwrap();
    b.dev
        .post_recv(b.qpn, RecvWr::new(9, vec![sge(&b, BASE + 0x2_0000, 4096)]))
        .unwrap();
    a.dev
        .post_send(a.qpn, SendWr::send(2, vec![sge(&a, BASE, 1500)]))
        .unwrap();
    let frames = drain(&mut a);
    let ops: Vec<Opcode> = frames.iter().map(|(m, _)| m.opcode).collect();
    assert_eq!(
        ops,
        [
            Opcode::UcWriteFirst,
            Opcode::UcWriteMiddle,
            Opcode::UcWriteLast,
            Opcode::UcSendFirst,
            Opcode::UcSendLast
        ]
    );
    // Both completed when sent, before anything arrived.
    let wcs = completions(&mut a);
    assert_eq!(wcs.len(), 2);
    assert!(wcs.iter().all(|c| c.status == WcStatus::Success));
    assert_eq!(a.dev.poll_timeout(), None, "no ACK timer on UC");
    for (m, f) in &frames {
        let p = FrameRepr::parse(f).unwrap();
        assert!(!p.roce.bth.ack_req, "{:?}", m.opcode);
        b.dev.handle_packet(0, f, &mut b.mem).unwrap();
    }
    assert_eq!(b.mem.get(BASE + 0x8000, 3000), src);
    assert_eq!(b.mem.get(BASE + 0x2_0000, 1500), src[..1500]);
    let wcs = completions(&mut b);
    assert_eq!(wcs.len(), 1);
    assert_eq!((wcs[0].wr_id, wcs[0].byte_len), (9, 1500));
    assert!(drain(&mut b).is_empty(), "a UC receiver sends nothing");
}

#[test]
fn uc_gap_drops_the_rest_of_the_message_and_resumes_at_the_next_first() {
    let (mut a, mut b) = pair(ServiceType::Uc);
    let src = a.mem.fill(BASE, 3072, 3);
    for id in 0..3u64 {
        b.dev
            .post_recv(
                b.qpn,
                RecvWr::new(100 + id, vec![sge(&b, BASE + 0x1_0000 * (id + 1), 4096)]),
            )
            .unwrap();
        a.dev
            .post_send(a.qpn, SendWr::send(id, vec![sge(&a, BASE, 3072)]))
            .unwrap();
    }
    let frames = drain(&mut a);
    assert_eq!(frames.len(), 9);
    // Lose the MIDDLE of the first message and the LAST of the second.
    for (i, (_, f)) in frames.iter().enumerate() {
        if i == 1 || i == 5 {
            continue;
        }
        let _ = b.dev.handle_packet(0, f, &mut b.mem);
    }
    let wcs = completions(&mut b);
    // Only the third message arrives, and it lands in the FIRST posted RECV: the RECVs of
    // the lost messages were never consumed.
    assert_eq!(wcs.len(), 1);
    assert_eq!((wcs[0].wr_id, wcs[0].byte_len), (100, 3072));
    assert_eq!(b.mem.get(BASE + 0x1_0000, 3072), src);
    let u = b.dev.stats().unreliable;
    assert_eq!(u.uc_messages_abandoned, 2, "{u:?}");
    assert_eq!(
        u.uc_packets_skipped, 1,
        "the LAST after the lost MIDDLE: {u:?}"
    );
    assert_eq!(b.dev.qp_state(b.qpn), Some(QpState::Rts));
    assert_eq!(
        completions(&mut a).len(),
        3,
        "the sender completed all three"
    );
}

#[test]
fn uc_errors_drop_the_message_and_keep_the_qp() {
    let (mut a, mut b) = pair(ServiceType::Uc);
    a.mem.fill(BASE, 2048, 1);
    // Bad R_Key: dropped, no NAK, no error state; nothing written.
    let wr = SendWr::write(
        1,
        vec![sge(&a, BASE, 2048)],
        RemoteAddr {
            va: BASE,
            rkey: b.keys.rkey ^ 0x100,
        },
    );
    a.dev.post_send(a.qpn, wr).unwrap();
    // A SEND with no RECV posted.
    a.dev
        .post_send(a.qpn, SendWr::send(2, vec![sge(&a, BASE, 100)]))
        .unwrap();
    for (_, f) in drain(&mut a) {
        assert!(b.dev.handle_packet(0, &f, &mut b.mem).is_err());
    }
    assert_eq!(b.mem.get(BASE, 2048), vec![0; 2048]);
    assert!(drain(&mut b).is_empty());
    let u = b.dev.stats().unreliable;
    assert_eq!(
        (u.uc_messages_abandoned, u.no_recv_messages),
        (1, 1),
        "{u:?}"
    );
    assert_eq!(
        u.uc_packets_skipped, 1,
        "the WRITE LAST after its refused FIRST"
    );
    assert_eq!(b.dev.qp_state(b.qpn), Some(QpState::Rts));
    // READ and atomics need RC: refused at post time, naming the service.
    let e = a
        .dev
        .post_send(
            a.qpn,
            SendWr::read(3, vec![sge(&a, BASE, 8)], RemoteAddr { va: BASE, rkey: 1 }),
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("UC") && e.to_string().contains("RC"),
        "{e}"
    );
}

#[test]
fn ud_send_carries_deth_and_lands_after_the_grh_area() {
    let (mut a, mut b) = pair(ServiceType::Ud);
    let src = a.mem.fill(BASE, 1024, 9);
    b.dev
        .post_recv(
            b.qpn,
            RecvWr::new(5, vec![sge(&b, BASE + 0x4000, 40 + 1024)]),
        )
        .unwrap();
    let mut wr = SendWr::send(1, vec![sge(&a, BASE, 1024)]);
    wr.opcode = WrOpcode::SendImm;
    wr.imm = Some(0xABCD);
    a.dev.post_send(a.qpn, wr).unwrap();
    let frames = drain(&mut a);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].0.opcode, Opcode::UdSendOnlyImm);
    let p = FrameRepr::parse(&frames[0].1).unwrap();
    let deth = p.roce.deth.unwrap();
    assert_eq!((deth.qkey, deth.src_qp), (QKEY, a.qpn));
    assert_eq!(completions(&mut a)[0].status, WcStatus::Success);
    b.dev.handle_packet(0, &frames[0].1, &mut b.mem).unwrap();
    let wc = &completions(&mut b)[0];
    assert_eq!(wc.status, WcStatus::Success);
    assert_eq!(wc.byte_len, 40 + 1024);
    assert_eq!(wc.src_qp, Some(a.qpn));
    assert_eq!(wc.imm, Some(0xABCD));
    assert_eq!(b.mem.get(BASE + 0x4000 + 40, 1024), src);
    // GRH area: 20 zero bytes, then the IPv4 header (version 4, IHL 5; source = a).
    let grh = b.mem.get(BASE + 0x4000, 40);
    assert_eq!(grh[..20], [0; 20]);
    assert_eq!(grh[20], 0x45);
    assert_eq!(grh[32..36], A.0);
}

#[test]
fn ud_checks_qkey_length_and_receives() {
    let (mut a, mut b) = pair(ServiceType::Ud);
    a.mem.fill(BASE, 2048, 2);
    // Longer than the path MTU: refused at post time, naming path_mtu.
    let e = a
        .dev
        .post_send(a.qpn, SendWr::send(1, vec![sge(&a, BASE, PMTU + 1)]))
        .unwrap_err();
    assert!(e.to_string().contains("path_mtu"), "{e}");
    // No receive posted: dropped and counted.
    a.dev
        .post_send(a.qpn, SendWr::send(2, vec![sge(&a, BASE, 64)]))
        .unwrap();
    let f = drain(&mut a).remove(0).1;
    assert!(b.dev.handle_packet(0, &f, &mut b.mem).is_err());
    assert_eq!(b.dev.stats().unreliable.no_recv_messages, 1);
    // A receive too short for GRH + payload completes with LOC_LEN_ERR.
    b.dev
        .post_recv(b.qpn, RecvWr::new(7, vec![sge(&b, BASE + 0x4000, 40 + 63)]))
        .unwrap();
    b.dev.handle_packet(0, &f, &mut b.mem).unwrap();
    assert_eq!(completions(&mut b)[0].status, WcStatus::LocLenErr);
    assert_eq!(b.dev.qp_state(b.qpn), Some(QpState::Rts));
    // A sender with another Q_Key is refused.
    let mut c = end([10, 0, 0, 3], [2, 0, 0, 0, 0, 0xC], ServiceType::Ud);
    let bq = b.qpn;
    bring_up(&mut c, ServiceType::Ud, B, bq, 0x2222);
    c.mem.fill(BASE, 64, 4);
    c.dev
        .post_send(c.qpn, SendWr::send(3, vec![sge(&c, BASE, 64)]))
        .unwrap();
    b.dev
        .post_recv(b.qpn, RecvWr::new(8, vec![sge(&b, BASE + 0x4000, 4096)]))
        .unwrap();
    let f = drain(&mut c).remove(0).1;
    assert_eq!(
        b.dev.handle_packet(0, &f, &mut b.mem),
        Err(RxDrop::QkeyMismatch(0x2222))
    );
    assert_eq!(b.dev.stats().unreliable.ud_qkey_mismatches, 1);
    // A UD QP takes datagrams from any peer with the right Q_Key: c with QKEY.
    let mut d = end([10, 0, 0, 4], [2, 0, 0, 0, 0, 0xD], ServiceType::Ud);
    bring_up(&mut d, ServiceType::Ud, B, bq, QKEY);
    d.mem.fill(BASE, 64, 4);
    d.dev
        .post_send(d.qpn, SendWr::send(4, vec![sge(&d, BASE, 64)]))
        .unwrap();
    let f = drain(&mut d).remove(0).1;
    b.dev.handle_packet(0, &f, &mut b.mem).unwrap();
    let wc = &completions(&mut b)[0];
    assert_eq!((wc.wr_id, wc.src_qp), (8, Some(d.qpn)));
    // WRITE is not a UD operation.
    let e = a
        .dev
        .post_send(
            a.qpn,
            SendWr::write(5, vec![sge(&a, BASE, 8)], RemoteAddr { va: BASE, rkey: 1 }),
        )
        .unwrap_err();
    assert!(e.to_string().contains("UD"), "{e}");
}

#[test]
fn services_refuse_each_others_opcodes_and_attributes() {
    let (mut a, _b) = pair(ServiceType::Ud);
    let (mut rc_sender, _) = pair(ServiceType::Uc);
    let _ = &mut rc_sender;
    // A UC frame to a UD QP is an unsupported opcode for it.
    let mut uc = end(B.0, B.1, ServiceType::Uc);
    let aq = a.qpn;
    bring_up(&mut uc, ServiceType::Uc, A, aq, 0);
    uc.mem.fill(BASE, 8, 1);
    uc.dev
        .post_send(uc.qpn, SendWr::send(1, vec![sge(&uc, BASE, 8)]))
        .unwrap();
    let f = drain(&mut uc).remove(0).1;
    assert_eq!(
        a.dev.handle_packet(0, &f, &mut a.mem),
        Err(RxDrop::UnsupportedOpcode(Opcode::UcSendOnly))
    );
    // UD's RESET -> INIT needs a Q_Key; UC's refuses one; RC's RTR attributes are not UC's.
    let mut ud = end(A.0, A.1, ServiceType::Ud);
    let e = ud
        .dev
        .modify_qp(ud.qpn, &QpAttr::to_init(Access::empty()))
        .unwrap_err();
    assert!(e.to_string().contains("qkey"), "{e}");
    let mut uc2 = end(A.0, A.1, ServiceType::Uc);
    uc2.dev
        .modify_qp(uc2.qpn, &QpAttr::to_init(Access::REMOTE_WRITE))
        .unwrap();
    let e = uc2
        .dev
        .modify_qp(
            uc2.qpn,
            &QpAttr::to_rtr(AddressVector::new(B.1, B.0), PMTU, 0x11, 0),
        )
        .unwrap_err();
    assert!(e.to_string().contains("max_dest_rd_atomic"), "{e}");
    assert_eq!(ud.dev.qp_service(ud.qpn), Some(ServiceType::Ud));
    let _ = ud.pd;
}
