//! Concurrent flows: several perftest-style applications in one simulation.
//!
//! A flow is one [`crate::host::perftest::Perftest`] over its own QPs, its own host cores
//! (with their CQs), its own SQ/RQ rings and its own buffer region, on node 0 (the server)
//! and the client nodes it names. Everything else is shared: the NICs (their caches,
//! pipelines, PCIe links), the network and the simulated time. That is what lets a
//! latency-sensitive flow feel the tenants streaming beside it.
//!
//! Host cores are per flow, like processes pinned to cores of their own: flow k gets cores
//! `base_k .. base_k + cores_k` on every node it uses, and flows that share a node never
//! share a core there ([`pack_cores`]), so the flows on any one node must fit in
//! `host.cores`. `rnic perf` is the one-flow case whose flow has every core and every
//! client.

use serde::{Deserialize, Serialize};

use crate::size_mix::SizeMix;
use crate::workload::{AtomicOp, PerfSpec, PerfTest, QpProfile};

/// A flow's service class: what a TX performance-isolation scheme protects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowClass {
    /// Latency-sensitive.
    Ls,
    /// Bandwidth-sensitive.
    #[default]
    Bs,
}

impl FlowClass {
    /// The name used in files and reports.
    pub fn name(self) -> &'static str {
        match self {
            FlowClass::Ls => "ls",
            FlowClass::Bs => "bs",
        }
    }
}

/// One flow, resolved: every field has its value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowSpec {
    /// Name in reports.
    pub name: String,
    /// The test the flow runs.
    pub test: PerfTest,
    /// Atomic operation (atomic tests only).
    pub atomic: AtomicOp,
    /// Message size, bytes: every message's, or with `size_mix` the largest.
    pub size: u64,
    /// Bandwidth tests: each message's size drawn from this mix (`size` is its largest).
    pub size_mix: Option<SizeMix>,
    /// Iterations: per QP for bandwidth tests, in all for latency tests (as perftest).
    pub iters: u64,
    /// QPs on the server; QP i connects to `clients[i % clients.len()]`.
    pub qps: u32,
    /// Operations in flight per QP (bandwidth tests).
    pub tx_depth: u32,
    /// `Some`: run for this long after the flow's warm-up and count what completes in that
    /// window; `None`: run `iters`.
    pub duration_us: Option<f64>,
    /// When the flow's first post may start, µs of simulated time.
    pub start_us: f64,
    /// The flow's server node (0 unless the flow names another): it initiates the
    /// bandwidth tests (WRITE/SEND data goes to the clients, READ data comes from them) and
    /// answers the latency tests.
    pub server: u32,
    /// The client nodes: the other end of the flow's QPs (never the server).
    pub clients: Vec<u32>,
    /// Host cores of the flow on every node it uses.
    pub cores: u32,
    /// `--procs` (latency tests on the server): processes, one per core of the flow.
    pub procs: Option<u32>,
    /// Memory regions per node over the flow's buffers (contiguous groups of buffer slots).
    pub mrs: u32,
    /// Memory regions on the client nodes instead (`None`: `mrs`).
    pub client_mrs: Option<u32>,
    /// QP attributes: pair i gets `qp_profiles[i % len]`; empty: the config's `qp.*`.
    pub qp_profiles: Vec<QpProfile>,
    /// The tenant the flow belongs to (given to its QPs' records in the NIC).
    pub tenant: u16,
    /// The flow's class.
    pub class: FlowClass,
}

impl FlowSpec {
    /// The single flow of a `rnic perf` run with `size`-byte messages: every core, every
    /// client, from time 0.
    pub fn from_perf(spec: &PerfSpec, size: u64, cores: u32) -> FlowSpec {
        FlowSpec {
            name: spec.test.name().to_string(),
            test: spec.test,
            atomic: spec.atomic,
            size,
            size_mix: None,
            iters: spec.iters,
            qps: spec.qps,
            tx_depth: spec.tx_depth,
            duration_us: spec.duration_us,
            start_us: 0.0,
            server: 0,
            clients: (1..=spec.clients.max(1)).collect(),
            cores,
            procs: spec.procs,
            mrs: spec.mrs,
            client_mrs: spec.client_mrs,
            qp_profiles: spec.qp_profiles.clone(),
            tenant: spec.qp_profiles.first().map_or(0, |p| p.tenant),
            class: if spec.test.is_latency() {
                FlowClass::Ls
            } else {
                FlowClass::Bs
            },
        }
    }

