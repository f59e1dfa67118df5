//! A request that needs a receive WQE the host has posted and rung the doorbell for waits
//! while the NIC reads that WQE from the RQ ring (`nic/rx_wait.rs`), instead of finding the
//! receive queue empty: no RNR NAK over RC, no datagram dropped over UD, for a WQE that
//! was only on its way. Before, `send-bw` with 64 receives posted (`-r 64`) and 128 SENDs
//! outstanding drew 31 RNR NAKs in 2,000 SENDs over RC (each a 0.64 ms wait) and lost 25
//! datagrams over UD; all but the first NAK and the first 8 datagrams came while the WQE
//! they needed was being read.

use crate::common::*;
use rnic_model::config::{Config, Transport};
use rnic_model::workload::PerfTest;

/// Runs 2,000 SENDs of 64 B (on two QPs sharing a receive queue with `srq`) with 64
/// receives posted, and checks that requests waited for their receive WQEs and that the
/// receiver's `refused` counter (RNR NAKs or datagrams found no receive) is at most
/// `at_most` (`before`: its count when a read in flight was no WQE).
fn sends_wait(transport: Transport, srq: bool, refused: &str, at_most: u64, before: u64) {
    let mut cfg: Config = baseline(0.0);
    cfg.host.rx_depth = 64;
    cfg.host.use_srq = srq;
    cfg.qp.transport = transport;
    let mut s = spec(PerfTest::SendBw, 64, if srq { 2 } else { 1 }, 1);
    s.iters = 2000;
    let r = run(&cfg, &s);
    if transport == Transport::Rc {
        assert!(r.result.bytes_verified, "{:?}", r.failures);
    }
    let receiver = &the_requests_receiver(r.nodes);
    assert!(counter(receiver, "nic.rx.recv_waits") > 0, "nothing waited");
    let n = counter(receiver, refused);
    assert!(n <= at_most, "{refused} = {n} ({before} before)");
}

/// The first SENDs beyond the 64 posted find none yet: one NAK, then the reposts keep up.
#[test]
fn an_rc_send_waits_for_a_receive_wqe_on_its_way() {
    sends_wait(Transport::Rc, false, "transport.naks_sent.rnr", 1, 31);
}

#[test]
fn a_send_on_a_shared_receive_queue_waits_too() {
    sends_wait(Transport::Rc, true, "transport.naks_sent.rnr", 3, 124);
}

#[test]
fn a_ud_datagram_waits_instead_of_being_dropped() {
    let lost = "transport.unreliable.no_recv_messages";
    sends_wait(Transport::Ud, false, lost, 8, 25);
}
