//! The simulator's configuration: one serde struct tree, its documentation and validation,
//! named profiles and `--set key=value` overrides.
//!
//! * [`Config`]: the tree. `Config::default()` is the `baseline` profile.
//! * [`schema`]: one table documenting every field (path, unit, range, description); it
//!   drives validation, `--set` checking and `rnic config show`.
//! * [`profiles`]: named configurations, each a TOML overlay over baseline.
//! * [`overrides`]: `--set key=value` parsing and merging.
//! * [`show`]: the commented TOML printed by `rnic config show`.
//!
//! Resolution order: baseline → profile overlay → scenario `[set]` → `--set` flags →
//! dedicated flags (`--seed`, `--clients`, `-m`, `-D`, `-u`). Every step is checked against
//! the schema, so an error names the full field path, the value and what is accepted.

mod buffer;
mod cc;
pub mod declare;
mod ecn;
mod error;
mod fabric;
mod ooo;
pub mod overrides;
pub mod perturb;
pub mod profiles;
pub mod schema;
pub mod show;
mod spray;

pub use buffer::SwitchBufferMode;
pub use cc::{check_cc, CcKind, DcqcnConfig};
use declare::{config_enum, config_section};
pub use ecn::{EcnConfig, EcnMarkPoint};
pub use error::ConfigError;
pub use fabric::{FabricConfig, FabricRouting};
pub use ooo::OooConfig;
pub use overrides::{check_repeated, parse_set, same_value, Override};
pub use profiles::{profile, profile_names, PROFILES};
use schema::{float, positive, uint, Kind, CYCLES, ENTRIES, MAX_SIM_US, NS, PMTUS, TOML_INT_MAX};
pub use spray::{SprayConfig, SprayPolicy};

use serde::{Deserialize, Serialize};

/// Everything the simulator needs to know about the NIC, the host and the network.
/// Field documentation (units, ranges) lives in [`schema::FIELDS`]; the units are also in the
/// field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub sim: SimConfig,
    pub nic: NicConfig,
    pub pcie: PcieConfig,
    pub ddr: DdrConfig,
    pub eth: EthConfig,
    pub net: NetConfig,
    pub host: HostConfig,
    pub qp: QpConfig,
    pub ooo: OooConfig,
}

config_section! {
    /// Simulation control.
    pub struct SimConfig in "sim" {
        /// Seed of every random choice (loss, reordering, tie breaks); the same config and seed
        /// give identical results (--seed)
        seed: u64 = 1; "seed", uint(0, TOML_INT_MAX);
        /// Simulated measurement window of duration-mode runs (perf -D sets it from seconds);
        /// nothing else reads it, so setting it on a run without -D (iterations, [[flow]]s, a
        /// workload) is refused
        duration_us: f64 = 100.0; "µs", positive(MAX_SIM_US);
        /// Fixed warm-up of -D runs, an override: when set, the window opens after this much
        /// simulated time (and after sim.warmup_rounds) instead of when the rate settles;
        /// unset (the default), the run finds its steady state itself (sim.settle_*). Operations,
        /// rates and latencies count only inside the window (cache, PCIe and wire counters cover
        /// the whole run); with -D, at most an hour together
        warmup_us: Option<f64> = None; "µs", float(0.0, MAX_SIM_US);
        /// Runs with -D: the window never opens before every QP has completed this many
        /// operations (latency tests: rounds over the QPs; bandwidth tests: counted once the
        /// initial -t posts are all made); a floor under both sim.warmup_us and the detection,
        /// whose sub-windows already wait for every QP; 0: no floor
        warmup_rounds: u32 = 1; "rounds", uint(0, 1_000_000);
        /// Steady-state detection (-D runs without sim.warmup_us): the shortest sub-window. A
        /// sub-window also lasts until every QP has completed in it as many operations as it
        /// keeps in flight (-t; 1 for latency tests) and holds sim.settle_min_ops completions, so
        /// this matters for few QPs: READ on 8 QPs, whose reads come back in beats, varies by
        /// 4 % between 20 µs sub-windows and by 0.7 % between 100 µs ones
        settle_subwindow_us: f64 = 100.0; "µs", positive(MAX_SIM_US);
        /// Steady-state detection: the fewest completions in a sub-window, so that bursts
        /// (coalesced ACKs, a blocking QPC manager) do not read as rate changes
        settle_min_ops: u64 = 1000; "operations", uint(1, TOML_INT_MAX);
        /// Steady-state detection: the run has settled when the rates of the last
        /// sim.settle_windows sub-windows spread by at most this fraction of the largest
        /// ((max - min) / max); 0.02 = 2 %: settled sub-windows agree within 0.3 %, the
        /// start-up transients differ by 3 % (FCFS cliff) to 75 % (cold caches)
        settle_tolerance: f64 = 0.02; "fraction", float(0.0, 1.0);
        /// Steady-state detection: consecutive sub-windows whose rates must agree; 3, so that a
        /// slow drift must stay within the tolerance over two turnovers
        settle_windows: u32 = 3; "sub-windows", uint(2, 1000);
        /// Steady-state detection: a run still unsettled after this many sub-windows opens its
        /// window at the next completion and warns that it never settled; bounds the wait to
        /// a few times what a settling run needs (one sub-window to leave the start-up
        /// transient, then sim.settle_windows that agree)
        settle_max_windows: u32 = 12; "sub-windows", uint(2, 1_000_000);
        /// Steady-state detection: a run still unsettled at this simulated time opens its window
        /// at the next completion and warns that it never settled (the slowest committed point,
        /// 51,200 QPs x 16 WQEs of 4 KiB, settles after about 0.95 s); earlier if an hour less
        /// the window (-D, a flow's duration_us) is earlier, so that warm-up and window stay
        /// within the hour a run may simulate
        max_warmup_us: f64 = 2_000_000.0; "µs", positive(MAX_SIM_US);
        /// Safety limit: a run that would process more events stops with an error instead of
        /// running away
        max_events: u64 = 2_000_000_000; "events", uint(1, TOML_INT_MAX);
        /// Memory budget of one run (10^9 bytes): a run whose estimated footprint (buffers, rings,
        /// per-QP state) exceeds it is refused before it starts; 0 = half of this machine's memory
        max_memory_gb: f64 = 0.0; "GB", float(0.0, 1e6);
    }
}

config_enum! {
    /// Replacement policy of an on-chip cache.
    pub enum CachePolicy {
        /// Least recently used.
        Lru = "lru",
    }
}

