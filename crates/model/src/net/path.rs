//! The path a frame takes between two nodes of an idle network, and its figures: the
//! latency and rate a flow alone on the fabric would meet. The ideal flow-completion time
//! of [`crate::traffic::ideal`] is built from them.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::graph::End;
use super::plan::Plan;
use crate::config::{Config, ConfigError, FabricRouting};

/// What a frame meets from one node to another on an idle network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdlePath {
    /// Each link's rate, Mb/s, from the source's (at most the NIC's line rate: the NIC
    /// sends no faster) to the destination's.
    pub link_mbps: Vec<u64>,
    /// Propagation of every link plus the forwarding latency of every switch, ps (no
    /// serialisation, no queueing).
    pub one_way_ps: TimePs,
    /// The slowest link's rate, Mb/s (at most the NIC's line rate, `eth.gbps`).
    pub bottleneck_mbps: u64,
}

impl IdlePath {
    /// Links crossed.
    pub fn links(&self) -> u32 {
        self.link_mbps.len() as u32
    }
}

/// The idle path from node `src` to node `dst` of the topology `cfg` names for `nodes`
/// nodes: a path of fewest links. Where the switches choose among several shortest paths
/// (`net.fabric.ecmp_on`), figures that no choice can beat: each link's and switch's least
/// delay at its hop, each hop's fastest link for the store-and-forward of the last packet,
/// and the rate of the widest shortest path (ECMP, one path per flow) or of every shortest
/// path together (`"spray"`, `"adaptive"`: one flow's frames over all of them), at most the
/// NIC's. In the generated fabrics every shortest path has the same tiers, so these are any
/// one path's figures (and ECMP's rate is one path's).
pub fn idle_path(
    cfg: &Config,
    nodes: usize,
    src: usize,
    dst: usize,
) -> Result<IdlePath, ConfigError> {
    let plan = super::topology::plan(cfg, nodes)?;
    let nic_mbps = super::plan::mbps(cfg.eth.gbps);
    let mut path = fewest_links(&plan, src, dst, nic_mbps).ok_or_else(|| {
        ConfigError::Inconsistent(format!(
            "no path from node {src} to node {dst} in net.topology = \"{}\"",
            cfg.net.topology
        ))
    })?;
    if cfg.net.fabric.ecmp_on(&cfg.net.topology) {
        let spread = matches!(
            cfg.net.fabric.routing,
            FabricRouting::Spray | FabricRouting::Adaptive
        );
        over_shortest_paths(&plan, src, dst, nic_mbps, spread, &mut path);
    }
    Ok(path)
}

/// The links on a shortest path from `src` to `dst`, each directed away from `src`:
/// (tail, head, link), in the order of their hop; and the vertices' hops from `src`.
fn shortest_arcs(plan: &Plan, src: usize, dst: usize) -> (Vec<(usize, usize, usize)>, Vec<u32>) {
    let adjacent = adjacency(plan);
    let (from_src, to_dst) = (hops(plan, src, &adjacent), hops(plan, dst, &adjacent));
    let len = from_src[dst];
    let mut arcs = Vec::new();
    if len == u32::MAX {
        return (arcs, from_src);
    }
    for (li, l) in plan.links.iter().enumerate() {
        let (a, b) = (vertex(plan, l.a), vertex(plan, l.b));
        for (u, v) in [(a, b), (b, a)] {
            if from_src[u] != u32::MAX
                && to_dst[v] != u32::MAX
                && from_src[u] + 1 + to_dst[v] == len
                && (u == src || u >= plan.nodes)
            {
                arcs.push((u, v, li));
            }
        }
    }
    arcs.sort_by_key(|&(u, _, li)| (from_src[u], li));
    (arcs, from_src)
}

