//! Every timing parameter of the model, with units and defaults, and its derivation from
//! [`crate::config::Config`].
//!
//! Times are held in picoseconds (`_ps`), sizes in bytes, rates as integer Mbps so that
//! serialization is exact integer arithmetic (see [`rnic_sim::bytes_time_ps_mbps`]).
//!
//! # Calibration of the `baseline` profile (done once, not per figure)
//!
//! The papers fix the environment (100 Gbps Ethernet, PCIe 128 Gbps with a 500 ns read round
//! trip, 1 GHz NIC clock, 256 B QPC entries, 64 B WQEs, QPC cache 300 entries) but not the
//! cycles per pipeline step. csRNA reports a peak 64 B RDMA WRITE message rate of
//! 66.4 Mops (1 server, 10 clients); the resource-prefetching paper reports "close to ConnectX-5", about 70 Mops.
//! We make one unit, the TX message engine, the bottleneck of the 64 B path and give it
//! `tx_msg_cycles = 15`: 1 / (15 cycles × 1 ns) = 66.7 Mops. Every other unit on the
//! 64 B path must then have a smaller per-message occupancy, which the defaults satisfy
//! (server side, per 64 B WRITE, `wqes_per_fetch` = 8, one ACK per message at worst):
//!
//! | unit | cycles / message | bound | utilisation at 66.7 Mops |
//! |---|---|---|---|
//! | doorbell unit (one doorbell per post) | 4 | 250 Mops | 27 % |
//! | scheduler (one visit per 8 WQEs) | 4 / 8 | 2 Gops | 3 % |
//! | QPC manager (1 lookup per visit, 1 per message on the requester channel, 1 per ACK) | 2 × 2.125 | 235 Mops | 28 % |
//! | WQE decode | 4 | 250 Mops | 27 % |
//! | MPT + MTT lookups | 1 + 1 | 500 Mops | 13 % |
//! | **TX engine, first packet of a message** | **15** | **66.7 Mops** | **100 %** |
//! | RX pipeline (ACKs) | 8 | 125 Mops | 53 % |
//! | CQ unit | 4 | 250 Mops | 27 % |
//!
//! The other resources stay above it:
//! * wire: a 64 B WRITE-only frame is 14 + 20 + 8 + 12 + 16 (RETH) + 64 + 4 (ICRC) = 138 B,
//!   + 4 FCS + 20 preamble/IFG = 162 B = 1296 bit: 77.2 Mpps at 100 Gbps;
//! * PCIe host → NIC per message: 64 B payload + 24 B completion header, 1/8 of a 512 B WQE
//!   batch in two 256 B completions (70 B), a 32 B doorbell TLP: 190 B = 11.9 ns at
//!   128 Gbps, 84 Mops; NIC → host: 27 B of read requests + a 64 B CQE with its 24 B header:
//!   115 B, 139 Mops;
//! * hosts: 10 cores at 50 ns (post) + 20 ns (poll) per message: 143 Mops.
//!
//! So the model's 64 B peak is min(1/II, wire, PCIe, CPU) = 66.7 Mops (measured: 65.8 Mops
//! over 10 ms with 300 QPs, 1 server + 10 clients), against csRNA's 66.4 Mops.
//! The TX backlog (`tx_backlog_cap` = 256 messages) must cover the fetch pipeline's refill
//! time (about 1.1 µs: QPC lookup, WQE read, payload read) at the peak rate (73 messages)
//! or the engine starves; 64 was measured to cap the rate at 60 Mops.
//!
//! # The `csrna` profile (csRNA) at many QPs
//!
//! Nothing is recalibrated for csRNA: the profile only switches the paper's mechanisms
//! (non-blocking QPC manager, `ooo_cap` 16, latency hiding) and its stated setup (10 clients).
//! Why the 64 B peak then holds from a few QPs to 51,200 (measured 66.4–67.2 Mops, WRITE and
//! READ) while FCFS collapses:
//! * with latency hiding, every scheduler visit (up to `wqes_per_fetch` = 8 WQEs of one QP)
//!   sends one descriptor-channel QPC request that acts as a prefetch: the QPC read (256 B +
//!   24 B header over PCIe) overlaps the WQE read, so the requester finds the context cached
//!   about 1 µs later — far less than the 300-entry cache's reuse distance (about 40 visits
//!   at the peak);
//! * per message the host → NIC direction then carries 88 B payload, 70 B of WQE batch,
//!   32 B doorbell and 280 / 8 = 35 B of QPC: 225 B, 71 Mops at 128 Gbps, still above the
//!   TX engine's 66.7 Mops, so at 64 B QPC placement does not matter;
//! * each descriptor request holds one of the descriptor requester's `ooo_cap` indices until
//!   its context is in the cache (about 0.6 µs on a miss), so visits are limited to
//!   `ooo_cap` / 0.6 µs: 1 → 13.6, 2 → 27, 4 → 53, 8 and 16 → the peak (at 10,000 QPs);
//! * FCFS with the same cache serves every miss in turn: one visit per miss latency.
//!
//! # Chunk and TX payload buffer (two values the papers leave open)
//!
//! * `chunk_bytes = 1024`: csRNA §4.1 says a scheduler visit retrieves "the WQEs
//!   containing certain amount of data", and §5.3 that "the amount of data transferred at a
//!   time is only at the KB level"; we take the smallest KB-level value. Up to 64 B messages
//!   the `wqes_per_fetch = 8` cap binds first (8 × 64 B = 512 B), so every 64 B result above
//!   is unchanged by it. From 1 KB upwards each message is a visit of its own, with its own
//!   QPC access: at many QPs the host-memory QPC adds 280 B of PCIe reads per message, which
//!   is what makes QPC placement matter at mid sizes (Fig. 9; the book's csRNA chapter,
//!   `docs/book/src/repro/csrna.md`, gives the effect for chunks of 512 B to 2 KB).
//! * `tx_buffer_bytes = 65536`: the payload buffer must cover the payload read's latency at
//!   line rate. Unloaded that is 12.5 GB/s × (500 ns + 256 ns to read a 4 KB packet at
//!   128 Gbps) ≈ 9.5 KB, but when PCIe is 90 % busy (host-memory QPCs at 12,800 QPs) the
//!   reads queue: 32 KiB then held 4 KB WRITEs at 2.82 Mops (95 % of the wire's 2.98), 48 KiB
//!   reached the wire; we take the next power of two. The fetch stage still cannot run more
//!   than 64 KiB ahead of the wire (64 visits of 1 KB messages, far below the 300-entry
//!   QPC cache's reuse distance).
//!
//! Measurements need a warm-up that covers the initial posting (`tx_depth` WQEs on every
//! QP, one doorbell each): during it the doorbells alone take 40 % of PCIe.