config_enum! {
    /// How the QPC manager handles QPC cache misses.
    pub enum QpcManager {
        /// First come, first served: a miss blocks every later request (head-of-line blocking).
        Fcfs = "fcfs",
        /// csRNA non-blocking manager: misses wait in a pending structure while hits proceed.
        Nonblocking = "nonblocking",
    }
}

config_enum! {
    /// How the descriptor unit (the scheduler's fetch of a QP's context before its WQEs)
    /// waits for contexts under the non-blocking QPC manager.
    pub enum DescriptorFetch {
        /// csRNA's non-blocking requester: up to nic.ooo_cap visits wait for their contexts
        /// at once, in any order.
        OutOfOrder = "out_of_order",
        /// One at a time: the next QP's fetch starts once this one's context is on chip, as
        /// the fetch module of the resource-prefetching paper (its prefetcher is what hides
        /// that wait).
        InOrder = "in_order",
    }
}

config_enum! {
    /// How a QP detects and repairs loss.
    pub enum Reliability {
        /// In-order go-back-N, as RoCEv2 NICs (ConnectX, rxe) do.
        Gbn = "gbn",
        /// ORNIC's out-of-order WRITE: direct write by PSN, an OTD + BDP-wide bitmap of
        /// block nodes, bitmap NAKs, ACKs aggregated per `ooo.ack_turn_ns` (WRITE only).
        Ornic = "ornic",
        /// MP-RDMA's: direct write by PSN, an OTD-wide static bitmap, one ACK per data packet
        /// (WRITE only).
        MpRdma = "mp_rdma",
    }
}

config_enum! {
    /// The QP service type (perftest -c/--connection).
    pub enum Transport {
        /// Reliable connection: ACKs, retransmission, every verb.
        Rc = "rc",
        /// Unreliable connection: SEND and WRITE, no ACK; a lost packet loses its message.
        Uc = "uc",
        /// Unreliable datagram: SENDs of at most one path MTU with a DETH, no ACK.
        Ud = "ud",
    }
}

config_enum! {
    /// How a QP's first PSN is chosen.
    pub enum StartPsn {
        /// 24 random bits per QP, as rdma_cm and perftest draw them (from the run's seed:
        /// the same seed gives the same PSNs); runs cross the PSN wrap wherever it falls.
        Random = "random",
        /// Every QP starts at PSN 0.
        Zero = "zero",
        /// Every QP starts 256 PSNs before the 24-bit PSN space wraps (0xFFFF00), so every
        /// run crosses the wrap early: a test of the wrap, not of a real peer.
        NearWrap = "near_wrap",
    }
}

config_enum! {
    /// Which frames an impairment element acts on.
    pub enum ImpairDirection {
        /// Every frame.
        Both = "both",
        /// Frames that carry requests or data (everything but pure acknowledgements).
        Data = "data",
        /// Pure acknowledgements: ACK/NAK, atomic ACK, CNP.
        Acks = "acks",
    }
}

config_enum! {
    /// Where QP contexts live when they are not in the on-chip cache.
    pub enum QpcPlacement {
        /// Host memory, reached over PCIe.
        Host = "host",
        /// On-board DDR attached to the NIC.
        Ddr = "ddr",
    }
}

config_enum! {
    /// How the DMA engine orders host-memory read requests waiting for PCIe read tags.
    pub enum DmaReadArbiter {
        /// One request at a time, round robin between sources (contexts, WQEs, each QP's
        /// payload stream); payload is read in MRRS-sized requests and a packet may leave
        /// once its own bytes are in the NIC.
        RoundRobin = "round_robin",
        /// One FIFO of whole reads: a message's payload is read in one DMA before its first
        /// packet is built (the model before payload streaming).
        Fifo = "fifo",
    }
}

impl DmaReadArbiter {
    /// Payload is streamed per packet (the `round_robin` arbiter), not read whole: what the
    /// TX and RX routes ask before reading a message's or a READ response's payload.
    pub fn streams_payload(self) -> bool {
        self == DmaReadArbiter::RoundRobin
    }
}

config_enum! {
    /// TX performance isolation (the TX-isolation paper): which TX architecture the NIC runs.
    pub enum TxIsolation {
        /// Shared WQE cache FIFO, run-to-completion transport, coupled backpressure, round
        /// robin (the paper's baseline and rnic's default).
        Baseline = "baseline",
        /// Optimized-v1: separate WQE caching and slicing execution.
        V1 = "v1",
        /// Optimized-v2: v1 plus isolated backpressure and adaptive WRR for BS tenants.
        V2 = "v2",
    }
}

config_enum! {
    /// WQE caching between fetch and the transport (one part of `nic.tx_isolation`).
    pub enum IsoCaching {
        /// Whatever `nic.tx_isolation` implies (baseline: shared; v1, v2: separate).
        Auto = "auto",
        /// One FIFO for every tenant's prefetched WQEs.
        Shared = "shared",
        /// A shallow FIFO per BS tenant, one FIFO shared by the LS tenants.
        Separate = "separate",
    }
}

config_enum! {
    /// How the TX transport runs a multi-packet WQE (one part of `nic.tx_isolation`).
    pub enum IsoTransport {
        /// Whatever `nic.tx_isolation` implies (baseline: run_to_completion; v1, v2: slicing).
        Auto = "auto",
        /// Every packet of a WQE before the next WQE.
        RunToCompletion = "run_to_completion",
        /// A BS WQE yields the transport after a slice; LS WQEs go first.
        Slicing = "slicing",
        /// Every QP with something to send in turn, one packet each, whatever its tenant
        /// or class, with no slicing station: the NIC of the ns-3 simulator released with
        /// the HPCC paper (not a part of the TX isolation paper)
        QpRoundRobin = "qp_round_robin",
    }
}

config_enum! {
    /// Backpressure on WQE reads from full WQE FIFOs (one part of `nic.tx_isolation`).
    pub enum IsoBackpressure {
        /// Whatever `nic.tx_isolation` implies (baseline, v1: coupled; v2: isolated).
        Auto = "auto",
        /// Any full FIFO pauses WQE reads for every QP.
        Coupled = "coupled",
        /// A BS QP is skipped while its own FIFO is full; the others keep reading.
        Isolated = "isolated",
    }
}

config_enum! {
    /// How the transport shares itself between BS tenants (one part of `nic.tx_isolation`).
    pub enum IsoBsArbiter {
        /// Whatever `nic.tx_isolation` implies (baseline, v1: round_robin; v2: adaptive_wrr).
        Auto = "auto",
        /// One slice per turn.
        RoundRobin = "round_robin",
        /// 4096 / PMTU slices per turn, so every BS tenant gets the same bytes.
        AdaptiveWrr = "adaptive_wrr",
    }
}

