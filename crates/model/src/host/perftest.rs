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

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, Histogram, TimePs};
use rnic_transport::{RemoteAddr, Sge, WrOpcode};

use super::bw_peak::BwPeak;
pub use super::core_set::{Core, CoreSet, CqRing};
use super::driver::{decode_cqe, encode_rq_wqe, wc_status_name, Cqe, SqWqe, CQE_BYTES};
use super::steady::Steady;
use crate::event::{Ev, HostEv, NicEv, PrefetchEv};
use crate::oracle::PayloadOracle;
use crate::workload::{AtomicOp, PerfTest, Verb};

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

/// Host-side state of one QP.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostQp {
    /// Pair index.
    pub pair: u32,
    /// SQ base.
    pub sq_base: u64,
    /// RQ base.
    pub rq_base: u64,
    /// SQ depth − 1.
    pub sq_mask: u32,
    /// RQ depth − 1.
    pub rq_mask: u32,
    /// SQ producer index.
    pub sq_pi: u32,
    /// RQ producer index.
    pub rq_pi: u32,
    /// Receives consumed and not yet reposted (a list is posted once there are
    /// `recv_post_list` of them).
    pub rq_owed: u32,
    /// Core.
    pub core: u16,
}

/// The lkeys and rkeys of one node's memory regions over a flow's buffers.
#[derive(Debug, Clone, Default)]
pub struct MrKeys {
    /// (lkey, rkey) of the regions over the source buffers, by group.
    pub src: Vec<(u32, u32)>,
    /// (lkey, rkey) of the regions over the destination buffers, by group.
    pub dst: Vec<(u32, u32)>,
}

/// One node's application state.
#[derive(Debug, Clone, Default)]
pub struct NodeApp {
    /// The flow's cores on this node.
    pub cores: CoreSet,
    /// QPs by QPN.
    pub qps: Vec<HostQp>,
    /// Keys of the node's MRs; pair i uses the group of its buffer slot.
    pub keys: MrKeys,
    /// Source buffers base.
    pub src: u64,
    /// Destination buffers base.
    pub dst: u64,
    /// CPU time the application's cores spent on this node, ps: building and posting send
    /// WQEs (`host.wqe_prep_ns` + `host.post_send_ns` each), posting receives and polling
    /// CQEs (`host.poll_cq_ns` each); `host.cpu_busy_ps` in `--stats`.
    pub cpu_busy_ps: TimePs,
}

/// A connected QP pair: the server's QP and its peer on a client.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pair {
    /// Server QPN.
    pub s_qpn: u32,
    /// Client node.
    pub c_node: u32,
    /// Client QPN.
    pub c_qpn: u32,
    /// Operations posted by the initiator.
    pub posted: u64,
    /// Operations completed at the initiator.
    pub completed: u64,
    /// Bandwidth tests: the initiator's work requests that completed in error (the QP went
    /// to ERR and flushed the rest); once every posted one is accounted for, the pair can do
    /// nothing more.
    pub failed: u64,
}

/// A core's initial fill of its QPs (bandwidth tests).
#[derive(Debug, Clone, Default)]
pub struct Fill {
    /// The core's QPs.
    pub qpns: Vec<u32>,
    /// Next QP in the round.
    pub next: usize,
    /// Round (WQEs posted per QP so far by the fill).
    pub round: u64,
    /// Every QP of the core has its `tx_depth` initial WQEs posted.
    pub done: bool,
}

/// A server process of a `--procs` latency test.
#[derive(Debug, Clone, Default)]
pub struct Proc {
    /// The process's pairs, visited round robin.
    pub pairs: Vec<u32>,
    /// Index of the current pair.
    pub next: usize,
    /// Completed rounds over the process's pairs.
    pub rounds: u64,
}

