//! The NIC's routing of resource prefetching ([`super`]): the two triggers, the
//! chain QPC → WQEs → MPT → MTT, keyed fills, and the scheduler visit that finds its WQEs
//! already on chip.

use rnic_sim::TimePs;

use super::ledger::Res;
use super::{PfRead, Span};
use crate::event::NicEv;
use crate::host::driver::SqWqe;
use crate::nic::cx::NicCx;
use crate::nic::dma_arbiter::ReadSource;
use crate::nic::ports::{DmaToken, Visit};
use crate::nic::qpc_manager::QpcAction;
use crate::nic::translation::{mtt_key, TransLane, TransRead, MTT_LINE_ENTRIES};
use crate::nic::Nic;

/// The ledger's waiter bit of a demand QPC request (the QPC manager).
pub(crate) const QPC_WAITER: u8 = 1;

/// The ledger's waiter bit of a translation lane.
pub(crate) fn lane_bit(lane: TransLane) -> u8 {
    match lane {
        TransLane::Tx => 1,
        TransLane::Rx => 2,
        TransLane::TxLs => 4,
    }
}

const LANES: [TransLane; 3] = [TransLane::Tx, TransLane::Rx, TransLane::TxLs];

impl Nic {
    /// Scheduler trigger: prefetches every QP that came within the window of the scheduling
    /// queue's head.
    pub(crate) fn prefetch_poll(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        while let Some(qpn) = self.sched.mirror.poll() {
            self.pf.triggers.0 += 1;
            self.prefetch_chain(qpn, now, true, cx);
        }
    }

    /// A host core stores `qpn` into the prefetch register: the MMIO write crosses PCIe.
    pub(crate) fn on_prefetch_mmio(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let at = self.pcie.mmio_write(now, self.p.pcie.doorbell_bytes);
        cx.at(at, NicEv::PrefetchReg { qpn });
    }

    /// Software trigger: with fewer QPs active than the window, the QP's QPC is fetched now
    /// (its WQE is still being built).
    pub(crate) fn on_prefetch_reg(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let p = self.pf.p;
        if !p.sw || self.qps.get(qpn as usize).is_none_or(|q| !q.valid) {
            return;
        }
        if self.sched.active() < p.window as usize {
            self.pf.triggers.1 += 1;
            self.prefetch_chain(qpn, now, false, cx);
        } else {
            self.pf.triggers.2 += 1;
        }
    }

    /// Starts the chain of `qpn` at `at`: its QPC and (with `wqes`) the WQEs of its next
    /// visit; MPT and MTT follow from the WQEs' contents.
    fn prefetch_chain(&mut self, qpn: u32, at: TimePs, wqes: bool, cx: &mut NicCx<'_>) {
        let cached = self.qpc.cache().contains(qpn);
        let qpc_read = self
            .pf
            .ledger
            .start_prefetch(Res::Qpc, u64::from(qpn), cached);
        let next = if wqes {
            self.next_visit_wqes(qpn)
        } else {
            None
        };
        // The SQ address is in the QPC, unless csRNA's SQ address table holds it on chip.
        let wqe_waits = qpc_read && !self.p.nic.latency_hiding;
        if qpc_read {
            let then = if wqe_waits { next } else { None };
            if let Some((first, n)) = then {
                self.pf.wqe_inflight.insert(qpn, (first, n, None));
                self.pf.wqe_stats.issued += u64::from(n);
                self.pf.wqe_reads += 1;
            }
            let slot = self.pf.reads.insert((PfRead::Qpc { qpn, wqes: then }, at));
            let bytes = self.p.nic.qpc_entry_bytes;
            self.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
        }
        if let Some((first, n)) = next.filter(|_| !wqe_waits) {
            self.pf.wqe_inflight.insert(qpn, (first, n, None));
            self.pf.wqe_stats.issued += u64::from(n);
            self.pf.wqe_reads += 1;
            if cached || self.p.nic.latency_hiding {
                self.prefetch_wqes(qpn, first, n, at, at, cx);
            } else {
                // The context is being read already (an earlier trigger's prefetch or a
                // demand miss): the WQE read needs its SQ address and waits for that fill.
                self.pf.wqes_after_qpc.insert(qpn, (first, n, at));
            }
        }
    }

