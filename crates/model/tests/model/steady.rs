//! Steady-state detection (`host/steady.rs`): a `-D` run with no warm-up set opens its window
//! once the rate has settled, and says when and why; one that cannot settle is measured
//! anyway and flagged; `sim.warmup_us` still fixes the warm-up when set.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::workload::{PerfSpec, PerfTest};
use rnic_model::ModelRun;

/// The calibrated peak of the csRNA profile: one 64 B (or smaller) WRITE or READ per 15 ns.
const PEAK_MOPS: f64 = 1e3 / 15.0;

fn csrna(sets: &[&str]) -> Config {
    let ov: Vec<_> = sets.iter().map(|s| parse_set(s).expect("set")).collect();
    Config::resolve("csrna", &ov).expect("csrna profile")
}

/// `test` of `size` bytes on 3,000 QPs over 10 clients, `-t 16`, `-D 500 µs`.
fn many_qps(test: PerfTest, size: u64) -> PerfSpec {
    let mut s = spec(test, size, 3000, 10);
    s.tx_depth = 16;
    s.duration_us = Some(500.0);
    s
}

fn ok(r: &ModelRun) {
    assert!(
        r.result.bytes_verified && r.failures.is_empty(),
        "{:?}",
        r.failures
    );
}

fn within(got: f64, want: f64, frac: f64) -> bool {
    (got - want).abs() <= frac * want
}

#[test]
fn many_qps_write_measures_the_steady_rate_with_no_warmup_set() {
    // The case: `write-bw -s 16 -q 3000 -t 16 --clients 10 --profile csrna -D 0.0005`.
    let r = run(&csrna(&[]), &many_qps(PerfTest::WriteBw, 16));
    ok(&r);
    let res = &r.result;
    assert!(
        within(res.msg_rate_mops, PEAK_MOPS, 0.005),
        "{} Mops",
        res.msg_rate_mops
    );
    // The window opened after the initial posting (48,000 posts, about 400 µs) and whole
    // sub-windows, and the result says so.
    let open = res.window_open_us.expect("a -D run reports its window");
    assert!(open > 1000.0, "opened at {open} µs");
    assert_eq!(res.window_settled, Some(true));
    let why = res.window_reason.as_deref().unwrap_or("");
    assert!(why.starts_with("settled: rate within 2 %"), "{why}");
    // The run lasts the warm-up plus -D; the window is -D long.
    assert!(within(res.simulated_time_us, 500.0, 1e-9));
}

#[test]
fn many_qps_read_skips_the_dip_of_the_second_turnover() {
    // READ dips by a fifth when the first-posted WQEs come round again (about 700 µs in):
    // the window that opened once every QP had completed an operation held the dip and
    // measured 64.6 Mops; a window after the steady state measures the peak.
    let settled = run(&csrna(&[]), &many_qps(PerfTest::ReadBw, 64));
    ok(&settled);
    assert!(
        within(settled.result.msg_rate_mops, PEAK_MOPS, 0.005),
        "{} Mops",
        settled.result.msg_rate_mops
    );
    let early = run(
        &csrna(&["sim.warmup_us=0", "sim.warmup_rounds=1"]),
        &many_qps(PerfTest::ReadBw, 64),
    );
    ok(&early);
    assert!(
        early.result.msg_rate_mops < 0.98 * settled.result.msg_rate_mops,
        "early {} vs settled {} Mops",
        early.result.msg_rate_mops,
        settled.result.msg_rate_mops
    );
}

#[test]
fn a_run_that_cannot_settle_is_measured_anyway_and_flagged() {
    // A thousand agreeing sub-windows cannot close within 200 µs.
    let cfg = csrna(&["sim.settle_windows=1000", "sim.max_warmup_us=200"]);
    let mut s = spec(PerfTest::WriteBw, 64, 64, 10);
    s.duration_us = Some(100.0);
    let r = run(&cfg, &s);
    ok(&r);
    let res = &r.result;
    assert_eq!(res.window_settled, Some(false));
    let open = res.window_open_us.unwrap_or_default();
    assert!((200.0..201.0).contains(&open), "opened at {open} µs");
    let why = res.window_reason.as_deref().unwrap_or("");
    assert!(
        why.starts_with("never settled by sim.max_warmup_us = 200 µs: measured anyway"),
        "{why}"
    );
    // Not a failure: the figures are measured over the window as usual.
    assert!(res.msg_rate_mops > 0.0 && res.reason.is_empty(), "{res:?}");
}

#[test]
fn a_fixed_warmup_replaces_the_detection() {
    let cfg = csrna(&["sim.warmup_us=50"]);
    let mut s = spec(PerfTest::WriteBw, 64, 8, 2);
    s.duration_us = Some(50.0);
    let r = run(&cfg, &s);
    ok(&r);
    assert_eq!(r.result.window_open_us, Some(50.0));
    assert_eq!(r.result.window_settled, Some(true));
    assert_eq!(
        r.result.window_reason.as_deref(),
        Some("sim.warmup_us = 50 µs set")
    );
}

#[test]
fn latency_tests_settle_too() {
    // csRNA's latency test: 10 processes over 300 QPs, one operation in flight each.
    let mut s = spec(PerfTest::WriteLat, 64, 300, 10);
    s.procs = Some(10);
    s.duration_us = Some(100.0);
    let r = run(&csrna(&[]), &s);
    ok(&r);
    assert_eq!(r.result.window_settled, Some(true), "{:?}", r.result);
    assert!(r.result.ops_completed > 100, "{:?}", r.result);
    // Ping-pong over 4 QPs: a window of at least 100 round trips (about 2 µs each at the
    // least, so 202 µs; a shorter one is refused before the run).
    let mut s = spec(PerfTest::WriteLat, 2, 4, 1);
    s.duration_us = Some(250.0);
    let r = run(&csrna(&[]), &s);
    ok(&r);
    assert_eq!(r.result.window_settled, Some(true), "{:?}", r.result);
}

#[test]
fn iteration_mode_reports_no_window() {
    let r = run(&Config::default(), &spec(PerfTest::WriteBw, 64, 2, 1));
    ok(&r);
    assert_eq!(r.result.window_open_us, None);
    assert_eq!(r.result.window_settled, None);
    assert_eq!(r.result.window_reason, None);
}