pub mod cc;
pub mod isolation;
pub mod prefetch;
pub mod rx_buffer;
pub mod settle;
pub mod trace;

use rnic_sim::{bytes_time_ps_mbps, ns, TimePs};

use crate::config::{
    Config, DescriptorFetch, DmaReadArbiter, QpcManager as QpcManagerKind, QpcPlacement,
};

/// Where on-NIC context tables (QPC, MPT, MTT) live when not cached on chip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Host memory, over PCIe (DMA read with the PCIe round trip).
    Host,
    /// On-board DDR with its own latency and bandwidth.
    Ddr,
}

/// Bytes `len` data bytes put on the link in TLPs of at most `mps_bytes` (a posted write,
/// or a read's completions): the data and a header of `tlp_header_bytes` per TLP.
pub fn data_tlps_wire_bytes(len: u64, mps_bytes: u64, tlp_header_bytes: u64) -> u64 {
    len + len.div_ceil(mps_bytes).max(1) * tlp_header_bytes
}

/// PCIe link parameters, one direction each way with the same rate.
#[derive(Debug, Clone, PartialEq)]
pub struct PcieParams {
    /// Rate of each direction, Mbps (128 000 = 128 Gbps).
    pub mbps: u64,
    /// Read round trip: from the last byte of the read request TLP leaving the NIC to the
    /// first completion byte arriving back, ps. Default 500 ns.
    pub read_rtt_ps: TimePs,
    /// Posted write latency: from the last byte of a write TLP leaving the sender to the data
    /// being visible at the receiver (host memory, or the NIC for MMIO), ps. Default 250 ns.
    pub posted_write_ps: TimePs,
    /// TLP overhead (framing, sequence, header, LCRC) per TLP, bytes. Default 24.
    pub tlp_header_bytes: u64,
    /// Max payload size: writes and read completions are split into TLPs of this size, bytes.
    pub mps_bytes: u64,
    /// Max read request size: reads are split into requests of this size, bytes.
    pub mrrs_bytes: u64,
    /// Outstanding read request tags (one per MRRS request).
    pub max_read_tags: u32,
    /// Doorbell MMIO write payload, bytes (8: producer index + QPN).
    pub doorbell_bytes: u64,
}

