//! The flow's state per node (its cores, QPs, buffers and keys) and per connected QP pair.

use rnic_sim::TimePs;

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
    /// CPU time the application's cores spent on this node, ps: building and posting send
    /// WQEs (`host.wqe_prep_ns` + `host.post_send_ns` each), posting receives and polling
    /// CQEs (`host.poll_cq_ns` each); `host.cpu_busy_ps` in `--stats`.
    pub cpu_busy_ps: TimePs,
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
