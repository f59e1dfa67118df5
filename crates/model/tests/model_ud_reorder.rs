//! UD datagrams that the network reorders. A UD receiver checks no PSN: each datagram is a
//! message of its own and takes the next posted receive in arrival order. Reordered
//! datagrams are therefore exact messages, and the run must say so (status ok, every byte
//! verified, nothing lost), not call them corrupt.

mod model_common;

use model_common::*;
use rnic_model::config::{Config, Transport};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

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
