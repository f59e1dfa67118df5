//! Non-blocking QPC management module (csRNA §4.3, Fig. 4b; Algorithms 1 and 2).
//!
//! A QPC miss no longer stops the manager: the missing request is parked in the pending FIFO
//! (PF) with its DMA read posted, and later requests of *other* QPs are answered from the
//! cache meanwhile (challenge C1). Requests of the *same* QP keep their order (C2, IB
//! ordering within a QP): the pending record table (PRT) says whether a QP has requests
//! pending, and a new request of such a QP queues behind them.
//!
//! Two units share the PF and PRT:
//! * **Request handling unit** (Algorithm 1, §4.3.3), fed by the channel arbiter:
//!   PRT hit → push a Type 2 element, `pnd_cnt += 1`; else cache hit → answer; else post a
//!   DMA read, push a Type 1 element, create a PRT entry with `pnd_cnt = 1`.
//! * **Pending handling unit** (Algorithm 2, §4.3.4): a waiting DMA response takes priority —
//!   the Type 1 element it belongs to is answered with the context the read brought back, the
//!   QP's `pnd_cnt` drops and `dma_rtn` is set. With no DMA response waiting and some QP
//!   with `dma_rtn` set (the paper's `start_check`), it traverses the PF one element per
//!   cycle (❹): a Type 1 element is written back (❸); a Type 2 element is served if it is
//!   its QP's oldest pending request and the QPC is cached, converted to Type 1 (DMA read
//!   posted, ❶) if it is the oldest but the QPC was evicted since its read returned, and
//!   written back (❸) otherwise.
//!
//! The eligibility of a Type 2 element ("is the request preceded by a pending request of the
//! same QP?", §4.3.4) is decided from PRT state without touching the cache: `dma_rtn` must be
//! set (no Type 1 of the QP pending, so no older request is waiting for a DMA) and the QP must
//! not be `blocked` in this pass (no older element of the QP was written back during the
//! current traversal pass; see [`pending_record_table`](super::pending_record_table)). Only
//! then is the cache looked up — Algorithm 2 as printed looks the cache up first, which
//! would answer a younger request while an older one of the same QP still waits whenever the
//! context happens to be cached (for example brought in by a prefetch).
//!
//! Per cycle ([`step`](QpcManager::step)) one unit does one unit of work; when both have work
//! they alternate, so neither starves the other.
//!
//! The manager is sans-IO: it owns no cache and no DMA engine. It asks a [`QpcStore`] for
//! lookups, asks the model for DMA reads ([`StepOutput::PostDma`]) and is told when they
//! complete ([`dma_returned`](QpcManager::dma_returned)). Nothing in it keeps a copy of a
//! context, so a QP evicted while it still has pending requests simply misses again: its
//! requests are answered only from a lookup that hits or from the read that brought the
//! context in.

use std::collections::VecDeque;

use super::arbiter::ChannelArbiter;
use super::pending_fifo::{PendingElement, PendingFifo, PfFull};
use super::pending_record_table::{PendingRecordTable, PrtError};
use super::types::{
    DmaReturnError, ManagerError, ManagerStats, QpcManager, QpcManagerConfig, QpcRequest,
    QpcResponse, QpcStore, ServedBy, StepOutput, SubmitError,
};

/// The two units of the module (Fig. 4b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Request handling unit (Algorithm 1).
    Request,
    /// Pending handling unit (Algorithm 2).
    Pending,
}

/// The non-blocking QPC manager of csRNA.
#[derive(Debug, Clone)]
pub struct NonBlockingQpcManager {
    cfg: QpcManagerConfig,
    arbiter: ChannelArbiter,
    pf: PendingFifo,
    prt: PendingRecordTable,
    /// PRT entries with `dma_rtn` set: while non-zero the traversal has something it may
    /// answer or convert (`start_check`).
    rtn_cnt: usize,
    /// QPNs of DMA reads posted and not yet reported complete, in issue order.
    dma_issued: VecDeque<u32>,
    /// QPNs of DMA reads reported complete and not yet consumed by the pending unit.
    dma_responses: VecDeque<u32>,
    /// Whose turn it is when both units have work.
    pending_turn: bool,
    stats: ManagerStats,
}

fn inv(msg: String) -> ManagerError {
    ManagerError::Invariant(msg)
}

fn prt_err(e: PrtError) -> ManagerError {
    inv(format!("PRT: {e:?}"))
}

fn pf_err(e: PfFull) -> ManagerError {
    inv(format!("PF full pushing QP {}", e.0.qpn))
}

