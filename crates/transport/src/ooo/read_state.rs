//! The out-of-order READ state one QP owns: the READ WQE in flight at the requester and the
//! ranges the responder serves (how they move is `ooo_read.rs`'s). It imports nothing of the
//! QP.

use std::collections::VecDeque;

use crate::ooo::{ReceiveBitmap, Retries, RtoEstimator};
use crate::psn::PSN_MASK;
use crate::wr::Sge;

/// A READ WQE in flight at the requester.
pub(crate) struct ReadWqe {
    pub(crate) start_psn: u32,
    pub(crate) packets: u32,
    pub(crate) len: u64,
    pub(crate) bitmap: Box<dyn ReceiveBitmap>,
    pub(crate) newest: u32,
    pub(crate) nak_for_head: Option<u32>,
    /// Ranges `(first offset, packets)` to request.
    pub(crate) ask: VecDeque<(u32, u32)>,
    pub(crate) deadline_ps: Option<u64>,
    /// Timeouts the READ may still take without a new response before it fails with
    /// RETRY_EXC_ERR (the QP's `retry_cnt`, reloaded by each new response).
    pub(crate) retries: Retries,
    /// A request of this READ has left (the first is timed, none after it).
    pub(crate) asked: bool,
}

/// One range the responder serves: the next response's PSN, its VA, bytes left, the R_Key.
#[derive(Clone, Copy)]
pub(crate) struct ServeRange {
    pub(crate) psn: u32,
    pub(crate) va: u64,
    pub(crate) left: u64,
    pub(crate) rkey: u32,
}

/// The READ state of an out-of-order QP.
///
/// READs number their responses in a PSN space of their own (the WRITE responder's expected
/// PSN must not move for them): `next_psn` is the first response PSN of the next READ.
pub(crate) struct OooRead {
    pub(crate) wqe: Option<ReadWqe>,
    pub(crate) serve: VecDeque<ServeRange>,
    pub(crate) next_psn: u32,
    /// The READs' retransmission timer, kept across READs as the QP's round trip is.
    pub(crate) rto: RtoEstimator,
}

impl OooRead {
    /// No READ yet; the timer starts at (and never goes below) `timeout_ps`, and stays
    /// `margin_ps` above a measured round trip.
    pub(crate) fn new((timeout_ps, margin_ps): (u64, u64)) -> OooRead {
        OooRead {
            wqe: None,
            serve: VecDeque::new(),
            next_psn: 0,
            rto: RtoEstimator::new(timeout_ps, margin_ps),
        }
    }

    pub(crate) fn deadline(&self) -> Option<u64> {
        self.wqe.as_ref().and_then(|w| w.deadline_ps)
    }

    /// Where the response of PSN `psn` lands in the READ's local buffer `sgl`: the L_Key
    /// and address of byte `(PSN − start PSN) × pmtu` of the SGL. `None` without a READ in
    /// flight, for a PSN outside it, or beyond the SGL.
    pub(crate) fn response_target(&self, psn: u32, pmtu: u32, sgl: &[Sge]) -> Option<(u32, u64)> {
        let w = self.wqe.as_ref()?;
        let off = psn.wrapping_sub(w.start_psn) & PSN_MASK;
        if off >= w.packets {
            return None;
        }
        let mut at = u64::from(off) * u64::from(pmtu.max(1));
        for sge in sgl {
            let len = u64::from(sge.len);
            if at < len {
                return Some((sge.lkey, sge.addr.checked_add(at)?));
            }
            at -= len;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ooo::BitmapDesign;

    /// Where a response lands, asked before it arrives (the NIC translates that page): its
    /// offset `(PSN − start PSN) × PMTU` in the READ's SGL, through the SGE holding it.
    #[test]
    fn response_target_walks_the_sgl_by_psn() {
        let mut read = OooRead::new((1, 0));
        let sgl = [
            Sge {
                addr: 0x1_0000,
                len: 2 * 256,
                lkey: 7,
            },
            Sge {
                addr: 0x9_0000,
                len: 2 * 256,
                lkey: 8,
            },
        ];
        assert_eq!(read.response_target(50, 256, &sgl), None, "no READ");
        read.wqe = Some(ReadWqe {
            start_psn: PSN_MASK - 1,
            packets: 4,
            len: 4 * 256,
            bitmap: BitmapDesign::Ornic.build(16, 20, 64, 2),
            newest: 0,
            nak_for_head: None,
            ask: VecDeque::new(),
            deadline_ps: None,
            retries: Retries::limited(7),
            asked: false,
        });
        let at = |psn| read.response_target(psn, 256, &sgl);
        assert_eq!(at(PSN_MASK - 1), Some((7, 0x1_0000)));
        assert_eq!(at(PSN_MASK), Some((7, 0x1_0100)));
        assert_eq!(
            at(0),
            Some((8, 0x9_0000)),
            "across the PSN wrap, second SGE"
        );
        assert_eq!(at(1), Some((8, 0x9_0100)));
        assert_eq!(at(2), None, "beyond the READ");
        assert_eq!(at(PSN_MASK - 2), None, "before the READ");
    }
}
