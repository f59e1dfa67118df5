//! Verbs: the modify_qp table and its errors, posting in each state, limits, many QPs and the
//! timer heap, SQD.

mod common;

use common::*;
use rnic_transport::*;

fn fresh() -> (Device, PdId, CqId, u32) {
    let mut dev = Device::new(DeviceConfig::default());
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(64).unwrap();
    let qpn = dev
        .create_qp(QpInit {
            pd,
            send_cq: cq,
            recv_cq: cq,
            max_send_wr: 4,
            max_recv_wr: 4,
        })
        .unwrap();
    (dev, pd, cq, qpn)
}

fn av() -> AddressVector {
    AddressVector::new([2, 0, 0, 0, 0, 2], [10, 0, 0, 2])
}

#[test]
fn qpns_start_at_0x11() {
    let (mut dev, pd, cq, qpn) = fresh();
    assert_eq!(qpn, FIRST_QPN);
    let q2 = dev
        .create_qp(QpInit {
            pd,
            send_cq: cq,
            recv_cq: cq,
            max_send_wr: 1,
            max_recv_wr: 1,
        })
        .unwrap();
    assert_eq!(q2, 0x12);
    assert_eq!(dev.qp_state(q2), Some(QpState::Reset));
    assert_eq!(
        dev.create_qp(QpInit {
            pd: PdId(9),
            send_cq: cq,
            recv_cq: cq,
            max_send_wr: 1,
            max_recv_wr: 1
        }),
        Err(VerbsError::UnknownPd(PdId(9)))
    );
    assert_eq!(
        dev.create_qp(QpInit {
            pd,
            send_cq: CqId(7),
            recv_cq: cq,
            max_send_wr: 1,
            max_recv_wr: 1
        }),
        Err(VerbsError::UnknownCq(CqId(7)))
    );
    assert!(matches!(
        dev.create_qp(QpInit {
            pd,
            send_cq: cq,
            recv_cq: cq,
            max_send_wr: u32::MAX,
            max_recv_wr: 1
        }),
        Err(VerbsError::AttrOutOfRange {
            attr: "max_send_wr",
            ..
        })
    ));
    dev.destroy_qp(q2).unwrap();
    assert_eq!(dev.qp_state(q2), None);
    assert_eq!(dev.destroy_qp(q2), Err(VerbsError::UnknownQp(q2)));
    assert_eq!(dev.qp_count(), 1);
}

#[test]
fn max_qps_is_enforced() {
    let mut dev = Device::new(DeviceConfig {
        max_qps: 2,
        ..DeviceConfig::default()
    });
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(1).unwrap();
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: 1,
        max_recv_wr: 1,
    };
    dev.create_qp(init).unwrap();
    dev.create_qp(init).unwrap();
    assert!(matches!(
        dev.create_qp(init),
        Err(VerbsError::ResourceExhausted { .. })
    ));
}

