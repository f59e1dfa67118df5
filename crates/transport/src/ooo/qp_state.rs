//! The out-of-order state one QP owns: its mode's parameters, the requester and responder
//! engines of [`crate::ooo`], its share of the device's block pool and its READ state (how
//! they are driven is `ooo_qp.rs`'s and `ooo_read.rs`'s). It imports nothing of the QP, so
//! the QP can hold it without an import loop.

use super::read_state::OooRead;
use crate::ooo::{AckPolicy, BitmapDesign, OooRequester, OooResponder, SharedPool};
use crate::reliability::{OooParams, ReliabilityMode};

/// The out-of-order state of one QP.
pub(crate) struct OooQp {
    pub(crate) params: OooParams,
    pub(crate) design: BitmapDesign,
    pub(crate) policy: AckPolicy,
    /// Set at RTS (needs the send PSN).
    pub(crate) req: Option<OooRequester>,
    /// Set at RTR (needs the receive PSN).
    pub(crate) resp: Option<OooResponder>,
    /// The device's pool, shared with its other out-of-order QPs.
    pub(crate) pool: SharedPool,
    /// The R_Key of the current inbound WQE, from the FSpot its start address came from.
    pub(crate) rkey: u32,
    /// The send queue's head WR was handed to the requester.
    pub(crate) posted: bool,
    /// The ACK register's scheduler turn came: send it.
    pub(crate) ack_due: bool,
    /// The out-of-order READ, both sides (`ooo_read.rs`).
    pub(crate) read: OooRead,
}

impl core::fmt::Debug for OooQp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OooQp")
            .field("design", &self.design)
            .field("posted", &self.posted)
            .finish_non_exhaustive()
    }
}

impl OooQp {
    pub(super) fn new(mode: ReliabilityMode, pool: SharedPool) -> Option<OooQp> {
        let (params, design, policy) = match mode {
            ReliabilityMode::GoBackN => return None,
            ReliabilityMode::Ornic(p) => (
                p,
                BitmapDesign::Ornic,
                AckPolicy::Aggregated {
                    turn_ps: p.ack_turn_ps.max(1),
                },
            ),
            ReliabilityMode::MpRdma(p) => (p, BitmapDesign::MpRdma, AckPolicy::PerPacket),
        };
        Some(OooQp {
            params,
            design,
            policy,
            req: None,
            resp: None,
            pool,
            rkey: 0,
            posted: false,
            ack_due: false,
            read: OooRead::new(params.timer_ps()),
        })
    }

    /// PSNs the requester may have beyond the cumulative ACK: the receive bitmap's reach.
    pub(super) fn window(&self) -> u32 {
        match self.design {
            BitmapDesign::MpRdma => self.params.otd,
            _ => self.params.nodes * self.params.block_bits,
        }
    }
}

impl Drop for OooQp {
    /// Gives the blocks the QP's bitmaps hold back to the device's pool: the other QPs need
    /// them, whatever ended this QP (reset, error, destroy).
    fn drop(&mut self) {
        let mut pool = self.pool.borrow_mut();
        if let Some(r) = self.resp.as_mut() {
            r.release_blocks(&mut pool);
        }
        if let Some(w) = self.read.wqe.as_mut() {
            w.bitmap.release(&mut pool);
        }
    }
}
