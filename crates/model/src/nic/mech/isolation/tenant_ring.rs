//! The BS side of the TX engine under slicing execution: BS *tenants* take turns at the
//! transport, not QPs, and each tenant has one slicing-station entry.
//!
//! The paper's arbiter chooses between BS tenants' WQE FIFOs, and its slicing station holds
//! one unfinished WQE (p_wqe) per BS tenant. So:
//! - a turn belongs to a tenant: round robin gives it one slice, adaptive WRR its weight in
//!   slices ([`super::wrr_weight`]), whichever of its QPs sends them — a tenant with eight
//!   QPs gets no more of the wire than a tenant with one;
//! - within a tenant, QPs are served in the order they became ready to send;
//! - while a tenant's p_wqe is in the station, that WQE is the tenant's next slice: its QP
//!   is resumed before any other QP of the tenant starts a new WQE, and if it cannot send
//!   (its payload or window is not there yet) the tenant waits and loses its turn. The
//!   station therefore never holds more than one p_wqe per tenant.

use std::collections::VecDeque;

/// BS tenants waiting for the transport, and their slicing-station entries.
#[derive(Debug, Default)]
pub struct TenantRing {
    /// Tenants with a queued QP, in turn order; the front one is being served.
    ring: VecDeque<u16>,
    /// Per tenant: its QPs with something to send, in order.
    queued: Vec<VecDeque<u32>>,
    /// Per tenant: slices left in its current turn (0: the turn has not started).
    credit: Vec<u32>,
    /// Per tenant: the QP whose unfinished WQE is in the slicing station.
    station: Vec<Option<u32>>,
    /// Entries in the station now.
    station_len: u32,
}

impl TenantRing {
    fn grow(&mut self, tenant: u16) -> usize {
        let t = usize::from(tenant);
        if self.queued.len() <= t {
            self.queued.resize_with(t + 1, VecDeque::new);
            self.credit.resize(t + 1, 0);
            self.station.resize(t + 1, None);
        }
        t
    }

    /// Whether no QP is queued.
    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// p_wqes in the slicing station now.
    pub fn station_len(&self) -> u32 {
        self.station_len
    }

    /// Queues `qpn` of `tenant`: behind the tenant's other QPs, or first when its WQE is
    /// the tenant's p_wqe (it resumes before any other WQE of the tenant starts).
    pub fn push(&mut self, qpn: u32, tenant: u16) {
        let t = self.grow(tenant);
        if self.station[t] == Some(qpn) {
            self.queued[t].push_front(qpn);
        } else {
            self.queued[t].push_back(qpn);
        }
        if !self.ring.contains(&tenant) {
            self.ring.push_back(tenant);
        }
    }

    /// The QP to serve next: the head QP of the first tenant that may send. A tenant whose
    /// p_wqe's QP is not queued waits for it (it loses its turn); a tenant with nothing
    /// queued leaves the ring. The tenant stays at the front until
    /// [`TenantRing::after_slice`] ends its turn.
    pub fn pop(&mut self) -> Option<u32> {
        for _ in 0..self.ring.len() {
            let tenant = *self.ring.front()?;
            let t = usize::from(tenant);
            match (self.queued[t].front(), self.station[t]) {
                (None, _) => {
                    self.ring.pop_front();
                    self.credit[t] = 0;
                }
                (Some(&head), Some(p)) if head != p => {
                    self.ring.rotate_left(1);
                    self.credit[t] = 0;
                }
                (Some(_), _) => return self.queued[t].pop_front(),
            }
        }
        None
    }

    /// When [`TenantRing::pop`] has none: the first queued QP, tenants in turn order, whose
    /// next frame is a response (`responds`). The p_wqe rule holds back a tenant's new WQEs,
    /// not the ACKs and READ responses its QPs owe their peers: a QP that only answers,
    /// held behind a p_wqe whose own QP waits for its window to open, would hold that
    /// window shut when the peer's requester waits the same way (both directions of a
    /// bidirectional test over a long link, each side's p_wqe waiting for the other's
    /// ACKs). A response does not use the tenant's turn ([`TenantRing::after_other`]).
    pub fn pop_response(&mut self, responds: impl Fn(u32) -> bool) -> Option<u32> {
        for &tenant in &self.ring {
            let queued = &mut self.queued[usize::from(tenant)];
            if let Some(i) = queued.iter().position(|&q| responds(q)) {
                return queued.remove(i);
            }
        }
        None
    }

