//! Flow control at the switch ports, the network's side of [`crate::net::pfc`]: the
//! pausable queues of ports toward other switches, the departures that bring an ingress
//! down to XON, and the PFC frames themselves (built, captured, sent up the link, parsed
//! where they land). The network holds the flow-control state ([`Pfc`]) and describes its
//! links to it as plain values ([`PfcLink`]), so the state imports nothing of the network.

use rnic_sim::{EventQueue, TimePs};
use rnic_wire::pfc::{Packet, PfcRepr};

use super::pfc::{Pfc, PfcLink, Tx};
use super::port::Port;
use crate::config::EcnMarkPoint;
use crate::event::{Ev, FramePool, NetEv, NicEv};
use crate::net::graph::{End, Network};

/// The MAC address of the switch port sending on link direction `link`: locally
/// administered, naming the link direction.
fn port_mac(link: usize) -> [u8; 6] {
    let l = (link as u32).to_be_bytes();
    [0x02, 0x50, l[0], l[1], l[2], l[3]]
}

impl Network {
    /// Every link direction as flow control sees it: its transmitter (a switch's output
    /// port, else a NIC), that transmitter's rate, and the time a PFC frame takes back to it
    /// from the link's far end (a switch pausing its sender, or a NIC whose receive buffer
    /// is full).
    pub(in crate::net) fn pfc_links(&self) -> Vec<PfcLink> {
        let mut links = vec![
            PfcLink {
                tx: Tx::Nic,
                tx_mbps: None,
                back_ps: 0,
            };
            self.links.len()
        ];
        for (n, &l) in self.uplink.iter().enumerate() {
            links[l].tx_mbps = Some(self.ports[n].mbps());
        }
        for (s, sw) in self.switches.iter().enumerate() {
            for (out, &l) in sw.out_link.iter().enumerate() {
                links[l].tx = Tx::Switch { switch: s, out };
                links[l].tx_mbps = Some(sw.outs[out].port.mbps());
            }
        }
        for l in 0..links.len() {
            let r = self.links[l].reverse;
            links[l].back_ps = self.transmitter_port(links[r].tx, r).map_or(0, |port| {
                port.wire_time(rnic_wire::pfc::FRAME_LEN) + self.links[r].delay_ps
            });
        }
        links
    }

    /// The link directions leading into switch `switch`: its ingresses.
    pub(in crate::net) fn switch_ingresses(&self, switch: usize) -> Vec<usize> {
        (0..self.links.len())
            .filter(|&l| self.links[l].to == End::Switch(switch))
            .collect()
    }

    /// The port that transmits onto link direction `link` when `tx` is its transmitter: the
    /// switch's output port, or the NIC port of the node whose uplink it is.
    fn transmitter_port(&self, tx: Tx, link: usize) -> Option<&Port> {
        match tx {
            Tx::Switch { switch, out } => Some(&self.switches[switch].outs[out].port),
            Tx::Nic => self.node_on_uplink(link).map(|n| &self.ports[n]),
        }
    }

    fn pfc_mut(&mut self) -> &mut Pfc {
        self.pfc
            .as_mut()
            .expect("flow control events come only with net.pfc")
    }

    /// Whether frames leaving a switch onto link direction `link` wait in a pausable queue
    /// under PFC: toward another switch, or toward a NIC that pauses.
    pub(in crate::net) fn pausable(&self, link: usize) -> bool {
        self.pfc.as_ref().is_some_and(|pfc| {
            matches!(self.links[link].to, End::Switch(_)) || pfc.nic_paused_port[link]
        })
    }

    /// How long switch `s`'s output port `out` needs, from `now`, to send what it holds at
    /// its line rate: the frame on the wire's rest and, under PFC, the pause in force and
    /// the frames waiting in its pausable queue. Adaptive routing compares this, not the
    /// bytes held: a port whose frame has nearly left holds as many bytes as one whose
    /// frame has just started, yet frees first, and a frame sent to the later one would be
    /// overtaken by the next.
    pub(in crate::net) fn drain_ps(&self, now: TimePs, s: usize, out: usize) -> TimePs {
        let link = self.switches[s].out_link[out];
        let free = self.switches[s].outs[out].port.free_at().max(now);
        if !self.pausable(link) {
            return free - now;
        }
        let pfc = self
            .pfc
            .as_ref()
            .expect("pausable links exist under net.pfc");
        let starts = pfc.paused_until(link, now).map_or(free, |u| u.max(free));
        starts - now + pfc.egress[link].waiting_ps
    }

