//! The router of resource prefetching ([`super`]): what the mechanism does with the NIC's
//! units — the two triggers, the chain QPC → WQEs → MPT → MTT, keyed fills, and the
//! scheduler visit that finds its WQEs already on chip. Functions of the parts they need
//! ([`Parts`]: the hook's prefetcher, the memory path, the QP table and the parameters; the
//! scheduler's mirror, its count of active QPs or the WQE fetch's visits where a step needs
//! them) and `NicCx`, not methods of the `Nic`. What a step asks of the rest of the NIC
//! comes back as a value for the caller to route: a visit whose WQEs are in ([`on_event`]),
//! or a read's [`Arrived`], whose [`Ask`] the caller routes (the QPC manager's or the
//! translation unit's outputs, a visit to decode) before the chain goes on ([`after_read`]).
//!
//! The NIC enters it only at its trigger points ([`poll`], [`prefetched_wqes`],
//! [`wqes_after_qpc`]), its events ([`on_event`]) and its DMA token ([`on_read_done`]); each
//! step does nothing while prefetching is off. A module apart from the hook because it
//! names the NIC's events and its memory path, which name the hook's.

use rnic_sim::TimePs;

use super::hook::{lane_bit, AnyPrefetch, Ev, Prefetch, SchedMirror, QPC_WAITER};
use super::ledger::Res;
use super::{PfRead, Prefetcher, Span};
use crate::event::NicEv;
use crate::host::driver::SqWqe;
use crate::nic::cx::NicCx;
use crate::nic::dma_arbiter::ReadSource;
use crate::nic::mem_path::MemPath;
use crate::nic::ports::{DmaToken, Visit};
use crate::nic::qp_table::QpHw;
use crate::nic::qpc_manager::QpcAction;
use crate::nic::translation::{mtt_key, TransLane, TransRead, MTT_LINE_ENTRIES};
use crate::params::ModelParams;
use crate::slab::Slab;

const LANES: [TransLane; 3] = [TransLane::Tx, TransLane::Rx, TransLane::TxLs];

/// The parts of the NIC a step of the router works with, borrowed for that step.
pub(crate) struct Parts<'a> {
    /// The mechanism behind its hook.
    pub pf: &'a mut AnyPrefetch,
    /// The memory path: PCIe, the QPC manager, translation and the reads of each.
    pub mem: &'a mut MemPath,
    /// Per-QP state, indexed by QPN.
    pub qps: &'a [QpHw],
    /// Timing parameters.
    pub p: &'a ModelParams,
}

/// The parts with prefetching on: the prefetcher itself.
struct On<'a> {
    pf: &'a mut Prefetcher,
    mem: &'a mut MemPath,
    qps: &'a [QpHw],
    p: &'a ModelParams,
}

impl Parts<'_> {
    /// The parts with the prefetcher, or none while prefetching is off.
    #[inline]
    fn on(&mut self) -> Option<On<'_>> {
        match &mut *self.pf {
            AnyPrefetch::On(pf) => Some(On {
                pf,
                mem: &mut *self.mem,
                qps: self.qps,
                p: self.p,
            }),
            AnyPrefetch::Off(_) => None,
        }
    }
}

/// What a prefetch read's arrival asks of the rest of the NIC, before the chain goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Ask {
    /// Nothing.
    #[default]
    Nothing,
    /// A prefetched context arrived (it answered a demand miss, or filled the cache): the
    /// QPC manager's outputs go where they are waited for.
    QpcRoute,
    /// A prefetched MPT entry or MTT line answered translation lanes: their outputs go on.
    TransRoute,
    /// The WQEs of this visit are in: decode them.
    Decode(u32),
}

/// A prefetch read arrived: what it asks of the NIC, and where its chain goes on once the
/// NIC has done that ([`after_read`]).
#[derive(Debug, Default)]
pub(crate) struct Arrived {
    /// What the NIC routes first.
    pub ask: Ask,
    /// The chain's next step.
    pub then: Then,
}

/// The chain's step after a read's arrival (opaque to the NIC: it hands it back).
#[derive(Debug, Default)]
pub(crate) struct Then(Step);

#[derive(Debug, Default)]
enum Step {
    #[default]
    Nothing,
    /// `qpn`'s context is in: the WQE read that waited for it in the chain (if any), then
    /// one that waited for the context another read brought.
    Wqes {
        qpn: u32,
        wqes: Option<(u32, u32)>,
        since: TimePs,
    },
    /// WQEs are in: the MPT entry (then the MTT lines) of each span they name.
    Translate { spans: Vec<Span>, since: TimePs },
    /// An MPT entry is in: the MTT lines of its span.
    Mtt { span: Span, since: TimePs },
}