#[test]
fn modify_qp_enforces_the_table() {
    let (mut dev, _, _, qpn) = fresh();
    // No RESET -> RTR.
    let rtr = QpAttr::to_rtr(av(), 1024, 0x20, 0);
    assert_eq!(
        dev.modify_qp(qpn, &rtr),
        Err(VerbsError::InvalidTransition {
            from: QpState::Reset,
            to: QpState::Rtr
        })
    );
    // INIT needs port, pkey and access.
    let bad = QpAttr {
        state: QpState::Init,
        port: Some(1),
        pkey: Some(0xFFFF),
        ..QpAttr::default()
    };
    assert_eq!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::MissingAttr {
            attr: "access",
            from: QpState::Reset,
            to: QpState::Init
        })
    );
    // An attribute the transition does not take.
    let mut bad = QpAttr::to_init(Access::REMOTE_WRITE);
    bad.sq_psn = Some(1);
    assert_eq!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::AttrNotAllowed {
            attr: "sq_psn",
            from: QpState::Reset,
            to: QpState::Init
        })
    );
    let mut bad = QpAttr::to_init(Access::REMOTE_WRITE);
    bad.port = Some(2);
    assert!(matches!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::AttrOutOfRange { attr: "port", .. })
    ));
    dev.modify_qp(qpn, &QpAttr::to_init(Access::REMOTE_WRITE))
        .unwrap();
    // RTR: path MTU values only.
    let mut bad = rtr;
    bad.path_mtu = Some(1500);
    let e = dev.modify_qp(qpn, &bad).unwrap_err();
    assert!(
        e.to_string().contains("path_mtu") && e.to_string().contains("4096"),
        "{e}"
    );
    let mut bad = rtr;
    bad.min_rnr_timer = None;
    assert!(matches!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::MissingAttr {
            attr: "min_rnr_timer",
            ..
        })
    ));
    let mut bad = rtr;
    bad.rq_psn = Some(1 << 24);
    assert!(matches!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::AttrOutOfRange { attr: "rq_psn", .. })
    ));
    dev.modify_qp(qpn, &rtr).unwrap();
    assert_eq!(dev.qp_state(qpn), Some(QpState::Rtr));
    // RTS: retry counts 0..=7.
    let mut bad = QpAttr::to_rts(0);
    bad.retry_cnt = Some(8);
    assert!(matches!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::AttrOutOfRange {
            attr: "retry_cnt",
            ..
        })
    ));
    let mut bad = QpAttr::to_rts(0);
    bad.timeout = None;
    assert!(matches!(
        dev.modify_qp(qpn, &bad),
        Err(VerbsError::MissingAttr {
            attr: "timeout",
            ..
        })
    ));
    dev.modify_qp(qpn, &QpAttr::to_rts(0)).unwrap();
    // RTS -> RTS with an optional attribute; RTS -> SQD -> SQD (timeout) -> RTS.
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Rts,
            min_rnr_timer: Some(3),
            ..QpAttr::default()
        },
    )
    .unwrap();
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Sqd,
            ..QpAttr::default()
        },
    )
    .unwrap();
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Sqd,
            timeout: Some(5),
            ..QpAttr::default()
        },
    )
    .unwrap();
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Rts,
            ..QpAttr::default()
        },
    )
    .unwrap();
    assert!(matches!(
        dev.modify_qp(
            qpn,
            &QpAttr {
                state: QpState::Init,
                ..QpAttr::default()
            }
        ),
        Err(VerbsError::InvalidTransition { .. })
    ));
    // Any state -> ERR -> RESET.
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Err,
            ..QpAttr::default()
        },
    )
    .unwrap();
    assert!(matches!(
        dev.modify_qp(qpn, &QpAttr::to_rts(0)),
        Err(VerbsError::InvalidTransition { .. })
    ));
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Reset,
            ..QpAttr::default()
        },
    )
    .unwrap();
    assert_eq!(dev.qp_state(qpn), Some(QpState::Reset));
    assert_eq!(
        dev.modify_qp(0x999, &QpAttr::default()),
        Err(VerbsError::UnknownQp(0x999))
    );
}

