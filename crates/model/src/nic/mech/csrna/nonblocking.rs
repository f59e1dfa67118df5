//! csRNA's non-blocking QPC manager in the timed model (csRNA §4.3–§4.4).
//!
//! The protocol of the module lives in the clock-free [`csrna::NonBlockingQpcManager`]
//! (channel arbiter, request handling unit — Algorithm 1 —, pending handling unit —
//! Algorithm 2 with the idle-time traversal of Type 2 elements —, pending FIFO and pending
//! record table). This adapter gives it time and its surroundings:
//!
//! * **Requesters** (§4.4, Fig. 5b): each channel (descriptor unit, requester, responder)
//!   owns a [`NonBlockingRequester`] of `ooo_cap` indices whose waiting SRAM holds the
//!   model's request (the frame, visit or WQE waiting for its context). A request that finds
//!   no free index waits in front of its unit — the unit stalls, which is what limits the
//!   rate at small `ooo_cap` when many QPs miss — and is admitted when a response hands an
//!   index back.
//! * **Clock**: the manager is stepped once per cycle while it has work. A step that looks
//!   the cache up (a hit answered, a miss posting its DMA read, a DMA return answered, a
//!   checked element answered from the cache) occupies the manager for `qpc_lookup_cycles`;
//!   a step that only moves an element (Type 2 parked, element written back during the
//!   traversal) for one cycle. A response is ready when its step ends.
//! * **Arrivals**: requests carry their arrival time; the manager sees a request only once
//!   its clock has reached it (they wait in the channel's request FIFO).
//! * **QPC reads**: [`QpcAction::Fetch`] to host memory over PCIe or to on-board DDR (the
//!   world decides by `nic.qpc_placement`). The entry goes into the LRU cache when its read
//!   completes; the manager is told with `dma_returned` strictly in issue order (a read that
//!   overtakes an older one waits for it), as the module's response FIFO would.
//! * **Latency hiding** (§4.5) is the scheduler's business: its descriptor-channel request
//!   goes through this manager like any other, only nobody waits for the answer.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use crate::nic::mech::csrna::{
    self, NonBlockingQpcManager, NonBlockingRequester, QpcManager as _, QpcManagerConfig,
    QpcRequester, QpcStore, ServedBy, StepOutput,
};
use crate::nic::qpc_cache::QpcCache;
use crate::nic::qpc_manager::{
    Channel, QpcAction, QpcJob, QpcManager, QpcManagerStats, QpcOutputs, QpcReady,
};

impl QpcStore for QpcCache {
    fn lookup(&mut self, qpn: u32) -> bool {
        QpcCache::lookup(self, qpn)
    }

    fn is_resident(&self, qpn: u32) -> bool {
        self.contains(qpn)
    }
}

/// One QPC read the manager asked for, in issue order.
#[derive(Debug, Clone, Copy)]
struct Read {
    qpn: u32,
    done: bool,
}

/// The non-blocking manager with its three requesters.
#[derive(Debug)]
pub struct NonBlocking {
    cache: QpcCache,
    mgr: NonBlockingQpcManager,
    requesters: [NonBlockingRequester<QpcJob>; 3],
    /// Requests waiting for a free index (the unit is stalled), per channel.
    stalled: [VecDeque<QpcJob>; 3],
    /// Requests with an index, on their way to the manager (arrival time, index), per
    /// channel; handed to the arbiter once the manager's clock reaches them.
    arriving: [VecDeque<(TimePs, QpcJob, u8)>; 3],
    /// The manager's next free cycle.
    t: TimePs,
    cycle_ps: TimePs,
    lookup_ps: TimePs,
    ooo_cap: usize,
    reads: VecDeque<Read>,
    stats: QpcManagerStats,
}

