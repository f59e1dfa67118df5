//! The router of resource prefetching ([`super`]): an `impl Nic` that performs what the
//! mechanism does with the NIC's units — the two triggers, the chain QPC → WQEs → MPT → MTT,
//! keyed fills, and the scheduler visit that finds its WQEs already on chip. The rest of the
//! NIC enters it only at its trigger points (`prefetch_poll`, `prefetched_wqes`,
//! `prefetch_wqes_after_qpc`), its events ([`Ev`]) and its DMA token; each step does nothing
//! while prefetching is off.

use rnic_sim::TimePs;

use super::hook::{lane_bit, AnyPrefetch, Ev, QPC_WAITER};
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

/// The prefetcher of `$nic`, or (prefetching off) return from the step doing nothing.
macro_rules! pf {
    ($nic:ident) => {
        match &mut $nic.pf {
            AnyPrefetch::On(p) => p,
            AnyPrefetch::Off(_) => return Default::default(),
        }
    };
}

const LANES: [TransLane; 3] = [TransLane::Tx, TransLane::Rx, TransLane::TxLs];

impl Nic {
    /// Scheduler trigger: prefetches every QP that came within the window of the scheduling
    /// queue's head.
    pub(crate) fn prefetch_poll(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        while let Some(qpn) = self.tx.sched.mirror.poll() {
            pf!(self).triggers.0 += 1;
            self.prefetch_chain(qpn, now, true, cx);
        }
    }

    /// One of prefetching's own events.
    pub(crate) fn on_prefetch_event(&mut self, now: TimePs, ev: Ev, cx: &mut NicCx<'_>) {
        match ev {
            Ev::Mmio { qpn } => self.on_prefetch_mmio(now, qpn, cx),
            Ev::Reg { qpn } => self.on_prefetch_reg(now, qpn, cx),
            Ev::WqesCached { visit } => self.on_wqes_fetched(now, visit, cx),
        }
    }

    /// A host core stores `qpn` into the prefetch register: the MMIO write crosses PCIe.
    fn on_prefetch_mmio(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let at = self.mem.pcie.mmio_write(now, self.p.pcie.doorbell_bytes);
        cx.at(at, NicEv::Prefetch(Ev::Reg { qpn }));
    }

    /// Software trigger: with fewer QPs active than the window, the QP's QPC is fetched now
    /// (its WQE is still being built).
    fn on_prefetch_reg(&mut self, now: TimePs, qpn: u32, cx: &mut NicCx<'_>) {
        let p = pf!(self).p;
        if !p.sw || self.qps.get(qpn as usize).is_none_or(|q| !q.valid) {
            return;
        }
        if self.tx.sched.active() < p.window as usize {
            pf!(self).triggers.1 += 1;
            self.prefetch_chain(qpn, now, false, cx);
        } else {
            pf!(self).triggers.2 += 1;
        }
    }

