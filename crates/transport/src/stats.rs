//! Counters of one device's transport.

use crate::error::RxDrop;
use rnic_wire::NakCode;

/// NAKs by kind (sent or received).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NakCounts {
    pub psn_sequence_error: u64,
    pub invalid_request: u64,
    pub remote_access_error: u64,
    pub remote_operational_error: u64,
    pub invalid_rd_request: u64,
    pub rnr: u64,
}

impl NakCounts {
    pub(crate) fn count(&mut self, code: NakCode) {
        match code {
            NakCode::PsnSequenceError => self.psn_sequence_error += 1,
            NakCode::InvalidRequest => self.invalid_request += 1,
            NakCode::RemoteAccessError => self.remote_access_error += 1,
            NakCode::RemoteOperationalError => self.remote_operational_error += 1,
            NakCode::InvalidRdRequest => self.invalid_rd_request += 1,
        }
    }

    /// Every NAK, RNR included.
    pub fn total(&self) -> u64 {
        self.psn_sequence_error
            + self.invalid_request
            + self.remote_access_error
            + self.remote_operational_error
            + self.invalid_rd_request
            + self.rnr
    }
}

/// Received packets dropped, by [`RxDrop`] reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DropCounts {
    pub malformed: u64,
    pub not_for_this_device: u64,
    pub unsupported_opcode: u64,
    pub unknown_qp: u64,
    pub bad_qp_state: u64,
    pub pkey_mismatch: u64,
    pub address_mismatch: u64,
    pub out_of_sequence: u64,
    pub duplicate_not_replayable: u64,
    pub responder_busy: u64,
    pub stale_response: u64,
    pub unexpected_response: u64,
    /// Out-of-order data packets not placed (resent by their requester).
    pub ooo_not_placed: u64,
    pub qkey_mismatch: u64,
    pub unreliable_discard: u64,
}

impl DropCounts {
    pub(crate) fn count(&mut self, d: &RxDrop) {
        let c = match d {
            RxDrop::Malformed(_) => &mut self.malformed,
            RxDrop::NotForThisDevice => &mut self.not_for_this_device,
            RxDrop::UnsupportedOpcode(_) => &mut self.unsupported_opcode,
            RxDrop::UnknownQp(_) => &mut self.unknown_qp,
            RxDrop::BadQpState => &mut self.bad_qp_state,
            RxDrop::PkeyMismatch(_) => &mut self.pkey_mismatch,
            RxDrop::AddressMismatch => &mut self.address_mismatch,
            RxDrop::OutOfSequence { .. } => &mut self.out_of_sequence,
            RxDrop::DuplicateNotReplayable(_) => &mut self.duplicate_not_replayable,
            RxDrop::ResponderBusy => &mut self.responder_busy,
            RxDrop::StaleResponse(_) => &mut self.stale_response,
            RxDrop::UnexpectedResponse(_) => &mut self.unexpected_response,
            RxDrop::OooNotPlaced(_) => &mut self.ooo_not_placed,
            RxDrop::QkeyMismatch(_) => &mut self.qkey_mismatch,
            RxDrop::UnreliableDiscard(_) => &mut self.unreliable_discard,
        };
        *c += 1;
    }

    pub fn total(&self) -> u64 {
        self.malformed
            + self.not_for_this_device
            + self.unsupported_opcode
            + self.unknown_qp
            + self.bad_qp_state
            + self.pkey_mismatch
            + self.address_mismatch
            + self.out_of_sequence
            + self.duplicate_not_replayable
            + self.responder_busy
            + self.stale_response
            + self.unexpected_response
            + self.ooo_not_placed
            + self.qkey_mismatch
            + self.unreliable_discard
    }
}

/// Messages the unreliable services lost or refused at the receiver, by cause. A sender
/// never learns of these (no ACK): they are the receiver's count of what did not arrive.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnreliableCounts {
    /// UC messages begun and then abandoned: a PSN gap (lost packet), or a packet refused
    /// (length, R_Key, bounds) inside the message.
    pub uc_messages_abandoned: u64,
    /// UC packets dropped while waiting for the next FIRST/ONLY after an abandoned message.
    pub uc_packets_skipped: u64,
    /// UC/UD SENDs (and UC WRITEs with immediate) that found no receive posted: dropped,
    /// there is no RNR NAK without ACKs.
    pub no_recv_messages: u64,
    /// UD datagrams dropped for a Q_Key mismatch.
    pub ud_qkey_mismatches: u64,
    /// UC/UD messages completed at the receiver in error (receive too short: LOC_LEN_ERR,
    /// receive SGE refused: LOC_PROT_ERR).
    pub recv_errors: u64,
}

/// Everything the transport counts. Packet counts are frames; byte counts are whole frames
/// (without FCS) unless named `payload`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TransportStats {
    /// Packets this transport built (requests, responses, acknowledgements). A CNP is not
    /// among them: the NIC's congestion control builds and sends it (`nic.cc.cnps_sent`),
    /// while a received one passes the transport and counts in `rx_packets`.
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_payload_bytes: u64,
    /// SEND/WRITE/READ request/atomic packets sent, retransmissions included.
    pub tx_requests: u64,
    pub tx_read_responses: u64,
    /// ACK packets (positive ACKs and NAKs).
    pub tx_acks: u64,
    pub tx_atomic_acks: u64,
    /// Request packets sent again (go-back-N after a NAK, timeout or RNR wait).
    pub retransmitted_packets: u64,
    /// READ response packets sent in answer to duplicate READ requests (replays). Most
    /// carry a PSN whose response left before; some leave for the first time, when the
    /// duplicate abandoned their first copy unsent (`Responder::abandon_from`), so this can
    /// exceed the responses sent minus the PSNs answered (440 responses for 80 PSNs, 434
    /// replays, under `net.impair.reorder_window = 8`). Telling them apart would need the
    /// set of PSNs already answered: reordered duplicates replay out of PSN order.
    pub replayed_read_responses: u64,

    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_requests: u64,
    pub rx_read_responses: u64,
    pub rx_acks: u64,
    pub rx_atomic_acks: u64,
    pub rx_cnps: u64,

    pub naks_sent: NakCounts,
    pub naks_received: NakCounts,
    /// Local ACK timeouts that fired with packets outstanding.
    pub ack_timeouts: u64,
    /// Go-back-N restarts (sequence NAK, implicit NAK of lost READ responses, timeout).
    pub go_back_n: u64,
    /// RNR waits that ended and resumed sending.
    pub rnr_waits: u64,
    /// Duplicate requests seen by the responder (re-ACKed or replayed).
    pub duplicate_requests: u64,
    /// ATOMIC ACKNOWLEDGEs sent answering duplicate atomics from the replay table.
    pub atomic_replays: u64,
    /// ACKs and responses for PSNs already acknowledged.
    pub duplicate_responses: u64,
    pub drops: DropCounts,
    /// What the unreliable services (UC, UD) lost by design.
    pub unreliable: UnreliableCounts,
    pub completions: u64,
    pub completion_errors: u64,
    pub cq_overruns: u64,
}
