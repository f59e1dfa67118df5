//! Completions: a core polls a CQE from its node's CQ ring; the application
//! (`Perftest::on_cqe`, in `mod.rs`) hands it to the test that waits for it.

use rnic_sim::TimePs;
use rnic_transport::Memory;

use super::{HostCosts, NodeApp};
use crate::host::driver::Cqe;

/// What a core's poll of a CQ ring found ([`NodeApp::poll_cqe`]).
pub enum Polled {
    /// No valid CQE at the ring's consumer index `ci` (an application error).
    Missing { ci: u64 },
    /// The CQE, consumed: the core is done with it at `t`; `woke`: the CQE found the core
    /// asleep on the completion channel (`host.cq_events`), an interrupt taken.
    Cqe { cqe: Cqe, t: TimePs, woke: bool },
}

impl NodeApp {
    /// A CQE landed in CQ `cq` (core `cq / 2`, send or receive ring) at `now`: the core
    /// polls and consumes it, publishes the consumer index in the doorbell record (where
    /// the NIC reads it), and pays the poll.
    #[inline]
    pub(crate) fn poll_cqe(
        &mut self,
        cq: u32,
        now: TimePs,
        costs: &HostCosts,
        mem: &mut impl Memory,
    ) -> Polled {
        let core = (cq / 2) as usize;
        let kind = (cq % 2) as usize;
        let ring = self.cores[core].cq[kind];
        let Some(cqe) = ring.cqe_at(ring.ci, &*mem) else {
            return Polled::Missing { ci: ring.ci };
        };
        self.cores[core].cq[kind].ci += 1;
        let ci = self.cores[core].cq[kind].ci;
        mem.write(ring.ci_record, &ci.to_le_bytes());
        let c = &mut self.cores[core];
        let (start, woke) = match costs.cq_event_ps {
            // Asleep on the completion channel: the interrupt wakes the thread, which then
            // reads the CQE from host memory as a polling core does (until 2026-12-02 the
            // woken thread read it at once, and -e with a wake-up of 0 beat polling).
            Some(wake) if c.busy <= now => (now + wake + costs.mem_latency_ps, true),
            // Polling: the core sees the CQE's DMA write after the host memory latency,
            // as it sees a received byte (write-lat), or when it is next free.
            _ => ((now + costs.mem_latency_ps).max(c.busy), false),
        };
        let t = start + costs.poll_cq_ps;
        c.busy = t;
        self.cpu_busy_ps += costs.poll_cq_ps;
        Polled::Cqe { cqe, t, woke }
    }

    /// The successful receive completions in the node's CQ rings that its cores have not
    /// polled, each as (its `wr_id`, its QP's pair), ring by ring in ring order. The NIC
    /// writes a CQE into host memory as it completes, and a core sees it a PCIe write and
    /// a poll later: a UC or UD run ends once no frame is left, so the CQEs of its last
    /// receives can be in their rings and not yet polled.
    pub(crate) fn unpolled_recvs(&self, mem: &impl Memory) -> Vec<(u64, u32)> {
        let mut found = Vec::new();
        for ring in self.cores.iter().flat_map(|c| c.cq.iter()) {
            for ci in ring.ci..ring.ci + (1 << ring.log_depth) {
                let Some(cqe) = ring.cqe_at(ci, mem) else {
                    break;
                };
                let qp = self.qps.get(cqe.qpn as usize);
                if let Some(qp) = qp.filter(|_| cqe.is_recv && cqe.status == 0) {
                    found.push((cqe.wr_id, qp.pair));
                }
            }
        }
        found
    }
}
