//! The doorbell unit: an MMIO write carrying a QP's new producer index lands in the NIC; the
//! unit records it and, for a send queue, makes the QP active in the scheduler. RQ doorbells
//! make the NIC fetch the new receive WQEs (they are kept on chip for incoming SENDs).

use rnic_sim::TimePs;

use super::unit::Unit;

/// Counters of the doorbell unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DoorbellStats {
    /// SQ doorbells.
    pub sq: u64,
    /// RQ doorbells.
    pub rq: u64,
}

/// The doorbell unit.
#[derive(Debug, Clone)]
pub struct DoorbellUnit {
    /// The pipeline unit.
    pub unit: Unit,
    /// Counters.
    pub stats: DoorbellStats,
}

impl DoorbellUnit {
    /// A unit of II `ii_ps`.
    pub fn new(ii_ps: TimePs) -> Self {
        DoorbellUnit {
            unit: Unit::new(ii_ps),
            stats: DoorbellStats::default(),
        }
    }

    /// An SQ doorbell reaches the unit at `now`; returns when it is processed.
    pub fn ring_sq(&mut self, now: TimePs) -> TimePs {
        self.stats.sq += 1;
        self.unit.serve(now)
    }

    /// An RQ doorbell reaches the unit at `now`; returns when it is processed.
    pub fn ring_rq(&mut self, now: TimePs) -> TimePs {
        self.stats.rq += 1;
        self.unit.serve(now)
    }
}

/// Moves a producer index forward to `pi` (a doorbell may be overtaken by a later one; an
/// older index never moves it back).
pub fn advance(index: &mut u32, pi: u32) {
    if pi.wrapping_sub(*index) as i32 > 0 {
        *index = pi;
    }
}

impl crate::stats::Report for DoorbellUnit {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.unit"), &self.unit.stats);
    }
}
