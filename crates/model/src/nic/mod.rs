//! The NIC microarchitecture and its timing (one [`Nic`] per node).
//!
//! Transmit: [`doorbell`] → [`scheduler`] (round robin over active QPs) → QPC request to the
//! [`qpc_manager`] (descriptor channel; [`qpc_cache`] LRU) → [`wqe_fetch`] (DMA read of up to
//! `wqes_per_fetch` WQEs, decode) → [`translation`] (MPT/MTT caches) → payload DMA read
//! ([`dma`] over [`pcie`]) → QPC request on the requester channel → `post_send` to the
//! transport → [`tx_pipeline`] (the TX engine
//! pulls frames from the transport, packetized by PMTU) → Ethernet port.
//!
//! Receive: [`rx_pipeline`] (parse) → QPC (responder or requester channel) → translation of
//! RETH/AtomicETH targets → the transport's PSN and protection checks and data placement
//! (`handle_packet`) → payload DMA write, READ/atomic response data read, ACK generation →
//! [`cq`] (CQE DMA write).
//!
//! csRNA switches, each one config field: `nic.qpc_manager` selects the FCFS
//! baseline or the non-blocking manager with its `nic.ooo_cap`-index requesters
//! ([`mech::csrna::nonblocking`] over [`mech::csrna`]); `nic.latency_hiding` lets the scheduler read
//! the SQ address from an on-chip table and issue the WQE read without waiting for the QPC
//! (the descriptor request becomes a prefetch, [`scheduler`]); `nic.qpc_placement` puts the
//! QPC/MPT/MTT backing store in host memory (PCIe) or on-board DDR ([`ddr`]).
//!
//! TX isolation switches ([`mech::isolation`]): `nic.tx_isolation` selects the baseline TX
//! architecture (shared WQE FIFO, run to completion, coupled backpressure, round robin) or
//! the TX-isolation paper's optimized-v1/v2 (separate WQE caching, slicing execution,
//! isolated backpressure, adaptive WRR), each part also switchable alone (`nic.iso_*`). The
//! TX path reaches them through two hooks chosen here once ([`ports::WqeAdmission`] for the
//! scheduler, [`ports::TxOrder`] for the TX engine), whose baseline kinds are no-ops.
//!
//! Every unit has an initiation interval in NIC cycles, reports its counters, and every
//! on-chip structure reports its bytes ([`onchip`]).

pub mod cq;
pub mod cx;
pub mod ddr;
pub mod dma;
pub mod dma_arbiter;
pub mod doorbell;
pub mod lru;
pub mod mech;
pub mod onchip;
pub mod pause_looks;
pub mod payload_stream;
pub mod pcie;
pub mod ports;
pub mod qp_table;
pub mod qpc_cache;
pub mod qpc_manager;
pub mod rate_limiter;
mod route_mem;
mod route_rx;
mod route_tx;
pub mod rx_buffer;
pub mod rx_pipeline;
pub mod rx_sequence;
pub mod rx_translate;
pub mod sched_wake;
pub mod scheduler;
pub mod translation;
mod tx_park;
pub mod tx_pipeline;
pub mod unit;
pub mod wqe_fetch;

use rnic_sim::TimePs;
use rnic_transport::Device;

use crate::config::QpcManager as QpcManagerKind;
use crate::event::NicEv;
use crate::params::ModelParams;
use crate::slab::Slab;

use cq::CqUnit;
use cx::NicCx;
use ddr::Ddr;
use dma::Dma;
use doorbell::DoorbellUnit;
use mech::cc::hook::AnyCc;
use mech::csrna::nonblocking::NonBlocking;
use mech::isolation::{self, hooks::AnyTxOrder, Isolation};
use mech::prefetch::hook::{AnyPrefetch, SchedMirror};
use pcie::Pcie;
pub use ports::{DmaToken, QpcCont, TransCont};
pub use qp_table::QpHw;
use qpc_cache::QpcCache;
use qpc_manager::{any::AnyQpcManager, fcfs::Fcfs, QpcOutputs};
use rx_pipeline::RxPipeline;
use scheduler::Scheduler;
use translation::{TransFetch, Translation, TranslationParams};
use tx_pipeline::TxEngine;
use wqe_fetch::WqeFetch;

