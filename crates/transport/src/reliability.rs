//! Reliability modes of a QP: how loss is detected and repaired.
//!
//! Go-back-N is RoCEv2's (IB reliable connection). The out-of-order modes are those of
//! "ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method for
//! Multipath Transmission" (Electronics 2025) and of MP-RDMA as that paper describes it: a
//! QP in one of them sends its WRITE WQEs as out-of-order WRITEs (vendor opcodes, see
//! [`rnic_wire::ooo_eth`]), one WQE at a time, placed by PSN at the responder, repaired by
//! OTD loss detection, bitmap NAKs and a timeout ([`crate::ooo`], driven by `ooo/ooo_qp.rs`).

/// How a QP detects and repairs loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReliabilityMode {
    /// In-order delivery: the responder accepts only the expected PSN, NAKs the first gap
    /// once, and the requester resends everything from the NAKed PSN (RoCEv2, ConnectX,
    /// Linux rxe behaviour).
    #[default]
    GoBackN,
    /// ORNIC: direct write by PSN, an array-of-blocks bitmap as wide as OTD + BDP window,
    /// ACKs aggregated by the register-scheduler.
    Ornic(OooParams),
    /// MP-RDMA: direct write by PSN with an OTD-wide static bitmap (packets beyond it are
    /// dropped and resent) and one ACK per data packet.
    MpRdma(OooParams),
}

impl ReliabilityMode {
    /// The out-of-order parameters, for the out-of-order modes.
    pub fn ooo(self) -> Option<OooParams> {
        match self {
            ReliabilityMode::GoBackN => None,
            ReliabilityMode::Ornic(p) | ReliabilityMode::MpRdma(p) => Some(p),
        }
    }
}

/// Dimensions of an out-of-order QP (see [`crate::ooo::sizing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OooParams {
    /// Bits of one bitmap block (the ORNIC paper: 16).
    pub block_bits: u32,
    /// Block nodes of ORNIC's bitmap: width = nodes × block_bits (the paper: 20).
    pub nodes: u32,
    /// OOO tolerance distance in packets (the paper: 64).
    pub otd: u32,
    /// Bitmap blocks of the pool the device's out-of-order QPs share (the paper: 4096 for
    /// 2048 QPs); QPs with the same `block_bits` and `pool_blocks` draw from one pool, and a
    /// QP never holds more than its `nodes`.
    pub pool_blocks: u32,
    /// ORNIC's ACK scheduler turn in ps (one ACK per turn at most; the completion at once).
    pub ack_turn_ps: u64,
    /// Requester timeout after the latest packet sent, without progress: RTT + OTD / B, the
    /// initial and least value of the QP's retransmission timer (a longer measured round
    /// trip stretches it: [`crate::ooo::RtoEstimator`]).
    pub timeout_ps: u64,
    /// One PMTU packet's time at line rate: a READ request waits, besides the timeout, two
    /// line-rate passes over its range (the responder reads it from host memory, then sends
    /// it) before it is asked again.
    pub packet_ps: u64,
}

impl OooParams {
    /// The retransmission timer's floor (`timeout_ps`) and its least margin over a measured
    /// round trip, OTD / B ([`crate::ooo::RtoEstimator`]).
    pub fn timer_ps(&self) -> (u64, u64) {
        (self.timeout_ps, u64::from(self.otd) * self.packet_ps)
    }
}

impl Default for OooParams {
    /// The paper's: 16-bit blocks, 20 nodes, OTD 64, a pool of 4096 blocks, a turn of one
    /// 4 KB packet time at 100 Gb/s, a timeout of 90 µs + 64 packet times.
    fn default() -> OooParams {
        OooParams {
            block_bits: 16,
            nodes: 20,
            otd: 64,
            pool_blocks: 4096,
            ack_turn_ps: 330_000,
            timeout_ps: 90_000_000 + 64 * 330_000,
            packet_ps: 330_000,
        }
    }
}
