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
//!   ([`rnic_wire::pfc`]): sent ahead of any data queued on that port, as switches send
//!   them, but only once the frame the port is serializing has left (IEEE 802.3 Annex 31B,
//!   802.1Qbb: a frame is never cut; [`super::port::Port::frame_on_wire_ends`]), written to
//!   the capture when they start, they cross the link (wire time and propagation delay) and
//!   the receiver parses them and acts on the pause time they carry.
//! - A NIC's transmitter, paused, sends the frames its port already holds and starts no
//!   other until the XON lands or the pause time runs out (65535 quanta of 512 bit times:
//!   335 µs at 100 Gb/s; a switch still above XON re-sends the XOFF once half of that has
//!   passed). Its TX engine looks again exactly when the XON lands if the switch's
//!   departures foretell it (every frame of that ingress has a known departure,
//!   as behind ports toward NICs), else it would look again every pause quantum (5.12 ns
//!   at 100 Gb/s) and resume within a quantum of it: it parks instead
//!   ([`crate::nic::cx::pause_looks`]), and is woken, at the look that would have seen it,
//!   only when its pause or the XON's outlook changes ([`Pfc::park`]).
//! - A switch's output port toward another switch is a pausable queue: frames wait in it
//!   and leave one at a time when the port is free and not paused, so a pause from the
//!   switch downstream holds them; the bytes they hold then back up into this switch's
//!   ingress accounting, which pauses its own senders: backpressure hop by hop to the NICs.
//! - A NIC whose receive buffer fills ([`crate::nic::rx_buffer`]: its link brings data
//!   faster than PCIe takes it to the host) sends its link peer the same XOFF, and the XON
//!   once drained to `nic.rx_pfc_xon_bytes`. A switch port toward a NIC keeps precomputed
//!   departures while nothing can pause it; it becomes a pausable queue like the ports
//!   toward switches from the start when its link is faster than the NIC's PCIe link carries
//!   payload (`pcie.gbps` less the TLP headers), else from the first XOFF its NIC sends
//!   (the frames it had already scheduled still arrive: the NIC's headroom takes them). A
//!   NIC's own transmitter, paused by the NIC at the other end of a back-to-back cable,
//!   looks again every pause quantum (not parked: that NIC's XON is decided by events
//!   queued as late as the look that sees it, so a parked look could not be ordered).
//!
//! Limits: the switch buffer (`net.switch_buffer_bytes`) must hold the in-flight headroom
//! above XOFF, as a real switch's headroom buffer does. PFC frames cross their link clean
//! (no link element sees them), and their 84 bytes of wire time do not delay the data
//! frames queued behind them (whose departures are already scheduled). A counted pause runs to the XON or the end of its pause time, and a pause
//! still standing when the run ends is counted up to the run's end. Deadlock from a cyclic buffer
//! dependency (a routing loop, or routes that turn down and up again) is not modelled
//! away; its possibility is detected
//! ([`crate::net::pfc_deadlock::buffer_dependency_cycle`], counted in `buffer_cycle_links`,
//! and the run notes it): on the shipped topologies (star, back-to-back, trees and
//! leaf–spine with shortest-path routes) every route climbs then descends, so no cycle can
//! form.
//!
//! This module is the flow-control state of every link direction and knows the network
//! only as the plain [`PfcLink`] values the network describes its links with; the network's
//! side (forwarding under flow control, the PFC frames sent and landing) is
//! `net/pfc_ports.rs`, an `impl Network`, so the network holds this state without either
//! importing the other both ways.

use std::collections::VecDeque;

use rnic_sim::TimePs;
use rnic_wire::pfc::{QUANTUM_BITS, XOFF_QUANTA};

use rnic_sim::ser_ps;