impl NonBlocking {
    /// A manager over `cache` with `ooo_caps` indices for the requesters of the descriptor
    /// unit, the requester and the responder (channel order); one manager cycle takes
    /// `cycle_ps`, a step with a cache lookup `lookup_ps`. The pending structures are sized
    /// for the largest.
    pub fn new(cache: QpcCache, ooo_caps: [u32; 3], cycle_ps: TimePs, lookup_ps: TimePs) -> Self {
        let caps = ooo_caps.map(|c| (c as usize).clamp(1, csrna::MAX_OOO_CAP));
        let cap = caps.into_iter().max().unwrap_or(1);
        let cfg = QpcManagerConfig::new(cap).unwrap_or_else(|_| unreachable_cfg());
        let req =
            |c: usize| NonBlockingRequester::new(caps[c]).unwrap_or_else(|_| unreachable_cfg());
        NonBlocking {
            cache,
            mgr: NonBlockingQpcManager::new(cfg),
            requesters: [req(0), req(1), req(2)],
            stalled: Default::default(),
            arriving: Default::default(),
            t: 0,
            cycle_ps: cycle_ps.max(1),
            lookup_ps: lookup_ps.max(cycle_ps.max(1)),
            ooo_cap: cap,
            reads: VecDeque::new(),
            stats: QpcManagerStats::default(),
        }
    }

    /// The clock-free manager (read-only; for checks).
    pub fn inner(&self) -> &NonBlockingQpcManager {
        &self.mgr
    }

    /// Out-of-order capacity.
    pub fn ooo_cap(&self) -> usize {
        self.ooo_cap
    }

    /// Gives free indices to stalled requests of channel `c`; a request admitted by an
    /// index freed at `freed_at` arrives no earlier than that.
    fn admit(&mut self, c: usize, freed_at: TimePs) {
        while let Some(&r) = self.stalled[c].front() {
            let Ok(index) = self.requesters[c].request(r) else {
                break;
            };
            self.stalled[c].pop_front();
            self.arriving[c].push_back((r.at.max(freed_at), r, index));
        }
    }

    /// Hands arrived requests (arrival ≤ manager clock) to the arbiter.
    fn feed(&mut self) {
        for c in 0..3 {
            while let Some(&(at, r, index)) = self.arriving[c].front() {
                if at > self.t {
                    break;
                }
                self.arriving[c].pop_front();
                let cs = csrna::QpcRequest {
                    qpn: r.qpn,
                    channel: r.channel,
                    index,
                    write: false,
                };
                if self.mgr.submit(cs).is_err() {
                    // Cannot happen: the request FIFO holds `ooo_cap` per channel and the
                    // requester never has more outstanding. Keep it for the next cycle.
                    self.arriving[c].push_front((at, r, index));
                    break;
                }
            }
        }
    }

    fn next_arrival(&self) -> Option<TimePs> {
        self.arriving
            .iter()
            .filter_map(|q| q.front().map(|&(at, _, _)| at))
            .min()
    }

    /// Runs the manager cycle by cycle until it has nothing to do.
    fn run(&mut self, out: &mut QpcOutputs) {
        loop {
            self.feed();
            if !self.mgr.has_work() {
                match self.next_arrival() {
                    Some(at) => {
                        self.t = self.t.max(at);
                        continue;
                    }
                    None => return,
                }
            }
            let start = self.t;
            let step = match self.mgr.step(&mut self.cache) {
                Ok(s) => s,
                Err(e) => panic!("non-blocking QPC manager invariant broken: {e}"),
            };
            match step {
                StepOutput::Idle => {
                    self.t = start + self.cycle_ps;
                }
                StepOutput::Internal => self.t = start + self.cycle_ps,
                StepOutput::PostDma { qpn } => {
                    self.t = start + self.lookup_ps;
                    self.reads.push_back(Read { qpn, done: false });
                    out.actions.push(QpcAction::Fetch { qpn, at: self.t });
                }
                StepOutput::Response(r) => {
                    self.t = start + self.lookup_ps;
                    let c = r.channel.number();
                    let Ok(req) = self.requesters[c].respond(r.index) else {
                        panic!("QPC response for unknown index {} of channel {c}", r.index);
                    };
                    self.stats.served += 1;
                    out.responses.push(QpcReady {
                        req,
                        ready_at: self.t,
                        hit: r.served_by != ServedBy::DmaReturn,
                    });
                    let freed = self.t;
                    self.admit(c, freed);
                }
            }
        }
    }