config_enum! {
    /// Resource prefetching (the resource-prefetching paper): what triggers the chain
    /// prefetch of QPC, WQEs, MPT and MTT entries into the NIC's caches.
    pub enum PrefetchMode {
        /// Demand fetch only (rnic's default).
        None = "none",
        /// Scheduler-triggered: a QP within nic.prefetch_window positions of the scheduling
        /// queue's head has its chain prefetched.
        Sched = "sched",
        /// Software-triggered: post_send writes the QPN into a prefetch register before it
        /// builds the WQE; the NIC fetches the QPC meanwhile.
        Sw = "sw",
        /// Both triggers.
        SchedSw = "sched+sw",
    }
}

config_section! {
    /// The NIC microarchitecture.
    pub struct NicConfig in "nic" {
        /// NIC core clock; every nic.*_cycles field counts cycles of this clock
        clock_ghz: f64 = 1.0; "GHz", float(0.001, 10.0);
        /// Size of one QP context (QPC), on chip and in host memory or DDR (csRNA: 256 B)
        qpc_entry_bytes: u32 = 256; "bytes", uint(16, 4096);
        /// Capacity of the on-chip QPC cache; 0 means no cache, every access fetches the QPC
        /// (csRNA: 300)
        qpc_cache_entries: u32 = 300; "entries", ENTRIES;
        /// Capacity of node 0's QPC cache (the server: the requester of perftest's runs and of
        /// csRNA's latency test), where a paper's two ends differ; unset: nic.qpc_cache_entries
        server_qpc_cache_entries: Option<u32> = None; "entries", ENTRIES;
        /// Capacity of the client nodes' QPC caches, where a paper's two ends differ; unset:
        /// nic.qpc_cache_entries
        client_qpc_cache_entries: Option<u32> = None; "entries", ENTRIES;
        /// Replacement policy of the QPC cache
        qpc_cache_policy: CachePolicy = CachePolicy::Lru; "policy", Kind::Str(CachePolicy::NAMES);
        /// QPC manager: fcfs = first come first served, a miss blocks every later request
        /// (head-of-line); nonblocking = csRNA pending FIFO and pending record table, hits pass
        /// misses while per-QP order is kept
        qpc_manager: QpcManager = QpcManager::Fcfs; "manager", Kind::Str(QpcManager::NAMES);
        /// Non-blocking QPC requester: requests that may complete out of order per channel (csRNA
        /// ooo_cap; 40 B on chip each)
        ooo_cap: u32 = 16; "requests", uint(1, 256);
        /// Non-blocking QPC manager: whether the descriptor unit takes ooo_cap requests at
        /// once (out_of_order) or one (in_order, the resource-prefetching paper's fetch
        /// module); the requester and responder keep ooo_cap. No effect under fcfs, which
        /// blocks every request behind a miss
        descriptor_fetch: DescriptorFetch = DescriptorFetch::OutOfOrder; "order", Kind::Str(DescriptorFetch::NAMES);
        /// csRNA latency hiding: SQ address table on chip, QPC prefetch overlapped with the WQE
        /// read (false = QPC read before WQE read)
        latency_hiding: bool = false; "switch", Kind::Bool;
        /// Where the context tables live when not cached (QPCs, and the MPT and MTT with them):
        /// host memory over PCIe, or the NIC's on-board DDR
        qpc_placement: QpcPlacement = QpcPlacement::Host; "place", Kind::Str(QpcPlacement::NAMES);
        /// Size of one WQE slot in the send and receive queues (the WQE format takes 64 B; larger
        /// slots are read whole)
        wqe_bytes: u32 = 64; "bytes", uint(64, 1024);
        /// WQEs the NIC reads from the send queue in one PCIe read
        wqes_per_fetch: u32 = 8; "WQEs", uint(1, 1024);
        /// Scheduler chunk: message bytes one scheduler visit takes from a QP before the QP goes
        /// back to the end of the round robin (csRNA: KB level; the resource-prefetching paper's chunk_size; at least
        /// one WQE, at most nic.wqes_per_fetch)
        chunk_bytes: u64 = 1024; "bytes", uint(1, 1 << 30);
        /// Capacity of the on-chip memory protection table (MPT) cache; 0 = no cache (the resource-prefetching paper:
        /// 256)
        mpt_cache_entries: u32 = 256; "entries", ENTRIES;
        /// Capacity of the on-chip memory translation table (MTT) cache; 0 = no cache (the resource-prefetching paper:
        /// 256)
        mtt_cache_entries: u32 = 256; "entries", ENTRIES;
        /// Page size of MTT translation: one MTT entry per page of a memory region
        page_bytes: u64 = 4096; "bytes", Kind::Pow2 { min: 4096, max: 1 << 30 };
        /// Cycles to process one doorbell (MMIO write announcing new WQEs)
        doorbell_cycles: u32 = 4; "cycles", CYCLES;
        /// QP scheduler: cycles per scheduling decision
        sched_cycles: u32 = 4; "cycles", CYCLES;
        /// Cycles to decode one WQE
        wqe_decode_cycles: u32 = 4; "cycles", CYCLES;
        /// Cycles of an on-chip QPC cache lookup (hit or miss detection)
        qpc_lookup_cycles: u32 = 2; "cycles", CYCLES;
        /// TX pipeline initiation interval per message; sets the peak message rate (calibrated in
        /// the model's profile)
        tx_msg_cycles: u32 = 15; "cycles", CYCLES;
        /// TX pipeline initiation interval per packet
        tx_pkt_cycles: u32 = 4; "cycles", CYCLES;
        /// RX pipeline initiation interval per packet
        rx_pkt_cycles: u32 = 8; "cycles", CYCLES;
        /// Cycles to generate or consume one ACK/NAK
        ack_cycles: u32 = 4; "cycles", CYCLES;
        /// Cycles to build one CQE before it is written to host memory
        cqe_cycles: u32 = 4; "cycles", CYCLES;
        /// WQEs the NIC keeps in flight per QP (fetched, not yet completed); the long-distance
        /// RDMA paper's queue depth is the packet window, qp.window_psns
        max_outstanding_wqes_per_qp: u32 = 128; "WQEs", uint(1, 1 << 20);
        /// Cycles of an on-chip MPT cache lookup (memory key validation)
        mpt_lookup_cycles: u32 = 1; "cycles", CYCLES;
        /// Cycles of an on-chip MTT cache lookup, per page translated
        mtt_lookup_cycles: u32 = 1; "cycles", CYCLES;
        /// Size of one MPT entry, on chip and in its backing store
        mpt_entry_bytes: u32 = 64; "bytes", uint(1, 4096);
        /// Size of one MTT entry (one page translation), on chip and in its backing store
        mtt_entry_bytes: u32 = 8; "bytes", uint(1, 4096);
        /// Size of one completion queue entry written to host memory
        cqe_bytes: u32 = 64; "bytes", uint(1, 4096);
        /// Descriptor requests the scheduler may have queued at the QPC manager before it pauses
        /// (FCFS request FIFO depth)
        qpc_fifo_depth: u32 = 16; "requests", uint(1, 1 << 20);
        /// Scheduler visits (WQE reads) outstanding at once; more pause the scheduler
        max_visits_in_flight: u32 = 64; "visits", uint(1, 1 << 20);
        /// Messages fetched and handed to the transport but not yet started by the TX engine, above
        /// which the scheduler pauses
        tx_backlog_cap: u32 = 256; "messages", uint(1, 1 << 20);
        /// TX payload buffer: SEND/WRITE payload read into the NIC and not yet sent on the wire,
        /// above which payload reads wait and the scheduler pauses (covers the payload reads'
        /// latency at line rate with PCIe 90 % busy). A read starts whenever the buffer holds
        /// less than this, so it always takes at least one packet (a message, or one path
        /// MTU of a longer one): a value below a packet acts as one packet's worth
        tx_buffer_bytes: u64 = 65536; "bytes", uint(1, 1 << 30);
        /// Bytes the TX engine may run ahead of the Ethernet port
        tx_port_slack_bytes: u64 = 8192; "bytes", uint(0, 1 << 30);
        /// Receive buffer: received frames that carry payload for host memory, from their
        /// arrival until that payload has gone out over PCIe (it drains at the PCIe link's
        /// write rate). When it cannot take a frame, the frame is dropped (net.pfc = false)
        /// or, with PFC, the NIC has paused its link peer before (nic.rx_pfc_*). 256 KiB: the
        /// port buffer a ConnectX-4/5-class 100 Gb/s NIC reports (262,016 bytes), 21 us of
        /// its link
        rx_buffer_bytes: u64 = 262144; "bytes", uint(1, 1 << 40);
        /// With net.pfc: the receive buffer space kept free above the XOFF level, for what is
        /// already on its way when the NIC pauses its link peer (the PFC frame's trip, the
        /// cable both ways, the frame the peer is sending); the NIC sends XOFF once more than
        /// nic.rx_buffer_bytes minus this is buffered. 64 KiB covers 400 Gb/s over 100 m of
        /// fibre with 4 KiB frames
        rx_pfc_headroom_bytes: u64 = 65536; "bytes", uint(1, 1 << 40);
        /// With net.pfc: a NIC that paused its link peer resumes it (XON) once its receive
        /// buffer has drained to this many bytes (below the XOFF level)
        rx_pfc_xon_bytes: u64 = 131072; "bytes", uint(0, 1 << 40);
        /// DMA read arbitration: round_robin = per MRRS request between sources (contexts,
        /// WQEs, each QP's payload stream), payload streamed packet by packet; fifo = one queue
        /// of whole reads, a message's payload read in one DMA before its first packet
        dma_read_arbiter: DmaReadArbiter = DmaReadArbiter::RoundRobin; "policy", Kind::Str(DmaReadArbiter::NAMES);
        /// Payload stream read-ahead (round_robin): bytes of one QP's SEND/WRITE payload, or of
        /// its READ responses, requested from host memory and not yet sent; covers line rate
        /// times one read's latency with a 4 KB packet (12.5 GB/s x 1.1 us = 14 KB)
        payload_read_ahead_bytes: u64 = 16384; "bytes", uint(4096, 1 << 30);
        /// TX performance isolation: baseline = shared WQE FIFO, run to completion, coupled
        /// backpressure, round robin; v1 = separate WQE caching + slicing execution; v2 = v1 +
        /// isolated backpressure + adaptive WRR (nic.iso_* switch the parts alone)
        tx_isolation: TxIsolation = TxIsolation::Baseline; "architecture", Kind::Str(TxIsolation::NAMES);
        /// TX isolation part: WQE caching (auto follows nic.tx_isolation)
        iso_caching: IsoCaching = IsoCaching::Auto; "policy", Kind::Str(IsoCaching::NAMES);
        /// TX isolation part: transport execution (auto follows nic.tx_isolation)
        iso_transport: IsoTransport = IsoTransport::Auto; "policy", Kind::Str(IsoTransport::NAMES);
        /// TX isolation part: WQE-read backpressure (auto follows nic.tx_isolation)
        iso_backpressure: IsoBackpressure = IsoBackpressure::Auto; "policy", Kind::Str(IsoBackpressure::NAMES);
        /// TX isolation part: arbitration between BS tenants (auto follows nic.tx_isolation)
        iso_bs_arbiter: IsoBsArbiter = IsoBsArbiter::Auto; "policy", Kind::Str(IsoBsArbiter::NAMES);
        /// Separate caching: depth of each BS tenant's WQE FIFO (the authors' RTL: 16; the
        /// slides' "e.g. depth = 2" holds a tenant of small WQEs to two WQE reads in flight)
        iso_bs_fifo_depth: u32 = 16; "WQEs", uint(1, 1024);
        /// Shared caching (the baseline): depth of the one WQE FIFO every QP shares; WQE
        /// reads stop for every QP while it is almost full (depth - 1 WQEs held or being
        /// read), as in the authors' RTL, whose WQE cache is 16 deep (the isolation profile);
        /// 0 = unbounded (only the WQE buffer bounds it)
        iso_shared_fifo_depth: u32 = 0; "WQEs", uint(0, 1024);
        /// Slicing execution: packets a BS WQE sends before it yields the transport
        iso_slice_packets: u32 = 1; "packets", uint(1, 1 << 20);
        /// Latency hiding: bytes per QP of the on-chip SQ address table (SQ address and WQE offset;
        /// csRNA: 10)
        sq_table_entry_bytes: u32 = 10; "bytes", uint(1, 256);
        /// Latency hiding: cycles to read a QP's SQ address from the on-chip SQ address table
        sq_table_cycles: u32 = 1; "cycles", CYCLES;
        /// Resource prefetching: none = demand fetch; sched = scheduler-triggered chain prefetch
        /// (QPC and WQEs, then MPT, then MTT); sw = software-triggered QPC prefetch from
        /// post_send; sched+sw = both
        prefetch: PrefetchMode = PrefetchMode::None; "trigger", Kind::Str(PrefetchMode::NAMES);
        /// Resource prefetching: a QP is prefetched once it is within this many positions of the
        /// scheduling queue's head (0 = never ahead of its visit)
        prefetch_window: u32 = 0; "QPs", uint(0, 1 << 20);
        /// Resource prefetching: capacity of the on-chip WQE cache (LRU, keyed by QP and SQ
        /// index) that holds prefetched WQEs until their visit
        wqe_cache_entries: u32 = 256; "entries", ENTRIES;
    }
}

