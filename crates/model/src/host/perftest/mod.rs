//! The application: perftest semantics on simulated CPU cores.
//!
//! * Bandwidth tests (`*-bw`): the server (node 0) is the requester on every QP, as in the
//!   csRNA paper's setup. Each QP keeps `tx_depth` WQEs outstanding and re-posts one per completion
//!   (iteration mode: until `iters` per QP; duration mode: until the window ends). Each
//!   core fills its QPs round robin (one WQE per QP per round, one post at a time on the
//!   core's timeline), so every QP is active within the first microseconds; completions
//!   that arrive meanwhile are served in between (a QP never exceeds `tx_depth`). SEND
//!   targets keep
//!   `tx_depth` receive WQEs posted and re-post one per receive completion.
//! * `write-lat`: ping-pong as ib_write_lat: the client writes into the server's buffer; the
//!   server polls the last byte of that buffer and, when it changes, writes back; the client
//!   polls likewise. Latency = half the time between the client's consecutive posts.
//! * `send-lat`: the same ping-pong with SEND/RECV, detected by the receive completion.
//! * `read-lat`, `atomic-lat`: the client posts, polls its completion, posts the next; the
//!   latency is the full operation time.
//!
//! * `--procs N` (write-lat, read-lat, atomic-lat), csRNA's latency test: the server runs
//!   N processes, process p on core p owning QPs p, p+N, p+2N, ...; each posts one signaled
//!   operation on its current QP, polls its completion, records the full operation latency
//!   (CQE consumed − post start), moves to its next QP and posts again. The processes run
//!   concurrently, so their QPs contend for the QPC manager. Iteration mode: `iters`
//!   operations over all processes; duration mode: the samples completing in the window.
//!
//! Otherwise, with several QPs, latency tests use them in turn (iteration k on QP k mod q), as the
//! csRNA paper's latency test does. CPU costs: `post_send_ns` per post (WQE write + doorbell store),
//! `poll_cq_ns` per CQE consumed, `mem_latency_ns` for a polling core to see a DMA write.
//! Work request ids carry the post time, so latency needs no per-WQE table.
//!
//! The application's state is in parts, each owning one concern (a file of this folder):
//! [`TestSpec`], what the test is (fixed at build); [`HostCosts`], the CPU times of the verbs;
//! [`Window`], when operations count; [`Measurement`], what is counted; [`ErrorLog`];
//! [`PingPong`], the latency ping-pong's state; [`Procs`], `--procs`' processes; and
//! [`BwStart`], a bandwidth test's warm-up and initial fill. [`Perftest`] holds them with the
//! pairs and nodes every step indexes. Its own steps are the events (here, a polled
//! completion handed to its test among them), the latency tests' (`lat.rs`) and the
//! bandwidth tests' (`bw.rs`); the rest is the parts': posting is a function of the parts it
//! touches ([`PostParts`], `post.rs`), a core polls its CQ ring (`NodeApp::poll_cqe`,
//! `cqe.rs`), the `--procs` processes take turns (`Procs::turn`) and the ping-pong gives
//! an iteration up (`PingPong::give_up`, `lat_give_up.rs`).

mod bw;
pub mod bw_start;
pub mod costs;
mod cqe;
pub mod errors;
mod lat;
mod lat_give_up;
pub mod measurement;
pub mod nodes;
pub mod ping_pong;
mod post;
pub mod procs;
pub mod spec;
pub mod window;

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, TimePs};

pub use self::bw_start::{BwStart, Fill, FillStep};
pub use self::costs::HostCosts;
use self::cqe::Polled;
pub use self::errors::ErrorLog;
pub use self::measurement::Measurement;
pub use self::nodes::{HostQp, MrKeys, NodeApp, NodeApps, Pair, SrqRing};
pub use self::ping_pong::PingPong;
pub use self::post::PostParts;
pub use self::procs::{Proc, Procs};
pub use self::spec::TestSpec;
pub use self::window::{Window, WindowOpened};
pub use super::core_set::{Core, CoreSet, CqRing};
use crate::event::{Ev, HostEv};
use crate::host::driver::wc_status_name;
use crate::oracle::PayloadOracle;
use crate::workload::Verb;

