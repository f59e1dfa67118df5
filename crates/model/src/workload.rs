//! What a run does: the perftest-style tests rnic imitates ([`PerfTest`]), the verbs they
//! exercise, and the resolved specification of one run ([`PerfSpec`]).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The perftest programs rnic imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PerfTest {
    /// ib_write_bw: RDMA WRITE bandwidth.
    WriteBw,
    /// ib_write_lat: RDMA WRITE ping-pong latency.
    WriteLat,
    /// ib_read_bw: RDMA READ bandwidth.
    ReadBw,
    /// ib_read_lat: RDMA READ latency.
    ReadLat,
    /// ib_send_bw: SEND bandwidth.
    SendBw,
    /// ib_send_lat: SEND ping-pong latency.
    SendLat,
    /// ib_atomic_bw: atomic (fetch-and-add or compare-and-swap) bandwidth.
    AtomicBw,
    /// ib_atomic_lat: atomic latency.
    AtomicLat,
}

/// The verb a test exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    Write,
    Read,
    Send,
    Atomic,
}

impl PerfTest {
    /// All tests, in CLI order.
    pub const ALL: [PerfTest; 8] = [
        PerfTest::WriteBw,
        PerfTest::WriteLat,
        PerfTest::ReadBw,
        PerfTest::ReadLat,
        PerfTest::SendBw,
        PerfTest::SendLat,
        PerfTest::AtomicBw,
        PerfTest::AtomicLat,
    ];

    /// CLI name, e.g. `write-bw`.
    pub fn name(self) -> &'static str {
        match self {
            PerfTest::WriteBw => "write-bw",
            PerfTest::WriteLat => "write-lat",
            PerfTest::ReadBw => "read-bw",
            PerfTest::ReadLat => "read-lat",
            PerfTest::SendBw => "send-bw",
            PerfTest::SendLat => "send-lat",
            PerfTest::AtomicBw => "atomic-bw",
            PerfTest::AtomicLat => "atomic-lat",
        }
    }

    /// What the test measures, as perftest's program (for help texts).
    pub fn description(self) -> &'static str {
        match self {
            PerfTest::WriteBw => "ib_write_bw: RDMA WRITE bandwidth",
            PerfTest::WriteLat => "ib_write_lat: RDMA WRITE ping-pong latency",
            PerfTest::ReadBw => "ib_read_bw: RDMA READ bandwidth",
            PerfTest::ReadLat => "ib_read_lat: RDMA READ latency",
            PerfTest::SendBw => "ib_send_bw: SEND bandwidth",
            PerfTest::SendLat => "ib_send_lat: SEND ping-pong latency",
            PerfTest::AtomicBw => {
                "ib_atomic_bw: atomic (fetch-and-add or compare-and-swap) bandwidth"
            }
            PerfTest::AtomicLat => "ib_atomic_lat: atomic latency",
        }
    }

    /// Parses a CLI name.
    pub fn from_name(s: &str) -> Option<PerfTest> {
        PerfTest::ALL.into_iter().find(|t| t.name() == s)
    }

    /// The verb exercised.
    pub fn verb(self) -> Verb {
        match self {
            PerfTest::WriteBw | PerfTest::WriteLat => Verb::Write,
            PerfTest::ReadBw | PerfTest::ReadLat => Verb::Read,
            PerfTest::SendBw | PerfTest::SendLat => Verb::Send,
            PerfTest::AtomicBw | PerfTest::AtomicLat => Verb::Atomic,
        }
    }

    /// A latency test (one operation in flight, per-operation latency reported).
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            PerfTest::WriteLat | PerfTest::ReadLat | PerfTest::SendLat | PerfTest::AtomicLat
        )
    }

    /// perftest's default message size: 65536 for bandwidth, 2 for latency, 8 for atomics.
    pub fn default_size(self) -> u64 {
        match (self.verb(), self.is_latency()) {
            (Verb::Atomic, _) => ATOMIC_SIZE,
            (_, true) => 2,
            (_, false) => 65536,
        }
    }

    /// Payload bytes one operation of `size` bytes moves: an atomic always moves its 8
    /// (`ATOMIC_SIZE`), whatever `-s` says.
    pub fn op_bytes(self, size: u64) -> u64 {
        if self.verb() == Verb::Atomic {
            ATOMIC_SIZE
        } else {
            size
        }
    }

    /// perftest's default iteration count: 5000 for bandwidth, 1000 for latency.
    pub fn default_iters(self) -> u64 {
        if self.is_latency() {
            1000
        } else {
            5000
        }
    }

    /// perftest's default TX depth: 128 for bandwidth, 1 for latency.
    pub fn default_tx_depth(self) -> u32 {
        if self.is_latency() {
            1
        } else {
            128
        }
    }
}

