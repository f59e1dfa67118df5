//! Priority flow control (`net.pfc`): an incast of four clients writing 64 KB messages into
//! one server port. Without flow control the switch buffer overflows and go-back-N with
//! the ACK timeout collapses the rate; with it the clients are paused instead, nothing is
//! dropped and the server's link runs full.

use crate::common::*;
use rnic_model::result::{PerfResult, RunStatus};
use rnic_model::workload::{Direction, PerfSpec, PerfTest};

fn incast() -> PerfSpec {
    let mut s = spec(PerfTest::WriteBw, 65536, 4, 4);
    s.iters = 200;
    s.direction = Direction::Reverse;
    s
}

fn stat(r: &PerfResult, key: &str) -> u64 {
    r.stats.get(key).copied().unwrap_or(0)
}

/// The incast under `cfg`: it must complete, every byte verified.
fn run_incast_with(cfg: &rnic_model::config::Config) -> PerfResult {
    let r = run(cfg, &incast()).result;
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    assert_eq!(r.ops_completed, 800);
    r
}

fn run_incast(pfc: bool) -> PerfResult {
    let mut cfg = baseline(0.0);
    cfg.net.pfc = pfc;
    run_incast_with(&cfg)
}

#[test]
fn an_incast_is_paused_not_dropped() {
    let lossy = run_incast(false);
    assert!(
        stat(&lossy, "net.switch_drops") > 0,
        "the incast must overflow"
    );
    assert!(lossy.retransmissions > 0);
    assert!(!lossy.stats.contains_key("net.pfc.pauses"));

    let pfc = run_incast(true);
    assert_eq!(stat(&pfc, "net.switch_drops"), 0);
    assert_eq!(pfc.retransmissions, 0);
    assert_eq!(pfc.timeouts, 0);
    assert!(stat(&pfc, "net.pfc.pauses") > 0);
    // The server's link is full: 64 KB WRITEs at 4 KB PMTU carry 4096 of 4174 wire bytes
    // (Ethernet, IPv4, UDP, BTH, ICRC, FCS, preamble and gap) per packet: 98.1 Gb/s.
    assert!(pfc.goodput_gbps > 95.0, "{:.1} Gb/s", pfc.goodput_gbps);
    assert!(pfc.goodput_gbps > 10.0 * lossy.goodput_gbps);
    // Each of the four senders waits about three quarters of the run: its share is a
    // quarter of the link.
    let paused_share = stat(&pfc, "net.pfc.paused_ps") as f64 / 4.0 / (pfc.simulated_time_us * 1e6);
    assert!(
        (0.6..0.8).contains(&paused_share),
        "each sender paused {:.0} % of the run",
        paused_share * 100.0
    );
    // The pause comes in time: no ingress holds more than XOFF plus the bytes in flight on
    // a 500 ns link (about 6 KB each way at 100 Gb/s) and a frame.
    let xoff = baseline(0.0).net.pfc_xoff_bytes;
    let most = stat(&pfc, "net.pfc.max_ingress_bytes");
    assert!(most > xoff && most < xoff + 32 * 1024, "{most}");
}

#[test]
fn flow_control_is_deterministic() {
    let a = run_incast(true);
    let b = run_incast(true);
    assert_eq!(a.simulated_time_us, b.simulated_time_us);
    assert_eq!(a.stats, b.stats);
}

#[test]
fn below_xoff_flow_control_changes_nothing() {
    // One client, one QP: nothing queues in the switch, so nothing pauses.
    let mut cfg = baseline(0.0);
    let s = spec(PerfTest::WriteBw, 65536, 1, 1);
    let off = run(&cfg, &s).result;
    cfg.net.pfc = true;
    let on = run(&cfg, &s).result;
    assert_eq!(stat(&on, "net.pfc.pauses"), 0);
    assert_eq!(off.simulated_time_us, on.simulated_time_us);
    assert_eq!(off.goodput_gbps, on.goodput_gbps);
}