    /// Starts the chain of `qpn` at `at`: its QPC and (with `wqes`) the WQEs of its next
    /// visit; MPT and MTT follow from the WQEs' contents.
    fn prefetch_chain(&mut self, qpn: u32, at: TimePs, wqes: bool, cx: &mut NicCx<'_>) {
        let cached = self.mem.qpc.cache().contains(qpn);
        let qpc_read = pf!(self)
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
                pf!(self).wqe_inflight.insert(qpn, (first, n, None));
                pf!(self).wqe_stats.issued += u64::from(n);
                pf!(self).wqe_reads += 1;
            }
            let slot = pf!(self)
                .reads
                .insert((PfRead::Qpc { qpn, wqes: then }, at));
            let bytes = self.p.nic.qpc_entry_bytes;
            self.mem.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
        }
        if let Some((first, n)) = next.filter(|_| !wqe_waits) {
            pf!(self).wqe_inflight.insert(qpn, (first, n, None));
            pf!(self).wqe_stats.issued += u64::from(n);
            pf!(self).wqe_reads += 1;
            if cached || self.p.nic.latency_hiding {
                self.prefetch_wqes(qpn, first, n, at, at, cx);
            } else {
                // The context is being read already (an earlier trigger's prefetch or a
                // demand miss): the WQE read needs its SQ address and waits for that fill.
                pf!(self).wqes_after_qpc.insert(qpn, (first, n, at));
            }
        }
    }

    /// `qpn`'s context arrived at `now` (a prefetch or a demand read): the WQE prefetch that
    /// waits for its SQ address, if any, starts.
    pub(crate) fn prefetch_wqes_after_qpc(&mut self, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
        let pf = pf!(self);
        if pf.wqes_after_qpc.is_empty() {
            return;
        }
        if let Some((first, n, since)) = pf.wqes_after_qpc.remove(&qpn) {
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
        let pf = self.pf.on()?;
        if n == 0 || pf.wqe_inflight.contains_key(&qpn) || pf.wqes.contains(qpn, first) {
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
        let slot = pf!(self)
            .reads
            .insert((PfRead::Wqe { qpn, first, n }, since));
        let bytes = u64::from(n) * self.p.nic.wqe_bytes;
        self.mem
            .host_read(at, bytes, DmaToken::Prefetch(slot), ReadSource::Wqe, cx);
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
        let pf = pf!(self);
        let cached = (0..v.n)
            .take_while(|&i| pf.wqes.contains(v.qpn, v.first.wrapping_add(i)))
            .count() as u32;
        if cached > 0 {
            let bytes = (0..cached)
                .filter_map(|i| pf.wqes.take(v.qpn, v.first.wrapping_add(i)))
                .collect();
            pf.visit_bytes.insert(visit, bytes);
            pf.wqe_stats.hits += u64::from(cached);
            if cached == v.n {
                cx.at(at, NicEv::Prefetch(Ev::WqesCached { visit }));
            } else {
                self.read_rest_of_visit(visit, v.n - cached, at, cx);
            }
            return true;
        }
        if let Some(e) = pf.wqe_inflight.get_mut(&v.qpn) {
            if e.0 == v.first && e.2.is_none() {
                e.2 = Some((visit, at));
                let covered = v.n.min(e.1);
                pf.wqe_stats.late += u64::from(covered);
                if covered < v.n {
                    // Two reads bring this visit's WQEs: it is decoded after both.
                    pf.split_visits.insert(visit);
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
        self.mem
            .host_read(at, bytes, DmaToken::Wqe(visit), ReadSource::Wqe, cx);
    }

    /// A prefetch read arrived at `now`.
    pub(crate) fn on_prefetch_done(&mut self, now: TimePs, slot: u32, cx: &mut NicCx<'_>) {
        let Some((read, since)) = pf!(self).reads.remove(slot) else {
            return;
        };
        let took = now.saturating_sub(since);
        match read {
            PfRead::Qpc { .. } => pf!(self).ledger.stats_mut(Res::Qpc).fill_ps += took,
            PfRead::Wqe { .. } => pf!(self).wqe_stats.fill_ps += took,
            PfRead::Mpt { .. } => pf!(self).ledger.stats_mut(Res::Mpt).fill_ps += took,
            PfRead::Mtt { .. } => pf!(self).ledger.stats_mut(Res::Mtt).fill_ps += took,
        }
        match read {
            PfRead::Qpc { qpn, wqes } => {
                let waiters = pf!(self).ledger.prefetch_filled(Res::Qpc, u64::from(qpn));
                if waiters & QPC_WAITER != 0 {
                    // A demand miss waits for exactly this context.
                    self.mem.qpc.on_fill(now, qpn, &mut self.mem.qpc_out);
                } else if let Some(victim) = self.mem.qpc.cache_mut().fill(qpn) {
                    pf!(self).ledger.evicted(Res::Qpc, u64::from(victim));
                    self.mem.qpc_out.actions.push(QpcAction::WriteBack {
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
        let waiting = pf!(self).wqe_inflight.remove(&qpn).and_then(|e| e.2);
        match waiting {
            Some((visit, at)) => {
                // A late prefetch: the visit that waits takes its WQEs at once; any the
                // prefetch read beyond them wait in the cache for the next visit.
                let take = self.tx.fetch.visits.get(visit).map_or(n, |v| v.n.min(n));
                let pf = pf!(self);
                for (i, bytes) in wqes.split_off(take as usize).into_iter().enumerate() {
                    let idx = first.wrapping_add(take + i as u32);
                    pf.wqe_stats.useless += pf.wqes.insert(qpn, idx, bytes);
                }
                pf.visit_bytes.insert(visit, wqes);
                if at > now {
                    cx.at(at, NicEv::Prefetch(Ev::WqesCached { visit }));
                } else {
                    self.on_wqes_fetched(now, visit, cx);
                }
            }
            None => {
                let pf = pf!(self);
                for (i, bytes) in wqes.into_iter().enumerate() {
                    let evicted = pf.wqes.insert(qpn, first.wrapping_add(i as u32), bytes);
                    pf.wqe_stats.useless += evicted;
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
        let cached = self.mem.trans.contains(true, k);
        if pf!(self).ledger.start_prefetch(Res::Mpt, k, cached) {
            let slot = pf!(self).reads.insert((PfRead::Mpt(span), since));
            let bytes = self.mem.trans.entry_bytes(true);
            self.mem.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
        } else if cached {
            self.prefetch_mtt(span, at, since, cx);
        }
    }

    /// The MTT line(s) of the span's bytes.
    fn prefetch_mtt(&mut self, span: Span, at: TimePs, since: TimePs, cx: &mut NicCx<'_>) {
        let Span { key, va, len } = span;
        let first = self.mem.trans.page_of(va);
        let last = self.mem.trans.page_of(va + len.max(1) - 1);
        for page in first..=last {
            if page != first && page % MTT_LINE_ENTRIES != 0 {
                continue;
            }
            let k = mtt_key(key, page);
            let cached = self.mem.trans.contains(false, k);
            if pf!(self).ledger.start_prefetch(Res::Mtt, k, cached) {
                let slot = pf!(self).reads.insert((PfRead::Mtt { key: k }, since));
                let bytes = self.mem.trans.entry_bytes(false);
                self.mem.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
            }
        }
    }

    /// A prefetched MPT entry or MTT line arrived: to the lanes that wait for it, else into
    /// its cache.
    fn trans_prefetch_filled(&mut self, mpt: bool, key: u64, now: TimePs, cx: &mut NicCx<'_>) {
        let res = if mpt { Res::Mpt } else { Res::Mtt };
        let waiters = pf!(self).ledger.prefetch_filled(res, key);
        if waiters == 0 {
            self.mem.trans.prefetch_insert(mpt, key);
            self.pf.trans_observed(&mut self.mem.trans.observed);
            return;
        }
        for lane in LANES {
            if waiters & lane_bit(lane) != 0 {
                let read = if mpt {
                    TransRead { mpt, key, lines: 1 }
                } else {
                    TransRead::mtt_line(key)
                };
                self.mem.trans.on_fill(
                    lane,
                    read,
                    now,
                    &mut self.mem.trans_done,
                    &mut self.mem.trans_fetch,
                );
            }
        }
        self.trans_route(cx);
    }
}