/// On-board DDR parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct DdrParams {
    /// Access latency, ps. Default 100 ns.
    pub latency_ps: TimePs,
    /// Bandwidth, Mbps. Default 200 Gbps.
    pub mbps: u64,
}

/// Ethernet port parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct EthParams {
    /// Line rate, Mbps. Default 100 Gbps.
    pub mbps: u64,
    /// Preamble + SFD + inter-frame gap, bytes. Default 8 + 12 = 20.
    pub preamble_ifg_bytes: u64,
    /// Frame check sequence, bytes. Default 4.
    pub fcs_bytes: u64,
    /// Minimum frame (without FCS) — shorter frames are padded on the wire. Default 60.
    pub min_frame_bytes: u64,
}

impl EthParams {
    /// Bytes a frame of `frame_len` bytes (without FCS) occupies on the wire: padded to the
    /// minimum frame, with its FCS, preamble, SFD and inter-frame gap.
    pub fn wire_bytes(&self, frame_len: u64) -> u64 {
        frame_len.max(self.min_frame_bytes) + self.fcs_bytes + self.preamble_ifg_bytes
    }
}

/// Network parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct NetParams {
    /// Client nodes (nodes 1..=clients); node 0 is the server.
    pub clients: u32,
    /// One-way propagation delay of a star's links, ps (from `link_km` × 5 µs/km when set).
    pub link_delay_ps: TimePs,
    /// Output buffer per switch port, bytes; a frame that does not fit is dropped.
    pub switch_buffer_bytes: u64,
    /// Fixed forwarding latency of the switch (after store-and-forward), ps. Default 0.
    pub switch_latency_ps: TimePs,
}

/// Host (CPU) parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct HostParams {
    /// CPU time of one ibv_post_send (WQE write + doorbell store), ps. Default 50 ns.
    pub post_send_ps: TimePs,
    /// CPU time to poll and consume one CQE, ps. Default 20 ns.
    pub poll_cq_ps: TimePs,
    /// Time for a polling CPU to see a byte DMA-written into memory (cache miss), ps.
    pub mem_latency_ps: TimePs,
    /// Application cores per node; QP i is served by core i mod cores. Default 10 (csRNA's
    /// hosts have 10 cores).
    pub cores: u32,
    /// Bandwidth tests: WQEs per post list (one doorbell per list). Default 1.
    pub post_list: u32,
    /// SEND/WRITE payloads up to this many bytes go inline in the WQE (0: never).
    pub inline_bytes: u32,
    /// Received SENDs of at most this many bytes ride in their CQE (0: never).
    pub inline_recv_bytes: u64,
    /// Bandwidth tests: one signaled WQE (one CQE) per this many. Default 1.
    pub cq_mod: u32,
    /// SEND bandwidth tests: receives the target keeps posted per QP. Default 512.
    pub rx_depth: u32,
    /// SEND bandwidth tests: receives reposted per doorbell.
    pub recv_post_list: u32,
    /// Bandwidth tests: warm every QP up before measuring (perftest --perform_warm_up).
    pub perform_warm_up: bool,
    /// Bandwidth tests in iteration mode: record the stamps of perftest's BW peak.
    pub bw_peak: bool,
    /// CPU time of building one WQE before its doorbell, ps (0: part of `post_send_ps`).
    pub wqe_prep_ps: TimePs,
    /// Latency tests: idle time between an iteration's end and the next post, ps.
    pub latency_gap_ps: TimePs,
    /// Completions by event: a sleeping core's wakeup after a CQE, ps (`None`: polling).
    pub cq_event_ps: Option<TimePs>,
}

