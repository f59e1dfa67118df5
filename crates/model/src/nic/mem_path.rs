//! The memory path, one stage of the NIC: the PCIe link, the on-board DDR, the DMA engine,
//! the QPC manager (with its cache) and the MPT/MTT translation unit, with the reads each
//! of them makes of its backing store.
//!
//! The stage owns its state and schedules only its own events (`DmaArrive`, `DmaDone`).
//! What a finished lookup, translation or read leads to is not its business: it hands back
//! the continuation the caller gave it (`QpcCont`, `TransCont`, `DmaToken`) and the `Nic`
//! carries it to the stage it names (`route_mem.rs`).

use rnic_sim::TimePs;

use super::cx::NicCx;
use super::ddr::Ddr;
use super::dma::Dma;
use super::dma_arbiter::ReadSource;
use super::mech::prefetch::hook::AnyPrefetch;
use super::pcie::Pcie;
use super::ports::{DmaToken, TransCont};
use super::qpc_manager::{any::AnyQpcManager, QpcAction, QpcOutputs};
use super::translation::{TransFetch, TransLane, TransRead, Translation, TranslationParams};
use crate::event::NicEv;
use crate::params::{ModelParams, Placement};

/// The NIC's memories and the units that read them.
pub struct MemPath {
    /// PCIe link to the host.
    pub pcie: Pcie,
    /// On-board DDR.
    pub ddr: Ddr,
    /// DMA engine.
    pub dma: Dma<DmaToken>,
    /// QPC manager (owns the QPC cache).
    pub qpc: AnyQpcManager,
    /// Reused output buffers of the QPC manager.
    pub qpc_out: QpcOutputs,
    /// MPT/MTT unit.
    pub trans: Translation<TransCont>,
    /// Reused output buffer of the translation unit: finished jobs.
    pub trans_done: Vec<(TransCont, TimePs)>,
    /// Reused output buffer of the translation unit's fetches.
    pub trans_fetch: Vec<TransFetch>,
    /// Where QPC/MPT/MTT entries live (`nic.qpc_placement`).
    placement: Placement,
    /// Bytes of one QPC entry (a miss reads one, an eviction writes one back).
    qpc_entry_bytes: u64,
    scratch_dma: Vec<(u32, TimePs)>,
    scratch_reads: Vec<TransRead>,
}

impl MemPath {
    /// The memory path of a NIC with the parameters `p` and the QPC manager `qpc` (csRNA's
    /// seam, chosen in `Nic::new`); `observe` makes the translation unit record its hits
    /// and evictions (for prefetching).
    pub fn new(p: &ModelParams, qpc: AnyQpcManager, observe: bool) -> Self {
        let n = &p.nic;
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
        trans.observe = observe;
        MemPath {
            pcie: Pcie::new(p.pcie.clone()),
            ddr: Ddr::new(&p.ddr),
            dma: Dma::new(p.pcie.max_read_tags, n.dma_read_arbiter),
            qpc,
            qpc_out: QpcOutputs::default(),
            trans,
            trans_done: Vec::new(),
            trans_fetch: Vec::new(),
            placement: n.placement,
            qpc_entry_bytes: n.qpc_entry_bytes,
            scratch_dma: Vec::new(),
            scratch_reads: Vec::new(),
        }
    }

    /// Reads `len` bytes of host memory (over PCIe) for `source` from `at`; `token` says
    /// what follows.
    pub fn host_read(
        &mut self,
        at: TimePs,
        len: u64,
        token: DmaToken,
        source: ReadSource,
        cx: &mut NicCx<'_>,
    ) {
        if let Some((slot, first)) = self.dma.read(at, len, token, source, &mut self.pcie) {
            cx.at(first, NicEv::DmaArrive { slot });
        }
    }

