//! The application cores one flow runs on, and what a core is (its busy time and its two CQ
//! rings). A host numbers its cores host-wide (a QP's core, its CQs' contexts), but each
//! flow runs on a range of its own, so a flow keeps only that range: with a workload of
//! thousands of flows on a fabric of a hundred hosts, a copy of every host core per flow per
//! host grew as nodes × flows² (gigabytes at a thousand flows).

use std::ops::{Index, IndexMut, Range};

use rnic_sim::TimePs;
use rnic_transport::Memory;

use super::driver::{decode_cqe, Cqe, CQE_BYTES};

/// A CQ ring as the application sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct CqRing {
    /// Base address.
    pub base: u64,
    /// log2 depth.
    pub log_depth: u32,
    /// CQEs consumed.
    pub ci: u64,
    /// Address of the doorbell record where the consumer index is published for the NIC.
    pub ci_record: u64,
}

impl CqRing {
    /// The CQE at consumer index `ci` in `mem`, if the NIC has written it (its owner bit
    /// is of `ci`'s pass over the ring).
    pub fn cqe_at(&self, ci: u64, mem: &impl Memory) -> Option<Cqe> {
        let slot = ci & ((1 << self.log_depth) - 1);
        let mut buf = [0u8; 64];
        mem.read(self.base + slot * CQE_BYTES, &mut buf);
        decode_cqe(&buf, ci >> self.log_depth)
    }
}

/// One application core.
#[derive(Debug, Clone, Default)]
pub struct Core {
    /// Busy until, ps.
    pub busy: TimePs,
    /// Send CQ (index 0) and receive CQ (index 1).
    pub cq: [CqRing; 2],
}

/// Cores `first .. first + len` of a host, indexed by their host-wide number.
#[derive(Debug, Clone, Default)]
pub struct CoreSet {
    first: usize,
    cores: Vec<Core>,
}

impl CoreSet {
    /// The cores numbered from `first` on.
    pub fn new(first: usize, cores: Vec<Core>) -> Self {
        CoreSet { first, cores }
    }

    /// The host-wide numbers of the cores.
    pub fn range(&self) -> Range<usize> {
        self.first..self.first + self.cores.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Core> {
        self.cores.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Core> {
        self.cores.iter_mut()
    }
}

impl Index<usize> for CoreSet {
    type Output = Core;
    fn index(&self, core: usize) -> &Core {
        &self.cores[core - self.first]
    }
}

impl IndexMut<usize> for CoreSet {
    fn index_mut(&mut self, core: usize) -> &mut Core {
        &mut self.cores[core - self.first]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cores_are_indexed_by_their_host_wide_number() {
        let mut set = CoreSet::new(5, vec![Core::default(); 2]);
        set[6].busy = 7;
        assert_eq!(set.range(), 5..7);
        assert_eq!(set[5].busy, 0);
        assert_eq!(set[6].busy, 7);
    }

    #[test]
    #[should_panic]
    fn a_core_outside_the_set_is_a_bug_not_a_wrong_answer() {
        let set = CoreSet::new(5, vec![Core::default(); 2]);
        let _ = &set[4];
    }
}
