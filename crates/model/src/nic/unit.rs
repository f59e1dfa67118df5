//! A pipeline unit as a server with an initiation interval: a job arriving at `t` starts at
//! max(t, when the unit is free) and leaves one II later.

use rnic_sim::TimePs;

/// Counters of a unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnitStats {
    /// Jobs served.
    pub jobs: u64,
    /// Busy time, ps.
    pub busy_ps: u64,
}

/// A unit with initiation interval `ii_ps`.
#[derive(Debug, Clone, Default)]
pub struct Unit {
    /// Initiation interval, ps.
    pub ii_ps: TimePs,
    free_at: TimePs,
    /// Counters.
    pub stats: UnitStats,
}

impl Unit {
    /// A unit of II `ii_ps`.
    pub fn new(ii_ps: TimePs) -> Self {
        Unit {
            ii_ps,
            free_at: 0,
            stats: UnitStats::default(),
        }
    }

    /// Serves one job arriving at `at`; returns when it leaves.
    pub fn serve(&mut self, at: TimePs) -> TimePs {
        self.serve_for(at, self.ii_ps)
    }

    /// Serves one job occupying the unit for `d` ps.
    pub fn serve_for(&mut self, at: TimePs, d: TimePs) -> TimePs {
        let s = at.max(self.free_at);
        self.free_at = s + d;
        self.stats.jobs += 1;
        self.stats.busy_ps += d;
        self.free_at
    }

    /// When the unit is next free.
    pub fn free_at(&self) -> TimePs {
        self.free_at
    }
}
