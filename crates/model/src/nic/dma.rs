//! The DMA engine: host reads over PCIe limited by outstanding read tags (reads waiting for
//! tags are granted by the [`super::dma_arbiter`], each source's own reads in order), reads
//! from on-board DDR, and the in-flight table whose `u32` slots the events carry.
//!
//! A host read takes two events: the completion reaching the NIC (`arrive`, where the
//! downstream lane is reserved in arrival order) and its last byte (`complete`).

use rnic_sim::TimePs;

use super::ddr::Ddr;
use super::dma_arbiter::{Arbiter, ReadClass, ReadSource, Waiting};
use super::pcie::Pcie;
use crate::slab::Slab;

#[derive(Debug, Clone, Copy)]
struct InFlight<T> {
    len: u64,
    tags: u32,
    token: T,
    /// When the unit asked for the read, ps.
    asked_at: TimePs,
    class: ReadClass,
}

/// Counters of the DMA engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DmaStats {
    /// Host reads issued.
    pub host_reads: u64,
    /// DDR reads issued.
    pub ddr_reads: u64,
    /// Reads that had to wait for tags.
    pub tag_waits: u64,
    /// Most read tags in use at once.
    pub max_tags_in_use: u32,
    /// Host reads of QPC/MPT/MTT entries.
    pub ctx_reads: u64,
    /// Longest wait of a context read for its tags (asked → issued), ps.
    pub ctx_wait_max_ps: u64,
    /// Sum of the context reads' waits for tags, ps.
    pub ctx_wait_sum_ps: u64,
    /// Longest context read from asked to last byte in the NIC, ps.
    pub ctx_latency_max_ps: u64,
    /// Host reads of send/receive WQEs.
    pub wqe_reads: u64,
    /// Longest wait of a WQE read for its tags, ps.
    pub wqe_wait_max_ps: u64,
    /// Sum of the WQE reads' waits for tags, ps.
    pub wqe_wait_sum_ps: u64,
    /// Longest WQE read from asked to last byte, ps.
    pub wqe_latency_max_ps: u64,
    /// Payload stream reads (MRRS-sized requests of SEND/WRITE data and READ responses).
    pub payload_reads: u64,
    /// Longest wait of a payload request for its tag, ps.
    pub payload_wait_max_ps: u64,
    /// Sum of the payload requests' waits for tags, ps.
    pub payload_wait_sum_ps: u64,
    /// Longest payload request from asked to last byte, ps.
    pub payload_latency_max_ps: u64,
    /// Other host reads (atomic operands; whole payload reads of the `fifo` arbiter).
    pub other_reads: u64,
    /// Longest wait of another read for its tags, ps.
    pub other_wait_max_ps: u64,
    /// Sum of the other reads' waits for tags, ps.
    pub other_wait_sum_ps: u64,
    /// Longest other read from asked to last byte, ps.
    pub other_latency_max_ps: u64,
}

impl DmaStats {
    /// (reads, wait max, wait sum, latency max) of a class.
    fn class_mut(&mut self, c: ReadClass) -> (&mut u64, &mut u64, &mut u64, &mut u64) {
        match c {
            ReadClass::Context => (
                &mut self.ctx_reads,
                &mut self.ctx_wait_max_ps,
                &mut self.ctx_wait_sum_ps,
                &mut self.ctx_latency_max_ps,
            ),
            ReadClass::Wqe => (
                &mut self.wqe_reads,
                &mut self.wqe_wait_max_ps,
                &mut self.wqe_wait_sum_ps,
                &mut self.wqe_latency_max_ps,
            ),
            ReadClass::Payload => (
                &mut self.payload_reads,
                &mut self.payload_wait_max_ps,
                &mut self.payload_wait_sum_ps,
                &mut self.payload_latency_max_ps,
            ),
            ReadClass::Other => (
                &mut self.other_reads,
                &mut self.other_wait_max_ps,
                &mut self.other_wait_sum_ps,
                &mut self.other_latency_max_ps,
            ),
        }
    }
}

/// DMA engine carrying tokens of type `T` (what to do when a read completes).
#[derive(Debug)]
pub struct Dma<T> {
    max_tags: u32,
    tags_free: u32,
    waiting: Arbiter<T>,
    inflight: Slab<InFlight<T>>,
    /// Counters.
    pub stats: DmaStats,
}

impl<T: Copy> Dma<T> {
    /// An engine with `max_tags` read tags whose waiting reads `policy` orders.
    pub fn new(max_tags: u32, policy: crate::config::DmaReadArbiter) -> Self {
        Dma {
            max_tags,
            tags_free: max_tags,
            waiting: Arbiter::new(policy),
            inflight: Slab::new(),
            stats: DmaStats::default(),
        }
    }