/// Sets `path`'s figures to the bounds over every shortest path (see [`idle_path`]).
fn over_shortest_paths(
    plan: &Plan,
    src: usize,
    dst: usize,
    nic_mbps: u64,
    spread: bool,
    path: &mut IdlePath,
) {
    let (arcs, from_src) = shortest_arcs(plan, src, dst);
    let hops = path.link_mbps.len();
    if arcs.is_empty() || hops == 0 {
        return;
    }
    let mut rate = vec![0u64; hops];
    let mut delay = vec![TimePs::MAX; hops];
    // The least forwarding latency of the switches reached at each hop (none at the last).
    let mut latency = vec![TimePs::MAX; hops];
    let mut widest = vec![0u64; from_src.len()];
    widest[src] = u64::MAX;
    for &(u, v, li) in &arcs {
        let (k, l) = (from_src[u] as usize, &plan.links[li]);
        rate[k] = rate[k].max(l.mbps);
        delay[k] = delay[k].min(l.delay_ps);
        if v >= plan.nodes {
            latency[k] = latency[k].min(plan.switches[v - plan.nodes].latency_ps);
        }
        widest[v] = widest[v].max(widest[u].min(l.mbps));
    }
    rate[0] = rate[0].min(nic_mbps);
    path.link_mbps = rate;
    path.one_way_ps = delay.iter().sum::<TimePs>()
        + latency
            .iter()
            .filter(|&&t| t != TimePs::MAX)
            .sum::<TimePs>();
    path.bottleneck_mbps = nic_mbps.min(if spread {
        max_flow_mbps(plan, &arcs, src, dst)
    } else {
        widest[dst]
    });
}

/// The vertices of `plan` (nodes, then switches) and each one's links.
fn adjacency(plan: &Plan) -> Vec<Vec<usize>> {
    let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); plan.nodes + plan.switches.len()];
    for (i, l) in plan.links.iter().enumerate() {
        adjacent[vertex(plan, l.a)].push(i);
        adjacent[vertex(plan, l.b)].push(i);
    }
    adjacent
}

fn vertex(plan: &Plan, e: End) -> usize {
    match e {
        End::Node(n) => n,
        End::Switch(s) => plan.nodes + s,
    }
}

/// Links from `from`, each to a vertex one hop further; frames cross switches, never
/// another node.
fn hops(plan: &Plan, from: usize, adjacent: &[Vec<usize>]) -> Vec<u32> {
    let mut dist = vec![u32::MAX; adjacent.len()];
    let mut queue = VecDeque::from([from]);
    dist[from] = 0;
    while let Some(v) = queue.pop_front() {
        if v < plan.nodes && v != from {
            continue;
        }
        for &li in &adjacent[v] {
            let l = &plan.links[li];
            let w = vertex(plan, l.a) + vertex(plan, l.b) - v;
            if dist[w] == u32::MAX {
                dist[w] = dist[v] + 1;
                queue.push_back(w);
            }
        }
    }
    dist
}

/// The most Mb/s the shortest paths from `src` to `dst` carry together: the maximum flow
/// over `arcs`, the links that lie on one of them, each at its rate (augmenting paths,
/// fewest hops first).
fn max_flow_mbps(plan: &Plan, arcs: &[(usize, usize, usize)], src: usize, dst: usize) -> u64 {
    let vertices = plan.nodes + plan.switches.len();
    let arcs: Vec<(usize, usize, u64)> = arcs
        .iter()
        .map(|&(u, v, li)| (u, v, plan.links[li].mbps))
        .collect();
    // The residual graph: arc 2i forward, 2i + 1 back.
    let mut cap: Vec<u64> = arcs.iter().flat_map(|&(_, _, c)| [c, 0]).collect();
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); vertices];
    for (i, &(u, v, _)) in arcs.iter().enumerate() {
        out[u].push(2 * i);
        out[v].push(2 * i + 1);
    }
    let head = |r: usize| {
        let (u, v, _) = arcs[r / 2];
        if r & 1 == 0 {
            v
        } else {
            u
        }
    };
    let mut total = 0u64;
    loop {
        let mut via: Vec<Option<usize>> = vec![None; vertices];
        let mut queue = VecDeque::from([src]);
        while let Some(v) = queue.pop_front() {
            if v == dst {
                break;
            }
            for &r in &out[v] {
                let w = head(r);
                if cap[r] > 0 && w != src && via[w].is_none() {
                    via[w] = Some(r);
                    queue.push_back(w);
                }
            }
        }
        if via[dst].is_none() {
            return total;
        }
        let mut push = u64::MAX;
        let mut v = dst;
        while let Some(r) = via[v] {
            push = push.min(cap[r]);
            v = head(r ^ 1);
        }
        let mut v = dst;
        while let Some(r) = via[v] {
            cap[r] -= push;
            cap[r ^ 1] += push;
            v = head(r ^ 1);
        }
        total += push;
    }
}

