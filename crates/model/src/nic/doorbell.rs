//! The doorbell unit: an MMIO write carrying a QP's new producer index lands in the NIC; the
//! unit records it and, for a send queue, makes the QP active in the scheduler. RQ doorbells
//! make the NIC fetch the new receive WQEs (they are kept on chip for incoming SENDs).

use rnic_sim::TimePs;

use super::unit::Unit;
use super::DmaToken;
use crate::event::Ev;
use crate::world::World;

/// Counters of the doorbell unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct DoorbellStats {
    /// SQ doorbells.
    pub sq: u64,
    /// RQ doorbells.
    pub rq: u64,
}

/// The doorbell unit.
#[derive(Debug, Clone)]
pub struct DoorbellUnit {
    /// The pipeline unit.
    pub unit: Unit,
    /// Counters.
    pub stats: DoorbellStats,
}

impl DoorbellUnit {
    /// A unit of II `ii_ps`.
    pub fn new(ii_ps: TimePs) -> Self {
        DoorbellUnit {
            unit: Unit::new(ii_ps),
            stats: DoorbellStats::default(),
        }
    }
}

impl World {
    /// An SQ doorbell of `qpn` with producer index `pi` reaches node `n` at `now`.
    pub(crate) fn on_doorbell(&mut self, n: usize, now: TimePs, qpn: u32, pi: u32) {
        let nic = &mut self.nodes[n].nic;
        let t = nic.doorbell.unit.serve(now);
        nic.doorbell.stats.sq += 1;
        let Some(qp) = nic.qps.get_mut(qpn as usize) else {
            return;
        };
        if pi.wrapping_sub(qp.sq_pi) as i32 > 0 {
            qp.sq_pi = pi;
        }
        self.sched_activate(n, qpn, t);
    }

    /// An RQ doorbell: fetch the new receive WQEs (one DMA read per `wqes_per_fetch`).
    pub(crate) fn on_doorbell_rq(&mut self, n: usize, now: TimePs, qpn: u32, pi: u32) {
        let per = self.p.nic.wqes_per_fetch;
        let wqe = self.p.nic.wqe_bytes;
        let nic = &mut self.nodes[n].nic;
        let t = nic.doorbell.unit.serve(now);
        nic.doorbell.stats.rq += 1;
        let Some(qp) = nic.qps.get_mut(qpn as usize) else {
            return;
        };
        if pi.wrapping_sub(qp.rq_pi) as i32 > 0 {
            qp.rq_pi = pi;
        }
        loop {
            let qp = &mut self.nodes[n].nic.qps[qpn as usize];
            if qp.rq_pi == qp.rq_fetched {
                break;
            }
            let first = qp.rq_fetched;
            let to_wrap = qp.rq_mask + 1 - (first & qp.rq_mask);
            let k = qp.rq_pi.wrapping_sub(first).min(per).min(to_wrap);
            qp.rq_fetched = first.wrapping_add(k);
            let slot = self.nodes[n].nic.rq_reads.insert((qpn, first, k));
            self.host_read(n, t, u64::from(k) * wqe, DmaToken::RqWqe(slot));
        }
    }

    /// A host core stores a doorbell: the MMIO write crosses PCIe host → NIC.
    pub(crate) fn on_host_mmio(&mut self, n: usize, now: TimePs, qpn: u32, pi: u32, rq: bool) {
        let bytes = self.p.pcie.doorbell_bytes;
        let at = self.nodes[n].nic.pcie.mmio_write(now, bytes);
        let node = n as u32;
        let ev = if rq {
            Ev::DoorbellRq { node, qpn, pi }
        } else {
            Ev::Doorbell { node, qpn, pi }
        };
        self.q.push(at, ev);
    }
}