    /// Reads `len` bytes of host memory for `source` from `at`. Returns the slot and the
    /// time the first completion reaches the NIC (call [`Dma::arrive`] then), or `None` when
    /// the read waits for tags (it is started by [`Dma::issue_waiting`]).
    pub fn read(
        &mut self,
        at: TimePs,
        len: u64,
        token: T,
        source: ReadSource,
        pcie: &mut Pcie,
    ) -> Option<(u32, TimePs)> {
        let w = Waiting {
            at,
            len,
            token,
            source,
        };
        let need = pcie.tags_for(len);
        if self.waiting.is_empty() && need <= self.tags_free {
            Some(self.start(w, at, need, pcie))
        } else {
            self.stats.tag_waits += 1;
            self.waiting.push(w);
            None
        }
    }

    /// Issues `w` at `issue_at` (≥ when it was asked for) with `tags` tags.
    fn start(
        &mut self,
        w: Waiting<T>,
        issue_at: TimePs,
        tags: u32,
        pcie: &mut Pcie,
    ) -> (u32, TimePs) {
        self.tags_free -= tags;
        self.stats.host_reads += 1;
        self.stats.max_tags_in_use = self
            .stats
            .max_tags_in_use
            .max(self.max_tags - self.tags_free);
        let class = w.source.class();
        let wait = issue_at.saturating_sub(w.at);
        let (n, wmax, wsum, _) = self.stats.class_mut(class);
        *n += 1;
        *wmax = (*wmax).max(wait);
        *wsum += wait;
        let first = pcie.read_request(issue_at, w.len);
        let slot = self.inflight.insert(InFlight {
            len: w.len,
            tags,
            token: w.token,
            asked_at: w.at,
            class,
        });
        (slot, first)
    }

    /// Reads `len` bytes of on-board DDR from `at`; returns the slot and the completion time
    /// (call [`Dma::complete`] then).
    pub fn read_ddr(&mut self, at: TimePs, len: u64, token: T, ddr: &mut Ddr) -> (u32, TimePs) {
        self.stats.ddr_reads += 1;
        let done = ddr.read(at, len);
        (
            self.inflight.insert(InFlight {
                len,
                tags: 0,
                token,
                asked_at: at,
                class: ReadClass::Context,
            }),
            done,
        )
    }

    /// The completion of `slot` reaches the NIC at `now`; returns when its last byte is in.
    pub fn arrive(&mut self, slot: u32, now: TimePs, pcie: &mut Pcie) -> TimePs {
        let len = self.inflight.get(slot).map_or(0, |r| r.len);
        pcie.read_completion(now, len)
    }

    /// The read of `slot` is complete at `now`: frees its tags and returns its token and
    /// length.
    pub fn complete(&mut self, slot: u32, now: TimePs) -> Option<(T, u64)> {
        let r = self.inflight.remove(slot)?;
        self.tags_free += r.tags;
        if r.tags > 0 {
            let (_, _, _, lmax) = self.stats.class_mut(r.class);
            *lmax = (*lmax).max(now.saturating_sub(r.asked_at));
        }
        Some((r.token, r.len))
    }

    /// Starts waiting reads that now have tags, in the arbiter's order, appending
    /// `(slot, first_byte_time)`.
    pub fn issue_waiting(&mut self, now: TimePs, pcie: &mut Pcie, out: &mut Vec<(u32, TimePs)>) {
        loop {
            let free = self.tags_free;
            let Some(w) = self.waiting.pop_if(|w| pcie.tags_for(w.len) <= free) else {
                break;
            };
            let need = pcie.tags_for(w.len);
            out.push(self.start(w, w.at.max(now), need, pcie));
        }
    }

    /// Reads in flight.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }
}

impl<T> crate::stats::Report for Dma<T> {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ModelParams;

    #[test]
    fn tags_limit_outstanding_reads() {
        let mut p = ModelParams::baseline().pcie;
        p.max_read_tags = 2;
        let mut pcie = Pcie::new(p);
        let mut dma: Dma<u8> = Dma::new(2, crate::config::DmaReadArbiter::RoundRobin);
        let src = ReadSource::Other;
        assert!(dma.read(0, 64, 1, src, &mut pcie).is_some());
        assert!(dma.read(0, 64, 2, src, &mut pcie).is_some());
        assert!(dma.read(0, 64, 3, src, &mut pcie).is_none());
        assert_eq!(dma.complete(0, 600_000), Some((1, 64)));
        let mut out = Vec::new();
        dma.issue_waiting(1_000, &mut pcie, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn uncontended_read_matches_latency_formula() {
        let p = ModelParams::baseline().pcie;
        let mut pcie = Pcie::new(p);
        let lat = pcie.read_latency(64);
        let mut dma: Dma<u8> = Dma::new(256, crate::config::DmaReadArbiter::RoundRobin);
        let (slot, first) = dma.read(0, 64, 0, ReadSource::Other, &mut pcie).unwrap();
        let done = dma.arrive(slot, first, &mut pcie);
        assert_eq!(done, lat);
        // 24 B request (1.5 ns) + 500 ns + 88 B completion (5.5 ns)
        assert_eq!(lat, 507_000);
    }
}
