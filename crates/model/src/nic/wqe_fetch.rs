//! WQE fetch and decode: a scheduler visit, once the QPC manager has served it, reads its
//! WQEs from the SQ ring in host memory with one DMA read; the decoder turns the real bytes
//! back into work requests (the format is in [`crate::host::driver`]). Each WQE then
//! goes through MPT/MTT translation and, for SEND/WRITE, the payload DMA read; then, in
//! fetch order, the requester takes the QP's context from the QPC manager (requester
//! channel) and hands the WQE to the transport (`post_send`).

use std::collections::VecDeque;

use rnic_host::SparseMemory;
use rnic_sim::TimePs;
use rustc_hash::FxHashMap;

use super::ports::{TransCont, TxJob, Visit};
use super::qp_table::QpHw;
use super::translation::TransJob;
use super::unit::Unit;
use crate::host::driver::SqWqe;
use crate::params::NicParams;
use crate::slab::Slab;

/// Counters of WQE fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct FetchStats {
    /// WQEs decoded.
    pub wqes: u64,
    /// WQEs whose bytes did not decode.
    pub bad_wqes: u64,
    /// post_send calls the transport refused.
    pub post_errors: u64,
    /// Payload bytes read for SEND/WRITE.
    pub payload_bytes: u64,
}

/// WQE fetch, decode and the in-order release to the transport.
#[derive(Debug)]
pub struct WqeFetch {
    /// Visits whose WQEs are being read (or are in, waiting for an earlier visit of their
    /// QP: [`WqeFetch::take_in_order`]).
    pub visits: Slab<Visit>,
    /// Per QP with visits in flight: the SQ index its next visit to decode starts at, and
    /// how many of its visits are in flight. A QP's visits decode in the order the scheduler
    /// made them, whatever order their WQEs arrive in (a prefetch read a visit waits for
    /// may land after a later visit's own read).
    qp_next: FxHashMap<u32, (u32, u32)>,
    /// Visits whose WQEs arrived before an earlier visit's of their QP, by (QPN, first SQ
    /// index): each decodes right after the visit before it.
    early: FxHashMap<(u32, u32), u32>,
    /// WQEs between decode and the transport.
    pub jobs: Slab<TxJob>,
    /// Fetch order per WQE-cache FIFO (one FIFO unless caching is separate): a job is
    /// released to the requester once it and every job before it in its FIFO are ready.
    order: Vec<VecDeque<u32>>,
    /// Payload reads waiting for room in the TX payload buffer, in decode order per
    /// WQE-cache FIFO (one FIFO unless caching is separate).
    awaiting_buffer: Vec<VecDeque<(u32, TransJob<TransCont>)>>,
    /// The BS FIFO whose waiting payload read is admitted next (separate caching: the LS
    /// FIFO's go first, then BS tenants' in turn, so one tenant's large messages do not
    /// hold the buffer's door shut for the others).
    admit_turn: usize,
    /// Jobs released to the requester by the last [`WqeFetch::release_ready`].
    released: Vec<(u32, u32)>,
    /// The decoder.
    pub decode: Unit,
    /// Counters.
    pub stats: FetchStats,
}

impl WqeFetch {
    /// A fetch unit whose decoder has II `decode_ps`.
    pub fn new(decode_ps: TimePs) -> Self {
        WqeFetch {
            visits: Slab::new(),
            qp_next: FxHashMap::default(),
            early: FxHashMap::default(),
            jobs: Slab::new(),
            order: vec![VecDeque::new()],
            awaiting_buffer: vec![VecDeque::new()],
            admit_turn: 1,
            released: Vec::new(),
            decode: Unit::new(decode_ps),
            stats: FetchStats::default(),
        }
    }

    /// The scheduler made visit `v`: its WQEs are read next. Returns its id.
    pub fn begin_visit(&mut self, v: Visit) -> u32 {
        self.qp_next.entry(v.qpn).or_insert((v.first, 0)).1 += 1;
        self.visits.insert(v)
    }

    /// The WQEs of `visit` are in: the visit, taken out of those in flight, if it is the
    /// oldest of its QP's; else none, and it waits until the visits before it are decoded
    /// ([`WqeFetch::next_in_order`]), so that the QP's WQEs reach the transport in posting
    /// order.
    pub fn take_in_order(&mut self, visit: u32) -> Option<Visit> {
        let v = *self.visits.get(visit)?;
        if let Some(e) = self.qp_next.get_mut(&v.qpn) {
            if e.0 != v.first {
                self.early.insert((v.qpn, v.first), visit);
                return None;
            }
            e.0 = v.first.wrapping_add(v.n);
            e.1 -= 1;
            if e.1 == 0 {
                self.qp_next.remove(&v.qpn);
            }
        }
        self.visits.remove(visit)
    }

    /// After a visit of `qpn` was taken ([`WqeFetch::take_in_order`]): the visit whose
    /// WQEs arrived early and whose turn it is now, if any.
    pub fn next_in_order(&mut self, qpn: u32) -> Option<u32> {
        if self.early.is_empty() {
            return None;
        }
        let &(next, _) = self.qp_next.get(&qpn)?;
        self.early.remove(&(qpn, next))
    }