use crate::nic::cx::pause_looks::{ParkedLooks, PauseLook};

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
    /// Pause episodes (an XOFF sent to a sender not paused already), by switches and by
    /// NICs whose receive buffer filled.
    pub pauses: u64,
    /// Of those, the ones sent to a switch's port (by the next switch, or by the NIC it
    /// feeds).
    pub switch_pauses: u64,
    /// PFC frames sent, by switches and by NICs whose receive buffer filled: XOFFs, their
    /// refreshes and XONs.
    pub frames: u64,
    /// Time NIC transmitters spent paused, summed over NICs, ps.
    pub paused_ps: u64,
    /// Time switch ports spent paused (by the next switch, or by the NIC they feed), summed
    /// over ports, ps.
    pub switch_paused_ps: u64,
    /// Most bytes one ingress port had queued at once.
    pub max_ingress_bytes: u64,
    /// Link directions in a cyclic buffer dependency of the routes
    /// ([`crate::net::pfc_deadlock::buffer_dependency_cycle`]), 0 when there is none:
    /// pauses could then wait on each other round the cycle (a PFC deadlock), which traffic
    /// may or may not trigger.
    pub buffer_cycle_links: u64,
}

/// Who transmits onto a link direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tx {
    /// A node's NIC.
    Nic,
    /// Output port `out` of switch `switch`.
    Switch { switch: usize, out: usize },
}

/// One link direction as flow control sees it, described by the network that holds both
/// (`Network::pfc_links`), so that flow control needs nothing of the network's types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcLink {
    /// Who transmits onto it.
    pub tx: Tx,
    /// Its transmitter's rate, Mb/s, when a port transmits onto it (a node's uplink, a
    /// switch's output port).
    pub tx_mbps: Option<u64>,
    /// A PFC frame's time from the far end of the link direction back to its transmitter
    /// (the reverse direction's wire time and propagation delay), ps; 0 when no port sends
    /// it.
    pub back_ps: TimePs,
}

/// One ingress port of a switch.
#[derive(Debug, Clone, Default)]
struct Ingress {
    /// Bytes it brought that are still in the switch.
    bytes: u64,
    /// When the XOFF standing on it was (last) sent; `None` while its sender may send.
    xoff_sent: Option<TimePs>,
    /// Of its frames, those whose departure is known: (their last bit leaves, bytes), in
    /// departure order (kept so, not sorted on each look).
    known: Vec<(TimePs, u64)>,
    /// Bytes of its frames still waiting in a pausable port (departure not known yet).
    unknown_bytes: u64,
    /// When the last XON sent lands on the sender.
    xon_lands: TimePs,
}

impl Ingress {
    /// A frame of `bytes` whose last bit leaves at `leaves`, in departure order (departures
    /// come mostly in order, so this is mostly a push).
    fn add_known(&mut self, leaves: TimePs, bytes: u64) {
        let i = self.known.partition_point(|&k| k <= (leaves, bytes));
        self.known.insert(i, (leaves, bytes));
    }

    /// The departure that will bring it down to `xon` bytes, if every departure is known
    /// (nothing can arrive meanwhile: its sender is paused, apart from frames already on
    /// the wire, which can only make it later).
    fn drains_to(&self, xon: u64) -> Option<TimePs> {
        if self.unknown_bytes > 0 {
            return None;
        }
        let mut left = self.bytes;
        self.known.iter().find_map(|&(t, b)| {
            left -= b;
            (left <= xon).then_some(t)
        })
    }
}

/// A pausable output port's queue (ports toward another switch), which the network's
/// forwarding under flow control (`net/pfc_ports.rs`) fills and drains.
#[derive(Debug, Clone, Default)]
pub(in crate::net) struct Egress {
    /// Waiting frames: (frame, bytes, the ingress it came in over, when it may start).
    pub(in crate::net) waiting: VecDeque<(u32, u32, u32, TimePs)>,
    /// Frames on the wire: (their last bit leaves, bytes).
    pub(in crate::net) sending: VecDeque<(TimePs, u64)>,
    /// Bytes waiting or on the wire (they hold the port's buffer).
    pub(in crate::net) bytes: u64,
    /// The waiting frames' wire time at the port's rate, ps: how long they take to leave
    /// once the port may send (what adaptive routing reads).
    pub(in crate::net) waiting_ps: TimePs,
    /// The time of the pending [`crate::event::NetEv::PfcEgress`] event, if one is pending.
    pub(in crate::net) kick_at: Option<TimePs>,
    /// When that event was queued.
    pub(in crate::net) kick_queued: TimePs,
}

