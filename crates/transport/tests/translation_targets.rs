//! What the transport tells the NIC to translate before it places received data: the
//! receive WQE a SEND will land in (`Device::recv_target`) and a READ's local buffer
//! (`Device::read_response_target`), every element of their scatter lists, each with its
//! own key.

mod common;

use common::*;
use rnic_transport::*;
use rnic_wire::Opcode;

/// A second region on B, so that a scatter list can span two keys.
const SECOND_BASE: u64 = BASE + MR_LEN;

#[test]
fn a_send_lands_in_the_receive_wqe_behind_the_messages_ahead_of_it() {
    let mut p = Pair::with_default();
    let second =
        p.b.dev
            .reg_mr(p.b.pd, SECOND_BASE, 1 << 20, Access::all())
            .unwrap();
    assert!(p.b.dev.recv_target(p.b.qpn, 0).is_none(), "nothing posted");
    // RECV 1: two elements in two regions; RECV 2: one element.
    let two = vec![
        p.b.sge(BASE, 100),
        Sge {
            addr: SECOND_BASE + 64,
            len: 4000,
            lkey: second.lkey,
        },
    ];
    let one = vec![p.b.sge(BASE + 8192, 4096)];
    p.b.dev
        .post_recv(p.b.qpn, RecvWr::new(1, two.clone()))
        .unwrap();
    p.b.dev
        .post_recv(p.b.qpn, RecvWr::new(2, one.clone()))
        .unwrap();
    assert_eq!(p.b.dev.recv_target(p.b.qpn, 0), Some(two.as_slice()));
    // One message ahead still on its way: the next one lands in RECV 2.
    assert_eq!(p.b.dev.recv_target(p.b.qpn, 1), Some(one.as_slice()));
    // Two ahead: no receive left for it (RNR).
    assert_eq!(p.b.dev.recv_target(p.b.qpn, 2), None);
    assert_eq!(p.b.dev.recv_target(p.b.qpn + 1000, 0), None, "no such QP");

    // Once the first SEND is placed, RECV 2 is the head.
    let src = BASE + (16 << 20);
    let data = p.a.mem.fill(src, 3000, 7);
    let wr = SendWr::send(10, vec![p.a.sge(src, 3000)]);
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    p.run(1000);
    let c = p.b.completions();
    assert_eq!((c.len(), c[0].wr_id, c[0].byte_len), (1, 1, 3000));
    assert_eq!(p.b.mem.get(BASE, 100), data[..100]);
    assert_eq!(p.b.mem.get(SECOND_BASE + 64, 2900), data[100..]);
    assert_eq!(p.b.dev.recv_target(p.b.qpn, 0), Some(one.as_slice()));
    assert_eq!(p.b.dev.recv_target(p.b.qpn, 1), None);
}

#[test]
fn a_reads_first_response_names_its_whole_local_scatter_list() {
    let mut p = Pair::with_default();
    let second =
        p.a.dev
            .reg_mr(p.a.pd, SECOND_BASE, 1 << 20, Access::all())
            .unwrap();
    let remote = BASE + (8 << 20);
    let data = p.b.mem.fill(remote, 5000, 3);
    let sgl = vec![
        p.a.sge(BASE, 1000),
        Sge {
            addr: SECOND_BASE,
            len: 4000,
            lkey: second.lkey,
        },
    ];
    let wr = SendWr::read(1, sgl.clone(), p.b.remote(remote));
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    // Not started: no READ begins at its PSN yet.
    let first_psn = QpParams::default().sq_psn_a;
    assert_eq!(p.a.dev.read_response_target(p.a.qpn, first_psn), None);
    let mut buf = Vec::new();
    let meta = p.a.dev.poll_transmit(0, &p.a.mem, &mut buf).unwrap();
    assert_eq!((meta.opcode, meta.psn), (Opcode::RcReadRequest, first_psn));
    assert_eq!(
        p.a.dev.read_response_target(p.a.qpn, first_psn),
        Some((sgl.as_slice(), 5000))
    );
    // The READ's later responses ride on the first one's translation.
    assert_eq!(p.a.dev.read_response_target(p.a.qpn, first_psn + 1), None);
    // Deliver the request and run the READ to its end.
    p.b.dev.handle_packet(0, &buf, &mut p.b.mem).unwrap();
    p.run(1000);
    let c = p.a.completions();
    assert_eq!((c.len(), c[0].status), (1, WcStatus::Success));
    assert_eq!(p.a.mem.get(BASE, 1000), data[..1000]);
    assert_eq!(p.a.mem.get(SECOND_BASE, 4000), data[1000..]);
}
