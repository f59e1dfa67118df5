//! The out-of-order QPs' retransmission timers (ORNIC and MP-RDMA) against a receiver that
//! drains each packet slower than the timer: 1 ms of receive pipeline per packet
//! (`nic.rx_pkt_cycles` = 10^6 at 1 GHz), 16 packets per 64 KiB message. Every timeout
//! queues a fresh copy of each unacknowledged packet behind the ones still draining; with
//! the backed-off timer capped at 64 × the estimate the copies came faster than they
//! drained and a run went on for ever (the event limit stopped it after 122 s simulated).
//! The backoff now grows to RFC 6298's 60 s, so the QPs finish, as go-back-N, with its
//! 67 ms timer, does.

use rnic_model::config::{parse_set, Config};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn a_receiver_slower_than_the_timer_still_gets_every_byte() {
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
            assert_eq!(r.status, RunStatus::Ok, "{label}: {}", r.reason);
            assert_eq!(r.verified_bytes, 20 * 65536, "{label}");
            assert!(r.timeouts > 0, "{label}: the receiver outlasted the timer");
        }
    }
}
