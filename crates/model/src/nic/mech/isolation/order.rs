//! The TX engine's order of QPs, the [`TxOrder`] hook: the baseline's one FIFO of QPs, each
//! message run to completion, or slicing execution (optimized-v1/v2), where LS QPs go first
//! and BS tenants take turns one slice (or their WRR weight in slices) at a time, or every
//! QP in turn one packet at a time (the NIC of the ns-3 simulator released with the HPCC
//! paper, for comparisons with that simulator's results).

use std::collections::VecDeque;

use super::slicing::{self, After};
use super::tenant;
use super::tenant_ring::TenantRing;
use super::wrr_weight;
use crate::nic::ports::{AfterFrame, SentFrame, TxOrder};
use crate::nic::qp_table::QpHw;

/// QPs with something to send wait in one queue. The baseline (`PER_PACKET` false,
/// [`FifoOrder`]) runs each message to completion; the ns-3 simulator's order (`PER_PACKET`
/// true, [`QpRoundRobinOrder`]) sends the QP to the back of the queue after any packet, in
/// the middle of a message or not, so no QP waits for another to finish a message.
#[derive(Debug, Default)]
pub struct QueueOrder<const PER_PACKET: bool> {
    queue: VecDeque<u32>,
}

/// The baseline: one FIFO of QPs, each message run to completion.
pub type FifoOrder = QueueOrder<false>;

/// Every QP in turn, one packet each (`nic.iso_transport = "qp_round_robin"`).
pub type QpRoundRobinOrder = QueueOrder<true>;

impl<const PER_PACKET: bool> TxOrder for QueueOrder<PER_PACKET> {
    #[inline]
    fn enlist(&mut self, qpn: u32, _iso_tag: u32) {
        self.queue.push_back(qpn);
    }

    #[inline]
    fn pop(&mut self) -> Option<u32> {
        self.queue.pop_front()
    }

    #[inline]
    fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    #[inline]
    fn after_frame(
        &mut self,
        qpn: u32,
        _qp: &QpHw,
        frame: SentFrame,
        wants: impl FnOnce() -> bool,
    ) -> AfterFrame {
        let frame = SentFrame {
            mid: frame.mid && !PER_PACKET,
            ..frame
        };
        run_to_completion(&mut self.queue, qpn, frame, wants)
    }

    #[inline]
    fn forget(&mut self, _qpn: u32, _iso_tag: u32) {}

    #[inline]
    fn yields_mid_message(&self, _iso_tag: u32) -> bool {
        PER_PACKET
    }

    #[inline]
    fn orders_resends(&self) -> bool {
        false
    }
}

/// Run to completion: stay on the QP until its message's last packet, then put it back at
/// the tail of `queue` if it has more to send.
fn run_to_completion(
    queue: &mut VecDeque<u32>,
    qpn: u32,
    frame: SentFrame,
    wants: impl FnOnce() -> bool,
) -> AfterFrame {
    if frame.mid {
        return AfterFrame::Stay;
    }
    if wants() {
        queue.push_back(qpn);
        AfterFrame::Queued
    } else {
        AfterFrame::Leave
    }
}

/// Slicing execution: LS QPs wait in a queue the engine serves first and run their (one
/// slice long) messages to completion; BS QPs wait by tenant in the [`TenantRing`] and give
/// the engine up after `slice_packets` packets ([`slicing::after_packet`]).
#[derive(Debug, Default)]
pub struct SlicingOrder {
    /// LS QPs with something to send.
    ls: VecDeque<u32>,
    /// BS tenants and their QPs, and the slicing station.
    ring: TenantRing,
    /// Packets per slice.
    slice_packets: u32,
    /// Adaptive WRR (v2): a tenant's turn is [`wrr_weight`] slices; else one.
    adaptive_wrr: bool,
    /// Per QPN: packets sent in its current slice.
    slice_pkts: Vec<u32>,
    /// BS slices that ended with the WQE unfinished (written back to the slicing station).
    pub write_backs: u64,
    /// Most p_wqes the slicing station held at once.
    pub station_peak: u32,
}

