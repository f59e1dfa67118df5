//! The WQE FIFOs as the scheduler's admission, the [`WqeAdmission`] hook: the baseline's one
//! shared FIFO (unbounded: every visit reads what it may, nothing pauses; or with the RTL's
//! depth and almost-full flag), or separate WQE caching (optimized-v1/v2) with coupled or
//! isolated backpressure ([`super::fifos`]).

use super::fifos::TenantFifos;
use super::tenant;
use crate::nic::ports::WqeAdmission;

/// The baseline: one WQE FIFO shared by every QP. Unbounded (depth 0, rnic's default) it is
/// bounded only by the WQE buffer, which the scheduler's own backpressure watches. With a
/// depth it is the authors' RTL's WQE cache: a WQE takes its place when the scheduler reads
/// it and leaves when the transport starts it (its first packet), and while the FIFO is
/// almost full (depth - 1 WQEs, at least 1) WQE reads pause for every QP (the almost-full
/// flag stops the WQE read scheduler itself: coupled backpressure).
#[derive(Debug, Default)]
pub struct SharedFifo {
    /// WQEs the FIFO may hold before its almost-full flag stops every read (0: unbounded).
    almost_full: u32,
    /// WQEs read and not yet started.
    pub held: u32,
    /// Most WQEs it ever held.
    pub peak: u32,
    /// Scheduler pauses because the FIFO was almost full.
    pub stalls: u64,
}

impl SharedFifo {
    /// One shared FIFO of `depth` WQEs (0: unbounded). Its almost-full level is one below
    /// the depth, as the RTL's (16 deep, almost full at 15); a FIFO of 1 holds one WQE.
    pub fn new(depth: u32) -> Self {
        SharedFifo {
            almost_full: if depth == 0 { 0 } else { (depth - 1).max(1) },
            ..SharedFifo::default()
        }
    }

    /// The FIFO has a depth.
    pub fn bounded(&self) -> bool {
        self.almost_full > 0
    }
}

impl WqeAdmission for SharedFifo {
    #[inline]
    fn pauses_all(&mut self) -> bool {
        let stall = self.bounded() && self.held >= self.almost_full;
        if stall {
            self.stalls += 1;
        }
        stall
    }

    #[inline]
    fn admit(&mut self, _qpn: u32, _iso_tag: u32, k: u32) -> u32 {
        if !self.bounded() {
            return k;
        }
        let k = k.min(self.almost_full.saturating_sub(self.held));
        self.held += k;
        self.peak = self.peak.max(self.held);
        k
    }

    #[inline]
    fn queue_of(&self, _iso_tag: u32) -> u32 {
        0
    }

    #[inline]
    fn own_lane(&self, _iso_tag: u32) -> bool {
        false
    }

    /// Nothing is parked: the scheduler, paused while the FIFO is almost full, is woken by
    /// the TX path whenever a WQE starts.
    #[inline]
    fn left(&mut self, _iso_tag: u32, n: u32) -> Vec<u32> {
        self.held = self.held.saturating_sub(n);
        Vec::new()
    }
}

/// Separate WQE caching: a shallow FIFO per BS tenant, one shared LS FIFO. A BS QP reads no
/// more WQEs than its tenant's FIFO has room for; a full BS FIFO pauses every QP (coupled
/// backpressure) or parks the tenant's QPs (isolated backpressure, v2).
#[derive(Debug, Default)]
pub struct SeparateFifos {
    /// The FIFOs' occupancy and parked QPs.
    pub fifos: TenantFifos,
    /// Isolated backpressure (else coupled).
    isolated: bool,
    /// Scheduler pauses because a BS FIFO was full (coupled backpressure).
    pub coupled_stalls: u64,
    /// QPs skipped because their own BS FIFO was full (isolated backpressure).
    pub parks: u64,
}

impl SeparateFifos {
    /// FIFOs of `depth` WQEs per BS tenant; `isolated`: isolated backpressure.
    pub fn new(depth: u32, isolated: bool) -> Self {
        SeparateFifos {
            fifos: TenantFifos::new(depth),
            isolated,
            ..SeparateFifos::default()
        }
    }
}

impl WqeAdmission for SeparateFifos {
    fn pauses_all(&mut self) -> bool {
        let coupled_stall = !self.isolated && self.fifos.any_full();
        if coupled_stall {
            self.coupled_stalls += 1;
        }
        coupled_stall
    }

