//! A MAD the connection manager sends after its CPU work (`host.cm_mad_ns`) must take the
//! port only then: handed to the port early with a future start, it held the port idle
//! until that time, and every frame behind it (the data and ACKs of connections already
//! up) waited. With 100 µs per MAD and resent MADs (a response timeout shorter than the
//! exchange) five 64 B WRITEs took 108.6 µs instead of 6.8 µs; with 3 s per MAD the ACKs
//! waited seconds, the requester's 67 ms timer fired and the WRITEs failed with
//! RETRY_EXC_ERR on a lossless network. The results must equal `direct` setup's.

use crate::common::*;
use rnic_model::config::{Config, Connect};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

fn with(connect: Connect, mad_ns: f64, timeout: u8) -> Config {
    let mut c = baseline(0.0);
    c.host.connect = connect;
    c.host.cm_mad_ns = mad_ns;
    c.host.cm_response_timeout = timeout;
    c
}

#[test]
fn slow_cm_threads_and_resent_mads_leave_the_figures_of_direct_setup() {
    let mut s = spec(PerfTest::WriteBw, 64, 1, 1);
    s.iters = 5;
    let direct = run(&with(Connect::Direct, 1000.0, 20), &s).result;
    for (mad_ns, timeout) in [(100_000.0, 0u8), (3e9, 20)] {
        let r = run(&with(Connect::Cm, mad_ns, timeout), &s);
        let cm = r.result;
        let what = format!(
            "cm_mad_ns {mad_ns}, response timeout {timeout}: {}",
            cm.reason
        );
        assert_eq!(cm.status, RunStatus::Ok, "{what}");
        assert!(cm.stats["cm.resent"] > 0, "{what}: no MAD was resent");
        assert_eq!(cm.retransmissions, 0, "{what}");
        assert_eq!(cm.simulated_time_us, direct.simulated_time_us, "{what}");
        assert_eq!(cm.verified_bytes, direct.verified_bytes, "{what}");
    }
}
