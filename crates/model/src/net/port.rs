//! An Ethernet transmit port: frames leave one after another at line rate. Wire time is
//! (max(frame, 60) + FCS + preamble/SFD + IFG) × 8 / rate.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use crate::params::EthParams;
use rnic_sim::ser_ps;

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
    /// Under flow control ([`Port::track_frames`]): the frames handed over and not yet
    /// gone, (first bit out, last bit out), so a PAUSE frame can wait for the one on the
    /// wire; `None` otherwise.
    frames: Option<Box<TrackedFrames>>,
}

#[derive(Debug, Clone)]
struct TrackedFrames {
    /// In send order (so by start and by end).
    on: VecDeque<(TimePs, TimePs)>,
}

impl Port {
    /// A port with Ethernet parameters `p`.
    pub fn new(p: EthParams) -> Self {
        Port {
            p,
            free_at: 0,
            stats: PortStats::default(),
            frames: None,
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
        if let Some(f) = self.frames.as_deref_mut() {
            f.on.push_back((start, self.free_at));
        }
        (start, self.free_at)
    }

    /// Keeps the frames handed over until they are gone ([`Port::forget_gone`]), for
    /// [`Port::frame_on_wire_ends`].
    pub fn track_frames(&mut self) {
        self.frames = Some(Box::new(TrackedFrames {
            on: VecDeque::new(),
        }));
    }

    /// The simulation is at `now`: the tracked frames that have left by then are forgotten
    /// (no later question can be about them).
    pub fn forget_gone(&mut self, now: TimePs) {
        if let Some(f) = self.frames.as_deref_mut() {
            while f.on.front().is_some_and(|&(_, end)| end <= now) {
                f.on.pop_front();
            }
        }
    }

    /// When the frame being serialized at `t` (its last bit, preamble and gap included)
    /// has left: the earliest a frame that may not preempt it, such as a PAUSE, can start;
    /// `t` when none is (or frames are not tracked).
    pub fn frame_on_wire_ends(&self, t: TimePs) -> TimePs {
        let Some(f) = self.frames.as_deref() else {
            return t;
        };
        let i = f.on.partition_point(|&(_, end)| end <= t);
        match f.on.get(i) {
            Some(&(start, end)) if start <= t => end,
            _ => t,
        }
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

    #[test]
    fn a_tracked_port_knows_the_frame_on_the_wire() {
        let mut port = Port::new(ModelParams::baseline().eth);
        port.track_frames();
        let (s1, e1) = port.send(1_000, 138);
        let (s2, e2) = port.send(1_000, 138); // queued behind the first
        assert_eq!((s1, s2), (1_000, e1));
        assert_eq!(port.frame_on_wire_ends(500), 500, "idle");
        assert_eq!(port.frame_on_wire_ends(1_000), e1);
        assert_eq!(port.frame_on_wire_ends(e1 - 1), e1);
        assert_eq!(
            port.frame_on_wire_ends(e1),
            e2,
            "the second starts as the first ends"
        );
        assert_eq!(port.frame_on_wire_ends(e2 + 5), e2 + 5);
    }
}