/// What the application may touch while it handles an event: the event queue, every
/// host's memory, and the payload oracle (told when a poll byte changes a source buffer).
pub struct HostCx<'a> {
    /// The event queue.
    pub q: &'a mut EventQueue<Ev>,
    /// Each node's host memory.
    pub mems: &'a mut [SparseMemory],
    /// The payload oracle.
    pub oracle: &'a mut PayloadOracle,
}

/// The perftest application of one flow: its parts, each owning one concern, and the state
/// that spans them (the pairs and nodes every part's methods index, whether the run is over).
#[derive(Debug)]
pub struct Perftest {
    /// What the test is, fixed at build.
    pub spec: TestSpec,
    /// The host's CPU costs, ps.
    pub costs: HostCosts,
    /// The measurement window.
    pub window: Window,
    /// What is counted, and when.
    pub measure: Measurement,
    /// Errors.
    pub errors: ErrorLog,
    /// The latency ping-pong's state.
    pub ping: PingPong,
    /// `--procs` latency tests: the server's processes.
    pub procs: Procs,
    /// Bandwidth tests: the warm-up and the initial fill.
    pub bw_start: BwStart,
    /// The flow's server node (node 0 for `rnic perf`): it initiates bandwidth tests and
    /// answers latency tests; every pair's other end is a client node.
    pub server: usize,
    /// Pairs.
    pub pairs: Vec<Pair>,
    /// Per node the flow uses.
    pub nodes: NodeApps,
    /// The run is over.
    pub finished: bool,
    /// Pairs that finished their iterations.
    pub pairs_done: usize,
}

impl Perftest {
    /// Handles one event of the application on node `node` at `now`.
    pub fn handle(&mut self, now: TimePs, node: usize, ev: HostEv, cx: &mut HostCx<'_>) {
        match ev {
            HostEv::Fill { core } => self.on_fill(node, now, core, cx),
            HostEv::Landed { qpn } => self.on_landed(node, now, qpn, cx),
            HostEv::CqeLanded { cq } => self.on_cqe(node, now, cq, cx),
            HostEv::LatGiveUp { .. } => self.on_lat_give_up(now, cx),
        }
    }

    /// A CQE landed in CQ `cq` of `node`: the core polls and consumes it
    /// ([`NodeApp::poll_cqe`]) and hands it to the test that waits for it.
    pub(crate) fn on_cqe(&mut self, node: usize, now: TimePs, cq: u32, cx: &mut HostCx<'_>) {
        let (cqe, t) = match self.nodes[node].poll_cqe(cq, now, &self.costs, &mut cx.mems[node]) {
            Polled::Missing { ci } => {
                let msg = format!("node {node} CQ {cq}: no valid CQE at index {ci}");
                self.errors.note(msg);
                return;
            }
            Polled::Cqe { cqe, t, woke } => {
                self.measure.cq_wakeups += u64::from(woke);
                (cqe, t)
            }
        };
        if cqe.status != 0 {
            let name = wc_status_name(cqe.status);
            self.errors.note(format!(
                "node {node} QP {} completed a work request with {name}",
                cqe.qpn
            ));
            *self.errors.by_status.entry(name).or_default() += 1;
            self.bw_pair_failed(node, &cqe, t);
            return;
        }
        let Some(hq) = self.nodes[node].qps.get(cqe.qpn as usize).copied() else {
            return;
        };
        let i = hq.pair;
        // A shared receive queue's buffer holds what landed last, even after the test.
        if let Some(srq) = self.nodes[node].srq.as_mut().filter(|_| cqe.is_recv) {
            srq.took(cqe.wr_id, i);
        }
        if self.finished {
            return;
        }
        if !self.procs.list.is_empty() {
            if node == self.server && !cqe.is_recv {
                self.procs_cqe(t, i, cqe.wr_id, cx);
            }
            return;
        }
        if self.spec.is_lat() {
            self.lat_cqe(node, t, cqe.is_recv, cqe.qpn, i, cx);
            return;
        }
        self.bw_cqe(node, t, &cqe, i, cx);
    }