impl NonBlockingQpcManager {
    /// A manager with out-of-order capacity `cfg.ooo_cap()`: PF of `2 × 3 × ooo_cap`
    /// elements, PRT of `3 × ooo_cap` entries.
    pub fn new(cfg: QpcManagerConfig) -> Self {
        NonBlockingQpcManager {
            cfg,
            arbiter: ChannelArbiter::new(cfg),
            pf: PendingFifo::new(cfg.ooo_cap()),
            prt: PendingRecordTable::new(cfg.ooo_cap()),
            rtn_cnt: 0,
            dma_issued: VecDeque::new(),
            dma_responses: VecDeque::new(),
            pending_turn: false,
            stats: ManagerStats::default(),
        }
    }

    /// Configuration.
    pub fn config(&self) -> QpcManagerConfig {
        self.cfg
    }

    /// The pending FIFO (read-only).
    pub fn pending_fifo(&self) -> &PendingFifo {
        &self.pf
    }

    /// The pending record table (read-only).
    pub fn pending_record_table(&self) -> &PendingRecordTable {
        &self.prt
    }

    /// The arbiter and request FIFOs (read-only).
    pub fn arbiter(&self) -> &ChannelArbiter {
        &self.arbiter
    }

    /// DMA responses reported but not yet consumed by the pending handling unit.
    pub fn dma_responses_waiting(&self) -> usize {
        self.dma_responses.len()
    }

    fn pending_ready(&self) -> bool {
        !self.dma_responses.is_empty() || (self.rtn_cnt > 0 && !self.pf.is_empty())
    }

    fn respond(
        &mut self,
        e: &PendingElement,
        served_by: ServedBy,
    ) -> Result<StepOutput, ManagerError> {
        if !self.arbiter.complete(e.channel, e.index) {
            return Err(inv(format!(
                "answering {:?} index {} which is not outstanding",
                e.channel, e.index
            )));
        }
        self.stats.responses += 1;
        Ok(StepOutput::Response(QpcResponse {
            qpn: e.qpn,
            channel: e.channel,
            index: e.index,
            write: e.write,
            seq: e.seq,
            served_by,
        }))
    }

    fn post_dma(&mut self, qpn: u32) -> StepOutput {
        self.dma_issued.push_back(qpn);
        self.stats.dma_posted += 1;
        StepOutput::PostDma { qpn }
    }

