//! The network as a graph: nodes (each NIC has one port), output-queued switches and
//! full-duplex links, each link direction with its own rate, propagation delay and chain of
//! elements ([`super::element`]). A frame leaves a port (serialised at the link's rate),
//! crosses the link's delay and elements, and reaches the far end: a node's NIC, or a switch
//! that forwards it on the output port its routing table names for the destination node
//! (read from the frame's IPv4 destination through `rnic-wire`).

use rnic_sim::{EventQueue, TimePs};

use super::addr::frame_dst_node;
use super::element::{ElementStats, Emitted, LinkElement};
use super::hooks::Hooks;
use super::port::{Port, PortStats};
use super::switch::OutPort;
use crate::config::EcnMarkPoint;
use crate::event::RouteFields;
use crate::event::{Ev, FramePool, NetEv, NicEv};
use crate::nic::cx::pause_looks::{ParkedLooks, PauseLook};
use crate::nic::cx::Wire;

/// The far end of a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// A node's NIC.
    Node(usize),
    /// A switch.
    Switch(usize),
}

/// One direction of a link.
#[derive(Debug)]
pub struct LinkDir {
    /// One-way propagation delay, ps.
    pub delay_ps: TimePs,
    /// Where it leads.
    pub to: End,
    /// The direction the other way (for frames an element sends back).
    pub reverse: usize,
    /// Elements every frame crosses, in order, after the propagation delay.
    pub elements: Vec<Box<dyn LinkElement>>,
}

/// A switch: its output ports (each feeding one link direction) and its routing table.
#[derive(Debug)]
pub struct SwitchNode {
    /// Output ports.
    pub outs: Vec<OutPort>,
    /// The link direction each output port feeds.
    pub out_link: Vec<usize>,
    /// Output port toward each node (`u32::MAX`: unreachable); with ECMP, the lowest-numbered
    /// of the equal-cost ones.
    pub route: Vec<u32>,
    /// Equal-cost output ports toward the nodes reached over several (empty: ECMP off).
    pub ecmp: super::ecmp::EcmpTable,
    /// Fixed forwarding latency after store-and-forward, ps.
    pub latency_ps: TimePs,
    /// The pool its ports share (`net.switch_buffer = "shared"`); `None`: each port has a
    /// buffer of its own.
    pub pool: Option<super::shared_buffer::SharedPool>,
}

impl SwitchNode {
    /// The output port a frame toward node `d` takes: ECMP's pick among equal-cost ports (a
    /// draw of the switch's stream when it sprays), or the route's one.
    #[inline]
    pub fn out_toward(&mut self, d: usize, frame: &[u8]) -> u32 {
        self.out_toward_tuple(d, super::ecmp::tuple_words(frame))
    }

    /// [`SwitchNode::out_toward`] for a frame whose 5-tuple is `tuple` ([`super::ecmp::tuple_words`]).
    #[inline]
    pub fn out_toward_tuple(&mut self, d: usize, tuple: [u64; 2]) -> u32 {
        self.ecmp
            .pick_by_tuple(d, || tuple)
            .unwrap_or(self.route[d])
    }

    /// Every output port a frame toward node `d` may take.
    pub fn outs_toward(&self, d: usize) -> &[u32] {
        self.ecmp
            .outs_toward(d)
            .unwrap_or(std::slice::from_ref(&self.route[d]))
    }
}

/// Network statistics.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct NetStats {
    /// Frames dropped by switches for lack of buffer.
    pub switch_drops: u64,
    /// Element counters summed over all link directions.
    pub elements: ElementStats,
    /// Per node NIC port counters.
    pub nic_ports: Vec<PortStats>,
    /// The WAN accelerator's counters, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wan_accel: Option<super::wan_accel::AccelStats>,
    /// Flow control's counters, when `net.pfc` is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pfc: Option<super::pfc::PfcStats>,
    /// Frames the switches marked CE, when `net.ecn.enabled` is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_marks: Option<u64>,
    /// Per switch output port that queued a frame: its marks and the queue its frames
    /// joined, when `net.ecn.enabled` is on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ecn_ports: Vec<super::ecn::EcnPortStats>,
    /// Per switch output port that queued a frame: its queue's percentiles over time, when
    /// ECN, PFC, a shared buffer or the queue trace is on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<super::queue_stats::QueuePortStats>,
    /// Each switch's shared pool, when `net.switch_buffer = "shared"`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub switch_pools: Vec<super::shared_buffer::PoolStats>,
}