    /// The bytes pair `i`'s destination must hold after its completed operations: the
    /// largest of their sizes (each writes its message from the buffer's start).
    pub fn verified_len(&self, i: u32) -> u64 {
        match &self.spec.size_mix {
            None => u64::from(self.spec.size_bytes),
            Some(_) => (0..self.pairs[i as usize].completed)
                .map(|k| u64::from(self.spec.op_size(i, k)))
                .max()
                .unwrap_or(0),
        }
    }

    /// Operations the run was asked to complete (iteration mode): `iters` per QP for
    /// bandwidth tests, `iters` in all for latency tests.
    pub fn ops_asked(&self) -> u64 {
        if self.spec.is_lat() {
            self.spec.iters
        } else {
            self.spec.iters * self.pairs.len() as u64
        }
    }

    /// Operations completed so far: bandwidth and `--procs` completions at the initiator,
    /// finished iterations of a ping-pong latency test.
    pub fn ops_done(&self) -> u64 {
        if self.spec.is_lat() && self.procs.list.is_empty() {
            self.ping.iteration
        } else {
            let all: u64 = self.pairs.iter().map(|p| p.completed).sum();
            all.saturating_sub(self.spec.warm_up_ops * self.pairs.len() as u64)
        }
    }

    /// Bandwidth operations posted and not yet completed (a ping-pong has none between
    /// iterations that the window could count).
    pub(crate) fn ops_in_flight(&self) -> u64 {
        if self.spec.is_lat() {
            return 0;
        }
        self.pairs
            .iter()
            .map(|p| p.posted.saturating_sub(p.completed + p.failed))
            .sum()
    }

    /// Operations completed: [`Perftest::ops_done`] less the ping-pong iterations given up
    /// (UC/UD: a lost ping or pong; no sample, no message moved whole).
    pub fn ops_completed(&self) -> u64 {
        if self.spec.is_lat() && self.procs.list.is_empty() {
            self.ping.iteration.saturating_sub(self.ping.given_up)
        } else {
            self.ops_done()
        }
    }

    /// Payload bytes of the operations [`Perftest::ops_completed`] counts, one way (a
    /// ping-pong iteration counts its message once, as the rate does): with a size mix, each
    /// pair's drawn sizes after its warm-up.
    pub fn bytes_done(&self) -> u64 {
        if self.spec.size_mix.is_none() {
            return self.spec.op_bytes() * self.ops_completed();
        }
        (0..self.pairs.len() as u32)
            .map(|i| {
                (self.spec.warm_up_ops..self.pairs[i as usize].completed)
                    .map(|k| u64::from(self.spec.op_size(i, k)))
                    .sum::<u64>()
            })
            .sum()
    }

    /// The parts posting touches ([`PostParts`]), borrowed from the application: its posts
    /// count for the measurement unless a bandwidth test's warm-up is under way.
    #[inline]
    pub(super) fn post_parts(&mut self) -> PostParts<'_> {
        PostParts {
            spec: &self.spec,
            costs: &self.costs,
            server: self.server,
            nodes: &mut self.nodes,
            pairs: &mut self.pairs,
            measure: &mut self.measure,
            measured: self.bw_start.warming_pair.is_none(),
        }
    }

    /// Destination buffer of pair `i` on `node` ([`NodeApp::dst_buffer`]).
    pub fn dst(&self, node: usize, i: u32) -> u64 {
        self.nodes[node].dst_buffer(&self.spec, i)
    }

    /// Every QP has completed `sim.warmup_rounds` operations (bandwidth tests: counted once
    /// the initial posting is over).
    pub(crate) fn rounds_done(&self) -> bool {
        if !self.procs.list.is_empty() {
            self.procs.warming == 0
        } else if self.spec.is_lat() {
            self.ping.iteration >= self.spec.warmup_rounds * self.pairs.len() as u64
        } else {
            self.bw_start.filling_cores == 0
                && (self.spec.warmup_rounds == 0 || self.bw_start.warming_pairs == 0)
        }
    }
}

