//! Reliability modes of a QP: how loss is detected and repaired.
//!
//! Only the RoCEv2 / IB reliable-connection baseline exists today. The seam for ORNIC's
//! out-of-order direct write ("ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet
//! Direct Write Method for Multipath Transmission", Electronics 2025) is:
//! - the requester can regenerate any packet from `(WQE, PSN)` by re-reading local memory
//!   (`Requester::sq` is ordered by start PSN and searched by PSN), so a selective
//!   retransmission of one PSN is the same call a go-back-N resend makes;
//! - the responder places every payload through one function,
//!   [`crate::responder::placement_offset`] (`(psn - start_psn) × PMTU`), which is already the
//!   ORNIC direct-write equation; an out-of-order mode adds a per-QP bitmap of received PSNs
//!   and a different loss detector (OTD) instead of the in-order `ePSN` check.

/// How a QP detects and repairs loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ReliabilityMode {
    /// In-order delivery: the responder accepts only the expected PSN, NAKs the first gap
    /// once, and the requester resends everything from the NAKed PSN (RoCEv2, ConnectX,
    /// Linux rxe behaviour).
    #[default]
    GoBackN,
}
