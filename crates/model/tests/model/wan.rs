//! The `wan` topology and the RDMA WAN accelerator: pseudo-ACKs are Remote's own ACKs (but
//! for the IPv4 identification, which only the sending host can know); with loss on the long
//! link nothing is lost and the run ends; without the accelerator the topology still works;
//! the topology refuses a second Remote; runs are deterministic.

use std::collections::BTreeMap;

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;
use rnic_wire::frame::FrameRepr;
use rnic_wire::Opcode;

fn wan(sets: &[&str]) -> Config {
    let sets: Vec<_> = sets.iter().map(|s| parse_set(s).unwrap()).collect();
    Config::resolve("wan", &sets).unwrap()
}

/// The frames of a classic pcap file.
fn pcap_frames(path: &std::path::Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).unwrap();
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(b[at + 16..at + 16 + incl].to_vec());
        at += 16 + incl;
    }
    out
}

/// Remote's (node 1's) ACKs that Local's port received, by PSN (the last one per PSN).
fn acks_from_remote(path: &std::path::Path) -> BTreeMap<u32, Vec<u8>> {
    let remote_ip = rnic_model::net::addr::node_ip(1);
    let mut m = BTreeMap::new();
    for f in pcap_frames(path) {
        let Ok(p) = FrameRepr::parse(&f) else {
            continue;
        };
        if p.roce.bth.opcode == Opcode::RcAck && p.addr.src_ip == remote_ip {
            m.insert(p.roce.bth.psn, f);
        }
    }
    m
}