/// The perftest application.
#[derive(Debug)]
pub struct Perftest {
    /// Test.
    pub test: PerfTest,
    /// The flow's server node (node 0 for `rnic perf`): it initiates bandwidth tests and
    /// answers latency tests; every pair's other end is a client node.
    pub server: usize,
    /// Atomic op of atomic tests.
    pub atomic: AtomicOp,
    /// Message size, bytes (with `size_mix`: the largest, which the buffers hold).
    pub size: u32,
    /// Bandwidth tests: each operation's size drawn from this mix ([`Perftest::op_size`]).
    pub size_mix: Option<std::sync::Arc<crate::size_mix::SizeMix>>,
    /// The run's seed (the mix's draws).
    pub seed: u64,
    /// Iterations (per QP for bandwidth tests, total for latency tests).
    pub iters: u64,
    /// Outstanding WQEs per QP (bandwidth).
    pub tx_depth: u32,
    /// WQEs per post list and doorbell (bandwidth tests; at most `tx_depth`).
    pub post_list: u32,
    /// SEND/WRITE payloads up to this many bytes are posted inline (0: never).
    pub inline_bytes: u32,
    /// Bandwidth tests: one WQE in this many is signaled (perftest -Q); 1 = all.
    pub cq_mod: u32,
    /// SEND bandwidth tests: receives the target keeps posted per QP (perftest -r).
    pub rx_depth: u32,
    /// SEND bandwidth tests: consumed receives are reposted in lists of this many, one
    /// doorbell each (perftest --recv_post_list).
    pub recv_post_list: u32,
    /// Bandwidth tests: operations each QP does in the warm-up before the measured run
    /// (perftest --perform_warm_up); 0 = none. They are real operations (their bytes land
    /// and are verified) but neither counted nor timed.
    pub warm_up: u64,
    /// The pair whose warm-up is under way (the QPs warm up one after another).
    pub warming: Option<u32>,
    /// Buffer stride per pair, bytes.
    pub stride: u64,
    /// Bytes of one SQ/RQ ring slot (`nic.wqe_bytes`; the WQE format fills the first 64).
    pub wqe_bytes: u64,
    /// Pairs.
    pub pairs: Vec<Pair>,
    /// Per node.
    pub nodes: Vec<NodeApp>,
    /// Duration mode: posting stops and counting ends at `window.1`.
    pub duration_mode: bool,
    /// Measurement window [start, end), ps.
    pub window: (TimePs, TimePs),
    /// CPU costs, ps.
    pub post_ps: TimePs,
    /// CPU time of building one WQE before its doorbell, ps (`host.wqe_prep_ns`).
    pub wqe_prep_ps: TimePs,
    /// Latency tests: idle time between an iteration's end and the next post, ps
    /// (`host.latency_gap_us`).
    pub latency_gap_ps: TimePs,
    /// post_send first stores the QPN into the NIC's prefetch register (software-triggered
    /// resource prefetching, `nic.prefetch` = sw or sched+sw).
    pub sw_prefetch: bool,
    /// Poll cost per CQE, ps.
    pub poll_ps: TimePs,
    /// Completions by event (`host.cq_events`): a sleeping core wakes this long after a
    /// CQE lands; `None`: the cores poll.
    pub cq_event_ps: Option<TimePs>,
    /// Time for a polling core to see a DMA write, ps.
    pub mem_ps: TimePs,
    /// The run is over.
    pub finished: bool,
    /// Operations completed inside the window.
    pub ops_in_window: u64,
    /// Payload bytes of the bandwidth operations completed inside the window.
    pub bytes_in_window: u64,
    /// Duration mode: operations completed from the first post to the window's end, for
    /// the long-run rate beside a window too short to stand for its run
    /// (`run/long_run.rs`).
    pub ops_to_window_end: u64,
    /// First post, ps (`None` before it: a post at time 0 is a post).
    pub first_post: Option<TimePs>,
    /// Last completion, ps.
    pub last_completion: TimePs,
    /// Latency histogram (bandwidth tests) of the operations completed in the window, ps.
    pub hist: Histogram,
    /// Latency samples (latency tests), µs.
    pub samples: Vec<f64>,
    /// Completions with an error status and other application-level errors.
    pub errors: u64,
    /// The first error.
    pub first_error: Option<String>,
    /// Error completions by verbs status name (`RETRY_EXC_ERR`, ...).
    pub error_statuses: std::collections::BTreeMap<String, u64>,
    /// CQEs that found their core asleep (`host.cq_events`): interrupts taken.
    pub cq_wakeups: u64,
    /// Payload bytes the completed operations moved (a ping-pong iteration moves its
    /// message both ways; an atomic moves 8 bytes).
    pub bytes_moved: u64,
    /// Pairs that finished their iterations.
    pub pairs_done: usize,
    /// Latency tests: current iteration.
    pub lat_k: u64,
    /// Latency tests: post time of the current iteration.
    pub lat_post: TimePs,
    /// Receive WQEs posted.
    pub receives_posted: u64,
    /// Sum of bandwidth-test latencies, µs.
    pub lat_sum_us: f64,
    /// Sum of squared bandwidth-test latencies, µs².
    pub lat_sumsq_us: f64,
    /// Initial fill state per core of the server.
    pub fill: Vec<Fill>,
    /// write-lat: the server has answered the current iteration.
    pub lat_ponged: bool,
    /// write-lat and send-lat, per node: a send is posted and not yet completed, and the
    /// post (pair, time) waiting for it. perftest's loop polls the send CQ after each post
    /// before it waits for the peer, so a node never has two pings (or pongs) in flight: a
    /// lost ACK holds the next post until the retransmission is acknowledged.
    pub lat_sends: Vec<(bool, Option<(u32, TimePs)>)>,
    /// write-lat polls that saw an older value (retransmitted or duplicated writes).
    pub stale_polls: u64,
    /// Distinct buffer slots per node (pair i uses slot i mod slots).
    pub slots: u32,
    /// The run-wide number of this application's slot 0 (0 for the first flow).
    pub slot_base: u32,
    /// `--procs` latency tests: the server's processes (empty otherwise).
    pub procs: Vec<Proc>,
    /// `--procs`: operations posted over all processes.
    pub procs_posted: u64,
    /// `--procs`: processes still posting or waiting for a completion.
    pub procs_active: usize,
    /// Busy time of the server's PCIe link (host → NIC, NIC → host), ps, when the window
    /// opened and when it closed (duration mode), for the window's utilisation.
    pub window_pcie_busy: [Option<(u64, u64)>; 2],
    /// Busy time of the server's PCIe link when `first_post` was stamped (iteration mode):
    /// what setup and warm-up used is not in the measured span's utilisation.
    pub pcie_busy_at_first_post: Option<(u64, u64)>,
    /// Latency tests in duration mode: the window opens only after every QP has been used
    /// this many times (`sim.warmup_rounds`), so caches reach their steady state first.
    pub warmup_rounds: u64,
    /// `--procs` latency tests with warm-up rounds: processes that have not yet completed
    /// `warmup_rounds` rounds.
    pub warming_procs: usize,
    /// Bandwidth tests: pairs that have not yet completed `warmup_rounds` operations (one
    /// per round: every QP has been served, so the initial posting burst is over).
    pub warming_pairs: usize,
    /// Bandwidth tests: cores still posting their QPs' initial `tx_depth` WQEs; the warm-up
    /// window of a bandwidth test opens only after they are done.
    pub filling_cores: usize,
    /// Length of the measurement window (duration mode), ps.
    pub duration_ps: TimePs,
    /// Earliest start of the window (`sim.warmup_us`), ps. While the window waits (for
    /// warm-up rounds or the steady state) it is `(MAX, MAX)`: nothing counts and posting
    /// goes on.
    pub window_min_start: TimePs,
    /// Steady-state detection (`-D` runs without `sim.warmup_us`): the window opens when it
    /// has decided.
    pub steady: Option<Steady>,
    /// When the window opened and why (`-D` runs, once it has).
    pub opened: Option<WindowOpened>,
    /// `-b` and `--reversed`: the run's flows are one test, measured over one window that
    /// opens when the last of them is ready (their rates add up only over a common window).
    pub joint_window: bool,
    /// With `joint_window`: this flow is ready to open (settled, and why).
    pub window_ready: Option<(bool, String)>,
    /// When the application started (after connection setup), ps.
    pub origin_ps: TimePs,
    /// The QPs' service is UC or UD: a message may be lost, never resent. The sender's
    /// completion (at transmission) drives the test; the receiver only re-posts.
    pub unreliable: bool,
    /// Bytes before the payload in each receive buffer (UD's GRH area: 40; else 0).
    pub grh_bytes: u64,
    /// UC/UD ping-pong tests: a client still waiting this long after its post gives the
    /// iteration up (`qp.timeout`, the transport's own bound on a round trip; `None`: wait
    /// forever).
    pub lat_give_up_ps: Option<TimePs>,
    /// UC/UD ping-pong iterations given up (a ping or pong lost).
    pub lat_given_up: u64,
    /// Bandwidth tests in iteration mode with `host.bw_peak`: the measured operations'
    /// post and completion stamps, for perftest's BW peak (`None`: not measured).
    pub peak: Option<BwPeak>,
}