config_section! {
    /// The PCIe link between host and NIC.
    pub struct PcieConfig in "pcie" {
        /// PCIe bandwidth in each direction, after line encoding (the papers: 128)
        gbps: f64 = 128.0; "Gb/s", float(0.001, 10_000.0);
        /// Round trip of a NIC read of host memory, request sent to first completion received
        /// (the papers: 500)
        read_rtt_ns: f64 = 500.0; "ns", NS;
        /// Latency of a posted write from the NIC until it is visible in host memory (the
        /// csRNA authors' gem5 RNIC model: its DMA write delay, 250 ns, beside its 500 ns read)
        posted_write_ns: f64 = 250.0; "ns", NS;
        /// Per-TLP overhead on the link: header, framing, sequence number, LCRC and DLLP share
        tlp_header_bytes: u32 = 24; "bytes", uint(0, 256);
        /// Max payload size: largest write (and read completion) TLP payload
        mps_bytes: u32 = 256; "bytes", Kind::Pow2 { min: 128, max: 4096 };
        /// Max read request size: larger DMA reads are split into requests of this size
        mrrs_bytes: u32 = 512; "bytes", Kind::Pow2 { min: 128, max: 4096 };
        /// Non-posted read requests the NIC may have outstanding (PCIe tags)
        max_read_tags: u32 = 256; "tags", uint(1, 65_536);
        /// Payload of one doorbell MMIO write (producer index and QPN)
        doorbell_bytes: u32 = 8; "bytes", uint(1, 4096);
    }
}