    /// Marks the oldest outstanding read of `qpn` complete and reports the completed prefix
    /// of the issue order to the manager.
    fn complete_read(&mut self, qpn: u32) {
        if let Some(r) = self.reads.iter_mut().find(|r| !r.done && r.qpn == qpn) {
            r.done = true;
        }
        while self.reads.front().is_some_and(|r| r.done) {
            let Some(r) = self.reads.pop_front() else {
                break;
            };
            if let Err(e) = self.mgr.dma_returned(r.qpn) {
                panic!("QPC DMA return out of order: {e}");
            }
        }
    }
}

#[cold]
fn unreachable_cfg<T>() -> T {
    panic!("ooo_cap is clamped to 1..=256")
}

impl QpcManager for NonBlocking {
    fn submit(&mut self, req: QpcJob) {
        self.stats.requests += 1;
        let c = req.channel.number();
        if !self.stalled[c].is_empty() || self.requesters[c].free() == 0 {
            self.stats.index_stalls += 1;
        }
        self.stalled[c].push_back(req);
        self.admit(c, 0);
        let q: usize = self.stalled.iter().map(VecDeque::len).sum::<usize>()
            + self.arriving.iter().map(VecDeque::len).sum::<usize>();
        self.stats.max_queued = self.stats.max_queued.max(q as u64);
    }

    fn queued(&self, channel: Channel) -> u32 {
        let c = channel.number();
        (self.stalled[c].len() + self.arriving[c].len()) as u32
    }

    fn accepting(&self, channel: Channel) -> bool {
        let c = channel.number();
        self.stalled[c].is_empty() && self.requesters[c].free() > 0
    }

    fn pump(&mut self, now: TimePs, out: &mut QpcOutputs) {
        if !self.mgr.has_work() {
            self.t = self.t.max(now);
        }
        self.run(out);
    }

    fn on_fill(&mut self, now: TimePs, qpn: u32, out: &mut QpcOutputs) {
        if let Some(victim) = self.cache.fill(qpn) {
            out.actions.push(QpcAction::WriteBack {
                qpn: victim,
                at: now,
            });
        }
        self.complete_read(qpn);
        self.t = self.t.max(now);
        self.run(out);
    }

    fn stats(&self) -> QpcManagerStats {
        QpcManagerStats {
            cache: self.cache.stats,
            blocked_ps: 0,
            ..self.stats
        }
    }

    fn cache(&self) -> &QpcCache {
        &self.cache
    }

    fn cache_mut(&mut self) -> &mut QpcCache {
        &mut self.cache
    }

