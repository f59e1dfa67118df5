//! Posting: the application builds WQEs into the SQ (and receive WQEs into the RQ), pays
//! the host's CPU costs, and rings the doorbell.
//!
//! Posting is a function of the parts it touches ([`PostParts`], borrowed from the
//! [`Perftest`](super::Perftest) by `Perftest::post_parts`), not a method of the whole
//! application: it writes the nodes' rings and cores and the pairs' post counts, and stamps
//! the measurement; the test that posts (a fill, a completion, the ping-pong) decides when.

use rnic_sim::TimePs;
use rnic_transport::{RemoteAddr, Sge, WrOpcode};

use super::{HostCosts, HostCx, Measurement, NodeApps, Pair, TestSpec};
use crate::event::{Ev, NicEv, PrefetchEv};
use crate::host::driver::{encode_rq_wqe, SqWqe};
use crate::workload::{AtomicOp, Verb};

/// What posting touches of the application: the test's spec and the CPU costs (read), the
/// nodes' rings and cores, the pairs' post counts and the measurement.
pub struct PostParts<'a> {
    /// What the test is.
    pub spec: &'a TestSpec,
    /// The host's CPU costs, ps.
    pub costs: &'a HostCosts,
    /// The flow's server node.
    pub server: usize,
    /// Per node the flow uses.
    pub nodes: &'a mut NodeApps,
    /// Pairs.
    pub pairs: &'a mut [Pair],
    /// What is counted.
    pub measure: &'a mut Measurement,
    /// The posts count for the measurement (a bandwidth test's warm-up does not).
    pub measured: bool,
}

