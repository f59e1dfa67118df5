//! Per-QP attributes of the requester: the packet window (PSNs in flight at most) and the
//! AckReq cadence inside a long message, set with modify_qp like the IB attributes.

mod common;

use common::*;
use rnic_transport::{QpAttr, QpState, SendWr};
use rnic_wire::{peek_bth, BthRepr};

fn set_rts(p: &mut Pair, window: Option<u32>, every: Option<u32>) {
    let attr = QpAttr {
        state: QpState::Rts,
        max_outstanding_psns: window,
        ack_req_every: every,
        ..QpAttr::default()
    };
    p.a.dev.modify_qp(p.a.qpn, &attr).unwrap();
}

/// The BTH of each request frame A sends in its first round.
fn first_round(p: &mut Pair) -> Vec<BthRepr> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    while let Some(_m) = p.a.dev.poll_transmit(0, &p.a.mem, &mut buf) {
        out.push(peek_bth(&buf).unwrap());
    }
    out
}

#[test]
fn the_window_bounds_the_packets_in_flight_and_the_cadence_sets_ack_req() {
    let mut p = Pair::with_default();
    set_rts(&mut p, Some(4), Some(2));
    p.a.mem.fill(BASE, 16 * 1024, 1);
    let wr = SendWr::write(1, vec![p.a.sge(BASE, 16 * 1024)], p.b.remote(BASE));
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    let sent = first_round(&mut p);
    assert_eq!(sent.len(), 4, "a window of 4 PSNs");
    let asks: Vec<bool> = sent.iter().map(|b| b.ack_req).collect();
    assert_eq!(asks, vec![false, true, false, true]);
    // The default asks on every 16th packet and has no practical window.
    let mut p = Pair::with_default();
    p.a.mem.fill(BASE, 16 * 1024, 1);
    let wr = SendWr::write(1, vec![p.a.sge(BASE, 16 * 1024)], p.b.remote(BASE));
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    let sent = first_round(&mut p);
    assert_eq!(sent.len(), 16);
    let asks: Vec<usize> = (0..16).filter(|&i| sent[i].ack_req).collect();
    assert_eq!(asks, vec![15]);
}

#[test]
fn a_small_window_still_delivers_everything() {
    let mut p = Pair::with_default();
    set_rts(&mut p, Some(3), Some(1));
    let data = p.a.mem.fill(BASE, 64 * 1024, 7);
    let wr = SendWr::write(
        9,
        vec![p.a.sge(BASE, 64 * 1024)],
        p.b.remote(BASE + (8 << 20)),
    );
    p.a.dev.post_send(p.a.qpn, wr).unwrap();
    p.run(10_000);
    let c = p.a.completions();
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, rnic_transport::WcStatus::Success);
    assert_eq!(p.b.mem.get(BASE + (8 << 20), 64 * 1024), data);
}

#[test]
fn a_read_longer_than_the_window_is_refused_and_bad_values_are_named() {
    let mut p = Pair::with_default();
    set_rts(&mut p, Some(8), None);
    let wr = SendWr::read(1, vec![p.a.sge(BASE, 16 * 1024)], p.b.remote(BASE));
    assert!(p.a.dev.post_send(p.a.qpn, wr).is_err());
    let attr = QpAttr {
        state: QpState::Rts,
        max_outstanding_psns: Some(0),
        ..QpAttr::default()
    };
    let e = format!("{:?}", p.a.dev.modify_qp(p.a.qpn, &attr).unwrap_err());
    assert!(e.contains("max_outstanding_psns"), "{e}");
}
