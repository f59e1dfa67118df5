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
//! Seed 000 (csRNA) switches, each one config field: `nic.qpc_manager` selects the FCFS
//! baseline or the non-blocking manager with its `nic.ooo_cap`-index requesters
//! ([`qpc_manager::nonblocking`] over [`csrna`]); `nic.latency_hiding` lets the scheduler read
//! the SQ address from an on-chip table and issue the WQE read without waiting for the QPC
//! (the descriptor request becomes a prefetch, [`scheduler`]); `nic.qpc_placement` puts the
//! QPC/MPT/MTT backing store in host memory (PCIe) or on-board DDR ([`ddr`]).
//!
//! Every unit has an initiation interval in NIC cycles, reports its counters, and every
//! on-chip structure reports its bytes ([`onchip`]).

pub mod cq;
pub mod csrna;
pub mod ddr;
pub mod dma;
pub mod doorbell;
pub mod latency_hiding;
pub mod lru;
pub mod onchip;
pub mod pcie;
pub mod qpc_cache;
pub mod qpc_manager;
pub mod rx_pipeline;
pub mod scheduler;
pub mod translation;
pub mod tx_pipeline;
pub mod unit;
pub mod wqe_fetch;

use crate::config::QpcManager as QpcManagerKind;
use crate::params::ModelParams;
use crate::slab::Slab;

use cq::CqUnit;
use ddr::Ddr;
use dma::Dma;
use doorbell::DoorbellUnit;
use pcie::Pcie;
use qpc_cache::QpcCache;
use qpc_manager::{fcfs::Fcfs, nonblocking::NonBlocking, QpcManager, QpcOutputs};
use rx_pipeline::RxPipeline;
use scheduler::Scheduler;
use translation::{TransFetch, Translation};
use tx_pipeline::TxEngine;
use unit::Unit;
use wqe_fetch::WqeFetch;

/// What to do when a DMA read completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaToken {
    /// A QPC entry for the QPC manager.
    QpcFill(u32),
    /// An MPT or MTT entry the translation unit's lane waits for.
    TransFill(translation::TransLane),
    /// The WQEs of a scheduler visit.
    Wqe(u32),
    /// The payload of a fetched WQE.
    Payload(u32),
    /// Receive WQEs (slot in `rq_reads`).
    RqWqe(u32),
    /// READ response / atomic data of a QP is in the NIC: it may transmit.
    ReadResp(u32),
}

/// Who waits for a translation job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransCont {
    /// A fetched WQE (job slot).
    TxJob(u32),
    /// A received frame (frame slot).
    Rx(u32),
}

/// Per-QP state the NIC keeps (and would otherwise read from the QPC): ring addresses and
/// indices. 48 bytes, so 100 000 QPs take 4.8 MB.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpHw {
    /// SQ ring base address.
    pub sq_base: u64,
    /// RQ ring base address.
    pub rq_base: u64,
    /// SQ depth − 1 (power of two).
    pub sq_mask: u32,
    /// RQ depth − 1.
    pub rq_mask: u32,
    /// SQ producer index from the last doorbell.
    pub sq_pi: u32,
    /// SQ index of the next WQE to fetch.
    pub sq_fetched: u32,
    /// RQ producer index.
    pub rq_pi: u32,
    /// RQ index of the next receive WQE to fetch.
    pub rq_fetched: u32,
    /// WQEs fetched and not yet completed.
    pub outstanding: u32,
    /// Application core (selects the CQs).
    pub core: u16,
    /// The QP is in the scheduler's ring.
    pub active: bool,
    /// The QP is in the TX engine's queue.
    pub in_tx: bool,
    /// The QP exists.
    pub valid: bool,
    /// First PSN of the operation the last placed payload belonged to (payload oracle).
    pub rx_msg_psn: u32,
    /// WQEs the next scheduler visit reads: how many messages of the size last seen fit
    /// in `nic.chunk_bytes` (kept with the QP's scheduling-queue entry; 0 = not known yet,
    /// read `wqes_per_fetch`). See [`scheduler`].
    pub chunk_wqes: u8,
    /// This QP's bytes in the TX payload buffer (payload read started, not yet sent).
    pub tx_buffered_bytes: u32,
}