/// One node's NIC: its units, the transport (the protocol truth it drives) and its per-QP
/// records. It routes each unit's outputs to the next unit ([`route_tx`], [`route_rx`],
/// [`route_mem`]); the units themselves know only their own inputs and outputs.
pub struct Nic {
    /// Timing parameters.
    pub p: ModelParams,
    /// The transport: the protocol state of this RNIC.
    pub dev: Device,
    /// Time of the earliest pending `Timer` event.
    pub timer_at: TimePs,
    /// PCIe link to the host.
    pub pcie: Pcie,
    /// On-board DDR.
    pub ddr: Ddr,
    /// DMA engine.
    pub dma: Dma<DmaToken>,
    /// Payload streams of every QP (`nic.dma_read_arbiter = "round_robin"`).
    pub streams: payload_stream::Streams,
    /// QPC manager (owns the QPC cache).
    pub qpc: AnyQpcManager,
    /// Reused output buffers of the QPC manager.
    pub qpc_out: QpcOutputs,
    /// MPT/MTT unit.
    pub trans: Translation<TransCont>,
    /// Reused output buffers of the translation unit.
    pub trans_done: Vec<(TransCont, rnic_sim::TimePs)>,
    /// Reused output buffer of the translation unit's fetches.
    pub trans_fetch: Vec<TransFetch>,
    /// Doorbell unit.
    pub doorbell: DoorbellUnit,
    /// QP scheduler.
    pub sched: Scheduler<SchedMirror>,
    /// WQE fetch and decode.
    pub fetch: WqeFetch,
    /// TX engine, serving QPs in TX isolation's order (its [`ports::TxOrder`] hook).
    pub tx: TxEngine<AnyTxOrder>,
    /// TX performance isolation: its WQE admission hook and waiting-time samples.
    pub iso: Isolation,
    /// The per-QP rate limiter of the TX engine.
    pub rate: rate_limiter::RateLimiter,
    /// Resource prefetching ([`mech::prefetch`]), behind its hook.
    pub pf: AnyPrefetch,
    /// Congestion control ([`mech::cc`], `net.cc`), behind its hook.
    pub cc: AnyCc,
    /// RX pipeline.
    pub rx: RxPipeline,
    /// Receive buffer: received frames until their payload has left for the host.
    pub rx_buffer: rx_buffer::RxBuffer,
    /// The RC requests in the receive lane the responder will execute: only they are
    /// translated ([`rx_sequence`]).
    pub rx_sequence: rx_sequence::RxSequence,
    /// CQ unit.
    pub cq: CqUnit,
    /// Per-QP state, indexed by QPN.
    pub qps: Vec<QpHw>,
    /// Receive-WQE reads in flight: (qpn, first index, count).
    pub rq_reads: Slab<(u32, u32, u32)>,
    /// Schedule `Landed` events for WRITE payloads (write-lat polls memory).
    pub watch_writes: bool,
    /// One QPN per application core (to drain that core's CQs).
    pub core_qpn: Vec<u32>,
    scratch_dma: Vec<(u32, TimePs)>,
    scratch_qpns: Vec<u32>,
    scratch_trans: Vec<translation::TransJob<TransCont>>,
    scratch_reads: Vec<translation::TransRead>,
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("qps", &self.qps.len())
            .finish_non_exhaustive()
    }
}

