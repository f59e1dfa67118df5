//! UD datagrams that the network reorders or duplicates. A UD receiver checks no PSN: each
//! datagram is a message of its own and takes the next posted receive in arrival order.
//! Reordered datagrams are therefore exact messages, and the run must say so (status ok,
//! every byte verified, nothing lost), not call them corrupt. A duplicated datagram would be
//! delivered twice, taking a receive meant for a later message (a ping-pong would complete
//! an iteration with the copy, faster than the wire): rnic refuses that combination before
//! the run, naming both fields.

use crate::common::*;
use rnic_model::config::{Config, Transport};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_model::{run_perf_detailed, RunOptions};

fn ud() -> Config {
    let mut c = baseline(0.0);
    c.qp.transport = Transport::Ud;
    c
}

#[test]
fn reordered_ud_datagrams_are_exact_messages() {
    let mut reorder = ud();
    reorder.net.impair.reorder_depth = 4;
    let mut window = ud();
    window.net.impair.reorder_window = 8;
    let mut sprayed = ud();
    sprayed.net.spray.paths = 4;
    sprayed.net.spray.mdd_ns = 2000.0;
    for (what, c) in [
        ("reorder_depth 4", reorder),
        ("reorder_window 8", window),
        ("4 paths", sprayed),
    ] {
        for seed in 1..=3 {
            let mut c = c.clone();
            c.sim.seed = seed;
            let mut s = spec(PerfTest::SendBw, 1024, 2, 1);
            s.iters = 50;
            let r = run(&c, &s).result;
            let u = r.unreliable.clone().expect("UD result");
            let msg = format!("{what}, seed {seed}: {} {u:?}", r.reason);
            assert_eq!(r.status, RunStatus::Ok, "{msg}");
            assert!(r.bytes_verified, "{msg}");
            assert_eq!(u.messages_sent, 100, "{msg}");
            assert_eq!(u.messages_received, 100, "{msg}");
            assert_eq!(u.messages_lost, 0, "{msg}");
        }
    }
}

#[test]
fn ud_with_duplicating_network_is_refused_naming_both_fields() {
    let mut c = ud();
    c.net.impair.dup = 0.3;
    for test in [PerfTest::SendBw, PerfTest::SendLat] {
        let mut s = spec(test, 1024, 1, 1);
        s.iters = 20;
        let e = run_perf_detailed(&c, &s, &RunOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{test}: UD with net.impair.dup = 0.3 ran"))
            .to_string();
        assert!(
            e.contains("net.impair.dup") && e.contains("qp.transport"),
            "{test}: {e}"
        );
    }
    // Duplicated acknowledgements only meet no UD datagram (a hunt found this refused too):
    // allowed, and every message arrives once.
    let mut acks = c.clone();
    acks.net.impair.direction = rnic_model::config::ImpairDirection::Acks;
    let mut s = spec(PerfTest::SendLat, 64, 1, 1);
    s.iters = 20;
    let r = run(&acks, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    let u = r.unreliable.expect("a UD run has its loss summary");
    assert_eq!((u.messages_sent, u.messages_received), (40, 40));
    // UC drops a duplicate (its PSN is behind the expected one): allowed.
    let mut uc = c.clone();
    uc.qp.transport = Transport::Uc;
    let mut s = spec(PerfTest::WriteBw, 1024, 1, 1);
    s.iters = 20;
    let r = run(&uc, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
}