    /// The slice-state of `tenant`'s turn, for [`super::slicing::after_packet`].
    pub fn credit_mut(&mut self, tenant: u16) -> &mut u32 {
        let t = self.grow(tenant);
        &mut self.credit[t]
    }

    /// A slice of `qpn` (tenant `tenant`) ended: `mid`, inside its WQE (the WQE is written
    /// back to the station, or stays there) or with its WQE's last packet (the entry is
    /// freed); `keep_turn`, the tenant has slices left in its turn; `wants`, the QP has
    /// more to send.
    pub fn after_slice(&mut self, qpn: u32, tenant: u16, mid: bool, keep_turn: bool, wants: bool) {
        let t = self.grow(tenant);
        match (self.station[t], mid) {
            (None, true) => {
                self.station[t] = Some(qpn);
                self.station_len += 1;
            }
            (Some(p), false) if p == qpn => {
                self.station[t] = None;
                self.station_len -= 1;
            }
            _ => {}
        }
        self.requeue_after(qpn, tenant, mid, keep_turn, wants);
    }

    /// A slice of `qpn` that ended with a resent packet (a retransmission of a WQE whose
    /// packets all went out before, or of one whose p_wqe is already in the station): the
    /// station is left as it is. A resend is neither a write-back nor the end of a WQE:
    /// out-of-order reliability resends single packets from the middle of a WQE, and its
    /// ACK can complete the WQE with no further packet sent, so an entry written back by a
    /// resend would never be freed and its tenant's other QPs would wait for it forever.
    /// The resend still uses the tenant's turn.
    pub fn after_resend(&mut self, qpn: u32, tenant: u16, mid: bool, keep_turn: bool, wants: bool) {
        self.grow(tenant);
        self.requeue_after(qpn, tenant, mid, keep_turn, wants);
    }

    /// After a slice: `qpn` goes back to its tenant's QPs if it `wants` to send (first when
    /// its WQE is unfinished, `mid`, or is the tenant's p_wqe: a resent last packet of an
    /// older WQE leaves the p_wqe in the station, and the tenant waits for its QP at the
    /// head), and the tenant's turn ends unless `keep_turn`.
    fn requeue_after(&mut self, qpn: u32, tenant: u16, mid: bool, keep_turn: bool, wants: bool) {
        let t = usize::from(tenant);
        if wants {
            if mid || self.station[t] == Some(qpn) {
                self.queued[t].push_front(qpn);
            } else {
                self.queued[t].push_back(qpn);
            }
        }
        self.end_turn_unless(tenant, keep_turn);
    }

    /// A frame of `qpn` that is no request (an ACK or a READ response) left: the QP goes
    /// behind its tenant's others; the tenant's turn is not charged.
    pub fn after_other(&mut self, qpn: u32, tenant: u16, wants: bool) {
        let t = self.grow(tenant);
        if wants {
            self.queued[t].push_back(qpn);
        }
        self.end_turn_unless(tenant, true);
    }

    /// The tenant at the front ends its turn (goes to the back) unless `keep_turn`; a
    /// tenant with nothing queued leaves the ring.
    fn end_turn_unless(&mut self, tenant: u16, keep_turn: bool) {
        let t = usize::from(tenant);
        let Some(i) = self.ring.iter().position(|&x| x == tenant) else {
            if !self.queued[t].is_empty() {
                self.ring.push_back(tenant);
            }
            return;
        };
        if self.queued[t].is_empty() {
            self.ring.remove(i);
            self.credit[t] = 0;
        } else if !keep_turn {
            self.ring.remove(i);
            self.ring.push_back(tenant);
            self.credit[t] = 0;
        }
    }