/// Scheduler trigger: prefetches every QP that came within the window of the scheduling
/// queue's head (`mirror`).
#[inline]
pub(crate) fn poll(
    mut parts: Parts<'_>,
    mirror: &mut SchedMirror,
    now: TimePs,
    cx: &mut NicCx<'_>,
) {
    while let Some(qpn) = mirror.poll() {
        let Some(mut s) = parts.on() else {
            return;
        };
        s.pf.triggers.0 += 1;
        s.chain(qpn, now, true, cx);
    }
}

/// One of prefetching's own events, with `active` QPs in the scheduling queue; returns the
/// visit whose WQEs are in (all of them from the WQE cache), for the NIC to decode.
pub(crate) fn on_event(
    mut parts: Parts<'_>,
    active: usize,
    now: TimePs,
    ev: Ev,
    cx: &mut NicCx<'_>,
) -> Option<u32> {
    match ev {
        Ev::Mmio { qpn } => {
            // A host core stores `qpn` into the prefetch register: the MMIO write crosses
            // PCIe.
            let at = parts.mem.pcie.mmio_write(now, parts.p.pcie.doorbell_bytes);
            cx.at(at, NicEv::Prefetch(Ev::Reg { qpn }));
        }
        Ev::Reg { qpn } => {
            if let Some(mut s) = parts.on() {
                s.on_reg(now, qpn, active, cx);
            }
        }
        Ev::WqesCached { visit } => return Some(visit),
    }
    None
}

/// `qpn`'s context arrived at `now` (a prefetch or a demand read): the WQE prefetch that
/// waits for its SQ address, if any, starts.
pub(crate) fn wqes_after_qpc(mut parts: Parts<'_>, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
    if let Some(mut s) = parts.on() {
        s.wqes_after_qpc(qpn, now, cx);
    }
}

/// Visit `visit` may read its WQEs from `at`: if the prefetcher has them (or is reading
/// them), the visit takes them from there instead. Returns whether it did. A visit may take
/// more WQEs than the prefetch brought (more were posted after its trigger): it takes the
/// prefetched ones and reads only the rest, `nic.wqe_bytes` each, so no WQE crosses PCIe
/// twice and every prefetched WQE is used (hit or late) or evicted (useless).
pub(crate) fn prefetched_wqes(
    mut parts: Parts<'_>,
    visit: u32,
    v: Visit,
    at: TimePs,
    cx: &mut NicCx<'_>,
) -> bool {
    let Some(s) = parts.on() else {
        return false;
    };
    let pf = s.pf;
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
            read_rest_of_visit(s.mem, s.p, visit, v.n - cached, at, cx);
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
                read_rest_of_visit(s.mem, s.p, visit, v.n - covered, at, cx);
            }
            return true;
        }
    }
    false
}

/// Reads the last `n` WQEs of visit `visit` (those no prefetch brought) from `at`.
fn read_rest_of_visit(
    mem: &mut MemPath,
    p: &ModelParams,
    visit: u32,
    n: u32,
    at: TimePs,
    cx: &mut NicCx<'_>,
) {
    let bytes = u64::from(n) * p.nic.wqe_bytes;
    mem.host_read(at, bytes, DmaToken::Wqe(visit), ReadSource::Wqe, cx);
}

/// Prefetch read `slot` arrived at `now` (`visits`: the WQE fetch's visits in flight). The
/// NIC routes what it asks ([`Arrived::ask`]), then hands its next step to [`after_read`].
pub(crate) fn on_read_done(
    mut parts: Parts<'_>,
    visits: &Slab<Visit>,
    now: TimePs,
    slot: u32,
    cx: &mut NicCx<'_>,
) -> Arrived {
    let Some(mut s) = parts.on() else {
        return Arrived::default();
    };
    let Some((read, since)) = s.pf.reads.remove(slot) else {
        return Arrived::default();
    };
    let took = now.saturating_sub(since);
    match read {
        PfRead::Qpc { .. } => s.pf.ledger.stats_mut(Res::Qpc).fill_ps += took,
        PfRead::Wqe { .. } => s.pf.wqe_stats.fill_ps += took,
        PfRead::Mpt { .. } => s.pf.ledger.stats_mut(Res::Mpt).fill_ps += took,
        PfRead::Mtt { .. } => s.pf.ledger.stats_mut(Res::Mtt).fill_ps += took,
    }
    match read {
        PfRead::Qpc { qpn, wqes } => {
            s.qpc_filled(qpn, now);
            Arrived {
                ask: Ask::QpcRoute,
                then: Then(Step::Wqes { qpn, wqes, since }),
            }
        }
        PfRead::Wqe { qpn, first, n } => {
            s.on_prefetched_wqes(visits, now, qpn, first, n, since, cx)
        }
        PfRead::Mpt(span) => Arrived {
            ask: s.trans_filled(true, u64::from(span.key), now),
            then: Then(Step::Mtt { span, since }),
        },
        PfRead::Mtt { key } => Arrived {
            ask: s.trans_filled(false, key, now),
            then: Then::default(),
        },
    }
}

