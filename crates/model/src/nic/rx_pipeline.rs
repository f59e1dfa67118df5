//! The RX pipeline: parse (`rx_pkt_cycles` per frame) → QPC request (responder channel for
//! requests, requester channel for ACKs and responses) → translation of the RETH/AtomicETH
//! target (MPT + one MTT lookup per page of the whole message, on its first packet) → the
//! transport's checks and data placement (`handle_packet`). After it: the payload's DMA
//! write over PCIe, the READ/atomic response's data read, ACK generation by the TX engine,
//! CQEs. All stages are in order, so the transport sees each QP's packets in arrival order.

use rnic_sim::TimePs;

use super::unit::Unit;

/// Counters of the RX pipeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RxStats {
    /// RoCE frames received (RDMA CM MADs not included: they are `cm_mads`).
    pub frames: u64,
    /// RDMA CM MADs received and handed to the host's connection manager. The host sends
    /// its MADs past the TX engine, so `nic.tx.frames` has no such share either.
    pub cm_mads: u64,
    /// Frames the transport dropped (malformed, bad PSN state, unknown QP, ...).
    pub dropped: u64,
    /// Payload bytes DMA-written into host memory.
    pub payload_bytes: u64,
    /// Payload bytes of SENDs carried inside their CQE instead (`host.inline_recv_bytes`;
    /// reported only when used).
    #[serde(skip_serializing_if = "crate::stats::is_zero")]
    pub inline_recv_bytes: u64,
    /// Requests held for a receive WQE the NIC was still reading from the RQ ring, or
    /// behind such a request of their QP ([`super::rx_wait`]; reported only when one was).
    #[serde(skip_serializing_if = "crate::stats::is_zero")]
    pub recv_waits: u64,
}

/// The RX pipeline.
#[derive(Debug)]
pub struct RxPipeline {
    /// The parse stage.
    pub unit: Unit,
    /// Counters.
    pub stats: RxStats,
}

impl RxPipeline {
    /// A pipeline with II `rx_ps`.
    pub fn new(rx_ps: TimePs) -> Self {
        RxPipeline {
            unit: Unit::new(rx_ps),
            stats: RxStats::default(),
        }
    }
}

/// Transport counters that grow when a received packet the transport took (`Ok` from
/// `handle_packet`) is not placed: a duplicate, or NAKed. A dropped packet is the other case,
/// an `Err`, and the drop counters grow only then, so they are not summed here (fifteen
/// more loads, twice per received frame).
pub fn not_placed_count(s: &rnic_transport::TransportStats) -> u64 {
    s.duplicate_requests + s.naks_sent.total() + s.duplicate_responses
}

impl crate::stats::Report for RxPipeline {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.unit"), &self.unit.stats);
    }
}