/// The network.
#[derive(Debug)]
pub struct Network {
    /// Each node's NIC transmit port.
    pub ports: Vec<Port>,
    /// Each node's link direction away from it.
    pub uplink: Vec<usize>,
    /// Link directions.
    pub links: Vec<LinkDir>,
    /// Switches.
    pub switches: Vec<SwitchNode>,
    /// Capture of one node's port (both directions; `Capture::node`) and of every PFC
    /// frame a switch sends, if asked for; written in time order.
    pub pcap: Option<super::capture::Capture>,
    /// First error writing the capture.
    pub pcap_error: Option<String>,
    /// Test hooks.
    pub hooks: Hooks,
    /// Priority flow control at the switches, when `net.pfc` is on.
    pub pfc: Option<super::pfc::Pfc>,
    /// ECN marking on the switches' egress queues, when `net.ecn.enabled` is on.
    pub ecn: Option<super::ecn::Ecn>,
    /// The switches' egress queues over time, when ECN, PFC, a shared buffer or the queue
    /// trace is on.
    pub queues: Option<super::queue_stats::Queues>,
    /// Data frames seen by the first switch (for the corruption hook).
    data_frames_seen: u64,
    /// ATOMIC ACKNOWLEDGEs seen by the atomic corruption hook.
    atomic_acks_seen: u64,
    /// RDMA READ requests the bad-R_Key hook has seen.
    read_requests_seen: u64,
    /// CM MADs seen by the first switch (for the drop hook).
    cm_mads_seen: u64,
    emitted: Vec<Emitted>,
    /// Pausable ports whose start is owed right after the current event instead of being
    /// an event of its own, in the order they were owed (see [`Network::run_owed_starts`]).
    pub(in crate::net) owed_starts: Vec<u32>,
    /// Elements' timers scheduled: (link, element) → the time of the pending wake event.
    wakes: std::collections::BTreeMap<(u32, u32), TimePs>,
}

impl Network {
    /// The node whose NIC transmits onto link direction `link` (its uplink), if any.
    pub(crate) fn node_on_uplink(&self, link: usize) -> Option<usize> {
        self.uplink.iter().position(|&u| u == link)
    }

    /// A network of `ports` (one per node), their `uplink`s, `links` and `switches`.
    pub fn new(
        ports: Vec<Port>,
        uplink: Vec<usize>,
        links: Vec<LinkDir>,
        switches: Vec<SwitchNode>,
    ) -> Self {
        Network {
            ports,
            uplink,
            links,
            switches,
            pcap: None,
            pcap_error: None,
            hooks: Hooks::default(),
            pfc: None,
            ecn: None,
            queues: None,
            data_frames_seen: 0,
            atomic_acks_seen: 0,
            read_requests_seen: 0,
            cm_mads_seen: 0,
            emitted: Vec::new(),
            owed_starts: Vec::new(),
            wakes: Default::default(),
        }
    }

    /// Nodes attached.
    pub fn nodes(&self) -> usize {
        self.ports.len()
    }