/// NIC parameters: caches, sizes and per-unit initiation intervals (II) in picoseconds
/// (converted from cycles at `clock_ghz`).
#[derive(Debug, Clone, PartialEq)]
pub struct NicParams {
    /// One cycle, ps (1000 at 1 GHz).
    pub cycle_ps: TimePs,
    /// Bytes of one QPC entry (256).
    pub qpc_entry_bytes: u64,
    /// QPC cache capacity, entries (300). 0 = no cache (every access misses).
    pub qpc_cache_entries: u32,
    /// Node 0's QPC cache capacity when it differs (`nic.server_qpc_cache_entries`).
    pub server_qpc_cache_entries: Option<u32>,
    /// The clients' QPC cache capacity when it differs (`nic.client_qpc_cache_entries`).
    pub client_qpc_cache_entries: Option<u32>,
    /// Which QPC manager runs: FCFS (baseline) or csRNA's non-blocking manager.
    pub qpc_manager: QpcManagerKind,
    /// Where QPC/MPT/MTT tables live.
    pub placement: Placement,
    /// WQE size, bytes (64).
    pub wqe_bytes: u64,
    /// WQEs fetched by one scheduler visit, in one DMA read (8).
    pub wqes_per_fetch: u32,
    /// Message bytes one scheduler visit takes from a QP (1024).
    pub chunk_bytes: u64,
    /// MPT cache capacity, entries (256).
    pub mpt_cache_entries: u32,
    /// MTT cache capacity, entries (256); one entry maps one page.
    pub mtt_cache_entries: u32,
    /// Page size of MTT translation, bytes (4096).
    pub page_bytes: u64,
    /// MPT entry size, bytes (64).
    pub mpt_entry_bytes: u64,
    /// MTT entry size, bytes (8).
    pub mtt_entry_bytes: u64,
    /// CQE size, bytes (64).
    pub cqe_bytes: u64,
    /// Doorbell unit II (4 cycles).
    pub doorbell_ps: TimePs,
    /// Scheduler II per visit (4 cycles).
    pub sched_ps: TimePs,
    /// WQE decode II per WQE (4 cycles).
    pub wqe_decode_ps: TimePs,
    /// QPC lookup II per request (2 cycles).
    pub qpc_lookup_ps: TimePs,
    /// MPT lookup II (1 cycle).
    pub mpt_lookup_ps: TimePs,
    /// MTT lookup II per page (1 cycle).
    pub mtt_lookup_ps: TimePs,
    /// TX engine occupancy for the first packet of a message (15 cycles: the calibrated
    /// bottleneck, see the module docs).
    pub tx_msg_ps: TimePs,
    /// TX engine occupancy for each further packet of a message (4 cycles).
    pub tx_pkt_ps: TimePs,
    /// RX pipeline II per packet (8 cycles).
    pub rx_pkt_ps: TimePs,
    /// TX engine occupancy for an ACK/NAK (4 cycles).
    pub ack_ps: TimePs,
    /// CQ unit II per CQE, including the CQ context lookup (4 cycles).
    pub cqe_ps: TimePs,
    /// WQEs a QP may have fetched and not yet completed (128).
    pub max_outstanding_wqes_per_qp: u32,
    /// Depth of the QPC manager's request FIFO seen by the scheduler (16).
    pub qpc_fifo_depth: u32,
    /// Scheduler visits (WQE fetches) in flight at once (64).
    pub max_visits_in_flight: u32,
    /// Messages fetched and posted to the transport but not yet started by the TX engine,
    /// above which the scheduler pauses (backpressure; 256).
    pub tx_backlog_cap: u32,
    /// TX payload buffer: payload read (or being read) into the NIC and not yet on the
    /// wire, above which payload reads wait and the scheduler pauses (64 KiB).
    pub tx_buffer_bytes: u64,
    /// Bytes the TX engine may run ahead of the port (one 4 KB frame + headers; 8192).
    pub tx_port_slack_bytes: u64,
    /// The receive buffer ([`crate::nic::rx_buffer`]): its size, and with PFC its XOFF and
    /// XON levels (262144, 196608, 131072 bytes).
    pub rx_buffer: rx_buffer::RxBufferParams,
    /// How waiting DMA reads are ordered, and whether payload is streamed per packet.
    pub dma_read_arbiter: DmaReadArbiter,
    /// Per payload stream: bytes requested from host memory and not yet sent (16 KiB).
    pub payload_read_ahead_bytes: u64,
    /// csRNA out-of-order capacity: indices per non-blocking QPC requester (16).
    pub ooo_cap: u32,
    /// Indices of the descriptor unit's requester: `ooo_cap`, or 1 with
    /// `nic.descriptor_fetch = "in_order"`.
    pub descriptor_ooo_cap: u32,
    /// csRNA latency-hiding QPC scheduling: SQ address table on chip, WQE read without the
    /// QPC, QPC prefetch overlapped with it.
    pub latency_hiding: bool,
    /// SQ address table bytes per QP (10).
    pub sq_table_entry_bytes: u64,
    /// SQ address table read, ps (1 cycle).
    pub sq_table_ps: TimePs,
    /// TX performance isolation: the mechanisms that run ([`crate::nic::mech::isolation`]).
    pub iso: isolation::IsoParts,
    /// Resource prefetching: triggers, window and WQE cache ([`crate::nic::mech::prefetch`]).
    pub prefetch: prefetch::PrefetchParams,
}

