//! The out-of-order QPs' retransmission timers (ORNIC and MP-RDMA) against a receiver that
//! drains each packet slower than the timer: 1 ms of receive pipeline per packet
//! (`nic.rx_pkt_cycles` = 10^6 at 1 GHz), 16 packets per 64 KiB message. Every timeout
//! queues a fresh copy of each unacknowledged packet behind the ones still draining, faster
//! than they drain. Before the QPs counted their retries, the run went on resending until the
//! event limit stopped it (122 s simulated); now a WQE that takes `qp.retry_cnt` timeouts in
//! a row without progress, and one more, fails with RETRY_EXC_ERR, and the run ends saying
//! so, as a go-back-N QP's would on a path that answers too late.

use rnic_model::config::{parse_set, Config};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn a_receiver_slower_than_the_timer_ends_the_run_with_retry_exc_err() {
    for mode in ["ornic", "mp_rdma"] {
        for test in [PerfTest::WriteBw, PerfTest::ReadBw] {
            let sets: Vec<_> = [
                format!("qp.reliability={mode}"),
                "nic.rx_pkt_cycles=1000000".to_string(),
                "sim.max_events=200000".to_string(),
            ]
            .iter()
            .map(|s| parse_set(s).unwrap())
            .collect();
            let cfg = Config::resolve("baseline", &sets).unwrap();
            let mut s = crate::common::spec(test, 65536, 1, 1);
            s.iters = 20;
            let r = crate::common::run(&cfg, &s).result;
            let label = format!("{mode} {test:?}");
            assert_eq!(r.status, RunStatus::Incomplete, "{label}: {}", r.reason);
            assert!(r.reason.contains("RETRY_EXC_ERR"), "{label}: {}", r.reason);
            assert!(
                !r.reason.contains("sim.max_events"),
                "{label}: the QP failed before the event limit: {}",
                r.reason
            );
        }
    }
}

/// An out-of-order READ over a 1000 km link: the first timeouts fire before the first
/// response is back (the READs have not measured the round trip yet), and each asks for the
/// whole range again. Those asks are retransmissions of a READ already started, not new
/// READs: until they were counted so, the run said 0 retransmissions, and each re-ask started
/// a message again in the NIC (15 for 5 READs), taking the start of a later WQE.
#[test]
fn a_read_asked_again_after_a_timeout_is_a_retransmission() {
    let sets: Vec<_> = ["qp.reliability=ornic", "net.link_km=1000"]
        .iter()
        .map(|s| parse_set(s).unwrap())
        .collect();
    let cfg = Config::resolve("baseline", &sets).unwrap();
    let mut s = crate::common::spec(PerfTest::ReadBw, 1 << 20, 1, 1);
    s.iters = 5;
    let r = crate::common::run_verified(&cfg, &s, "ornic READ over 1000 km");
    let stats = &r.result.stats;
    assert!(stats["transport.retransmissions"] > 0, "{stats:?}");
    assert_eq!(
        stats["server.nic.tx.retransmits"], stats["transport.retransmissions"],
        "{stats:?}"
    );
    assert_eq!(stats["server.nic.tx.messages"], 5, "{stats:?}");
}

/// ORNIC's 1 KiB WRITEs over a 20 km link (a 201 µs round trip, the same for every WQE). Once
/// the timer had learnt it, its spread decayed to nothing and the timeout came down to the
/// round trip itself, firing at the picosecond the ACK landed: 69 timeouts in 200 WRITEs,
/// one resend. The timer now stays OTD / B above a measured round trip, as the paper's
/// RTT + OTD / B does: only the first WQE, before any sample, times out.
#[test]
fn a_learnt_round_trip_all_alike_does_not_time_out() {
    let sets: Vec<_> = ["qp.reliability=ornic", "net.topology=wan", "net.wan_km=20"]
        .iter()
        .map(|s| parse_set(s).unwrap())
        .collect();
    let cfg = Config::resolve("baseline", &sets).unwrap();
    let mut s = crate::common::spec(PerfTest::WriteBw, 1024, 1, 1);
    s.iters = 200;
    let r = crate::common::run_verified(&cfg, &s, "ornic 1 KiB WRITEs over 20 km").result;
    assert_eq!(r.timeouts, 1, "{} resends", r.retransmissions);
}

/// Four QPs' 2 MiB out-of-order READs at a responder that sends one QP's responses whole
/// before the next (the baseline NIC's run to completion): the fourth waits about 500 µs for
/// its first response, past the READ's first timeout, and asks again. The responder queued
/// each such ask as a second copy of a range it had not begun, sent both, and so held the
/// other QPs back by 2 MiB more, whose READs timed out in turn: 43 timeouts in 80 READs on
/// a lossless network, and an average rate of two thirds of the peak. A range asked again
/// while queued and not begun is now served once: the first READs time out, before the
/// QPs have measured a round trip, and none after.
#[test]
fn a_read_asked_again_while_queued_is_served_once() {
    let sets = [parse_set("qp.reliability=ornic").unwrap()];
    let cfg = Config::resolve("baseline", &sets).unwrap();
    let mut s = crate::common::spec(PerfTest::ReadBw, 2 << 20, 4, 1);
    s.iters = 20;
    let r = crate::common::run_verified(&cfg, &s, "ornic 2 MiB READs on 4 QPs").result;
    assert!(r.timeouts <= 4, "{} timeouts", r.timeouts);
    assert!(
        r.bw_avg_mb_s >= 0.98 * r.bw_peak_mb_s,
        "average {} against peak {}",
        r.bw_avg_mb_s,
        r.bw_peak_mb_s
    );
}
