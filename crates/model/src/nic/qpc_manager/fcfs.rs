//! First-come-first-served QPC manager (csRNA §3, Fig. 2): one request FIFO served in
//! order; a miss stops the FIFO until its entry arrives, so later requests — hits on other
//! QPs included — wait behind it (head-of-line blocking). The requesters keep their
//! information in waiting FIFOs; here that is the continuation each job carries back.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::{Channel, QpcAction, QpcJob, QpcManager, QpcManagerStats, QpcOutputs, QpcReady};
#[cfg(test)]
use crate::nic::ports::QpcCont;
use crate::nic::qpc_cache::QpcCache;

/// Bytes of one request-FIFO / waiting-FIFO record in hardware (QPN 3 B + info 5 B).
const FIFO_RECORD_BYTES: u64 = 8;

/// The FCFS manager.
#[derive(Debug)]
pub struct Fcfs {
    cache: QpcCache,
    fifo: VecDeque<QpcJob>,
    queued_by_channel: [u32; 3],
    free_at: TimePs,
    /// `Some((qpn, since))` while a miss is outstanding.
    blocked: Option<(u32, TimePs)>,
    lookup_ps: TimePs,
    fifo_depth: u32,
    stats: QpcManagerStats,
}

impl Fcfs {
    /// A manager over `cache`, each lookup taking `lookup_ps`; `fifo_depth` is the depth of
    /// the hardware request FIFO (for on-chip accounting and the scheduler's backpressure).
    pub fn new(cache: QpcCache, lookup_ps: TimePs, fifo_depth: u32) -> Self {
        Fcfs {
            cache,
            fifo: VecDeque::new(),
            queued_by_channel: [0; 3],
            free_at: 0,
            blocked: None,
            lookup_ps,
            fifo_depth,
            stats: QpcManagerStats::default(),
        }
    }

    fn pop_head(&mut self) -> Option<QpcJob> {
        let r = self.fifo.pop_front()?;
        self.queued_by_channel[r.channel.number()] -= 1;
        Some(r)
    }
}

impl QpcManager for Fcfs {
    fn submit(&mut self, req: QpcJob) {
        self.stats.requests += 1;
        self.queued_by_channel[req.channel.number()] += 1;
        self.fifo.push_back(req);
        self.stats.max_queued = self.stats.max_queued.max(self.fifo.len() as u64);
    }

    fn queued(&self, channel: Channel) -> u32 {
        self.queued_by_channel[channel.number()]
    }

    fn accepting(&self, channel: Channel) -> bool {
        self.queued(channel) < self.fifo_depth
    }

    fn pump(&mut self, _now: TimePs, out: &mut QpcOutputs) {
        while self.blocked.is_none() {
            let Some(&head) = self.fifo.front() else {
                break;
            };
            let start = head.at.max(self.free_at);
            let done = start + self.lookup_ps;
            self.free_at = done;
            if self.cache.lookup(head.qpn) {
                self.pop_head();
                self.stats.served += 1;
                out.responses.push(QpcReady {
                    req: head,
                    ready_at: done,
                    hit: true,
                });
            } else {
                self.blocked = Some((head.qpn, done));
                out.actions.push(QpcAction::Fetch {
                    qpn: head.qpn,
                    at: done,
                });
            }
        }
    }

    fn on_fill(&mut self, now: TimePs, qpn: u32, out: &mut QpcOutputs) {
        let Some((bq, since)) = self.blocked else {
            return;
        };
        debug_assert_eq!(bq, qpn);
        self.blocked = None;
        self.stats.blocked_ps += now.saturating_sub(since);
        if let Some(victim) = self.cache.fill(qpn) {
            out.actions.push(QpcAction::WriteBack {
                qpn: victim,
                at: now,
            });
        }
        if let Some(head) = self.pop_head() {
            let done = now.max(self.free_at) + self.lookup_ps;
            self.free_at = done;
            self.stats.served += 1;
            out.responses.push(QpcReady {
                req: head,
                ready_at: done,
                hit: false,
            });
        }
        self.pump(now, out);
    }

    fn stats(&self) -> QpcManagerStats {
        QpcManagerStats {
            cache: self.cache.stats,
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
        let d = u64::from(self.fifo_depth) * FIFO_RECORD_BYTES;
        vec![("qpc_request_fifo", d), ("qpc_waiting_fifos", 3 * d)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(qpn: u32, at: TimePs) -> QpcJob {
        QpcJob {
            qpn,
            channel: Channel::Descriptor,
            cont: QpcCont::RxFrame(qpn),
            at,
        }
    }

    #[test]
    fn a_miss_blocks_later_hits() {
        let mut cache = QpcCache::new(4, 256);
        cache.fill(2);
        let mut m = Fcfs::new(cache, 2_000, 16);
        let mut out = QpcOutputs::default();
        m.submit(req(1, 0)); // miss
        m.submit(req(2, 0)); // hit, but behind the miss
        m.pump(0, &mut out);
        assert!(out.responses.is_empty());
        assert_eq!(out.actions, vec![QpcAction::Fetch { qpn: 1, at: 2_000 }]);
        out.actions.clear();
        m.on_fill(500_000, 1, &mut out);
        let ready: Vec<_> = out
            .responses
            .iter()
            .map(|r| (r.req.qpn, r.ready_at, r.hit))
            .collect();
        assert_eq!(ready, vec![(1, 502_000, false), (2, 504_000, true)]);
        assert_eq!(m.stats().blocked_ps, 498_000);
    }

    #[test]
    fn hits_are_pipelined_at_the_lookup_interval() {
        let mut cache = QpcCache::new(4, 256);
        cache.fill(1);
        cache.fill(2);
        let mut m = Fcfs::new(cache, 2_000, 16);
        let mut out = QpcOutputs::default();
        m.submit(req(1, 0));
        m.submit(req(2, 0));
        m.pump(0, &mut out);
        let t: Vec<_> = out.responses.iter().map(|r| r.ready_at).collect();
        assert_eq!(t, vec![2_000, 4_000]);
    }
}
