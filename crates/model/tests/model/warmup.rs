//! `sim.warmup_rounds` for bandwidth tests: with a short `sim.warmup_us` the `-D` window would
//! open while the host is still making its initial `-t` posts on 2000 QPs and count the
//! start-up transient; the default (1) holds it until the posting is over and every QP has
//! completed an operation.

use crate::common::*;
use rnic_model::config::Config;
use rnic_model::workload::PerfTest;

fn rate(rounds: u32) -> f64 {
    let mut cfg = Config::resolve("csrna", &[]).expect("csrna profile");
    cfg.sim.warmup_us = Some(10.0);
    cfg.sim.warmup_rounds = rounds;
    let mut s = spec(PerfTest::WriteBw, 64, 2000, 10);
    s.tx_depth = 32;
    s.duration_us = Some(200.0);
    let r = run(&cfg, &s);
    assert!(r.result.bytes_verified, "{:?}", r.failures);
    r.result.msg_rate_mops
}

#[test]
fn bandwidth_window_waits_for_the_initial_posting() {
    let (early, settled) = (rate(0), rate(1));
    // The calibrated peak is 1 / 15 ns = 66.7 Mops.
    assert!(settled > 0.95 * 66.7, "settled {settled} Mops");
    assert!(
        early < 0.85 * settled,
        "early {early} Mops vs settled {settled}"
    );
}