impl Egress {
    /// The simulation is at `now`: frames whose last bit has left no longer hold the port.
    pub(in crate::net) fn forget_sent(&mut self, now: TimePs) {
        while let Some(&(end, b)) = self.sending.front() {
            if end > now {
                break;
            }
            self.sending.pop_front();
            self.bytes -= b;
        }
    }
}

/// Flow control of every switch port, and the pauses it puts on transmitters.
#[derive(Debug, Clone)]
pub struct Pfc {
    p: PfcParams,
    /// Per link direction: its transmitter.
    pub(in crate::net) tx: Vec<Tx>,
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
    /// Per link direction fed by a switch toward a switch, or toward a NIC that has paused
    /// it: the port's queue.
    pub(in crate::net) egress: Vec<Egress>,
    /// Per link direction fed by a switch toward a NIC: whether that NIC has paused it (its
    /// frames go through the pausable queue from then on; before, their departures are
    /// fixed when they are forwarded).
    pub(in crate::net) nic_paused_port: Vec<bool>,
    /// Per link direction into a switch: that ingress's (XOFF, XON) levels, bytes.
    levels: Vec<(u64, u64)>,
    /// Per switch: its ingresses' XOFF when derived from its shared pool (0: the config's).
    switch_xoff: Vec<u64>,
    /// Per link direction, its transmitter's finished pauses `[from, until)`, kept for the
    /// queue trace ([`Pfc::keep_pauses`]); `None`: not kept.
    history: Option<Vec<Vec<(TimePs, TimePs)>>>,
    /// Counters; the paused times hold finished pauses only (see [`Pfc::stats`]).
    stats: PfcStats,
    /// Per link direction fed by a NIC: the looks its paused TX engine would take every
    /// quantum, which it no longer takes ([`ParkedLooks`]); a change of the pause or of the
    /// ingress's XON outlook wakes it at the first of them that would have seen it.
    parked: Vec<Option<ParkedLooks>>,
    /// Link directions whose parked NIC a change is to wake: (link, when).
    woken: Vec<(usize, TimePs)>,
    /// Per link direction: whether a NIC at its end has paused its transmitter (back to
    /// back). Such a transmitter does not park: its XON is decided by NIC events that may
    /// be queued as late as the look that sees it, so it takes every look.
    nic_pauses: Vec<bool>,
}

impl Pfc {
    /// Flow control over the link directions `links` and `switches` switches of a network
    /// whose routes hold `buffer_cycle_links` link directions in a cyclic buffer dependency
    /// (`crate::net::pfc_deadlock`).
    pub fn new(p: PfcParams, links: &[PfcLink], switches: usize, buffer_cycle_links: u64) -> Pfc {
        let n = links.len();
        let tx = links.iter().map(|l| l.tx).collect();
        let quantum_ps = links
            .iter()
            .map(|l| l.tx_mbps.map_or(0, |mbps| ser_ps(QUANTUM_BITS / 8, mbps)))
            .collect();
        let lead_ps = links
            .iter()
            .map(|l| match (l.tx, l.tx_mbps) {
                (Tx::Nic, Some(mbps)) => ser_ps(p.nic_lead_bytes, mbps),
                _ => 0,
            })
            .collect();
        Pfc {
            p,
            tx,
            quantum_ps,
            lead_ps,
            back_ps: links.iter().map(|l| l.back_ps).collect(),
            ingress: vec![Ingress::default(); n],
            pause: vec![None; n],
            egress: vec![Egress::default(); n],
            nic_paused_port: vec![false; n],
            levels: vec![(p.xoff_bytes, p.xon_bytes); n],
            switch_xoff: vec![0; switches],
            history: None,
            stats: PfcStats {
                buffer_cycle_links,
                ..PfcStats::default()
            },
            parked: vec![None; n],
            woken: Vec::new(),
            nic_pauses: vec![false; n],
        }
    }

