//! The DMA read arbiter: host-memory reads that find no free PCIe read tag wait here, and
//! each freed tag goes to the next waiting request.
//!
//! Why: with one FIFO a 1 MB payload read (2,048 MRRS requests, all 256 tags for about
//! 65 µs) holds every later QPC, WQE and small-payload read behind it. A NIC's DMA engine
//! instead keeps one queue per source and grants requests one at a time between them, so a
//! small read waits for at most one request of every other source before its own.
//!
//! Policies (`nic.dma_read_arbiter`): `round_robin` visits the sources with waiting requests
//! in turn, one request per visit; `fifo` serves all requests in arrival order (one queue).
//! Sources are [`ReadSource`]s: contexts (QPC/MPT/MTT), WQEs (send and receive queues), each
//! payload stream (a QP's SEND/WRITE payload, or its READ responses) and other reads
//! (atomic operands, whole payload reads of the `fifo` policy).

use std::collections::VecDeque;

use rnic_sim::TimePs;
use rustc_hash::FxHashMap;

use crate::config::DmaReadArbiter;

/// Who asked for a read: the unit the arbiter shares tags between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReadSource {
    /// QPC, MPT or MTT entries (one source: the context fetch unit).
    Context,
    /// Send or receive WQEs (one source: the WQE fetch unit).
    Wqe,
    /// The payload stream of a QP: `resp` = its READ responses, else its SEND/WRITE data.
    Payload {
        /// QPN.
        qpn: u32,
        /// READ response stream (responder side).
        resp: bool,
    },
    /// Anything else (atomic operands, whole-message payload reads).
    Other,
}

impl ReadSource {
    /// The statistics class of the source.
    pub fn class(self) -> ReadClass {
        match self {
            ReadSource::Context => ReadClass::Context,
            ReadSource::Wqe => ReadClass::Wqe,
            ReadSource::Payload { .. } => ReadClass::Payload,
            ReadSource::Other => ReadClass::Other,
        }
    }
}

/// Statistics class of a read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadClass {
    /// QPC/MPT/MTT.
    Context,
    /// WQEs.
    Wqe,
    /// Payload streams.
    Payload,
    /// Everything else.
    Other,
}

/// Emptied per-source queues the arbiter keeps for reuse (enough for the sources that wait
/// at once in a busy NIC; more would only hold memory).
const SPARE_QUEUES: usize = 64;

/// A read waiting for tags.
#[derive(Debug, Clone, Copy)]
pub struct Waiting<T> {
    /// Earliest issue time (when the unit asked), ps.
    pub at: TimePs,
    /// Bytes.
    pub len: u64,
    /// What to do on completion.
    pub token: T,
    /// Who asked.
    pub source: ReadSource,
}

/// Waiting reads, per source, and the order they are granted in.
#[derive(Debug)]
pub struct Arbiter<T> {
    policy: DmaReadArbiter,
    /// `fifo`: every waiting read in arrival order.
    fifo: VecDeque<Waiting<T>>,
    /// `round_robin`: each source's waiting reads, in its own order. A fixed hasher: every
    /// read looks its source up here (SipHash cost more than the rest of the arbiter), and
    /// the map is never iterated, so its order cannot reach the results.
    queues: FxHashMap<ReadSource, VecDeque<Waiting<T>>>,
    /// Emptied queues kept for the next source that starts waiting, so a source's first
    /// read does not allocate (a payload stream empties its queue about once per message).
    spare: Vec<VecDeque<Waiting<T>>>,
    /// `round_robin`: sources with waiting reads, the next to serve first.
    ring: VecDeque<ReadSource>,
    waiting: usize,
}

impl<T: Copy> Arbiter<T> {
    /// An empty arbiter with `policy`.
    pub fn new(policy: DmaReadArbiter) -> Self {
        Arbiter {
            policy,
            fifo: VecDeque::new(),
            queues: FxHashMap::default(),
            spare: Vec::new(),
            ring: VecDeque::new(),
            waiting: 0,
        }
    }

    /// Reads waiting.
    pub fn len(&self) -> usize {
        self.waiting
    }

    /// No read waits.
    pub fn is_empty(&self) -> bool {
        self.waiting == 0
    }

    /// Queues a read behind the others of its source.
    pub fn push(&mut self, w: Waiting<T>) {
        self.waiting += 1;
        match self.policy {
            DmaReadArbiter::Fifo => self.fifo.push_back(w),
            DmaReadArbiter::RoundRobin => {
                let spare = &mut self.spare;
                let q = self
                    .queues
                    .entry(w.source)
                    .or_insert_with(|| spare.pop().unwrap_or_default());
                if q.is_empty() {
                    self.ring.push_back(w.source);
                }
                q.push_back(w);
            }
        }
    }

    /// The read to grant next, if `fits` (does it get its tags now?) says yes to it: the
    /// head of the FIFO, or the head of the next source in the ring. A read that does not
    /// fit is not passed by later ones (the sources' turn order stays fair).
    pub fn pop_if(&mut self, fits: impl Fn(&Waiting<T>) -> bool) -> Option<Waiting<T>> {
        let w = match self.policy {
            DmaReadArbiter::Fifo => {
                let head = self.fifo.front()?;
                if !fits(head) {
                    return None;
                }
                self.fifo.pop_front()?
            }
            DmaReadArbiter::RoundRobin => {
                let src = *self.ring.front()?;
                let q = self.queues.get_mut(&src)?;
                let head = q.front()?;
                if !fits(head) {
                    return None;
                }
                let w = q.pop_front()?;
                self.ring.pop_front();
                if q.is_empty() {
                    if let Some(q) = self.queues.remove(&src) {
                        if self.spare.len() < SPARE_QUEUES {
                            self.spare.push(q);
                        }
                    }
                } else {
                    self.ring.push_back(src);
                }
                w
            }
        };
        self.waiting -= 1;
        Some(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(source: ReadSource, token: u32) -> Waiting<u32> {
        Waiting {
            at: 0,
            len: 512,
            token,
            source,
        }
    }

    #[test]
    fn round_robin_interleaves_sources_one_request_each() {
        let mut a = Arbiter::new(DmaReadArbiter::RoundRobin);
        let big = ReadSource::Payload {
            qpn: 1,
            resp: false,
        };
        for t in 0..4 {
            a.push(w(big, t));
        }
        a.push(w(ReadSource::Context, 10));
        a.push(w(ReadSource::Wqe, 20));
        let order: Vec<u32> = std::iter::from_fn(|| a.pop_if(|_| true))
            .map(|x| x.token)
            .collect();
        assert_eq!(order, vec![0, 10, 20, 1, 2, 3]);
        assert!(a.is_empty());
    }

    #[test]
    fn fifo_keeps_arrival_order() {
        let mut a = Arbiter::new(DmaReadArbiter::Fifo);
        let big = ReadSource::Payload {
            qpn: 1,
            resp: false,
        };
        a.push(w(big, 0));
        a.push(w(big, 1));
        a.push(w(ReadSource::Context, 10));
        let order: Vec<u32> = std::iter::from_fn(|| a.pop_if(|_| true))
            .map(|x| x.token)
            .collect();
        assert_eq!(order, vec![0, 1, 10]);
    }

    #[test]
    fn a_read_that_does_not_fit_is_not_passed() {
        let mut a = Arbiter::new(DmaReadArbiter::RoundRobin);
        a.push(w(ReadSource::Context, 1));
        a.push(w(ReadSource::Wqe, 2));
        assert!(a.pop_if(|x| x.token != 1).is_none());
        assert_eq!(a.len(), 2);
    }
}
