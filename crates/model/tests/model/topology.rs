//! The network from config: back-to-back and topology files run real traffic with verified
//! bytes, each link's length shows in the latency exactly when the link is on the path,
//! impairments act on the frames their direction names, and bad files are refused.

use crate::common::*;
use rnic_model::config::ImpairDirection;
use rnic_model::result::RunStatus;
use rnic_model::workload::PerfTest;

/// Writes a topology file: node0 - tor0 (k[0] km), tor0 - tor1 (k[1] km), tor1 - node1
/// (k[2] km), tor0 - node2 (k[3] km).
fn two_switches(name: &str, k: [f64; 4]) -> String {
    let path = std::env::temp_dir().join(format!("rnic-topo-{}-{name}.toml", std::process::id()));
    let text = format!(
        "[[switch]]\nname = \"tor0\"\n[[switch]]\nname = \"tor1\"\n\
         [[link]]\nends = [\"node0\", \"tor0\"]\nkm = {}\n\
         [[link]]\nends = [\"tor0\", \"tor1\"]\nkm = {}\n\
         [[link]]\nends = [\"tor1\", \"node1\"]\nkm = {}\n\
         [[link]]\nends = [\"tor0\", \"node2\"]\nkm = {}\n",
        k[0], k[1], k[2], k[3]
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// perftest write-lat (half the round trip) to node1 over the topology with lengths `k`, µs.
fn write_lat_us(name: &str, k: [f64; 4]) -> f64 {
    let mut cfg = baseline(10.0);
    cfg.net.topology = two_switches(name, k);
    cfg.net.clients = 2;
    let mut s = spec(PerfTest::WriteLat, 2, 1, 2);
    s.iters = 20;
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    let _ = std::fs::remove_file(&cfg.net.topology);
    r.result.latency_us.p50
}

#[test]
fn each_link_on_the_path_adds_its_delay_and_the_others_none() {
    let base = [1.0, 2.0, 3.0, 4.0];
    let l0 = write_lat_us("base", base);
    // Node1's path is links 0, 1, 2: one more km on any of them adds 5 µs one way.
    for link in 0..3 {
        let mut k = base;
        k[link] += 1.0;
        let l = write_lat_us(&format!("plus{link}"), k);
        assert!(
            (l - l0 - 5.0).abs() < 0.01,
            "link {link}: {l0} -> {l} µs, expected +5 µs"
        );
    }
    // Node2's link is not on the path.
    let mut k = base;
    k[3] += 10.0;
    let l = write_lat_us("other", k);
    assert!((l - l0).abs() < 0.001, "{l0} -> {l}");
    // And the whole path: 1 + 2 + 3 km = 30 µs one way, plus the NICs' 1.7 µs.
    assert!(l0 > 30.0 && l0 < 32.0, "{l0}");
}

#[test]
fn back_to_back_and_file_topologies_move_verified_bytes() {
    let mut cfg = baseline(10.0);
    cfg.net.topology = "back_to_back".into();
    let mut s = spec(PerfTest::WriteBw, 65536, 2, 1);
    s.iters = 50;
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert!(r.result.bytes_verified && r.result.verified_bytes == 2 * 50 * 65536);
    // One cable, no switch: line rate, and one link delay less than the star's latency.
    assert!(r.result.goodput_gbps > 90.0, "{}", r.result.goodput_gbps);

    let mut cfg = baseline(10.0);
    cfg.net.topology = two_switches("bw", [0.1, 0.2, 0.3, 0.4]);
    cfg.net.clients = 2;
    let mut s = spec(PerfTest::WriteBw, 4096, 4, 2);
    s.iters = 50;
    let r = run(&cfg, &s);
    let _ = std::fs::remove_file(&cfg.net.topology);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert_eq!(r.result.ops_completed, 200);
}

#[test]
fn impairment_acts_on_the_frames_its_direction_names() {
    let run_with = |direction: ImpairDirection| {
        let mut cfg = baseline(10.0);
        cfg.net.impair.loss = 0.2;
        cfg.net.impair.direction = direction;
        let mut s = spec(PerfTest::WriteBw, 4096, 1, 1);
        s.iters = 50;
        run(&cfg, &s)
    };
    let acks = run_with(ImpairDirection::Acks);
    let data = run_with(ImpairDirection::Data);
    for r in [&acks, &data] {
        assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
        assert!(r.net.elements.dropped > 0);
    }
    // Lost ACKs are made good by later cumulative ACKs: no data is resent for most of
    // them; lost data is always resent.
    assert!(data.result.retransmissions > 0);
    assert!(
        acks.result.retransmissions < data.result.retransmissions,
        "acks {} vs data {}",
        acks.result.retransmissions,
        data.result.retransmissions
    );
}

#[test]
fn a_corrupted_frame_fails_its_icrc_and_is_resent() {
    let mut cfg = baseline(10.0);
    cfg.net.impair.corrupt = 0.05;
    let mut s = spec(PerfTest::WriteBw, 4096, 1, 1);
    s.iters = 100;
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert!(r.net.elements.corrupted > 0);
    assert!(r.result.retransmissions > 0);
}

/// Every corrupted frame is dropped: one WRITE in flight at a time (`-t 1`), each corrupted
/// request costs exactly one ACK timeout. Until 2026-12-02 the flipped byte was any of the
/// frame's, and a flip in a MAC address, the UDP checksum or the BTH's FECN/BECN byte,
/// which no check covers, was delivered and acknowledged: 312 timeouts for 346 corrupted
/// frames in `write-bw -s 64 -n 3000 -t 1 -u 8` at 10 % (found by a pcap protocol hunt).
#[test]
fn every_corrupted_frame_is_dropped() {
    let mut cfg = baseline(0.0);
    cfg.net.impair.corrupt = 0.1;
    cfg.net.impair.direction = ImpairDirection::Data;
    cfg.qp.timeout = 8;
    cfg.sim.seed = 22;
    let mut s = spec(PerfTest::WriteBw, 64, 1, 1);
    s.iters = 3000;
    s.tx_depth = 1;
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    assert!(
        r.net.elements.corrupted > 200,
        "{}",
        r.net.elements.corrupted
    );
    assert_eq!(r.result.timeouts, r.net.elements.corrupted);
}

/// A node's NIC runs at its link's rate: a topology file's or a fabric's 200 Gb/s host
/// links carry more than `eth.gbps` (100), and the run's wire check measures a flow against
/// its server's port at that rate. It used `eth.gbps`, and failed such a run as a model
/// error ("the rate is above the wire"; found by a composition hunt).
#[test]
fn a_host_link_faster_than_eth_gbps_is_judged_at_its_own_rate() {
    let file = |gbps: u32| {
        let path =
            std::env::temp_dir().join(format!("rnic-fast-{}-{gbps}.toml", std::process::id()));
        let link = |n: u32| format!("[[link]]\nends = [\"node{n}\", \"s\"]\ngbps = {gbps}\n");
        std::fs::write(
            &path,
            format!("[[switch]]\nname = \"s\"\n{}{}", link(0), link(1)),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    let mut s = spec(PerfTest::ReadBw, 65536, 1, 1);
    s.iters = 50;
    let gbps = |topology: String, host_gbps: Option<f64>| {
        let mut cfg = baseline(0.0);
        cfg.net.topology = topology;
        cfg.net.fabric.host_link_gbps = host_gbps;
        let r = run(&cfg, &s);
        assert_eq!(r.result.status, RunStatus::Ok, "{}", r.result.reason);
        r.result.goodput_gbps
    };
    let (slow, fast) = (gbps(file(100), None), gbps(file(200), None));
    assert!(slow < 100.0 && fast > 100.0, "{slow} and {fast} Gb/s");
    assert!(gbps("leaf_spine".into(), Some(200.0)) > 100.0);
}

/// A topology file's impairments act on the links it marks `impair = true` (the sprayer and
/// the reordering window on those a node sends on): an impairment no link takes would run
/// clean in silence (`net.impair.loss = 0.5` over a file with no marked link gave 0
/// retransmissions, exit 0), so it is refused naming the field and the fix.
#[test]
fn impairments_no_link_of_a_topology_file_takes_are_refused() {
    let dir = std::env::temp_dir();
    let write = |name: &str, text: &str| {
        let path = dir.join(format!("rnic-imp-{}-{name}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let star = |mark: &str| {
        format!(
            "[[switch]]\nname = \"s\"\n[[switch]]\nname = \"t\"\n\
             [[link]]\nends = [\"node0\", \"s\"]\n{}\
             [[link]]\nends = [\"s\", \"t\"]\n{}\
             [[link]]\nends = [\"node1\", \"t\"]\n",
            if mark == "node" {
                "impair = true\n"
            } else {
                ""
            },
            if mark == "switch" {
                "impair = true\n"
            } else {
                ""
            },
        )
    };
    let unmarked = write("none", &star(""));
    let between_switches = write("switch", &star("switch"));
    let on_node = write("node", &star("node"));
    let s = spec(PerfTest::WriteBw, 4096, 1, 1);
    let refused = |topology: &str, set: &dyn Fn(&mut rnic_model::config::Config)| {
        let mut cfg = baseline(10.0);
        cfg.net.topology = topology.to_string();
        set(&mut cfg);
        rnic_model::run_perf_detailed(&cfg, &s, &Default::default())
            .err()
            .map(|e| e.to_string())
    };
    let e = refused(&unmarked, &|c| c.net.impair.loss = 0.5).expect("loss on no link");
    assert!(
        e.contains("net.impair.loss") && e.contains("impair = true"),
        "{e}"
    );
    let e = refused(&unmarked, &|c| c.net.impair.extra_delay_ns = 1000.0).expect("delay");
    assert!(e.contains("net.impair.extra_delay_ns"), "{e}");
    // Loss on a link between switches is taken; spraying needs a node's marked link.
    assert_eq!(
        refused(&between_switches, &|c| c.net.impair.loss = 0.01),
        None
    );
    let e = refused(&between_switches, &|c| c.net.spray.paths = 4).expect("spray");
    assert!(
        e.contains("net.spray.paths") && e.contains("impair = true"),
        "{e}"
    );
    let e = refused(&unmarked, &|c| c.net.impair.reorder_window = 8).expect("window");
    assert!(e.contains("net.impair.reorder_window"), "{e}");
    // A node's marked link takes all of them, and a clean run needs no mark.
    assert_eq!(
        refused(&on_node, &|c| {
            c.net.impair.loss = 0.01;
            c.net.spray.paths = 2;
            c.net.impair.reorder_window = 4;
        }),
        None
    );
    assert_eq!(refused(&unmarked, &|_| {}), None);
    for f in [unmarked, between_switches, on_node] {
        let _ = std::fs::remove_file(f);
    }
}

#[test]
fn bad_topologies_are_refused_with_the_reason() {
    let dir = std::env::temp_dir();
    let cases = [
        ("nolink", "[[switch]]\nname = \"s\"\n", "node0 has 0 links"),
        (
            "twolinks",
            "[[switch]]\nname = \"s\"\n[[link]]\nends = [\"node0\", \"s\"]\n[[link]]\nends = [\"node0\", \"s\"]\n[[link]]\nends = [\"node1\", \"s\"]\n",
            "node0 has 2 links",
        ),
        (
            "island",
            "[[switch]]\nname = \"a\"\n[[switch]]\nname = \"b\"\n[[link]]\nends = [\"node0\", \"a\"]\n[[link]]\nends = [\"node1\", \"b\"]\n",
            "cannot reach node",
        ),
        ("unknown", "[[link]]\nends = [\"node0\", \"sx\"]\n", "no switch or node named \"sx\""),
        (
            "typo",
            "[[link]]\nends = [\"node0\", \"node1\"]\nlenght = 3\n",
            "unknown key `lenght`",
        ),
        ("bignode", "[[link]]\nends = [\"node0\", \"node7\"]\n", "node7 does not exist"),
        // A loop is named as the file names its end, not by the model's own enum.
        (
            "selfloop",
            "[[switch]]\nname = \"s\"\n[[link]]\nends = [\"s\", \"s\"]\n",
            "link[0] joins \"s\" to itself",
        ),
        // A name no link can tell from another is refused where it is given.
        ("noname", "[[switch]]\nname = \"\"\n", "switch[0].name is empty"),
        // A switch no link joins was taken in silence.
        (
            "idle",
            "[[switch]]\nname = \"s\"\n[[switch]]\nname = \"spare\"\n[[link]]\nends = [\"node0\", \"s\"]\n[[link]]\nends = [\"node1\", \"s\"]\n",
            "switch[1] (\"spare\") has no links",
        ),
        // "node00" and "node+1" were read as node0 and node1.
        (
            "zeros",
            "[[link]]\nends = [\"node00\", \"node1\"]\n",
            "link[0].ends: \"node00\" is not a node name",
        ),
        (
            "sign",
            "[[link]]\nends = [\"node0\", \"node+1\"]\n",
            "write \"node1\"",
        ),
        // An end that is not a name was skipped: ["node0", 7, "s"] linked node0 to s.
        (
            "number",
            "[[switch]]\nname = \"s\"\n[[link]]\nends = [\"node0\", 7, \"s\"]\n[[link]]\nends = [\"node1\", \"s\"]\n",
            "link[0] needs `ends = [\"A\", \"B\"]`",
        ),
    ];
    for (name, text, want) in cases {
        let path = dir.join(format!("rnic-bad-{}-{name}.toml", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let mut cfg = baseline(10.0);
        cfg.net.topology = path.to_str().unwrap().to_string();
        let s = spec(PerfTest::WriteBw, 64, 1, 1);
        let e = rnic_model::run_perf_detailed(&cfg, &s, &Default::default())
            .err()
            .unwrap_or_else(|| panic!("{name}: accepted"))
            .to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.contains(want), "{name}: {e}");
    }
    let mut cfg = baseline(10.0);
    cfg.net.topology = "back_to_back".into();
    let s = spec(PerfTest::WriteBw, 64, 2, 2);
    let e = rnic_model::run_perf_detailed(&cfg, &s, &Default::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--clients 1"), "{e}");
}

#[test]
fn the_committed_example_topology_runs_with_its_fibre_in_the_latency() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/topologies/two-tor.toml"
    );
    let mut cfg = baseline(10.0);
    cfg.net.topology = path.to_string();
    cfg.net.clients = 2;
    let mut s = spec(PerfTest::WriteLat, 2, 1, 2);
    s.iters = 20;
    let r = run(&cfg, &s);
    assert_eq!(r.result.status, RunStatus::Ok, "{:?}", r.failures);
    // 0.5 + 50 (10 km) + 0.5 µs of propagation and tor1's 0.3 µs, plus the NICs' ~1.7 µs.
    let p50 = r.result.latency_us.p50;
    assert!((52.5..53.5).contains(&p50), "{p50} µs");
}

/// A pinned sprayer's path must be one of its paths: one beyond them is refused with the
/// field named, never silently another path.
#[test]
fn a_pinned_path_outside_the_paths_is_refused() {
    use rnic_model::config::{Config, SprayPolicy};
    let mut cfg = Config::resolve("ornic", &[]).unwrap();
    cfg.net.spray.paths = 4;
    cfg.net.spray.mdd_ns = 20_000.0;
    cfg.net.spray.policy = SprayPolicy::Pinned;
    cfg.net.spray.path = 4;
    let p = rnic_model::params::ModelParams::from_config(&cfg);
    let Err(e) = rnic_model::net::topology::build(&cfg, &p, &rnic_sim::Rng::new(1), 2) else {
        panic!("path 4 of 4 accepted");
    };
    let e = e.to_string();
    assert!(
        e.contains("net.spray.path = 4") && e.contains("0 to 3"),
        "{e}"
    );
    cfg.net.spray.path = 3;
    assert!(rnic_model::net::topology::build(&cfg, &p, &rnic_sim::Rng::new(1), 2).is_ok());
}

/// Routing runs one breadth-first search per destination node, linear in the links: a chain
/// of 10,000 switches (which routing by relaxing every link until nothing changed, once per
/// switch and node, could not finish: about 10^12 steps) and a fabric of 32 spines and 256
/// leaves with a node on each leaf are routed, and every route is the shortest, the chain's
/// switches forwarding each way along it and the fabric's leaves up to spine 0 (the
/// lowest-numbered link among equals).
#[test]
fn large_topologies_route_in_one_search_per_destination() {
    use rnic_model::net::topology;
    let p = |name: &str| {
        std::env::temp_dir().join(format!("rnic-topo-{}-{name}.toml", std::process::id()))
    };
    let build = |path: &std::path::Path, text: String, clients: u32| {
        std::fs::write(path, text).unwrap();
        let mut cfg = baseline(10.0);
        cfg.net.topology = path.to_str().unwrap().to_string();
        cfg.net.clients = clients;
        let params = rnic_model::ModelParams::from_config(&cfg);
        let net = topology::build(&cfg, &params, &rnic_sim::Rng::new(1), clients as usize + 1);
        let _ = std::fs::remove_file(path);
        net.unwrap()
    };
    const CHAIN: usize = 10_000;
    let mut t = String::new();
    for s in 0..CHAIN {
        t += &format!("[[switch]]\nname = \"s{s}\"\n");
    }
    t += "[[link]]\nends = [\"node0\", \"s0\"]\n";
    for s in 1..CHAIN {
        t += &format!("[[link]]\nends = [\"s{}\", \"s{s}\"]\n", s - 1);
    }
    t += &format!("[[link]]\nends = [\"s{}\", \"node1\"]\n", CHAIN - 1);
    let chain = build(&p("chain"), t, 1);
    for (s, sw) in chain.switches.iter().enumerate() {
        // Each switch's ports in link order: toward node0 first, then toward node1.
        assert_eq!(sw.route, [0, 1], "switch s{s}");
    }
    let hop_ps = chain.links[0].delay_ps;
    assert_eq!(chain.path_delay_ps(0, 1), Some((CHAIN as u64 + 1) * hop_ps));

    let (spines, leaves) = (32, 256);
    let mut t = String::new();
    for s in 0..spines {
        t += &format!("[[switch]]\nname = \"spine{s}\"\n");
    }
    for l in 0..leaves {
        t += &format!(
            "[[switch]]\nname = \"leaf{l}\"\n[[link]]\nends = [\"node{l}\", \"leaf{l}\"]\n"
        );
    }
    for l in 0..leaves {
        for s in 0..spines {
            t += &format!("[[link]]\nends = [\"leaf{l}\", \"spine{s}\"]\n");
        }
    }
    let fabric = build(&p("fabric"), t, leaves as u32 - 1);
    for l in 0..leaves {
        let leaf = &fabric.switches[spines + l];
        for d in 0..leaves {
            // Port 0 is the leaf's node; ports 1.. its spines in order.
            let want = if d == l { 0 } else { 1 };
            assert_eq!(leaf.route[d], want, "leaf{l} toward node{d}");
        }
    }
    for s in 0..spines {
        // A spine's port l leads to leaf l.
        let routes: Vec<u32> = (0..leaves as u32).collect();
        assert_eq!(fabric.switches[s].route, routes, "spine{s}");
    }
    assert_eq!(fabric.path_delay_ps(3, 200), Some(4 * hop_ps));
}