    /// The ingresses `ingresses` of switch `switch` (the link directions leading to it)
    /// pause and resume at `levels` (derived from its shared pool) instead of the config's.
    pub fn set_switch_levels(
        &mut self,
        switch: usize,
        ingresses: &[usize],
        levels: super::shared_buffer::PfcLevels,
    ) {
        for &l in ingresses {
            self.levels[l] = (levels.xoff_bytes, levels.xon_bytes);
        }
        self.switch_xoff[switch] = levels.xoff_bytes;
    }

    /// The XOFF level of switch `switch`'s ingresses when derived from its pool (0: none).
    pub fn switch_xoff_bytes(&self, switch: usize) -> u64 {
        self.switch_xoff.get(switch).copied().unwrap_or(0)
    }

    /// The time the NIC feeding link direction `link` may start a frame it would start at
    /// `t`: `t`, or, inside a pause, the earliest the pause can end: its pause time running
    /// out, or the XON landing. When the XON is on its way, or the switch's ingress will
    /// drain to XON at departures already known, that is its landing time; otherwise the
    /// NIC's TX engine, running its lead ahead, looks again one quantum later (a look it
    /// takes without an event, parked: [`Pfc::look_again`], [`Pfc::park`]).
    pub fn hold(&self, link: usize, t: TimePs) -> TimePs {
        match self.pause.get(link).copied().flatten() {
            Some((from, until)) if (from..until).contains(&t) => {
                let ing = &self.ingress[link];
                let xon = match ing.xoff_sent {
                    None => Some(ing.xon_lands),
                    Some(_) => ing
                        .drains_to(self.levels[link].1)
                        .map(|d| d + self.back_ps[link]),
                };
                let look = t + self.quantum_ps[link].max(1) + self.lead_ps[link];
                until.min(xon.unwrap_or(look)).max(t)
            }
            _ => t,
        }
    }

    /// When the NIC feeding `link`, asked at `t`, would only be told to look again a quantum
    /// later ([`Pfc::hold`]: paused by a switch, the XON not foreseen): the pause's end and
    /// the time from one look to the port's answer (a quantum and the engine's lead).
    pub fn look_again(&self, link: usize, t: TimePs) -> Option<PauseLook> {
        match self.pause.get(link).copied().flatten() {
            Some((from, until)) if (from..until).contains(&t) => {
                let ing = &self.ingress[link];
                let foreseen = match ing.xoff_sent {
                    None => true,
                    Some(_) => ing.drains_to(self.levels[link].1).is_some(),
                };
                let ahead = self.quantum_ps[link].max(1) + self.lead_ps[link];
                let parks = !foreseen && !self.nic_pauses[link];
                parks.then_some(PauseLook { t, until, ahead })
            }
            _ => None,
        }
    }

    /// The paused NIC feeding `link` takes no look until `looks` says (or a change wakes it).
    pub fn park(&mut self, link: usize, looks: ParkedLooks) {
        self.parked[link] = Some(looks);
    }

    /// The pause of `link` or its ingress changed at `now`: a NIC parked on it whose looks
    /// would now be answered otherwise (the pause ends elsewhere, or the XON is foreseen) is
    /// to be woken at its next look.
    fn changed(&mut self, link: usize, now: TimePs) {
        self.changed_by(link, now, None);
    }

    /// [`Pfc::changed`] by an event queued at `queued`. A look due at `now` itself was
    /// queued one step before it: it ran before an event queued later, and missed the
    /// change. The PFC frames and the departures that change a pause are queued at least a
    /// minimum frame's wire time (84 bytes, more than the 64 bytes of a quantum) before
    /// they act, so only a port's start (queued as late as the same picosecond) needs its
    /// time.
    fn changed_by(&mut self, link: usize, now: TimePs, queued: Option<TimePs>) {
        let Some(p) = self.parked[link] else {
            return;
        };
        let same = self
            .look_again(link, now)
            .is_some_and(|l| l.until == p.until);
        if same {
            return;
        }
        self.parked[link] = None;
        let missed = queued.is_some_and(|q| q + p.step > now);
        if let Some(g) = p.first_from(now + TimePs::from(missed)) {
            self.woken.push((link, g));
        }
    }

