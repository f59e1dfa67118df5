//! What a flow's test is: fixed when the application is built, read by every other part.

use crate::workload::{AtomicOp, PerfTest};

/// The test's definition: its kind, sizes, iterations, depths and posting options, the
/// buffers' geometry and the QPs' service. Nothing here changes while the test runs, so
/// the methods that answer from it alone (an operation's size, whether it is signaled)
/// live here.
#[derive(Debug, Clone)]
pub struct TestSpec {
    /// Test.
    pub test: PerfTest,
    /// Atomic op of atomic tests.
    pub atomic: AtomicOp,
    /// Message size, bytes (with `size_mix`: the largest, which the buffers hold).
    pub size_bytes: u32,
    /// Bandwidth tests: each operation's size drawn from this mix ([`TestSpec::op_size`]).
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
    pub warm_up_ops: u64,
    /// Buffer stride per pair, bytes.
    pub stride_bytes: u64,
    /// Bytes of one SQ/RQ ring slot (`nic.wqe_bytes`; the WQE format fills the first 64).
    pub wqe_bytes: u64,
    /// Duration mode (`-D`): posting stops and counting ends at the window's end.
    pub duration_mode: bool,
    /// The QPs' service is UC or UD: a message may be lost, never resent. The sender's
    /// completion (at transmission) drives the test; the receiver only re-posts.
    pub unreliable: bool,
    /// Bytes before the payload in each receive buffer (UD's GRH area: 40; else 0).
    pub grh_bytes: u64,
    /// Distinct buffer slots per node (pair i uses slot i mod slots).
    pub slots: u32,
    /// The run-wide number of this application's slot 0 (0 for the first flow).
    pub slot_base: u32,
    /// Duration mode: the window opens only after every QP has been used this many times
    /// (`sim.warmup_rounds`), so caches reach their steady state first.
    pub warmup_rounds: u64,
}

impl TestSpec {
    /// Whether the test is a latency test.
    pub fn is_lat(&self) -> bool {
        self.test.is_latency()
    }

    /// The key of pair `i`'s size draws: unique across the run's flows (their buffer slots
    /// are), the same for the sender and the payload oracle.
    pub fn mix_key(&self, i: u32) -> u64 {
        (u64::from(self.slot_base) << 32) | u64::from(i)
    }

    /// Bytes of operation `k` (0-based, in posting order) of pair `i`.
    pub fn op_size(&self, i: u32, k: u64) -> u32 {
        match &self.size_mix {
            None => self.size_bytes,
            Some(m) => m.draw(self.seed, self.mix_key(i), k) as u32,
        }
    }

    /// Payload bytes one operation moves (the largest, with a size mix).
    pub fn op_bytes(&self) -> u64 {
        self.test.op_bytes(u64::from(self.size_bytes))
    }

    /// Operations each pair does in iteration mode: the warm-up's, then `iters`.
    pub(crate) fn per_pair_ops(&self) -> u64 {
        self.iters + self.warm_up_ops
    }

    /// Whether a pair's operation `k` (from 0) asks for a CQE: every `cq_mod`-th, and the
    /// last of an iteration run (perftest -Q), so the application learns of every
    /// completion.
    pub(crate) fn signaled(&self, k: u64) -> bool {
        let m = u64::from(self.cq_mod);
        m <= 1
            || (k + 1).is_multiple_of(m)
            || (!self.duration_mode && k + 1 == self.per_pair_ops())
            || k + 1 == self.warm_up_ops
    }

    /// Operations of a pair that the CQE after its `done` completed ones reports: up to
    /// and including the next signaled one (perftest -Q: one CQE per `cq_mod`).
    pub(crate) fn covered(&self, done: u64) -> u64 {
        (done..)
            .find(|&k| self.signaled(k))
            .map_or(1, |k| k + 1 - done)
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
}
