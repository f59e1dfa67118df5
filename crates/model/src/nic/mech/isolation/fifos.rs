//! Separate WQE caching (optimized-v1) and its backpressure (coupled, or v2's isolated).
//!
//! The model keeps the WQE bytes where it always did (the WQE buffer between fetch and the
//! transport, then the transport's send queue); what the separate FIFOs add is their
//! accounting and their order. A WQE holds a place in its tenant's FIFO from the scheduler
//! visit that reads it until its first packet leaves the transport (then it is the slicing
//! station's p_wqe, or done). A BS tenant's FIFO holds at most `nic.iso_bs_fifo_depth`
//! WQEs; the LS tenants share one FIFO bounded only by the shared WQE buffer (LS WQEs are
//! sparse and small, the paper's reason to share it).
//!
//! Backpressure when a BS FIFO is full: coupled (baseline, v1) pauses the scheduler for
//! every QP until that FIFO has room; isolated (v2) skips the tenant's QPs ("parks" them)
//! and lets the others read, re-activating the parked QPs when the FIFO has room again.

/// Occupancy of the LS FIFO and of every BS tenant's FIFO.
#[derive(Debug, Default)]
pub struct TenantFifos {
    depth: u32,
    /// WQEs held per BS tenant.
    held: Vec<u32>,
    /// Most WQEs each BS tenant's FIFO ever held.
    pub peak: Vec<u32>,
    /// BS FIFOs that are full now.
    full: u32,
    /// WQEs in the shared LS FIFO.
    pub ls_held: u32,
    /// Most WQEs the LS FIFO ever held.
    pub ls_peak: u32,
    /// QPs skipped by isolated backpressure, per BS tenant.
    parked: Vec<Vec<u32>>,
}

impl TenantFifos {
    /// FIFOs of `depth` WQEs per BS tenant.
    pub fn new(depth: u32) -> Self {
        TenantFifos {
            depth: depth.max(1),
            ..TenantFifos::default()
        }
    }

    fn grow(&mut self, tenant: u16) -> usize {
        let t = usize::from(tenant);
        if self.held.len() <= t {
            self.held.resize(t + 1, 0);
            self.peak.resize(t + 1, 0);
            self.parked.resize_with(t + 1, Vec::new);
        }
        t
    }

    /// Room left in BS `tenant`'s FIFO, WQEs.
    pub fn room(&self, tenant: u16) -> u32 {
        let held = self.held.get(usize::from(tenant)).copied().unwrap_or(0);
        self.depth.saturating_sub(held)
    }

    /// Whether any BS FIFO is full (coupled backpressure pauses every read then).
    pub fn any_full(&self) -> bool {
        self.full > 0
    }

    /// A visit reads `k` WQEs of an LS QP (`ls`) or of BS `tenant`.
    pub fn take(&mut self, ls: bool, tenant: u16, k: u32) {
        if ls {
            self.ls_held += k;
            self.ls_peak = self.ls_peak.max(self.ls_held);
            return;
        }
        let t = self.grow(tenant);
        let was_full = self.held[t] >= self.depth;
        self.held[t] += k;
        debug_assert!(self.held[t] <= self.depth, "BS FIFO overfilled");
        self.peak[t] = self.peak[t].max(self.held[t]);
        if !was_full && self.held[t] >= self.depth {
            self.full += 1;
        }
    }

    /// `k` WQEs left their FIFO (first packet sent, or flushed). Returns the QPs parked on
    /// the tenant's FIFO if it has room now.
    pub fn give(&mut self, ls: bool, tenant: u16, k: u32) -> Vec<u32> {
        if ls {
            self.ls_held = self.ls_held.saturating_sub(k);
            return Vec::new();
        }
        let t = self.grow(tenant);
        let was_full = self.held[t] >= self.depth;
        self.held[t] = self.held[t].saturating_sub(k);
        if was_full && self.held[t] < self.depth {
            self.full -= 1;
            return std::mem::take(&mut self.parked[t]);
        }
        Vec::new()
    }

    /// Isolated backpressure skipped `qpn` of BS `tenant`: it is re-activated when the
    /// tenant's FIFO has room.
    pub fn park(&mut self, tenant: u16, qpn: u32) {
        let t = self.grow(tenant);
        if !self.parked[t].contains(&qpn) {
            self.parked[t].push(qpn);
        }
    }

    /// BS tenants that have used a FIFO.
    pub fn bs_tenants(&self) -> usize {
        self.peak.iter().filter(|&&p| p > 0).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_overfills_and_reports_full() {
        let mut f = TenantFifos::new(2);
        assert_eq!(f.room(3), 2);
        f.take(false, 3, 1);
        assert!(!f.any_full());
        f.take(false, 3, f.room(3));
        assert!(f.any_full() && f.room(3) == 0);
        f.park(3, 42);
        f.take(true, 0, 5);
        assert_eq!(f.ls_peak, 5);
        assert_eq!(f.give(false, 3, 1), vec![42]);
        assert!(!f.any_full() && f.room(3) == 1);
        assert!(f.give(false, 3, 1).is_empty());
        assert_eq!(f.peak[3], 2);
    }
}
