//! Completions: a core polls a CQE and hands it to the test that waits for it.

use rnic_sim::TimePs;
use rnic_transport::Memory;

use super::{HostCx, Perftest};
use crate::host::driver::wc_status_name;

impl Perftest {
    /// A CQE landed in CQ `cq` of `node`: the core polls and consumes it.
    pub(crate) fn on_cqe(&mut self, node: usize, now: TimePs, cq: u32, cx: &mut HostCx<'_>) {
        let core = (cq / 2) as usize;
        let kind = (cq % 2) as usize;
        let ring = self.nodes[node].cores[core].cq[kind];
        let Some(cqe) = ring.cqe_at(ring.ci, &cx.mems[node]) else {
            self.errors.note(format!(
                "node {node} CQ {cq}: no valid CQE at index {}",
                ring.ci
            ));
            return;
        };
        self.nodes[node].cores[core].cq[kind].ci += 1;
        // Publish the consumer index in the doorbell record, where the NIC reads it.
        let ci = self.nodes[node].cores[core].cq[kind].ci;
        Memory::write(&mut cx.mems[node], ring.ci_record, &ci.to_le_bytes());
        let c = &mut self.nodes[node].cores[core];
        let start = match self.costs.cq_event_ps {
            // Asleep on the completion channel: the interrupt wakes the thread.
            Some(wake) if c.busy <= now => {
                self.measure.cq_wakeups += 1;
                now + wake
            }
            // Polling: the core sees the CQE's DMA write after the host memory latency,
            // as it sees a received byte (write-lat), or when it is next free.
            _ => (now + self.costs.mem_latency_ps).max(c.busy),
        };
        let t = start + self.costs.poll_cq_ps;
        c.busy = t;
        self.nodes[node].cpu_busy_ps += self.costs.poll_cq_ps;
        if cqe.status != 0 {
            let name = wc_status_name(cqe.status);
            self.errors.note(format!(
                "node {node} QP {} completed a work request with {name}",
                cqe.qpn
            ));
            *self.errors.by_status.entry(name).or_default() += 1;
            self.bw_pair_failed(node, &cqe, t);
            return;
        }
        let Some(hq) = self.nodes[node].qps.get(cqe.qpn as usize).copied() else {
            return;
        };
        let i = hq.pair;
        // A shared receive queue's buffer holds what landed last, even after the test.
        if let Some(srq) = self.nodes[node].srq.as_mut().filter(|_| cqe.is_recv) {
            srq.took(cqe.wr_id, i);
        }
        if self.finished {
            return;
        }
        if !self.procs.list.is_empty() {
            if node == self.server && !cqe.is_recv {
                self.procs_cqe(t, i, cqe.wr_id, cx);
            }
            return;
        }
        if self.spec.is_lat() {
            self.lat_cqe(node, t, cqe.is_recv, cqe.qpn, i, cx);
            return;
        }
        self.bw_cqe(node, t, &cqe, i, cx);
    }

    /// The successful receive completions in `node`'s CQ rings that its cores have not
    /// polled, each as (its `wr_id`, its QP's pair), ring by ring in ring order. The NIC
    /// writes a CQE into host memory as it completes, and a core sees it a PCIe write and
    /// a poll later: a UC or UD run ends once no frame is left, so the CQEs of its last
    /// receives can be in their rings and not yet polled.
    pub(crate) fn unpolled_recvs(&self, node: usize, mem: &impl Memory) -> Vec<(u64, u32)> {
        let app = &self.nodes[node];
        let mut found = Vec::new();
        for ring in app.cores.iter().flat_map(|c| c.cq.iter()) {
            for ci in ring.ci..ring.ci + (1 << ring.log_depth) {
                let Some(cqe) = ring.cqe_at(ci, mem) else {
                    break;
                };
                let qp = app.qps.get(cqe.qpn as usize);
                if let Some(qp) = qp.filter(|_| cqe.is_recv && cqe.status == 0) {
                    found.push((cqe.wr_id, qp.pair));
                }
            }
        }
        found
    }
}