#[test]
fn posting_per_state() {
    let (mut dev, pd, cq, qpn) = fresh();
    let keys = dev.reg_mr(pd, 0, 4096, Access::LOCAL_WRITE).unwrap();
    let sge = Sge {
        addr: 0,
        len: 8,
        lkey: keys.lkey,
    };
    assert!(matches!(
        dev.post_send(qpn, SendWr::send(1, vec![sge])),
        Err(VerbsError::InvalidState { .. })
    ));
    assert!(matches!(
        dev.post_recv(qpn, RecvWr::new(1, vec![sge])),
        Err(VerbsError::InvalidState { .. })
    ));
    dev.modify_qp(qpn, &QpAttr::to_init(Access::empty()))
        .unwrap();
    dev.post_recv(qpn, RecvWr::new(1, vec![sge])).unwrap();
    assert!(matches!(
        dev.post_send(qpn, SendWr::send(1, vec![sge])),
        Err(VerbsError::InvalidState { .. })
    ));
    dev.modify_qp(qpn, &QpAttr::to_rtr(av(), 1024, 0x20, 0))
        .unwrap();
    dev.modify_qp(qpn, &QpAttr::to_rts(0)).unwrap();
    for i in 0..4 {
        dev.post_send(qpn, SendWr::send(i, vec![sge])).unwrap();
    }
    assert_eq!(
        dev.post_send(qpn, SendWr::send(9, vec![sge])),
        Err(VerbsError::QueueFull {
            queue: "send",
            depth: 4
        })
    );
    for _ in 0..3 {
        dev.post_recv(qpn, RecvWr::new(1, vec![sge])).unwrap();
    }
    assert!(matches!(
        dev.post_recv(qpn, RecvWr::new(1, vec![sge])),
        Err(VerbsError::QueueFull { .. })
    ));
    // Shapes.
    let bad = SendWr {
        opcode: WrOpcode::Write,
        ..SendWr::send(1, vec![sge])
    };
    assert!(matches!(
        dev.post_send(qpn, bad),
        Err(VerbsError::InvalidWr { .. })
    ));
    let bad = SendWr {
        opcode: WrOpcode::FetchAdd,
        remote: Some(RemoteAddr::default()),
        atomic: Some(AtomicArgs::default()),
        ..SendWr::send(1, vec![Sge { len: 4, ..sge }])
    };
    assert!(matches!(
        dev.post_send(qpn, bad),
        Err(VerbsError::InvalidWr { .. })
    ));
    let bad = SendWr::send(1, vec![sge; 33]);
    assert_eq!(
        dev.post_send(qpn, bad),
        Err(VerbsError::TooManySges { given: 33, max: 32 })
    );
    // Moving to ERR flushes the 4 sends and 4 receives, in order.
    dev.modify_qp(
        qpn,
        &QpAttr {
            state: QpState::Err,
            ..QpAttr::default()
        },
    )
    .unwrap();
    let c: Vec<_> = std::iter::from_fn(|| dev.poll_cq(cq)).collect();
    assert_eq!(c.len(), 8);
    assert!(c.iter().all(|c| c.status == WcStatus::WrFlushErr));
    assert_eq!(
        c[..4].iter().map(|c| c.wr_id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    // In ERR, posts complete at once with a flush error.
    dev.post_recv(qpn, RecvWr::new(42, vec![])).unwrap();
    assert_eq!(
        dev.poll_cq(cq).map(|c| (c.wr_id, c.status, c.opcode)),
        Some((42, WcStatus::WrFlushErr, WcOpcode::Recv))
    );
}

#[test]
fn mr_registration_rules() {
    let (mut dev, pd, _, _) = fresh();
    assert!(matches!(
        dev.reg_mr(pd, 0, 10, Access::REMOTE_WRITE),
        Err(VerbsError::InvalidMr { .. })
    ));
    assert!(matches!(
        dev.reg_mr(pd, u64::MAX, 10, Access::empty()),
        Err(VerbsError::InvalidMr { .. })
    ));
    assert_eq!(
        dev.reg_mr(PdId(5), 0, 10, Access::empty()),
        Err(VerbsError::UnknownPd(PdId(5)))
    );
    let k = dev.reg_mr(pd, 0, 10, Access::REMOTE_READ).unwrap();
    assert_eq!(k.lkey, k.rkey);
    dev.dereg_mr(k.lkey).unwrap();
    assert_eq!(dev.dereg_mr(k.lkey), Err(VerbsError::UnknownKey(k.lkey)));
    assert!(dev.create_cq(0).is_err());
}

#[test]
fn cq_overrun_is_counted() {
    let mut p = Pair::with_default();
    // A second QP on A with a CQ of depth 1: flushing two RECVs overruns it.
    let cq_small = p.a.dev.create_cq(1).unwrap();
    let init = QpInit {
        pd: p.a.pd,
        send_cq: cq_small,
        recv_cq: cq_small,
        max_send_wr: 8,
        max_recv_wr: 8,
    };
    let qpn = p.a.dev.create_qp(init).unwrap();
    p.a.dev
        .modify_qp(qpn, &QpAttr::to_init(Access::empty()))
        .unwrap();
    let sge = p.a.sge(BASE, 8);
    p.a.dev.post_recv(qpn, RecvWr::new(1, vec![sge])).unwrap();
    p.a.dev.post_recv(qpn, RecvWr::new(2, vec![sge])).unwrap();
    p.a.dev
        .modify_qp(
            qpn,
            &QpAttr {
                state: QpState::Err,
                ..QpAttr::default()
            },
        )
        .unwrap();
    assert_eq!(p.a.dev.cq_len(cq_small), 1);
    assert_eq!(p.a.dev.cq_overruns(cq_small), 1);
    assert_eq!(p.a.dev.stats().cq_overruns, 1);
}

#[test]
fn responder_cq_overrun_naks_remote_operational_error() {
    let mut p = Pair::with_default();
    let cq_small = p.b.dev.create_cq(1).unwrap();
    let init = QpInit {
        pd: p.b.pd,
        send_cq: cq_small,
        recv_cq: cq_small,
        max_send_wr: 8,
        max_recv_wr: 8,
    };
    let qb = p.b.dev.create_qp(init).unwrap();
    let params = QpParams::default();
    connect(
        &mut p.b.dev,
        qb,
        Peer {
            mac: [2, 0, 0, 0, 0, 0xA],
            ip: [10, 0, 0, 1],
            qpn: p.a.qpn,
        },
        (100, 1),
        &params,
    );
    p.b.dev.destroy_qp(p.b.qpn).unwrap();
    // Re-point A at the new QP.
    p.a.dev
        .modify_qp(
            p.a.qpn,
            &QpAttr {
                state: QpState::Err,
                ..QpAttr::default()
            },
        )
        .unwrap();
    p.a.dev
        .modify_qp(
            p.a.qpn,
            &QpAttr {
                state: QpState::Reset,
                ..QpAttr::default()
            },
        )
        .unwrap();
    connect(
        &mut p.a.dev,
        p.a.qpn,
        Peer {
            mac: [2, 0, 0, 0, 0, 0xB],
            ip: [10, 0, 0, 2],
            qpn: qb,
        },
        (1, 100),
        &params,
    );
    p.b.qpn = qb;
    p.a.completions();
    for i in 0..2 {
        p.b.dev
            .post_recv(qb, RecvWr::new(i, vec![p.b.sge(BASE, 64)]))
            .unwrap();
        p.a.dev
            .post_send(p.a.qpn, SendWr::send(i, vec![p.a.sge(BASE, 10)]))
            .unwrap();
    }
    p.run(100);
    let c = p.a.completions();
    assert_eq!(
        c.iter().map(|c| c.status).collect::<Vec<_>>(),
        vec![WcStatus::Success, WcStatus::RemOpErr]
    );
    assert_eq!(p.b.dev.stats().naks_sent.remote_operational_error, 1);
    assert_eq!(p.b.dev.qp_state(qb), Some(QpState::Err));
}

#[test]
fn many_qps_round_robin_and_exact_timers() {
    let mut a = Node::new([10, 0, 0, 1], [2, 0, 0, 0, 0, 0xA]);
    let mut b = Node::new([10, 0, 0, 2], [2, 0, 0, 0, 0, 0xB]);
    let params = QpParams {
        timeout: 8,
        ..QpParams::default()
    };
    let n = 500u32;
    let mut pairs = Vec::new();
    for _ in 0..n {
        let init_a = QpInit {
            pd: a.pd,
            send_cq: a.cq,
            recv_cq: a.cq,
            max_send_wr: 4,
            max_recv_wr: 4,
        };
        let init_b = QpInit {
            pd: b.pd,
            send_cq: b.cq,
            recv_cq: b.cq,
            max_send_wr: 4,
            max_recv_wr: 4,
        };
        let qa = a.dev.create_qp(init_a).unwrap();
        let qb = b.dev.create_qp(init_b).unwrap();
        connect(
            &mut a.dev,
            qa,
            Peer {
                mac: [2, 0, 0, 0, 0, 0xB],
                ip: [10, 0, 0, 2],
                qpn: qb,
            },
            (7, 7),
            &params,
        );
        connect(
            &mut b.dev,
            qb,
            Peer {
                mac: [2, 0, 0, 0, 0, 0xA],
                ip: [10, 0, 0, 1],
                qpn: qa,
            },
            (7, 7),
            &params,
        );
        pairs.push((qa, qb));
    }
    for (i, &(qa, _)) in pairs.iter().enumerate() {
        let len = 3 * 1024;
        let wr = SendWr::write(
            i as u64,
            vec![a.sge(BASE, len)],
            b.remote(BASE + 4096 * i as u64),
        );
        a.dev.post_send(qa, wr).unwrap();
    }
    // The first n frames come from n different QPs (round robin, one packet per turn).
    let mut buf = Vec::new();
    let mut first = Vec::new();
    let mut frames = Vec::new();
    while let Some(m) = a.dev.poll_transmit(0, &a.mem, &mut buf) {
        first.push(m.qpn);
        frames.push(buf.clone());
    }
    assert_eq!(frames.len(), 3 * n as usize);
    let mut head: Vec<u32> = first[..n as usize].to_vec();
    head.sort_unstable();
    head.dedup();
    assert_eq!(head.len(), n as usize);
    // Every QP armed the same ACK timeout; the heap reports it exactly.
    let t = 4_096_000u64 << 8;
    assert_eq!(a.dev.poll_timeout(), Some(t));
    // Deliver all but the last QP's frames; the rest time out exactly once.
    let last_qp = pairs.last().unwrap().0;
    for (f, &q) in frames.iter().zip(&first) {
        if q != last_qp {
            b.dev.handle_packet(10, f, &mut b.mem).unwrap();
        }
    }
    while let Some(_m) = b.dev.poll_transmit(20, &b.mem, &mut buf) {
        a.dev.handle_packet(30, &buf, &mut a.mem).unwrap();
    }
    assert_eq!(a.completions().len(), n as usize - 1);
    // Only the last QP still has a deadline, and it is still the original one.
    assert_eq!(a.dev.poll_timeout(), Some(t));
    a.dev.handle_timeout(t - 1);
    assert_eq!(a.dev.stats().ack_timeouts, 0);
    a.dev.handle_timeout(t);
    assert_eq!(a.dev.stats().ack_timeouts, 1);
    assert_eq!(
        a.dev.poll_timeout(),
        None,
        "nothing armed until the resend goes out"
    );
    let mut resent = 0;
    while let Some(m) = a.dev.poll_transmit(t, &a.mem, &mut buf) {
        assert!(m.is_retransmit && m.qpn == last_qp);
        b.dev.handle_packet(t, &buf, &mut b.mem).unwrap();
        resent += 1;
    }
    assert_eq!(resent, 3);
    while b.dev.poll_transmit(t, &b.mem, &mut buf).is_some() {
        a.dev.handle_packet(t, &buf, &mut a.mem).unwrap();
    }
    assert_eq!(a.completions().len(), 1);
    assert_eq!(a.dev.poll_timeout(), None);
    assert!(a.dev.timer_heap_len() <= 1);
}

#[test]
fn sqd_finishes_started_messages_and_holds_new_ones() {
    let mut p = Pair::with_default();
    p.a.mem.fill(BASE, 8192, 1);
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::write(1, vec![p.a.sge(BASE, 4096)], p.b.remote(BASE)),
        )
        .unwrap();
    let mut buf = Vec::new();
    let m = p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).unwrap();
    let mut frames = vec![buf.clone()];
    assert_eq!(m.opcode, rnic_wire::Opcode::RcWriteFirst);
    p.a.dev
        .modify_qp(
            p.a.qpn,
            &QpAttr {
                state: QpState::Sqd,
                ..QpAttr::default()
            },
        )
        .unwrap();
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::write(2, vec![p.a.sge(BASE, 10)], p.b.remote(BASE)),
        )
        .unwrap();
    while p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).is_some() {
        frames.push(buf.clone());
    }
    assert_eq!(
        frames.len(),
        4,
        "the started WRITE finishes, the new one waits"
    );
    for f in &frames {
        p.b.dev.handle_packet(0, f, &mut p.b.mem).unwrap();
    }
    p.run(100);
    assert_eq!(
        p.a.completions()
            .iter()
            .map(|c| c.wr_id)
            .collect::<Vec<_>>(),
        vec![1]
    );
    p.a.dev
        .modify_qp(
            p.a.qpn,
            &QpAttr {
                state: QpState::Rts,
                ..QpAttr::default()
            },
        )
        .unwrap();
    p.run(100);
    assert_eq!(
        p.a.completions()
            .iter()
            .map(|c| c.wr_id)
            .collect::<Vec<_>>(),
        vec![2]
    );
}

