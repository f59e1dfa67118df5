//! WQE fetch and decode: a scheduler visit, once the QPC manager has served it, reads its
//! WQEs from the SQ ring in host memory with one DMA read; the decoder turns the real bytes
//! back into work requests (the format is in [`crate::host::driver`]). Each WQE then
//! goes through MPT/MTT translation and, for SEND/WRITE, the payload DMA read; then, in
//! fetch order, the requester takes the QP's context from the QPC manager (requester
//! channel) and hands the WQE to the transport (`post_send`).

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::qpc_manager::{Channel, QpcRequest};
use super::translation::{TransJob, TransLane};
use super::unit::Unit;
use super::{DmaToken, TransCont};
use crate::event::Ev;
use crate::host::driver::SqWqe;
use crate::slab::Slab;
use crate::world::World;

/// One scheduler visit: `n` WQEs of `qpn` from SQ index `first`.
#[derive(Debug, Clone, Copy)]
pub struct Visit {
    /// QPN.
    pub qpn: u32,
    /// First SQ index.
    pub first: u32,
    /// WQEs.
    pub n: u32,
}

/// A fetched WQE on its way to the transport.
#[derive(Debug, Clone)]
pub struct TxJob {
    /// QPN.
    pub qpn: u32,
    /// The decoded WQE (`None` if the bytes did not decode).
    pub wqe: Option<SqWqe>,
    /// Payload (if any) is in the NIC.
    pub ready: bool,
}

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
    /// Visits whose WQEs are being read.
    pub visits: Slab<Visit>,
    /// WQEs between decode and the transport.
    pub jobs: Slab<TxJob>,
    order: VecDeque<u32>,
    /// Payload reads waiting, in decode order, for room in the TX payload buffer.
    awaiting_buffer: VecDeque<(u32, TransJob<TransCont>)>,
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
            jobs: Slab::new(),
            order: VecDeque::new(),
            awaiting_buffer: VecDeque::new(),
            decode: Unit::new(decode_ps),
            stats: FetchStats::default(),
        }
    }
}

impl World {
    /// The QPC of a visit is ready at `at`: read its WQEs.
    pub(crate) fn wqe_fetch_issue(&mut self, n: usize, visit: u32, at: TimePs) {
        let wqe = self.p.nic.wqe_bytes;
        let nic = &self.nodes[n].nic;
        let Some(v) = nic.fetch.visits.get(visit).copied() else {
            return;
        };
        self.host_read(n, at, u64::from(v.n) * wqe, DmaToken::Wqe(visit));
    }

    /// The WQEs of `visit` are in the NIC: decode them and start their translation.
    pub(crate) fn on_wqes_fetched(&mut self, n: usize, now: TimePs, visit: u32) {
        let (wqe_bytes, chunk_bytes, per) = (
            self.p.nic.wqe_bytes,
            self.p.nic.chunk_bytes,
            self.p.nic.wqes_per_fetch,
        );
        let node = &mut self.nodes[n];
        let nic = &mut node.nic;
        let Some(v) = nic.fetch.visits.remove(visit) else {
            return;
        };
        let qp = nic.qps[v.qpn as usize];
        let mut buf = [0u8; 64];
        let mut largest = 0u64;
        for i in 0..v.n {
            let idx = v.first.wrapping_add(i) & qp.sq_mask;
            rnic_transport::Memory::read(
                &node.mem,
                qp.sq_base + u64::from(idx) * wqe_bytes,
                &mut buf,
            );
            let wqe = SqWqe::decode(&buf);
            if let Some(w) = wqe {
                largest = largest.max(u64::from(w.sge.len));
            }
            let t = nic.fetch.decode.serve(now);
            nic.fetch.stats.wqes += 1;
            let job = nic.fetch.jobs.insert(TxJob {
                qpn: v.qpn,
                wqe,
                ready: false,
            });
            nic.fetch.order.push_back(job);
            let tj = match wqe {
                Some(w) if w.payload_to_read() > 0 => TransJob {
                    key: w.sge.lkey,
                    va: w.sge.addr,
                    len: w.payload_to_read(),
                    needs: true,
                    cont: TransCont::TxJob(job),
                    at: t,
                },
                _ => {
                    if wqe.is_none() {
                        nic.fetch.stats.bad_wqes += 1;
                    }
                    TransJob {
                        key: 0,
                        va: 0,
                        len: 0,
                        needs: false,
                        cont: TransCont::TxJob(job),
                        at: t,
                    }
                }
            };
            if tj.len > 0 {
                // The payload read needs room in the TX payload buffer; it waits, in
                // order, while the buffer is full.
                nic.fetch.awaiting_buffer.push_back((v.qpn, tj));
                continue;
            }
            nic.trans.submit(TransLane::Tx, tj);
        }
        let fit = (chunk_bytes / largest.max(1)).clamp(1, u64::from(per.min(255)));
        nic.qps[v.qpn as usize].chunk_wqes = fit as u8;
        self.tx_buffer_pump(n, now);
    }

