//! The simulated world and its event loop: per node a NIC (with its transport) and host
//! memory, the network, the applications (one per flow), the observers; each event goes to
//! the component it names, with the parts of the world that component may touch.

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, Geometry, TimePs};

use super::event::{Ev, FramePool};
use super::host::perftest::{HostCx, Perftest};
use super::host::routes::FlowRoutes;
use super::net::graph::Network;
use super::nic::cx::NicCx;
use super::nic::Nic;
use super::oracle::PayloadOracle;

/// The shape of the world's event queue: 2 ns fine buckets, 512 of them per 1.05 µs coarse
/// bucket, 256 coarse buckets (the same 268 µs window as [`Geometry::DEFAULT`]). The order
/// of events does not depend on it, only the speed. The default's 128 ps fine buckets suit
/// the queue's own benchmark (a million pending events); the model keeps a few thousand
/// pending, nearly every 128 ps bucket held one event, and each pop paid for finding and
/// opening a bucket. Measured against the default (2026-11-27): the 300-QP reference run
/// 1.3 % fewer instructions at the same wall time, the 1,024-QP run 0.955x, the
/// 100,000-QP `-t 16` run 0.969x and `read-bw -s 65536 -q 4` 0.924x the wall time.
pub const QUEUE_GEOMETRY: Geometry = Geometry {
    fine_width_log2: 11,
    fine_buckets_log2: 9,
    coarse_buckets_log2: 8,
};

pub use crate::net::hooks::Hooks;

/// The connection managers reach each node's transport, not its NIC.
impl crate::host::cm::NodeDevices for Vec<Nic> {
    fn device(&mut self, node: usize) -> &mut rnic_transport::Device {
        &mut self[node].dev
    }
}

/// The world.
pub struct World {
    /// Pending events.
    pub q: EventQueue<Ev>,
    /// Each node's NIC; node 0 is the server, 1..=N the clients.
    pub nics: Vec<Nic>,
    /// Each node's host memory (real bytes).
    pub mems: Vec<SparseMemory>,
    /// The network.
    pub net: Network,
    /// Frames in flight.
    pub frames: FramePool,
    /// The applications, one per flow (`rnic perf`: one).
    pub apps: Vec<Perftest>,
    /// Which flow a host event belongs to (used when there are several).
    pub routes: FlowRoutes,
    /// Host events that belonged to no flow (a model bug if ever non-zero).
    pub unrouted: u64,
    /// The end-to-end payload oracle.
    pub oracle: PayloadOracle,
    /// Events processed.
    pub events: u64,
    /// The hosts' connection managers (`host.connect = "cm"`); `None`: the QPs were
    /// connected at build time.
    pub cm: Option<crate::host::cm::ConnectionManager>,
    /// Events the applications' start schedules (window events), at times from their start.
    pub at_start: Vec<(TimePs, Ev)>,
    /// When the applications started (after connection setup), ps.
    pub origin_ps: TimePs,
    /// The applications have started: connection setup is over.
    pub started: bool,
    /// UC/UD runs: the run ends only once no frame is left anywhere (on a link, in a
    /// switch, in a NIC's receive pipeline), so a message still travelling at the end is
    /// not counted as lost (RC runs end when the applications are done and the network is empty: their
    /// ACKs already say everything arrived).
    pub drain_rx: bool,
    /// The node whose NIC owes a scheduler step right after the event just handled
    /// (`nic::sched_wake`).
    pub owed_step: Option<usize>,
    /// How many applications, from the first, are known to be finished (an application
    /// never unfinishes): [`World::done`] runs after every event and looks only past them
    /// (with thousands of flows, scanning every finished one each event was 5 % of a
    /// fabric run's CPU time).
    pub finished_apps: std::cell::Cell<usize>,
    /// Note in [`World::just_finished`] each application that finishes on one of its own
    /// events, and stop [`World::run_until`] after that event, so that the run can check
    /// the flow's buffers and free them while the others go on (runs of flows).
    pub watch_finish: bool,
    /// The applications that finished since the caller last took them (with
    /// [`World::watch_finish`]).
    pub just_finished: Vec<usize>,
}

