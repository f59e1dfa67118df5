//! What an out-of-order WRITE exchanges, before it has a wire encoding: the ORNIC paper's
//! packet types (its Fig. 6 and the ACK/NAK of its Figs. 5 and 7) as plain values, so the
//! state machines can be driven and checked with real payload bytes.

/// One segment between an out-of-order requester and responder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OooSegment {
    /// A data packet of an OOO WRITE WQE.
    Write {
        psn: u32,
        /// The packet's write address: carried by FSpot packets until the responder has
        /// learnt the WQE's start address (Spot packets carry none).
        addr: Option<u64>,
        /// The WQE's Last packet (completes it and bumps the MSN).
        last: bool,
        payload: Vec<u8>,
    },
    /// Cumulative acknowledgement: every PSN below `psn` was received.
    Ack {
        psn: u32,
        msn: u32,
        /// The responder knows the WQE's start address: stop carrying it.
        start_learnt: bool,
    },
    /// Bitmap NAK: the PSNs `head + i` for each set bit `i` of `missing` are lost.
    Nak { head: u32, missing: u64 },
}

impl OooSegment {
    /// Whether this is an acknowledgement (ACK or NAK), not data.
    pub fn is_ack(&self) -> bool {
        !matches!(self, OooSegment::Write { .. })
    }
}
