//! The flow's state per node (its cores, QPs, buffers and keys) and per connected QP pair.

use std::ops::{Index, IndexMut};

use rnic_sim::TimePs;

use super::spec::TestSpec;
use super::CoreSet;

/// Host-side state of one QP.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostQp {
    /// Pair index.
    pub pair: u32,
    /// SQ base.
    pub sq_base: u64,
    /// RQ base.
    pub rq_base: u64,
    /// SQ depth − 1.
    pub sq_mask: u32,
    /// RQ depth − 1.
    pub rq_mask: u32,
    /// SQ producer index.
    pub sq_pi: u32,
    /// RQ producer index.
    pub rq_pi: u32,
    /// Receives consumed and not yet reposted (a list is posted once there are
    /// `recv_post_list` of them).
    pub rq_owed: u32,
    /// Core.
    pub core: u16,
}

/// The lkeys and rkeys of one node's memory regions over a flow's buffers.
#[derive(Debug, Clone, Default)]
pub struct MrKeys {
    /// (lkey, rkey) of the regions over the source buffers, by group.
    pub src: Vec<(u32, u32)>,
    /// (lkey, rkey) of the regions over the destination buffers, by group.
    pub dst: Vec<(u32, u32)>,
}

/// One node's application state.
#[derive(Debug, Clone, Default)]
pub struct NodeApp {
    /// The flow's cores on this node.
    pub cores: CoreSet,
    /// QPs by QPN.
    pub qps: Vec<HostQp>,
    /// Keys of the node's MRs; pair i uses the group of its buffer slot.
    pub keys: MrKeys,
    /// Source buffers base.
    pub src: u64,
    /// Destination buffers base.
    pub dst: u64,
    /// The node's shared receive queue (`host.use_srq`), if the flow has one.
    pub srq: Option<SrqRing>,
    /// CPU time the application's cores spent on this node, ps: building and posting send
    /// WQEs (`host.wqe_prep_ns` + `host.post_send_ns` each), posting receives and polling
    /// CQEs (`host.poll_cq_ns` each); `host.cpu_busy_ps` in `--stats`.
    pub cpu_busy_ps: TimePs,
}

impl NodeApp {
    /// Source buffer of pair `i` (its slot's, [`TestSpec::slot`]).
    #[inline]
    pub fn src_buffer(&self, spec: &TestSpec, i: u32) -> u64 {
        self.src + u64::from(spec.slot(i)) * spec.stride_bytes
    }

    /// Destination buffer of pair `i`.
    #[inline]
    pub fn dst_buffer(&self, spec: &TestSpec, i: u32) -> u64 {
        self.dst + u64::from(i % spec.slots.max(1)) * spec.stride_bytes
    }

    /// The keys (lkey, rkey) of the MR over pair `i`'s source buffer.
    #[inline]
    pub fn src_keys(&self, spec: &TestSpec, i: u32) -> (u32, u32) {
        group_keys(&self.keys.src, spec, i)
    }

    /// The keys (lkey, rkey) of the MR over pair `i`'s destination buffer.
    #[inline]
    pub fn dst_keys(&self, spec: &TestSpec, i: u32) -> (u32, u32) {
        group_keys(&self.keys.dst, spec, i)
    }
}

/// The keys of the group pair `i`'s slot is in ([`crate::host::mr_groups`]).
fn group_keys(keys: &[(u32, u32)], spec: &TestSpec, i: u32) -> (u32, u32) {
    match keys {
        [] => (0, 0),
        [one] => *one,
        k => {
            let g = crate::host::mr_groups::group_of_slot(spec.slot(i), spec.slots, k.len() as u32);
            k[(g as usize).min(k.len() - 1)]
        }
    }
}

/// A node's shared receive queue as its application sees it (perftest's `--use-srq`): its
/// WQEs go into the RQ ring of one of the node's QPs, `ring_qpn` (the NIC fetches them from
/// there into the SRQ), each with a buffer of its own, named by its `wr_id`, so that a
/// SEND that lands in one overwrites no other's; a buffer is free again once its receive's
/// CQE is polled.
#[derive(Debug, Clone, Default)]
pub struct SrqRing {
    /// The QP whose RQ ring holds the SRQ's WQEs.
    pub ring_qpn: u32,
    /// Buffer slots not posted (taken from the end).
    pub free: Vec<u32>,
    /// Per buffer slot, the pair whose SEND landed there last (`u32::MAX`: none yet), for
    /// the check after the run.
    pub last_pair: Vec<u32>,
}