impl World {
    /// Processes events up to `until` (inclusive) or until none are left or `max_events`
    /// (or, with [`World::watch_finish`], until an application finished). Returns the time
    /// of the last event processed.
    pub fn run_until(&mut self, until: TimePs, max_events: u64) -> TimePs {
        let mut last = 0;
        loop {
            // A scheduler step the previous event owes runs before the next pop, exactly
            // where its own event would have been popped (see `nic::sched_wake`).
            while let Some(n) = self.owed_step.take() {
                self.run_owed_step(n);
            }
            // So do the switch ports' starts the previous event owes (a network event owes
            // no NIC step, nor a NIC event a port start: the two never wait together).
            if self.net.owes_starts() {
                self.net.run_owed_starts(&mut self.q, &mut self.frames);
            }
            let Some((t, ev)) = self.q.pop_at_or_before(until) else {
                break;
            };
            last = t;
            self.events += 1;
            self.dispatch(t, ev);
            if self.events >= max_events || self.done() || !self.just_finished.is_empty() {
                break;
            }
        }
        last
    }

    /// Runs the scheduler step that node `n`'s NIC owes at the current time.
    fn run_owed_step(&mut self, n: usize) {
        let now = self.q.now();
        self.at_nic(n, |nic, cx| nic.run_owed_step(now, cx));
    }

