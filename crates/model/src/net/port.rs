//! An Ethernet transmit port: frames leave one after another at line rate. Wire time is
//! (max(frame, 60) + FCS + preamble/SFD + IFG) × 8 / rate.

use rnic_sim::TimePs;

use crate::nic::pcie::ser_ps;
use crate::params::EthParams;

/// Counters of a port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortStats {
    /// Frames sent.
    pub frames: u64,
    /// Frame bytes sent (without FCS, preamble, IFG).
    pub frame_bytes: u64,
    /// Time the port was transmitting, ps.
    pub busy_ps: u64,
}

/// A transmit port.
#[derive(Debug, Clone)]
pub struct Port {
    p: EthParams,
    free_at: TimePs,
    /// Counters.
    pub stats: PortStats,
}

impl Port {
    /// A port with Ethernet parameters `p`.
    pub fn new(p: EthParams) -> Self {
        Port {
            p,
            free_at: 0,
            stats: PortStats::default(),
        }
    }

    /// Wire time of a frame of `frame_len` bytes (without FCS).
    pub fn wire_time(&self, frame_len: usize) -> TimePs {
        ser_ps(self.p.wire_bytes(frame_len as u64), self.p.mbps)
    }

    /// Line rate, Mbps.
    pub fn mbps(&self) -> u64 {
        self.p.mbps
    }

    /// Time the port finishes what it has queued.
    pub fn free_at(&self) -> TimePs {
        self.free_at
    }

    /// Sends a frame handed over at `at`; returns (first bit out, last bit out).
    pub fn send(&mut self, at: TimePs, frame_len: usize) -> (TimePs, TimePs) {
        let start = at.max(self.free_at);
        let d = self.wire_time(frame_len);
        self.free_at = start + d;
        self.stats.frames += 1;
        self.stats.frame_bytes += frame_len as u64;
        self.stats.busy_ps += d;
        (start, self.free_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ModelParams;

    #[test]
    fn a_64b_write_only_frame_is_12_96_ns_at_100g() {
        let port = Port::new(ModelParams::baseline().eth);
        // 14 + 20 + 8 + 12 + 16 (RETH) + 64 + 4 (ICRC) = 138 B frame -> 162 B on the wire
        assert_eq!(port.wire_time(138), 12_960);
        // minimum frame padding
        assert_eq!(port.wire_time(58), port.wire_time(60));
    }
}