    /// Propagation delay from node `a` to node `b` along the switches' routes, ps (`None`
    /// when no route leads there). Serialisation, queueing and elements are not counted.
    pub fn path_delay_ps(&self, a: usize, b: usize) -> Option<TimePs> {
        let mut link = *self.uplink.get(a)?;
        let mut total: TimePs = 0;
        // A route visits each link direction at most once.
        for _ in 0..self.links.len() {
            let l = self.links.get(link)?;
            total = total.saturating_add(l.delay_ps);
            match l.to {
                End::Node(n) => return (n == b).then_some(total),
                End::Switch(s) => {
                    let sw = &self.switches[s];
                    let out = *sw.route.get(b).filter(|&&o| o != u32::MAX)?;
                    link = sw.out_link[out as usize];
                }
            }
        }
        None
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
            NetEv::SwitchIn { frame, link } => {
                self.on_switch_in(now, frame, link as usize, q, frames)
            }
            NetEv::ElementWake { link, element } => {
                self.on_element_wake(now, link as usize, element as usize, q, frames)
            }
            NetEv::PfcFrame { frame, link } => {
                self.on_pfc_frame(now, frame, link as usize, q, frames)
            }
            NetEv::PfcLeft { link, bytes } => {
                self.on_pfc_left(now, link as usize, bytes, q, frames)
            }
            NetEv::PfcEgress { link } => self.on_pfc_egress(now, link as usize, q, frames),
            NetEv::PfcLeftThenEgress { link, bytes, port } => {
                self.on_pfc_left(now, link as usize, u32::from(bytes), q, frames);
                self.on_pfc_egress(now, port as usize, q, frames);
            }
            NetEv::EcnDequeue { switch, out } => {
                self.on_ecn_dequeue(now, switch as usize, out as usize, q, frames)
            }
        }
    }

    /// Whether an element still owes frames to the network.
    pub fn holds_frames(&self) -> bool {
        self.links
            .iter()
            .flat_map(|l| l.elements.iter())
            .any(|e| e.holds_frames())
    }

    /// An element's timer event: if it is still due, the element acts; then its next wake
    /// is scheduled.
    fn on_element_wake(
        &mut self,
        now: TimePs,
        link: usize,
        element: usize,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        if self.wakes.get(&(link as u32, element as u32)) != Some(&now) {
            return;
        }
        self.wakes.remove(&(link as u32, element as u32));
        let mut emitted = std::mem::take(&mut self.emitted);
        if let Some(e) = self.links[link].elements.get_mut(element) {
            if e.wake_at().is_some_and(|t| t <= now) {
                e.on_wake(now, &mut emitted);
            }
        }
        self.send_emitted(link, now, &mut emitted, q, frames);
        self.emitted = emitted;
        self.arm_wakes(link, q);
    }

    /// Schedules a wake event for every element of `link` whose timer is earlier than the
    /// one pending (a later pending event finds itself stale and does nothing).
    fn arm_wakes(&mut self, link: usize, q: &mut EventQueue<Ev>) {
        for (i, e) in self.links[link].elements.iter().enumerate() {
            let Some(t) = e.wake_at() else { continue };
            let key = (link as u32, i as u32);
            if self.wakes.get(&key).is_some_and(|&p| p <= t) {
                continue;
            }
            self.wakes.insert(key, t);
            q.push(
                t,
                Ev::Net(NetEv::ElementWake {
                    link: link as u32,
                    element: i as u32,
                }),
            );
        }
    }

    /// Delivers frames elements of `link` emitted at `at`: back toward the sender (across
    /// the reverse direction's delay) or onward.
    fn send_emitted(
        &mut self,
        link: usize,
        at: TimePs,
        emitted: &mut Vec<Emitted>,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let (to, reverse) = (self.links[link].to, self.links[link].reverse);
        for e in emitted.drain(..) {
            let copy = frames.alloc();
            frames.buf_mut(copy).extend_from_slice(&e.bytes);
            if e.back {
                // Sent back from the far end: it crosses the reverse direction.
                let back_to = self.links[reverse].to;
                let t = at + e.delay_ps + self.links[reverse].delay_ps;
                deliver(back_to, reverse, copy, t, q);
            } else {
                deliver(to, link, copy, at + e.delay_ps, q);
            }
        }
    }

    /// Frame `frame` has left a port onto link direction `link` at `at` (its last bit):
    /// it crosses the link and its elements and arrives at the far end.
    pub(super) fn transit(
        &mut self,
        link: usize,
        frame: u32,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let l = &mut self.links[link];
        let arrive = at + l.delay_ps;
        if l.elements.is_empty() {
            deliver(l.to, link, frame, arrive, q);
            return;
        }
        let mut delay = 0;
        let mut emitted = std::mem::take(&mut self.emitted);
        for e in &mut l.elements {
            let fate = e.on_frame(arrive + delay, frames.buf_mut(frame), &mut emitted);
            if fate.drop {
                frames.release(frame);
                delay = TimePs::MAX;
                break;
            }
            delay += fate.delay_ps;
        }
        let to = l.to;
        if delay != TimePs::MAX {
            deliver(to, link, frame, arrive + delay, q);
        }
        self.send_emitted(link, arrive, &mut emitted, q, frames);
        self.emitted = emitted;
        // An element may keep its timer on the other direction of the link (the WAN
        // accelerator's inbound half times out what its outbound half kept): a frame one way
        // can set a timer the other way, where no frame may come to arm it.
        for l in [link, self.links[link].reverse] {
            if self.links[l].elements.iter().any(|e| e.wake_at().is_some()) {
                self.arm_wakes(l, q);
            }
        }
    }

    /// A frame's last bit reaches the switch at the end of link direction `from` at `now`:
    /// forward it toward its node.
    fn on_switch_in(
        &mut self,
        now: TimePs,
        frame: u32,
        from: usize,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let End::Switch(s) = self.links[from].to else {
            unreachable!("a switch's arrivals come over links that lead to it");
        };
        let nodes = self.nodes();
        let route = frames.route_fields(frame, route_fields);
        let out = route
            .dst_node
            .map(|d| d as usize)
            .filter(|&d| d < nodes)
            .map(|d| {
                if self.switches[s].ecmp.picks_by_load() {
                    self.soonest_free_toward(now, s, d)
                } else {
                    self.switches[s].out_toward_tuple(d, route.tuple)
                }
            })
            .filter(|&o| o != u32::MAX);
        let Some(out) = out else {
            frames.release(frame);
            return;
        };
        if s == 0 {
            if self.drops_cm_mad(frames.get(frame)) {
                frames.release(frame);
                return;
            }
            self.maybe_corrupt(frame, frames);
        }
        if self.pfc.is_some() {
            return self.pfc_forward(now, s, out as usize, from, frame, q, frames);
        }
        if let Some(sent) = self.forward_scheduled(now, s, out as usize, frame, frames) {
            self.leave_scheduled(s, out as usize, frame, sent, q, frames);
        }
    }

    /// Adaptive routing: of switch `s`'s equal-cost ports toward node `d`, the one that
    /// will have sent what it holds soonest after `now` (a random one among equals); the
    /// route's one where there is no choice.
    fn soonest_free_toward(&mut self, now: TimePs, s: usize, d: usize) -> u32 {
        // The table is lent out while the network reads its queues.
        let mut table = std::mem::take(&mut self.switches[s].ecmp);
        let out = table.pick_least_toward(d, |out| self.drain_ps(now, s, out as usize));
        self.switches[s].ecmp = table;
        out.unwrap_or(self.switches[s].route[d])
    }

    /// Switch `s` takes `frame`, fully received at `now`, onto output port `out`, whose
    /// departures are fixed as frames join it: within its buffer (else the frame is
    /// released), marked if ECN reads the queue at enqueue, counted in the queue's
    /// statistics. Returns its (start, end) on the wire.
    pub(super) fn forward_scheduled(
        &mut self,
        now: TimePs,
        s: usize,
        out: usize,
        frame: u32,
        frames: &mut FramePool,
    ) -> Option<(TimePs, TimePs)> {
        let len = frames.get(frame).len();
        let sw = &mut self.switches[s];
        let o = &mut sw.outs[out];
        let Some(sent) = forward_in_buffer(now, sw.latency_ps, len, o, sw.pool.as_mut()) else {
            frames.release(frame);
            return None;
        };
        if let Some(ecn) = self.ecn.as_mut() {
            let ahead = o.occupancy() - len as u64;
            ecn.mark_at(EcnMarkPoint::Enqueue, s, out, ahead, frames.buf_mut(frame));
        }
        if let Some(qs) = self.queues.as_mut() {
            let q = qs.port(s, out);
            q.joined(now, len as u64);
            q.leaves_at(sent.1, len as u64);
        }
        Some(sent)
    }

    /// `frame`, scheduled on output port `out` of switch `s` for `(start, end)`, crosses
    /// its link once its last bit leaves; when ECN reads the queue at dequeue, the frame
    /// first waits for its start ([`NetEv::EcnDequeue`]) to be judged by the queue then.
    pub(super) fn leave_scheduled(
        &mut self,
        s: usize,
        out: usize,
        frame: u32,
        (start, end): (TimePs, TimePs),
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        match self.ecn.as_mut() {
            Some(ecn) if ecn.point() == EcnMarkPoint::Dequeue => {
                ecn.await_start(s, out, frame, end);
                let (switch, out) = (s as u32, out as u32);
                q.push(start, Ev::Net(NetEv::EcnDequeue { switch, out }));
            }
            _ => {
                let link = self.switches[s].out_link[out];
                self.transit(link, frame, end, q, frames);
            }
        }
    }

    /// The next frame awaiting its start on output port `out` of switch `s` starts at
    /// `now`: it is judged by the bytes queued behind it, then crosses its link.
    fn on_ecn_dequeue(
        &mut self,
        now: TimePs,
        s: usize,
        out: usize,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let Some(ecn) = self.ecn.as_mut() else {
            return;
        };
        let Some((frame, end)) = ecn.next_start(s, out) else {
            return;
        };
        let o = &mut self.switches[s].outs[out];
        // Every frame ahead has left by its start: the port holds it and those behind it.
        o.settle(now);
        let behind = o.occupancy().saturating_sub(frames.get(frame).len() as u64);
        ecn.mark_at(EcnMarkPoint::Dequeue, s, out, behind, frames.buf_mut(frame));
        let link = self.switches[s].out_link[out];
        self.transit(link, frame, end, q, frames);
    }

    /// The drop hook: whether this frame is a CM MAD the test asks to lose.
    fn drops_cm_mad(&mut self, bytes: &[u8]) -> bool {
        if self.hooks.drop_cm_mads == [None, None] {
            return false;
        }
        let Ok(bth) = rnic_wire::peek_bth(bytes) else {
            return false;
        };
        if bth.dest_qp != rnic_wire::cm::GSI_QPN {
            return false;
        }
        self.cm_mads_seen += 1;
        self.hooks.drop_cm_mads.contains(&Some(self.cm_mads_seen))
    }

    /// The corruption hooks: each changes one field of the n-th frame of its kind (a data
    /// frame's payload byte, an atomic ACK's value, a READ request's R_Key) and fixes the
    /// ICRC, so only the check that field meets further on can notice.
    fn maybe_corrupt(&mut self, frame: u32, frames: &mut FramePool) {
        let hooks = &self.hooks;
        if hooks.corrupt_data_frame.is_none()
            && hooks.corrupt_atomic_ack.is_none()
            && hooks.bad_read_rkey.is_none()
        {
            return;
        }
        let Ok(h) = rnic_wire::peek_roce(frames.get(frame)) else {
            return;
        };
        use rnic_wire::Opcode;
        // Which byte of the frame a hook changes, and the bits it flips: each hook counts the
        // frames of its kind and changes its n-th.
        let flip = match h.bth.opcode {
            // The RETH ends the headers: virtual address, R_Key, DMA length.
            Opcode::RcReadRequest => nth(&mut self.read_requests_seen, self.hooks.bad_read_rkey)
                .then_some((h.payload_offset - 5, 0x01)),
            // The AtomicAckETH ends the headers; its last byte is the value's least
            // significant (big-endian).
            Opcode::RcAtomicAck => nth(&mut self.atomic_acks_seen, self.hooks.corrupt_atomic_ack)
                .then_some((h.payload_offset - 1, 0x04)),
            // RC payloads only: a CM MAD (to QP1) is connection setup, not data.
            op if op.has_payload()
                && h.payload_len > 0
                && h.bth.dest_qp != rnic_wire::cm::GSI_QPN =>
            {
                nth(&mut self.data_frames_seen, self.hooks.corrupt_data_frame)
                    .then_some((h.payload_offset, 0x5a))
            }
            _ => None,
        };
        if let Some((at, bits)) = flip {
            let buf = frames.buf_mut(frame);
            buf[at] ^= bits;
            let _ = rnic_wire::icrc::reseal(buf);
        }
    }

    /// Whether frames on `node`'s port are captured.
    fn captures(&self, node: usize) -> bool {
        self.pcap.as_ref().is_some_and(|c| c.node == node)
    }

    /// Captures a frame of the captured node's port (or a PFC frame), on the wire at `t`.
    pub(super) fn capture(&mut self, t: TimePs, bytes: &[u8]) {
        if let Some(c) = self.pcap.as_mut() {
            c.record(t, bytes);
        }
    }

    /// Writes the captured frames on the wire at `now` or before: the simulation is at
    /// `now`, so every frame captured from here on is on the wire at `now` or later.
    fn capture_until(&mut self, now: TimePs) {
        if let Some(c) = self.pcap.as_mut() {
            if let Err(e) = c.write_until(now) {
                self.pcap_error.get_or_insert_with(|| e.to_string());
            }
        }
    }

    /// Statistics.
    pub fn stats(&self) -> NetStats {
        let mut el = ElementStats::default();
        for e in self.links.iter().flat_map(|l| l.elements.iter()) {
            let s = e.stats();
            el.frames += s.frames;
            el.dropped += s.dropped;
            el.absorbed += s.absorbed;
            el.emitted += s.emitted;
            el.delayed += s.delayed;
            el.corrupted += s.corrupted;
        }
        let wan_accel = self
            .links
            .iter()
            .flat_map(|l| l.elements.iter())
            .find_map(|e| {
                let accel = (**e)
                    .as_any()
                    .downcast_ref::<super::wan_accel::WanAccelHalf>()?;
                accel.reported_stats()
            });
        NetStats {
            wan_accel,
            pfc: self.pfc.as_ref().map(|p| p.stats()),
            ecn_marks: self.ecn.as_ref().map(|e| e.total_marks()),
            ecn_ports: self.ecn.as_ref().map_or_else(Vec::new, |e| e.port_stats()),
            switch_drops: self
                .switches
                .iter()
                .map(|s| {
                    let own: u64 = s.outs.iter().map(|o| o.stats.drops).sum();
                    own + s.pool.as_ref().map_or(0, |p| p.stats.drops)
                })
                .sum(),
            switch_pools: self.pool_stats(),
            queues: self.queues.as_ref().map_or_else(Vec::new, |q| q.stats()),
            elements: el,
            nic_ports: self.ports.iter().map(|p| p.stats).collect(),
        }
    }
}