    /// `qpn` went to error: its p_wqe will not be resumed (the transport flushes it), so
    /// the tenant's entry is freed.
    pub fn forget(&mut self, qpn: u32, tenant: u16) {
        let t = self.grow(tenant);
        self.queued[t].retain(|&q| q != qpn);
        if self.station[t] == Some(qpn) {
            self.station[t] = None;
            self.station_len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::slicing::{after_packet, After};
    use super::*;
    use proptest::prelude::*;

    /// Serves one slice of one packet: returns the QP served and updates the ring as the
    /// TX engine does. `left[q]` counts packets left in q's current WQE (`wqe` packets each).
    fn serve(
        r: &mut TenantRing,
        tenant_of: &[u16],
        weight: &[u32],
        left: &mut [u32],
        wqe: u32,
    ) -> Option<u32> {
        let q = r.pop()?;
        let t = tenant_of[q as usize];
        let i = q as usize;
        left[i] -= 1;
        let mid = left[i] > 0;
        if !mid {
            left[i] = wqe;
        }
        let mut slice = 0;
        let w = weight[usize::from(t)];
        let After::Requeue { front } = after_packet(true, 1, mid, w, &mut slice, r.credit_mut(t))
        else {
            unreachable!("one-packet slices always end")
        };
        r.after_slice(q, t, mid, front, true);
        Some(q)
    }

    #[test]
    fn a_tenant_gets_its_turn_whatever_its_qp_count() {
        // Tenant 1 has QPs 0..8, tenant 2 has QP 8; one slice per turn.
        let tenant_of: Vec<u16> = (0..9).map(|q| if q < 8 { 1 } else { 2 }).collect();
        let mut r = TenantRing::default();
        for q in 0..9 {
            r.push(q, tenant_of[q as usize]);
        }
        let mut left = vec![4u32; 9];
        let mut per_tenant = [0u32; 3];
        for _ in 0..800 {
            let q = serve(&mut r, &tenant_of, &[1, 1, 1], &mut left, 4).unwrap();
            per_tenant[usize::from(tenant_of[q as usize])] += 1;
        }
        assert_eq!(per_tenant[1], per_tenant[2]);
    }

    #[test]
    fn the_p_wqe_finishes_before_its_tenant_starts_another() {
        let tenant_of = [1u16, 1, 2];
        let mut r = TenantRing::default();
        for q in 0..3 {
            r.push(q, tenant_of[q as usize]);
        }
        let mut left = vec![3u32; 3];
        let mut order = Vec::new();
        for _ in 0..12 {
            order.push(serve(&mut r, &tenant_of, &[1, 1, 1], &mut left, 3).unwrap());
            assert!(r.station_len() <= 2);
        }
        // Tenant 1 sends QP 0's three packets, then QP 1's, alternating with tenant 2.
        assert_eq!(order, [0, 2, 0, 2, 0, 2, 1, 2, 1, 2, 1, 2]);
    }

    #[test]
    fn a_tenant_waits_for_its_absent_p_wqe() {
        let mut r = TenantRing::default();
        r.push(0, 1);
        r.push(1, 1);
        assert_eq!(r.pop(), Some(0));
        // QP 0 sent a slice mid-WQE and then could not go on (its payload is not in).
        r.after_slice(0, 1, true, false, false);
        assert_eq!(r.station_len(), 1, "QP 0's WQE entered the station");
        assert_eq!(r.pop(), None, "QP 1 may not start while QP 0's p_wqe waits");
        r.push(0, 1);
        assert_eq!(r.pop(), Some(0));
        r.after_slice(0, 1, false, false, false);
        assert_eq!(r.station_len(), 0, "QP 0's last packet freed the entry");
        assert_eq!(r.pop(), Some(1));
    }

    /// While a tenant waits for its p_wqe's QP, another of its QPs with a response to send
    /// (an ACK its peer's requester waits for) is served; one with a new WQE still waits.
    #[test]
    fn a_waiting_tenant_still_answers_its_peers() {
        let mut r = TenantRing::default();
        r.push(0, 1);
        assert_eq!(r.pop(), Some(0));
        r.after_slice(0, 1, true, false, false);
        r.push(1, 1);
        r.push(2, 1);
        assert_eq!(
            r.pop(),
            None,
            "QP 1 may not start a WQE while QP 0's p_wqe waits"
        );
        assert_eq!(r.pop_response(|q| q == 2), Some(2), "QP 2 only answers");
        assert_eq!(r.pop_response(|q| q == 2), None);
        assert_eq!(r.pop_response(|_| false), None);
        r.push(0, 1);
        assert_eq!(r.pop(), Some(0), "the p_wqe resumes first");
    }

    /// A resend neither writes a WQE back nor frees the entry: the entry a resend would
    /// write back is never freed when the ACK completes the WQE with no new packet sent,
    /// and a resent last packet of an older WQE must not free the entry of the p_wqe (its
    /// QP stays at the head of its tenant's QPs, or the tenant waits for it forever).
    #[test]
    fn resends_leave_the_station_as_it_is() {
        let mut r = TenantRing::default();
        r.push(0, 1);
        r.push(1, 1);
        assert_eq!(r.pop(), Some(0));
        r.after_resend(0, 1, true, false, false);
        assert_eq!(
            r.station_len(),
            0,
            "a resent middle packet writes nothing back"
        );
        assert_eq!(r.pop(), Some(1), "QP 1 may start: QP 0 has no p_wqe");
        r.after_slice(1, 1, true, false, true);
        assert_eq!(r.station_len(), 1, "QP 1's new packet wrote its WQE back");
        r.push(0, 1);
        assert_eq!(r.pop(), Some(1));
        // QP 1 resends the last packet of an older WQE (go-back-N): the entry stays and
        // QP 1 goes back ahead of QP 0, so the tenant is not left waiting behind it.
        r.after_resend(1, 1, false, false, true);
        assert_eq!(r.station_len(), 1);
        assert_eq!(r.pop(), Some(1));
        r.after_slice(1, 1, false, false, false);
        assert_eq!(
            r.station_len(),
            0,
            "the p_wqe's own last packet frees the entry"
        );
        assert_eq!(r.pop(), Some(0));
    }

    #[test]
    fn an_error_frees_the_entry() {
        let mut r = TenantRing::default();
        r.push(0, 1);
        r.push(1, 1);
        assert_eq!(r.pop(), Some(0));
        r.after_slice(0, 1, true, false, false);
        assert_eq!(r.station_len(), 1);
        r.forget(0, 1);
        assert_eq!(r.station_len(), 0, "the error freed the entry");
        assert_eq!(r.pop(), Some(1));
    }

    proptest! {
        /// Random tenants, weights and WQE lengths: WRR gives every busy tenant its weight
        /// in slices per round, the station never holds two entries of one tenant, and no QP
        /// is lost or served twice at once.
        #[test]
        fn turns_follow_the_weights(
            tenants in proptest::collection::vec(1u16..5, 1..12),
            weights in proptest::collection::vec(1u32..5, 5),
            wqe in 1u32..6,
        ) {
            let mut r = TenantRing::default();
            for (q, &t) in tenants.iter().enumerate() {
                r.push(q as u32, t);
            }
            let mut left = vec![wqe; tenants.len()];
            let mut per_tenant = [0u64; 5];
            let rounds = 2000;
            for _ in 0..rounds {
                let q = serve(&mut r, &tenants, &weights, &mut left, wqe).unwrap();
                per_tenant[usize::from(tenants[q as usize])] += 1;
                let busy = (1..5u16).filter(|t| tenants.contains(t)).count() as u32;
                prop_assert!(r.station_len() <= busy);
            }
            let active: Vec<u16> = (1..5u16).filter(|t| tenants.contains(t)).collect();
            let share = |t: u16| per_tenant[usize::from(t)] as f64 / f64::from(weights[usize::from(t)]);
            let lo = active.iter().map(|&t| share(t)).fold(f64::MAX, f64::min);
            let hi = active.iter().map(|&t| share(t)).fold(0.0, f64::max);
            // Within one turn of each other.
            prop_assert!(hi - lo <= 1.0 + 1e-9, "shares {per_tenant:?} weights {weights:?}");
        }
    }
}
