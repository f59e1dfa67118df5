//! TX isolation's hooks as closed sets of kinds, chosen once when the NIC is built from the
//! resolved `nic.tx_isolation` / `nic.iso_*` switches ([`IsoParts`]): the baseline kinds
//! ([`FifoOrder`], [`SharedFifo`]) do nothing but what the baseline TX architecture does.
//!
//! Why enums and not `Box<dyn ...>`: the TX engine asks its order two or three times per
//! frame and the scheduler asks its admission on every visit; a match over two kinds is a
//! direct, inlinable call (as with [`crate::nic::qpc_manager::any::AnyQpcManager`]).

use super::admission::{SeparateFifos, SharedFifo};
use super::order::{FifoOrder, QpRoundRobinOrder, SlicingOrder};
use super::IsoParts;
use crate::nic::ports::{AfterFrame, SentFrame, TxOrder, WqeAdmission};
use crate::nic::qp_table::QpHw;
use crate::stats::Registry;

/// The TX engine's order (`nic.iso_transport`): run to completion, slicing execution, or
/// every QP in turn a packet at a time.
#[derive(Debug)]
pub enum AnyTxOrder {
    /// The baseline: one FIFO of QPs, run to completion.
    Fifo(FifoOrder),
    /// Slicing execution (v1, v2).
    Slicing(SlicingOrder),
    /// Every QP in turn, one packet each (`qp_round_robin`).
    QpRoundRobin(QpRoundRobinOrder),
}

impl Default for AnyTxOrder {
    fn default() -> Self {
        AnyTxOrder::Fifo(FifoOrder::default())
    }
}

impl AnyTxOrder {
    /// The order `parts` select.
    pub fn for_parts(parts: &IsoParts) -> Self {
        if parts.slicing {
            AnyTxOrder::Slicing(SlicingOrder::new(parts.slice_packets, parts.adaptive_wrr))
        } else if parts.qp_round_robin {
            AnyTxOrder::QpRoundRobin(QpRoundRobinOrder::default())
        } else {
            AnyTxOrder::default()
        }
    }

    /// Records the slicing station's counters under `prefix` (zero without slicing).
    pub fn report(&self, prefix: &str, reg: &mut Registry) {
        let (write_backs, station_peak) = match self {
            AnyTxOrder::Fifo(_) | AnyTxOrder::QpRoundRobin(_) => (0, 0),
            AnyTxOrder::Slicing(s) => (s.write_backs, s.station_peak),
        };
        reg.set(&format!("{prefix}.write_backs"), write_backs);
        reg.set(&format!("{prefix}.station_peak"), u64::from(station_peak));
    }
}

/// Calls the method in `$call` on whichever kind `$self` holds (as `$m`).
macro_rules! order {
    ($self:ident, $m:ident => $call:expr) => {
        match $self {
            AnyTxOrder::Fifo($m) => $call,
            AnyTxOrder::Slicing($m) => $call,
            AnyTxOrder::QpRoundRobin($m) => $call,
        }
    };
}

impl TxOrder for AnyTxOrder {
    #[inline]
    fn enlist(&mut self, qpn: u32, iso_tag: u32) {
        order!(self, o => o.enlist(qpn, iso_tag))
    }
    #[inline]
    fn pop(&mut self) -> Option<u32> {
        order!(self, o => o.pop())
    }
    #[inline]
    fn pop_response(&mut self, responds: impl Fn(u32) -> bool) -> Option<u32> {
        order!(self, o => o.pop_response(responds))
    }
    #[inline]
    fn is_empty(&self) -> bool {
        order!(self, o => o.is_empty())
    }
    #[inline]
    fn after_frame(
        &mut self,
        qpn: u32,
        qp: &QpHw,
        frame: SentFrame,
        wants: impl FnOnce() -> bool,
    ) -> AfterFrame {
        order!(self, o => o.after_frame(qpn, qp, frame, wants))
    }
    #[inline]
    fn forget(&mut self, qpn: u32, iso_tag: u32) {
        order!(self, o => o.forget(qpn, iso_tag))
    }
    #[inline]
    fn yields_mid_message(&self, iso_tag: u32) -> bool {
        order!(self, o => o.yields_mid_message(iso_tag))
    }
    #[inline]
    fn orders_resends(&self) -> bool {
        order!(self, o => o.orders_resends())
    }
}

