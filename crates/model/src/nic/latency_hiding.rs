//! Latency-hiding QPC scheduling (seed 000 §4.5, Fig. 6), switched by `nic.latency_hiding`.
//!
//! Without it (Fig. 6a) the SQ address and WQE offset live in the QPC, so a scheduler visit
//! must have the QP's context before it can read the WQEs: a QPC miss adds a PCIe round trip
//! in front of the WQE read. With it (Fig. 6b) an on-chip SQ address table
//! (`nic.sq_table_entry_bytes` per QP, read in `nic.sq_table_cycles`) gives the SQ address at
//! once, the WQE read starts immediately, and reading the table makes the QPC management
//! module fetch the context meanwhile, so the QPC and WQE reads overlap and the requester
//! later finds the context cached.

use rnic_sim::TimePs;

use super::qpc_manager::{Channel, QpcRequest};
use crate::world::World;

/// Bit marking a descriptor-channel QPC request as a latency-hiding prefetch: its response
/// is dropped (the WQE read did not wait for it).
pub const PREFETCH_INDEX: u32 = 1 << 31;

impl World {
    /// The descriptor unit's QPC request for scheduler visit `visit` of `qpn`, served by the
    /// scheduler at `t`. With `hiding` the request is a prefetch that still holds one of the
    /// descriptor requester's `ooo_cap` indices until the context is cached, and the WQE
    /// read is issued after the SQ address table read (`sq_table_ps`); without it the WQE
    /// read waits for the QPC response (`wqe_fetch` issues it then).
    pub(crate) fn descriptor_qpc_request(
        &mut self,
        n: usize,
        qpn: u32,
        visit: u32,
        t: TimePs,
        hiding: bool,
        sq_table_ps: TimePs,
    ) {
        if hiding {
            let at = t + sq_table_ps;
            self.nodes[n].nic.qpc.submit(QpcRequest {
                qpn,
                channel: Channel::Descriptor,
                index: visit | PREFETCH_INDEX,
                at,
            });
            self.wqe_fetch_issue(n, visit, at);
        } else {
            self.nodes[n].nic.qpc.submit(QpcRequest {
                qpn,
                channel: Channel::Descriptor,
                index: visit,
                at: t,
            });
        }
    }
}