impl Perftest {
    /// Opens a waiting `-D` window at `t` if everything it waits for is done: the warm-up
    /// rounds, and the steady state (detection) or `sim.warmup_us` (a fixed warm-up: the
    /// window then starts at `t` or at the warm-up time, whichever is later). The server's
    /// PCIe counters are read when it opens; bandwidth tests schedule their end.
    pub(super) fn maybe_open(&mut self, t: TimePs, cx: &mut HostCx<'_>) {
        if !self.spec.duration_mode || !self.window.waiting() || !self.rounds_done() {
            return;
        }
        let (start, settled, mut reason, floor_later) = match &self.window.steady {
            Some(s) => match s.decision() {
                Some(d) => (t, d.settled(), s.describe(&d), d.at_ps() < t),
                None => return,
            },
            None => (
                t.max(self.window.min_start_ps),
                true,
                format!(
                    "sim.warmup_us = {} µs set",
                    (self.window.min_start_ps - self.window.origin_ps) as f64 / 1e6
                ),
                t > self.window.min_start_ps,
            ),
        };
        if floor_later && self.spec.warmup_rounds > 0 {
            reason.push_str(&format!(
                "; opened once every QP had completed sim.warmup_rounds = {} operation(s)",
                self.spec.warmup_rounds
            ));
        }
        if self.window.joint {
            if self.window.ready.is_none() {
                self.window.ready = Some((settled, reason));
                cx.q.push(start, Ev::WindowReady);
            }
            return;
        }
        self.open_window(start, settled, reason, cx.q);
    }

    /// Opens the `-D` window at `start`; bandwidth tests schedule its end.
    pub(crate) fn open_window(
        &mut self,
        start: TimePs,
        settled: bool,
        reason: String,
        q: &mut EventQueue<Ev>,
    ) {
        self.window.open(start, settled, reason);
        q.push(start, Ev::WindowOpen);
        if !self.spec.is_lat() {
            q.push(self.window.span_ps.1, Ev::End);
        }
    }

    /// Feeds the steady-state detector a completion of pair `i` at `t`.
    pub(super) fn observe(&mut self, t: TimePs, i: u32) {
        if let Some(s) = self.window.steady.as_mut() {
            s.completion(t, i as usize);
        }
    }

    /// Starts the application at time 0.
    /// Moves every time the application was built with (its window, its cores' start, the
    /// steady-state detector's start) `t0` later: it starts at `t0`, after connection
    /// setup, instead of at 0.
    pub(crate) fn shift_origin(&mut self, t0: TimePs) {
        self.window.shift_origin(t0);
        if t0 == 0 {
            return;
        }
        for n in self.nodes.iter_mut() {
            for c in n.cores.iter_mut() {
                c.busy = window::later_by(c.busy, t0);
            }
        }
    }

    /// Starts the application at `at`.
    pub(crate) fn start(&mut self, at: TimePs, cx: &mut HostCx<'_>) {
        let test = self.spec.test;
        if test.verb() == Verb::Send {
            // Receivers pre-post: the clients in bandwidth tests, both sides in send-lat.
            let depth = if test.is_latency() {
                2
            } else {
                self.spec.rx_depth
            };
            for i in 0..self.pairs.len() {
                let p = self.pairs[i];
                self.post_parts()
                    .recv(p.c_node as usize, p.c_qpn, depth, at, true, cx);
                if test.is_latency() {
                    let server = self.server;
                    self.post_parts().recv(server, p.s_qpn, depth, at, true, cx);
                }
            }
        }
        if !self.procs.list.is_empty() {
            // Every process posts on its first QP at once, each on its own core.
            self.procs.active = self.procs.list.len();
            for pr in 0..self.procs.list.len() {
                self.procs_post(pr, at, cx);
            }
            return;
        }
        if test.is_latency() {
            self.ping.iteration = 0;
            self.lat_post_next(at, cx);
            return;
        }
        if self.spec.warm_up_ops > 0 {
            // perftest --perform_warm_up: the QPs warm up one after another, then the fill.
            self.bw_start.warming_pair = Some(0);
            self.warm_pair(0, at, cx);
            return;
        }
        let (pairs, server) = (&self.pairs, self.server);
        self.bw_start
            .start_fill(pairs, &self.nodes[server], server, at, cx.q);
    }
}
