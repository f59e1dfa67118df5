//! A run of flows checks each flow's bytes as soon as the flow completes and frees its
//! destination buffers: what the run holds at its end is not the bytes it moved, and a
//! corrupted byte still fails the run naming the flow, the pair and the offset.

use crate::common::*;
use rnic_model::config::Config;
use rnic_model::flow::{FlowSpec, FlowsSpec};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_model::world::Hooks;
use rnic_model::{run_flows, FlowsRun, RunOptions};

/// Bytes each bulk flow moves: one message.
const FLOW_BYTES: u64 = 1 << 20;

/// `n` bulk flows of `test`, one message of [`FLOW_BYTES`] each on a QP of its own, from
/// node 0 to the clients in turn, one every 200 µs (each done long before the next starts:
/// a 1 MiB message is about 90 µs at 100 Gb/s).
fn one_after_another(test: PerfTest, n: usize, clients: u32) -> Vec<FlowSpec> {
    (0..n)
        .map(|i| {
            let mut s = spec(test, FLOW_BYTES, 1, 1);
            s.iters = 1;
            let mut f = FlowSpec::from_perf(&s, FLOW_BYTES, 1);
            f.name = format!("f{i}");
            f.clients = vec![1 + i as u32 % clients];
            f.start_us = 200.0 * i as f64;
            f
        })
        .collect()
}

fn run(cfg: &Config, flows: Vec<FlowSpec>, clients: u32, opts: &RunOptions) -> FlowsRun {
    let spec = FlowsSpec {
        flows,
        clients,
        pcap: None,
    };
    run_flows(cfg, &spec, opts).expect("flows run")
}

fn config(clients: u32, cores: u32) -> Config {
    let mut cfg = baseline(10.0);
    cfg.net.clients = clients;
    cfg.host.cores = cores;
    cfg
}

#[test]
fn completed_flows_free_the_bytes_they_received() {
    let cfg = config(3, 16);
    let mut flows = one_after_another(PerfTest::WriteBw, 4, 3);
    flows.extend(one_after_another(PerfTest::ReadBw, 3, 3));
    flows.extend(one_after_another(PerfTest::SendBw, 3, 3));
    // A latency flow's poll byte can change until the end: it is checked then, and kept.
    let mut lat = spec(PerfTest::WriteLat, 4096, 1, 1);
    lat.iters = 50;
    let mut lat = FlowSpec::from_perf(&lat, 4096, 1);
    lat.name = "lat".into();
    lat.clients = vec![2];
    flows.push(lat);
    let bulk = flows.len() as u64 - 1;
    let r = run(&cfg, flows, 3, &RunOptions::default());
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    for f in &r.result.flows {
        assert!(f.bytes_verified, "{}: {}", f.name, f.reason);
    }
    let moved: u64 = r.result.flows[..bulk as usize]
        .iter()
        .map(|f| f.verified_bytes)
        .sum();
    assert_eq!(moved, bulk * FLOW_BYTES);
    let m = r.memory;
    assert_eq!(m.flows_released, bulk, "{m:?}");
    // Every received byte was in a stored page (a 1 MiB message fills its pages whole).
    assert!(m.bytes_released >= moved, "{m:?}");
    // What is left: rings, CQs and the latency flow's two 4 KiB buffers, far less than one
    // bulk flow's bytes (and than the 10 MiB the bulk flows moved).
    assert!(m.bytes_held_at_end < FLOW_BYTES, "{m:?}");
    // The freed WRITE and SEND flows' sources are backed no more: the latency flow's two
    // nodes keep theirs, and so do the three READ flows' (a late duplicate request may
    // read them).
    assert_eq!(m.backed_ranges_at_end, 2 + 3 * 2, "{m:?}");
}

#[test]
fn a_byte_corrupted_in_a_flow_checked_at_completion_fails_the_run_naming_it() {
    let cfg = config(2, 8);
    let pmtu = u64::from(cfg.qp.pmtu);
    let packets = FLOW_BYTES / pmtu;
    // The switch flips the first payload byte of a frame of the second flow: its 44th
    // packet (the flows run one after another and lose nothing).
    let opts = RunOptions {
        hooks: Hooks {
            corrupt_data_frame: Some(packets + 44),
            ..Hooks::default()
        },
    };
    let r = run(&cfg, one_after_another(PerfTest::WriteBw, 3, 2), 2, &opts);
    assert_eq!(r.result.status, RunStatus::Corrupt, "{:?}", r.failures);
    // It was checked, and freed, when it completed, as the others were.
    assert_eq!(r.memory.flows_released, 3);
    let flows = &r.result.flows;
    assert_eq!(flows[1].status, RunStatus::Corrupt, "{}", flows[1].reason);
    assert!(!flows[1].bytes_verified);
    for i in [0, 2] {
        assert_eq!(flows[i].status, RunStatus::Ok, "{}", flows[i].reason);
    }
    let head = "flow 1 (f1): 1 buffer(s) failed verification; first: pair 0: node 2 buffer 0x";
    let tail = format!("differs from node 0's source at byte {}", 43 * pmtu);
    assert!(
        r.failures
            .iter()
            .any(|f| f.starts_with(head) && f.contains(&tail)),
        "want {head:?} ... {tail:?} in {:?}",
        r.failures
    );
    // The payload oracle saw it land too.
    assert!(
        r.failures
            .iter()
            .any(|f| f.contains("placed payload(s) differ from their source")),
        "{:?}",
        r.failures
    );
}

/// Behind the WAN accelerator a WRITE completes on its pseudo-ACK, before Remote has placed
/// it: a flow that completed then was checked at once and failed (`[[flow]]` write-bw over
/// `net.topology = "wan"` with `net.wan_accel = true`: "node 1 buffer ... differs from
/// node 0's source at byte 0", status corrupt, while the same `rnic perf` run verified
/// every byte). Its flows are checked at the end of the run, as `rnic perf` checks.
#[test]
fn flows_behind_the_wan_accelerator_are_checked_once_remote_has_their_bytes() {
    let sets: Vec<_> = ["net.topology=wan", "net.wan_km=20", "net.wan_accel=true"]
        .iter()
        .map(|s| rnic_model::config::parse_set(s).unwrap())
        .collect();
    let cfg = Config::resolve("baseline", &sets).unwrap();
    let mut s = spec(PerfTest::WriteBw, 64, 2, 1);
    s.iters = 5;
    let mut f = FlowSpec::from_perf(&s, 64, 1);
    f.name = "f0".into();
    let r = run(&cfg, vec![f], 1, &RunOptions::default());
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert!(
        r.result.flows[0].bytes_verified,
        "{}",
        r.result.flows[0].reason
    );
    assert_eq!(r.result.flows[0].verified_bytes, 2 * 5 * 64);
    // Checked at the end of the run, not freed as it completed.
    assert_eq!(r.memory.flows_released, 0, "{:?}", r.memory);
}
