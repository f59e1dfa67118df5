//! The star topology: node 0 is the server, nodes 1..=N the clients, each attached by one
//! link (both directions) to a single output-queued switch. Addresses: node i has MAC
//! 02:00:00:00:hi:lo and IPv4 10.0.hi.lo (hi:lo = i + 1), so the switch routes on the
//! destination IP.

use rnic_sim::{Rng, TimePs};

use super::impair::{Impair, ImpairStats};
use super::link::Link;
use super::port::{Port, PortStats};
use super::switch::Switch;
use crate::params::{ImpairScope, ModelParams};

/// MAC address of node `i`.
pub fn node_mac(i: usize) -> [u8; 6] {
    let v = (i + 1) as u16;
    [0x02, 0, 0, 0, (v >> 8) as u8, v as u8]
}

/// IPv4 address of node `i`.
pub fn node_ip(i: usize) -> [u8; 4] {
    let v = (i + 1) as u16;
    [10, 0, (v >> 8) as u8, v as u8]
}

/// Node index of an IPv4 address (inverse of [`node_ip`]).
pub fn ip_node(ip: [u8; 4]) -> Option<usize> {
    if ip[0] != 10 || ip[1] != 0 {
        return None;
    }
    let v = (usize::from(ip[2]) << 8) | usize::from(ip[3]);
    v.checked_sub(1)
}

/// Destination node of a RoCEv2 frame (IPv4 destination at bytes 30..34).
pub fn frame_dst_node(frame: &[u8]) -> Option<usize> {
    let ip: [u8; 4] = frame.get(30..34)?.try_into().ok()?;
    ip_node(ip)
}

/// Network statistics.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct NetStats {
    /// Frames dropped by the switch for lack of buffer.
    pub switch_drops: u64,
    /// Impairment counters summed over all elements.
    pub impair: ImpairStats,
    /// Per node NIC port counters.
    pub nic_ports: Vec<PortStats>,
}

/// The star network.
#[derive(Debug, Clone)]
pub struct Star {
    /// Each node's NIC transmit port (node → switch).
    pub nic_ports: Vec<Port>,
    /// The switch (output port i leads to node i).
    pub switch: Switch,
    /// Every link has the same delay.
    pub link: Link,
    /// Impairment element on each uplink (node i → switch), if placed.
    pub up_impair: Vec<Option<Impair>>,
    /// Impairment element on each downlink (switch → node i), if placed.
    pub down_impair: Vec<Option<Impair>>,
}

impl Star {
    /// Builds the star for `p.net.clients` clients.
    pub fn new(p: &ModelParams, rng: &Rng) -> Self {
        let n = p.net.clients as usize + 1;
        let slot = {
            let port = Port::new(p.eth.clone());
            port.wire_time(p.pmtu as usize + 78)
        };
        let mk = |i: usize, dir: u64| -> Option<Impair> {
            let placed = match p.net.impair_scope {
                ImpairScope::None => false,
                ImpairScope::ServerLink => i == 0,
                ImpairScope::All => dir == 0,
            };
            let imp = Impair::new(
                rng.fork(0x1000 + 2 * i as u64 + dir),
                p.net.loss,
                p.net.dup,
                p.net.reorder_depth,
                slot,
                p.net.extra_delay_ps,
            );
            (placed && imp.is_active()).then_some(imp)
        };
        Star {
            nic_ports: (0..n).map(|_| Port::new(p.eth.clone())).collect(),
            switch: Switch::new(
                n,
                &p.eth,
                p.net.switch_buffer_bytes,
                p.net.switch_latency_ps,
            ),
            link: Link::new(p.net.link_delay_ps),
            up_impair: (0..n).map(|i| mk(i, 0)).collect(),
            down_impair: (0..n).map(|i| mk(i, 1)).collect(),
        }
    }

    /// Uncontended one-way time of a frame from the start of its transmission at one NIC to
    /// its last bit at another: two serializations, two link delays, the switch latency.
    pub fn one_way_ps(&self, frame_len: usize, switch_latency_ps: TimePs) -> TimePs {
        2 * self.nic_ports[0].wire_time(frame_len) + 2 * self.link.delay_ps + switch_latency_ps
    }

    /// Statistics.
    pub fn stats(&self) -> NetStats {
        let mut imp = ImpairStats::default();
        for e in self
            .up_impair
            .iter()
            .chain(self.down_impair.iter())
            .flatten()
        {
            imp.frames += e.stats.frames;
            imp.dropped += e.stats.dropped;
            imp.duplicated += e.stats.duplicated;
            imp.reordered += e.stats.reordered;
        }
        NetStats {
            switch_drops: self.switch.drops(),
            impair: imp,
            nic_ports: self.nic_ports.iter().map(|p| p.stats).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip() {
        for i in [0usize, 1, 10, 300] {
            assert_eq!(ip_node(node_ip(i)), Some(i));
        }
    }
}