/// All parameters of the timed model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelParams {
    /// Seed of every random choice.
    pub seed: u64,
    /// NIC microarchitecture.
    pub nic: NicParams,
    /// PCIe link.
    pub pcie: PcieParams,
    /// On-board DDR.
    pub ddr: DdrParams,
    /// Ethernet ports.
    pub eth: EthParams,
    /// Links, switch, impairments.
    pub net: NetParams,
    /// Host CPU.
    pub host: HostParams,
    /// Path MTU, bytes.
    pub pmtu: u32,
    /// Per-QP rate limit of request frames, Gb/s (0: none).
    pub rate_limit_gbps: f64,
    /// The rate limiter's burst, bytes.
    pub rate_limit_burst_bytes: u64,
    /// Congestion control in the NICs (`net.cc`).
    pub cc: cc::CcParams,
    /// Safety limit on processed events.
    pub max_events: u64,
    /// Fixed warm-up before measurement (`sim.warmup_us`), ps; `None`: steady-state
    /// detection with `settle`.
    pub warmup_ps: Option<TimePs>,
    /// Steady-state detection.
    pub settle: settle::SettleParams,
    /// Latency tests: uses of every QP before the window opens.
    pub warmup_rounds: u64,
}

fn mbps(gbps: f64) -> u64 {
    (gbps * 1000.0).round().max(1.0) as u64
}