#[test]
fn pseudo_acks_are_byte_exact_to_remotes_acks_but_for_the_ip_identification() {
    let dir = std::env::temp_dir().join(format!("rnic-wan-acks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut captures = Vec::new();
    for accel in [false, true] {
        // PSNs from 0, so that the last 200 PSNs below are 200..400.
        let cfg = wan(&[
            "net.wan_km=2",
            "qp.start_psn=zero",
            &format!("net.wan_accel={accel}"),
        ]);
        let mut s = spec(PerfTest::WriteBw, 512, 1, 1);
        s.iters = 400;
        let path = dir.join(format!("accel-{accel}.pcap"));
        s.pcap = Some(rnic_model::workload::PcapOut::of_server(path.clone()));
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
        assert!(r.bytes_verified);
        if accel {
            assert!(r.stats["net.wan_accel.pseudo_acks"] > 300, "{:?}", r.stats);
        }
        captures.push(acks_from_remote(&path));
    }
    let _ = std::fs::remove_dir_all(&dir);
    let (real, pseudo) = (&captures[0], &captures[1]);
    let mut compared = 0;
    // The last 200 PSNs: the accelerator answers them (the real ACKs are absorbed).
    for psn in 200..400u32 {
        let (Some(r), Some(p)) = (real.get(&psn), pseudo.get(&psn)) else {
            panic!("PSN {psn}: no ACK in one of the runs");
        };
        let (rf, pf) = (FrameRepr::parse(r).unwrap(), FrameRepr::parse(p).unwrap());
        assert_ne!(
            rf.ip_ident, pf.ip_ident,
            "PSN {psn}: Remote's ACK reached Local instead of the pseudo-ACK"
        );
        // Rebuilt with Remote's IPv4 identification, the pseudo-ACK is Remote's ACK.
        let mut rebuilt = Vec::new();
        FrameRepr {
            ip_ident: rf.ip_ident,
            ..pf
        }
        .emit(&mut rebuilt);
        assert_eq!(&rebuilt, r, "PSN {psn}");
        compared += 1;
    }
    assert_eq!(compared, 200);
}

/// The accelerator takes Remote's ACKs off the link on purpose: counted as absorbed, not
/// as lost, so on a clean long link nothing reads as dropped.
#[test]
fn absorbed_frames_are_not_counted_as_lost() {
    let cfg = wan(&["net.wan_accel=true"]);
    let mut s = spec(PerfTest::WriteBw, 4096, 1, 1);
    s.iters = 200;
    let r = run(&cfg, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert_eq!(
        r.stats["net.elements.dropped"], 0,
        "a clean link loses nothing"
    );
    assert!(
        r.stats["net.wan_accel.absorbed"] > 0,
        "Remote's ACKs were absorbed"
    );
    assert_eq!(
        r.stats["net.elements.absorbed"],
        r.stats["net.wan_accel.absorbed"]
            + r.stats["net.wan_accel.dropped_dups"]
            + r.stats["net.wan_accel.held_behind_round"]
    );
}

#[test]
fn with_loss_on_the_long_link_nothing_is_lost_and_the_run_ends() {
    for loss in ["0.001", "0.01"] {
        let cfg = wan(&["net.wan_accel=true", &format!("net.impair.loss={loss}")]);
        let mut s = spec(PerfTest::WriteBw, 4096, 1, 1);
        s.iters = 600;
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "loss {loss}: {}", r.reason);
        assert!(r.bytes_verified, "loss {loss}");
        assert_eq!(r.verified_bytes, 600 * 4096, "loss {loss}");
        assert!(
            r.stats["net.elements.dropped"] > 0,
            "loss {loss}: nothing was lost"
        );
        assert!(
            r.stats["net.wan_accel.retransmitted"] > 0,
            "loss {loss}: the accelerator never resent"
        );
        // Local was told everything arrived: only the accelerator can have repaired it.
        assert_eq!(r.retransmissions, 0, "loss {loss}");
    }
}

/// A ping-pong through the accelerator: Local's pong is pseudo-ACKed and kept, and when the
/// long link loses it nothing comes back from Remote (its ping waits for that pong). The
/// accelerator's timer, on its inbound half, must be armed by the outbound WRITE it kept,
/// not by the next frame from Remote: the run used to stall with nothing left to simulate.
#[test]
fn a_lost_pong_is_resent_on_the_accelerators_timer() {
    let mut timeout_rounds = 0;
    for seed in 1..=3 {
        let mut cfg = wan(&["net.wan_accel=true", "net.impair.loss=0.01"]);
        cfg.sim.seed = seed;
        let mut s = spec(PerfTest::WriteLat, 2, 1, 1);
        s.iters = 50;
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "seed {seed}: {}", r.reason);
        assert!(r.bytes_verified, "seed {seed}");
        timeout_rounds += r.stats["net.wan_accel.timeout_rounds"];
    }
    assert!(
        timeout_rounds > 0,
        "no pong was lost: the test tests nothing"
    );
}

/// A lossy long-link run (64 KB WRITEs, 1 % loss on the long link): go-back-N that resends
/// no faster than the long link and one round at a time never overflows the switch in front
/// of the long link, so every resend answers a loss on the long link, not one it made
/// itself (the accelerator used to burst each round at its core's speed, about twice the
/// line rate, on top of any round still going: 144,874 frames dropped at that switch).
#[test]
fn lossy_resends_never_overflow_the_switch_before_the_long_link() {
    let cfg = wan(&["net.wan_accel=true", "net.impair.loss=0.01"]);
    let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
    s.iters = 500;
    let r = run(&cfg, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    let st = &r.stats;
    let net: BTreeMap<_, _> = st.iter().filter(|(k, _)| k.starts_with("net.")).collect();
    assert_eq!(st["net.switch_drops"], 0, "{net:?}");
    // Rounds answer Remote's NAKs (one per gap) and the timer; none starts beside another.
    assert!(
        st["net.wan_accel.nak_rounds"] <= st["transport.naks"],
        "{net:?}"
    );
    assert!(st["net.wan_accel.nak_rewinds"] <= st["net.wan_accel.nak_rounds"]);
    // Local's packets that came during a round waited behind it instead of reaching Remote
    // out of order (and being dropped there).
    assert!(st["net.wan_accel.held_behind_round"] > 0, "{net:?}");
}

#[test]
fn without_the_accelerator_the_same_topology_still_works() {
    let cfg = wan(&["net.wan_km=10", "net.impair.loss=0.002"]);
    let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
    s.iters = 100;
    let r = run(&cfg, &s).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    assert!(r.retransmissions > 0, "Local repaired its own losses");
    assert!(!r.stats.contains_key("net.wan_accel.pseudo_acks"));
}

#[test]
fn the_long_link_is_five_microseconds_per_km_one_way() {
    let cfg = wan(&["net.wan_km=10"]);
    let mut s = spec(PerfTest::WriteLat, 2, 1, 1);
    s.iters = 20;
    let r = run(&cfg, &s).result;
    // perftest's latency is half a round trip: 50 µs of fibre plus NIC, host and the short
    // link's microsecond or two.
    assert!(
        (50.0..55.0).contains(&r.latency_us.p50),
        "{}",
        r.latency_us.p50
    );
}

#[test]
fn the_wan_topology_joins_exactly_one_remote() {
    let cfg = wan(&[]);
    let e = rnic_model::net::topology::check(&cfg, 3)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("net.clients") && e.contains("--clients 1"),
        "{e}"
    );
}

#[test]
fn accelerated_lossy_runs_are_deterministic() {
    let cfg = wan(&[
        "net.wan_accel=true",
        "net.impair.loss=0.005",
        "net.wan_km=20",
    ]);
    let mut s = spec(PerfTest::WriteBw, 2048, 1, 1);
    s.iters = 300;
    let a = run(&cfg, &s).result;
    let b = run(&cfg, &s).result;
    assert_eq!(a.stats, b.stats);
    assert_eq!(a.goodput_gbps, b.goodput_gbps);
    assert_eq!(a.events, b.events);
}

#[test]
fn learning_from_traffic_accelerates_after_remotes_first_answer() {
    let mut gbps = Vec::new();
    for learn in ["setup", "traffic"] {
        let cfg = wan(&[
            "net.wan_accel=true",
            &format!("net.wan_accel_learn={learn}"),
        ]);
        let mut s = spec(PerfTest::WriteBw, 4096, 1, 1);
        s.iters = 2000;
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "{learn}: {}", r.reason);
        assert!(r.bytes_verified, "{learn}");
        assert!(r.stats["net.wan_accel.pseudo_acks"] > 1000, "{learn}");
        gbps.push(r.goodput_gbps);
    }
    // Learning from the traffic costs the first long round trip (1 ms at 100 km).
    assert!(gbps[1] < 0.8 * gbps[0], "{gbps:?}");
}

