//! An output-queued, store-and-forward switch: a frame fully received on an input is queued
//! on its output port if the port's buffer has room (bytes of frames queued or in
//! transmission), else dropped and counted.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::port::Port;
use crate::params::EthParams;

/// Counters of one output port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct OutPortStats {
    /// Frames dropped for lack of buffer.
    pub drops: u64,
    /// Largest buffer occupancy seen, bytes.
    pub max_occupancy: u64,
}

/// One output port with its buffer.
#[derive(Debug, Clone)]
pub struct OutPort {
    /// The transmit port.
    pub port: Port,
    queued: VecDeque<(TimePs, u64)>,
    occupancy: u64,
    /// Counters.
    pub stats: OutPortStats,
}

/// The switch.
#[derive(Debug, Clone)]
pub struct Switch {
    /// Output ports, one per node.
    pub outs: Vec<OutPort>,
    buffer_bytes: u64,
    latency_ps: TimePs,
}

impl Switch {
    /// A switch with `ports` output ports, `buffer_bytes` per port, forwarding latency.
    pub fn new(ports: usize, eth: &EthParams, buffer_bytes: u64, latency_ps: TimePs) -> Self {
        Switch {
            outs: (0..ports)
                .map(|_| OutPort {
                    port: Port::new(eth.clone()),
                    queued: VecDeque::new(),
                    occupancy: 0,
                    stats: OutPortStats::default(),
                })
                .collect(),
            buffer_bytes,
            latency_ps,
        }
    }

    /// A frame of `len` bytes, fully received at `now`, goes out of port `out`. Returns the
    /// (first bit, last bit) times on the output link, or `None` if dropped.
    pub fn forward(&mut self, now: TimePs, out: usize, len: usize) -> Option<(TimePs, TimePs)> {
        let buffer = self.buffer_bytes;
        let o = &mut self.outs[out];
        while let Some(&(end, b)) = o.queued.front() {
            if end > now {
                break;
            }
            o.queued.pop_front();
            o.occupancy -= b;
        }
        let b = len as u64;
        if o.occupancy + b > buffer {
            o.stats.drops += 1;
            return None;
        }
        let (start, end) = o.port.send(now + self.latency_ps, len);
        o.queued.push_back((end, b));
        o.occupancy += b;
        o.stats.max_occupancy = o.stats.max_occupancy.max(o.occupancy);
        Some((start, end))
    }

    /// Frames dropped over all ports.
    pub fn drops(&self) -> u64 {
        self.outs.iter().map(|o| o.stats.drops).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ModelParams;

    #[test]
    fn finite_buffer_drops() {
        let eth = ModelParams::baseline().eth;
        let mut s = Switch::new(2, &eth, 3000, 0);
        assert!(s.forward(0, 1, 1500).is_some());
        assert!(s.forward(0, 1, 1500).is_some());
        assert!(s.forward(0, 1, 1500).is_none());
        assert_eq!(s.drops(), 1);
        // After the first frame has left there is room again.
        let t = s.outs[1].port.free_at();
        assert!(s.forward(t, 1, 1500).is_some());
    }
}