    /// Starts the translation (and then the payload read) of waiting WQEs while the TX
    /// payload buffer has room; each reserves its payload, or one packet of a longer one.
    fn tx_buffer_admit(&mut self, n: usize, now: TimePs) {
        let (cap, pmtu) = (self.p.nic.tx_buffer_bytes, u64::from(self.p.pmtu));
        let nic = &mut self.nodes[n].nic;
        while nic.tx.buffered_bytes < cap {
            let Some((qpn, mut tj)) = nic.fetch.awaiting_buffer.pop_front() else {
                break;
            };
            // A message longer than the path MTU streams through the buffer packet by
            // packet: it holds at most one packet of it at a time.
            nic.tx_buffer_reserve(qpn, tj.len.min(pmtu));
            tj.at = tj.at.max(now);
            nic.trans.submit(TransLane::Tx, tj);
        }
    }

    /// WQEs were decoded or bytes left the TX payload buffer at `now`: admit the waiting
    /// payload reads that fit, run translation, wake the scheduler.
    pub(crate) fn tx_buffer_pump(&mut self, n: usize, now: TimePs) {
        self.tx_buffer_admit(n, now);
        self.trans_pump(n);
        self.sched_kick(n, now);
    }

    /// Translation of a fetched WQE finished at `at`: read its payload, if any.
    pub(crate) fn tx_job_translated(&mut self, n: usize, job: u32, at: TimePs) {
        let nic = &mut self.nodes[n].nic;
        let bytes = nic
            .fetch
            .jobs
            .get(job)
            .and_then(|j| j.wqe)
            .map_or(0, |w| w.payload_to_read());
        if bytes > 0 {
            nic.fetch.stats.payload_bytes += bytes;
            self.host_read(n, at, bytes, DmaToken::Payload(job));
        } else {
            self.q.push(
                at,
                Ev::TxJobReady {
                    node: n as u32,
                    job,
                },
            );
        }
    }

    /// The WQE `job` is ready (payload in the NIC): in fetch order, ready WQEs ask the QPC
    /// manager for their context on the requester channel (the requester builds the packet
    /// headers from it).
    pub(crate) fn on_tx_job_ready(&mut self, n: usize, now: TimePs, job: u32) {
        let nic = &mut self.nodes[n].nic;
        if let Some(j) = nic.fetch.jobs.get_mut(job) {
            j.ready = true;
        }
        let mut submitted = false;
        while let Some(&head) = nic.fetch.order.front() {
            let Some(j) = nic.fetch.jobs.get(head) else {
                nic.fetch.order.pop_front();
                continue;
            };
            if !j.ready {
                break;
            }
            nic.fetch.order.pop_front();
            nic.qpc.submit(QpcRequest {
                qpn: j.qpn,
                channel: Channel::Requester,
                index: head | TX_JOB_INDEX,
                at: now,
            });
            submitted = true;
        }
        if submitted {
            self.qpc_pump(n, now);
        }
    }

    /// The requester has the QPC of `job`: hand the WQE to the transport.
    pub(crate) fn on_tx_post(&mut self, n: usize, now: TimePs, job: u32) {
        let node = &mut self.nodes[n];
        let nic = &mut node.nic;
        let Some(j) = nic.fetch.jobs.remove(job) else {
            return;
        };
        let ok = match j.wqe {
            Some(w) => node.dev.post_send(j.qpn, w.to_send_wr()).is_ok(),
            None => false,
        };
        let flushed = ok && node.dev.qp_state(j.qpn) == Some(rnic_transport::QpState::Err);
        if !ok || flushed {
            // Refused, or accepted by a QP in error, which completes it at once with
            // WR_FLUSH_ERR: nothing of it will be sent.
            let unsent = j.wqe.map_or(0, |w| w.payload_to_read());
            let freed = nic.tx_buffer_release(j.qpn, unsent);
            if !ok {
                nic.fetch.stats.post_errors += 1;
            }
            if freed {
                self.tx_buffer_pump(n, now);
            }
            if flushed {
                self.cq_collect(n, now, j.qpn);
            }
            return;
        }
        nic.tx.backlog += 1;
        nic.tx_enlist(j.qpn);
        self.tx_kick(n, now);
        // The WQE left the WQE buffer: a paused scheduler may have room again.
        self.sched_kick(n, now);
    }
}

/// Bit marking a requester-channel QPC request index as a TX job (else an RX frame).
pub const TX_JOB_INDEX: u32 = 1 << 31;
