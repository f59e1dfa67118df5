//! The host interface, one stage of the NIC: the doorbell unit (MMIO writes of producer
//! indices), the CQ unit (CQE writes), the receive-WQE reads in flight, and which QP's CQs
//! each host core drains.

use rnic_sim::TimePs;

use super::cq::CqUnit;
use super::cx::NicCx;
use super::doorbell::{self, DoorbellUnit};
use super::pcie::Pcie;
use super::qp_table::QpHw;
use crate::event::NicEv;
use crate::params::ModelParams;
use crate::slab::Slab;

/// The NIC's units that face the host's driver.
pub struct HostIf {
    /// Doorbell unit.
    pub doorbell: DoorbellUnit,
    /// CQ unit.
    pub cq: CqUnit,
    /// Receive-WQE reads in flight: (qpn, first index, count).
    pub rq_reads: Slab<(u32, u32, u32)>,
    /// Shared receive queues (host.use_srq): the QP whose RQ ring holds each SRQ's WQEs, and
    /// the SRQ the fetched WQEs go to. Few, and looked up only when receive WQEs arrive.
    pub srq_rings: Vec<(u32, rnic_transport::SrqId)>,
    /// Schedule `Landed` events for WRITE payloads (write-lat polls memory).
    pub watch_writes: bool,
    /// One QPN per application core (to drain that core's CQs); `u32::MAX` for none.
    core_qpn: Vec<u32>,
    /// Bytes of one doorbell's MMIO write.
    doorbell_bytes: u64,
}

impl HostIf {
    /// The shared receive queue whose WQEs QP `ring_qpn`'s RQ ring holds, if any.
    pub fn srq_of_ring(&self, ring_qpn: u32) -> Option<rnic_transport::SrqId> {
        (self.srq_rings.iter())
            .find(|&&(q, _)| q == ring_qpn)
            .map(|&(_, id)| id)
    }

    /// The QP whose RQ ring holds the receive WQEs of a QP on shared receive queue `srq`
    /// (`None`: its own ring, `qpn`'s).
    pub fn ring_of(&self, qpn: u32, srq: Option<rnic_transport::SrqId>) -> u32 {
        let Some(srq) = srq else {
            return qpn;
        };
        (self.srq_rings.iter())
            .find(|&&(_, id)| id == srq)
            .map_or(qpn, |&(ring, _)| ring)
    }

    /// The host interface of a NIC with the parameters `p`.
    pub fn new(p: &ModelParams) -> Self {
        HostIf {
            doorbell: DoorbellUnit::new(p.nic.doorbell_ps),
            cq: CqUnit::new(p.nic.cqe_ps),
            rq_reads: Slab::new(),
            srq_rings: Vec::new(),
            watch_writes: false,
            core_qpn: Vec::new(),
            doorbell_bytes: p.pcie.doorbell_bytes,
        }
    }

    /// A host core stores a doorbell at `now`: the MMIO write crosses `pcie` host → NIC,
    /// and the doorbell unit takes it when it arrives.
    pub fn mmio(
        &mut self,
        now: TimePs,
        qpn: u32,
        pi: u32,
        rq: bool,
        pcie: &mut Pcie,
        cx: &mut NicCx<'_>,
    ) {
        let at = pcie.mmio_write(now, self.doorbell_bytes);
        let ev = if rq {
            NicEv::DoorbellRq { qpn, pi }
        } else {
            NicEv::Doorbell { qpn, pi }
        };
        cx.at(at, ev);
    }

    /// An RQ doorbell of `qpn` with producer index `pi` reaches the NIC at `now`: the
    /// doorbell unit rings, and the new receive WQEs are fetched, one read of at most
    /// `nic.wqes_per_fetch` WQEs (never across the ring's end) each, recorded in
    /// `rq_reads`. `read(at, bytes, slot)` issues one read; the memory path does the reading.
    pub fn on_doorbell_rq(
        &mut self,
        (now, qpn, pi): (TimePs, u32, u32),
        qps: &mut [QpHw],
        p: &ModelParams,
        mut read: impl FnMut(TimePs, u64, u32),
    ) {
        let t = self.doorbell.ring_rq(now);
        let Some(qp) = qps.get_mut(qpn as usize) else {
            return;
        };
        doorbell::advance(&mut qp.rq_pi, pi);
        while qp.rq_pi != qp.rq_fetched {
            let first = qp.rq_fetched;
            let to_wrap = qp.rq_mask + 1 - (first & qp.rq_mask);
            let k = qp
                .rq_pi
                .wrapping_sub(first)
                .min(p.nic.wqes_per_fetch)
                .min(to_wrap);
            qp.rq_fetched = first.wrapping_add(k);
            let slot = self.rq_reads.insert((qpn, first, k));
            read(t, u64::from(k) * p.nic.wqe_bytes, slot);
        }
    }

    /// QP `qpn` runs on host core `core`: the first QP of a core names that core's CQs.
    pub fn note_core(&mut self, core: u16, qpn: u32) {
        let c = usize::from(core);
        if c >= self.core_qpn.len() {
            self.core_qpn.resize(c + 1, u32::MAX);
        }
        if self.core_qpn[c] == u32::MAX {
            self.core_qpn[c] = qpn;
        }
    }

    /// One QPN per core whose CQs may hold completions.
    pub fn cq_core_qpns(&self) -> Vec<u32> {
        self.core_qpn
            .iter()
            .copied()
            .filter(|&q| q != u32::MAX)
            .collect()
    }
}

impl crate::stats::Report for HostIf {
    /// The doorbell unit's counters (`doorbell`) and the CQ unit's (`cq`).
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        self.doorbell.report(&format!("{prefix}.doorbell"), reg);
        self.cq.report(&format!("{prefix}.cq"), reg);
    }
}
