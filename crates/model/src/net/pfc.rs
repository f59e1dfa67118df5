//! Priority flow control (IEEE 802.1Qbb, one priority: the RoCE traffic class
//! `net.pfc_priority`), switched by `net.pfc`.
//!
//! Why: RoCEv2 fabrics are run lossless. Without flow control an incast (several clients
//! writing into one server port) overflows a switch buffer, and go-back-N plus perftest's
//! 67 ms ACK timeout turn the drops into a collapse that a PFC fabric never shows.
//!
//! The model, hop by hop:
//! - Every switch accounts, per ingress port, the bytes that came in over it and have not
//!   left the switch yet. When a frame takes an ingress above `net.pfc_xoff_bytes`, the
//!   switch sends a PFC frame (XOFF: the RoCE priority's pause time 0xFFFF quanta) up that
//!   link; when the last bit of enough of them has left an output port to bring the ingress
//!   down to `net.pfc_xon_bytes`, the XON (pause time 0). Both are real 60-byte frames
//!   ([`rnic_wire::pfc`]): sent at once (ahead of any data queued on that port, as switches
//!   send them), written to the capture when sent, they cross the link (wire time and
//!   propagation delay) and the receiver parses them and acts on the pause time they carry.
//! - A NIC's transmitter, paused, sends the frames its port already holds and starts no
//!   other until the XON lands or the pause time runs out (65535 quanta of 512 bit times:
//!   335 µs at 100 Gb/s; a switch still above XON re-sends the XOFF once half of that has
//!   passed). Its TX engine looks again exactly when the XON lands if the switch's
//!   departures foretell it (every frame of that ingress has a known departure,
//!   as behind ports toward NICs), else it looks again every pause quantum (5.12 ns at
//!   100 Gb/s) and resumes within a quantum of it.
//! - A switch's output port toward another switch is a pausable queue: frames wait in it
//!   and leave one at a time when the port is free and not paused, so a pause from the
//!   switch downstream holds them; the bytes they hold then back up into this switch's
//!   ingress accounting, which pauses its own senders: backpressure hop by hop to the NICs.
//!   Ports toward NICs are never paused (NICs send no PFC) and keep their precomputed
//!   departures.
//!
//! Limits: the switch buffer (`net.switch_buffer_bytes`) must hold the in-flight headroom
//! above XOFF, as a real switch's headroom buffer does. PFC frames cross their link clean
//! (no link element sees them), and go out at once rather than after the frame the port is
//! sending. A paused NIC's counted pause runs to the XON, or to the end of its pause time
//! if the run ends first. Deadlock from a cyclic buffer
//! dependency (a routing loop, or routes that turn down and up again) is neither modelled
//! away nor detected: on the shipped topologies (star, back-to-back, trees and leaf–spine
//! with shortest-path routes) every route climbs then descends, so no cycle can form.

use std::collections::VecDeque;

use rnic_sim::{EventQueue, TimePs};
use rnic_wire::pfc::{Packet, PfcRepr, QUANTUM_BITS, XOFF_QUANTA};

use super::graph::{End, Network};
use crate::event::{Ev, FramePool, NetEv};
use crate::nic::pcie::ser_ps;

/// Thresholds of [`Pfc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcParams {
    /// An ingress above this many queued bytes pauses its sender.
    pub xoff_bytes: u64,
    /// A paused ingress resumes its sender once drained to this many bytes.
    pub xon_bytes: u64,
    /// The priority RoCE traffic is mapped to (the PFC frames' class).
    pub priority: u8,
    /// How far ahead of its port a NIC's TX engine hands frames over, bytes (a paused
    /// NIC's next look must come after its pause is seen, not inside this lead).
    pub nic_lead_bytes: u64,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PfcStats {
    /// Pause episodes (an XOFF sent to a sender not paused already).
    pub pauses: u64,
    /// Of those, the ones sent to another switch's port.
    pub switch_pauses: u64,
    /// PFC frames sent: XOFFs, their refreshes and XONs.
    pub frames: u64,
    /// Time NIC transmitters spent paused, summed over NICs, ps.
    pub paused_ps: u64,
    /// Time switch ports spent paused, summed over ports, ps.
    pub switch_paused_ps: u64,
    /// Most bytes one ingress port had queued at once.
    pub max_ingress_bytes: u64,
}