/// A breadth-first search over the plan's links from `src` to `dst`, then the sums along
/// the path found.
fn fewest_links(plan: &Plan, src: usize, dst: usize, nic_mbps: u64) -> Option<IdlePath> {
    let vertex = |e: End| vertex(plan, e);
    let adjacent = adjacency(plan);
    let count = adjacent.len();
    // The link each vertex was reached by.
    let mut via: Vec<Option<usize>> = vec![None; count];
    let mut seen = vec![false; count];
    let mut queue = VecDeque::from([src]);
    seen[src] = true;
    while let Some(v) = queue.pop_front() {
        if v == dst {
            break;
        }
        // Frames cross switches, never another node.
        if v < plan.nodes && v != src {
            continue;
        }
        for &li in &adjacent[v] {
            let l = &plan.links[li];
            let w = if vertex(l.a) == v {
                vertex(l.b)
            } else {
                vertex(l.a)
            };
            if !seen[w] {
                seen[w] = true;
                via[w] = Some(li);
                queue.push_back(w);
            }
        }
    }
    if src == dst || !seen[dst] {
        return None;
    }
    let mut path = IdlePath {
        link_mbps: Vec::new(),
        one_way_ps: 0,
        bottleneck_mbps: nic_mbps,
    };
    let mut v = dst;
    while let Some(li) = via[v] {
        let l = &plan.links[li];
        path.link_mbps.push(l.mbps);
        path.one_way_ps += l.delay_ps;
        path.bottleneck_mbps = path.bottleneck_mbps.min(l.mbps);
        v = if vertex(l.a) == v {
            vertex(l.b)
        } else {
            vertex(l.a)
        };
        if v >= plan.nodes {
            path.one_way_ps += plan.switches[v - plan.nodes].latency_ps;
        }
    }
    // Walked from the destination back: the source's link first.
    path.link_mbps.reverse();
    if let Some(first) = path.link_mbps.first_mut() {
        *first = (*first).min(nic_mbps);
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::fabric::tests::cfg;

    #[test]
    fn fat_tree_paths_cross_one_three_or_five_switches() {
        let c = cfg(&[
            ("net.topology", "fat_tree"),
            ("net.fabric.k", "4"),
            ("net.fabric.host_link_delay_ns", "1000"),
            ("net.fabric.fabric_link_delay_ns", "500"),
            ("net.switch_latency_ns", "100"),
        ]);
        let hop = |dst| idle_path(&c, 16, 0, dst).unwrap();
        // Same edge switch; same pod; another pod.
        assert_eq!(hop(1).links(), 2);
        assert_eq!(hop(1).one_way_ps, 2 * 1_000_000 + 100_000);
        assert_eq!(hop(2).links(), 4);
        assert_eq!(hop(2).one_way_ps, 2 * 1_000_000 + 2 * 500_000 + 3 * 100_000);
        assert_eq!(hop(15).links(), 6);
        assert_eq!(
            hop(15).one_way_ps,
            2 * 1_000_000 + 4 * 500_000 + 5 * 100_000
        );
        assert_eq!(hop(15), idle_path(&c, 16, 15, 0).unwrap());
    }

    #[test]
    fn the_bottleneck_is_the_slowest_link_or_the_nic() {
        let c = cfg(&[
            ("net.topology", "leaf_spine"),
            ("net.fabric.hosts_per_leaf", "4"),
            ("net.fabric.spines", "1"),
            ("net.fabric.oversubscription", "8"),
        ]);
        let nic = crate::net::plan::mbps(c.eth.gbps);
        // Four hosts over one spine link at 8:1: half a host's rate.
        assert_eq!(idle_path(&c, 8, 0, 7).unwrap().bottleneck_mbps, nic / 2);
        assert_eq!(idle_path(&c, 8, 0, 1).unwrap().bottleneck_mbps, nic);
        // Each link's own rate, host link, spine links, host link.
        let far = idle_path(&c, 8, 0, 7).unwrap().link_mbps;
        assert_eq!(far, vec![nic, nic / 2, nic / 2, nic]);
        assert!(idle_path(&c, 8, 3, 3).is_err());
    }

    /// A leaf-spine of 25 Gb/s host links and four 12.5 Gb/s spine links per leaf (1:1): a
    /// hashed flow takes one spine link; a sprayed or adaptively routed one spreads over all
    /// four, so its rate is its host link's. The ideal FCT used one spine link's rate for
    /// every routing, and a lone sprayed 7 MB flow read a slowdown of 0.84.
    #[test]
    fn sprayed_and_adaptive_flows_have_every_shortest_path_s_rate() {
        let at = |routing: &str| {
            let c = cfg(&[
                ("net.topology", "leaf_spine"),
                ("net.fabric.leaves", "2"),
                ("net.fabric.hosts_per_leaf", "2"),
                ("net.fabric.spines", "4"),
                ("net.fabric.host_link_gbps", "25"),
                ("net.fabric.routing", routing),
            ]);
            let far = idle_path(&c, 4, 0, 3).unwrap();
            let near = idle_path(&c, 4, 0, 1).unwrap();
            assert_eq!((far.links(), near.links()), (4, 2));
            (far.bottleneck_mbps, near.bottleneck_mbps)
        };
        assert_eq!(at("ecmp"), (12_500, 25_000));
        assert_eq!(at("lowest_link"), (12_500, 25_000));
        assert_eq!(at("spray"), (25_000, 25_000));
        assert_eq!(at("adaptive"), (25_000, 25_000));
        // Spine links slower still: four of them carry less than the host link.
        let c = cfg(&[
            ("net.topology", "fat_tree"),
            ("net.fabric.k", "4"),
            ("net.fabric.fabric_link_gbps", "10"),
            ("net.fabric.routing", "spray"),
        ]);
        // Another pod: two aggregation links up, then two cores each, two links down.
        assert_eq!(idle_path(&c, 16, 0, 15).unwrap().bottleneck_mbps, 20_000);
        // The same edge switch: the host links only.
        assert_eq!(idle_path(&c, 16, 0, 1).unwrap().bottleneck_mbps, 100_000);
    }

    /// A two-node topology given more nodes says which field to set: it told a scenario
    /// file's author to "use --clients 1", a flag `rnic run` does not have.
    #[test]
    fn a_two_node_topology_given_more_nodes_names_net_clients() {
        for topology in ["back_to_back", "wan"] {
            let c = cfg(&[("net.topology", topology)]);
            let e = idle_path(&c, 3, 0, 1).unwrap_err().to_string();
            assert!(e.contains("net.clients = 2: set net.clients = 1"), "{e}");
        }
    }

    /// The tiers' rates and delays are the generated fabrics' alone: on a star, back to
    /// back, wan or a topology file they changed nothing, and the run said nothing.
    #[test]
    fn tier_links_on_another_topology_are_refused_naming_the_field() {
        for (field, value) in [
            ("net.fabric.host_link_gbps", "25"),
            ("net.fabric.fabric_link_gbps", "25"),
            ("net.fabric.host_link_delay_ns", "1000"),
            ("net.fabric.fabric_link_delay_ns", "1000"),
        ] {
            for topology in ["star", "back_to_back", "wan"] {
                let c = cfg(&[("net.topology", topology), (field, value)]);
                let e = idle_path(&c, 2, 0, 1).unwrap_err().to_string();
                assert!(
                    e.contains(&format!("{field} = {value}"))
                        && e.contains(&format!("net.topology = \"{topology}\""))
                        && e.contains("eth.gbps and net.link_delay_ns"),
                    "{e}"
                );
            }
            for topology in ["fat_tree", "leaf_spine"] {
                let c = cfg(&[("net.topology", topology), (field, value)]);
                idle_path(&c, 2, 0, 1).unwrap();
            }
        }
    }

    /// The wan topology's short link, Local's to the accelerator's site, takes
    /// net.link_km as every other topology's links do: it took net.link_delay_ns whatever
    /// net.link_km said, so `--set net.link_km=10` changed nothing there.
    #[test]
    fn the_wan_topologys_short_link_takes_net_link_km() {
        let wan = [("net.topology", "wan"), ("net.wan_km", "1")];
        let one_way = |extra: &[(&str, &str)]| {
            let c = cfg(&[&wan[..], extra].concat());
            idle_path(&c, 2, 0, 1).unwrap().one_way_ps
        };
        let long_ps = 5_000_000;
        assert_eq!(one_way(&[]), 500_000 + long_ps);
        assert_eq!(one_way(&[("net.link_km", "10")]), 50_000_000 + long_ps);
    }

    /// A topology file's parallel paths may differ: two leaves joined by a 10 Gb/s spine
    /// and a 40 Gb/s one (slower to cross). ECMP may hash a flow onto either, so its ideal
    /// takes the faster spine's rate and the shorter delay; it took the first path a search
    /// found, the 10 Gb/s one, and a flow hashed onto the other read a slowdown of 0.6.
    #[test]
    fn ecmp_over_unequal_paths_takes_the_best_of_them() {
        let file = std::env::temp_dir().join(format!("rnic-paths-{}.toml", std::process::id()));
        let mut text = String::new();
        for sw in ["l0", "l1", "s0", "s1"] {
            text += &format!("[[switch]]\nname = \"{sw}\"\n");
        }
        for (a, b, gbps, delay) in [
            ("node0", "l0", 100, 500),
            ("node1", "l1", 100, 500),
            ("l0", "s0", 10, 500),
            ("l0", "s1", 40, 2000),
            ("l1", "s0", 10, 500),
            ("l1", "s1", 40, 2000),
        ] {
            text += &format!(
                "[[link]]\nends = [\"{a}\", \"{b}\"]\ngbps = {gbps}\ndelay_ns = {delay}\n"
            );
        }
        std::fs::write(&file, text).unwrap();
        let at = |routing: &str| {
            let c = cfg(&[
                ("net.topology", file.to_str().unwrap()),
                ("net.fabric.routing", routing),
            ]);
            idle_path(&c, 2, 0, 1).unwrap()
        };
        let (ecmp, spray) = (at("ecmp"), at("spray"));
        let _ = std::fs::remove_file(&file);
        assert_eq!(ecmp.bottleneck_mbps, 40_000);
        assert_eq!(ecmp.link_mbps, vec![100_000, 40_000, 40_000, 100_000]);
        // 4 links of at least 500 ns, 3 switches.
        let switch = cfg(&[]).net.switch_latency_ns;
        let want = 4 * 500_000 + 3 * (switch * 1000.0).round() as u64;
        assert_eq!(ecmp.one_way_ps, want);
        assert_eq!(spray.bottleneck_mbps, 50_000);
    }

    /// A topology file naming a node beyond the run's says which field to raise: it said
    /// "raise --clients", a flag `rnic run` does not have.
    #[test]
    fn a_topology_file_naming_a_node_beyond_the_run_names_net_clients() {
        let file = std::env::temp_dir().join(format!("rnic-node5-{}.toml", std::process::id()));
        std::fs::write(
            &file,
            "[[switch]]\nname = \"s\"\n[[link]]\nends = [\"node0\", \"s\"]\n\
             [[link]]\nends = [\"node1\", \"s\"]\n[[link]]\nends = [\"node5\", \"s\"]\n",
        )
        .unwrap();
        let c = cfg(&[("net.topology", file.to_str().unwrap())]);
        let e = idle_path(&c, 2, 0, 1).unwrap_err().to_string();
        let _ = std::fs::remove_file(&file);
        assert!(e.contains("node5 does not exist"), "{e}");
        assert!(
            e.contains("raise net.clients (rnic perf's --clients)"),
            "{e}"
        );
    }
}