    /// Algorithm 1: one request from the arbiter.
    fn request_unit(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError> {
        let Some((req, seq)) = self.arbiter.arbitrate() else {
            return Ok(StepOutput::Idle);
        };
        let elem = |dma_posted: bool, r: &QpcRequest| PendingElement {
            qpn: r.qpn,
            channel: r.channel,
            index: r.index,
            dma_posted,
            write: r.write,
            seq,
        };
        if self.prt.find(req.qpn).is_some() {
            // Older requests of this QP are pending: keep order (Type 2).
            self.pf.push_request(elem(false, &req)).map_err(pf_err)?;
            self.prt.increment(req.qpn).map_err(prt_err)?;
            self.stats.request_ordered += 1;
            Ok(StepOutput::Internal)
        } else if store.lookup(req.qpn) {
            self.stats.request_hits += 1;
            self.respond(&elem(false, &req), ServedBy::RequestHit)
        } else {
            // Miss: post the read, park the request (Type 1), record the QP.
            let alloc = self
                .prt
                .allocate(req.qpn, req.channel, req.index)
                .map_err(prt_err)?;
            if let Err(e) = self.pf.push_request(elem(true, &req)) {
                // Leave the PRT as it was before reporting.
                let _ = self.prt.decrement(req.qpn);
                return Err(pf_err(e));
            }
            if alloc.fallback {
                self.stats.prt_slot_fallbacks += 1;
            }
            self.stats.request_misses += 1;
            Ok(self.post_dma(req.qpn))
        }
    }

    /// Algorithm 2: a DMA response if one is waiting, else one traversal step.
    fn pending_unit(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError> {
        if let Some(&qpn) = self.dma_responses.front() {
            return self.consume_dma_response(qpn);
        }
        if self.rtn_cnt == 0 || self.pf.is_empty() {
            return Ok(StepOutput::Idle);
        }
        self.check_one(store)
    }

    fn consume_dma_response(&mut self, qpn: u32) -> Result<StepOutput, ManagerError> {
        match self.pf.peek_return() {
            Some(e) if e.qpn == qpn => {}
            Some(e) => {
                return Err(inv(format!(
                    "DMA response for QP {qpn} but the oldest Type 1 element is QP {}",
                    e.qpn
                )))
            }
            None => {
                return Err(inv(format!(
                    "DMA response for QP {qpn} but no Type 1 element is pending"
                )))
            }
        }
        let elem = self
            .pf
            .pop_return()
            .ok_or_else(|| inv("Type 1 element vanished".into()))?;
        self.dma_responses.pop_front();
        let after = self.prt.decrement(qpn).map_err(prt_err)?;
        if after.dma_rtn {
            return Err(inv(format!(
                "QP {qpn} had dma_rtn set with a read outstanding"
            )));
        }
        if after.pnd_cnt > 0 {
            self.prt.set_dma_rtn(qpn, true).map_err(prt_err)?;
            self.rtn_cnt += 1;
        }
        self.stats.dma_returned += 1;
        self.respond(&elem, ServedBy::DmaReturn)
    }

    fn check_one(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError> {
        let pass_before = self.pf.pass();
        let Some(mut elem) = self.pf.pop_check() else {
            return Ok(StepOutput::Idle);
        };
        let pass = self.pf.pass();
        if pass != pass_before {
            self.stats.swaps += 1;
        }
        self.stats.checks += 1;
        if elem.dma_posted {
            // Type 1: still waiting for its read.
            self.pf.push_checked(elem).map_err(pf_err)?;
            self.stats.check_writebacks += 1;
            return Ok(StepOutput::Internal);
        }
        let entry = *self
            .prt
            .get(elem.qpn)
            .ok_or_else(|| inv(format!("pending QP {} has no PRT entry", elem.qpn)))?;
        if !entry.dma_rtn || entry.is_blocked(pass) {
            // An older request of this QP is still pending.
            self.prt.block(elem.qpn, pass).map_err(prt_err)?;
            self.pf.push_checked(elem).map_err(pf_err)?;
            self.stats.check_writebacks += 1;
            return Ok(StepOutput::Internal);
        }
        if store.lookup(elem.qpn) {
            let after = self.prt.decrement(elem.qpn).map_err(prt_err)?;
            if after.pnd_cnt == 0 {
                self.dec_rtn_cnt()?;
            }
            self.stats.check_hits += 1;
            return self.respond(&elem, ServedBy::PendingHit);
        }
        // The QPC came back but has been evicted since: Type 2 → Type 1.
        self.prt.set_dma_rtn(elem.qpn, false).map_err(prt_err)?;
        self.dec_rtn_cnt()?;
        elem.dma_posted = true;
        self.pf.push_request(elem).map_err(pf_err)?;
        self.stats.conversions += 1;
        Ok(self.post_dma(elem.qpn))
    }

    fn dec_rtn_cnt(&mut self) -> Result<(), ManagerError> {
        self.rtn_cnt = self
            .rtn_cnt
            .checked_sub(1)
            .ok_or_else(|| inv("rtn_cnt underflow".into()))?;
        Ok(())
    }

    /// Whether `unit` has work this cycle.
    pub fn unit_has_work(&self, unit: Unit) -> bool {
        match unit {
            Unit::Request => self.arbiter.has_queued(),
            Unit::Pending => self.pending_ready(),
        }
    }

    /// One unit of work of `unit` only. [`step`](QpcManager::step) runs one of the two units
    /// per cycle (they share the cache lookup port); a model that gives each unit its own
    /// port may call this for both units in the same cycle instead.
    pub fn step_unit(
        &mut self,
        unit: Unit,
        store: &mut dyn QpcStore,
    ) -> Result<StepOutput, ManagerError> {
        if !self.unit_has_work(unit) {
            self.stats.idle_steps += 1;
            return Ok(StepOutput::Idle);
        }
        let out = match unit {
            Unit::Request => self.request_unit(store),
            Unit::Pending => self.pending_unit(store),
        };
        self.note_occupancy();
        out
    }

    fn note_occupancy(&mut self) {
        self.stats.max_pf_occupancy = self.stats.max_pf_occupancy.max(self.pf.len() as u64);
        self.stats.max_prt_occupancy = self
            .stats
            .max_prt_occupancy
            .max(self.prt.occupancy() as u64);
    }

    /// Checks every structural invariant; `Err` names the first broken one. For tests and
    /// debugging (cost linear in the PF size).
    pub fn check_invariants(&self) -> Result<(), String> {
        if self.pf.online_len() > self.pf.fifo_capacity()
            || self.pf.offline_len() > self.pf.fifo_capacity()
        {
            return Err("a pending FIFO exceeds its capacity".into());
        }
        if self.prt.occupancy() > self.prt.size() {
            return Err("PRT exceeds its size".into());
        }
        if self.arbiter.outstanding() != self.arbiter.queued_total() + self.pf.len() {
            return Err(format!(
                "outstanding {} != queued {} + pending {}",
                self.arbiter.outstanding(),
                self.arbiter.queued_total(),
                self.pf.len()
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for e in self.pf.iter() {
            if !self.arbiter.is_outstanding(e.channel, e.index) {
                return Err(format!(
                    "pending {:?}/{} not outstanding",
                    e.channel, e.index
                ));
            }
            if !seen.insert((e.channel, e.index)) {
                return Err(format!("pending {:?}/{} twice", e.channel, e.index));
            }
            if self.prt.get(e.qpn).is_none() {
                return Err(format!("pending QP {} without PRT entry", e.qpn));
            }
        }
        let mut rtn = 0;
        for (_, entry) in self.prt.iter() {
            let n = self.pf.iter().filter(|e| e.qpn == entry.qpn).count();
            let t1 = self
                .pf
                .iter()
                .filter(|e| e.qpn == entry.qpn && e.dma_posted)
                .count();
            if usize::from(entry.pnd_cnt) != n || n == 0 {
                return Err(format!(
                    "QP {} pnd_cnt {} but {n} pending",
                    entry.qpn, entry.pnd_cnt
                ));
            }
            if t1 != usize::from(!entry.dma_rtn) {
                return Err(format!(
                    "QP {} dma_rtn {} with {t1} Type 1 elements",
                    entry.qpn, entry.dma_rtn
                ));
            }
            rtn += usize::from(entry.dma_rtn);
        }
        if rtn != self.rtn_cnt {
            return Err(format!(
                "rtn_cnt {} but {rtn} entries with dma_rtn",
                self.rtn_cnt
            ));
        }
        let type1: Vec<u32> = self
            .pf
            .iter()
            .filter(|e| e.dma_posted)
            .map(|e| e.qpn)
            .collect();
        let reads: Vec<u32> = self
            .dma_responses
            .iter()
            .chain(self.dma_issued.iter())
            .copied()
            .collect();
        if type1 != reads {
            return Err(format!("Type 1 order {type1:?} != DMA order {reads:?}"));
        }
        // Liveness: outstanding work is either steppable or waiting for a DMA read.
        if self.arbiter.outstanding() > 0 && !self.has_work() && self.dma_issued.is_empty() {
            return Err("requests outstanding but nothing can make progress".into());
        }
        Ok(())
    }
}

impl QpcManager for NonBlockingQpcManager {
    fn submit(&mut self, req: QpcRequest) -> Result<(), SubmitError> {
        match self.arbiter.submit(req) {
            Ok(()) => {
                self.stats.submitted += 1;
                Ok(())
            }
            Err(e) => {
                if e == SubmitError::Backpressure {
                    self.stats.backpressured += 1;
                }
                Err(e)
            }
        }
    }

    fn step(&mut self, store: &mut dyn QpcStore) -> Result<StepOutput, ManagerError> {
        let req_ready = self.arbiter.has_queued();
        let pend_ready = self.pending_ready();
        let run_pending = match (req_ready, pend_ready) {
            (false, false) => {
                self.stats.idle_steps += 1;
                return Ok(StepOutput::Idle);
            }
            (true, false) => false,
            (false, true) => true,
            (true, true) => {
                let p = self.pending_turn;
                self.pending_turn = !p;
                p
            }
        };
        let out = if run_pending {
            self.pending_unit(store)
        } else {
            self.request_unit(store)
        };
        self.note_occupancy();
        out
    }

    fn dma_returned(&mut self, qpn: u32) -> Result<(), DmaReturnError> {
        match self.dma_issued.front() {
            None => Err(DmaReturnError::NoneOutstanding { qpn }),
            Some(&expected) if expected != qpn => Err(DmaReturnError::OutOfOrder { qpn, expected }),
            Some(_) => {
                self.dma_issued.pop_front();
                self.dma_responses.push_back(qpn);
                Ok(())
            }
        }
    }

    fn has_work(&self) -> bool {
        self.arbiter.has_queued() || self.pending_ready()
    }

    fn in_flight(&self) -> usize {
        self.arbiter.outstanding()
    }

    fn dma_outstanding(&self) -> usize {
        self.dma_issued.len()
    }

    fn stats(&self) -> &ManagerStats {
        &self.stats
    }
}
