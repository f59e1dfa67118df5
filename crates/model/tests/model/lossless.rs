//! On a lossless link with default timeouts a run has no retransmission and no timeout at
//! any message size, 2 B to 64 MB (ACKs once waited behind the transmit side's address
//! translation of queued multi-megabyte WRITEs, and the ACK timer fired).

use crate::common::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn a_lossless_link_has_no_retransmission_at_any_size() {
    let cfg = baseline(10.0);
    for size in [2u64, 64, 1024, 4096, 65536, 1 << 20, 8 << 20, 64 << 20] {
        let mut s = spec(PerfTest::WriteBw, size, 1, 1);
        s.iters = 5;
        s.tx_depth = if size >= 1 << 20 { 4 } else { 128 };
        let r = run(&cfg, &s);
        assert_eq!(r.result.status, RunStatus::Ok, "{size} B: {:?}", r.failures);
        assert_eq!(
            (r.result.retransmissions, r.result.timeouts),
            (0, 0),
            "{size} B"
        );
    }
    // The reported case: 2 MB, -t 4, a 131 µs ACK timeout (-u 5).
    let mut c = cfg.clone();
    c.qp.timeout = 5;
    let mut s = spec(PerfTest::WriteBw, 2 << 20, 1, 1);
    s.iters = 5;
    s.tx_depth = 4;
    let r = run(&c, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert_eq!((r.result.retransmissions, r.result.timeouts), (0, 0));
}
