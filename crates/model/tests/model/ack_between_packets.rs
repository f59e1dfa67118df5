//! A responder's acknowledgement does not wait for the message its NIC is sending: node 0
//! streams 2 MB WRITEs to node 1 while node 1 writes 64 B to node 0 (or runs an atomic on
//! node 0's memory), one at a time. Each of node 1's operations completes when node 0's
//! ACK (atomic ACK) arrives, and node 0's TX engine runs its own messages to completion
//! (the baseline). Its receive path's acknowledgement goes out between two packets of the
//! long message, as an RNIC's does (csRNA's gem5 model pushes each ACK into the send FIFO
//! its request packets share), instead of after the message's last packet.
//!
//! Bound from the physics, fixed before measuring: a 2 MB message takes 168 µs at
//! 100 Gb/s, and an ACK that waits for it takes at least what is left of it; one that
//! waits for the packet on the wire (4 KiB, 0.33 µs) and the port's slack adds about a
//! microsecond to the 64 B WRITE's round trip alone (under 5 µs): we ask for under 20 µs
//! at the slowest.

use crate::common::*;
use rnic_model::config::Config;
use rnic_model::flow::{FlowSpec, FlowsSpec};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_model::{run_flows, RunOptions};

fn flows(probe_test: PerfTest, probe_bytes: u64) -> FlowsSpec {
    let mut s = spec(PerfTest::WriteBw, 2 << 20, 1, 1);
    s.iters = 6;
    s.tx_depth = 2;
    let mut stream = FlowSpec::from_perf(&s, 2 << 20, 1);
    stream.name = "stream".into();
    stream.clients = vec![1];
    let mut p = spec(probe_test, probe_bytes, 1, 1);
    p.iters = 20;
    p.tx_depth = 1;
    let mut probe = FlowSpec::from_perf(&p, probe_bytes, 1);
    probe.name = "probe".into();
    probe.server = 1;
    probe.clients = vec![0];
    probe.start_us = 50.0;
    FlowsSpec {
        flows: vec![stream, probe],
        clients: 1,
        pcap: None,
    }
}

#[test]
fn an_ack_goes_between_the_packets_of_a_long_message() {
    probe_beside_a_stream(PerfTest::WriteBw, 64);
}

#[test]
fn an_atomic_ack_goes_between_the_packets_of_a_long_message() {
    probe_beside_a_stream(PerfTest::AtomicBw, 8);
}

fn probe_beside_a_stream(probe_test: PerfTest, probe_bytes: u64) {
    let mut cfg: Config = baseline(10.0);
    cfg.net.clients = 1;
    let spec = flows(probe_test, probe_bytes);
    let r = run_flows(&cfg, &spec, &RunOptions::default()).expect("flows run");
    assert_eq!(r.result.status, RunStatus::Ok, "{}", r.result.reason);
    assert!(r.result.flows.iter().all(|f| f.bytes_verified));
    let stream = &r.result.flows[0];
    let probe = &r.result.flows[1];
    assert!(
        stream.measured_us > 6.0 * 168.0,
        "the stream ran {} µs: it must outlast the probe",
        stream.measured_us
    );
    assert!(
        probe.latency_us.max < 20.0,
        "a {probe_test:?} of {probe_bytes} B took {} µs at the slowest (p50 {} µs): its \
         acknowledgement waited for the other direction's 2 MB message",
        probe.latency_us.max,
        probe.latency_us.p50
    );
}
