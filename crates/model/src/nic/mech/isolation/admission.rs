//! The WQE FIFOs as the scheduler's admission, the [`WqeAdmission`] hook: the baseline's one
//! shared FIFO (every visit reads what it may, nothing pauses), or separate WQE caching
//! (optimized-v1/v2) with coupled or isolated backpressure ([`super::fifos`]).

use super::fifos::TenantFifos;
use super::tenant;
use crate::nic::ports::WqeAdmission;

/// The baseline: one WQE FIFO shared by every QP, bounded only by the WQE buffer (which the
/// scheduler's own backpressure watches).
#[derive(Debug, Default)]
pub struct SharedFifo;

impl WqeAdmission for SharedFifo {
    #[inline]
    fn pauses_all(&mut self) -> bool {
        false
    }

    #[inline]
    fn admit(&mut self, _qpn: u32, _iso_tag: u32, k: u32) -> u32 {
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

    #[inline]
    fn left(&mut self, _iso_tag: u32, _n: u32) -> Vec<u32> {
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
}
