//! ECN marking at the switches: a four-into-one incast's queue marks CE between the
//! thresholds, the marked frames still verify end to end, the same seed marks the same
//! frames, and a Kmin above the queue PFC lets build marks nothing.

use crate::common::*;
use rnic_model::workload::PerfTest;

/// Frames marked in a lossless four-into-one WRITE incast with thresholds `kmin`, `kmax`.
fn incast_marks(kmin: u64, kmax: u64) -> u64 {
    let mut cfg = baseline(10.0);
    cfg.net.clients = 4;
    cfg.net.pfc = true;
    cfg.net.ecn.enabled = true;
    cfg.net.ecn.kmin_bytes = kmin;
    cfg.net.ecn.kmax_bytes = kmax;
    let mut s = spec(PerfTest::WriteBw, 65536, 4, 4);
    s.iters = 50;
    s.direction = rnic_model::workload::Direction::Reverse;
    let r = run_verified(&cfg, &s, "ecn incast");
    r.net.ecn_marks.expect("net.ecn_marks with net.ecn.enabled")
}

#[test]
fn a_queue_between_the_thresholds_marks_and_the_bytes_still_verify() {
    let marks = incast_marks(1000, 20_000);
    assert!(marks > 0, "{marks}");
    assert_eq!(
        incast_marks(1000, 20_000),
        marks,
        "the same seed marks the same frames"
    );
}

#[test]
fn a_kmin_above_what_pfc_lets_queue_marks_nothing() {
    // PFC pauses each of the four ingresses at 256 KiB (net.pfc_xoff_bytes), so the queue
    // toward node 0 stays near 1 MiB plus what is in flight: a 2 MB kmin is never reached.
    assert_eq!(incast_marks(2_000_000, 4_000_000), 0);
    assert!(
        incast_marks(400_000, 1_600_000) > 0,
        "the default thresholds are reached"
    );
}