impl std::fmt::Display for PerfTest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The atomic operation of atomic tests (perftest `-A`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomicOp {
    /// Fetch and add (perftest's default).
    #[default]
    FetchAndAdd,
    /// Compare and swap.
    CmpAndSwap,
}

impl AtomicOp {
    /// Both operations.
    pub const ALL: [AtomicOp; 2] = [AtomicOp::FetchAndAdd, AtomicOp::CmpAndSwap];

    /// Parses perftest's spelling, in either case (`FETCH_AND_ADD`, `cmp_and_swap`).
    pub fn from_name(s: &str) -> Option<AtomicOp> {
        AtomicOp::ALL
            .into_iter()
            .find(|a| a.perftest_name().eq_ignore_ascii_case(s))
    }

    /// perftest's spelling.
    pub fn perftest_name(self) -> &'static str {
        match self {
            AtomicOp::FetchAndAdd => "FETCH_AND_ADD",
            AtomicOp::CmpAndSwap => "CMP_AND_SWAP",
        }
    }
}

/// Atomic operations move 8 bytes.
pub const ATOMIC_SIZE: u64 = 8;
/// Largest RDMA message (2 GiB, the IB limit).
pub const MAX_MSG_BYTES: u64 = 1 << 31;
/// Largest `-a` size, as perftest (2^23).
pub const MAX_ALL_SIZE: u64 = 1 << 23;
/// Most QPs a run may use.
pub const MAX_QPS: u64 = 1 << 20;
/// Largest send or receive queue depth (`-t`, `-r`): each queue is a power-of-two ring of at
/// most the device's `max_qp_wr` WQEs (32,768, as ConnectX reports), so a deeper one could
/// not be created.
pub const MAX_TX_DEPTH: u64 = 1 << 15;
/// Iteration limits (perftest: at least 5, at most 10^8).
pub const MIN_ITERS: u64 = 5;
pub const MAX_ITERS: u64 = 100_000_000;
/// Longest `-D`, seconds of simulated time.
pub const MAX_DURATION_S: f64 = 3600.0;
/// Most client hosts.
pub const MAX_CLIENTS: u64 = 4096;
/// Most memory regions per node (`--mrs`).
pub const MAX_MRS: u64 = 1 << 20;
/// Most server processes of a `--procs` latency test.
pub const MAX_PROCS: u64 = 1024;

/// The sizes of `-a`: 2, 4, ..., 2^23, as perftest.
pub fn all_sizes() -> Vec<u64> {
    (1..=23).map(|e| 1u64 << e).collect()
}

/// A run's capture (`--pcap FILE`, `--pcap-node N`): the file, and the node whose port
/// it records, both directions, as tcpdump on that host's interface would.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PcapOut {
    /// The pcap file.
    pub path: PathBuf,
    /// The node whose port is captured (0: `rnic perf`'s server).
    pub node: u64,
}

impl PcapOut {
    /// A capture of node 0's port, the server's, written to `path`.
    pub fn of_server(path: PathBuf) -> PcapOut {
        PcapOut { path, node: 0 }
    }

    /// `node` as an index, if a network of `n_nodes` has it; else the error that refuses
    /// the run (before its file is created), naming the flag and the nodes there are.
    pub fn node_in(node: u64, n_nodes: usize) -> Result<usize, crate::UsageError> {
        if let Some(node) = usize::try_from(node).ok().filter(|&n| n < n_nodes) {
            return Ok(node);
        }
        let last = n_nodes.saturating_sub(1);
        Err(crate::UsageError(format!(
            "--pcap-node (output.pcap_node) = {node}: the network has nodes 0 to {last} (node \
             0 and net.clients = {last}); name one of them"
        )))
    }
}