impl PostParts<'_> {
    /// Builds the WQE of the next operation of pair `i` posted by `node` (the initiator).
    fn wqe(&self, node: usize, i: u32, wr_id: u64, peer: usize, remote_count: u64) -> SqWqe {
        let a = self;
        let (local, remote) = (&a.nodes[node], &a.nodes[peer]);
        let size = a.spec.op_size(i, a.pairs[i as usize].posted);
        // WRITE and SEND read the local source buffer (and WRITE lands in the peer's
        // destination); READ lands in the local destination from the peer's source; an
        // atomic works on both destinations.
        let (lkey, rkey) = match a.spec.test.verb() {
            Verb::Write | Verb::Send => (local.src_keys(a.spec, i).0, remote.dst_keys(a.spec, i).1),
            Verb::Read => (local.dst_keys(a.spec, i).0, remote.src_keys(a.spec, i).1),
            Verb::Atomic => (local.dst_keys(a.spec, i).0, remote.dst_keys(a.spec, i).1),
        };
        let mut w = SqWqe {
            signaled: a.spec.signaled(a.pairs[i as usize].posted),
            wr_id,
            ..SqWqe::default()
        };
        match a.spec.test.verb() {
            Verb::Write => {
                w.opcode = WrOpcode::Write;
                w.sge = Sge {
                    addr: local.src_buffer(a.spec, i),
                    len: size,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: remote.dst_buffer(a.spec, i),
                    rkey,
                };
            }
            Verb::Send => {
                w.opcode = WrOpcode::Send;
                w.sge = Sge {
                    addr: local.src_buffer(a.spec, i),
                    len: size,
                    lkey,
                };
            }
            Verb::Read => {
                w.opcode = WrOpcode::Read;
                w.sge = Sge {
                    addr: local.dst_buffer(a.spec, i),
                    len: size,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: remote.src_buffer(a.spec, i),
                    rkey,
                };
            }
            Verb::Atomic => {
                w.sge = Sge {
                    addr: local.dst_buffer(a.spec, i),
                    len: 8,
                    lkey,
                };
                w.remote = RemoteAddr {
                    va: remote.dst_buffer(a.spec, i),
                    rkey,
                };
                match a.spec.atomic {
                    AtomicOp::FetchAndAdd => {
                        w.opcode = WrOpcode::FetchAdd;
                        w.compare_add = 1;
                    }
                    AtomicOp::CmpAndSwap => {
                        w.opcode = WrOpcode::CompareSwap;
                        w.compare_add = remote_count;
                        w.swap = remote_count + 1;
                    }
                }
            }
        }
        w.inline = matches!(a.spec.test.verb(), Verb::Write | Verb::Send)
            && size > 0
            && size <= a.spec.inline_bytes;
        w
    }

    /// A core of `node` posts one send WQE on `qpn` starting at `at`; returns when the
    /// core is free again. The doorbell is stored at the end of the post.
    pub(crate) fn post(self, node: usize, qpn: u32, at: TimePs, cx: &mut HostCx<'_>) -> TimePs {
        self.list(node, qpn, 1, at, cx)
    }

    /// A core of `node` posts a list of `k` send WQEs on `qpn` starting at `at` (perftest
    /// `-l`): each costs `post_ps` of the core; one doorbell, stored after the last.
    pub(super) fn list(
        mut self,
        node: usize,
        qpn: u32,
        k: u32,
        at: TimePs,
        cx: &mut HostCx<'_>,
    ) -> TimePs {
        if self.measured {
            if let Some(peak) = self.measure.peak.as_mut() {
                // perftest's tposted: once per list, as its first WQE is begun.
                let core = usize::from(self.nodes[node].qps[qpn as usize].core);
                peak.post(at.max(self.nodes[node].cores[core].busy), u64::from(k));
            }
        }
        let mut end = at;
        for _ in 0..k {
            end = self.write_wqe(node, qpn, end, cx);
        }
        let pi = self.nodes[node].qps[qpn as usize].sq_pi;
        cx.q.push(
            end,
            Ev::Nic {
                node: node as u32,
                ev: NicEv::Mmio { qpn, pi },
            },
        );
        end
    }

    /// A core of `node` writes the next send WQE of `qpn` into its SQ from `at`; returns
    /// when the core is free again.
    fn write_wqe(&mut self, node: usize, qpn: u32, at: TimePs, cx: &mut HostCx<'_>) -> TimePs {
        let hq = self.nodes[node].qps[qpn as usize];
        let i = hq.pair;
        let core = usize::from(hq.core);
        let start = at.max(self.nodes[node].cores[core].busy);
        let pair = self.pairs[i as usize];
        let peer = if node == self.server {
            pair.c_node as usize
        } else {
            self.server
        };
        if self.costs.sw_prefetch {
            // The prefetch register first, then the WQE is built (wqe_prep) while the NIC
            // fetches the QP's context.
            cx.q.push(
                start,
                Ev::Nic {
                    node: node as u32,
                    ev: NicEv::Prefetch(PrefetchEv::Mmio { qpn }),
                },
            );
        }
        let w = self.wqe(node, i, start, peer, pair.posted);
        if w.opcode.is_atomic() {
            // The atomic oracle checks the value it returns against these operands.
            let ops = crate::atomic_oracle::AtomicOperands {
                fetch_add: w.opcode == WrOpcode::FetchAdd,
                compare_add: w.compare_add,
                swap: w.swap,
            };
            cx.oracle.atomics.posted(node, qpn, ops);
        }
        let slot = hq.sq_pi & hq.sq_mask;
        let at_slot = hq.sq_base + u64::from(slot) * self.spec.wqe_bytes;
        rnic_transport::Memory::write(&mut cx.mems[node], at_slot, &w.encode());
        if w.inline {
            // The inline copy of the payload, after the WQE in its slot (the NIC's WQE read
            // carries it; the transport gathers the same bytes from the buffer).
            let mut data = [0u8; 960];
            let data = &mut data[..w.sge.len as usize];
            rnic_transport::Memory::read(&cx.mems[node], w.sge.addr, data);
            rnic_transport::Memory::write(&mut cx.mems[node], at_slot + 64, data);
        }
        let pi = hq.sq_pi.wrapping_add(1);
        self.nodes[node].qps[qpn as usize].sq_pi = pi;
        self.pairs[i as usize].posted += 1;
        let end = start + self.costs.wqe_prep_ps + self.costs.post_send_ps;
        self.nodes[node].cores[core].busy = end;
        self.nodes[node].cpu_busy_ps += end - start;
        if self.measured {
            self.measure.posted(start);
        }
        end
    }

    /// Posts `k` receive WQEs on `qpn` of `node` (into the pair's destination buffer) with
    /// one doorbell. Each WQE costs the core `host.post_send_ns`, as a send list's do; the
    /// receives pre-posted before the test (`setup`) cost nothing, as perftest posts them
    /// before its barrier. With a shared receive queue the WQEs go into its ring, each
    /// with a free buffer of its own (its slot is the WQE's `wr_id`).
    pub(crate) fn recv(
        self,
        node: usize,
        qpn: u32,
        k: u32,
        at: TimePs,
        setup: bool,
        cx: &mut HostCx<'_>,
    ) -> TimePs {
        let hq = self.nodes[node].qps[qpn as usize];
        let core = usize::from(hq.core);
        let start = at.max(self.nodes[node].cores[core].busy);
        let ring_qpn = self.nodes[node].srq.as_ref().map_or(qpn, |s| s.ring_qpn);
        let ring = self.nodes[node].qps[ring_qpn as usize];
        let len = self.spec.size_bytes.max(1) + self.spec.grh_bytes as u32;
        let mut pi = ring.rq_pi;
        for _ in 0..k {
            // The buffer: the pair's, or a free one of the shared receive queue's.
            let (buffer, wr_id) = match self.nodes[node].srq.as_mut() {
                Some(srq) => match srq.free.pop() {
                    Some(b) => (b, u64::from(b)),
                    None => break,
                },
                None => (hq.pair, u64::from(pi)),
            };
            let sge = Sge {
                addr: self.nodes[node].dst_buffer(self.spec, buffer),
                len,
                lkey: self.nodes[node].dst_keys(self.spec, buffer).0,
            };
            let slot = pi & ring.rq_mask;
            rnic_transport::Memory::write(
                &mut cx.mems[node],
                ring.rq_base + u64::from(slot) * self.spec.wqe_bytes,
                &encode_rq_wqe(wr_id, sge),
            );
            pi = pi.wrapping_add(1);
        }
        let k = pi.wrapping_sub(ring.rq_pi);
        if k == 0 && self.nodes[node].srq.is_some() {
            // Every buffer of the shared receive queue is posted already (its first QP
            // posted them all): nothing to post, no doorbell.
            return start;
        }
        self.nodes[node].qps[ring_qpn as usize].rq_pi = pi;
        self.measure.receives_posted += u64::from(k);
        let end = if setup {
            start
        } else {
            start + self.costs.post_send_ps * TimePs::from(k)
        };
        self.nodes[node].cores[core].busy = end;
        self.nodes[node].cpu_busy_ps += end - start;
        // Receives posted before the test rang their doorbell during setup, before the
        // barrier: the NIC has it when the test starts (it does not queue on the PCIe link
        // behind the test's traffic).
        let ev = if setup {
            NicEv::DoorbellRq { qpn: ring_qpn, pi }
        } else {
            NicEv::MmioRq { qpn: ring_qpn, pi }
        };
        cx.q.push(
            end,
            Ev::Nic {
                node: node as u32,
                ev,
            },
        );
        end
    }
}
