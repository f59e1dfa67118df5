//! Latency-hiding QPC scheduling (csRNA §4.5, Fig. 6), switched by `nic.latency_hiding`:
//! the descriptor path a scheduler visit takes to its WQEs.
//!
//! Without it (Fig. 6a) the SQ address and WQE offset live in the QPC, so a scheduler visit
//! must have the QP's context before it can read the WQEs: a QPC miss adds a PCIe round trip
//! in front of the WQE read. With it (Fig. 6b) an on-chip SQ address table
//! (`nic.sq_table_entry_bytes` per QP, read in `nic.sq_table_cycles`) gives the SQ address at
//! once, the WQE read starts immediately, and reading the table makes the QPC management
//! module fetch the context meanwhile, so the QPC and WQE reads overlap and the requester
//! later finds the context cached.

use rnic_sim::TimePs;

use crate::nic::ports::QpcCont;
use crate::nic::qpc_manager::{Channel, QpcJob};
use crate::params::NicParams;

/// How a scheduler visit reaches its WQEs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorPath {
    /// The baseline: the QPC first (it holds the SQ address), then the WQE read.
    QpcFirst,
    /// Latency hiding: the SQ address table read (`sq_table_ps`), then the WQE read at once,
    /// with the QPC request overlapping it as a prefetch.
    LatencyHiding {
        /// SQ address table read, ps.
        sq_table_ps: TimePs,
    },
}

impl DescriptorPath {
    /// The path `nic.latency_hiding` selects.
    pub fn of(p: &NicParams) -> Self {
        if p.latency_hiding {
            DescriptorPath::LatencyHiding {
                sq_table_ps: p.sq_table_ps,
            }
        } else {
            DescriptorPath::QpcFirst
        }
    }

    /// The descriptor channel's QPC request for visit `visit` of `qpn`, served by the
    /// scheduler at `t`, and when the visit may read its WQEs without waiting for the
    /// answer (`None`: the read waits for the QPC). A latency-hiding prefetch still holds
    /// one of the descriptor requester's `ooo_cap` indices until the context is cached.
    pub fn request(self, qpn: u32, visit: u32, t: TimePs) -> (QpcJob, Option<TimePs>) {
        match self {
            DescriptorPath::QpcFirst => (
                QpcJob {
                    qpn,
                    channel: Channel::Descriptor,
                    cont: QpcCont::Visit(visit),
                    at: t,
                },
                None,
            ),
            DescriptorPath::LatencyHiding { sq_table_ps } => {
                let at = t + sq_table_ps;
                (
                    QpcJob {
                        qpn,
                        channel: Channel::Descriptor,
                        cont: QpcCont::Prefetch,
                        at,
                    },
                    Some(at),
                )
            }
        }
    }
}