    /// The parked NICs to wake, (link, when), since the last call.
    pub(in crate::net) fn take_woken(&mut self) -> Vec<(usize, TimePs)> {
        if self.woken.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.woken)
    }

    /// Whether the transmitter feeding `link` is paused at `t`, and until when at most.
    pub(in crate::net) fn paused_until(&self, link: usize, t: TimePs) -> Option<TimePs> {
        match self.pause[link] {
            Some((from, until)) if (from..until).contains(&t) => Some(until),
            _ => None,
        }
    }

    /// A PFC frame carrying `quanta` for the RoCE priority lands at `now` on the
    /// transmitter feeding `link`: it pauses it that long from now (0: resumes it).
    pub(in crate::net) fn on_pause_time(&mut self, now: TimePs, link: usize, quanta: u16) {
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
        self.changed(link, now);
    }

    /// Moves the finished pause of `link` into the counters (and the kept pauses).
    fn finish(&mut self, link: usize) {
        if let Some(pause) = self.pause[link].take() {
            add_pause(&mut self.stats, self.tx[link], pause);
            if let Some(h) = self.history.as_mut() {
                h[link].push(pause);
            }
        }
    }

    /// The priority RoCE traffic is mapped to: the class of the PFC frames.
    pub(in crate::net) fn priority(&self) -> u8 {
        self.p.priority
    }

    /// One more PFC frame sent.
    pub(in crate::net) fn count_frame(&mut self) {
        self.stats.frames += 1;
    }

    /// Keeps every finished pause, per link direction, for the queue trace.
    pub fn keep_pauses(&mut self) {
        self.history = Some(vec![Vec::new(); self.pause.len()]);
    }

    /// The finished pauses of the transmitter feeding `link`, `[from, until)` in time
    /// order (empty unless [`Pfc::keep_pauses`]; [`Pfc::end_pauses`] finishes the rest).
    pub fn pauses_of(&self, link: usize) -> &[(TimePs, TimePs)] {
        self.history
            .as_ref()
            .and_then(|h| h.get(link))
            .map_or(&[], Vec::as_slice)
    }

    /// The switch port feeding `link` toward a NIC queues its frames where the NIC's pauses
    /// hold them (else only once that NIC has paused it).
    pub fn queue_toward_nic(&mut self, link: usize) {
        if matches!(self.tx[link], Tx::Switch { .. }) {
            self.nic_paused_port[link] = true;
        }
    }

    /// The NIC at the end of `link` sent its transmitter a PFC frame with `quanta` at `now`,
    /// whose XON (`quanta` 0) lands `back_ps` later: kept where a paused NIC transmitter
    /// (back to back) looks for its resumption, as a switch's ingress keeps its own.
    pub(in crate::net) fn on_nic_pfc_sent(&mut self, now: TimePs, link: usize, quanta: u16) {
        self.nic_pauses[link] = true;
        let ing = &mut self.ingress[link];
        if quanta > 0 {
            // A pause episode, as a switch's ingress counts its own (until 2026-12-02 a
            // NIC's were left out while their frames and paused time were counted).
            if ing.xoff_sent.is_none() {
                self.stats.pauses += 1;
                if matches!(self.tx[link], Tx::Switch { .. }) {
                    self.stats.switch_pauses += 1;
                }
            }
            ing.xoff_sent = Some(now);
        } else {
            ing.xoff_sent = None;
            ing.xon_lands = now + self.back_ps[link];
        }
        self.changed(link, now);
    }

    /// The XOFF's pause time at the rate of `link`'s transmitter, ps.
    pub(in crate::net) fn xoff_ps(&self, link: usize) -> TimePs {
        u64::from(XOFF_QUANTA) * self.quantum_ps[link]
    }

    /// `bytes` more came in over ingress `link` at `now`. Returns the pause time of the PFC
    /// frame to send up the link, if one is due: a first XOFF, or the refresh of one sent
    /// half its pause time ago.
    /// `leaves`: when its last bit leaves the switch, if known (not in a pausable port).
    pub(in crate::net) fn on_queued(
        &mut self,
        now: TimePs,
        link: usize,
        bytes: u64,
        leaves: Option<TimePs>,
    ) -> Option<u16> {
        let ing = &mut self.ingress[link];
        ing.bytes += bytes;
        match leaves {
            Some(t) => ing.add_known(t, bytes),
            None => ing.unknown_bytes += bytes,
        }
        self.stats.max_ingress_bytes = self.stats.max_ingress_bytes.max(ing.bytes);
        let pfc = self.xoff_due(now, link);
        self.changed(link, now);
        pfc
    }

    fn xoff_due(&mut self, now: TimePs, link: usize) -> Option<u16> {
        let refresh_ps = self.xoff_ps(link) / 2;
        let (xoff, xon) = self.levels[link];
        let ing = &mut self.ingress[link];
        match ing.xoff_sent {
            None if ing.bytes > xoff => {
                ing.xoff_sent = Some(now);
                self.stats.pauses += 1;
                if matches!(self.tx[link], Tx::Switch { .. }) {
                    self.stats.switch_pauses += 1;
                }
                Some(XOFF_QUANTA)
            }
            Some(t) if now >= t + refresh_ps && ing.bytes > xon => {
                ing.xoff_sent = Some(now);
                Some(XOFF_QUANTA)
            }
            _ => None,
        }
    }

    /// `bytes` that came in over ingress `link` left the switch at `now`. Returns the pause
    /// time of the PFC frame to send up the link, if one is due (the XON, or a refresh).
    pub(in crate::net) fn on_left(&mut self, now: TimePs, link: usize, bytes: u64) -> Option<u16> {
        let ing = &mut self.ingress[link];
        ing.bytes -= bytes;
        if let Ok(i) = ing.known.binary_search(&(now, bytes)) {
            ing.known.remove(i);
        }
        if ing.xoff_sent.is_some() && ing.bytes <= self.levels[link].1 {
            ing.xoff_sent = None;
            ing.xon_lands = now + self.back_ps[link];
            self.changed(link, now);
            return Some(0);
        }
        let pfc = self.xoff_due(now, link);
        self.changed(link, now);
        pfc
    }

    /// A frame of `bytes` from ingress `link`, held in a pausable port, starts at last: its
    /// last bit leaves at `leaves`.
    /// `now`: when it starts.
    /// `queued`: when the port's start was queued.
    pub(in crate::net) fn on_started(
        &mut self,
        (now, queued): (TimePs, TimePs),
        link: usize,
        leaves: TimePs,
        bytes: u64,
    ) {
        let ing = &mut self.ingress[link];
        ing.unknown_bytes -= bytes;
        ing.add_known(leaves, bytes);
        self.changed_by(link, now, Some(queued));
    }

    /// The run ended at `end`: every pause still standing is counted up to `end` (not to
    /// the end of its pause time, up to 335 µs later) and closed.
    pub fn end_pauses(&mut self, end: TimePs) {
        for l in 0..self.pause.len() {
            if let Some((from, until)) = self.pause[l] {
                self.pause[l] = Some((from.min(end), until.min(end)));
                self.finish(l);
            }
        }
    }

    /// Counters, the pauses still standing included (up to the end of their pause time;
    /// [`Pfc::end_pauses`] cuts them at the run's end).
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