impl Nic {
    /// Handles one of this NIC's events at `now`.
    pub fn handle(&mut self, now: TimePs, ev: NicEv, cx: &mut NicCx<'_>) {
        match ev {
            NicEv::Mmio { qpn, pi } => self.on_host_mmio(now, qpn, pi, false, cx),
            NicEv::MmioRq { qpn, pi } => self.on_host_mmio(now, qpn, pi, true, cx),
            NicEv::Doorbell { qpn, pi } => self.on_doorbell(now, qpn, pi, cx),
            NicEv::DoorbellRq { qpn, pi } => self.on_doorbell_rq(now, qpn, pi, cx),
            NicEv::Sched => self.on_sched(now, cx),
            NicEv::DmaArrive { slot } => self.on_dma_arrive(now, slot, cx),
            NicEv::DmaDone { slot } => self.on_dma_done(now, slot, cx),
            NicEv::TxJobReady { job } => self.on_tx_job_ready(now, job, cx),
            NicEv::TxPost { job } => self.on_tx_post(now, job, cx),
            NicEv::TxWake => {
                if self.tx_wake_due(now) {
                    self.on_tx_wake(now, cx);
                }
            }
            NicEv::TxLook => self.on_tx_look(now, cx),
            NicEv::RateWake { qpn } => {
                self.rate.woke(qpn);
                self.tx_enlist(qpn);
                self.tx_kick(now, cx);
            }
            NicEv::RxArrive { frame } => self.on_rx_arrive(now, frame, cx),
            NicEv::RxHandle { frame } => self.on_rx_handle(now, frame, cx),
            NicEv::RxBufferLook => self.on_rx_buffer_look(now, cx),
            NicEv::Timer => self.on_timer(now, cx),
            NicEv::Prefetch(ev) => self.on_prefetch_event(now, ev, cx),
            NicEv::Cc(ev) => self.on_cc_event(now, ev, cx),
        }
    }

    /// A NIC with the parameters `p` driving the transport `dev`.
    pub fn new(p: &ModelParams, dev: Device) -> Self {
        let n = &p.nic;
        let cache = QpcCache::new(n.qpc_cache_entries, n.qpc_entry_bytes);
        let qpc = match n.qpc_manager {
            QpcManagerKind::Fcfs => {
                AnyQpcManager::Fcfs(Fcfs::new(cache, n.qpc_lookup_ps, n.qpc_fifo_depth))
            }
            QpcManagerKind::Nonblocking => AnyQpcManager::NonBlocking(NonBlocking::new(
                cache,
                [n.descriptor_ooo_cap, n.ooo_cap, n.ooo_cap],
                n.cycle_ps,
                n.qpc_lookup_ps,
            )),
        };
        let (pf, mirror) = AnyPrefetch::new(n.prefetch);
        let mut sched = Scheduler::new(n.sched_ps);
        sched.mirror = mirror;
        let mut trans = Translation::new(TranslationParams {
            mpt_entries: n.mpt_cache_entries,
            mtt_entries: n.mtt_cache_entries,
            page_bytes: n.page_bytes,
            mpt_ps: n.mpt_lookup_ps,
            mtt_ps: n.mtt_lookup_ps,
            mpt_entry_bytes: n.mpt_entry_bytes,
            mtt_entry_bytes: n.mtt_entry_bytes,
            max_read_bytes: p.pcie.mrrs_bytes,
        });
        trans.observe = pf.is_on();
        Nic {
            p: p.clone(),
            dev,
            timer_at: TimePs::MAX,
            pcie: Pcie::new(p.pcie.clone()),
            ddr: Ddr::new(&p.ddr),
            dma: Dma::new(p.pcie.max_read_tags, n.dma_read_arbiter),
            streams: payload_stream::Streams::default(),
            qpc,
            qpc_out: QpcOutputs::default(),
            trans,
            trans_done: Vec::new(),
            trans_fetch: Vec::new(),
            doorbell: DoorbellUnit::new(n.doorbell_ps),
            sched,
            fetch: WqeFetch::new(n.wqe_decode_ps),
            tx: TxEngine::with_order(Isolation::tx_order(&n.iso)),
            iso: Isolation::new(n.iso, n.cycle_ps),
            rate: rate_limiter::RateLimiter::new(p.rate_limit_gbps, p.rate_limit_burst_bytes),
            pf,
            cc: AnyCc::new(p.cc, p.eth.mbps),
            rx: RxPipeline::new(n.rx_pkt_ps),
            rx_buffer: rx_buffer::RxBuffer::new(n.rx_buffer),
            rx_sequence: rx_sequence::RxSequence::default(),
            cq: CqUnit::new(n.cqe_ps),
            qps: Vec::new(),
            rq_reads: Slab::new(),
            watch_writes: false,
            core_qpn: Vec::new(),
            scratch_dma: Vec::new(),
            scratch_qpns: Vec::new(),
            scratch_trans: Vec::new(),
            scratch_reads: Vec::new(),
        }
    }