    /// The profile of pair `i`.
    pub fn profile(&self, cfg: &crate::config::Config, i: u32) -> QpProfile {
        if self.qp_profiles.is_empty() {
            QpProfile {
                tenant: self.tenant,
                ..QpProfile::from_config(cfg)
            }
        } else {
            self.qp_profiles[i as usize % self.qp_profiles.len()]
        }
    }

    /// The smallest message size (the wire bound's per-operation time holds for it).
    pub fn min_size(&self) -> u64 {
        self.size_mix.as_ref().map_or(self.size, |m| m.min())
    }

    /// The largest path MTU any pair uses.
    pub fn max_pmtu(&self, cfg: &crate::config::Config) -> u32 {
        self.qp_profiles
            .iter()
            .map(|p| p.pmtu)
            .max()
            .unwrap_or(cfg.qp.pmtu)
    }

    /// The PerfSpec of this flow alone (for the memory budget and the wire bound).
    pub fn as_perf(&self) -> PerfSpec {
        PerfSpec {
            test: self.test,
            atomic: self.atomic,
            sizes: vec![self.size],
            iters: self.iters,
            qps: self.qps,
            tx_depth: self.tx_depth,
            duration_us: self.duration_us,
            clients: self.clients.len() as u32,
            pcap: None,
            procs: self.procs,
            qp_profiles: self.qp_profiles.clone(),
            mrs: self.mrs,
            client_mrs: self.client_mrs,
            mr_per_qp: false,
            direction: Default::default(),
        }
    }
}

/// A run of concurrent flows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowsSpec {
    /// The flows, in the order they are built and reported.
    pub flows: Vec<FlowSpec>,
    /// Client nodes in the network (nodes 1..=clients; with node 0, every node may be a
    /// flow's server or client).
    pub clients: u32,
    /// Write every frame on one node's port (node 0's unless it names another) to a pcap
    /// file.
    pub pcap: Option<crate::workload::PcapOut>,
}

impl FlowsSpec {
    /// Nodes in the network: node 0 and the clients (at least one).
    pub fn nodes(&self) -> usize {
        self.clients.max(1) as usize + 1
    }

    /// Checks what the model needs before building: at least one flow, QPs, clients that
    /// exist, cores that fit in `host.cores`. Errors name `flow[i].field` and the fix.
    pub fn check(&self, host_cores: u32) -> Result<(), String> {
        if self.flows.is_empty() {
            return Err("no flow given: add a [[flow]] table".into());
        }
        for (i, f) in self.flows.iter().enumerate() {
            if f.qps == 0 {
                return Err(format!("flow[{i}].qp = 0: a flow needs at least one QP"));
            }
            if f.clients.is_empty() {
                return Err(format!(
                    "flow[{i}].clients is empty: name at least one client node (0..={}, not the server)",
                    self.clients
                ));
            }
            if f.server > self.clients {
                return Err(format!(
                    "flow[{i}].server = {}, but the nodes are 0..={}: use one of them or raise \
                     net.clients",
                    f.server, self.clients
                ));
            }
            if let Some(&c) = f.clients.iter().find(|&&c| c > self.clients) {
                return Err(format!(
                    "flow[{i}].clients names node {c}, but the nodes are 0..={}: use one of \
                     them or raise net.clients",
                    self.clients
                ));
            }
            if f.clients.contains(&f.server) {
                return Err(format!(
                    "flow[{i}].clients names node {}, the flow's server: a flow's QPs connect \
                     its server to other nodes (leave it out of clients, or set server)",
                    f.server
                ));
            }
            if f.cores == 0 {
                return Err(format!(
                    "flow[{i}].cores = 0: a flow needs at least one core"
                ));
            }
            if let Some(m) = &f.size_mix {
                m.check().map_err(|e| format!("flow[{i}].size: {e}"))?;
                if f.test.is_latency() || f.test.verb() == crate::workload::Verb::Atomic {
                    return Err(format!(
                        "flow[{i}].size: a size mix is for write-bw, read-bw and send-bw \
                         flows; {} sends one size (give one size, or a list for a flow \
                         per size)",
                        f.test
                    ));
                }
            }
            if let Some(n) = f.procs {
                check_flow_procs(i, f, n)?;
            }
        }
        let (_, cores) = self.core_bases();
        if cores > host_cores as usize {
            return Err(format!(
                "the flows use {cores} host cores on a node (each flow's `cores` on every \
                 node it uses, default 1), but host.cores = {host_cores}: raise host.cores \
                 ([set] host.cores = {cores}) or give the flows fewer cores"
            ));
        }
        Ok(())
    }

