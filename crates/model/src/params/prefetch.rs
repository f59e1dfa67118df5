//! The switches of resource prefetching, resolved from `nic.prefetch` and its fields.

use crate::config::{NicConfig, PrefetchMode};

/// What `nic.prefetch` and its fields select.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrefetchParams {
    /// Scheduler-triggered chain prefetch.
    pub sched: bool,
    /// Software-triggered QPC prefetch from post_send.
    pub sw: bool,
    /// Positions ahead of the scheduling queue's head.
    pub window: u32,
    /// WQE cache capacity, WQEs.
    pub wqe_cache_entries: u32,
}

impl PrefetchParams {
    /// The parameters `nic.prefetch`, `nic.prefetch_window` and `nic.wqe_cache_entries` give.
    pub fn from_config(n: &NicConfig) -> Self {
        let (sched, sw) = match n.prefetch {
            PrefetchMode::None => (false, false),
            PrefetchMode::Sched => (true, false),
            PrefetchMode::Sw => (false, true),
            PrefetchMode::SchedSw => (true, true),
        };
        PrefetchParams {
            sched,
            sw,
            window: n.prefetch_window,
            wqe_cache_entries: n.wqe_cache_entries,
        }
    }

    /// Any trigger is on.
    pub fn enabled(&self) -> bool {
        self.sched || self.sw
    }
}