impl Network {
    /// When node `node`'s port starts a frame handed to it at `t`: once the port is free,
    /// and, under flow control, not inside a pause (a paused transmitter starts nothing
    /// until its pause ends).
    fn start_at(&self, node: usize, t: TimePs) -> TimePs {
        let t = t.max(self.ports[node].free_at());
        self.pfc
            .as_ref()
            .map_or(t, |pfc| pfc.hold(self.uplink[node], t))
    }
}

/// Output port `o` takes a frame of `len` bytes fully received at `now`, within its own
/// buffer or, when its switch's ports share one, within the pool's limits; returns its
/// (start, end) on the wire, or `None` if dropped (counted by the port or the pool).
pub(super) fn forward_in_buffer(
    now: TimePs,
    latency_ps: TimePs,
    len: usize,
    o: &mut OutPort,
    pool: Option<&mut super::shared_buffer::SharedPool>,
) -> Option<(TimePs, TimePs)> {
    let Some(pool) = pool else {
        return o.forward(now, latency_ps, len);
    };
    pool.settle(now);
    o.settle(now);
    if !pool.admits(o.occupancy(), len as u64) {
        pool.refused();
        return None;
    }
    let sent = o.forward(now, latency_ps, len)?;
    pool.take(len as u64);
    pool.leaves_at(sent.1, len as u64);
    Some(sent)
}