/// Who transmits onto a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tx {
    /// A node's NIC.
    Nic,
    /// Output port `out` of switch `switch`.
    Switch { switch: usize, out: usize },
}

/// One ingress port of a switch.
#[derive(Debug, Clone, Default)]
struct Ingress {
    /// Bytes it brought that are still in the switch.
    bytes: u64,
    /// When the XOFF standing on it was (last) sent; `None` while its sender may send.
    xoff_sent: Option<TimePs>,
    /// Of its frames, those whose departure is known: (their last bit leaves, bytes).
    known: Vec<(TimePs, u64)>,
    /// Bytes of its frames still waiting in a pausable port (departure not known yet).
    unknown_bytes: u64,
    /// When the last XON sent lands on the sender.
    xon_lands: TimePs,
}

impl Ingress {
    /// The departure that will bring it down to `xon` bytes, if every departure is known
    /// (nothing can arrive meanwhile: its sender is paused, apart from frames already on
    /// the wire, which can only make it later).
    fn drains_to(&self, xon: u64) -> Option<TimePs> {
        if self.unknown_bytes > 0 {
            return None;
        }
        let mut left = self.bytes;
        let mut known = self.known.clone();
        known.sort_unstable();
        known.into_iter().find_map(|(t, b)| {
            left -= b;
            (left <= xon).then_some(t)
        })
    }
}

/// A pausable output port's queue (ports toward another switch).
#[derive(Debug, Clone, Default)]
struct Egress {
    /// Waiting frames: (frame, bytes, the ingress it came in over, when it may start).
    waiting: VecDeque<(u32, u32, u32, TimePs)>,
    /// Frames on the wire: (their last bit leaves, bytes).
    sending: VecDeque<(TimePs, u64)>,
    /// Bytes waiting or on the wire (they hold the port's buffer).
    bytes: u64,
    /// The time of the pending [`NetEv::PfcEgress`] event, if one is pending.
    kick_at: Option<TimePs>,
}

/// Flow control of every switch port, and the pauses it puts on transmitters.
#[derive(Debug, Clone)]
pub struct Pfc {
    p: PfcParams,
    /// Per link direction: its transmitter.
    tx: Vec<Tx>,
    /// Per link direction: one pause quantum at its transmitter's rate, ps.
    quantum_ps: Vec<TimePs>,
    /// Per link direction: the lead of its NIC's TX engine at its rate, ps (0: a switch).
    lead_ps: Vec<TimePs>,
    /// Per link direction into a switch: a PFC frame's time from that switch back to the
    /// link's transmitter (its wire time and the propagation delay), ps.
    back_ps: Vec<TimePs>,
    /// Per link direction leading into a switch: that ingress port.
    ingress: Vec<Ingress>,
    /// Per link direction: the pause its transmitter holds, `[from, until)`.
    pause: Vec<Option<(TimePs, TimePs)>>,
    /// Per link direction fed by a switch toward a switch: the port's queue.
    egress: Vec<Egress>,
    /// Counters; the paused times hold finished pauses only (see [`Pfc::stats`]).
    stats: PfcStats,
}

impl Pfc {
    /// Flow control over the links and switches of `net`.
    pub fn new(p: PfcParams, net: &Network) -> Pfc {
        let links = net.links.len();
        let mut tx = vec![Tx::Nic; links];
        let mut quantum_ps = vec![0; links];
        let mut lead_ps = vec![0; links];
        for (n, &l) in net.uplink.iter().enumerate() {
            quantum_ps[l] = ser_ps(QUANTUM_BITS / 8, net.ports[n].mbps());
            lead_ps[l] = ser_ps(p.nic_lead_bytes, net.ports[n].mbps());
        }
        for (s, sw) in net.switches.iter().enumerate() {
            for (out, &l) in sw.out_link.iter().enumerate() {
                tx[l] = Tx::Switch { switch: s, out };
                quantum_ps[l] = ser_ps(QUANTUM_BITS / 8, sw.outs[out].port.mbps());
            }
        }
        let back_ps = (0..links)
            .map(|l| {
                let r = net.links[l].reverse;
                match tx[r] {
                    Tx::Switch { switch, out } => {
                        let port = &net.switches[switch].outs[out].port;
                        port.wire_time(rnic_wire::pfc::FRAME_LEN) + net.links[r].delay_ps
                    }
                    Tx::Nic => 0,
                }
            })
            .collect();
        Pfc {
            p,
            tx,
            quantum_ps,
            lead_ps,
            back_ps,
            ingress: vec![Ingress::default(); links],
            pause: vec![None; links],
            egress: vec![Egress::default(); links],
            stats: PfcStats::default(),
        }
    }

