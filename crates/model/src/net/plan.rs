//! A topology before it is built (`Plan`): switches and links with their delays and rates.
//! The star, back-to-back, wan and file topologies ([`super::topology`]) and the generated
//! fabrics ([`super::fabric`]) each produce one; `topology` builds the network from it.

use rnic_sim::TimePs;

use super::graph::End;

/// A link of a plan: its ends, delay, rate and whether it carries the impairment element.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct LinkPlan {
    pub(super) a: End,
    pub(super) b: End,
    pub(super) delay_ps: TimePs,
    pub(super) mbps: u64,
    pub(super) impair: bool,
}

/// A switch of a plan.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SwitchPlan {
    pub(super) buffer_bytes: u64,
    pub(super) latency_ps: TimePs,
    /// The switch and the field its buffer comes from, for errors that name what to change.
    pub(super) buffer_field: String,
}

/// A topology before it is built: switches and links.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Plan {
    pub(super) nodes: usize,
    pub(super) switches: Vec<SwitchPlan>,
    pub(super) links: Vec<LinkPlan>,
    /// Impairment elements on each node's uplink only (each frame meets one), as the star
    /// and back-to-back topologies place them; a file marks its links instead.
    pub(super) impair_uplinks: bool,
}

/// A rate in Gb/s as whole Mb/s (at least 1).
pub(super) fn mbps(gbps: f64) -> u64 {
    (gbps * 1000.0).round().max(1.0) as u64
}
