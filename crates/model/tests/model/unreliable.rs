//! UC and UD on the timed model: perftest's send/write tests run over `qp.transport = uc|ud`,
//! with and without loss. What arrives is exact (the payload oracle compares every placed
//! payload, the final check every destination that received a message), what is lost is
//! counted (sent - received, by cause), nothing hangs (ping-pong tests give a lost
//! iteration up), and runs are deterministic.

use crate::common::*;
use rnic_model::config::{Config, Transport};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

fn cfg(transport: Transport, loss: f64, seed: u64) -> Config {
    let mut c = baseline(0.0);
    c.qp.transport = transport;
    c.net.impair.loss = loss;
    c.sim.seed = seed;
    c
}

#[test]
fn lossless_unreliable_runs_deliver_everything() {
    let cases = [
        (Transport::Ud, PerfTest::SendBw, 4096u64),
        (Transport::Ud, PerfTest::SendBw, 1),
        (Transport::Ud, PerfTest::SendLat, 64),
        (Transport::Uc, PerfTest::WriteBw, 65536),
        (Transport::Uc, PerfTest::SendBw, 10000),
        (Transport::Uc, PerfTest::WriteLat, 2),
        (Transport::Uc, PerfTest::SendLat, 5000),
    ];
    for (t, test, size) in cases {
        let mut s = spec(test, size, 3, 1);
        s.iters = 40;
        let r = run(&cfg(t, 0.0, 1), &s).result;
        let u = r.unreliable.clone().expect("UC/UD result");
        let what = format!("{t:?} {test} -s {size}: {} {:?}", r.reason, u);
        assert_eq!(r.status, RunStatus::Ok, "{what}");
        assert!(r.bytes_verified, "{what}");
        assert_eq!(u.messages_lost, 0, "{what}");
        assert!(u.messages_sent >= 40, "{what}");
        assert_eq!(r.retransmissions + r.naks + r.timeouts, 0, "{what}");
    }
}

#[test]
fn under_loss_what_arrives_is_exact_and_what_is_lost_is_counted() {
    let mut lost_total = 0;
    for (t, test, size) in [
        (Transport::Ud, PerfTest::SendBw, 1024u64),
        (Transport::Uc, PerfTest::WriteBw, 8192),
        (Transport::Uc, PerfTest::SendBw, 3000),
        (Transport::Ud, PerfTest::SendLat, 64),
        (Transport::Uc, PerfTest::WriteLat, 64),
    ] {
        for loss in [0.01, 0.1, 0.5] {
            for seed in 1..=3 {
                let mut c = cfg(t, loss, seed);
                c.qp.pmtu = 1024;
                c.qp.timeout = 4; // 65.5 µs: a lost ping-pong iteration is given up then
                let mut s = spec(test, size, 2, 1);
                s.iters = 60;
                let r = run(&c, &s).result;
                let u = r.unreliable.clone().expect("UC/UD result");
                let what = format!("{t:?} {test} loss {loss} seed {seed}: {} {u:?}", r.reason);
                // Never corrupt, never stuck: ok, or (everything lost) incomplete.
                assert!(
                    r.status == RunStatus::Ok
                        || (r.status == RunStatus::Incomplete && u.messages_received == 0),
                    "{what}"
                );
                assert_eq!(
                    u.messages_sent - u.messages_received,
                    u.messages_lost,
                    "{what}"
                );
                if test.is_latency() {
                    // Every iteration ended: completed or given up.
                    assert_eq!(r.ops_completed + u.iterations_given_up, 60, "{what}");
                } else {
                    assert_eq!(u.messages_sent, 120, "{what}");
                }
                lost_total += u.messages_lost;
                // Determinism: the same config and seed give the same figures.
                let again = run(&c, &s).result;
                assert_eq!(again.unreliable, r.unreliable, "{what}");
                assert_eq!(again.simulated_time_us, r.simulated_time_us, "{what}");
            }
        }
    }
    assert!(
        lost_total > 100,
        "the loss must really happen: {lost_total}"
    );
}

#[test]
fn ud_loses_one_message_per_lost_frame_and_uc_a_whole_message_per_lost_packet() {
    // 4 packets per UC message at PMTU 1024: P(whole) = 0.9^4 = 0.656 at 10 % loss; UD's
    // one-packet messages arrive with P = 0.9. Both within a few standard deviations over
    // 2,000 messages.
    let mut c = cfg(Transport::Uc, 0.1, 7);
    c.qp.pmtu = 1024;
    let mut s = spec(PerfTest::WriteBw, 4096, 4, 1);
    s.iters = 500;
    let u = run(&c, &s).result.unreliable.unwrap();
    let p = u.messages_received as f64 / u.messages_sent as f64;
    assert!((p - 0.9f64.powi(4)).abs() < 0.05, "UC {p}: {u:?}");
    let mut c = cfg(Transport::Ud, 0.1, 7);
    c.qp.pmtu = 1024;
    let mut s = spec(PerfTest::SendBw, 1024, 4, 1);
    s.iters = 500;
    let u = run(&c, &s).result.unreliable.unwrap();
    let p = u.messages_received as f64 / u.messages_sent as f64;
    assert!((p - 0.9).abs() < 0.03, "UD {p}: {u:?}");
}

#[test]
fn rc_results_have_no_unreliable_section() {
    let mut s = spec(PerfTest::SendBw, 1024, 2, 1);
    s.iters = 10;
    assert!(run(&cfg(Transport::Rc, 0.0, 1), &s)
        .result
        .unreliable
        .is_none());
}

/// A UD receive lands 40 bytes of GRH before the payload, and the NIC writes them over PCIe
/// with it: the receiving side writes messages x (40 + size + a CQE) to its host.
#[test]
fn ud_receives_write_the_grh_area_over_pcie() {
    let mut s = spec(PerfTest::SendBw, 1024, 4, 1);
    s.iters = 100;
    let r = run(&cfg(Transport::Ud, 0.0, 1), &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    let received = r.unreliable.as_ref().expect("UD result").messages_received;
    assert_eq!(received, 400);
    // Per message: the GRH area, the payload and the receive CQE.
    let cqe = rnic_model::host::driver::CQE_BYTES;
    let up = r.stats["clients.nic.pcie.up_payload_bytes"];
    assert_eq!(up, received * (40 + 1024 + cqe), "{received} messages");
}

/// A ping-pong iteration given up after the QP's timeout took that time: the run's
/// simulated time covers every iteration, completed or given up. With every ping lost the
/// client gives 20 iterations up, one local ACK timeout each (65.5 µs at qp.timeout 4), so
/// the loop ran for 20 of them (it reported 0.000 µs simulated: the span ended at the last
/// completion, and there was none).
#[test]
fn given_up_iterations_are_in_the_simulated_time() {
    for loss in [1.0, 0.5] {
        let mut c = cfg(Transport::Uc, loss, 1);
        c.qp.timeout = 4;
        c.host.connect = rnic_model::config::Connect::Direct;
        let mut s = spec(PerfTest::SendLat, 64, 1, 1);
        s.iters = 20;
        let r = run(&c, &s).result;
        let u = r.unreliable.clone().expect("UC result");
        let give_up_us = 4.096 * 16.0;
        assert!(u.iterations_given_up > 0, "{u:?}");
        assert!(
            r.simulated_time_us >= u.iterations_given_up as f64 * give_up_us,
            "loss {loss}: {} iterations given up after {give_up_us} µs each in {} µs",
            u.iterations_given_up,
            r.simulated_time_us
        );
    }
}