    fn onchip(&self) -> Vec<(&'static str, u64)> {
        let items = csrna::onchip::PendingStructuresMemory::new(
            self.ooo_cap,
            csrna::onchip::FieldWidths::default(),
        )
        .map(|m| m.items)
        .unwrap_or_default();
        let mut qr = 0;
        let mut pf = 0;
        let mut prt = 0;
        for it in &items {
            if it.name.starts_with("QR") {
                qr += it.bytes();
            } else if it.name.starts_with("pending FIFO") {
                pf += it.bytes();
            } else {
                prt += it.bytes();
            }
        }
        // The waiting SRAMs replace the baseline's waiting FIFOs (8 B records, as in FCFS).
        let waiting = self
            .requesters
            .iter()
            .map(|r| r.ooo_cap() as u64)
            .sum::<u64>()
            * 8;
        vec![
            ("qpc_requester_index_fifos", qr),
            ("qpc_pending_fifo", pf),
            ("qpc_pending_record_table", prt),
            ("qpc_waiting_srams", waiting),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::ports::QpcCont;

    fn req(qpn: u32, channel: Channel, frame: u32, at: TimePs) -> QpcJob {
        QpcJob {
            qpn,
            channel,
            cont: QpcCont::RxFrame(frame),
            at,
        }
    }

    #[test]
    fn a_miss_does_not_block_a_later_hit() {
        let mut cache = QpcCache::new(4, 256);
        cache.fill(2);
        let mut m = NonBlocking::new(cache, [16; 3], 1_000, 2_000);
        let mut out = QpcOutputs::default();
        m.submit(req(1, Channel::Requester, 10, 0)); // miss
        m.submit(req(2, Channel::Requester, 11, 0)); // hit on another QP
        m.pump(0, &mut out);
        assert_eq!(out.actions, vec![QpcAction::Fetch { qpn: 1, at: 2_000 }]);
        assert_eq!(out.responses.len(), 1);
        assert_eq!(out.responses[0].req.qpn, 2);
        assert!(out.responses[0].hit);
        out.responses.clear();
        m.on_fill(500_000, 1, &mut out);
        assert_eq!(out.responses.len(), 1);
        assert_eq!(out.responses[0].req.cont, QpcCont::RxFrame(10));
        assert!(!out.responses[0].hit);
    }

    #[test]
    fn same_qp_keeps_order() {
        let cache = QpcCache::new(4, 256);
        let mut m = NonBlocking::new(cache, [16; 3], 1_000, 2_000);
        let mut out = QpcOutputs::default();
        m.submit(req(1, Channel::Requester, 1, 0));
        m.submit(req(1, Channel::Requester, 2, 0));
        m.pump(0, &mut out);
        assert!(out.responses.is_empty());
        m.on_fill(500_000, 1, &mut out);
        let order: Vec<QpcCont> = out.responses.iter().map(|r| r.req.cont).collect();
        assert_eq!(order, vec![QpcCont::RxFrame(1), QpcCont::RxFrame(2)]);
    }

    #[test]
    fn no_free_index_stalls_the_channel() {
        let cache = QpcCache::new(4, 256);
        let mut m = NonBlocking::new(cache, [1; 3], 1_000, 2_000);
        let mut out = QpcOutputs::default();
        m.submit(req(1, Channel::Responder, 1, 0));
        assert!(!m.accepting(Channel::Responder));
        m.submit(req(2, Channel::Responder, 2, 0));
        m.pump(0, &mut out);
        assert_eq!(out.actions.len(), 1, "the second request has no index yet");
        m.on_fill(500_000, 1, &mut out);
        // The first is answered; the second then gets the index and misses in turn.
        assert_eq!(out.responses.len(), 1);
        assert_eq!(out.actions.len(), 2);
    }

    /// `nic.descriptor_fetch = "in_order"`: the descriptor unit has one index, so its second
    /// miss waits for the first's fill, while the requester's two misses are fetched at once.
    #[test]
    fn an_in_order_descriptor_unit_waits_while_the_others_do_not() {
        let cache = QpcCache::new(8, 256);
        let mut m = NonBlocking::new(cache, [1, 16, 16], 1_000, 2_000);
        let mut out = QpcOutputs::default();
        m.submit(req(1, Channel::Descriptor, 1, 0));
        m.submit(req(2, Channel::Descriptor, 2, 0));
        m.submit(req(3, Channel::Requester, 3, 0));
        m.submit(req(4, Channel::Requester, 4, 0));
        m.pump(0, &mut out);
        let fetched = |out: &QpcOutputs| -> Vec<u32> {
            out.actions
                .iter()
                .filter_map(|a| match a {
                    QpcAction::Fetch { qpn, .. } => Some(*qpn),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(fetched(&out), vec![1, 3, 4]);
        m.on_fill(500_000, 1, &mut out);
        m.pump(500_000, &mut out);
        assert_eq!(fetched(&out), vec![1, 3, 4, 2]);
    }
}
