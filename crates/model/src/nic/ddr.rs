//! On-board DDR for the QPC/MPT/MTT backing store (placement = ddr): one shared channel of
//! fixed bandwidth plus an access latency.

use rnic_sim::{bytes_time_ps_mbps, TimePs};

use super::pcie::Lane;
use crate::params::DdrParams;

/// The DDR memory.
#[derive(Debug, Clone)]
pub struct Ddr {
    latency_ps: TimePs,
    mbps: u64,
    /// The data bus.
    pub bus: Lane,
    /// Reads served.
    pub reads: u64,
    /// Writes served.
    pub writes: u64,
}

impl Ddr {
    /// A DDR with parameters `p`.
    pub fn new(p: &DdrParams) -> Self {
        Ddr {
            latency_ps: p.latency_ps,
            mbps: p.mbps,
            bus: Lane::new(p.mbps),
            reads: 0,
            writes: 0,
        }
    }

    /// A read of `len` bytes issued at `at`; returns when the data is in the NIC.
    pub fn read(&mut self, at: TimePs, len: u64) -> TimePs {
        self.reads += 1;
        self.bus.reserve(at + self.latency_ps, len, len, 1)
    }

    /// A write of `len` bytes at `at`; returns when it is done.
    pub fn write(&mut self, at: TimePs, len: u64) -> TimePs {
        self.writes += 1;
        self.bus.reserve(at, len, len, 1) + self.latency_ps
    }

    /// Uncontended read time of `len` bytes.
    pub fn read_latency(&self, len: u64) -> TimePs {
        self.latency_ps + bytes_time_ps_mbps(len, self.mbps)
    }
}

impl crate::stats::Report for Ddr {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.set(&format!("{prefix}.busy_ps"), self.bus.busy_ps);
    }
}
