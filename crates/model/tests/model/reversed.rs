//! `--reversed` with several clients: every client's flow sends to the server, whose one
//! link they share. The run reports what went through: all flows' operations over the span
//! from the first post to the last completion, never the sum of rates measured over
//! intervals that do not coincide (which added up to several times the server's link when
//! tail drops and timeouts made the flows finish apart).

use crate::common::*;
use rnic_model::result::RunStatus;
use rnic_model::workload::{Direction, PerfTest};

#[test]
fn several_clients_into_one_link_report_no_more_than_the_link() {
    let cfg = baseline(0.0);
    let mut s = spec(PerfTest::WriteBw, 65536, 4, 4);
    s.iters = 200;
    s.direction = Direction::Reverse;
    let r = run(&cfg, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    assert_eq!(r.ops_completed, 800);
    let line = cfg.eth.gbps;
    assert!(
        r.goodput_gbps <= line,
        "{:.1} Gb/s reported through a {line} Gb/s link",
        r.goodput_gbps
    );
    // The figure is the bytes over the run's measured span.
    let bytes = 800.0 * 65536.0;
    let gbps = bytes * 8.0 / (r.simulated_time_us * 1e3);
    assert!(
        (gbps - r.goodput_gbps).abs() < 1e-6 * gbps,
        "{gbps} vs {}",
        r.goodput_gbps
    );
}
