//! A switch's output port: store-and-forward, output-queued. A frame fully received on an
//! input is queued on its output port if the port's buffer has room (bytes of frames queued
//! or in transmission), else dropped and counted.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::port::Port;

/// Counters of one output port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutPortStats {
    /// Frames dropped for lack of buffer.
    pub drops: u64,
    /// Most bytes queued at once.
    pub max_occupancy: u64,
}

/// An output port with its buffer.
#[derive(Debug, Clone)]
pub struct OutPort {
    /// The transmit port (rate of the link it feeds).
    pub port: Port,
    queued: VecDeque<(TimePs, u64)>,
    occupancy: u64,
    buffer_bytes: u64,
    /// Counters.
    pub stats: OutPortStats,
}

impl OutPort {
    /// A port transmitting with `port`, buffering at most `buffer_bytes`.
    pub fn new(port: Port, buffer_bytes: u64) -> Self {
        OutPort {
            port,
            queued: VecDeque::new(),
            occupancy: 0,
            buffer_bytes,
            stats: OutPortStats::default(),
        }
    }

    /// Bytes queued or in transmission as of the last [`OutPort::forward`], the frame it
    /// took included.
    pub fn occupancy(&self) -> u64 {
        self.occupancy
    }

    /// The buffer's size, bytes.
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }

    /// The simulation is at `now`: the frames that have left by then no longer occupy it.
    pub fn settle(&mut self, now: TimePs) {
        while let Some(&(end, b)) = self.queued.front() {
            if end > now {
                break;
            }
            self.queued.pop_front();
            self.occupancy -= b;
        }
    }

    /// A frame of `len` bytes fully received at `now` wants this port; it may start
    /// `latency_ps` later. Returns its (start, end) on the wire, or `None` if dropped.
    pub fn forward(
        &mut self,
        now: TimePs,
        latency_ps: TimePs,
        len: usize,
    ) -> Option<(TimePs, TimePs)> {
        self.settle(now);
        let b = len as u64;
        if self.occupancy + b > self.buffer_bytes {
            self.stats.drops += 1;
            return None;
        }
        self.port.forget_gone(now);
        let (start, end) = self.port.send(now + latency_ps, len);
        self.queued.push_back((end, b));
        self.occupancy += b;
        self.stats.max_occupancy = self.stats.max_occupancy.max(self.occupancy);
        Some((start, end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ModelParams;

    #[test]
    fn finite_buffer_drops() {
        let eth = ModelParams::baseline().eth;
        let mut o = OutPort::new(Port::new(eth), 3000);
        assert!(o.forward(0, 0, 1500).is_some());
        assert!(o.forward(0, 0, 1500).is_some());
        assert!(o.forward(0, 0, 1500).is_none());
        assert_eq!(o.stats.drops, 1);
        // After the first frame has left there is room again.
        let t = o.port.free_at();
        assert!(o.forward(t, 0, 1500).is_some());
    }
}