/// When and why the `-D` window opened.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowOpened {
    /// Simulated time, ps.
    pub at_ps: TimePs,
    /// The rate settled (or a fixed warm-up was asked for); false: it never settled within
    /// `sim.settle_max_windows` or by `sim.max_warmup_us` and was measured anyway.
    pub settled: bool,
    /// Why, one sentence.
    pub reason: String,
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

    fn err(&mut self, msg: String) {
        self.errors += 1;
        self.first_error.get_or_insert(msg);
    }

    /// The key of pair `i`'s size draws: unique across the run's flows (their buffer slots
    /// are), the same for the sender and the payload oracle.
    pub fn mix_key(&self, i: u32) -> u64 {
        (u64::from(self.slot_base) << 32) | u64::from(i)
    }

    /// Bytes of operation `k` (0-based, in posting order) of pair `i`.
    pub fn op_size(&self, i: u32, k: u64) -> u32 {
        match &self.size_mix {
            None => self.size,
            Some(m) => m.draw(self.seed, self.mix_key(i), k) as u32,
        }
    }

    /// The bytes pair `i`'s destination must hold after its completed operations: the
    /// largest of their sizes (each writes its message from the buffer's start).
    pub fn verified_len(&self, i: u32) -> u64 {
        match &self.size_mix {
            None => u64::from(self.size),
            Some(_) => (0..self.pairs[i as usize].completed)
                .map(|k| u64::from(self.op_size(i, k)))
                .max()
                .unwrap_or(0),
        }
    }

    /// Payload bytes one operation moves (the largest, with a size mix).
    pub fn op_bytes(&self) -> u64 {
        self.test.op_bytes(u64::from(self.size))
    }

    /// Operations the run was asked to complete (iteration mode): `iters` per QP for
    /// bandwidth tests, `iters` in all for latency tests.
    pub fn ops_asked(&self) -> u64 {
        if self.is_lat() {
            self.iters
        } else {
            self.iters * self.pairs.len() as u64
        }
    }

    /// Operations completed so far: bandwidth and `--procs` completions at the initiator,
    /// finished iterations of a ping-pong latency test.
    pub fn ops_done(&self) -> u64 {
        if self.is_lat() && self.procs.is_empty() {
            self.lat_k
        } else {
            let all: u64 = self.pairs.iter().map(|p| p.completed).sum();
            all.saturating_sub(self.warm_up * self.pairs.len() as u64)
        }
    }

    /// Operations completed: [`Perftest::ops_done`] less the ping-pong iterations given up
    /// (UC/UD: a lost ping or pong; no sample, no message moved whole).
    pub fn ops_completed(&self) -> u64 {
        if self.is_lat() && self.procs.is_empty() {
            self.lat_k.saturating_sub(self.lat_given_up)
        } else {
            self.ops_done()
        }
    }

    /// Payload bytes of the operations [`Perftest::ops_completed`] counts, one way (a
    /// ping-pong iteration counts its message once, as the rate does): with a size mix, each
    /// pair's drawn sizes after its warm-up.
    pub fn bytes_done(&self) -> u64 {
        if self.size_mix.is_none() {
            return self.op_bytes() * self.ops_completed();
        }
        (0..self.pairs.len() as u32)
            .map(|i| {
                (self.warm_up..self.pairs[i as usize].completed)
                    .map(|k| u64::from(self.op_size(i, k)))
                    .sum::<u64>()
            })
            .sum()
    }

    /// Operations each pair does in iteration mode: the warm-up's, then `iters`.
    fn per_pair_ops(&self) -> u64 {
        self.iters + self.warm_up
    }

    /// Whether the test is a latency test.
    pub fn is_lat(&self) -> bool {
        self.test.is_latency()
    }

    /// The keys (lkey, rkey) of the MR over pair `i`'s source buffer on `node`.
    pub fn src_key(&self, node: usize, i: u32) -> (u32, u32) {
        self.group_key(&self.nodes[node].keys.src, i)
    }

    /// The keys (lkey, rkey) of the MR over pair `i`'s destination buffer on `node`.
    pub fn dst_key(&self, node: usize, i: u32) -> (u32, u32) {
        self.group_key(&self.nodes[node].keys.dst, i)
    }

    /// The keys of the group pair `i`'s slot is in ([`super::mr_groups`]).
    fn group_key(&self, keys: &[(u32, u32)], i: u32) -> (u32, u32) {
        match keys {
            [] => (0, 0),
            [one] => *one,
            k => {
                let g = super::mr_groups::group_of_slot(self.slot(i), self.slots, k.len() as u32);
                k[(g as usize).min(k.len() - 1)]
            }
        }
    }

    /// The buffer slot of pair `i` (pairs beyond the distinct slots share them).
    pub fn slot(&self, i: u32) -> u32 {
        i % self.slots.max(1)
    }

    /// The run-wide number of pair `i`'s buffer slot (flows number their slots apart, so
    /// the payload oracle and the buffer patterns tell the flows' buffers apart).
    pub fn oracle_slot(&self, i: u32) -> u32 {
        self.slot_base + self.slot(i)
    }

    /// Source buffer of pair `i` on `node`.
    pub fn src(&self, node: usize, i: u32) -> u64 {
        self.nodes[node].src + u64::from(self.slot(i)) * self.stride
    }

    /// Destination buffer of pair `i` on `node`.
    pub fn dst(&self, node: usize, i: u32) -> u64 {
        self.nodes[node].dst + u64::from(i % self.slots.max(1)) * self.stride
    }

    fn in_window(&self, t: TimePs) -> bool {
        t >= self.window.0 && t < self.window.1
    }

    /// Counts `ops` measured operations completed at `t` if it is before the window's end
    /// (every one while the window waits).
    fn count_to_window_end(&mut self, t: TimePs, ops: u64) {
        if t < self.window.1 {
            self.ops_to_window_end += ops;
        }
    }

    /// Every QP has completed `sim.warmup_rounds` operations (bandwidth tests: counted once
    /// the initial posting is over).
    pub(crate) fn rounds_done(&self) -> bool {
        if !self.procs.is_empty() {
            self.warming_procs == 0
        } else if self.is_lat() {
            self.lat_k >= self.warmup_rounds * self.pairs.len() as u64
        } else {
            self.filling_cores == 0 && (self.warmup_rounds == 0 || self.warming_pairs == 0)
        }
    }
}