#[test]
fn frames_carry_the_configured_addresses() {
    let mut p = Pair::with_default();
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::write(1, vec![p.a.sge(BASE, 10)], p.b.remote(BASE)),
        )
        .unwrap();
    let mut buf = Vec::new();
    p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).unwrap();
    let f = rnic_wire::FrameRepr::parse(&buf).unwrap();
    assert_eq!(f.addr.src_ip, [10, 0, 0, 1]);
    assert_eq!(f.addr.dst_ip, [10, 0, 0, 2]);
    assert_eq!(f.addr.dst_mac, [2, 0, 0, 0, 0, 0xB]);
    assert_eq!(
        f.addr.udp_src_port,
        rnic_wire::udp_entropy_port(p.a.qpn, p.b.qpn)
    );
    assert_eq!(f.addr.dscp_ecn, 0x02);
    assert_eq!(f.roce.bth.dest_qp, p.b.qpn);
    assert_eq!(f.roce.bth.pkey, 0xFFFF);
    assert!(f.roce.bth.ack_req);
    assert_eq!(
        f.roce.reth.map(|r| (r.va, r.rkey, r.dma_len)),
        Some((BASE, p.b.keys.rkey, 10))
    );
}

#[test]
fn ack_req_every_16th_packet_and_on_the_last() {
    let mut p = Pair::with_default();
    let len = 40 * 1024;
    p.a.dev
        .post_send(
            p.a.qpn,
            SendWr::write(1, vec![p.a.sge(BASE, len)], p.b.remote(BASE)),
        )
        .unwrap();
    let mut buf = Vec::new();
    let mut flags = Vec::new();
    while p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).is_some() {
        flags.push(rnic_wire::FrameRepr::parse(&buf).unwrap().roce.bth.ack_req);
    }
    let set: Vec<usize> = flags
        .iter()
        .enumerate()
        .filter(|(_, f)| **f)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(set, vec![15, 31, 39]);
}

/// A million idle QPs: creation is cheap and memory is the context size times the count.
/// Ignored by default (about 350 MB); run with `--ignored`.
#[test]
#[ignore]
fn a_million_idle_qps() {
    let mut dev = Device::new(DeviceConfig::default());
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(16).unwrap();
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: 16,
        max_recv_wr: 16,
    };
    for _ in 0..1_000_000 {
        let qpn = dev.create_qp(init).unwrap();
        dev.modify_qp(qpn, &QpAttr::to_init(Access::REMOTE_WRITE))
            .unwrap();
    }
    assert_eq!(dev.qp_count(), 1_000_000);
    assert_eq!(dev.poll_timeout(), None);
    println!(
        "QP context: {} bytes, total {} MB",
        Device::qp_context_bytes(),
        (Device::qp_context_bytes() * 1_000_000) >> 20
    );
}