impl ModelParams {
    /// Derives the model's parameters from a resolved configuration.
    pub fn from_config(cfg: &Config) -> ModelParams {
        let n = &cfg.nic;
        let clock = if n.clock_ghz > 0.0 { n.clock_ghz } else { 1.0 };
        let cyc = |c: u32| rnic_sim::cycles(u64::from(c), clock);
        let net = &cfg.net;
        ModelParams {
            seed: cfg.sim.seed,
            nic: NicParams {
                cycle_ps: rnic_sim::cycles(1, clock),
                qpc_entry_bytes: u64::from(n.qpc_entry_bytes),
                qpc_cache_entries: n.qpc_cache_entries,
                server_qpc_cache_entries: n.server_qpc_cache_entries,
                client_qpc_cache_entries: n.client_qpc_cache_entries,
                qpc_manager: n.qpc_manager,
                placement: match n.qpc_placement {
                    QpcPlacement::Host => Placement::Host,
                    QpcPlacement::Ddr => Placement::Ddr,
                },
                wqe_bytes: u64::from(n.wqe_bytes.max(64)),
                wqes_per_fetch: n.wqes_per_fetch.max(1),
                chunk_bytes: n.chunk_bytes.max(1),
                mpt_cache_entries: n.mpt_cache_entries,
                mtt_cache_entries: n.mtt_cache_entries,
                page_bytes: n.page_bytes.max(64),
                mpt_entry_bytes: u64::from(n.mpt_entry_bytes.max(1)),
                mtt_entry_bytes: u64::from(n.mtt_entry_bytes.max(1)),
                cqe_bytes: u64::from(n.cqe_bytes.max(1)),
                doorbell_ps: cyc(n.doorbell_cycles),
                sched_ps: cyc(n.sched_cycles),
                wqe_decode_ps: cyc(n.wqe_decode_cycles),
                qpc_lookup_ps: cyc(n.qpc_lookup_cycles),
                mpt_lookup_ps: cyc(n.mpt_lookup_cycles),
                mtt_lookup_ps: cyc(n.mtt_lookup_cycles),
                tx_msg_ps: cyc(n.tx_msg_cycles),
                tx_pkt_ps: cyc(n.tx_pkt_cycles),
                rx_pkt_ps: cyc(n.rx_pkt_cycles),
                ack_ps: cyc(n.ack_cycles),
                cqe_ps: cyc(n.cqe_cycles),
                max_outstanding_wqes_per_qp: n.max_outstanding_wqes_per_qp.max(1),
                qpc_fifo_depth: n.qpc_fifo_depth.max(1),
                max_visits_in_flight: n.max_visits_in_flight.max(1),
                tx_backlog_cap: n.tx_backlog_cap.max(1),
                tx_buffer_bytes: n.tx_buffer_bytes.max(1),
                tx_port_slack_bytes: n.tx_port_slack_bytes,
                rx_buffer: rx_buffer::RxBufferParams {
                    capacity_bytes: n.rx_buffer_bytes,
                    lossless: net.pfc,
                    xoff_bytes: n.rx_buffer_bytes.saturating_sub(n.rx_pfc_headroom_bytes),
                    xon_bytes: n.rx_pfc_xon_bytes,
                    pcie_mbps: mbps(cfg.pcie.gbps),
                    mps_bytes: u64::from(cfg.pcie.mps_bytes),
                    tlp_header_bytes: u64::from(cfg.pcie.tlp_header_bytes),
                },
                dma_read_arbiter: n.dma_read_arbiter,
                payload_read_ahead_bytes: n.payload_read_ahead_bytes.max(4096),
                ooo_cap: n.ooo_cap.clamp(1, 256),
                descriptor_ooo_cap: match n.descriptor_fetch {
                    DescriptorFetch::OutOfOrder => n.ooo_cap.clamp(1, 256),
                    DescriptorFetch::InOrder => 1,
                },
                latency_hiding: n.latency_hiding,
                sq_table_entry_bytes: u64::from(n.sq_table_entry_bytes),
                sq_table_ps: cyc(n.sq_table_cycles),
                iso: isolation::IsoParts::from_config(n),
                prefetch: prefetch::PrefetchParams::from_config(n),
            },
            pcie: PcieParams {
                mbps: mbps(cfg.pcie.gbps),
                read_rtt_ps: ns(cfg.pcie.read_rtt_ns),
                posted_write_ps: ns(cfg.pcie.posted_write_ns),
                tlp_header_bytes: u64::from(cfg.pcie.tlp_header_bytes),
                mps_bytes: u64::from(cfg.pcie.mps_bytes.max(64)),
                mrrs_bytes: u64::from(cfg.pcie.mrrs_bytes.max(64)),
                max_read_tags: cfg.pcie.max_read_tags.max(1),
                doorbell_bytes: u64::from(cfg.pcie.doorbell_bytes.max(1)),
            },
            ddr: DdrParams {
                latency_ps: ns(cfg.ddr.latency_ns),
                mbps: mbps(cfg.ddr.gbps),
            },
            eth: EthParams {
                mbps: mbps(cfg.eth.gbps),
                preamble_ifg_bytes: u64::from(cfg.eth.preamble_ifg_bytes),
                fcs_bytes: u64::from(cfg.eth.fcs_bytes),
                min_frame_bytes: u64::from(cfg.eth.min_frame_bytes),
            },
            net: NetParams {
                clients: net.clients.max(1),
                link_delay_ps: ns(net.effective_link_delay_ns()),
                switch_buffer_bytes: net.switch_buffer_bytes,
                switch_latency_ps: ns(net.switch_latency_ns),
            },
            host: HostParams {
                post_send_ps: ns(cfg.host.post_send_ns),
                poll_cq_ps: ns(cfg.host.poll_cq_ns),
                mem_latency_ps: ns(cfg.host.mem_latency_ns),
                cores: cfg.host.cores.max(1),
                post_list: cfg.host.post_list.max(1),
                inline_bytes: cfg.host.inline_bytes,
                inline_recv_bytes: u64::from(cfg.host.inline_recv_bytes),
                cq_mod: cfg.host.cq_mod.max(1),
                perform_warm_up: cfg.host.perform_warm_up,
                bw_peak: cfg.host.bw_peak,
                rx_depth: cfg.host.rx_depth.max(1),
                recv_post_list: cfg.host.recv_post_list.clamp(1, cfg.host.rx_depth.max(1)),
                wqe_prep_ps: ns(cfg.host.wqe_prep_ns),
                latency_gap_ps: ns(cfg.host.latency_gap_us * 1e3),
                cq_event_ps: cfg.host.cq_events.then(|| ns(cfg.host.cq_event_ns)),
            },
            pmtu: cfg.qp.pmtu,
            rate_limit_gbps: cfg.qp.rate_limit_gbps,
            rate_limit_burst_bytes: cfg.qp.rate_limit_burst_bytes,
            cc: cc::CcParams::from_config(cfg),
            max_events: cfg.sim.max_events,
            warmup_ps: cfg.sim.warmup_us.map(|w| ns(w * 1000.0)),
            settle: settle::SettleParams {
                subwindow_min_ps: ns(cfg.sim.settle_subwindow_us * 1000.0),
                subwindow_min_ops: cfg.sim.settle_min_ops.max(1),
                tolerance: cfg.sim.settle_tolerance,
                windows: cfg.sim.settle_windows.max(2) as usize,
                max_warmup_ps: ns(cfg.sim.max_warmup_us * 1000.0),
                max_windows: cfg.sim.settle_max_windows.max(cfg.sim.settle_windows),
                capped_for_window_us: None,
            },
            warmup_rounds: u64::from(cfg.sim.warmup_rounds),
        }
    }