    /// `qpn`'s context arrived at `now` (a prefetch or a demand read): the WQE prefetch that
    /// waits for its SQ address, if any, starts.
    pub(crate) fn prefetch_wqes_after_qpc(&mut self, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
        if let Some((first, n, since)) = self.pf.wqes_after_qpc.remove(&qpn) {
            self.prefetch_wqes(qpn, first, n, now, since, cx);
        }
    }

    /// The WQEs `qpn`'s next visit will take, as the scheduler will count them, unless they
    /// are cached or being read already.
    fn next_visit_wqes(&self, qpn: u32) -> Option<(u32, u32)> {
        let qp = self.qps.get(qpn as usize)?;
        let p = &self.p.nic;
        let avail = qp.sq_pi.wrapping_sub(qp.sq_fetched);
        let room = p.max_outstanding_wqes_per_qp.saturating_sub(qp.outstanding);
        let to_wrap = qp.sq_mask + 1 - (qp.sq_fetched & qp.sq_mask);
        let chunk = if qp.chunk_wqes == 0 {
            p.wqes_per_fetch
        } else {
            u32::from(qp.chunk_wqes)
        };
        let n = avail
            .min(room)
            .min(p.wqes_per_fetch)
            .min(to_wrap)
            .min(chunk);
        let first = qp.sq_fetched;
        if n == 0 || self.pf.wqe_inflight.contains_key(&qpn) || self.pf.wqes.contains(qpn, first) {
            return None;
        }
        Some((first, n))
    }

    /// Reads `n` WQEs of `qpn` from SQ index `first` at `at`, for a chain triggered at
    /// `since`.
    fn prefetch_wqes(
        &mut self,
        qpn: u32,
        first: u32,
        n: u32,
        at: TimePs,
        since: TimePs,
        cx: &mut NicCx<'_>,
    ) {
        let slot = self.pf.reads.insert((PfRead::Wqe { qpn, first, n }, since));
        let bytes = u64::from(n) * self.p.nic.wqe_bytes;
        self.host_read(at, bytes, DmaToken::Prefetch(slot), ReadSource::Wqe, cx);
    }

    /// Visit `visit` may read its WQEs from `at`: if the prefetcher has them (or is reading
    /// them), the visit takes them from there instead. Returns whether it did. A visit may
    /// take more WQEs than the prefetch brought (more were posted after its trigger): it
    /// takes the prefetched ones and reads only the rest, `nic.wqe_bytes` each, so no WQE
    /// crosses PCIe twice and every prefetched WQE is used (hit or late) or evicted
    /// (useless).
    pub(crate) fn prefetched_wqes(
        &mut self,
        visit: u32,
        v: Visit,
        at: TimePs,
        cx: &mut NicCx<'_>,
    ) -> bool {
        let cached = (0..v.n)
            .take_while(|&i| self.pf.wqes.contains(v.qpn, v.first.wrapping_add(i)))
            .count() as u32;
        if cached > 0 {
            let bytes = (0..cached)
                .filter_map(|i| self.pf.wqes.take(v.qpn, v.first.wrapping_add(i)))
                .collect();
            self.pf.visit_bytes.insert(visit, bytes);
            self.pf.wqe_stats.hits += u64::from(cached);
            if cached == v.n {
                cx.at(at, NicEv::WqesCached { visit });
            } else {
                self.read_rest_of_visit(visit, v.n - cached, at, cx);
            }
            return true;
        }
        if let Some(e) = self.pf.wqe_inflight.get_mut(&v.qpn) {
            if e.0 == v.first && e.2.is_none() {
                e.2 = Some((visit, at));
                let covered = v.n.min(e.1);
                self.pf.wqe_stats.late += u64::from(covered);
                if covered < v.n {
                    // Two reads bring this visit's WQEs: it is decoded after both.
                    self.pf.split_visits.insert(visit);
                    self.read_rest_of_visit(visit, v.n - covered, at, cx);
                }
                return true;
            }
        }
        false
    }