impl Perftest {
    /// Opens a waiting `-D` window at `t` if everything it waits for is done: the warm-up
    /// rounds, and the steady state (detection) or `sim.warmup_us` (a fixed warm-up: the
    /// window then starts at `t` or at the warm-up time, whichever is later). The server's
    /// PCIe counters are read when it opens; bandwidth tests schedule their end.
    fn maybe_open(&mut self, t: TimePs, cx: &mut HostCx<'_>) {
        if !self.duration_mode || self.window.0 != TimePs::MAX || !self.rounds_done() {
            return;
        }
        let (start, settled, mut reason, floor_later) = match &self.steady {
            Some(s) => match s.decision() {
                Some(d) => (t, d.settled(), s.describe(&d), d.at_ps() < t),
                None => return,
            },
            None => (
                t.max(self.window_min_start),
                true,
                format!(
                    "sim.warmup_us = {} µs set",
                    (self.window_min_start - self.origin_ps) as f64 / 1e6
                ),
                t > self.window_min_start,
            ),
        };
        if floor_later && self.warmup_rounds > 0 {
            reason.push_str(&format!(
                "; opened once every QP had completed sim.warmup_rounds = {} operation(s)",
                self.warmup_rounds
            ));
        }
        if self.joint_window {
            if self.window_ready.is_none() {
                self.window_ready = Some((settled, reason));
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
        self.window = (start, start + self.duration_ps);
        self.opened = Some(WindowOpened {
            at_ps: start,
            settled,
            reason,
        });
        q.push(start, Ev::WindowOpen);
        if !self.is_lat() {
            q.push(self.window.1, Ev::End);
        }
    }

    /// Feeds the steady-state detector a completion of pair `i` at `t`.
    fn observe(&mut self, t: TimePs, i: u32) {
        if let Some(s) = self.steady.as_mut() {
            s.completion(t, i as usize);
        }
    }

    /// Whether a pair's operation `k` (from 0) asks for a CQE: every `cq_mod`-th, and the
    /// last of an iteration run (perftest -Q), so the application learns of every
    /// completion.
    fn signaled(&self, k: u64) -> bool {
        let m = u64::from(self.cq_mod);
        m <= 1
            || (k + 1).is_multiple_of(m)
            || (!self.duration_mode && k + 1 == self.per_pair_ops())
            || k + 1 == self.warm_up
    }

    /// Operations of a pair that the CQE after its `done` completed ones reports: up to
    /// and including the next signaled one (perftest -Q: one CQE per `cq_mod`).
    fn covered(&self, done: u64) -> u64 {
        (done..)
            .find(|&k| self.signaled(k))
            .map_or(1, |k| k + 1 - done)
    }

    /// Builds the WQE of the next operation of pair `i` posted by `node` (the initiator).
    fn wqe(&self, node: usize, i: u32, wr_id: u64, peer: usize, remote_count: u64) -> SqWqe {
        let a = self;
        let size = a.op_size(i, a.pairs[i as usize].posted);
        // WRITE and SEND read the local source buffer (and WRITE lands in the peer's
        // destination); READ lands in the local destination from the peer's source; an
        // atomic works on both destinations.
        let (lkey, rkey) = match a.test.verb() {
            Verb::Write | Verb::Send => (a.src_key(node, i).0, a.dst_key(peer, i).1),
            Verb::Read => (a.dst_key(node, i).0, a.src_key(peer, i).1),
            Verb::Atomic => (a.dst_key(node, i).0, a.dst_key(peer, i).1),
        };
        let mut w = SqWqe {
            signaled: a.signaled(a.pairs[i as usize].posted),
            wr_id,
            ..SqWqe::default()
        };
        match a.test.verb() {
            Verb::Write => {
                w.opcode = WrOpcode::Write;
                w.sge = Sge {
                    addr: a.src(node, i),
                    len: size,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: a.dst(peer, i),
                    rkey,
                };
            }
            Verb::Send => {
                w.opcode = WrOpcode::Send;
                w.sge = Sge {
                    addr: a.src(node, i),
                    len: size,
                    lkey,
                };
            }
            Verb::Read => {
                w.opcode = WrOpcode::Read;
                w.sge = Sge {
                    addr: a.dst(node, i),
                    len: size,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: a.src(peer, i),
                    rkey,
                };
            }
            Verb::Atomic => {
                w.sge = Sge {
                    addr: a.dst(node, i),
                    len: 8,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: a.dst(peer, i),
                    rkey,
                };
                match a.atomic {
                    AtomicOp::FetchAndAdd => {
                        w.opcode = WrOpcode::FetchAdd;
                        w.compare_add = 1;
                    }
                    AtomicOp::CmpAndSwap => {
                        w.opcode = WrOpcode::CompareSwap;
                        w.compare_add = remote_count;
                        w.swap = remote_count + 1;
                    }
                }
            }
        }
        w.inline =
            matches!(a.test.verb(), Verb::Write | Verb::Send) && size > 0 && size <= a.inline_bytes;
        w
    }

    /// A core of `node` posts one send WQE on `qpn` starting at `at`; returns when the
    /// core is free again. The doorbell is stored at the end of the post.
    pub(crate) fn post(
        &mut self,
        node: usize,
        qpn: u32,
        at: TimePs,
        cx: &mut HostCx<'_>,
    ) -> TimePs {
        self.post_list_of(node, qpn, 1, at, cx)
    }

    /// A core of `node` posts a list of `k` send WQEs on `qpn` starting at `at` (perftest
    /// `-l`): each costs `post_ps` of the core; one doorbell, stored after the last.
    fn post_list_of(
        &mut self,
        node: usize,
        qpn: u32,
        k: u32,
        at: TimePs,
        cx: &mut HostCx<'_>,
    ) -> TimePs {
        if self.warming.is_none() {
            if let Some(peak) = self.peak.as_mut() {
                // perftest's tposted: once per list, as its first WQE is begun.
                let core = usize::from(self.nodes[node].qps[qpn as usize].core);
                peak.post(at.max(self.nodes[node].cores[core].busy), u64::from(k));
            }
        }
        let mut end = at;
        for _ in 0..k {
            end = self.write_wqe(node, qpn, end, cx);
        }
        let pi = self.nodes[node].qps[qpn as usize].sq_pi;
        cx.q.push(
            end,
            Ev::Nic {
                node: node as u32,
                ev: NicEv::Mmio { qpn, pi },
            },
        );
        end
    }

    /// A core of `node` writes the next send WQE of `qpn` into its SQ from `at`; returns
    /// when the core is free again.
    fn write_wqe(&mut self, node: usize, qpn: u32, at: TimePs, cx: &mut HostCx<'_>) -> TimePs {
        let hq = self.nodes[node].qps[qpn as usize];
        let i = hq.pair;
        let core = usize::from(hq.core);
        let start = at.max(self.nodes[node].cores[core].busy);
        let pair = self.pairs[i as usize];
        let peer = if node == self.server {
            pair.c_node as usize
        } else {
            self.server
        };
        if self.sw_prefetch {
            // The prefetch register first, then the WQE is built (wqe_prep) while the NIC
            // fetches the QP's context.
            cx.q.push(
                start,
                Ev::Nic {
                    node: node as u32,
                    ev: NicEv::Prefetch(PrefetchEv::Mmio { qpn }),
                },
            );
        }
        let w = self.wqe(node, i, start, peer, pair.posted);
        if w.opcode.is_atomic() {
            // The atomic oracle checks the value it returns against these operands.
            let ops = crate::atomic_oracle::AtomicOperands {
                fetch_add: w.opcode == WrOpcode::FetchAdd,
                compare_add: w.compare_add,
                swap: w.swap,
            };
            cx.oracle.atomics.posted(node, qpn, ops);
        }
        let slot = hq.sq_pi & hq.sq_mask;
        let at_slot = hq.sq_base + u64::from(slot) * self.wqe_bytes;
        rnic_transport::Memory::write(&mut cx.mems[node], at_slot, &w.encode());
        if w.inline {
            // The inline copy of the payload, after the WQE in its slot (the NIC's WQE read
            // carries it; the transport gathers the same bytes from the buffer).
            let mut data = [0u8; 960];
            let data = &mut data[..w.sge.len as usize];
            rnic_transport::Memory::read(&cx.mems[node], w.sge.addr, data);
            rnic_transport::Memory::write(&mut cx.mems[node], at_slot + 64, data);
        }
        let pi = hq.sq_pi.wrapping_add(1);
        self.nodes[node].qps[qpn as usize].sq_pi = pi;
        self.pairs[i as usize].posted += 1;
        let end = start + self.wqe_prep_ps + self.post_ps;
        self.nodes[node].cores[core].busy = end;
        self.nodes[node].cpu_busy_ps += end - start;
        if self.warming.is_none() && self.first_post.is_none_or(|f| start < f) {
            self.first_post = Some(start);
        }
        end
    }

    /// Posts `k` receive WQEs on `qpn` of `node` (into the pair's destination buffer) with
    /// one doorbell. Each WQE costs the core `host.post_send_ns`, as a send list's do; the
    /// receives pre-posted before the test (`setup`) cost nothing, as perftest posts them
    /// before its barrier.
    pub(crate) fn post_recv(
        &mut self,
        node: usize,
        qpn: u32,
        k: u32,
        at: TimePs,
        setup: bool,
        cx: &mut HostCx<'_>,
    ) -> TimePs {
        let hq = self.nodes[node].qps[qpn as usize];
        let core = usize::from(hq.core);
        let start = at.max(self.nodes[node].cores[core].busy);
        let sge = Sge {
            addr: self.dst(node, hq.pair),
            len: self.size.max(1) + self.grh_bytes as u32,
            lkey: self.dst_key(node, hq.pair).0,
        };
        let mut pi = hq.rq_pi;
        for _ in 0..k {
            let slot = pi & hq.rq_mask;
            rnic_transport::Memory::write(
                &mut cx.mems[node],
                hq.rq_base + u64::from(slot) * self.wqe_bytes,
                &encode_rq_wqe(u64::from(pi), sge),
            );
            pi = pi.wrapping_add(1);
        }
        self.nodes[node].qps[qpn as usize].rq_pi = pi;
        self.receives_posted += u64::from(k);
        let end = if setup {
            start
        } else {
            start + self.post_ps * TimePs::from(k)
        };
        self.nodes[node].cores[core].busy = end;
        self.nodes[node].cpu_busy_ps += end - start;
        cx.q.push(
            end,
            Ev::Nic {
                node: node as u32,
                ev: NicEv::MmioRq { qpn, pi },
            },
        );
        end
    }

    /// Starts the application at time 0.
    /// Moves every time the application was built with (its window, its cores' start, the
    /// steady-state detector's start) `t0` later: it starts at `t0`, after connection
    /// setup, instead of at 0.
    pub(crate) fn shift_origin(&mut self, t0: TimePs) {
        self.origin_ps = t0;
        if t0 == 0 {
            return;
        }
        let later = |t: TimePs| if t == TimePs::MAX { t } else { t + t0 };
        self.window = (later(self.window.0), later(self.window.1));
        self.window_min_start = later(self.window_min_start);
        for n in &mut self.nodes {
            for c in n.cores.iter_mut() {
                c.busy = later(c.busy);
            }
        }
        if let Some(s) = self.steady.as_mut() {
            s.shift_start(t0);
        }
        if let Some(o) = self.opened.as_mut() {
            o.at_ps = later(o.at_ps);
        }
    }

    /// Starts the application at `at`.
    pub(crate) fn start(&mut self, at: TimePs, cx: &mut HostCx<'_>) {
        let test = self.test;
        if test.verb() == Verb::Send {
            // Receivers pre-post: the clients in bandwidth tests, both sides in send-lat.
            let depth = if test.is_latency() { 2 } else { self.rx_depth };
            for i in 0..self.pairs.len() {
                let p = self.pairs[i];
                self.post_recv(p.c_node as usize, p.c_qpn, depth, at, true, cx);
                if test.is_latency() {
                    self.post_recv(self.server, p.s_qpn, depth, at, true, cx);
                }
            }
        }
        if !self.procs.is_empty() {
            // Every process posts on its first QP at once, each on its own core.
            self.procs_active = self.procs.len();
            for pr in 0..self.procs.len() {
                self.procs_post(pr, at, cx);
            }
            return;
        }
        if test.is_latency() {
            self.lat_k = 0;
            self.lat_post_next(at, cx);
            return;
        }
        if self.warm_up > 0 {
            // perftest --perform_warm_up: the QPs warm up one after another, then the fill.
            self.warming = Some(0);
            self.warm_pair(0, at, cx);
            return;
        }
        self.start_fill(at, cx);
    }

    /// The warm-up of pair `i` from `at`: its QP posts `warm_up` operations (in post lists).
    fn warm_pair(&mut self, i: u32, at: TimePs, cx: &mut HostCx<'_>) {
        let (node, qpn) = (self.server, self.pairs[i as usize].s_qpn);
        let (mut at, mut left) = (at, self.warm_up);
        while left > 0 {
            let k = left.min(u64::from(self.post_list)) as u32;
            at = self.post_list_of(node, qpn, k, at, cx);
            left -= u64::from(k);
        }
    }

    /// Pair `i` finished its warm-up at `t`: the next pair warms up, or the run begins.
    fn warmed(&mut self, i: u32, t: TimePs, cx: &mut HostCx<'_>) {
        if (i as usize) + 1 < self.pairs.len() {
            self.warming = Some(i + 1);
            self.warm_pair(i + 1, t, cx);
        } else {
            self.warming = None;
            self.start_fill(t, cx);
        }
    }

    /// The bandwidth tests' initial fill from `at`.
    fn start_fill(&mut self, at: TimePs, cx: &mut HostCx<'_>) {
        // Bandwidth: each core fills its QPs round robin, one WQE per QP per round, one post
        // per `AppFill` event (so a million initial posts never sit in the queue at once).
        let s = self.server;
        let cores = self.nodes[s].cores.range();
        let mut per_core: Vec<Vec<u32>> = vec![Vec::new(); cores.len().max(1)];
        for p in &self.pairs {
            let c = usize::from(self.nodes[s].qps[p.s_qpn as usize].core);
            per_core[c - cores.start].push(p.s_qpn);
        }
        self.fill = per_core
            .into_iter()
            .map(|qpns| Fill {
                done: qpns.is_empty(),
                qpns,
                next: 0,
                round: 0,
            })
            .collect();
        self.filling_cores = self.fill.iter().filter(|f| !f.done).count();
        for (i, c) in cores.enumerate() {
            if !self.fill[i].qpns.is_empty() {
                cx.q.push(
                    at,
                    Ev::Host {
                        node: s as u32,
                        ev: HostEv::Fill { core: c as u32 },
                    },
                );
            }
        }
    }

    /// One step of a core's initial fill at `now`.
    pub(crate) fn on_fill(&mut self, node: usize, now: TimePs, core: u32, cx: &mut HostCx<'_>) {
        // `self.fill` holds the server's cores from the first of the flow's on.
        let c = core as usize - self.nodes[self.server].cores.range().start;
        // Rounds of one list per QP fill the tx depth.
        let depth = u64::from(self.tx_depth.div_ceil(self.post_list));
        loop {
            let f = &mut self.fill[c];
            if f.round >= depth || f.qpns.is_empty() || self.finished {
                if f.round >= depth && !f.done {
                    f.done = true;
                    self.filling_cores -= 1;
                    if self.filling_cores == 0 {
                        // The initial posting is no part of the steady state.
                        if let Some(s) = self.steady.as_mut() {
                            s.arm(now);
                        }
                    }
                    self.maybe_open(now, cx);
                }
                return;
            }
            let qpn = f.qpns[f.next];
            f.next += 1;
            if f.next == f.qpns.len() {
                f.next = 0;
                f.round += 1;
            }
            let k = self.list_len(node, qpn, now);
            if k > 0 {
                let end = self.post_list_of(node, qpn, k, now, cx);
                cx.q.push(
                    end,
                    Ev::Host {
                        node: node as u32,
                        ev: HostEv::Fill { core },
                    },
                );
                return;
            }
        }
    }

    /// How many WQEs the initiator posts on `qpn` now as one list (0: none): `post_list`,
    /// or what is left of the iterations, once tx_depth has room for all of them.
    fn list_len(&self, node: usize, qpn: u32, t: TimePs) -> u32 {
        let i = self.nodes[node].qps[qpn as usize].pair as usize;
        let p = self.pairs[i];
        let left = if self.duration_mode {
            if t < self.window.1 {
                u64::MAX
            } else {
                0
            }
        } else {
            self.per_pair_ops().saturating_sub(p.posted)
        };
        let free = u64::from(self.tx_depth).saturating_sub(p.posted - p.completed);
        let want = u64::from(self.post_list).min(left);
        if self.finished || want == 0 || free < want {
            0
        } else {
            want as u32
        }
    }

    /// `--procs`: process `pr` posts on its current QP at `at`, if work is left; otherwise
    /// it retires (and the run ends with the last process).
    fn procs_post(&mut self, pr: usize, at: TimePs, cx: &mut HostCx<'_>) {
        let work = if self.duration_mode {
            at < self.window.1
        } else {
            self.procs_posted < self.iters
        };
        if !work || self.finished {
            self.procs_active = self.procs_active.saturating_sub(1);
            if self.procs_active == 0 {
                self.finished = true;
            }
            return;
        }
        let p = &self.procs[pr];
        let i = p.pairs[p.next];
        let s_qpn = self.pairs[i as usize].s_qpn;
        self.procs_posted += 1;
        self.post(self.server, s_qpn, at, cx);
    }

    /// `--procs`: the server consumed the completion of `i` at `t` (posted at `posted`).
    fn procs_cqe(&mut self, t: TimePs, i: u32, posted: TimePs, cx: &mut HostCx<'_>) {
        self.pairs[i as usize].completed += 1;
        self.bytes_moved += self.op_bytes();
        if self.in_window(t) {
            self.samples.push(t.saturating_sub(posted) as f64 / 1e6);
            self.ops_in_window += 1;
        }
        self.count_to_window_end(t, 1);
        // Each process polls on its own core: the latest poll, not the last handled.
        self.last_completion = self.last_completion.max(t);
        self.observe(t, i);
        let n = self.procs.len();
        let pr = i as usize % n;
        let p = &mut self.procs[pr];
        p.next = (p.next + 1) % p.pairs.len();
        if p.next == 0 {
            p.rounds += 1;
            if self.warming_procs > 0 && p.rounds == self.warmup_rounds {
                self.warming_procs -= 1;
            }
        }
        self.maybe_open(t, cx);
        self.procs_post(pr, t + self.latency_gap_ps, cx);
    }

    /// Latency tests: the client of the current iteration's pair posts at `at`.
    pub(crate) fn lat_post_next(&mut self, at: TimePs, cx: &mut HostCx<'_>) {
        let q = self.pairs.len() as u64;
        let i = (self.lat_k % q) as u32;
        let p = self.pairs[i as usize];
        let c = p.c_node as usize;
        if self.lat_defer(c, i, at) {
            return;
        }
        let core = usize::from(self.nodes[c].qps[p.c_qpn as usize].core);
        let start = at.max(self.nodes[c].cores[core].busy);
        self.lat_post = start;
        self.lat_ponged = false;
        if self.test.verb() == Verb::Write {
            // The poll byte: the last byte of the buffer carries the iteration count.
            let v = (self.lat_k / q + 1) as u8;
            let addr = self.src(c, i) + u64::from(self.size.max(1)) - 1;
            rnic_transport::Memory::write(&mut cx.mems[c], addr, &[v]);
            cx.oracle.set_last_byte(c, self.oracle_slot(i), v);
        }
        self.post(c, p.c_qpn, start, cx);
        self.lat_arm_give_up(c, p.c_qpn, start, cx);
    }

    /// Latency tests: the client of the current iteration saw the answer at `t`.
    fn lat_iteration_done(&mut self, t: TimePs, cx: &mut HostCx<'_>) {
        let full = t.saturating_sub(self.lat_post);
        let (sample, ways) = match self.test {
            PerfTest::WriteLat | PerfTest::SendLat => (full as f64 / 2.0, 2),
            _ => (full as f64, 1),
        };
        self.bytes_moved += ways * self.op_bytes();
        // Duration mode counts the iterations that end inside the window.
        if self.in_window(t) {
            self.samples.push(sample / 1e6);
            self.ops_in_window += 1;
        }
        self.count_to_window_end(t, 1);
        self.last_completion = self.last_completion.max(t);
        self.observe(t, (self.lat_k % self.pairs.len() as u64) as u32);
        self.lat_k += 1;
        self.maybe_open(t, cx);
        let done = if self.duration_mode {
            t >= self.window.1
        } else {
            self.lat_k >= self.iters
        };
        if done {
            self.finished = true;
            return;
        }
        self.lat_post_next(t + self.latency_gap_ps, cx);
    }

    /// The server answers a ping of pair `i` at `at` (write-lat and send-lat).
    fn lat_pong(&mut self, i: u32, at: TimePs, cx: &mut HostCx<'_>) {
        if self.lat_defer(self.server, i, at) {
            return;
        }
        let p = self.pairs[i as usize];
        if self.test.verb() == Verb::Write {
            let q = self.pairs.len() as u64;
            let v = (self.lat_k / q + 1) as u8;
            let s = self.server;
            let addr = self.src(s, i) + u64::from(self.size.max(1)) - 1;
            rnic_transport::Memory::write(&mut cx.mems[s], addr, &[v]);
            cx.oracle.set_last_byte(s, self.oracle_slot(i), v);
        }
        self.post(self.server, p.s_qpn, at, cx);
    }

    /// An RDMA WRITE payload landed in `node`'s memory for `qpn` (write-lat polling).
    pub(crate) fn on_landed(&mut self, node: usize, now: TimePs, qpn: u32, cx: &mut HostCx<'_>) {
        if self.test != PerfTest::WriteLat || self.finished || !self.procs.is_empty() {
            return;
        }
        let Some(hq) = self.nodes[node].qps.get(qpn as usize).copied() else {
            return;
        };
        let i = hq.pair;
        let q = self.pairs.len() as u64;
        let current = u64::from(i) == self.lat_k % q;
        // The server answers each ping once; the client waits for the answer.
        if !current || (node == self.server) == self.lat_ponged {
            self.stale_polls += 1;
            return;
        }
        let expect = (self.lat_k / q + 1) as u8;
        let addr = self.dst(node, i) + u64::from(self.size.max(1)) - 1;
        let mut b = [0u8; 1];
        rnic_transport::Memory::read(&cx.mems[node], addr, &mut b);
        if b[0] != expect {
            // A retransmitted or duplicated older write: the poll loop keeps waiting.
            self.stale_polls += 1;
            return;
        }
        let core = usize::from(hq.core);
        let seen = (now + self.mem_ps).max(self.nodes[node].cores[core].busy);
        if node == self.server {
            self.lat_ponged = true;
            self.lat_pong(i, seen, cx);
        } else {
            self.lat_iteration_done(seen, cx);
        }
    }

    /// Bandwidth tests in iteration mode: an initiator's work request of a pair completed
    /// in error. Its QP is in ERR and flushes what it holds, so once every operation the
    /// pair posted is either completed or failed, the pair is done (it can post nothing
    /// more), and with every pair done the application is finished: the run ends at the
    /// last report, polled at `t`, instead of at a timer its QPs armed before they failed.
    /// An error report is a completion the application waited for, so the measured time
    /// runs to it (the retransmission timeouts a failed QP waited out stay in it).
    fn bw_pair_failed(&mut self, node: usize, cqe: &Cqe, t: TimePs) {
        if self.is_lat() || !self.procs.is_empty() || self.duration_mode || cqe.is_recv {
            return;
        }
        self.last_completion = self.last_completion.max(t);
        let Some(hq) = self.nodes[node].qps.get(cqe.qpn as usize).copied() else {
            return;
        };
        let p = &mut self.pairs[hq.pair as usize];
        let was_open = p.completed + p.failed < p.posted;
        p.failed += 1;
        if was_open && p.completed + p.failed == p.posted {
            self.pairs_done += 1;
            if self.pairs_done == self.pairs.len() {
                self.finished = true;
            }
        }
    }

    /// A CQE landed in CQ `cq` of `node`: the core polls and consumes it.
    pub(crate) fn on_cqe(&mut self, node: usize, now: TimePs, cq: u32, cx: &mut HostCx<'_>) {
        let core = (cq / 2) as usize;
        let kind = (cq % 2) as usize;
        let ring = self.nodes[node].cores[core].cq[kind];
        let slot = ring.ci & ((1 << ring.log_depth) - 1);
        let pass = ring.ci >> ring.log_depth;
        let mut buf = [0u8; 64];
        rnic_transport::Memory::read(&cx.mems[node], ring.base + slot * CQE_BYTES, &mut buf);
        let Some(cqe) = decode_cqe(&buf, pass) else {
            self.err(format!(
                "node {node} CQ {cq}: no valid CQE at index {}",
                ring.ci
            ));
            return;
        };
        self.nodes[node].cores[core].cq[kind].ci += 1;
        // Publish the consumer index in the doorbell record, where the NIC reads it.
        let ci = self.nodes[node].cores[core].cq[kind].ci;
        rnic_transport::Memory::write(&mut cx.mems[node], ring.ci_record, &ci.to_le_bytes());
        let c = &mut self.nodes[node].cores[core];
        let start = match self.cq_event_ps {
            // Asleep on the completion channel: the interrupt wakes the thread.
            Some(wake) if c.busy <= now => {
                self.cq_wakeups += 1;
                now + wake
            }
            // Polling: the core sees the CQE's DMA write after the host memory latency,
            // as it sees a received byte (write-lat), or when it is next free.
            _ => (now + self.mem_ps).max(c.busy),
        };
        let t = start + self.poll_ps;
        c.busy = t;
        self.nodes[node].cpu_busy_ps += self.poll_ps;
        if cqe.status != 0 {
            let name = wc_status_name(cqe.status);
            self.err(format!(
                "node {node} QP {} completed a work request with {name}",
                cqe.qpn
            ));
            *self.error_statuses.entry(name).or_default() += 1;
            self.bw_pair_failed(node, &cqe, t);
            return;
        }
        if self.finished {
            return;
        }
        let Some(hq) = self.nodes[node].qps.get(cqe.qpn as usize).copied() else {
            return;
        };
        let i = hq.pair;
        if !self.procs.is_empty() {
            if node == self.server && !cqe.is_recv {
                self.procs_cqe(t, i, cqe.wr_id, cx);
            }
            return;
        }
        if self.is_lat() {
            self.lat_cqe(node, t, cqe.is_recv, cqe.qpn, i, cx);
            return;
        }
        if cqe.is_recv {
            // SEND bandwidth target: keep the receive queue full, a list at a time.
            let q = &mut self.nodes[node].qps[cqe.qpn as usize];
            q.rq_owed += 1;
            if q.rq_owed >= self.recv_post_list {
                let k = std::mem::take(&mut q.rq_owed);
                self.post_recv(node, cqe.qpn, k, t, false, cx);
            }
            return;
        }
        // Bandwidth initiator completion. Operations and their latencies count inside the
        // window only (iteration mode: the whole run), as the rate does.
        // One CQE reports every operation since the previous signaled one (-Q).
        let done = self.pairs[i as usize].completed;
        let ops = self.covered(done);
        let bytes = match self.size_mix {
            None => self.op_bytes() * ops,
            Some(_) => (done..done + ops)
                .map(|k| u64::from(self.op_size(i, k)))
                .sum(),
        };
        self.pairs[i as usize].completed += ops;
        self.bytes_moved += bytes;
        if self.warming.is_some() {
            // The warm-up: not measured; its QP's last completion starts the next.
            let p = self.pairs[i as usize];
            if self.warming_pairs > 0
                && done < self.warmup_rounds
                && p.completed >= self.warmup_rounds
            {
                self.warming_pairs -= 1;
            }
            if self.warming == Some(i) && p.completed >= self.warm_up {
                self.warmed(i, t, cx);
            }
            return;
        }
        // The latest poll, not the last handled: a busy core polls its CQE later than
        // another core polls a later one.
        self.last_completion = self.last_completion.max(t);
        if let Some(peak) = self.peak.as_mut() {
            // perftest's tcompleted: once per CQE, as it is polled.
            peak.complete(t, ops);
        }
        self.count_to_window_end(t, ops);
        if self.in_window(t) {
            self.ops_in_window += ops;
            self.bytes_in_window += bytes;
            let lat = t.saturating_sub(cqe.wr_id);
            self.hist.record(lat);
            let us = lat as f64 / 1e6;
            self.lat_sum_us += us;
            self.lat_sumsq_us += us * us;
        }
        for _ in 0..ops {
            self.observe(t, i);
        }
        let p = self.pairs[i as usize];
        if self.warming_pairs > 0 && done < self.warmup_rounds && p.completed >= self.warmup_rounds
        {
            self.warming_pairs -= 1;
        }
        self.maybe_open(t, cx);
        let mut k = self.list_len(node, cqe.qpn, t);
        if k > 0 {
            // Refill the slots this CQE freed (several lists when it reported several
            // operations, -Q); slots still free from the initial fill are the fill's.
            let (mut at, mut refilled) = (t, 0);
            while k > 0 && refilled < ops {
                at = self.post_list_of(node, cqe.qpn, k, at, cx);
                refilled += u64::from(k);
                k = self.list_len(node, cqe.qpn, at);
            }
        } else if !self.duration_mode && p.completed == self.per_pair_ops() {
            self.pairs_done += 1;
            if self.pairs_done == self.pairs.len() {
                self.finished = true;
            }
        }
    }

    fn lat_cqe(
        &mut self,
        node: usize,
        t: TimePs,
        is_recv: bool,
        qpn: u32,
        i: u32,
        cx: &mut HostCx<'_>,
    ) {
        match self.test.verb() {
            Verb::Send if is_recv => {
                self.post_recv(node, qpn, 1, t, false, cx);
                let t = self.nodes[node].cores
                    [usize::from(self.nodes[node].qps[qpn as usize].core)]
                .busy;
                if node == self.server {
                    self.lat_pong(i, t, cx);
                } else {
                    self.lat_iteration_done(t, cx);
                }
            }
            Verb::Read | Verb::Atomic if node != self.server && !is_recv => {
                self.pairs[i as usize].completed += 1;
                self.lat_iteration_done(t, cx);
            }
            _ => {
                if !is_recv {
                    self.pairs[i as usize].completed += 1;
                    self.lat_send_done(node, t, cx);
                }
            }
        }
    }

    /// write-lat and send-lat: whether `node`'s post for pair `i` at `at` must wait for its
    /// previous send's completion (then it is kept, and made by [`Self::lat_send_done`]);
    /// otherwise the post is marked in flight.
    fn lat_defer(&mut self, node: usize, i: u32, at: TimePs) -> bool {
        if !matches!(self.test, PerfTest::WriteLat | PerfTest::SendLat) {
            return false;
        }
        if self.lat_sends.len() <= node {
            self.lat_sends.resize(node + 1, (false, None));
        }
        let s = &mut self.lat_sends[node];
        if s.0 {
            s.1 = Some((i, at));
            return true;
        }
        s.0 = true;
        false
    }

    /// write-lat and send-lat: `node`'s send completed (its CQE polled at `t`); a post that
    /// waited for it goes now.
    fn lat_send_done(&mut self, node: usize, t: TimePs, cx: &mut HostCx<'_>) {
        let Some(s) = self.lat_sends.get_mut(node) else {
            return;
        };
        s.0 = false;
        let Some((i, at)) = s.1.take() else {
            return;
        };
        let at = at.max(t);
        if node == self.server {
            self.lat_pong(i, at, cx);
        } else {
            self.lat_post_next(at, cx);
        }
    }
}