    /// The time the NIC feeding link direction `link` may start a frame it would start at
    /// `t`: `t`, or, inside a pause, the earliest the pause can end: its pause time running
    /// out, or the XON landing. When the XON is on its way, or the switch's ingress will
    /// drain to XON at departures already known, that is its landing time; otherwise the
    /// NIC's TX engine, running its lead ahead, looks again one quantum later.
    pub fn hold(&self, link: usize, t: TimePs) -> TimePs {
        match self.pause.get(link).copied().flatten() {
            Some((from, until)) if (from..until).contains(&t) => {
                let ing = &self.ingress[link];
                let xon = match ing.xoff_sent {
                    None => Some(ing.xon_lands),
                    Some(_) => ing
                        .drains_to(self.p.xon_bytes)
                        .map(|d| d + self.back_ps[link]),
                };
                let look = t + self.quantum_ps[link].max(1) + self.lead_ps[link];
                until.min(xon.unwrap_or(look)).max(t)
            }
            _ => t,
        }
    }

    /// Whether the transmitter feeding `link` is paused at `t`, and until when at most.
    fn paused_until(&self, link: usize, t: TimePs) -> Option<TimePs> {
        match self.pause[link] {
            Some((from, until)) if (from..until).contains(&t) => Some(until),
            _ => None,
        }
    }

    /// A PFC frame carrying `quanta` for the RoCE priority lands at `now` on the
    /// transmitter feeding `link`: it pauses it that long from now (0: resumes it).
    fn on_pause_time(&mut self, now: TimePs, link: usize, quanta: u16) {
        let until = now + u64::from(quanta) * self.quantum_ps[link];
        let open = self.pause[link].filter(|&(_, u)| u > now);
        let from = match open {
            Some((from, _)) => from,
            None => {
                self.finish(link);
                now
            }
        };
        self.pause[link] = Some((from, until.max(from)));
    }

    /// Moves the finished pause of `link` into the counters.
    fn finish(&mut self, link: usize) {
        if let Some(pause) = self.pause[link].take() {
            add_pause(&mut self.stats, self.tx[link], pause);
        }
    }

    /// The XOFF's pause time at the rate of `link`'s transmitter, ps.
    fn xoff_ps(&self, link: usize) -> TimePs {
        u64::from(XOFF_QUANTA) * self.quantum_ps[link]
    }

    /// `bytes` more came in over ingress `link` at `now`. Returns the pause time of the PFC
    /// frame to send up the link, if one is due: a first XOFF, or the refresh of one sent
    /// half its pause time ago.
    /// `leaves`: when its last bit leaves the switch, if known (not in a pausable port).
    fn on_queued(
        &mut self,
        now: TimePs,
        link: usize,
        bytes: u64,
        leaves: Option<TimePs>,
    ) -> Option<u16> {
        let ing = &mut self.ingress[link];
        ing.bytes += bytes;
        match leaves {
            Some(t) => ing.known.push((t, bytes)),
            None => ing.unknown_bytes += bytes,
        }
        self.stats.max_ingress_bytes = self.stats.max_ingress_bytes.max(ing.bytes);
        self.xoff_due(now, link)
    }

    fn xoff_due(&mut self, now: TimePs, link: usize) -> Option<u16> {
        let refresh_ps = self.xoff_ps(link) / 2;
        let ing = &mut self.ingress[link];
        match ing.xoff_sent {
            None if ing.bytes > self.p.xoff_bytes => {
                ing.xoff_sent = Some(now);
                self.stats.pauses += 1;
                if matches!(self.tx[link], Tx::Switch { .. }) {
                    self.stats.switch_pauses += 1;
                }
                Some(XOFF_QUANTA)
            }
            Some(t) if now >= t + refresh_ps && ing.bytes > self.p.xon_bytes => {
                ing.xoff_sent = Some(now);
                Some(XOFF_QUANTA)
            }
            _ => None,
        }
    }

