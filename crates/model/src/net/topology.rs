//! The star topology: node 0 is the server, nodes 1..=N the clients, each attached by one
//! link (both directions) to a single output-queued switch. Addresses: node i has MAC
//! 02:00:00:00:hi:lo and IPv4 10.0.hi.lo (hi:lo = i + 1), so the switch routes on the
//! destination IP.

use std::fs::File;
use std::io::BufWriter;

use rnic_sim::{EventQueue, Rng, TimePs};
use rnic_wire::PcapWriter;

use super::impair::{Impair, ImpairStats};
use super::link::Link;
use super::port::{Port, PortStats};
use super::switch::Switch;
use crate::event::{Ev, FramePool, NetEv, NicEv};
use crate::nic::cx::Wire;
use crate::params::{ImpairScope, ModelParams};
use crate::world::Hooks;

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

/// Destination node of a frame (its IPv4 destination address).
pub fn frame_dst_node(frame: &[u8]) -> Option<usize> {
    let ip = frame.get(rnic_wire::frame::IPV4_OFFSET..)?;
    let ip = rnic_wire::ipv4::Packet::new_checked(ip).ok()?;
    ip_node(ip.dst())
}

impl Wire for Star {
    fn send(
        &mut self,
        node: usize,
        frame: u32,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let len = frames.get(frame).len();
        let (start, end) = self.nic_ports[node].send(at, len);
        if node == 0 {
            self.capture(start, frames.get(frame));
        }
        let arrive = self.link.arrive(end);
        let verdict = self.up_impair[node].as_mut().map(|e| e.judge());
        match verdict {
            Some(v) if v.drop => frames.release(frame),
            Some(v) => {
                q.push(arrive + v.delay_ps, Ev::Net(NetEv::SwitchIn { frame }));
                if v.dup {
                    let d = frames.duplicate(frame);
                    q.push(
                        arrive + v.delay_ps + v.dup_delay_ps,
                        Ev::Net(NetEv::SwitchIn { frame: d }),
                    );
                }
            }
            None => q.push(arrive, Ev::Net(NetEv::SwitchIn { frame })),
        }
    }

    fn port_free_at(&self, node: usize) -> TimePs {
        self.nic_ports[node].free_at()
    }

    fn received(&mut self, node: usize, frame: u32, at: TimePs, frames: &FramePool) {
        if node == 0 {
            self.capture(at, frames.get(frame));
        }
    }
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
#[derive(Debug)]
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
    /// Capture of the server's port (both directions), if asked for.
    pub pcap: Option<PcapWriter<BufWriter<File>>>,
    /// First error writing the capture.
    pub pcap_error: Option<String>,
    /// Test hooks.
    pub hooks: Hooks,
    /// Data frames seen by the switch (for the corruption hook).
    data_frames_seen: u64,
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
            pcap: None,
            pcap_error: None,
            hooks: Hooks::default(),
            data_frames_seen: 0,
        }
    }

    /// Handles one network event at `now`.
    pub fn handle(
        &mut self,
        now: TimePs,
        ev: NetEv,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        match ev {
            NetEv::SwitchIn { frame } => self.on_switch_in(now, frame, q, frames),
        }
    }

    /// A frame's last bit reaches the switch at `now`: forward it down its node's link.
    fn on_switch_in(
        &mut self,
        now: TimePs,
        frame: u32,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let nodes = self.nic_ports.len();
        let Some(dst) = frame_dst_node(frames.get(frame)).filter(|&d| d < nodes) else {
            frames.release(frame);
            return;
        };
        self.maybe_corrupt(frame, frames);
        let len = frames.get(frame).len();
        let Some((_, end)) = self.switch.forward(now, dst, len) else {
            frames.release(frame);
            return;
        };
        let arrive = self.link.arrive(end);
        let verdict = self.down_impair[dst].as_mut().map(|e| e.judge());
        let node = dst as u32;
        let rx = |frame| Ev::Nic {
            node,
            ev: NicEv::RxArrive { frame },
        };
        match verdict {
            Some(v) if v.drop => frames.release(frame),
            Some(v) => {
                q.push(arrive + v.delay_ps, rx(frame));
                if v.dup {
                    let d = frames.duplicate(frame);
                    q.push(arrive + v.delay_ps + v.dup_delay_ps, rx(d));
                }
            }
            None => q.push(arrive, rx(frame)),
        }
    }

    /// The corruption hook: flips one payload byte of the n-th data frame and fixes the
    /// ICRC, so only the end-to-end payload check can notice.
    fn maybe_corrupt(&mut self, frame: u32, frames: &mut FramePool) {
        let Some(target) = self.hooks.corrupt_data_frame else {
            return;
        };
        let Ok(h) = rnic_wire::peek_roce(frames.get(frame)) else {
            return;
        };
        if !h.bth.opcode.has_payload() || h.payload_len == 0 {
            return;
        }
        self.data_frames_seen += 1;
        if self.data_frames_seen != target {
            return;
        }
        let off = h.payload_offset;
        let buf = frames.buf_mut(frame);
        buf[off] ^= 0x5a;
        if let Ok(c) = rnic_wire::icrc::compute(buf) {
            let l = buf.len();
            buf[l - 4..].copy_from_slice(&c.to_le_bytes());
        }
    }

    /// Writes a frame of node 0's port into the capture.
    fn capture(&mut self, t: TimePs, bytes: &[u8]) {
        if let Some(w) = self.pcap.as_mut() {
            if let Err(e) = w.write_packet(t, bytes) {
                self.pcap_error.get_or_insert_with(|| e.to_string());
            }
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