/// `pcie_rd_util` is the fraction of the measured time (Local's first post to its last
/// completion) the server's PCIe link was busy. With the accelerator Local's WRITEs complete
/// on pseudo-ACKs and the run goes on until the accelerator's buffer has drained to Remote,
/// a long round trip later (tens of ms later at 1 % loss): that time is not measured, and
/// its idle PCIe link is not in the utilisation (which read 0.43 here without loss, for a
/// link busy 84 % of the measured time).
#[test]
fn pcie_utilisation_is_over_the_measured_time_not_the_accelerators_drain() {
    for loss in ["0", "0.01"] {
        let cfg = wan(&["net.wan_accel=true", &format!("net.impair.loss={loss}")]);
        let mut s = spec(PerfTest::WriteBw, 65536, 1, 1);
        s.iters = 200;
        let r = run(&cfg, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
        let busy_us = r.stats["server.nic.pcie.down_busy_ps"] as f64 / 1e6;
        let util = busy_us / r.simulated_time_us;
        assert!(util > 0.5, "loss {loss}: PCIe busy {busy_us} us");
        assert!(
            (r.pcie_rd_util - util).abs() < 0.01 * util,
            "loss {loss}: pcie_rd_util {} for a link busy {busy_us} us of {} us measured",
            r.pcie_rd_util,
            r.simulated_time_us
        );
    }
}