    fn admit(&mut self, qpn: u32, iso_tag: u32, k: u32) -> u32 {
        let ls = tenant::is_ls(iso_tag);
        let t = tenant::tenant(iso_tag);
        let mut k = k;
        if !ls {
            let fifo_room = self.fifos.room(t);
            if fifo_room == 0 {
                // Isolated backpressure: only this tenant waits for its FIFO.
                self.fifos.park(t, qpn);
                self.parks += 1;
                return 0;
            }
            k = k.min(fifo_room);
        }
        self.fifos.take(ls, t, k);
        k
    }

    /// 0 for the LS FIFO, `1 + tenant` for a BS tenant's.
    fn queue_of(&self, iso_tag: u32) -> u32 {
        if tenant::is_ls(iso_tag) {
            0
        } else {
            1 + u32::from(tenant::tenant(iso_tag))
        }
    }

    /// LS WQEs translate in their own lane: they do not wait for the page-by-page
    /// translation of the BS messages fetched before them.
    fn own_lane(&self, iso_tag: u32) -> bool {
        tenant::is_ls(iso_tag)
    }

    fn left(&mut self, iso_tag: u32, n: u32) -> Vec<u32> {
        if n == 0 {
            return Vec::new();
        }
        self.fifos
            .give(tenant::is_ls(iso_tag), tenant::tenant(iso_tag), n)
    }

    /// Isolated backpressure: a BS QP whose tenant's FIFO is full joins the tenant's parked
    /// QPs. Activated, it would go ahead of them into the scheduler's ring, and since a QP
    /// with WQEs in flight is activated by each of its completions, it would take every
    /// slot the FIFO frees while a parked QP of its tenant waits for good.
    fn hold(&mut self, qpn: u32, iso_tag: u32) -> bool {
        let t = tenant::tenant(iso_tag);
        if !self.isolated || tenant::is_ls(iso_tag) || self.fifos.room(t) > 0 {
            return false;
        }
        self.fifos.park(t, qpn);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BS tenant 3's QP 7.
    fn bs() -> u32 {
        tenant::tag(false, 3, 7)
    }

    /// The LS tenant's QP 1.
    fn ls() -> u32 {
        tenant::tag(true, 0, 1)
    }

    /// Unbounded (rnic's default), the shared FIFO admits every WQE and never pauses.
    #[test]
    fn an_unbounded_shared_fifo_admits_everything() {
        let mut f = SharedFifo::new(0);
        for _ in 0..1000 {
            assert_eq!(f.admit(7, bs(), 8), 8);
            assert!(!f.pauses_all());
        }
        assert_eq!((f.held, f.stalls), (0, 0));
    }

    /// The RTL's FIFO of 16: reads stop at the almost-full level, 15, for every QP, and no
    /// visit reads past it.
    #[test]
    fn a_bounded_shared_fifo_stops_every_read_at_almost_full() {
        let mut f = SharedFifo::new(16);
        assert!(!f.pauses_all());
        assert_eq!(f.admit(7, bs(), 8), 8);
        assert_eq!(f.admit(1, ls(), 8), 7, "only 7 more fit below almost full");
        assert_eq!((f.held, f.peak), (15, 15));
        assert!(f.pauses_all() && f.pauses_all());
        assert_eq!(f.stalls, 2);
        assert_eq!(f.admit(2, bs(), 1), 0);
    }

    /// A WQE that starts leaves the FIFO, and the room it frees is read again.
    #[test]
    fn started_wqes_free_room() {
        let mut f = SharedFifo::new(16);
        assert_eq!(f.admit(7, bs(), 15), 15);
        assert!(f.pauses_all());
        assert!(f.left(bs(), 1).is_empty());
        assert!(!f.pauses_all());
        assert_eq!(f.admit(1, ls(), 4), 1);
        assert!(f.pauses_all());
        f.left(bs(), 15);
        assert_eq!(f.held, 0);
        assert_eq!(f.peak, 15);
    }

    /// A FIFO of one still holds one WQE (its almost-full level cannot be 0).
    #[test]
    fn a_fifo_of_one_holds_one() {
        let mut f = SharedFifo::new(1);
        assert_eq!(f.admit(7, bs(), 3), 1);
        assert!(f.pauses_all());
        f.left(bs(), 1);
        assert!(!f.pauses_all());
    }
}