    /// Each flow's first host core, and the cores a node needs ([`pack_cores`]).
    pub fn core_bases(&self) -> (Vec<usize>, usize) {
        let nodes: Vec<(u32, Vec<u32>)> = self
            .flows
            .iter()
            .map(|f| {
                let mut on = f.clients.clone();
                on.push(f.server);
                (f.cores, on)
            })
            .collect();
        pack_cores(&nodes, self.clients as usize + 1)
    }
}

/// Host cores for flows of `(cores, nodes it uses)`, in order: a flow's cores start at the
/// first number free on every node it uses after the flows before it, so flows that share a
/// node never share a core and flows on other nodes reuse the numbers (a fabric's workload
/// of thousands of flows needs a core per flow only on the nodes each uses). When every
/// flow uses node 0 (`rnic perf`, most scenarios) this is the running sum of their cores.
/// Returns each flow's first core and the cores the busiest node needs.
pub fn pack_cores(flows: &[(u32, Vec<u32>)], nodes: usize) -> (Vec<usize>, usize) {
    let mut next_free = vec![0usize; nodes];
    let bases = flows
        .iter()
        .map(|(cores, on)| {
            let base = on.iter().map(|&n| next_free[n as usize]).max().unwrap_or(0);
            for &n in on {
                next_free[n as usize] = base + *cores as usize;
            }
            base
        })
        .collect();
    (bases, next_free.into_iter().max().unwrap_or(0))
}

/// `procs` of flow `i`, under `rnic perf --procs`'s rules
/// ([`crate::workload::check_procs`]) but named by the flow's own keys: its processes run
/// on the flow's `cores`, not on all of `host.cores`.
fn check_flow_procs(i: usize, f: &FlowSpec, n: u32) -> Result<(), String> {
    if crate::workload::check_procs(f.test, n, f.cores, f.qps).is_ok() {
        return Ok(());
    }
    let sec = format!("flow[{i}]");
    if !matches!(
        f.test,
        PerfTest::WriteLat | PerfTest::ReadLat | PerfTest::AtomicLat
    ) {
        return Err(format!(
            "`{sec}.procs` applies to write-lat, read-lat and atomic-lat flows, not {}",
            f.test
        ));
    }
    if n > f.cores {
        return Err(format!(
            "`{sec}.procs` = {n} needs a core per process, but `{sec}.cores` = {}: set \
             `{sec}.cores` = {n} (the flows' cores together within host.cores) or lower \
             `{sec}.procs`",
            f.cores
        ));
    }
    Err(format!(
        "`{sec}.procs` = {n} needs at least one QP per process, but `{sec}.qp` = {}",
        f.qps
    ))
}

#[cfg(test)]
mod tests {
    use super::pack_cores;
    use proptest::prelude::*;

    #[test]
    fn flows_through_node_0_get_the_running_sum_of_cores() {
        let flows = vec![(2, vec![1, 0]), (3, vec![2, 0]), (1, vec![1, 2, 0])];
        assert_eq!(pack_cores(&flows, 3), (vec![0, 2, 5], 6));
    }

    #[test]
    fn flows_on_other_nodes_reuse_the_numbers() {
        let flows = vec![(1, vec![1, 0]), (1, vec![3, 2]), (1, vec![2, 1])];
        // The third shares node 1 with the first and node 2 with the second.
        assert_eq!(pack_cores(&flows, 4), (vec![0, 0, 1], 2));
    }

    proptest! {
        /// Two flows that share a node never share a core there, and no node needs more
        /// than the reported count.
        #[test]
        fn flows_sharing_a_node_never_share_a_core(
            flows in prop::collection::vec((1u32..4, prop::collection::btree_set(0u32..6, 1..4)), 1..30)
        ) {
            let flows: Vec<(u32, Vec<u32>)> =
                flows.into_iter().map(|(c, on)| (c, on.into_iter().collect())).collect();
            let (bases, need) = pack_cores(&flows, 6);
            for (i, (ci, on_i)) in flows.iter().enumerate() {
                prop_assert!(bases[i] + *ci as usize <= need);
                for (j, (cj, on_j)) in flows.iter().enumerate().take(i) {
                    if on_i.iter().any(|n| on_j.contains(n)) {
                        let (a, b) = (bases[i], bases[j]);
                        prop_assert!(a >= b + *cj as usize || b >= a + *ci as usize);
                    }
                }
            }
        }
    }
}