config_section! {
    /// On-board DDR memory of the NIC: where the context tables live with
    /// nic.qpc_placement = "ddr" (with "host", the default, nothing reads these fields).
    pub struct DdrConfig in "ddr" {
        /// Access latency of the NIC's on-board DDR (used when nic.qpc_placement = "ddr")
        latency_ns: f64 = 100.0; "ns", NS;
        /// Bandwidth of the NIC's on-board DDR (used when nic.qpc_placement = "ddr")
        gbps: f64 = 200.0; "Gb/s", float(0.001, 100_000.0);
    }
}

config_section! {
    /// The Ethernet port.
    pub struct EthConfig in "eth" {
        /// Ethernet port rate (the papers: 100)
        gbps: f64 = 100.0; "Gb/s", float(0.001, 10_000.0);
        /// Per-frame overhead on the wire besides the frame: preamble and SFD (8) plus minimum
        /// inter-frame gap (12)
        preamble_ifg_bytes: u32 = 20; "bytes", uint(0, 64);
        /// Ethernet frame check sequence per frame
        fcs_bytes: u32 = rnic_wire::ethernet::FCS_LEN as u32; "bytes", uint(0, 8);
        /// Minimum Ethernet frame without FCS; shorter frames are padded on the wire
        min_frame_bytes: u32 = rnic_wire::ethernet::MIN_FRAME_LEN as u32; "bytes", uint(0, 4096);
    }
}