/// Everything a runner needs besides the `Config`: the resolved test and its parameters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfSpec {
    /// Which test.
    pub test: PerfTest,
    /// Atomic operation (atomic tests only).
    pub atomic: AtomicOp,
    /// Message sizes in bytes, run in this order: one entry, or perftest's `-a` list.
    pub sizes: Vec<u64>,
    /// Iterations (`-n`) per size and per QP, as perftest: each QP posts this many
    /// operations, and perftest's bandwidth table reports `iters × qps`.
    pub iters: u64,
    /// QPs on the server (`-q`), spread round robin over the clients.
    pub qps: u32,
    /// Send queue depth per QP (`-t`): operations in flight per QP.
    pub tx_depth: u32,
    /// `Some(window)`: duration mode (`-D`), run for this much simulated time after
    /// `sim.warmup_us` and count completions; `None`: iteration mode.
    pub duration_us: Option<f64>,
    /// Client hosts (= `config.net.clients`).
    pub clients: u32,
    /// Write the frames on one node's port (the server's, node 0, unless it names
    /// another) to a pcap file.
    pub pcap: Option<PcapOut>,
    /// `Some(n)` (`--procs`, latency tests only): csRNA's latency test. The server runs
    /// `n` processes on cores 0..n; process p owns QPs p, p+n, p+2n, ... and posts one
    /// operation at a time, moving to its next QP after each completion, so the processes
    /// contend for the NIC concurrently. `None`: perftest's ping-pong.
    pub procs: Option<u32>,
    /// Attributes of the QP pairs: pair i gets `qp_profiles[i % len]` at both ends; empty:
    /// every pair gets the config's (`qp.*`).
    pub qp_profiles: Vec<QpProfile>,
    /// Memory regions each node registers over its buffers: with more than one, the buffer
    /// slots form `mrs` contiguous groups, each registered as its own regions (source and
    /// destination buffers), so the MPT and MTT caches see that many regions.
    pub mrs: u32,
    /// Memory regions each client node registers instead (`None`: `mrs`), e.g. one on the
    /// targets while the initiator spreads its buffers over many.
    pub client_mrs: Option<u32>,
    /// `--mr_per_qp`: each flow's nodes register one region per QP of the flow, as perftest
    /// registers one per QP of each process: `mrs` is the server's flow's `-q`, and each
    /// client's flow of `-b`/`--reversed` registers its share of them (not `mrs`, which
    /// left regions over no buffer and was refused).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mr_per_qp: bool,
    /// Which way a bandwidth test's traffic goes (perftest -b, --reversed).
    pub direction: Direction,
}

/// Which nodes initiate a bandwidth test's operations.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The server (node 0) initiates, towards the clients: rnic's default.
    #[default]
    Forward,
    /// The clients initiate, towards the server (perftest --reversed).
    Reverse,
    /// Both at once, on separate QPs and buffers (perftest -b/--bidirectional); the rates
    /// count both directions' operations over their common span.
    Both,
}

impl Direction {
    /// Whether the server initiates.
    pub fn forward(self) -> bool {
        self != Direction::Reverse
    }

    /// Whether the clients initiate.
    pub fn reverse(self) -> bool {
        self != Direction::Forward
    }
}

/// The attributes one QP pair is created with; they travel from the workload to the NIC
/// (its per-QP records) and the transport (modify_qp). Both ends of a pair get the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct QpProfile {
    /// Path MTU, bytes.
    pub pmtu: u32,
    /// Packet window: PSNs in flight at most.
    pub window_psns: u32,
    /// AckReq on every this many packets inside a long message.
    pub ack_req_every: u32,
    /// How the QP detects and repairs loss.
    pub reliability: crate::config::Reliability,
    /// The tenant the QP belongs to (a label the NIC may schedule by).
    pub tenant: u16,
}

impl QpProfile {
    /// The profile the config's `qp.*` fields give, tenant 0.
    pub fn from_config(cfg: &crate::config::Config) -> QpProfile {
        QpProfile {
            pmtu: cfg.qp.pmtu,
            window_psns: cfg.qp.window_psns,
            ack_req_every: cfg.qp.ack_req_every,
            reliability: cfg.qp.reliability,
            tenant: 0,
        }
    }
}