    /// The parameters of node `node` (0: the server, others: clients): the run's, with the
    /// QPC cache capacity the node's own where the config gives the two ends different
    /// caches (`nic.server_qpc_cache_entries`, `nic.client_qpc_cache_entries`).
    pub fn for_node(&self, node: usize) -> ModelParams {
        let own = if node == 0 {
            self.nic.server_qpc_cache_entries
        } else {
            self.nic.client_qpc_cache_entries
        };
        let mut p = self.clone();
        p.nic.qpc_cache_entries = own.unwrap_or(self.nic.qpc_cache_entries);
        p
    }

    /// The model's parameters of the `baseline` profile.
    pub fn baseline() -> ModelParams {
        ModelParams::from_config(&Config::default())
    }

    /// Wire time of a frame of `frame_len` bytes (without FCS) on an Ethernet port, ps:
    /// (max(frame, 60) + FCS + preamble/IFG) × 8 / rate.
    pub fn wire_time_ps(&self, frame_len: usize) -> TimePs {
        bytes_time_ps_mbps(self.wire_bytes(frame_len), self.eth.mbps)
    }

    /// Bytes a frame occupies on the wire, including padding, FCS, preamble and IFG.
    pub fn wire_bytes(&self, frame_len: usize) -> u64 {
        (frame_len as u64).max(self.eth.min_frame_bytes)
            + self.eth.fcs_bytes
            + self.eth.preamble_ifg_bytes
    }
}