/// One node's NIC.
pub struct Nic {
    /// PCIe link to the host.
    pub pcie: Pcie,
    /// On-board DDR.
    pub ddr: Ddr,
    /// DMA engine.
    pub dma: Dma<DmaToken>,
    /// QPC manager (owns the QPC cache).
    pub qpc: Box<dyn QpcManager>,
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
    pub sched: Scheduler,
    /// The scheduler's unit (II per visit).
    pub sched_unit: Unit,
    /// WQE fetch and decode.
    pub fetch: WqeFetch,
    /// TX engine.
    pub tx: TxEngine,
    /// RX pipeline.
    pub rx: RxPipeline,
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
}

impl std::fmt::Debug for Nic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nic")
            .field("qps", &self.qps.len())
            .finish_non_exhaustive()
    }
}

impl Nic {
    /// A NIC with the parameters `p`.
    pub fn new(p: &ModelParams) -> Self {
        let n = &p.nic;
        let cache = QpcCache::new(n.qpc_cache_entries, n.qpc_entry_bytes);
        let qpc: Box<dyn QpcManager> = match n.qpc_manager {
            QpcManagerKind::Fcfs => Box::new(Fcfs::new(cache, n.qpc_lookup_ps, n.qpc_fifo_depth)),
            QpcManagerKind::Nonblocking => Box::new(NonBlocking::new(
                cache,
                n.ooo_cap,
                n.cycle_ps,
                n.qpc_lookup_ps,
            )),
        };
        Nic {
            pcie: Pcie::new(p.pcie.clone()),
            ddr: Ddr::new(&p.ddr),
            dma: Dma::new(p.pcie.max_read_tags),
            qpc,
            qpc_out: QpcOutputs::default(),
            trans: Translation::new(
                n.mpt_cache_entries,
                n.mtt_cache_entries,
                n.page_bytes,
                n.mpt_lookup_ps,
                n.mtt_lookup_ps,
                n.mpt_entry_bytes,
                n.mtt_entry_bytes,
            ),
            trans_done: Vec::new(),
            trans_fetch: Vec::new(),
            doorbell: DoorbellUnit::new(n.doorbell_ps),
            sched: Scheduler::default(),
            sched_unit: Unit::new(n.sched_ps),
            fetch: WqeFetch::new(n.wqe_decode_ps),
            tx: TxEngine::default(),
            rx: RxPipeline::new(n.rx_pkt_ps),
            cq: CqUnit::new(n.cqe_ps),
            qps: Vec::new(),
            rq_reads: Slab::new(),
            watch_writes: false,
            core_qpn: Vec::new(),
        }
    }

    /// Registers a QP's rings (what creating the QP writes into its QPC).
    pub fn add_qp(
        &mut self,
        qpn: u32,
        sq_base: u64,
        sq_depth: u32,
        rq_base: u64,
        rq_depth: u32,
        core: u16,
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
            ..QpHw::default()
        };
        let c = usize::from(core);
        if c >= self.core_qpn.len() {
            self.core_qpn.resize(c + 1, u32::MAX);
        }
        if self.core_qpn[c] == u32::MAX {
            self.core_qpn[c] = qpn;
        }
    }

    /// One QPN per core whose CQs may hold completions.
    pub fn cq_core_qpns(&self) -> Vec<u32> {
        self.core_qpn
            .iter()
            .copied()
            .filter(|&q| q != u32::MAX)
            .collect()
    }

    /// Puts `qpn` in the TX engine's queue if it is not there.
    pub fn tx_enlist(&mut self, qpn: u32) {
        if let Some(qp) = self.qps.get_mut(qpn as usize) {
            if !qp.in_tx {
                qp.in_tx = true;
                self.tx.queue.push_back(qpn);
            }
        }
    }
}