impl PerfSpec {
    /// `test` as perftest runs it with no flags: its default size, iterations and tx depth,
    /// one QP, one client, iteration mode, one memory region, the server initiating. Callers
    /// change what they need with struct update syntax.
    pub fn perftest(test: PerfTest) -> PerfSpec {
        PerfSpec {
            test,
            atomic: AtomicOp::default(),
            sizes: vec![test.default_size()],
            iters: test.default_iters(),
            qps: 1,
            tx_depth: test.default_tx_depth(),
            duration_us: None,
            clients: 1,
            pcap: None,
            procs: None,
            qp_profiles: Vec::new(),
            mrs: 1,
            client_mrs: None,
            mr_per_qp: false,
            direction: Direction::default(),
        }
    }

    /// The profile of pair `i`.
    pub fn profile(&self, cfg: &crate::config::Config, i: u32) -> QpProfile {
        if self.qp_profiles.is_empty() {
            QpProfile::from_config(cfg)
        } else {
            self.qp_profiles[i as usize % self.qp_profiles.len()]
        }
    }

    /// The largest path MTU any pair uses.
    pub fn max_pmtu(&self, cfg: &crate::config::Config) -> u32 {
        self.qp_profiles
            .iter()
            .map(|p| p.pmtu)
            .max()
            .unwrap_or(cfg.qp.pmtu)
    }
}

/// The rules of the QP service (`qp.transport`, perftest -c): UC carries SEND and WRITE,
/// UD only SEND, of at most one path MTU (`size`, the largest message, against `pmtu`), as
/// perftest allows them; READ and atomics need RC. Checked when options are resolved and
/// again by the model for specs built directly.
pub fn check_transport(
    test: PerfTest,
    transport: crate::config::Transport,
    size: u64,
    pmtu: u32,
) -> Result<(), String> {
    use crate::config::Transport;
    let name = match transport {
        Transport::Rc => return Ok(()),
        Transport::Uc => "UC",
        Transport::Ud => "UD",
    };
    let ok = match transport {
        Transport::Ud => test.verb() == Verb::Send,
        _ => matches!(test.verb(), Verb::Send | Verb::Write),
    };
    if !ok {
        let carries = if transport == Transport::Ud {
            "send-bw and send-lat"
        } else {
            "send-bw, send-lat, write-bw and write-lat"
        };
        return Err(format!(
            "{test} needs an RC QP: -c/--connection {name} (qp.transport) runs {carries}, as \
             perftest allows; leave out -c or give -c RC"
        ));
    }
    if transport == Transport::Ud && size > u64::from(pmtu) {
        return Err(format!(
            "-c UD: a UD message is one packet, but -s/--size (perf.size) = {size} exceeds the path MTU \
             qp.pmtu = {pmtu}; give -s {pmtu} or less (or raise -m/--mtu (perf.mtu), up to 4096)"
        ));
    }
    Ok(())
}

/// UD on a network that duplicates frames (`net.impair.dup`) is refused: a UD receiver
/// checks no PSN, so a copy is delivered as a message of its own and takes a receive meant
/// for a later one. A ping-pong then completes an iteration with a stale copy, faster than
/// the wire allows, and the counts of messages sent, received and lost no longer balance.
pub fn check_ud_duplicates(cfg: &crate::config::Config) -> Result<(), String> {
    // Duplicated acknowledgements only (`direction = "acks"`) meet no UD datagram.
    let on_data = cfg.net.impair.direction != crate::config::ImpairDirection::Acks;
    if cfg.qp.transport == crate::config::Transport::Ud && cfg.net.impair.dup > 0.0 && on_data {
        return Err(format!(
            "net.impair.dup = {} with qp.transport = \"ud\" (-c UD): a UD receiver checks no \
             PSN, so every copy the network makes would be delivered as a message of its own, \
             taking a receive meant for a later message (a ping-pong would complete with the \
             copy, faster than the wire); rnic does not model that: set net.impair.dup = 0 \
             for UD runs, or use -c UC or RC, whose receivers drop duplicates",
            cfg.net.impair.dup
        ));
    }
    Ok(())
}

