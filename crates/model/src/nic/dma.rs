//! The DMA engine: host reads over PCIe limited by outstanding read tags (a strict FIFO of
//! reads waiting for tags, so per-QP order is kept), reads from on-board DDR, and the
//! in-flight table whose `u32` slots the events carry.
//!
//! A host read takes two events: the completion reaching the NIC (`arrive`, where the
//! downstream lane is reserved in arrival order) and its last byte (`complete`).

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::ddr::Ddr;
use super::pcie::Pcie;
use crate::slab::Slab;

#[derive(Debug, Clone, Copy)]
struct InFlight<T> {
    len: u64,
    tags: u32,
    token: T,
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
}

/// DMA engine carrying tokens of type `T` (what to do when a read completes).
#[derive(Debug)]
pub struct Dma<T> {
    max_tags: u32,
    tags_free: u32,
    waiting: VecDeque<(TimePs, u64, T)>,
    inflight: Slab<InFlight<T>>,
    /// Counters.
    pub stats: DmaStats,
}

impl<T: Copy> Dma<T> {
    /// An engine with `max_tags` read tags.
    pub fn new(max_tags: u32) -> Self {
        Dma {
            max_tags,
            tags_free: max_tags,
            waiting: VecDeque::new(),
            inflight: Slab::new(),
            stats: DmaStats::default(),
        }
    }

    /// Reads `len` bytes of host memory from `at`. Returns the slot and the time the first
    /// completion reaches the NIC (call [`Dma::arrive`] then), or `None` when the read waits
    /// for tags (it is started by [`Dma::issue_waiting`]).
    pub fn read(
        &mut self,
        at: TimePs,
        len: u64,
        token: T,
        pcie: &mut Pcie,
    ) -> Option<(u32, TimePs)> {
        let need = pcie.tags_for(len);
        if self.waiting.is_empty() && need <= self.tags_free {
            Some(self.start(at, len, token, need, pcie))
        } else {
            self.stats.tag_waits += 1;
            self.waiting.push_back((at, len, token));
            None
        }
    }

    fn start(
        &mut self,
        at: TimePs,
        len: u64,
        token: T,
        tags: u32,
        pcie: &mut Pcie,
    ) -> (u32, TimePs) {
        self.tags_free -= tags;
        self.stats.host_reads += 1;
        self.stats.max_tags_in_use = self
            .stats
            .max_tags_in_use
            .max(self.max_tags - self.tags_free);
        let first = pcie.read_request(at, len);
        (self.inflight.insert(InFlight { len, tags, token }), first)
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
            }),
            done,
        )
    }

    /// The completion of `slot` reaches the NIC at `now`; returns when its last byte is in.
    pub fn arrive(&mut self, slot: u32, now: TimePs, pcie: &mut Pcie) -> TimePs {
        let len = self.inflight.get(slot).map_or(0, |r| r.len);
        pcie.read_completion(now, len)
    }

    /// The read of `slot` is complete: frees its tags and returns its token.
    pub fn complete(&mut self, slot: u32) -> Option<T> {
        let r = self.inflight.remove(slot)?;
        self.tags_free += r.tags;
        Some(r.token)
    }

    /// Starts waiting reads that now have tags, appending `(slot, first_byte_time)`.
    pub fn issue_waiting(&mut self, now: TimePs, pcie: &mut Pcie, out: &mut Vec<(u32, TimePs)>) {
        while let Some(&(at, len, token)) = self.waiting.front() {
            let need = pcie.tags_for(len);
            if need > self.tags_free {
                break;
            }
            self.waiting.pop_front();
            out.push(self.start(at.max(now), len, token, need, pcie));
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
        let mut dma: Dma<u8> = Dma::new(2);
        assert!(dma.read(0, 64, 1, &mut pcie).is_some());
        assert!(dma.read(0, 64, 2, &mut pcie).is_some());
        assert!(dma.read(0, 64, 3, &mut pcie).is_none());
        assert_eq!(dma.complete(0), Some(1));
        let mut out = Vec::new();
        dma.issue_waiting(1_000, &mut pcie, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn uncontended_read_matches_latency_formula() {
        let p = ModelParams::baseline().pcie;
        let mut pcie = Pcie::new(p);
        let lat = pcie.read_latency(64);
        let mut dma: Dma<u8> = Dma::new(256);
        let (slot, first) = dma.read(0, 64, 0, &mut pcie).unwrap();
        let done = dma.arrive(slot, first, &mut pcie);
        assert_eq!(done, lat);
        // 24 B request (1.5 ns) + 500 ns + 88 B completion (5.5 ns)
        assert_eq!(lat, 507_000);
    }
}
