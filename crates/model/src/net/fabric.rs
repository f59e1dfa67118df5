//! Generated datacenter fabrics: a k-ary fat-tree (`net.topology = "fat_tree"`) and a
//! two-tier leaf-spine (`"leaf_spine"`), each a `Plan` of switches and links with a rate
//! and a delay per tier (`[net.fabric]`). Nodes sit on the host ports in order, so node 0
//! (perftest's server) and its nearest neighbours share an edge switch and the last nodes
//! are farthest from it. Routing among the equal-cost paths these fabrics have is
//! `net.fabric.routing`'s (ECMP by default, see [`super::ecmp`]).

use rnic_sim::TimePs;

use super::graph::End;
use super::plan::{mbps, LinkPlan, Plan, SwitchPlan};
use crate::config::{Config, ConfigError, FabricConfig};

/// The rates and delays of a fabric's two kinds of link.
struct Tiers {
    host_mbps: u64,
    host_delay_ps: TimePs,
    fabric_mbps: u64,
    fabric_delay_ps: TimePs,
}

impl Tiers {
    /// The tiers `[net.fabric]` sets, falling back to links of `delay_ps` and `mbps`; when
    /// `net.fabric.fabric_link_gbps` is unset a switch-to-switch link carries
    /// `fabric_per_host` times a host link's rate.
    fn of(f: &FabricConfig, delay_ps: TimePs, mbps_default: u64, fabric_per_host: f64) -> Tiers {
        let host_gbps = f.host_link_gbps.unwrap_or(mbps_default as f64 / 1000.0);
        let host_delay_ps = f.host_link_delay_ns.map_or(delay_ps, rnic_sim::ns);
        Tiers {
            host_mbps: mbps(host_gbps),
            host_delay_ps,
            fabric_mbps: mbps(f.fabric_link_gbps.unwrap_or(host_gbps * fabric_per_host)),
            fabric_delay_ps: f.fabric_link_delay_ns.map_or(host_delay_ps, rnic_sim::ns),
        }
    }

    fn host_link(&self, node: usize, switch: usize) -> LinkPlan {
        LinkPlan {
            a: End::Node(node),
            b: End::Switch(switch),
            delay_ps: self.host_delay_ps,
            mbps: self.host_mbps,
            impair: true,
        }
    }

    fn fabric_link(&self, lower: usize, upper: usize) -> LinkPlan {
        LinkPlan {
            a: End::Switch(lower),
            b: End::Switch(upper),
            delay_ps: self.fabric_delay_ps,
            mbps: self.fabric_mbps,
            impair: false,
        }
    }
}

fn bad(msg: String) -> ConfigError {
    ConfigError::Inconsistent(msg)
}

/// The switches of a fabric, named by role for errors about their buffers.
fn switches(cfg: &Config, names: impl Iterator<Item = String>) -> Vec<SwitchPlan> {
    names
        .map(|name| SwitchPlan {
            buffer_bytes: cfg.net.switch_buffer_bytes,
            latency_ps: rnic_sim::ns(cfg.net.switch_latency_ns),
            buffer_field: format!("switch {name}: net.switch_buffer_bytes"),
        })
        .collect()
}

/// Refuses more nodes than the fabric has host ports, naming what to change.
fn check_hosts(nodes: usize, hosts: usize, what: &str, raise: &str) -> Result<(), ConfigError> {
    if nodes > hosts {
        return Err(bad(format!(
            "net.topology = {what} has {hosts} host ports, but the run has {nodes} nodes (the \
             server and net.clients = {}); raise {raise} or use fewer clients",
            nodes - 1
        )));
    }
    Ok(())
}

/// A k-ary fat-tree (`net.fabric.k`): k pods, each of k/2 edge switches (k/2 hosts each)
/// and k/2 aggregation switches wired to every edge switch of the pod; aggregation switch
/// a of every pod wired to core switches a·k/2 .. (a+1)·k/2 − 1. Switches are numbered
/// edges, then aggregation, then cores, pod by pod; links hosts first, then edge to
/// aggregation, then aggregation to core. Only the host ports that carry a node are wired.
pub(super) fn fat_tree(
    cfg: &Config,
    nodes: usize,
    delay_ps: TimePs,
    mbps_default: u64,
) -> Result<Plan, ConfigError> {
    let f = &cfg.net.fabric;
    let k = f.k as usize;
    if !k.is_multiple_of(2) {
        return Err(bad(format!(
            "net.fabric.k = {k} must be even: each fat-tree switch gives half its ports to \
             the tier below and half to the tier above; e.g. --set net.fabric.k={}",
            k + 1
        )));
    }
    let half = k / 2;
    check_hosts(
        nodes,
        k * k * k / 4,
        &format!("\"fat_tree\" with net.fabric.k = {k}"),
        "net.fabric.k",
    )?;
    let tiers = Tiers::of(f, delay_ps, mbps_default, 1.0);
    let edge = |pod: usize, e: usize| pod * half + e;
    let agg = |pod: usize, a: usize| k * half + pod * half + a;
    let core = |c: usize| k * k + c;
    let names = (0..k * half)
        .map(|i| format!("edge{i}"))
        .chain((0..k * half).map(|i| format!("agg{i}")))
        .chain((0..half * half).map(|i| format!("core{i}")));
    let mut links: Vec<LinkPlan> = (0..nodes).map(|n| tiers.host_link(n, n / half)).collect();
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                links.push(tiers.fabric_link(edge(pod, e), agg(pod, a)));
            }
        }
    }
    for pod in 0..k {
        for a in 0..half {
            for c in 0..half {
                links.push(tiers.fabric_link(agg(pod, a), core(a * half + c)));
            }
        }
    }
    Ok(Plan {
        nodes,
        switches: switches(cfg, names),
        links,
        impair_uplinks: true,
    })
}