    /// `bytes` that came in over ingress `link` left the switch at `now`. Returns the pause
    /// time of the PFC frame to send up the link, if one is due (the XON, or a refresh).
    fn on_left(&mut self, now: TimePs, link: usize, bytes: u64) -> Option<u16> {
        let ing = &mut self.ingress[link];
        ing.bytes -= bytes;
        if let Some(i) = ing.known.iter().position(|&k| k == (now, bytes)) {
            ing.known.swap_remove(i);
        }
        if ing.xoff_sent.is_some() && ing.bytes <= self.p.xon_bytes {
            ing.xoff_sent = None;
            ing.xon_lands = now + self.back_ps[link];
            return Some(0);
        }
        self.xoff_due(now, link)
    }

    /// A frame of `bytes` from ingress `link`, held in a pausable port, starts at last: its
    /// last bit leaves at `leaves`.
    fn on_started(&mut self, link: usize, leaves: TimePs, bytes: u64) {
        let ing = &mut self.ingress[link];
        ing.unknown_bytes -= bytes;
        ing.known.push((leaves, bytes));
    }

    /// Counters, the pauses still standing included.
    pub fn stats(&self) -> PfcStats {
        let mut s = self.stats;
        for (l, p) in self.pause.iter().enumerate() {
            if let Some(pause) = *p {
                add_pause(&mut s, self.tx[l], pause);
            }
        }
        s
    }
}

/// Adds one pause `(from, until)` of a transmitter of kind `tx` to the counter its kind keeps.
fn add_pause(stats: &mut PfcStats, tx: Tx, (from, until): (TimePs, TimePs)) {
    match tx {
        Tx::Nic => stats.paused_ps += until - from,
        Tx::Switch { .. } => stats.switch_paused_ps += until - from,
    }
}

/// The MAC address of the switch port sending on link direction `link`: locally
/// administered, naming the link direction.
fn port_mac(link: usize) -> [u8; 6] {
    let l = (link as u32).to_be_bytes();
    [0x02, 0x50, l[0], l[1], l[2], l[3]]
}

impl Network {
    fn pfc_mut(&mut self) -> &mut Pfc {
        self.pfc
            .as_mut()
            .expect("flow control events come only with net.pfc")
    }

