//! ECN marking at the switches: a four-into-one incast's queue marks CE between the
//! thresholds, the marked frames still verify end to end, the same seed marks the same
//! frames, a Kmin above the queue PFC lets build marks nothing, and a queue read at
//! dequeue judges a frame by the bytes behind it where one read at enqueue judges it by
//! those ahead.

use crate::common::*;
use rnic_model::config::{EcnConfig, EcnMarkPoint};
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

/// Whether each frame of a two-frame burst reached node 0 marked CE, in arrival order:
/// nodes 1 and 2 each send one 4 KB ECT(0) frame to node 0 at time 0 over `topology`, so
/// the two reach the first switch's port toward node 0 together. Marking is a step at
/// 4000 bytes (kmin 4000, kmax 4001, pmax 1), under a tenth of one frame's 4096.
fn burst_marks(topology: &str, pfc: bool, point: EcnMarkPoint) -> Vec<bool> {
    use rnic_model::event::{Ev, FramePool, NicEv};
    use rnic_model::nic::cx::Wire;
    let mut cfg = baseline(0.0);
    cfg.net.topology = topology.to_string();
    cfg.net.pfc = pfc;
    cfg.net.ecn = EcnConfig {
        enabled: true,
        kmin_bytes: 4000,
        kmax_bytes: 4001,
        pmax: 1.0,
        mark_point: point,
        thresholds_at_gbps: 0.0,
    };
    let p = rnic_model::params::ModelParams::from_config(&cfg);
    let mut net = rnic_model::net::topology::build(&cfg, &p, &rnic_sim::Rng::new(1), 3).unwrap();
    let mut q = rnic_sim::EventQueue::<Ev>::new();
    let mut frames = FramePool::default();
    for sender in [1, 2] {
        let f = frames.alloc();
        *frames.buf_mut(f) = ect_frame(sender, 0, 4096);
        net.send(sender, f, 0, &mut q, &mut frames);
    }
    let mut marked = Vec::new();
    while let Some((t, ev)) = q.pop() {
        match ev {
            Ev::Net(ev) => net.handle(t, ev, &mut q, &mut frames),
            Ev::Nic {
                node: 0,
                ev: NicEv::RxArrive { frame },
            } => {
                let ip = &frames.get(frame)[rnic_wire::frame::IPV4_OFFSET..];
                let ip = rnic_wire::ipv4::Packet::new_checked(ip).unwrap();
                assert!(
                    ip.verify_checksum(),
                    "marking keeps the IPv4 checksum valid"
                );
                marked.push(ip.dscp_ecn() & 0b11 == 0b11);
            }
            other => panic!("only the network and node 0 see events here: {other:?}"),
        }
    }
    let marks = net.stats().ecn_marks.expect("net.ecn is on");
    assert_eq!(marks, marked.iter().filter(|&&m| m).count() as u64);
    marked
}

/// A `len`-byte Ethernet frame from node `src` to node `dst` carrying an ECT(0) IPv4 header.
fn ect_frame(src: usize, dst: usize, len: usize) -> Vec<u8> {
    use rnic_model::net::addr::node_ip;
    let off = rnic_wire::frame::IPV4_OFFSET;
    let mut f = vec![0u8; len];
    let mut ip = rnic_wire::ipv4::Packet::new_unchecked(&mut f[off..]);
    ip.set_version_ihl(4, 5);
    ip.set_total_len((len - off) as u16);
    ip.set_ttl(64);
    ip.set_src(node_ip(src));
    ip.set_dst(node_ip(dst));
    ip.set_dscp_ecn(0b10);
    ip.fill_checksum();
    f
}

#[test]
fn a_queue_marks_at_dequeue_what_it_would_not_at_enqueue() {
    let two_tor = format!(
        "{}/../../scenarios/topologies/two-tor.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    // The star's port toward node 0 keeps fixed departures (with PFC too: it feeds a NIC);
    // two-tor's port between its switches is, under PFC, a pausable queue.
    for (topology, pfc) in [("star", false), ("star", true), (two_tor.as_str(), true)] {
        // At enqueue the first frame finds the port empty and the second finds the first
        // ahead of it; at dequeue the first starts with the second behind it and the
        // second with nothing behind.
        let at = |point| burst_marks(topology, pfc, point);
        assert_eq!(
            at(EcnMarkPoint::Enqueue),
            [false, true],
            "{topology} pfc={pfc}"
        );
        assert_eq!(
            at(EcnMarkPoint::Dequeue),
            [true, false],
            "{topology} pfc={pfc}"
        );
    }
}