impl SlicingOrder {
    /// Slices of `slice_packets` packets, tenants' turns weighted when `adaptive_wrr`.
    pub fn new(slice_packets: u32, adaptive_wrr: bool) -> Self {
        SlicingOrder {
            slice_packets,
            adaptive_wrr,
            ..SlicingOrder::default()
        }
    }

    /// After a request packet of BS `qpn` of `tenant` with path MTU `pmtu`: whether the
    /// slice goes on, else where the QP goes (`wants`: it has more to send).
    fn after_request(
        &mut self,
        qpn: u32,
        tenant: u16,
        pmtu: u32,
        frame: SentFrame,
        wants: bool,
    ) -> Option<AfterFrame> {
        let weight = if self.adaptive_wrr {
            wrr_weight(pmtu)
        } else {
            1
        };
        let i = qpn as usize;
        if self.slice_pkts.len() <= i {
            crate::per_qp::grow_for(&mut self.slice_pkts, i, || 0);
        }
        let after = slicing::after_packet(
            true,
            self.slice_packets,
            frame.mid,
            weight,
            &mut self.slice_pkts[i],
            self.ring.credit_mut(tenant),
        );
        let keep_turn = match after {
            After::Stay => return Some(AfterFrame::Stay),
            After::Requeue { front } => front,
        };
        // A slice that ends inside its WQE writes it back to the slicing station (or
        // leaves it there); the WQE's last packet frees the entry. A resent packet leaves
        // the station as it is ([`TenantRing::after_resend`]).
        if frame.resent {
            self.ring
                .after_resend(qpn, tenant, frame.mid, keep_turn, wants);
        } else {
            self.ring
                .after_slice(qpn, tenant, frame.mid, keep_turn, wants);
            if frame.mid {
                self.write_backs += 1;
                self.station_peak = self.station_peak.max(self.ring.station_len());
            }
        }
        None
    }
}

impl TxOrder for SlicingOrder {
    fn enlist(&mut self, qpn: u32, iso_tag: u32) {
        if tenant::is_ls(iso_tag) {
            self.ls.push_back(qpn);
        } else {
            self.ring.push(qpn, tenant::tenant(iso_tag));
        }
    }

    fn pop(&mut self) -> Option<u32> {
        self.ls.pop_front().or_else(|| self.ring.pop())
    }

    fn pop_response(&mut self, responds: impl Fn(u32) -> bool) -> Option<u32> {
        self.ring.pop_response(responds)
    }

    fn is_empty(&self) -> bool {
        self.ls.is_empty() && self.ring.is_empty()
    }

    fn after_frame(
        &mut self,
        qpn: u32,
        qp: &QpHw,
        frame: SentFrame,
        wants: impl FnOnce() -> bool,
    ) -> AfterFrame {
        if tenant::is_ls(qp.iso_tag) {
            // LS messages run to completion too: they are one slice long.
            return run_to_completion(&mut self.ls, qpn, frame, wants);
        }
        let t = tenant::tenant(qp.iso_tag);
        let wants = wants();
        if !frame.request {
            if frame.mid {
                // READ responses run to completion, as before slicing.
                return AfterFrame::Stay;
            }
            self.ring.after_other(qpn, t, wants);
        } else if let Some(after) = self.after_request(qpn, t, qp.pmtu, frame, wants) {
            return after;
        }
        if wants {
            AfterFrame::Queued
        } else {
            AfterFrame::Leave
        }
    }

    fn forget(&mut self, qpn: u32, iso_tag: u32) {
        self.ring.forget(qpn, tenant::tenant(iso_tag));
    }

    fn yields_mid_message(&self, iso_tag: u32) -> bool {
        !tenant::is_ls(iso_tag)
    }

    fn orders_resends(&self) -> bool {
        true
    }
}