#[test]
fn thresholds_that_cannot_work_are_refused() {
    let mut cfg = baseline(0.0);
    cfg.net.pfc = true;
    cfg.net.pfc_xon_bytes = cfg.net.pfc_xoff_bytes;
    let e = rnic_model::run::run_perf(&cfg, &incast())
        .unwrap_err()
        .to_string();
    assert!(e.contains("net.pfc_xon_bytes"), "{e}");
    let mut cfg = baseline(0.0);
    cfg.net.pfc = true;
    cfg.net.pfc_xoff_bytes = cfg.net.switch_buffer_bytes;
    let e = rnic_model::run::run_perf(&cfg, &incast())
        .unwrap_err()
        .to_string();
    assert!(e.contains("net.switch_buffer_bytes"), "{e}");
    // A topology file's switch with a buffer of its own is held to XOFF too.
    let file = std::env::temp_dir().join(format!("rnic-pfc-small-{}.toml", std::process::id()));
    let mut topo = String::from("[[switch]]\nname = \"big\"\n\n");
    topo += "[[switch]]\nname = \"small\"\nbuffer_bytes = 262144\n\n";
    topo += "[[link]]\nends = [\"big\", \"small\"]\n\n";
    for i in 0..5 {
        topo += &format!(
            "[[link]]\nends = [\"node{i}\", \"{}\"]\n\n",
            ["big", "small"][i % 2]
        );
    }
    std::fs::write(&file, topo).unwrap();
    let mut cfg = baseline(0.0);
    cfg.net.pfc = true;
    cfg.net.topology = file.to_string_lossy().into_owned();
    let e = rnic_model::run::run_perf(&cfg, &incast())
        .unwrap_err()
        .to_string();
    let _ = std::fs::remove_file(&file);
    assert!(e.contains("(\"small\").buffer_bytes"), "{e}");
    assert!(e.contains("net.pfc_xoff_bytes = 262144"), "{e}");
}

/// The incast over the committed leaf–spine fabric (see the file): clients under two
/// leaves, the server under a third, every flow through spine0.
fn run_leaf_spine(pfc: bool) -> PerfResult {
    let mut cfg = baseline(0.0);
    cfg.net.topology = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/topologies/leaf-spine.toml"
    )
    .to_string();
    cfg.net.pfc = pfc;
    run_incast_with(&cfg)
}

#[test]
fn switches_pause_switches_hop_by_hop() {
    // Without flow control spine0's port toward leaf0 (two leaves into one) and the
    // leaves' uplinks (two clients into one) overflow.
    let lossy = run_leaf_spine(false);
    assert!(
        stat(&lossy, "net.switch_drops") > 0,
        "the incast must overflow"
    );
    assert!(lossy.retransmissions > 0);

    // With it, leaf0 pauses spine0's port, spine0 pauses the leaves' uplinks, the leaves
    // pause the NICs: nothing is dropped and the server's link runs full.
    let pfc = run_leaf_spine(true);
    assert_eq!(stat(&pfc, "net.switch_drops"), 0);
    assert_eq!(pfc.retransmissions, 0);
    assert_eq!(pfc.timeouts, 0);
    assert!(
        stat(&pfc, "net.pfc.switch_pauses") > 0,
        "switch ports were paused"
    );
    assert!(stat(&pfc, "net.pfc.switch_paused_ps") > 0);
    assert!(stat(&pfc, "net.pfc.pauses") > stat(&pfc, "net.pfc.switch_pauses"));
    assert!(pfc.goodput_gbps > 95.0, "{:.1} Gb/s", pfc.goodput_gbps);
    // Each ingress stays within XOFF plus what was on the wire when its PAUSE left.
    let xoff = baseline(0.0).net.pfc_xoff_bytes;
    let most = stat(&pfc, "net.pfc.max_ingress_bytes");
    assert!(most > xoff && most < xoff + 32 * 1024, "{most}");
    let again = run_leaf_spine(true);
    assert_eq!(pfc.stats, again.stats, "deterministic");
}