config_section! {
    /// The network: hosts, links, one switch, impairments.
    pub struct NetConfig in "net" {
        /// How the nodes are wired: "star" (the server and the clients each on one link to one
        /// switch), "back_to_back" (the server and one client on one cable, no switch), "wan"
        /// (the server, Local, then the WAN accelerator's site, then a long link of
        /// net.wan_km to one client, Remote), "fat_tree" or "leaf_spine" (generated
        /// fabrics, see net.fabric), or the
        /// path of a topology file (.toml: switches and links, each link with its own length
        /// or delay, rate and impairment; see the book's docs/book/src/model/networks.md)
        topology: String = "star".to_string(); "topology", Kind::NameOrFile(&["star", "back_to_back", "wan", "fat_tree", "leaf_spine"], ".toml");
        /// Client hosts, all sending to one server through the switch (perf --clients; csRNA:
        /// 10)
        clients: u32 = 1; "hosts", uint(1, 4096);
        /// One-way propagation delay of each link. 500 ns makes 1 µs from NIC to NIC
        /// through the switch: the csRNA paper's "network link delay of 1 µs", which its
        /// gem5 simulator adds once per frame at the receiving NIC with no switch delay
        link_delay_ns: f64 = 500.0; "ns", NS;
        /// Link length; when set it replaces net.link_delay_ns by 5000 ns per km (fibre, as the long-distance RDMA paper);
        /// unset by default (--set net.link_km=none)
        link_km: Option<f64> = None; "km", float(0.0, 1e6);
        /// Packet buffer of each switch output port (frames queued on it or in transmission);
        /// a frame arriving for a port whose buffer it does not fit is dropped. Each port has
        /// this much of its own (net.switch_buffer = "per_port"), or it is the pool all
        /// of a switch's ports share ("shared")
        switch_buffer_bytes: u64 = 16 << 20; "bytes", uint(0, 1 << 40);
        /// How a switch's ports hold frames: "per_port" (each output port has
        /// net.switch_buffer_bytes of its own) or "shared" (net.switch_buffer_bytes, or a
        /// topology file's buffer_bytes, is one pool per switch: with net.pfc each ingress
        /// pauses at a threshold derived from the pool, without it each egress queue may hold
        /// at most the pool's free bytes; see the networks chapter)
        switch_buffer: SwitchBufferMode = SwitchBufferMode::PerPort; "mode", Kind::Str(SwitchBufferMode::NAMES);
        /// Fixed forwarding latency of the switch, added to store-and-forward serialization
        /// (cut-through switching is not modelled)
        switch_latency_ns: f64 = 0.0; "ns", NS;
        /// Priority flow control (IEEE 802.1Qbb) on every switch port: a lossless fabric, as
        /// RoCEv2 is deployed. An ingress whose queued bytes pass net.pfc_xoff_bytes pauses
        /// its sender (a NIC or another switch's port) until they drain to
        /// net.pfc_xon_bytes; false: a full buffer drops
        pfc: bool = false; "switch", Kind::Bool;
        /// PFC: queued bytes of one ingress port that pause its sender (an assumption: a
        /// quarter of a MiB; the switch buffer must hold the headroom above it). Below
        /// net.ecn.kmin_bytes's default, so with both on a flow pauses before it is marked
        /// (a run says so); net.switch_buffer = "shared" derives the level from the pool
        /// instead, above kmin
        pfc_xoff_bytes: u64 = 256 << 10; "bytes", uint(1, 1 << 40);
        /// PFC: queued bytes of a paused ingress port at which its sender resumes (below
        /// net.pfc_xoff_bytes); net.switch_buffer = "shared" derives the level from the pool
        /// instead
        pfc_xon_bytes: u64 = 128 << 10; "bytes", uint(0, 1 << 40);
        /// PFC: the priority (traffic class) RoCE traffic is mapped to, whose pause time the
        /// PAUSE frames carry (3, as common RoCE deployments configure)
        pfc_priority: u8 = 3; "priority", uint(0, 7);
        /// Queue trace: every this many µs, the queue of every switch output port and whether
        /// it and each NIC transmitter is paused, written as FILE-queues.csv beside the JSON
        /// (`rnic run`/`rnic perf --json FILE`; refused without a JSON file and in a sweep,
        /// where the trace would go nowhere); 0 = off
        trace_interval_us: f64 = 0.0; "µs", float(0.0, 1e9);
        /// Topology "wan" (Local, node 0 — the accelerator site — a long link — Remote, node 1):
        /// the long link's length, 5 µs per km one way (the long-distance RDMA paper's fibre)
        wan_km: f64 = 100.0; "km", float(0.0, 1e6);
        /// Topology "wan": the RDMA WAN accelerator on Local's side answers WRITE packets with
        /// pseudo-ACKs and retransmits from its own buffer (the long-distance RDMA paper's
        /// pseudo-ACK accelerator); false: frames pass untouched
        wan_accel: bool = false; "switch", Kind::Bool;
        /// The accelerator's retransmission buffer: frames it pseudo-ACKed and Remote has not
        /// yet acknowledged; when full it stops pseudo-ACKing until room frees
        wan_accel_buffer_bytes: u64 = 1 << 30; "bytes", uint(1, 1 << 40);
        /// The accelerator's processing time per frame it handles (one software core: frames
        /// queue behind each other)
        wan_accel_frame_ns: f64 = 0.0; "ns", NS;
        /// The accelerator's fixed added latency per frame, each way
        wan_accel_latency_ns: f64 = 0.0; "ns", NS;
        /// The accelerator retransmits its oldest unacknowledged frame (and all after it) when
        /// Remote's acknowledgements make no progress for this long; 0 = twice the long link's
        /// round trip plus 100 µs; at least the long link's round trip
        wan_accel_timeout_ns: f64 = 0.0; "ns", NS;
        /// When the accelerator learns a connection: "setup" (what the RDMA CM REQ and REP
        /// crossing it carry, before traffic) or "traffic" (from the first request and
        /// response)
        wan_accel_learn: WanAccelLearn = WanAccelLearn::Setup; "when", Kind::Str(WanAccelLearn::NAMES);
        /// Congestion control in the NICs: "none" or "dcqcn" (the receiver answers CE-marked
        /// data with CNPs, the sender's rate limiter cuts and recovers each QP's rate; see
        /// net.dcqcn and net.ecn)
        cc: CcKind = CcKind::None; "algorithm", Kind::Str(CcKind::NAMES);
    }
    sections {
        /// Wire impairments, applied per packet with the seeded RNG.
        impair: ImpairConfig,
        /// Per-packet multipath spraying.
        spray: SprayConfig,
        /// Generated fabrics and multipath routing.
        fabric: FabricConfig,
        /// ECN marking on the switches' egress queues.
        ecn: EcnConfig,
        /// DCQCN's parameters.
        dcqcn: DcqcnConfig,
    }
}

impl NetConfig {
    /// One-way propagation delay of a link: `link_km` × 5000 ns when set, else `link_delay_ns`.
    pub fn effective_link_delay_ns(&self) -> f64 {
        match self.link_km {
            Some(km) => km * NS_PER_KM,
            None => self.link_delay_ns,
        }
    }
}

config_enum! {
    /// When the WAN accelerator learns a connection (Local's QPN, the starting PSN and MSN).
    pub enum WanAccelLearn {
        /// At connection setup, before any traffic, by parsing the RDMA CM REQ and REP as
        /// they cross the accelerator, as the paper's accelerator does (needs
        /// host.connect = "cm").
        Setup = "setup",
        /// From the traffic: the starting PSN from the first request, Local's QPN from
        /// Remote's first response; acceleration starts one long round trip late.
        Traffic = "traffic",
    }
}

/// Propagation delay of light in fibre, ns per km (5 µs/km one way).
pub const NS_PER_KM: f64 = 5000.0;

config_section! {
    /// Wire impairments, applied per packet with the seeded RNG.
    pub struct ImpairConfig in "net.impair" {
        /// Probability that a packet is lost on the wire, independently per packet
        loss: f64 = 0.0; "probability", float(0.0, 1.0);
        /// Bounded reordering: a packet is held back by up to this many full path-MTU frame times,
        /// so it may be overtaken by at most this many later full-size packets, and by more
        /// smaller ones (0 = in order; `reorder_window` bounds the count of any size)
        reorder_depth: u32 = 0; "packets", uint(0, 1 << 20);
        /// Probability that a packet is duplicated on the wire
        dup: f64 = 0.0; "probability", float(0.0, 1.0);
        /// Extra one-way delay added to every packet
        extra_delay_ns: f64 = 0.0; "ns", NS;
        /// Probability that a packet has one byte flipped in flight (a byte the ICRC covers, or
        /// the IPv4 header checksum where the ICRC masks, so the receiver drops it)
        corrupt: f64 = 0.0; "probability", float(0.0, 1.0);
        /// Which frames the impairments act on: "both", "data" (requests and data-carrying
        /// responses) or "acks" (ACK/NAK, atomic ACK, CNP); the others pass untouched
        direction: ImpairDirection = ImpairDirection::Both; "frames", Kind::Str(ImpairDirection::NAMES);
        /// Reordering within a distance, as the ORNIC paper's network emulator: windows of this
        /// many consecutive data frames, each released in a random order (0 or 1 = off); on
        /// every node's uplink; acknowledgements pass untouched
        reorder_window: u32 = 0; "frames", uint(0, 1 << 16);
    }
}