/// A leaf-spine: `net.fabric.leaves` leaves of `hosts_per_leaf` host ports, each wired to
/// every one of `spines` spines by one link. Switches are numbered leaves then spines; links
/// hosts first, then leaf by leaf to every spine.
pub(super) fn leaf_spine(
    cfg: &Config,
    nodes: usize,
    delay_ps: TimePs,
    mbps_default: u64,
) -> Result<Plan, ConfigError> {
    let f = &cfg.net.fabric;
    let (leaves, spines, per_leaf) = (
        f.leaves as usize,
        f.spines as usize,
        f.hosts_per_leaf as usize,
    );
    if f.fabric_link_gbps.is_some() && f.oversubscription != 1.0 {
        return Err(bad(format!(
            "net.fabric.fabric_link_gbps and net.fabric.oversubscription = {} both set the \
             spine links' rate; give one of them",
            f.oversubscription
        )));
    }
    check_hosts(
        nodes,
        leaves * per_leaf,
        &format!(
            "\"leaf_spine\" with net.fabric.leaves = {leaves} and net.fabric.hosts_per_leaf \
             = {per_leaf}"
        ),
        "net.fabric.leaves or net.fabric.hosts_per_leaf",
    )?;
    let spine_per_host = per_leaf as f64 / (spines as f64 * f.oversubscription);
    let tiers = Tiers::of(f, delay_ps, mbps_default, spine_per_host);
    let names = (0..leaves)
        .map(|i| format!("leaf{i}"))
        .chain((0..spines).map(|i| format!("spine{i}")));
    let mut links: Vec<LinkPlan> = (0..nodes)
        .map(|n| tiers.host_link(n, n / per_leaf))
        .collect();
    for leaf in 0..leaves {
        for spine in 0..spines {
            links.push(tiers.fabric_link(leaf, leaves + spine));
        }
    }
    Ok(Plan {
        nodes,
        switches: switches(cfg, names),
        links,
        impair_uplinks: true,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The baseline profile with `set`'s `--set`s (the fabric and path tests' configs).
    pub(crate) fn cfg(set: &[(&str, &str)]) -> Config {
        let sets: Vec<_> = set
            .iter()
            .map(|(k, v)| crate::config::parse_set(&format!("{k}={v}")).unwrap())
            .collect();
        Config::resolve("baseline", &sets).unwrap()
    }

    fn degree(plan: &Plan, s: usize) -> usize {
        plan.links
            .iter()
            .filter(|l| l.a == End::Switch(s) || l.b == End::Switch(s))
            .count()
    }

    #[test]
    fn a_full_fat_tree_has_its_textbook_counts() {
        for k in [2usize, 4, 8] {
            let hosts = k * k * k / 4;
            let plan = fat_tree(&cfg(&[("net.fabric.k", &k.to_string())]), hosts, 1, 1).unwrap();
            assert_eq!(plan.switches.len(), 5 * k * k / 4);
            assert_eq!(plan.links.len(), 3 * hosts);
            for s in 0..plan.switches.len() {
                assert_eq!(degree(&plan, s), k, "k = {k}, switch {s}");
            }
        }
    }

    #[test]
    fn a_full_leaf_spine_wires_every_leaf_to_every_spine() {
        let c = cfg(&[
            ("net.fabric.leaves", "3"),
            ("net.fabric.spines", "2"),
            ("net.fabric.hosts_per_leaf", "4"),
        ]);
        let plan = leaf_spine(&c, 12, 1, 100_000).unwrap();
        assert_eq!(plan.switches.len(), 5);
        assert_eq!(plan.links.len(), 12 + 6);
        (0..3).for_each(|l| assert_eq!(degree(&plan, l), 4 + 2));
        (3..5).for_each(|s| assert_eq!(degree(&plan, s), 3));
        // 4 hosts of 100 Gb/s over 2 spine links: 200 Gb/s each for 1:1.
        assert_eq!(plan.links[12].mbps, 200_000);
    }

    #[test]
    fn oversubscription_sets_the_spine_rate() {
        let c = cfg(&[
            ("net.fabric.hosts_per_leaf", "6"),
            ("net.fabric.spines", "2"),
            ("net.fabric.oversubscription", "3"),
        ]);
        let plan = leaf_spine(&c, 4, 1, 100_000).unwrap();
        assert_eq!(plan.links.last().unwrap().mbps, 100_000);
    }

    #[test]
    fn too_many_nodes_or_an_odd_k_name_the_field() {
        let e = fat_tree(&cfg(&[("net.fabric.k", "4")]), 17, 1, 1).unwrap_err();
        assert!(e.to_string().contains("net.fabric.k"), "{e}");
        let e = fat_tree(&cfg(&[("net.fabric.k", "5")]), 2, 1, 1).unwrap_err();
        assert!(e.to_string().contains("must be even"), "{e}");
        let e = leaf_spine(&cfg(&[]), 9, 1, 1).unwrap_err();
        assert!(e.to_string().contains("hosts_per_leaf"), "{e}");
        let c = cfg(&[
            ("net.fabric.fabric_link_gbps", "100"),
            ("net.fabric.oversubscription", "2"),
        ]);
        let e = leaf_spine(&c, 2, 1, 1).unwrap_err();
        assert!(e.to_string().contains("give one of them"), "{e}");
    }

    #[test]
    fn nodes_fill_host_ports_in_order() {
        let plan = fat_tree(&cfg(&[("net.fabric.k", "4")]), 5, 1, 1).unwrap();
        let edges: Vec<End> = plan.links[..5].iter().map(|l| l.b).collect();
        assert_eq!(
            edges,
            [0, 0, 1, 1, 2].map(End::Switch).to_vec(),
            "two hosts per edge switch"
        );
    }
}
