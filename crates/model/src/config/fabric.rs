//! `[net.fabric]`: the generated fabrics (`net.topology = "fat_tree"` or `"leaf_spine"`)
//! and how switches pick among equal-cost next hops. Star, back-to-back, wan and topology
//! files keep their one route per destination unless `routing = "ecmp"` asks otherwise,
//! so no existing result moves.

use super::declare::{config_enum, config_section};
use super::schema::{float, uint, Kind, NS};

config_enum! {
    /// How a switch forwards toward a node it reaches over several equally short paths.
    pub enum FabricRouting {
        /// ECMP on the generated fabrics, the lowest-numbered link elsewhere.
        Auto = "auto",
        /// Always the lowest-numbered link among the shortest (one path per destination).
        LowestLink = "lowest_link",
        /// ECMP: a hash of the frame's 5-tuple (IP addresses, UDP ports, protocol) salted
        /// per switch picks one of the shortest next hops, so a QP (its UDP source port)
        /// keeps one path and QPs spread over all of them, as datacenter switches do.
        Ecmp = "ecmp",
        /// Packet spraying: each frame takes one of the shortest next hops drawn at random
        /// by each switch (from its own stream of the run's seed), so a QP's frames spread
        /// over every path and arrive out of order: the multipath fabric that out-of-order
        /// transports (`qp.reliability = "ornic"` or `"mp_rdma"`) are built for.
        Spray = "spray",
        /// Adaptive routing: each frame takes the shortest next hop whose output port will
        /// have sent what it holds soonest (its queue and the frame on its wire, at its rate;
        /// a random one among equals), as switches with adaptive routing pick the least
        /// congested port; a QP's frames spread, and frames of different sizes may arrive
        /// out of order.
        Adaptive = "adaptive",
    }
}

config_section! {
    /// Generated fabrics and multipath routing.
    pub struct FabricConfig in "net.fabric" {
        /// net.topology = "fat_tree": the k of a k-ary fat-tree (even, 2 to 64): k pods of
        /// k/2 edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts; node i
        /// sits on host i, k/2 hosts per edge switch
        k: u32 = 4; "ports per switch", uint(2, 64);
        /// net.topology = "leaf_spine": leaf (top-of-rack) switches
        leaves: u32 = 2; "switches", uint(1, 4096);
        /// net.topology = "leaf_spine": spine switches, each wired to every leaf
        spines: u32 = 2; "switches", uint(1, 4096);
        /// net.topology = "leaf_spine": host ports of each leaf; node i sits under leaf
        /// i / hosts_per_leaf
        hosts_per_leaf: u32 = 4; "hosts", uint(1, 4096);
        /// net.topology = "leaf_spine": a leaf's host capacity over its spine capacity
        /// (hosts_per_leaf x host link rate over spines x spine link rate); sets the spine
        /// links' rate unless net.fabric.fabric_link_gbps is given
        oversubscription: f64 = 1.0; "ratio", float(0.001, 1e6);
        /// net.topology = "fat_tree" or "leaf_spine" (refused on another topology): rate of
        /// each host's link to its edge or leaf switch; unset: eth.gbps
        host_link_gbps: Option<f64> = None; "Gb/s", float(0.001, 10_000.0);
        /// net.topology = "fat_tree" or "leaf_spine" (refused on another topology): rate of
        /// every switch-to-switch link; unset: the host links' rate (a fat-tree), or the rate
        /// net.fabric.oversubscription gives (a leaf-spine)
        fabric_link_gbps: Option<f64> = None; "Gb/s", float(0.001, 10_000.0);
        /// net.topology = "fat_tree" or "leaf_spine" (refused on another topology): one-way
        /// delay of each host link; unset: net.link_delay_ns (or net.link_km)
        host_link_delay_ns: Option<f64> = None; "ns", NS;
        /// net.topology = "fat_tree" or "leaf_spine" (refused on another topology): one-way
        /// delay of each switch-to-switch link; unset: as the host links
        fabric_link_delay_ns: Option<f64> = None; "ns", NS;
        /// Choice among equal-cost next hops: "auto" (ECMP on the generated fabrics, the
        /// lowest-numbered link elsewhere), "lowest_link", "ecmp" (per flow, by a hash of
        /// its 5-tuple), "spray" (per frame, at random) or "adaptive" (per frame, the least
        /// queued)
        routing: FabricRouting = FabricRouting::Auto; "routing", Kind::Str(FabricRouting::NAMES);
    }
}

impl FabricConfig {
    /// Whether switches spread frames over equal-cost next hops on topology `topology`
    /// (hashing flows, spraying, or by queue).
    pub fn ecmp_on(&self, topology: &str) -> bool {
        match self.routing {
            FabricRouting::Ecmp | FabricRouting::Spray | FabricRouting::Adaptive => true,
            FabricRouting::LowestLink => false,
            FabricRouting::Auto => matches!(topology, "fat_tree" | "leaf_spine"),
        }
    }
}