impl Network {
    /// Each shared pool's counters, with its ingresses' pause level under PFC.
    fn pool_stats(&self) -> Vec<super::shared_buffer::PoolStats> {
        let mut out = Vec::new();
        for (s, sw) in self.switches.iter().enumerate() {
            let Some(pool) = sw.pool.as_ref() else {
                continue;
            };
            let mut st = pool.stats;
            st.pfc_xoff_bytes = self.pfc.as_ref().map_or(0, |p| p.switch_xoff_bytes(s));
            out.push(st);
        }
        out
    }
}

/// Schedules the arrival of `frame` at `to`, over link direction `link`, at `t`.
fn deliver(to: End, link: usize, frame: u32, t: TimePs, q: &mut EventQueue<Ev>) {
    match to {
        End::Node(n) => q.push(
            t,
            Ev::Nic {
                node: n as u32,
                ev: NicEv::RxArrive { frame },
            },
        ),
        End::Switch(_) => q.push(
            t,
            Ev::Net(NetEv::SwitchIn {
                frame,
                link: link as u32,
            }),
        ),
    }
}

impl Wire for Network {
    fn send(
        &mut self,
        node: usize,
        frame: u32,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let len = frames.get(frame).len();
        let at = self.start_at(node, at);
        self.ports[node].forget_gone(q.now());
        let (start, end) = self.ports[node].send(at, len);
        if self.captures(node) {
            self.capture(start, frames.get(frame));
            self.capture_until(q.now());
        }
        let link = self.uplink[node];
        self.transit(link, frame, end, q, frames);
    }