config_section! {
    /// CPU-side costs on the hosts.
    pub struct HostConfig in "host" {
        /// CPU time of one ibv_post_send: WQE write and doorbell
        post_send_ns: f64 = 50.0; "ns", NS;
        /// CPU time of one ibv_poll_cq call that returns a completion
        poll_cq_ns: f64 = 20.0; "ns", NS;
        /// Host DRAM latency seen by the CPU (reading CQEs and received data)
        mem_latency_ns: f64 = 80.0; "ns", NS;
        /// Application cores per host; QP i is served by core i mod cores (csRNA: 10)
        cores: u32 = 10; "cores", uint(1, 4096);
        /// Bandwidth tests: WQEs per post list: the application posts a list of this many
        /// WQEs once there is room for all of them, and rings the doorbell once per list
        /// (perftest -l); each WQE still costs post_send_ns of CPU time
        post_list: u32 = 1; "WQEs", uint(1, 4096);
        /// SEND/WRITE payloads of at most this many bytes are posted inline: the driver
        /// copies them into the WQE slot (which must hold them: nic.wqe_bytes >= 64 +
        /// inline_bytes), so the NIC reads no payload; 0 = never (perftest -I)
        inline_bytes: u32 = 0; "bytes", uint(0, 960);
        /// A received SEND of at most this many bytes travels inside its CQE (scatter to
        /// CQE), so the NIC writes no separate payload and the driver copies it to the
        /// buffer on poll; at most half of nic.cqe_bytes; 0 = never (perftest --inline_recv)
        inline_recv_bytes: u32 = 0; "bytes", uint(0, 2048);
        /// Bandwidth tests: one signaled WQE in this many, so the NIC writes one CQE per
        /// this many completions (perftest -Q/--cq-mod); the others complete silently and
        /// are counted when the next CQE arrives. At most the tx depth
        cq_mod: u32 = 1; "WQEs", uint(1, 4096);
        /// SEND bandwidth tests: receive WQEs the target keeps posted on each QP, so the
        /// sender's next messages find a receive while the last ones' are reposted
        /// (perftest -r/--rx-depth, whose default is 512); at most the device's 32768
        /// WQEs per queue (max_qp_wr)
        rx_depth: u32 = 512; "WQEs", uint(1, 32768);
        /// SEND tests: each node's QPs of a flow take their receives from one shared receive
        /// queue (perftest --use-srq): host.rx_depth receives in all (send-lat: 2 per QP),
        /// each QP posting its share (rx_depth / QPs), each receive a buffer of its own, and
        /// a SEND consumes the oldest whatever QP it arrives on
        use_srq: bool = false; "switch", Kind::Bool;
        /// SEND bandwidth tests: the target reposts consumed receives in lists of this many,
        /// one doorbell per list (perftest --recv_post_list); at most host.rx_depth
        recv_post_list: u32 = 1; "WQEs", uint(1, 65536);
        /// Bandwidth tests: before the measured run, each QP in turn posts a tx depth of
        /// operations (a post list, with post_list > 1) and waits for their completions, so
        /// caches start warm and none of it is measured (perftest --perform_warm_up)
        perform_warm_up: bool = false; "switch", Kind::Bool;
        /// Bandwidth tests in iteration mode: stamp every post list and every CQE of the
        /// measured operations and report perftest's BW peak, the best rate over any run of
        /// consecutive operations (8 bytes per post list and per CQE); false: the peak is
        /// reported as 0, as perftest's -N/--noPeak (duration mode never measures it, and
        /// a [[flow]] or [workload] run reports no peak)
        bw_peak: bool = true; "switch", Kind::Bool;
        /// CPU time of building one WQE and copying it into the SQ, before the doorbell (the
        /// resource-prefetching paper: "at least several hundreds of nanoseconds"); with
        /// software-triggered prefetch the NIC fetches the QPC meanwhile; 0 = folded into
        /// host.post_send_ns
        wqe_prep_ns: f64 = 0.0; "ns", NS;
        /// Latency tests: the client idles this long after an iteration ends before it
        /// posts the next (perftest --latency_gap, in µs); the idle time is not part of the
        /// samples, which run from post to completion
        latency_gap_us: f64 = 0.0; "µs", float(0.0, MAX_SIM_US);
        /// Completions by event instead of polling (perftest -e/--events): a core with
        /// nothing to do sleeps on its completion channel, and a CQE that finds it asleep
        /// wakes it after host.cq_event_ns; a core still busy polls as usual
        cq_events: bool = false; "switch", Kind::Bool;
        /// With host.cq_events: from a CQE landing to the woken thread polling it (the
        /// interrupt, the completion channel's handler, the thread's wakeup, the CQ's
        /// re-arm); its read of the CQE then takes host.mem_latency_ns, as a poll's does.
        /// A few microseconds on Linux servers; 4 µs is rnic's estimate, not a measurement
        cq_event_ns: f64 = 4000.0; "ns", NS;
        /// How the QP pairs are connected before the run: "cm" (the clients' connection
        /// managers send RDMA CM REQ, REP and RTU as MADs to QP1 over the simulated network,
        /// perftest -R) or "direct" (modify_qp on both ends at once, no frames, no time).
        /// RC pairs only, and UD pairs with host.cm_ud: UC pairs are always brought up
        /// directly (librdmacm connects no UC QP), so over UC this and the host.cm_* fields
        /// change nothing
        connect: Connect = Connect::Cm; "mode", Kind::Str(Connect::NAMES);
        /// With connect = "cm": host CPU time the connection manager spends on each MAD it
        /// receives or sends (one CM thread per host; an assumption, no paper states it;
        /// setup is never measured)
        cm_mad_ns: f64 = 1000.0; "ns", NS;
        /// With connect = "cm": how long a side waits for the answer to its REQ (or REP)
        /// before sending it again, 4.096 µs × 2^n, as the CM response timeout field of the
        /// REQ (rdma_cm's default 20 = 4.3 s)
        cm_response_timeout: u8 = 20; "exponent", uint(0, 31);
        /// With connect = "cm": resends of an unanswered REQ (or REP) before the connection
        /// fails, as the REQ's Max CM Retries field (rdma_cm's default 15)
        cm_max_retries: u8 = 15; "retries", uint(0, 15);
        /// With connect = "cm": UD pairs too are resolved by RDMA CM, a SIDR_REQ and SIDR_REP
        /// per pair crossing the simulated network (perftest -c UD -R sets it); off, UD pairs
        /// are brought up directly as with connect = "direct" (RC pairs always use the CM)
        cm_ud: bool = false; "switch", Kind::Bool;
    }
}

config_enum! {
    /// How a run connects its QP pairs.
    pub enum Connect {
        /// RDMA CM on the simulated wire: REQ, REP, RTU as MADs to QP1.
        Cm = "cm",
        /// modify_qp on both ends at once: no frames, no simulated time.
        Direct = "direct",
    }
}