    /// Lets node `n`'s NIC act with its context, then notes a scheduler step it owes.
    #[inline]
    fn at_nic(&mut self, n: usize, act: impl FnOnce(&mut Nic, &mut NicCx<'_>)) {
        // Split borrows: the NIC is looked up once for the event and its owed step.
        let World {
            q,
            nics,
            mems,
            frames,
            net,
            oracle,
            owed_step,
            ..
        } = self;
        let nic = &mut nics[n];
        let mut cx = NicCx {
            node: n,
            q,
            mem: &mut mems[n],
            frames,
            wire: net,
            observer: oracle,
        };
        act(nic, &mut cx);
        if nic.tx.sched.owed {
            *owed_step = Some(n);
        }
    }

    /// Every application is done and nothing is left in flight (see [`World::drain_rx`]).
    pub fn done(&self) -> bool {
        let mut first_unfinished = self.finished_apps.get();
        while self.apps.get(first_unfinished).is_some_and(|a| a.finished) {
            first_unfinished += 1;
        }
        self.finished_apps.set(first_unfinished);
        first_unfinished == self.apps.len()
            && !self.net.holds_frames()
            && !(self.drain_rx && self.frames.live > 0)
    }

    fn dispatch(&mut self, now: TimePs, ev: Ev) {
        match ev {
            Ev::Nic { node, ev } => self.at_nic(node as usize, |nic, cx| nic.handle(now, ev, cx)),
            Ev::Net(ev) => self.net.handle(now, ev, &mut self.q, &mut self.frames),
            Ev::Cm {
                ev: crate::event::CmEv::Ready,
                ..
            } => self.start_apps(now),
            Ev::Cm { node, ev } => {
                let Some(cm) = self.cm.as_mut() else { return };
                let mut cx = crate::host::cm::CmCx {
                    q: &mut self.q,
                    devices: &mut self.nics,
                    net: &mut self.net,
                    frames: &mut self.frames,
                };
                cm.handle(now, node as usize, ev, &mut cx);
                if cm.error.is_some() {
                    // Setup failed: nothing will run; the run ends and reports why.
                    for a in &mut self.apps {
                        a.finished = true;
                    }
                }
            }
            Ev::Host { node, ev } => {
                let n = node as usize;
                let f = if self.apps.len() == 1 {
                    Some(0)
                } else {
                    self.routes.flow_of(n, &ev)
                };
                let Some(f) = f else {
                    self.unrouted += 1;
                    return;
                };
                let mut cx = HostCx {
                    q: &mut self.q,
                    mems: &mut self.mems,
                    oracle: &mut self.oracle,
                };
                let unposted = self.apps[f].measure.first_post_ps.is_none();
                let was_finished = self.apps[f].finished;
                self.apps[f].handle(now, n, ev, &mut cx);
                if self.watch_finish && !was_finished && self.apps[f].finished {
                    self.just_finished.push(f);
                }
                if unposted && self.apps[f].measure.first_post_ps.is_some() {
                    // The measured span starts: what PCIe was busy for before it (setup,
                    // warm-up) is not in its utilisation.
                    self.apps[f].measure.pcie_busy_at_first_post = Some(self.server_pcie_busy());
                }
            }
            // The window events carry no flow: with several flows, they belong to the
            // duration-mode flows whose window opens (ends) now.
            Ev::WindowReady => {
                let joint = |a: &Perftest| a.window.joint && a.spec.duration_mode;
                let all_ready = self
                    .apps
                    .iter()
                    .filter(|a| joint(a))
                    .all(|a| a.window.ready.is_some() || a.window.opened.is_some());
                if all_ready {
                    for a in self.apps.iter_mut().filter(|a| joint(a)) {
                        if let Some((settled, reason)) = a.window.ready.take() {
                            a.open_window(now, settled, reason, &mut self.q);
                        }
                    }
                }
            }
            Ev::WindowOpen => {
                let busy = self.server_pcie_busy();
                let single = self.apps.len() == 1;
                for a in &mut self.apps {
                    if single || (a.spec.duration_mode && a.window.span_ps.0 == now) {
                        a.measure.window_pcie_busy[0] = Some(busy);
                        a.measure.in_flight_at_open = a.ops_in_flight();
                    }
                }
            }
            Ev::End => {
                let busy = self.server_pcie_busy();
                let single = self.apps.len() == 1;
                for a in &mut self.apps {
                    if single || (a.spec.duration_mode && a.window.span_ps.1 == now) {
                        a.measure.window_pcie_busy[1] = Some(busy);
                        a.finished = true;
                    }
                }
            }
        }
    }

    /// Starts the run: the connection managers' setup, or (QPs connected at build time)
    /// the applications at once.
    pub fn start(&mut self) {
        match self.cm.as_mut() {
            Some(cm) => {
                let mut cx = crate::host::cm::CmCx {
                    q: &mut self.q,
                    devices: &mut self.nics,
                    net: &mut self.net,
                    frames: &mut self.frames,
                };
                cm.start(&mut cx);
            }
            None => self.start_apps(0),
        }
    }

    /// Starts the applications at `t0`, in flow order (a flow that starts later has its
    /// cores busy until its start time, so its first post waits for it); every time they
    /// measure counts from `t0`.
    fn start_apps(&mut self, t0: TimePs) {
        self.origin_ps = t0;
        self.started = true;
        for (t, ev) in std::mem::take(&mut self.at_start) {
            self.q.push(t + t0, ev);
        }
        let mut cx = HostCx {
            q: &mut self.q,
            mems: &mut self.mems,
            oracle: &mut self.oracle,
        };
        for a in &mut self.apps {
            a.shift_origin(t0);
            a.start(t0, &mut cx);
        }
    }

    /// The server's PCIe busy time each way (host → NIC, NIC → host), ps.
    pub fn server_pcie_busy(&self) -> (u64, u64) {
        let p = &self.nics[0].mem.pcie;
        (p.down.busy_ps, p.up.busy_ps)
    }

    /// The run ended at `end`: the NICs' rate traces (if taken) sample up to it.
    pub fn end_rate_traces(&mut self, end: TimePs) {
        for nic in &mut self.nics {
            nic.cc.end_trace(end);
        }
    }

    /// The rate trace, when DCQCN runs and `net.trace_interval_us` asks for one.
    pub fn rate_trace(&self) -> Option<crate::nic::mech::cc::rate_trace::RateTrace> {
        let samplers = self.nics.iter().map(|n| n.cc.rate_samples());
        crate::nic::mech::cc::rate_trace::RateTrace::of(samplers)
    }
}
