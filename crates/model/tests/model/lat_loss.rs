//! Ping-pong latency tests under loss: perftest's write_lat and send_lat loops poll the
//! send CQ after every post, so a node never has two pings (or pongs) in flight, and a
//! lost ACK holds its next post until the retransmission timer resends and the ACK
//! comes. Each run ends, verifies its bytes, and with one QP or several.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

#[test]
fn ping_pong_runs_end_under_loss_with_one_send_in_flight_per_node() {
    let sets: Vec<_> = ["net.impair.loss=0.01"]
        .iter()
        .map(|s| parse_set(s).unwrap())
        .collect();
    let cfg = Config::resolve("baseline", &sets).unwrap();
    for test in [PerfTest::WriteLat, PerfTest::SendLat] {
        for qps in [1, 2, 4] {
            let mut s = spec(test, 64, qps, 1);
            s.iters = 300;
            let r = run(&cfg, &s).result;
            let what = format!("{test:?} -q {qps}");
            assert_eq!(r.status, RunStatus::Ok, "{what}: {}", r.reason);
            assert!(r.bytes_verified, "{what}");
            assert_eq!(r.ops_completed, 300, "{what}");
            // Lost ACKs are repaired by the timer: each costs a timeout.
            assert!(
                r.timeouts > 0 && r.retransmissions >= r.timeouts,
                "{what}: {r:?}"
            );
        }
    }
}