    /// Reads a QPC/MPT/MTT entry from its backing store (host memory or on-board DDR).
    pub fn ctx_read(&mut self, at: TimePs, len: u64, token: DmaToken, cx: &mut NicCx<'_>) {
        match self.placement {
            Placement::Host => self.host_read(at, len, token, ReadSource::Context, cx),
            Placement::Ddr => {
                let (slot, done) = self.dma.read_ddr(at, len, token, &mut self.ddr);
                cx.at(done, NicEv::DmaDone { slot });
            }
        }
    }

    /// The first bytes of read `slot` arrived: its completion is scheduled.
    pub fn on_dma_arrive(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let done = self.dma.arrive(slot, now, &mut self.pcie);
        cx.at(done, NicEv::DmaDone { slot });
    }

    /// Read `slot` completed: the reads waiting for a tag start, and its token and length
    /// come back for the caller to carry on (none for a slot already completed).
    pub fn on_dma_done(
        &mut self,
        now: TimePs,
        slot: u32,
        cx: &mut NicCx<'_>,
    ) -> Option<(DmaToken, u64)> {
        let done = self.dma.complete(slot, now)?;
        let mut started = std::mem::take(&mut self.scratch_dma);
        self.dma.issue_waiting(now, &mut self.pcie, &mut started);
        for &(s, first) in &started {
            cx.at(first, NicEv::DmaArrive { slot: s });
        }
        started.clear();
        self.scratch_dma = started;
        Some(done)
    }

    /// Performs the QPC manager's memory actions (reads of missed contexts, write-backs);
    /// prefetching may answer a miss with a read already in flight.
    pub fn qpc_actions(&mut self, pf: &mut AnyPrefetch, cx: &mut NicCx<'_>) {
        let entry = self.qpc_entry_bytes;
        let mut actions = std::mem::take(&mut self.qpc_out.actions);
        for a in actions.drain(..) {
            match a {
                QpcAction::Fetch { qpn, at } => {
                    // A prefetch of this context in flight answers the miss (late).
                    if pf.qpc_demand_miss(qpn) {
                        self.ctx_read(at, entry, DmaToken::QpcFill(qpn), cx);
                    }
                }
                QpcAction::WriteBack { at, .. } => match self.placement {
                    Placement::Host => {
                        self.pcie.posted_write(at, entry);
                    }
                    Placement::Ddr => {
                        self.ddr.write(at, entry);
                    }
                },
            }
        }
        self.qpc_out.actions = actions;
    }

    /// Reads the entries the translation lanes missed, but for the lines prefetching is
    /// already reading.
    pub fn trans_reads(&mut self, pf: &mut AnyPrefetch, cx: &mut NicCx<'_>) {
        pf.trans_observed(&mut self.trans.observed);
        // Reads of missed entries are rare: most calls skip their buffer.
        if self.trans_fetch.is_empty() {
            return;
        }
        let mut fetch = std::mem::take(&mut self.trans_fetch);
        let mut reads = std::mem::take(&mut self.scratch_reads);
        for f in fetch.drain(..) {
            pf.trans_demand_reads(f, &mut reads);
            for read in reads.drain(..) {
                self.trans_read(f.at, f.lane, read, cx);
            }
        }
        self.scratch_reads = reads;
        self.trans_fetch = fetch;
    }

    /// Reads `read` for `lane` from its backing store from `at`.
    fn trans_read(&mut self, at: TimePs, lane: TransLane, read: TransRead, cx: &mut NicCx<'_>) {
        let bytes = self.trans.read_bytes(read);
        self.ctx_read(at, bytes, DmaToken::TransFill { lane, read }, cx);
    }
}

impl crate::stats::Report for MemPath {
    /// Each unit's counters under its own name (`pcie`, `ddr`, `dma`, `qpc`, `translation`).
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        let at = |unit: &str| format!("{prefix}.{unit}");
        self.pcie.report(&at("pcie"), reg);
        self.ddr.report(&at("ddr"), reg);
        self.dma.report(&at("dma"), reg);
        reg.record(&at("qpc"), &self.qpc.stats());
        self.trans.report(&at("translation"), reg);
    }
}
