//! Which flow a host event belongs to. Flows that share a node own disjoint host cores
//! there (the same core numbers on every node a flow uses) and disjoint QPs, so a node's
//! core or QPN names exactly one flow: a fill step and a CQE go by their core (a CQ is
//! `2 × core + kind`), a landed WRITE by its QP.

use crate::event::HostEv;

/// No flow.
const NONE: u16 = u16::MAX;

/// The routing tables of a run's flows.
#[derive(Debug, Clone, Default)]
pub struct FlowRoutes {
    /// Per node, the flow of each host core.
    core_flow: Vec<Vec<u16>>,
    /// Per node, the flow of each QPN.
    qpn_flow: Vec<Vec<u16>>,
}

impl FlowRoutes {
    /// Tables for `nodes` nodes and `cores` cores per node, nothing assigned.
    pub fn new(nodes: usize, cores: usize) -> FlowRoutes {
        FlowRoutes {
            core_flow: vec![vec![NONE; cores]; nodes],
            qpn_flow: vec![Vec::new(); nodes],
        }
    }

    /// Cores `first..first + n` of `node` belong to `flow`.
    pub fn assign_cores(&mut self, node: usize, first: usize, n: usize, flow: usize) {
        for c in &mut self.core_flow[node][first..first + n] {
            *c = flow as u16;
        }
    }

    /// QP `qpn` of `node` belongs to `flow`.
    pub fn assign_qp(&mut self, node: usize, qpn: u32, flow: usize) {
        let v = &mut self.qpn_flow[node];
        if v.len() <= qpn as usize {
            crate::per_qp::grow_for(v, qpn as usize, || NONE);
        }
        v[qpn as usize] = flow as u16;
    }

    /// The flow of host event `ev` on `node`, if any.
    pub fn flow_of(&self, node: usize, ev: &HostEv) -> Option<usize> {
        let f = match *ev {
            HostEv::Fill { core } => self.core_flow.get(node).and_then(|v| v.get(core as usize)),
            HostEv::CqeLanded { cq } => self
                .core_flow
                .get(node)
                .and_then(|v| v.get(cq as usize / 2)),
            HostEv::Landed { qpn } | HostEv::LatGiveUp { qpn } => {
                self.qpn_flow.get(node).and_then(|v| v.get(qpn as usize))
            }
        };
        f.copied().filter(|&f| f != NONE).map(usize::from)
    }
}