/// Builds the network of `topology` for `nodes` nodes.
fn network(topology: &str, nodes: usize) -> rnic_model::net::graph::Network {
    let mut cfg = baseline(0.0);
    cfg.net.topology = topology.to_string();
    cfg.net.pfc = true;
    let p = rnic_model::params::ModelParams::from_config(&cfg);
    rnic_model::net::topology::build(&cfg, &p, &rnic_sim::Rng::new(1), nodes).unwrap()
}

fn shipped(file: &str) -> String {
    format!(
        "{}/../../scenarios/topologies/{file}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn the_shipped_topologies_cannot_deadlock() {
    use rnic_model::net::pfc_deadlock::buffer_dependency_cycle;
    for (topology, nodes) in [
        ("star".to_string(), 11),
        ("back_to_back".to_string(), 2),
        ("wan".to_string(), 2),
        (shipped("two-tor.toml"), 3),
        (shipped("leaf-spine.toml"), 5),
    ] {
        let net = network(&topology, nodes);
        assert_eq!(buffer_dependency_cycle(&net), None, "{topology}");
        assert_eq!(net.stats().pfc.map(|s| s.buffer_cycle_links), Some(0));
    }
    // A ring of five switches, one node under each: every two-hop route goes the same way
    // round, so the ring's links wait on each other.
    let mut ring = String::new();
    for i in 0..5 {
        ring += &format!("[[switch]]\nname = \"s{i}\"\n\n");
        ring += &format!("[[link]]\nends = [\"node{i}\", \"s{i}\"]\n\n");
        ring += &format!("[[link]]\nends = [\"s{i}\", \"s{}\"]\n\n", (i + 1) % 5);
    }
    let path = std::env::temp_dir().join(format!("rnic-pfc-ring-{}.toml", std::process::id()));
    std::fs::write(&path, ring).unwrap();
    let net = network(path.to_str().unwrap(), 5);
    let _ = std::fs::remove_file(&path);
    let cycle = buffer_dependency_cycle(&net).expect("the ring's routes form a cycle");
    assert!(cycle.len() >= 3, "{cycle:?}");
    for (i, &l) in cycle.iter().enumerate() {
        let next = cycle[(i + 1) % cycle.len()];
        assert!(
            matches!(net.links[l].to, rnic_model::net::graph::End::Switch(_)),
            "{cycle:?}"
        );
        assert_ne!(l, next);
    }
    let counted = net.stats().pfc.expect("net.pfc is on").buffer_cycle_links;
    assert_eq!(
        counted,
        cycle.len() as u64,
        "the run's statistics count the cycle"
    );
}

/// A PAUSE frame may not cut the frame its port is serializing (IEEE 802.3 Annex 31B,
/// 802.1Qbb): it goes out once that frame has left, ahead of what waits behind it. Node 0's
/// NIC starts a 4 KiB frame at 0 and, 100 ns into its 330 ns on the wire, pauses its link
/// peer: the XOFF lands one PFC frame's wire time and the link's delay after the data
/// frame's end. It used to start at once, on top of the data frame.
#[test]
fn a_pause_waits_for_the_frame_on_the_wire() {
    use rnic_model::event::{Ev, FramePool, NetEv};
    use rnic_model::nic::cx::Wire;
    let mut net = network("star", 2);
    let mut q = rnic_sim::EventQueue::<Ev>::new();
    let mut frames = FramePool::default();
    let data = frames.alloc();
    frames.buf_mut(data).resize(4096, 0);
    let port = &net.ports[0];
    let (data_ps, pfc_ps) = (port.wire_time(4096), port.wire_time(60));
    let delay_ps = net.links[net.uplink[0]].delay_ps;
    net.send(0, data, 0, &mut q, &mut frames);
    let decided = 100_000;
    assert!(decided < data_ps);
    net.pause_peer(0, 0xFFFF, decided, &mut q, &mut frames);
    let mut landed = None;
    while let Some((t, ev)) = q.pop() {
        if matches!(ev, Ev::Net(NetEv::PfcFrame { .. })) {
            landed = Some(t);
        }
    }
    assert_eq!(landed, Some(data_ps + pfc_ps + delay_ps));
}

/// How node 0's TX engine, paused by node 1 over one cable, takes its looks, mirroring the
/// NIC's `on_tx_wake` with its unit free: `parked` (the network wakes it) or one event per
/// pause quantum as it used to.
struct Engine {
    parked: bool,
    slack: u64,
}

/// What one engine saw: the time it sent, and the times of its own events until then.
#[derive(Debug, PartialEq)]
struct Looked {
    sends: u64,
    events: Vec<u64>,
}

impl Engine {
    /// Runs a back-to-back network in which node 1 pauses node 0 at `xoff` (with pause time
    /// `quanta`) and resumes it `xon` after the pause lands, if given; node 0's engine looks
    /// first `first` after it lands.
    fn run(&self, quanta: u16, xoff: u64, xon: Option<u64>, first: u64) -> Looked {
        use rnic_model::event::{Ev, FramePool, NicEv};
        use rnic_model::nic::cx::pause_looks::parked_looks;
        use rnic_model::nic::cx::Wire;
        let mut net = network("back_to_back", 2);
        let mut q = rnic_sim::EventQueue::<Ev>::new();
        let mut frames = FramePool::default();
        net.pause_peer(1, quanta, xoff, &mut q, &mut frames);
        // The XOFF lands; the engine's looks and the XON are timed from then.
        let mut land = xoff;
        while let Some((t, ev)) = q.pop() {
            let Ev::Net(ev) = ev else {
                panic!("unexpected event {ev:?}");
            };
            net.handle(t, ev, &mut q, &mut frames);
            land = t;
        }
        let mut xon = xon.map(|x| land + x);
        let mut look = Some(land + first);
        let mut events = Vec::new();
        loop {
            // The next thing to happen: node 1's XON, a network event, or the engine's look.
            let net_next = q.peek_time();
            let next = [xon, net_next, look].into_iter().flatten().min().unwrap();
            if xon == Some(next) {
                xon = None;
                net.pause_peer(1, 0, next, &mut q, &mut frames);
                continue;
            }
            if net_next == Some(next) {
                let (t, ev) = q.pop().unwrap();
                match ev {
                    Ev::Net(ev) => net.handle(t, ev, &mut q, &mut frames),
                    Ev::Nic {
                        node: 0,
                        ev: NicEv::TxLook,
                    } => {
                        assert!(self.parked, "only a parked engine is woken");
                        events.push(t);
                        look = Some(t);
                    }
                    other => panic!("unexpected event {other:?}"),
                }
                continue;
            }
            let now = look.take().unwrap();
            let wake = net.port_free_at(0, now).saturating_sub(self.slack);
            if wake <= now {
                return Looked { sends: now, events };
            }
            let parked = net
                .look_again(0, now)
                .and_then(|l| parked_looks(now, 0, self.slack, l))
                .filter(|_| self.parked);
            look = Some(match parked {
                Some(p) => {
                    net.park(0, p);
                    p.end
                }
                None => wake,
            });
            events.push(look.unwrap());
        }
    }
}

/// A NIC paused by the NIC at the other end of its cable does not park (that NIC's XON is
/// decided by events that may be queued as late as the look that sees it): it looks every
/// pause quantum as before, and sends at the pause's end or when the XON lands. (A NIC
/// paused by its switch parks: `net::pfc::park_tests`.)
#[test]
fn a_nic_paused_by_its_peer_takes_every_look() {
    let p = rnic_model::params::ModelParams::from_config(&baseline(0.0));
    let slack = rnic_sim::ser_ps(p.nic.tx_port_slack_bytes, p.eth.mbps);
    let old = Engine {
        parked: false,
        slack,
    };
    let new = Engine {
        parked: true,
        slack,
    };
    let quantum = rnic_sim::ser_ps(512 / 8, p.eth.mbps);
    for quanta in [1u16, 40, 1000] {
        for xon in [None, Some(50_000), Some(333_333)] {
            for first in [0u64, 1, 123_457] {
                let was = old.run(quanta, 0, xon, first);
                let is = new.run(quanta, 0, xon, first);
                let case = format!("{quanta} quanta, XON {xon:?}, first look {first}");
                assert_eq!(is, was, "{case}");
                let pause_ps = u64::from(quanta) * quantum;
                if xon.is_none() && pause_ps > slack + 10 * quantum + first {
                    assert!(was.events.len() > 5, "{case}: {was:?}");
                }
            }
        }
    }
}

/// The whole run of a NIC paused by the NIC at the other end of its cable (the receiver's
/// buffer, 8 KiB here, fills faster than its PCIe drains it): the sender, which looks again
/// every pause quantum instead of parking, completes every WRITE with nothing dropped or
/// resent and every byte verified, slower than unpaused, and two runs agree in every
/// statistic.
#[test]
fn a_nic_paused_by_its_cable_peer_completes_every_write() {
    let mut cfg = baseline(0.0);
    cfg.net.topology = "back_to_back".to_string();
    cfg.net.pfc = true;
    let s = writes_to_one_client();
    let free = run(&cfg, &s).result;
    cfg.nic.rx_buffer_bytes = 8192;
    cfg.nic.rx_pfc_headroom_bytes = 4096;
    cfg.nic.rx_pfc_xon_bytes = 2048;
    let paused = run(&cfg, &s).result;
    for r in [&free, &paused] {
        assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
        assert!(r.bytes_verified);
        assert_eq!(r.ops_completed, 800);
        assert_eq!(r.retransmissions, 0);
        assert_eq!(stat(r, "clients.nic.rx_buffer.drops"), 0);
    }
    assert_eq!(stat(&free, "clients.nic.rx_buffer.pauses"), 0);
    assert!(stat(&paused, "clients.nic.rx_buffer.pauses") > 0);
    assert!(stat(&paused, "net.pfc.paused_ps") > 0);
    assert!(
        paused.goodput_gbps < free.goodput_gbps,
        "{} against {} Gb/s unpaused",
        paused.goodput_gbps,
        free.goodput_gbps
    );
    let again = run(&cfg, &s).result;
    assert_eq!(again.simulated_time_us, paused.simulated_time_us);
    assert_eq!(again.stats, paused.stats);
}

/// 200 WRITEs of 64 KiB on each of 4 QPs from the server to its one client.
fn writes_to_one_client() -> PerfSpec {
    let mut s = spec(PerfTest::WriteBw, 65536, 4, 1);
    s.iters = 200;
    s
}

/// A NIC whose receive buffer fills pauses the switch port feeding it: each such pause is a
/// pause episode of a switch port, counted with the switches' own (until 2026-12-02 its
/// frames and paused time were counted and the episodes were not: `switch_pauses` read 0
/// beside 2.9 ms of `switch_paused_ps`).
#[test]
fn a_nics_pauses_count_as_pause_episodes() {
    let mut cfg = baseline(0.0);
    cfg.net.pfc = true;
    // PCIe slower than the link: the server's receive buffer fills and it pauses.
    cfg.pcie.gbps = 64.0;
    let r = run_incast_with(&cfg);
    assert!(stat(&r, "net.pfc.switch_paused_ps") > 0);
    assert!(stat(&r, "net.pfc.switch_pauses") > 0);
    assert!(stat(&r, "net.pfc.pauses") >= stat(&r, "net.pfc.switch_pauses"));
}