    /// Switch `s` forwards `frame`, fully received over ingress `from` at `now`, on its
    /// output port `out`, under flow control.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::net) fn pfc_forward(
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
        if self.pausable(link) {
            // Toward another switch, or a NIC that pauses: the pausable queue.
            let sw = &mut self.switches[s];
            let o = &mut sw.outs[out];
            let pfc = self.pfc.as_mut().expect("pfc_forward runs under net.pfc");
            let eg = &mut pfc.egress[link];
            eg.forget_sent(now);
            let fits = match sw.pool.as_mut() {
                Some(pool) => {
                    pool.settle(now);
                    let fits = pool.admits(eg.bytes, len as u64);
                    if fits {
                        pool.take(len as u64);
                    } else {
                        pool.refused();
                    }
                    fits
                }
                None => {
                    let fits = eg.bytes + len as u64 <= o.buffer_bytes();
                    o.stats.drops += u64::from(!fits);
                    fits
                }
            };
            if !fits {
                frames.release(frame);
                return;
            }
            if let Some(ecn) = self.ecn.as_mut() {
                ecn.mark_at(
                    EcnMarkPoint::Enqueue,
                    s,
                    out,
                    eg.bytes,
                    frames.buf_mut(frame),
                );
            }
            eg.bytes += len as u64;
            eg.waiting_ps += o.port.wire_time(len);
            o.stats.max_occupancy = o.stats.max_occupancy.max(eg.bytes);
            if let Some(qs) = self.queues.as_mut() {
                qs.port(s, out).joined(now, len as u64);
            }
            eg.waiting
                .push_back((frame, len as u32, from as u32, now + latency_ps));
            self.pfc_kick(link, now + latency_ps, q);
            let pfc = self.pfc_mut().on_queued(now, from, len as u64, None);
            self.wake_parked(q);
            if let Some(quanta) = pfc {
                self.send_pfc(now, from, quanta, q, frames);
            }
        } else {
            let Some(sent) = self.forward_scheduled(now, s, out, frame, frames) else {
                return;
            };
            let end = sent.1;
            self.pfc_left_at(end, from, len, q);
            self.leave_scheduled(s, out, frame, sent, q, frames);
            let pfc = self.pfc_mut().on_queued(now, from, len as u64, Some(end));
            self.wake_parked(q);
            if let Some(quanta) = pfc {
                self.send_pfc(now, from, quanta, q, frames);
            }
        }
    }

    /// Wakes the parked NICs whose pause or XON outlook changed, each at its next look
    /// ([`crate::nic::cx::pause_looks`]).
    fn wake_parked(&mut self, q: &mut EventQueue<Ev>) {
        for (link, at) in self.pfc_mut().take_woken() {
            if let Some(node) = self.node_on_uplink(link) {
                q.push(
                    at,
                    Ev::Nic {
                        node: node as u32,
                        ev: NicEv::TxLook,
                    },
                );
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
        eg.kick_queued = q.now();
        if q.pops_next_if_pushed_at(at) {
            self.owed_starts.push(link as u32);
        } else {
            q.push(at, Ev::Net(NetEv::PfcEgress { link: link as u32 }));
        }
    }

    /// Whether a port start is owed: the world runs it right after the current event,
    /// before the next pop ([`crate::world::World::run_until`]).
    pub fn owes_starts(&self) -> bool {
        !self.owed_starts.is_empty()
    }

    /// Runs the pausable ports' starts owed by the event just handled at `now`, in the
    /// order they were owed, each as its [`NetEv::PfcEgress`] event would have run.
    ///
    /// A start queued for `now` runs after every event already queued for `now` and before
    /// every event queued later. When nothing else is queued for `now` as it is owed, its
    /// event would be the very next one popped (after the owed starts before it), so running
    /// it straight after the current event is the same order exactly, as the NIC's owed
    /// scheduler steps are (`nic::sched_wake`); the events the current one queues for `now`
    /// afterwards still come after it. A start behind other events of `now` stays an event.
    ///
    /// Out of line, and walking the owed list in place: inlined into the event loop (a
    /// second copy of the port's start beside the `PfcEgress` arm) and moving the list in
    /// and out, the loop counted 12 M more instructions on a 0.2 ms copy of
    /// `bench-k8.toml` (1,991.2 M against 1,978.6 M, cachegrind), most of what the folded
    /// events saved.
    #[inline(never)]
    pub fn run_owed_starts(&mut self, q: &mut EventQueue<Ev>, frames: &mut FramePool) {
        let now = q.now();
        // A start owes no other (its own kicks are later than `now`); one it owed would be
        // appended and run in its turn.
        let mut i = 0;
        while let Some(&link) = self.owed_starts.get(i) {
            self.on_pfc_egress(now, link as usize, q, frames);
            i += 1;
        }
        self.owed_starts.clear();
    }

    /// The pausable port feeding `link` starts its next frame, if it may at `now`.
    pub(in crate::net) fn on_pfc_egress(
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
        let queued = pfc.egress[link].kick_queued;
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
        let sw = &mut self.switches[switch];
        let port = &mut sw.outs[out].port;
        let at = ready.max(port.free_at());
        if at > now {
            return self.pfc_kick(link, at, q);
        }
        port.forget_gone(now);
        let (start, end) = port.send(now, len as usize);
        if let Some(pool) = sw.pool.as_mut() {
            pool.leaves_at(end, u64::from(len));
        }
        if let Some(qs) = self.queues.as_mut() {
            qs.port(switch, out).leaves_at(end, u64::from(len));
        }
        let pfc = self.pfc_mut();
        pfc.on_started((now, queued), from as usize, end, u64::from(len));
        let eg = &mut pfc.egress[link];
        eg.waiting.pop_front();
        eg.waiting_ps -= end - start;
        // Every frame ahead has left (the port was free): it holds this one and those
        // behind it.
        eg.forget_sent(now);
        let behind = eg.bytes - u64::from(len);
        eg.sending.push_back((end, u64::from(len)));
        let more = !eg.waiting.is_empty();
        self.wake_parked(q);
        if let Some(ecn) = self.ecn.as_mut() {
            ecn.mark_at(
                EcnMarkPoint::Dequeue,
                switch,
                out,
                behind,
                frames.buf_mut(frame),
            );
        }
        if more && self.left_then_start_at(end, from, len, link, q) {
            self.transit(link, frame, end, q, frames);
            return;
        }
        self.pfc_left_at(end, from as usize, len as usize, q);
        self.transit(link, frame, end, q, frames);
        if more {
            self.pfc_kick(link, end, q);
        }
    }

    /// The departure from ingress `from` of the `len` bytes the pausable port feeding
    /// `link` has just started, whose last bit leaves at `end`, and that port's start of its
    /// next frame then, queued as one [`NetEv::PfcLeftThenEgress`] event when that is the
    /// same order exactly; returns whether it was.
    ///
    /// The port's start queues the departure, then the frame's arrival across the link,
    /// then its next start; nothing comes between them. When the arrival is later than
    /// `end` (a link with a delay and no element), no event of `end` is queued between the
    /// departure and the start, so they run one right after the other, as the one event
    /// does: the departure queues nothing the start could come after, and its own events
    /// come after the start either way (a PFC frame later; a parked NIC's look, queued
    /// after the start's event).
    fn left_then_start_at(
        &mut self,
        end: TimePs,
        from: u32,
        len: u32,
        link: usize,
        q: &mut EventQueue<Ev>,
    ) -> bool {
        let l = &self.links[link];
        let (Ok(bytes), true) = (u16::try_from(len), l.delay_ps > 0 && l.elements.is_empty())
        else {
            return false;
        };
        // As `pfc_kick` would, queued at `now` for later (the port's start just cleared its
        // kick).
        let eg = &mut self.pfc_mut().egress[link];
        eg.kick_at = Some(end);
        eg.kick_queued = q.now();
        q.push(
            end,
            Ev::Net(NetEv::PfcLeftThenEgress {
                link: from,
                bytes,
                port: link as u32,
            }),
        );
        true
    }

    /// Bytes from ingress `link` left their switch at `now`.
    pub(in crate::net) fn on_pfc_left(
        &mut self,
        now: TimePs,
        link: usize,
        bytes: u32,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) {
        let pfc = self.pfc_mut().on_left(now, link, u64::from(bytes));
        self.wake_parked(q);
        if let Some(quanta) = pfc {
            self.send_pfc(now, link, quanta, q, frames);
        }
    }

    /// The switch (or the NIC) at the end of ingress `link` sends a PFC frame with pause time
    /// `quanta` for the RoCE priority back up the link, decided at `now`: it starts once the
    /// frame its port is serializing at `now` has left.
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
        pfc.count_frame();
        let (priority, tx) = (pfc.priority(), pfc.tx[back]);
        let mac = match tx {
            Tx::Switch { .. } => port_mac(back),
            Tx::Nic => self
                .node_on_uplink(back)
                .map_or(port_mac(back), crate::net::addr::node_mac),
        };
        let repr = if quanta == 0 {
            PfcRepr::xon(mac, priority)
        } else {
            PfcRepr::xoff(mac, priority, quanta)
        };
        let bytes = repr.to_bytes();
        // It goes ahead of the frames waiting in the port, but after the one being
        // serialized (IEEE 802.3 Annex 31B, 802.1Qbb: a frame is never cut).
        let (start, wire_ps) = self.transmitter_port(tx, back).map_or((now, 0), |p| {
            (p.frame_on_wire_ends(now), p.wire_time(bytes.len()))
        });
        self.capture(start, &bytes);
        let f = frames.alloc();
        frames.buf_mut(f).extend_from_slice(&bytes);
        let t = start + wire_ps + self.links[back].delay_ps;
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
    pub(in crate::net) fn on_pfc_frame(
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
        let to_nic = matches!(self.links[data_link].to, End::Node(_));
        let pfc = self.pfc_mut();
        // Priorities other than RoCE's carry no traffic here: their times change nothing.
        let Ok(Some(quanta)) = parsed.map(|q| q[usize::from(pfc.priority())]) else {
            return;
        };
        pfc.on_pause_time(now, data_link, quanta);
        self.wake_parked(q);
        let pfc = self.pfc_mut();
        if quanta > 0 && to_nic {
            // A NIC paused the port feeding it: from now on its frames wait in the port.
            pfc.queue_toward_nic(data_link);
        }
        if matches!(pfc.tx[data_link], Tx::Switch { .. }) {
            self.pfc_kick(data_link, now, q);
        }
    }

    /// Node `node`'s NIC sends a PFC frame with pause time `quanta` up its link at `now`
    /// (its receive buffer passed XOFF, or drained to XON). Returns the pause time of an
    /// XOFF at the rate of the transmitter it pauses, ps.
    pub(in crate::net) fn nic_pause_peer(
        &mut self,
        now: TimePs,
        node: usize,
        quanta: u16,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) -> TimePs {
        let data_link = self.links[self.uplink[node]].reverse;
        let pfc = self.pfc_mut();
        pfc.on_nic_pfc_sent(now, data_link, quanta);
        self.wake_parked(q);
        let xoff_ps = self.pfc_mut().xoff_ps(data_link);
        self.send_pfc(now, data_link, quanta, q, frames);
        xoff_ps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_macs_are_local_and_distinct() {
        assert_ne!(port_mac(1), port_mac(2));
        assert_eq!(port_mac(1)[0] & 0x03, 0x02, "locally administered unicast");
    }
}
