//! `qp.timeout = 0` (perftest `-u 0`) is IBA's infinite local ACK timeout: a packet lost
//! with nothing behind it is never resent, and the QP waits forever, as on real hardware.
//! rnic's run then stalls; its reason must say that the infinite timeout is why, not only
//! that nothing was left to simulate.

use crate::common::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn a_stall_under_an_infinite_ack_timeout_names_qp_timeout() {
    let mut c = baseline(0.0);
    c.qp.timeout = 0;
    c.net.impair.loss = 0.2;
    let mut s = spec(PerfTest::WriteLat, 2, 1, 1);
    s.iters = 20;
    let r = run(&c, &s).result;
    assert_eq!(r.status, RunStatus::Incomplete, "{}", r.reason);
    assert!(r.reason.contains("qp.timeout = 0"), "{}", r.reason);
    // With a finite timeout the same run completes.
    c.qp.timeout = 14;
    let r = run(&c, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
}