    /// Switch `s` forwards `frame`, fully received over ingress `from` at `now`, on its
    /// output port `out`, under flow control.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pfc_forward(
        &mut self,
        now: TimePs,
        s: usize,
        out: usize,
        from: usize,
        frame: u32,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let len = frames.get(frame).len();
        let link = self.switches[s].out_link[out];
        let latency_ps = self.switches[s].latency_ps;
        if matches!(self.links[link].to, End::Switch(_)) {
            // Toward another switch: the pausable queue.
            let o = &mut self.switches[s].outs[out];
            let pfc = self.pfc.as_mut().expect("pfc_forward runs under net.pfc");
            let eg = &mut pfc.egress[link];
            while eg.sending.front().is_some_and(|&(end, _)| end <= now) {
                let (_, b) = eg.sending.pop_front().unwrap_or_default();
                eg.bytes -= b;
            }
            if eg.bytes + len as u64 > o.buffer_bytes() {
                o.stats.drops += 1;
                frames.release(frame);
                return;
            }
            eg.bytes += len as u64;
            o.stats.max_occupancy = o.stats.max_occupancy.max(eg.bytes);
            eg.waiting
                .push_back((frame, len as u32, from as u32, now + latency_ps));
            self.pfc_kick(link, now + latency_ps, q);
            if let Some(quanta) = self.pfc_mut().on_queued(now, from, len as u64, None) {
                self.send_pfc(now, from, quanta, q, frames);
            }
        } else {
            let sw = &mut self.switches[s];
            let Some((_, end)) = sw.outs[out].forward(now, latency_ps, len) else {
                frames.release(frame);
                return;
            };
            self.pfc_left_at(end, from, len, q);
            self.transit(link, frame, end, q, frames);
            if let Some(quanta) = self.pfc_mut().on_queued(now, from, len as u64, Some(end)) {
                self.send_pfc(now, from, quanta, q, frames);
            }
        }
    }

    /// Schedules the departure of a frame from ingress `from` at `end`.
    fn pfc_left_at(&mut self, end: TimePs, from: usize, len: usize, q: &mut EventQueue<Ev>) {
        q.push(
            end,
            Ev::Net(NetEv::PfcLeft {
                link: from as u32,
                bytes: len as u32,
            }),
        );
    }

    /// Makes the pausable port feeding `link` look at its queue at `at` (or earlier, if it
    /// will already).
    fn pfc_kick(&mut self, link: usize, at: TimePs, q: &mut EventQueue<Ev>) {
        let eg = &mut self.pfc_mut().egress[link];
        if eg.kick_at.is_some_and(|k| k <= at) {
            return;
        }
        eg.kick_at = Some(at);
        q.push(at, Ev::Net(NetEv::PfcEgress { link: link as u32 }));
    }

    /// The pausable port feeding `link` starts its next frame, if it may at `now`.
    pub(super) fn on_pfc_egress(
        &mut self,
        now: TimePs,
        link: usize,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let pfc = self.pfc_mut();
        if pfc.egress[link].kick_at != Some(now) {
            return; // a later kick replaced this one
        }
        pfc.egress[link].kick_at = None;
        let Some(&(frame, len, from, ready)) = pfc.egress[link].waiting.front() else {
            return;
        };
        let Tx::Switch { switch, out } = pfc.tx[link] else {
            unreachable!("pausable ports are switch ports");
        };
        if let Some(until) = pfc.paused_until(link, now) {
            // The XON's arrival kicks earlier; else the pause time runs out.
            return self.pfc_kick(link, until, q);
        }
        let port = &mut self.switches[switch].outs[out].port;
        let at = ready.max(port.free_at());
        if at > now {
            return self.pfc_kick(link, at, q);
        }
        let (_, end) = port.send(now, len as usize);
        let pfc = self.pfc_mut();
        pfc.on_started(from as usize, end, u64::from(len));
        let eg = &mut pfc.egress[link];
        eg.waiting.pop_front();
        eg.sending.push_back((end, u64::from(len)));
        let more = !eg.waiting.is_empty();
        self.pfc_left_at(end, from as usize, len as usize, q);
        self.transit(link, frame, end, q, frames);
        if more {
            self.pfc_kick(link, end, q);
        }
    }

    /// Bytes from ingress `link` left their switch at `now`.
    pub(super) fn on_pfc_left(
        &mut self,
        now: TimePs,
        link: usize,
        bytes: u32,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        if let Some(quanta) = self.pfc_mut().on_left(now, link, u64::from(bytes)) {
            self.send_pfc(now, link, quanta, q, frames);
        }
    }

    /// The switch at the end of ingress `link` sends a PFC frame with pause time `quanta`
    /// for the RoCE priority back up the link at `now`.
    fn send_pfc(
        &mut self,
        now: TimePs,
        link: usize,
        quanta: u16,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let back = self.links[link].reverse;
        let pfc = self.pfc_mut();
        pfc.stats.frames += 1;
        let (priority, tx) = (pfc.p.priority, pfc.tx[back]);
        let repr = if quanta == 0 {
            PfcRepr::xon(port_mac(back), priority)
        } else {
            PfcRepr::xoff(port_mac(back), priority, quanta)
        };
        let bytes = repr.to_bytes();
        self.capture(now, &bytes);
        let Tx::Switch { switch, out } = tx else {
            unreachable!("PFC frames are sent by switches");
        };
        let wire_ps = self.switches[switch].outs[out].port.wire_time(bytes.len());
        let f = frames.alloc();
        frames.buf_mut(f).extend_from_slice(&bytes);
        let t = now + wire_ps + self.links[back].delay_ps;
        q.push(
            t,
            Ev::Net(NetEv::PfcFrame {
                frame: f,
                link: back as u32,
            }),
        );
    }

    /// A PFC frame's last bit reaches the end of link direction `link` at `now`: the
    /// receiver parses it and pauses (or resumes) its transmitter on the way back.
    pub(super) fn on_pfc_frame(
        &mut self,
        now: TimePs,
        frame: u32,
        link: usize,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let parsed = Packet::new_checked(frames.get(frame))
            .and_then(|p| PfcRepr::parse(&p))
            .map(|r| r.quanta);
        frames.release(frame);
        let data_link = self.links[link].reverse;
        let pfc = self.pfc_mut();
        // Priorities other than RoCE's carry no traffic here: their times change nothing.
        let Ok(Some(quanta)) = parsed.map(|q| q[usize::from(pfc.p.priority)]) else {
            return;
        };
        pfc.on_pause_time(now, data_link, quanta);
        if matches!(pfc.tx[data_link], Tx::Switch { .. }) {
            self.pfc_kick(data_link, now, q);
        }
    }
}

