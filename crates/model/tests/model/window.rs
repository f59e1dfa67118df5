//! A PSN window smaller than the ACK-request interval (`qp.window_psns` < `ack_req_every`):
//! the packet that fills the window asks for an ACK, so the QP moves on with each ACK round
//! trip, never by retransmission timeouts.

use crate::common::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn a_small_window_moves_on_acks_not_timeouts() {
    for window in [1, 4, 15] {
        let mut cfg = baseline(10.0);
        cfg.qp.window_psns = window;
        cfg.qp.ack_req_every = 64;
        let mut s = spec(PerfTest::WriteBw, 65536, 2, 1);
        s.iters = 10;
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "window {window}: {}", r.reason);
        assert_eq!(
            (r.timeouts, r.retransmissions),
            (0, 0),
            "window {window}: the window waited for a timeout"
        );
        // Each window of packets takes about one round trip (a few µs), not a 67 ms timeout.
        assert!(
            r.simulated_time_us < 2000.0,
            "window {window}: {} µs",
            r.simulated_time_us
        );
    }
}