#[cfg(test)]
mod park_tests;

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
            nic_paused_port: vec![false; 2],
            levels: vec![(p.xoff_bytes, p.xon_bytes); 2],
            switch_xoff: vec![0],
            history: None,
            stats: PfcStats::default(),
            parked: vec![None; 2],
            woken: Vec::new(),
            nic_pauses: vec![false; 2],
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
    fn an_ingress_pauses_and_resumes_at_the_levels_its_switch_derived() {
        let mut f = pfc();
        // The shared pool's levels for ingress 0: XOFF 16 KB, XON 3 KB below.
        f.levels[0] = (16 * KB, 13 * KB);
        for t in 0..4 {
            assert_eq!(
                f.on_queued(t, 0, 4 * KB, Some(100 + t)),
                None,
                "not above 16 KB"
            );
        }
        assert_eq!(f.on_queued(4, 0, KB, Some(104)), Some(XOFF_QUANTA));
        assert_eq!(f.ingress[0].drains_to(13 * KB), Some(100));
        assert_eq!(f.on_left(100, 0, 4 * KB), Some(0), "13 KB: the XON");
    }

    proptest::proptest! {
        /// Whatever frames come in (with known departures), once they have all left the
        /// ingress is resumed: every XOFF is followed by an XON.
        #[test]
        fn a_paused_ingress_resumes_once_drained(
            frames in proptest::collection::vec((1u64..9000, 1u64..50), 1..200),
        ) {
            let mut f = pfc();
            let mut departures = Vec::new();
            let (mut xoffs, mut xons) = (0, 0);
            for (i, &(bytes, stay)) in frames.iter().enumerate() {
                let t = i as u64;
                let leaves = t + stay;
                departures.push((leaves, bytes));
                if f.on_queued(t, 0, bytes, Some(leaves)).is_some_and(|q| q > 0) {
                    xoffs += 1;
                }
            }
            departures.sort();
            for (t, b) in departures {
                match f.on_left(t, 0, b) {
                    Some(0) => xons += 1,
                    Some(_) => xoffs += 1,
                    None => {}
                }
            }
            proptest::prop_assert_eq!(f.ingress[0].bytes, 0);
            proptest::prop_assert!(f.ingress[0].xoff_sent.is_none());
            proptest::prop_assert_eq!(xons, u64::from(xoffs > 0));
        }
    }

    #[test]
    fn a_frame_in_a_pausable_port_has_no_known_departure_until_it_starts() {
        let mut f = pfc();
        f.on_queued(0, 0, 8 * KB, Some(10));
        f.on_queued(1, 0, 4 * KB, None);
        assert_eq!(f.ingress[0].drains_to(4 * KB), None);
        f.on_started((0, 0), 0, 30, 4 * KB);
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
    fn a_nic_pausing_its_peer_holds_it_until_its_xon_lands() {
        // Link 0's far end is a NIC here (back to back): its ingress holds no switch bytes,
        // so no departure foretells the XON.
        let mut f = pfc();
        f.on_nic_pfc_sent(10, 0, XOFF_QUANTA);
        f.on_pause_time(20, 0, XOFF_QUANTA);
        assert_eq!(f.hold(0, 25), 30, "looks again a quantum later");
        // The XON leaves at 40 and takes 7 ps back.
        f.on_nic_pfc_sent(40, 0, 0);
        assert_eq!(f.hold(0, 41), 47, "the XON is on its way");
        // Only a switch's port toward a NIC becomes a pausable queue.
        f.queue_toward_nic(0);
        f.queue_toward_nic(1);
        assert_eq!(f.nic_paused_port, vec![false, true]);
    }

    #[test]
    fn a_pause_standing_when_the_run_ends_counts_up_to_the_end() {
        let mut f = pfc();
        f.on_pause_time(100, 0, XOFF_QUANTA); // until 100 + 65535 × 5 ps
        assert_eq!(
            f.stats().paused_ps,
            u64::from(XOFF_QUANTA) * 5,
            "its whole pause time"
        );
        f.end_pauses(130);
        assert_eq!(f.stats().paused_ps, 30, "cut at the run's end");
        assert_eq!(f.hold(0, 130), 130, "closed");
        // A pause that ended before the run did is counted whole.
        let mut f = pfc();
        f.on_pause_time(100, 0, 2);
        f.end_pauses(500);
        assert_eq!(f.stats().paused_ps, 10);
    }
}
