//! The path a frame takes between two nodes of an idle network, and its figures: the
//! latency and rate a flow alone on the fabric would meet. The ideal flow-completion time
//! of [`crate::traffic::ideal`] is built from them.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::graph::End;
use super::plan::Plan;
use crate::config::{Config, ConfigError};

/// What a frame meets from one node to another on an idle network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdlePath {
    /// Links crossed.
    pub links: u32,
    /// Propagation of every link plus the forwarding latency of every switch, ps (no
    /// serialisation, no queueing).
    pub one_way_ps: TimePs,
    /// The slowest link's rate, Mb/s (at most the NIC's line rate, `eth.gbps`).
    pub bottleneck_mbps: u64,
}

/// The idle path from node `src` to node `dst` of the topology `cfg` names for `nodes`
/// nodes: a path of fewest links (every one of them has the same tiers in the generated
/// fabrics, so ECMP's choice does not change the figures).
pub fn idle_path(
    cfg: &Config,
    nodes: usize,
    src: usize,
    dst: usize,
) -> Result<IdlePath, ConfigError> {
    let plan = super::topology::plan(cfg, nodes)?;
    let nic_mbps = super::plan::mbps(cfg.eth.gbps);
    fewest_links(&plan, src, dst, nic_mbps).ok_or_else(|| {
        ConfigError::Inconsistent(format!(
            "no path from node {src} to node {dst} in net.topology = \"{}\"",
            cfg.net.topology
        ))
    })
}

/// A breadth-first search over the plan's links from `src` to `dst`, then the sums along
/// the path found.
fn fewest_links(plan: &Plan, src: usize, dst: usize, nic_mbps: u64) -> Option<IdlePath> {
    let vertex = |e: End| match e {
        End::Node(n) => n,
        End::Switch(s) => plan.nodes + s,
    };
    let count = plan.nodes + plan.switches.len();
    let mut adjacent: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, l) in plan.links.iter().enumerate() {
        adjacent[vertex(l.a)].push(i);
        adjacent[vertex(l.b)].push(i);
    }
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
        links: 0,
        one_way_ps: 0,
        bottleneck_mbps: nic_mbps,
    };
    let mut v = dst;
    while let Some(li) = via[v] {
        let l = &plan.links[li];
        path.links += 1;
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
        assert_eq!(hop(1).links, 2);
        assert_eq!(hop(1).one_way_ps, 2 * 1_000_000 + 100_000);
        assert_eq!(hop(2).links, 4);
        assert_eq!(hop(2).one_way_ps, 2 * 1_000_000 + 2 * 500_000 + 3 * 100_000);
        assert_eq!(hop(15).links, 6);
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
        assert!(idle_path(&c, 8, 3, 3).is_err());
    }
}