impl SrqRing {
    /// An SRQ in `ring_qpn`'s RQ ring with `buffers` receive buffers, all free.
    pub fn new(ring_qpn: u32, buffers: u32) -> SrqRing {
        SrqRing {
            ring_qpn,
            free: (0..buffers).rev().collect(),
            last_pair: vec![u32::MAX; buffers as usize],
        }
    }

    /// A receive of the SRQ completed on a QP of pair `pair`: its buffer (`wr_id`) holds
    /// that pair's SEND, and is free to post again.
    pub fn took(&mut self, wr_id: u64, pair: u32) {
        if let Some(last) = self.last_pair.get_mut(wr_id as usize) {
            *last = pair;
            self.free.push(wr_id as u32);
        }
    }
}

/// A connected QP pair: the server's QP and its peer on a client.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pair {
    /// Server QPN.
    pub s_qpn: u32,
    /// Client node.
    pub c_node: u32,
    /// Client QPN.
    pub c_qpn: u32,
    /// Operations posted by the initiator.
    pub posted: u64,
    /// Operations completed at the initiator.
    pub completed: u64,
    /// Bandwidth tests: the initiator's work requests that completed in error (the QP went
    /// to ERR and flushed the rest); once every posted one is accounted for, the pair can do
    /// nothing more.
    pub failed: u64,
}

/// A flow's [`NodeApp`]s, held only for the nodes the flow uses (its server and clients),
/// indexed by node number. A flow of a fabric run uses two of up to a thousand hosts: a
/// state for every node (128 bytes and a copy of the flow's cores each) was a quarter of
/// the k = 16 fabric run's peak memory.
#[derive(Debug, Clone, Default)]
pub struct NodeApps {
    /// Per node, the position of its state in `held` plus one; 0: the flow does not use it.
    pos: Vec<u32>,
    held: Vec<NodeApp>,
}

impl NodeApps {
    /// For a run of `nodes` nodes, none used yet.
    pub fn new(nodes: usize) -> Self {
        NodeApps {
            pos: vec![0; nodes],
            held: Vec::new(),
        }
    }

    /// The flow uses node `node`, whose state is `app`.
    pub fn insert(&mut self, node: usize, app: NodeApp) {
        if self.pos[node] == 0 {
            self.held.push(app);
            self.pos[node] = self.held.len() as u32;
        } else {
            self.held[self.pos[node] as usize - 1] = app;
        }
    }

    /// Node `node`'s state, if the flow uses it.
    pub fn get(&self, node: usize) -> Option<&NodeApp> {
        let at = *self.pos.get(node)?;
        at.checked_sub(1).map(|i| &self.held[i as usize])
    }

    /// The states of the nodes the flow uses.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, NodeApp> {
        self.held.iter_mut()
    }

    /// The nodes the flow uses, each with its state.
    pub fn iter_with_node(&self) -> impl Iterator<Item = (usize, &NodeApp)> {
        (self.pos.iter().enumerate())
            .filter(|&(_, &at)| at > 0)
            .map(|(node, &at)| (node, &self.held[at as usize - 1]))
    }
}

impl Index<usize> for NodeApps {
    type Output = NodeApp;

    /// Node `node`'s state; the flow must use it (its events and checks touch no other).
    fn index(&self, node: usize) -> &NodeApp {
        self.get(node).expect("a node the flow uses")
    }
}

impl IndexMut<usize> for NodeApps {
    fn index_mut(&mut self, node: usize) -> &mut NodeApp {
        let at = self.pos[node].checked_sub(1).expect("a node the flow uses");
        &mut self.held[at as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(dst: u64) -> NodeApp {
        NodeApp {
            dst,
            ..NodeApp::default()
        }
    }

    #[test]
    fn only_the_nodes_inserted_are_held_by_their_number() {
        let mut n = NodeApps::new(8);
        n.insert(5, at(50));
        n.insert(2, at(20));
        assert_eq!((n[5].dst, n[2].dst), (50, 20));
        assert!(n.get(3).is_none() && n.get(8).is_none());
        n[2].cpu_busy_ps += 7;
        n.insert(5, at(55));
        let held: Vec<(u64, u64)> = n.iter_mut().map(|a| (a.dst, a.cpu_busy_ps)).collect();
        assert_eq!(held, vec![(55, 0), (20, 7)]);
        assert_eq!((n[5].dst, n[2].cpu_busy_ps), (55, 7));
    }

    #[test]
    #[should_panic(expected = "a node the flow uses")]
    fn a_node_the_flow_does_not_use_has_no_state() {
        let mut n = NodeApps::new(4);
        n.insert(1, at(1));
        let _ = &n[0];
    }
}