    fn port_free_at(&self, node: usize, now: TimePs) -> TimePs {
        self.start_at(node, now)
    }

    fn look_again(&self, node: usize, now: TimePs) -> Option<PauseLook> {
        let t = now.max(self.ports[node].free_at());
        self.pfc.as_ref()?.look_again(self.uplink[node], t)
    }

    fn park(&mut self, node: usize, looks: ParkedLooks) {
        if let Some(pfc) = self.pfc.as_mut() {
            pfc.park(self.uplink[node], looks);
        }
    }

    fn received(&mut self, node: usize, frame: u32, at: TimePs, frames: &FramePool) {
        if self.captures(node) {
            self.capture(at, frames.get(frame));
            self.capture_until(at);
        }
    }

    fn pause_peer(
        &mut self,
        node: usize,
        quanta: u16,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) -> TimePs {
        if self.pfc.is_none() {
            return 0;
        }
        self.nic_pause_peer(at, node, quanta, q, frames)
    }
}

impl crate::stats::Report for Network {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats());
    }
}

/// What a switch routes `frame` by ([`RouteFields`]), read from its bytes.
fn route_fields(frame: &[u8]) -> RouteFields {
    RouteFields {
        dst_node: frame_dst_node(frame).and_then(|d| u32::try_from(d).ok()),
        tuple: super::ecmp::tuple_words(frame),
    }
}

/// Counts one more frame of a hook's kind in `seen`; whether it is the hook's `target`-th.
fn nth(seen: &mut u64, target: Option<u64>) -> bool {
    *seen += 1;
    target == Some(*seen)
}