    /// Reads the last `n` WQEs of visit `visit` (those no prefetch brought) from `at`.
    fn read_rest_of_visit(&mut self, visit: u32, n: u32, at: TimePs, cx: &mut NicCx<'_>) {
        let bytes = u64::from(n) * self.p.nic.wqe_bytes;
        self.host_read(at, bytes, DmaToken::Wqe(visit), ReadSource::Wqe, cx);
    }

    /// A prefetch read arrived at `now`.
    pub(crate) fn on_prefetch_done(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let Some((read, since)) = self.pf.reads.remove(slot) else {
            return;
        };
        let took = now.saturating_sub(since);
        match read {
            PfRead::Qpc { .. } => self.pf.ledger.stats_mut(Res::Qpc).fill_ps += took,
            PfRead::Wqe { .. } => self.pf.wqe_stats.fill_ps += took,
            PfRead::Mpt { .. } => self.pf.ledger.stats_mut(Res::Mpt).fill_ps += took,
            PfRead::Mtt { .. } => self.pf.ledger.stats_mut(Res::Mtt).fill_ps += took,
        }
        match read {
            PfRead::Qpc { qpn, wqes } => {
                let waiters = self.pf.ledger.prefetch_filled(Res::Qpc, u64::from(qpn));
                if waiters & QPC_WAITER != 0 {
                    // A demand miss waits for exactly this context.
                    self.qpc.on_fill(now, qpn, &mut self.qpc_out);
                } else if let Some(victim) = self.qpc.cache_mut().fill(qpn) {
                    self.pf.ledger.evicted(Res::Qpc, u64::from(victim));
                    self.qpc_out.actions.push(QpcAction::WriteBack {
                        qpn: victim,
                        at: now,
                    });
                }
                self.qpc_route(now, cx);
                if let Some((first, n)) = wqes {
                    self.prefetch_wqes(qpn, first, n, now, since, cx);
                }
                self.prefetch_wqes_after_qpc(qpn, now, cx);
            }
            PfRead::Wqe { qpn, first, n } => self.on_prefetched_wqes(now, qpn, first, n, since, cx),
            PfRead::Mpt(span) => {
                self.trans_prefetch_filled(true, u64::from(span.key), now, cx);
                self.prefetch_mtt(span, now, since, cx);
            }
            PfRead::Mtt { key } => self.trans_prefetch_filled(false, key, now, cx),
        }
    }

    /// Prefetched WQEs arrived: into the WQE cache (or straight to the visit that waits for
    /// them), then the chain goes on to the MPT entry of each WQE's lkey.
    fn on_prefetched_wqes(
        &mut self,
        now: TimePs,
        qpn: u32,
        first: u32,
        n: u32,
        since: TimePs,
        cx: &mut NicCx<'_>,
    ) {
        let Some(qp) = self.qps.get(qpn as usize).copied() else {
            return;
        };
        let wqe_bytes = self.p.nic.wqe_bytes;
        let mut chain: Vec<Span> = Vec::new();
        let mut wqes = Vec::with_capacity(n as usize);
        for i in 0..n {
            let idx = first.wrapping_add(i);
            let mut bytes = vec![0u8; wqe_bytes as usize];
            let at = qp.sq_base + u64::from(idx & qp.sq_mask) * wqe_bytes;
            rnic_transport::Memory::read(&*cx.mem, at, &mut bytes);
            if let Some(w) = SqWqe::decode(&bytes[..64]).filter(|w| w.payload_to_read() > 0) {
                let m = Span {
                    key: w.sge.lkey,
                    va: w.sge.addr,
                    len: w.payload_to_read(),
                };
                if chain.last() != Some(&m) {
                    chain.push(m);
                }
            }
            wqes.push(bytes);
        }
        let waiting = self.pf.wqe_inflight.remove(&qpn).and_then(|e| e.2);
        match waiting {
            Some((visit, at)) => {
                // A late prefetch: the visit that waits takes its WQEs at once; any the
                // prefetch read beyond them wait in the cache for the next visit.
                let take = self.fetch.visits.get(visit).map_or(n, |v| v.n.min(n));
                for (i, bytes) in wqes.split_off(take as usize).into_iter().enumerate() {
                    let idx = first.wrapping_add(take + i as u32);
                    self.pf.wqe_stats.useless += self.pf.wqes.insert(qpn, idx, bytes);
                }
                self.pf.visit_bytes.insert(visit, wqes);
                if at > now {
                    cx.at(at, NicEv::WqesCached { visit });
                } else {
                    self.on_wqes_fetched(now, visit, cx);
                }
            }
            None => {
                for (i, bytes) in wqes.into_iter().enumerate() {
                    let evicted = self
                        .pf
                        .wqes
                        .insert(qpn, first.wrapping_add(i as u32), bytes);
                    self.pf.wqe_stats.useless += evicted;
                }
            }
        }
        for span in chain {
            self.prefetch_translation(span, now, since, cx);
        }
    }