/// A cycle of link directions whose buffers can wait on each other under PFC, if the
/// routes of `net` form one: a frame that came in over each one can be forwarded on the
/// next, and the last leads back to the first. Then every switch in it can be paused by
/// the next at once: the cyclic buffer dependency a PFC deadlock needs. `None`: no PFC
/// deadlock is possible whatever the traffic.
pub fn buffer_dependency_cycle(net: &Network) -> Option<Vec<usize>> {
    let links = net.links.len();
    let mut next: Vec<std::collections::BTreeSet<usize>> = vec![Default::default(); links];
    let nodes = net.nodes();
    for a in 0..nodes {
        for d in (0..nodes).filter(|&d| d != a) {
            // Follow a frame from a to d through the routing tables, at most once per link.
            let mut link = net.uplink[a];
            for _ in 0..links {
                let End::Switch(s) = net.links[link].to else {
                    break;
                };
                let out = net.switches[s].route[d];
                if out == u32::MAX {
                    break;
                }
                let on = net.switches[s].out_link[out as usize];
                next[link].insert(on);
                link = on;
            }
        }
    }
    // Depth-first search for a back edge: 0 unseen, 1 on the path, 2 done.
    let mut state = vec![0u8; links];
    for start in 0..links {
        if state[start] != 0 {
            continue;
        }
        let mut path = vec![start];
        let mut iters = vec![next[start].iter()];
        state[start] = 1;
        while let Some(it) = iters.last_mut() {
            match it.next().copied() {
                Some(n) if state[n] == 1 => {
                    let from = path.iter().position(|&l| l == n).unwrap_or(0);
                    return Some(path[from..].to_vec());
                }
                Some(n) if state[n] == 0 => {
                    state[n] = 1;
                    path.push(n);
                    iters.push(next[n].iter());
                }
                Some(_) => {}
                None => {
                    iters.pop();
                    if let Some(l) = path.pop() {
                        state[l] = 2;
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: u64 = 1024;

    /// Flow control over two link directions (0 into a switch from a NIC, 1 back), quantum
    /// 5 ps, without a network.
    fn pfc() -> Pfc {
        let p = PfcParams {
            xoff_bytes: 8 * KB,
            xon_bytes: 4 * KB,
            priority: 3,
            nic_lead_bytes: 0,
        };
        Pfc {
            p,
            tx: vec![Tx::Nic, Tx::Switch { switch: 0, out: 0 }],
            quantum_ps: vec![5, 5],
            lead_ps: vec![0, 0],
            back_ps: vec![7, 0],
            ingress: vec![Ingress::default(); 2],
            pause: vec![None; 2],
            egress: vec![Egress::default(); 2],
            stats: PfcStats::default(),
        }
    }

    #[test]
    fn xoff_above_the_threshold_xon_at_the_lower_one() {
        let mut f = pfc();
        // Four 4 KB frames, leaving at 10, 11, 12, 13.
        assert_eq!(f.on_queued(0, 0, 4 * KB, Some(10)), None);
        assert_eq!(
            f.on_queued(1, 0, 4 * KB, Some(11)),
            None,
            "8 KB is not above XOFF"
        );
        assert_eq!(f.on_queued(2, 0, 4 * KB, Some(12)), Some(XOFF_QUANTA));
        assert_eq!(f.on_queued(3, 0, 4 * KB, Some(13)), None, "the XOFF stands");
        assert_eq!(f.stats().pauses, 1);
        assert_eq!(f.stats().max_ingress_bytes, 16 * KB);
        // Known departures: down to 4 KB when the third leaves, at 12.
        assert_eq!(f.ingress[0].drains_to(4 * KB), Some(12));
        assert_eq!(f.on_left(10, 0, 4 * KB), None);
        assert_eq!(f.on_left(11, 0, 4 * KB), None, "8 KB is above XON");
        assert_eq!(f.on_left(12, 0, 4 * KB), Some(0), "4 KB: the XON");
        assert_eq!(f.ingress[0].xon_lands, 12 + 7);
        assert_eq!(f.on_left(13, 0, 4 * KB), None);
        assert!(f.ingress[0].known.is_empty());
        assert_eq!(f.on_queued(14, 0, 12 * KB, Some(20)), Some(XOFF_QUANTA));
        assert_eq!(f.stats().pauses, 2);
    }

    #[test]
    fn a_frame_in_a_pausable_port_has_no_known_departure_until_it_starts() {
        let mut f = pfc();
        f.on_queued(0, 0, 8 * KB, Some(10));
        f.on_queued(1, 0, 4 * KB, None);
        assert_eq!(f.ingress[0].drains_to(4 * KB), None);
        f.on_started(0, 30, 4 * KB);
        assert_eq!(f.ingress[0].drains_to(4 * KB), Some(10));
        assert_eq!(f.ingress[0].drains_to(0), Some(30));
    }

    #[test]
    fn a_standing_xoff_is_refreshed_before_it_runs_out() {
        let mut f = pfc();
        assert_eq!(f.on_queued(0, 0, 12 * KB, None), Some(XOFF_QUANTA));
        let half = u64::from(XOFF_QUANTA) * 5 / 2;
        assert_eq!(f.on_queued(half - 1, 0, 1, None), None);
        assert_eq!(f.on_queued(half, 0, 1, None), Some(XOFF_QUANTA));
        assert_eq!(f.stats().pauses, 1, "a refresh is no new pause");
    }

    #[test]
    fn a_paused_nic_waits_for_the_xon_it_can_foresee() {
        let mut f = pfc();
        f.on_queued(0, 0, 12 * KB, Some(50));
        f.on_queued(0, 0, 4 * KB, Some(60));
        f.on_pause_time(20, 0, XOFF_QUANTA);
        // Drained to 4 KB at 50; the XON takes 7 ps back.
        assert_eq!(f.hold(0, 25), 57);
        f.on_left(50, 0, 12 * KB);
        assert_eq!(f.hold(0, 51), 57, "the XON is on its way");
        // With a departure unknown, the NIC looks again a quantum later.
        let mut f = pfc();
        f.on_queued(0, 0, 12 * KB, None);
        f.on_pause_time(20, 0, XOFF_QUANTA);
        assert_eq!(f.hold(0, 25), 30);
    }

    #[test]
    fn a_pause_holds_the_transmitter_until_the_xon_or_its_time() {
        let mut f = pfc();
        // The switch's ingress holds bytes of unknown departure: no XON can be foreseen.
        f.on_queued(0, 0, 12 * KB, None);
        f.on_pause_time(100, 0, 10); // 10 quanta of 5 ps
        assert_eq!(f.hold(0, 99), 99, "before it lands");
        assert_eq!(f.hold(0, 100), 105, "looks again a quantum later");
        assert_eq!(f.hold(0, 148), 150, "runs out at 150");
        assert_eq!(f.hold(0, 150), 150);
        assert_eq!(f.stats().paused_ps, 50);
        // A new XOFF while paused extends it; the XON ends it.
        f.on_pause_time(200, 0, 10);
        f.on_pause_time(240, 0, 10);
        assert_eq!(f.paused_until(0, 240), Some(290));
        f.on_pause_time(260, 0, 0);
        assert_eq!(f.hold(0, 260), 260);
        assert_eq!(f.stats().paused_ps, 50 + 60);
        assert_eq!(f.stats().switch_paused_ps, 0);
        f.on_pause_time(300, 1, 2);
        assert_eq!(f.stats().switch_paused_ps, 10);
    }

    #[test]
    fn port_macs_are_local_and_distinct() {
        assert_ne!(port_mac(1), port_mac(2));
        assert_eq!(port_mac(1)[0] & 0x03, 0x02, "locally administered unicast");
    }
}