/// The scheduler's WQE admission (`nic.iso_caching`, `nic.iso_backpressure`): one shared WQE
/// FIFO, or separate FIFOs with their backpressure.
#[derive(Debug)]
pub enum AnyWqeAdmission {
    /// The baseline: one shared FIFO.
    Shared(SharedFifo),
    /// Separate WQE caching (v1, v2).
    Separate(SeparateFifos),
}

impl Default for AnyWqeAdmission {
    fn default() -> Self {
        AnyWqeAdmission::Shared(SharedFifo::default())
    }
}

impl AnyWqeAdmission {
    /// The admission `parts` select.
    pub fn for_parts(parts: &IsoParts) -> Self {
        if parts.separate_caching {
            AnyWqeAdmission::Separate(SeparateFifos::new(
                parts.bs_fifo_depth,
                parts.isolated_backpressure,
            ))
        } else {
            AnyWqeAdmission::Shared(SharedFifo::new(parts.shared_fifo_depth))
        }
    }

    /// BS tenants that have used a FIFO of their own.
    pub fn bs_tenants(&self) -> usize {
        match self {
            AnyWqeAdmission::Shared(_) => 0,
            AnyWqeAdmission::Separate(s) => s.fifos.bs_tenants(),
        }
    }

    /// Records the FIFOs' counters under `prefix` (zero with the shared FIFO).
    pub fn report(&self, prefix: &str, reg: &mut Registry) {
        let s = match self {
            AnyWqeAdmission::Shared(shared) => {
                reg.set(&format!("{prefix}.coupled_stalls"), shared.stalls);
                for key in ["parks", "ls_fifo_peak"] {
                    reg.set(&format!("{prefix}.{key}"), 0);
                }
                if shared.bounded() {
                    let peak = u64::from(shared.peak);
                    reg.set(&format!("{prefix}.shared_fifo_peak"), peak);
                }
                return;
            }
            AnyWqeAdmission::Separate(s) => s,
        };
        reg.set(&format!("{prefix}.coupled_stalls"), s.coupled_stalls);
        reg.set(&format!("{prefix}.parks"), s.parks);
        reg.set(
            &format!("{prefix}.ls_fifo_peak"),
            u64::from(s.fifos.ls_peak),
        );
        for (t, &p) in s.fifos.peak.iter().enumerate() {
            if p > 0 {
                reg.set(&format!("{prefix}.bs_fifo{t}_peak"), u64::from(p));
            }
        }
    }
}

/// Calls the method in `$call` on whichever kind `$self` holds (as `$m`).
macro_rules! admission {
    ($self:ident, $m:ident => $call:expr) => {
        match $self {
            AnyWqeAdmission::Shared($m) => $call,
            AnyWqeAdmission::Separate($m) => $call,
        }
    };
}