config_section! {
    /// Attributes every QP is created with (as ibv_modify_qp would set them).
    pub struct QpConfig in "qp" {
        /// Path MTU: payload bytes per packet (perf -m)
        pmtu: u32 = 4096; "bytes", Kind::IntSet(PMTUS);
        /// Local ACK timeout 4.096 µs × 2^timeout, 0 = infinite, as ibv_qp_attr.timeout (perf -u)
        timeout: u8 = 14; "exponent", uint(0, 31);
        /// Retransmissions after a timeout or NAK before the QP fails with RETRY_EXC_ERR
        retry_cnt: u8 = 7; "retries", uint(0, 7);
        /// Retries after an RNR NAK before the QP fails; 7 = infinite
        rnr_retry: u8 = 7; "retries", uint(0, 7);
        /// RNR NAK timer code sent by the responder (IB encoding: 12 = 0.64 ms, 0 = 655.36 ms)
        min_rnr_timer: u8 = 12; "code", uint(0, 31);
        /// IPv4 TOS byte of the QP's packets: DSCP (bits 7-2) and ECN (bits 1-0), the RoCEv2
        /// form of the GRH traffic class (perftest --tclass); default ECT(0), so switches may
        /// mark congestion instead of dropping
        traffic_class: u8 = 2; "TOS", uint(0, 255);
        /// IPv4 TTL of the QP's packets (the GRH hop limit, perftest -L/--hop_limit)
        hop_limit: u8 = 64; "hops", uint(1, 255);
        /// The NIC's per-QP rate limit on the request frames a QP sends, on the wire
        /// (perftest --rate_limit); 0 = none
        rate_limit_gbps: f64 = 0.0; "Gb/s", float(0.0, 1.0e6);
        /// Bytes an idle QP may send back to back under the rate limit (its token bucket);
        /// one frame more may always go. Without a rate (qp.rate_limit_gbps = 0) nothing
        /// reads it, and a run that sets it says so
        rate_limit_burst_bytes: u64 = 0; "bytes", uint(0, 1 << 40);
        /// Outstanding RDMA READ and atomic requests per QP (initiator depth and responder
        /// resources)
        max_rd_atomic: u8 = 16; "requests", uint(1, 16);
        /// Packet window: PSNs a QP may have sent and not yet had acknowledged (the queue
        /// depth in packets some NICs let users set); the default is the whole half of the PSN
        /// space, no practical limit
        window_psns: u32 = 8_388_607; "PSNs", uint(1, 8_388_607);
        /// AckReq on every this many packets inside a long message (the last packet of a
        /// message, READs and atomics always ask)
        ack_req_every: u32 = 16; "packets", uint(1, 1 << 23);
        /// How QPs detect and repair loss: "gbn" (go-back-N, RoCEv2), "ornic" or "mp_rdma"
        /// (out-of-order WRITE and READ, sized by `[ooo]`; such QPs post WRITEs and READs only)
        reliability: Reliability = Reliability::Gbn; "mode", Kind::Str(Reliability::NAMES);
        /// QP service: "rc", "uc" (SEND/WRITE without ACKs) or "ud" (one-packet SENDs with a
        /// DETH, 40-byte GRH area in receives); perftest -c/--connection. UC and UD lose what
        /// the network drops: the run counts it and verifies what arrived
        transport: Transport = Transport::Rc; "service", Kind::Str(Transport::NAMES);
        /// First PSN of each QP's send queue (and its peer's receive side): "random" (24 bits
        /// per QP from the run's seed, as rdma_cm and perftest draw them), "zero" or "near_wrap"
        /// (0xFFFF00, to test the wrap)
        start_psn: StartPsn = StartPsn::Random; "policy", Kind::Str(StartPsn::NAMES);
    }
}

impl QpConfig {
    /// Local ACK timeout in ns: 4.096 µs × 2^timeout; `None` when `timeout` is 0 (infinite).
    pub fn ack_timeout_ns(&self) -> Option<f64> {
        Self::ack_timeout_ns_of(self.timeout)
    }

    /// [`QpConfig::ack_timeout_ns`] of a `timeout` exponent.
    pub fn ack_timeout_ns_of(timeout: u8) -> Option<f64> {
        (timeout != 0).then(|| 4096.0 * f64::from(1u32 << timeout.min(31)))
    }

    /// [`QpConfig::ack_timeout_ns`] in ps, the simulator's unit.
    pub fn ack_timeout_ps(&self) -> Option<rnic_sim::TimePs> {
        self.ack_timeout_ns()
            .map(|ns| (ns * 1e3) as rnic_sim::TimePs)
    }
}

impl Config {
    /// Checks every field against [`schema::FIELDS`] (ranges, accepted values); the error
    /// names the field path, the value, what is accepted and how to set it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let table = self.to_table()?;
        schema::check_config_table(&table)
    }

    /// The config as a TOML table (unset optional fields are absent).
    pub fn to_table(&self) -> Result<toml::Table, ConfigError> {
        toml::Table::try_from(self).map_err(|e| ConfigError::Internal(e.to_string()))
    }

    /// Builds a config from a TOML table: checks every key, type and range first (so errors
    /// name the field), then deserializes. Missing fields take their baseline default.
    pub fn from_table(table: toml::Table) -> Result<Config, ConfigError> {
        let mut table = table;
        schema::check_and_normalize_config_table(&mut table)?;
        perturb::apply(&mut table)?;
        let cfg: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Internal(e.message().to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses a (partial) config from TOML text, e.g. the output of `rnic config show`.
    /// `origin` names the text in errors (a file name).
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Config, ConfigError> {
        let table = parse_toml_table(src, origin)?;
        Config::from_table(table)
    }

    /// Resolves a profile and applies overrides in order.
    pub fn resolve(profile_name: &str, overrides: &[Override]) -> Result<Config, ConfigError> {
        let mut table = profiles::profile_table(profile_name)?;
        for o in overrides {
            check_override(o)?;
            o.apply(&mut table)?;
        }
        Config::from_table(table)
    }
}

/// Checks one override's value against its field, as the merged table is checked, so a
/// value a later override replaces (a scenario's `[set]` under `--set`) is refused when
/// it is wrong rather than never looked at. Sections and unknown keys are left to the
/// check of the whole table, which lists the keys a section takes.
fn check_override(o: &Override) -> Result<(), ConfigError> {
    let Some(doc) = schema::field(&o.key) else {
        return Ok(());
    };
    let mut probe = o.value.clone();
    if doc.optional && probe.as_str().is_some_and(schema::unsets_optional) {
        return Ok(());
    }
    schema::check_value(doc, &mut probe, schema::HintStyle::Config)
}

/// Parses TOML text into a table; syntax errors carry line and column.
pub fn parse_toml_table(src: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    src.parse::<toml::Table>()
        .map_err(|e| ConfigError::from_toml_error(origin, src, &e))
}

#[cfg(test)]
mod tests;