    /// Decodes the WQEs visit `v` read (the real bytes of `qp`'s SQ ring in `mem`) at
    /// `now`: each becomes a job in fetch order; SEND/WRITE payload reads wait for room in
    /// the TX payload buffer ([`WqeFetch::next_awaiting_buffer`]), the others go to
    /// translation at once (`to_translate`, in order). Returns the QP's new chunk estimate:
    /// how many messages of the largest size seen fit in `nic.chunk_bytes`. `cached` holds
    /// the visit's WQE bytes when the prefetcher read them ([`super::mech::prefetch`]; empty: the
    /// visit's own read brought them, take them from the SQ ring).
    #[allow(clippy::too_many_arguments)]
    pub fn decode_visit(
        &mut self,
        now: TimePs,
        v: Visit,
        qp: &QpHw,
        queue: u32,
        mem: &SparseMemory,
        p: &NicParams,
        cached: &[Vec<u8>],
        to_translate: &mut Vec<TransJob<TransCont>>,
    ) -> u8 {
        let mut buf = [0u8; 64];
        let mut largest = 0u64;
        for i in 0..v.n {
            let idx = v.first.wrapping_add(i) & qp.sq_mask;
            match cached.get(i as usize) {
                Some(bytes) if bytes.len() >= buf.len() => buf.copy_from_slice(&bytes[..64]),
                _ => rnic_transport::Memory::read(
                    mem,
                    qp.sq_base + u64::from(idx) * p.wqe_bytes,
                    &mut buf,
                ),
            }
            let wqe = SqWqe::decode(&buf);
            if let Some(w) = wqe {
                largest = largest.max(u64::from(w.sge.len));
            }
            let t = self.decode.serve(now);
            self.stats.wqes += 1;
            let job = self.jobs.insert(TxJob {
                qpn: v.qpn,
                wqe,
                ready: false,
                decoded_at: t,
                ready_at: t,
                queue,
            });
            let q = queue as usize;
            if self.order.len() <= q {
                crate::per_qp::grow_for(&mut self.order, q, VecDeque::new);
            }
            self.order[q].push_back(job);
            let (key, va, len) = match wqe {
                Some(w) if w.payload_to_read() > 0 => (w.sge.lkey, w.sge.addr, w.payload_to_read()),
                _ => {
                    if wqe.is_none() {
                        self.stats.bad_wqes += 1;
                    }
                    (0, 0, 0)
                }
            };
            let tj = TransJob {
                key,
                va,
                len,
                needs: len > 0,
                cont: TransCont::TxJob(job),
                at: t,
            };
            if tj.len > 0 {
                // The payload read needs room in the TX payload buffer; it waits, in
                // order, while the buffer is full.
                if self.awaiting_buffer.len() <= q {
                    crate::per_qp::grow_for(&mut self.awaiting_buffer, q, VecDeque::new);
                }
                self.awaiting_buffer[q].push_back((v.qpn, tj));
                continue;
            }
            to_translate.push(tj);
        }
        let per = p.wqes_per_fetch;
        (p.chunk_bytes / largest.max(1)).clamp(1, u64::from(per.min(255))) as u8
    }

    /// The next payload read to admit to the TX payload buffer, with its QPN: the oldest of
    /// the shared (or LS) FIFO, else the oldest of the next BS tenant's FIFO in turn.
    pub fn next_awaiting_buffer(&mut self) -> Option<(u32, TransJob<TransCont>)> {
        if let Some(j) = self.awaiting_buffer[0].pop_front() {
            return Some(j);
        }
        let n = self.awaiting_buffer.len();
        for k in 0..n.saturating_sub(1) {
            let q = 1 + (self.admit_turn - 1 + k) % (n - 1);
            if let Some(j) = self.awaiting_buffer[q].pop_front() {
                self.admit_turn = 1 + q % (n - 1);
                return Some(j);
            }
        }
        None
    }

    /// Marks `job` ready (payload in the NIC) at `now` and releases, in fetch order, every
    /// ready job at the head of its FIFO: `(job, qpn)` pairs for the requester.
    pub fn release_ready(&mut self, job: u32, now: TimePs) -> std::vec::Drain<'_, (u32, u32)> {
        let q = match self.jobs.get_mut(job) {
            Some(j) => {
                j.ready = true;
                j.ready_at = now;
                j.queue as usize
            }
            None => 0,
        };
        self.released.clear();
        if let Some(order) = self.order.get_mut(q) {
            while let Some(&head) = order.front() {
                let Some(j) = self.jobs.get(head) else {
                    order.pop_front();
                    continue;
                };
                if !j.ready {
                    break;
                }
                order.pop_front();
                self.released.push((head, j.qpn));
            }
        }
        self.released.drain(..)
    }
}

impl crate::stats::Report for WqeFetch {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.decode"), &self.decode.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u32) -> TransJob<TransCont> {
        TransJob {
            key: 0,
            va: 0,
            len: 4096,
            needs: true,
            cont: TransCont::TxJob(id),
            at: 0,
        }
    }

    /// Separate caching: the LS FIFO's payload reads are admitted first, then the BS
    /// tenants' in turn (each FIFO in its own decode order), so a tenant with a deep backlog
    /// does not keep the others' reads out of the TX payload buffer.
    #[test]
    fn buffer_admission_serves_ls_then_tenants_in_turn() {
        let mut f = WqeFetch::new(1000);
        f.awaiting_buffer.resize_with(3, VecDeque::new);
        for id in 0..3 {
            f.awaiting_buffer[1].push_back((10, job(id)));
        }
        f.awaiting_buffer[2].push_back((20, job(10)));
        f.awaiting_buffer[0].push_back((30, job(20)));
        let order: Vec<u32> = std::iter::from_fn(|| f.next_awaiting_buffer())
            .map(|(_, j)| match j.cont {
                TransCont::TxJob(id) | TransCont::Rx(id) => id,
                TransCont::RxSpan => unreachable!("no receive span waits for buffer room"),
            })
            .collect();
        assert_eq!(order, [20, 0, 10, 1, 2]);
    }
}