/// The chain goes on at `now` after a read's arrival, once the NIC routed what it asked.
pub(crate) fn after_read(mut parts: Parts<'_>, then: Then, now: TimePs, cx: &mut NicCx<'_>) {
    let Some(mut s) = parts.on() else {
        return;
    };
    match then.0 {
        Step::Nothing => {}
        Step::Wqes { qpn, wqes, since } => {
            if let Some((first, n)) = wqes {
                s.prefetch_wqes(qpn, first, n, now, since, cx);
            }
            s.wqes_after_qpc(qpn, now, cx);
        }
        Step::Translate { spans, since } => {
            for span in spans {
                s.prefetch_translation(span, now, since, cx);
            }
        }
        Step::Mtt { span, since } => s.prefetch_mtt(span, now, since, cx),
    }
}

impl On<'_> {
    /// Software trigger: with fewer QPs active than the window, the QP's QPC is fetched now
    /// (its WQE is still being built).
    fn on_reg(&mut self, now: TimePs, qpn: u32, active: usize, cx: &mut NicCx<'_>) {
        let p = self.pf.p;
        if !p.sw || self.qps.get(qpn as usize).is_none_or(|q| !q.valid) {
            return;
        }
        if active < p.window as usize {
            self.pf.triggers.1 += 1;
            self.chain(qpn, now, false, cx);
        } else {
            self.pf.triggers.2 += 1;
        }
    }

    /// Starts the chain of `qpn` at `at`: its QPC and (with `wqes`) the WQEs of its next
    /// visit; MPT and MTT follow from the WQEs' contents.
    fn chain(&mut self, qpn: u32, at: TimePs, wqes: bool, cx: &mut NicCx<'_>) {
        let cached = self.mem.qpc.cache().contains(qpn);
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
        let latency_hiding = self.p.nic.latency_hiding;
        let wqe_waits = qpc_read && !latency_hiding;
        if qpc_read {
            let then = if wqe_waits { next } else { None };
            if let Some((first, n)) = then {
                self.wqes_issued(qpn, first, n);
            }
            let slot = self.pf.reads.insert((PfRead::Qpc { qpn, wqes: then }, at));
            let bytes = self.p.nic.qpc_entry_bytes;
            self.mem.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
        }
        if let Some((first, n)) = next.filter(|_| !wqe_waits) {
            self.wqes_issued(qpn, first, n);
            if cached || latency_hiding {
                self.prefetch_wqes(qpn, first, n, at, at, cx);
            } else {
                // The context is being read already (an earlier trigger's prefetch or a
                // demand miss): the WQE read needs its SQ address and waits for that fill.
                self.pf.wqes_after_qpc.insert(qpn, (first, n, at));
            }
        }
    }

    /// Records the WQE prefetch `(first, n)` of `qpn` as in flight and counts it.
    fn wqes_issued(&mut self, qpn: u32, first: u32, n: u32) {
        self.pf.wqe_inflight.insert(qpn, (first, n, None));
        self.pf.wqe_stats.issued += u64::from(n);
        self.pf.wqe_reads += 1;
    }

    /// `qpn`'s context arrived at `now`: the WQE prefetch that waits for it, if any, starts.
    fn wqes_after_qpc(&mut self, qpn: u32, now: TimePs, cx: &mut NicCx<'_>) {
        if self.pf.wqes_after_qpc.is_empty() {
            return;
        }
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
        let pf = &*self.pf;
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
        let slot = self.pf.reads.insert((PfRead::Wqe { qpn, first, n }, since));
        let bytes = u64::from(n) * self.p.nic.wqe_bytes;
        self.mem
            .host_read(at, bytes, DmaToken::Prefetch(slot), ReadSource::Wqe, cx);
    }

    /// A prefetched context of `qpn` arrived at `now`: to the demand miss that waits for
    /// it, else into the cache (its victim written back). The NIC routes the QPC manager's
    /// outputs next.
    fn qpc_filled(&mut self, qpn: u32, now: TimePs) {
        let waiters = self.pf.ledger.prefetch_filled(Res::Qpc, u64::from(qpn));
        let mem = &mut *self.mem;
        if waiters & QPC_WAITER != 0 {
            // A demand miss waits for exactly this context.
            mem.qpc.on_fill(now, qpn, &mut mem.qpc_out);
        } else if let Some(victim) = mem.qpc.cache_mut().fill(qpn) {
            self.pf.ledger.evicted(Res::Qpc, u64::from(victim));
            mem.qpc_out.actions.push(QpcAction::WriteBack {
                qpn: victim,
                at: now,
            });
        }
    }

    /// Prefetched WQEs arrived: into the WQE cache (or straight to the visit that waits for
    /// them: the NIC decodes it now, or at the time it may); then the chain goes on to the
    /// MPT entry of each WQE's lkey.
    #[allow(clippy::too_many_arguments)]
    fn on_prefetched_wqes(
        &mut self,
        visits: &Slab<Visit>,
        now: TimePs,
        qpn: u32,
        first: u32,
        n: u32,
        since: TimePs,
        cx: &mut NicCx<'_>,
    ) -> Arrived {
        let Some(qp) = self.qps.get(qpn as usize).copied() else {
            return Arrived::default();
        };
        let wqe_bytes = self.p.nic.wqe_bytes;
        let mut spans: Vec<Span> = Vec::new();
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
                if spans.last() != Some(&m) {
                    spans.push(m);
                }
            }
            wqes.push(bytes);
        }
        let pf = &mut *self.pf;
        let waiting = pf.wqe_inflight.remove(&qpn).and_then(|e| e.2);
        let mut ask = Ask::Nothing;
        match waiting {
            Some((visit, at)) => {
                // A late prefetch: the visit that waits takes its WQEs at once; any the
                // prefetch read beyond them wait in the cache for the next visit.
                let take = visits.get(visit).map_or(n, |v| v.n.min(n));
                for (i, bytes) in wqes.split_off(take as usize).into_iter().enumerate() {
                    let idx = first.wrapping_add(take + i as u32);
                    pf.wqe_stats.useless += pf.wqes.insert(qpn, idx, bytes);
                }
                pf.visit_bytes.insert(visit, wqes);
                if at > now {
                    cx.at(at, NicEv::Prefetch(Ev::WqesCached { visit }));
                } else {
                    ask = Ask::Decode(visit);
                }
            }
            None => {
                for (i, bytes) in wqes.into_iter().enumerate() {
                    let evicted = pf.wqes.insert(qpn, first.wrapping_add(i as u32), bytes);
                    pf.wqe_stats.useless += evicted;
                }
            }
        }
        Arrived {
            ask,
            then: Then(Step::Translate { spans, since }),
        }
    }

    /// The MPT entry of the span's key, then the MTT lines of its bytes, from `at`, for a
    /// chain triggered at `since`.
    fn prefetch_translation(&mut self, span: Span, at: TimePs, since: TimePs, cx: &mut NicCx<'_>) {
        let k = u64::from(span.key);
        let cached = self.mem.trans.contains(true, k);
        if self.pf.ledger.start_prefetch(Res::Mpt, k, cached) {
            let slot = self.pf.reads.insert((PfRead::Mpt(span), since));
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
            if self.pf.ledger.start_prefetch(Res::Mtt, k, cached) {
                let slot = self.pf.reads.insert((PfRead::Mtt { key: k }, since));
                let bytes = self.mem.trans.entry_bytes(false);
                self.mem.ctx_read(at, bytes, DmaToken::Prefetch(slot), cx);
            }
        }
    }

    /// A prefetched MPT entry or MTT line arrived: to the lanes that wait for it (the NIC
    /// routes the translation unit's outputs next), else into its cache.
    fn trans_filled(&mut self, mpt: bool, key: u64, now: TimePs) -> Ask {
        let res = if mpt { Res::Mpt } else { Res::Mtt };
        let waiters = self.pf.ledger.prefetch_filled(res, key);
        let mem = &mut *self.mem;
        if waiters == 0 {
            mem.trans.prefetch_insert(mpt, key);
            self.pf.trans_observed(&mut mem.trans.observed);
            return Ask::Nothing;
        }
        for lane in LANES {
            if waiters & lane_bit(lane) != 0 {
                let read = if mpt {
                    TransRead { mpt, key, lines: 1 }
                } else {
                    TransRead::mtt_line(key)
                };
                mem.trans
                    .on_fill(lane, read, now, &mut mem.trans_done, &mut mem.trans_fetch);
            }
        }
        Ask::TransRoute
    }
}