impl WqeAdmission for AnyWqeAdmission {
    #[inline]
    fn pauses_all(&mut self) -> bool {
        admission!(self, a => a.pauses_all())
    }
    #[inline]
    fn admit(&mut self, qpn: u32, iso_tag: u32, k: u32) -> u32 {
        admission!(self, a => a.admit(qpn, iso_tag, k))
    }
    #[inline]
    fn queue_of(&self, iso_tag: u32) -> u32 {
        admission!(self, a => a.queue_of(iso_tag))
    }
    #[inline]
    fn own_lane(&self, iso_tag: u32) -> bool {
        admission!(self, a => a.own_lane(iso_tag))
    }
    #[inline]
    fn left(&mut self, iso_tag: u32, n: u32) -> Vec<u32> {
        admission!(self, a => a.left(iso_tag, n))
    }
    #[inline]
    fn hold(&mut self, qpn: u32, iso_tag: u32) -> bool {
        admission!(self, a => a.hold(qpn, iso_tag))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::mech::isolation::tenant;

    fn frame(mid: bool) -> SentFrame {
        SentFrame {
            request: true,
            mid,
            resent: false,
        }
    }

    /// The baseline kinds are what `Nic::new` picks without a mechanism, and they change
    /// nothing: every WQE admitted, one FIFO, run to completion.
    #[test]
    fn the_baseline_hooks_are_a_fifo_and_a_no_op() {
        let parts = IsoParts::default();
        let mut adm = AnyWqeAdmission::for_parts(&parts);
        assert!(matches!(adm, AnyWqeAdmission::Shared(_)));
        let bs = tenant::tag(false, 3, 7);
        assert!(!adm.pauses_all());
        assert_eq!(adm.admit(7, bs, 5), 5);
        assert_eq!(adm.queue_of(bs), 0);
        assert!(!adm.own_lane(tenant::tag(true, 0, 1)));
        assert!(adm.left(bs, 3).is_empty());

        let mut order = AnyTxOrder::for_parts(&parts);
        assert!(matches!(order, AnyTxOrder::Fifo(_)));
        let qp = QpHw::default();
        order.enlist(1, bs);
        order.enlist(2, tenant::tag(true, 0, 2));
        assert_eq!(order.pop(), Some(1));
        let stay = order.after_frame(1, &qp, frame(true), || unreachable!("not asked"));
        assert_eq!(stay, AfterFrame::Stay);
        assert_eq!(
            order.after_frame(1, &qp, frame(false), || true),
            AfterFrame::Queued
        );
        assert_eq!(
            (order.pop(), order.pop(), order.pop()),
            (Some(2), Some(1), None)
        );
        assert!(!order.orders_resends() && !order.yields_mid_message(bs));
    }

    /// v2's switches pick the paper's kinds: LS QPs are served before BS ones queued
    /// earlier, and a BS QP yields after its slice.
    #[test]
    fn v2_picks_separate_fifos_and_slicing() {
        let parts = IsoParts {
            separate_caching: true,
            slicing: true,
            isolated_backpressure: true,
            adaptive_wrr: true,
            ..IsoParts::default()
        };
        assert!(matches!(
            AnyWqeAdmission::for_parts(&parts),
            AnyWqeAdmission::Separate(_)
        ));
        let mut order = AnyTxOrder::for_parts(&parts);
        let (bs, ls) = (tenant::tag(false, 1, 1), tenant::tag(true, 2, 2));
        order.enlist(1, bs);
        order.enlist(2, ls);
        assert_eq!(order.pop(), Some(2));
        assert_eq!(order.pop(), Some(1));
        let qp = QpHw {
            iso_tag: bs,
            pmtu: 4096,
            ..QpHw::default()
        };
        assert_eq!(
            order.after_frame(1, &qp, frame(true), || true),
            AfterFrame::Queued
        );
        assert!(order.orders_resends() && order.yields_mid_message(bs));
    }
    /// `qp_round_robin` picks the ns-3 simulator's order: after any packet, in the middle of
    /// its message or not, the QP goes behind every other QP waiting, whatever their tenant
    /// or class; nothing stays.
    #[test]
    fn qp_round_robin_serves_every_qp_a_packet_at_a_time() {
        let parts = IsoParts {
            qp_round_robin: true,
            ..IsoParts::default()
        };
        let mut order = AnyTxOrder::for_parts(&parts);
        assert!(matches!(order, AnyTxOrder::QpRoundRobin(_)));
        let (bs, ls) = (tenant::tag(false, 1, 1), tenant::tag(true, 2, 2));
        order.enlist(1, bs);
        order.enlist(2, ls);
        order.enlist(3, bs);
        let qp = QpHw::default();
        let mut served = Vec::new();
        for _ in 0..6 {
            let q = order.pop().expect("a QP waits");
            served.push(q);
            assert_eq!(
                order.after_frame(q, &qp, frame(true), || true),
                AfterFrame::Queued
            );
        }
        assert_eq!(served, [1, 2, 3, 1, 2, 3]);
        let q = order.pop().unwrap();
        assert_eq!(
            order.after_frame(q, &qp, frame(false), || false),
            AfterFrame::Leave
        );
        assert_eq!(
            (order.pop(), order.pop(), order.pop()),
            (Some(2), Some(3), None)
        );
        assert!(!order.orders_resends() && order.yields_mid_message(ls));
    }
}