    /// Registers a QP's rings and attributes (what creating the QP writes into its QPC).
    #[allow(clippy::too_many_arguments)]
    pub fn add_qp(
        &mut self,
        qpn: u32,
        sq_base: u64,
        sq_depth: u32,
        rq_base: u64,
        rq_depth: u32,
        core: u16,
        profile: &crate::workload::QpProfile,
    ) {
        let i = qpn as usize;
        if i >= self.qps.len() {
            self.qps.resize(i + 1, QpHw::default());
        }
        self.qps[i] = QpHw {
            sq_base,
            rq_base,
            sq_mask: sq_depth.next_power_of_two() - 1,
            rq_mask: rq_depth.next_power_of_two() - 1,
            core,
            valid: true,
            pmtu: profile.pmtu,
            tenant: profile.tenant,
            iso_tag: isolation::tenant::tag(false, profile.tenant, qpn),
            ..QpHw::default()
        };
        self.iso.reporting |= profile.tenant != 0;
        let c = usize::from(core);
        if c >= self.core_qpn.len() {
            self.core_qpn.resize(c + 1, u32::MAX);
        }
        if self.core_qpn[c] == u32::MAX {
            self.core_qpn[c] = qpn;
        }
    }

    /// Sets the class of QP `qpn` (LS when `ls`) in its tagged QPN.
    pub fn set_class(&mut self, qpn: u32, ls: bool) {
        if let Some(q) = self.qps.get_mut(qpn as usize) {
            q.iso_tag = isolation::tenant::tag(ls, q.tenant, qpn);
        }
    }

    /// Payload is streamed per packet (the `round_robin` arbiter), not read whole.
    pub fn streaming(&self) -> bool {
        self.p.nic.dma_read_arbiter == crate::config::DmaReadArbiter::RoundRobin
    }

    /// One QPN per core whose CQs may hold completions.
    pub fn cq_core_qpns(&self) -> Vec<u32> {
        self.core_qpn
            .iter()
            .copied()
            .filter(|&q| q != u32::MAX)
            .collect()
    }
}

impl crate::stats::Report for Nic {
    /// Every unit's counters, each under its own name.
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        let at = |unit: &str| format!("{prefix}.{unit}");
        self.pcie.report(&at("pcie"), reg);
        self.ddr.report(&at("ddr"), reg);
        self.dma.report(&at("dma"), reg);
        reg.record(&at("qpc"), &self.qpc.stats());
        self.trans.report(&at("translation"), reg);
        self.doorbell.report(&at("doorbell"), reg);
        self.sched.report(&at("sched"), reg);
        self.fetch.report(&at("fetch"), reg);
        self.tx.report(&at("tx"), reg);
        self.iso.report(&self.tx.order, &at("iso"), reg);
        self.rate.report(&at("rate_limit"), reg);
        self.pf.report(&at("prefetch"), reg);
        self.cc.report(&at("cc"), reg);
        self.rx.report(&at("rx"), reg);
        reg.record(&at("rx_buffer"), &self.rx_buffer.stats());
        self.cq.report(&at("cq"), reg);
    }
}