/// `qp.reliability` other than go-back-N (ORNIC's out-of-order WRITE WQEs, MP-RDMA) is a
/// scheme of acknowledged, resent WRITEs on RC QPs: UC and UD send no acknowledgement, so
/// the sender waited for ones that never came (2 billion events on a 5-WRITE UC run).
pub fn check_reliability_transport(cfg: &crate::config::Config) -> Result<(), String> {
    use crate::config::{Reliability, Transport};
    let scheme = match cfg.qp.reliability {
        Reliability::Gbn => return Ok(()),
        Reliability::Ornic => "ornic",
        Reliability::MpRdma => "mp_rdma",
    };
    let service = match cfg.qp.transport {
        Transport::Rc => return Ok(()),
        Transport::Uc => "UC",
        Transport::Ud => "UD",
    };
    Err(format!(
        "qp.reliability = \"{scheme}\" acknowledges and resends out-of-order WRITEs on RC QPs, \
         but -c {service} (qp.transport) sends no acknowledgement: leave out -c (RC), or set \
         qp.reliability = \"gbn\" (--set qp.reliability=gbn)"
    ))
}

/// The config name of an out-of-order reliability mode (ORNIC's, MP-RDMA's); `None` for
/// go-back-N, which runs every test.
pub fn ooo_scheme(reliability: crate::config::Reliability) -> Option<&'static str> {
    use crate::config::Reliability;
    match reliability {
        Reliability::Gbn => None,
        Reliability::Ornic => Some("ornic"),
        Reliability::MpRdma => Some("mp_rdma"),
    }
}

/// Whether an out-of-order reliability mode runs `test`: WRITE and READ bandwidth only.
pub fn ooo_runs(test: PerfTest) -> bool {
    matches!(test, PerfTest::WriteBw | PerfTest::ReadBw)
}

/// An out-of-order reliability mode (ORNIC's, MP-RDMA's) runs WRITE and READ bandwidth
/// tests only: the refusal for `test` under `reliability`, naming `who` (the flow), or
/// `None` when it runs. A request the model cannot run is bad input (exit 2), checked
/// before any run (every point of a sweep), not a model failure after it.
pub fn reliability_refuses(
    reliability: crate::config::Reliability,
    test: PerfTest,
    who: &str,
) -> Option<String> {
    let scheme = ooo_scheme(reliability).filter(|_| !ooo_runs(test))?;
    Some(format!(
        "qp.reliability = \"{scheme}\" sends out-of-order WRITE and READ WQEs only, so {who} \
         cannot run {test}: use write-bw or read-bw, or set qp.reliability = \"gbn\" (--set \
         qp.reliability=gbn)"
    ))
}

/// The rules of `--procs n` (csRNA's latency test): a latency test other than send-lat
/// (the server initiates), a core per process, a QP per process. Checked when options are
/// resolved and again by the model for specs built directly.
pub fn check_procs(test: PerfTest, n: u32, cores: u32, qps: u32) -> Result<(), String> {
    if !matches!(
        test,
        PerfTest::WriteLat | PerfTest::ReadLat | PerfTest::AtomicLat
    ) {
        return Err(format!(
            "--procs (perf.procs) applies to write-lat, read-lat and atomic-lat, not {test}"
        ));
    }
    if n > cores {
        return Err(format!(
            "--procs {n} needs a core per process, but host.cores = {cores}: raise host.cores \
             (--set host.cores={n}) or lower --procs"
        ));
    }
    if n > qps {
        return Err(format!(
            "--procs {n} needs at least one QP per process, but -q/--qp = {qps}"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod depth_tests {
    /// The depth bound is the device's: a ring rounded up to a power of two within it is
    /// created, one past it is refused by the device (`max_qp_wr`).
    #[test]
    fn the_queue_depth_bound_is_the_devices_max_qp_wr() {
        let max_qp_wr = rnic_transport::DeviceConfig::default().max_qp_wr;
        assert_eq!(super::MAX_TX_DEPTH, u64::from(max_qp_wr));
        assert!(super::MAX_TX_DEPTH.is_power_of_two());
    }
}

#[cfg(test)]
mod capture_tests {
    use super::PcapOut;

    /// A capture names a node the network has: 0 to `n_nodes - 1`; the refusal names the
    /// flag and the nodes there are, whatever the number given.
    #[test]
    fn a_captured_node_is_one_the_network_has() {
        assert_eq!(PcapOut::node_in(0, 1).unwrap(), 0);
        assert_eq!(PcapOut::node_in(15, 16).unwrap(), 15);
        for node in [16, u64::MAX] {
            let e = PcapOut::node_in(node, 16).unwrap_err().0;
            assert!(
                e.starts_with(&format!("--pcap-node (output.pcap_node) = {node}:")),
                "{e}"
            );
            assert!(e.contains("nodes 0 to 15"), "{e}");
        }
    }
}