    /// The MPT entry of the span's key, then the MTT lines of its bytes, from `at`, for a
    /// chain triggered at `since`.
    fn prefetch_translation(&mut self, span: Span, at: TimePs, since: TimePs, cx: &mut NicCx<'_>) {
        let k = u64::from(span.key);
        let cached = self.trans.contains(true, k);
        if self.pf.ledger.start_prefetch(Res::Mpt, k, cached) {
            let slot = self.pf.reads.insert((PfRead::Mpt(span), since));
            let bytes = self.trans.entry_bytes(true);
            self.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
        } else if cached {
            self.prefetch_mtt(span, at, since, cx);
        }
    }

    /// The MTT line(s) of the span's bytes.
    fn prefetch_mtt(&mut self, span: Span, at: TimePs, since: TimePs, cx: &mut NicCx<'_>) {
        let Span { key, va, len } = span;
        let first = self.trans.page_of(va);
        let last = self.trans.page_of(va + len.max(1) - 1);
        for page in first..=last {
            if page != first && page % MTT_LINE_ENTRIES != 0 {
                continue;
            }
            let k = mtt_key(key, page);
            let cached = self.trans.contains(false, k);
            if self.pf.ledger.start_prefetch(Res::Mtt, k, cached) {
                let slot = self.pf.reads.insert((PfRead::Mtt { key: k }, since));
                let bytes = self.trans.entry_bytes(false);
                self.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
            }
        }
    }

    /// A prefetched MPT entry or MTT line arrived: to the lanes that wait for it, else into
    /// its cache.
    fn trans_prefetch_filled(&mut self, mpt: bool, key: u64, now: TimePs, cx: &mut NicCx<'_>) {
        let res = if mpt { Res::Mpt } else { Res::Mtt };
        let waiters = self.pf.ledger.prefetch_filled(res, key);
        if waiters == 0 {
            self.trans.prefetch_insert(mpt, key);
            self.trans_observed();
            return;
        }
        for lane in LANES {
            if waiters & lane_bit(lane) != 0 {
                let read = if mpt {
                    TransRead { mpt, key, lines: 1 }
                } else {
                    TransRead::mtt_line(key)
                };
                self.trans
                    .on_fill(lane, read, now, &mut self.trans_done, &mut self.trans_fetch);
            }
        }
        self.trans_route(cx);
    }

    /// Hands the translation unit's observed hits and evictions to the ledger.
    pub(crate) fn trans_observed(&mut self) {
        if !self.trans.observe {
            return;
        }
        for (mpt, key, hit) in self.trans.observed.drain(..) {
            let res = if mpt { Res::Mpt } else { Res::Mtt };
            if hit {
                self.pf.ledger.demand_hit(res, key);
            } else {
                self.pf.ledger.evicted(res, key);
            }
        }
    }
}
