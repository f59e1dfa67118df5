//! The CQ unit: a completion from the transport passes the CQ context (CQC: ring address,
//! producer index; `cqe_cycles`) and is DMA-written as a 64 B CQE into the CQ ring in host
//! memory (real bytes, format in [`crate::host::driver`]); the application polls the
//! ring when the write has landed.

use rnic_sim::TimePs;
use rnic_transport::{CqId, WcOpcode};

use super::unit::Unit;
use crate::event::Ev;
use crate::host::driver::{encode_cqe, CQE_BYTES};
use crate::world::World;

/// One CQ's context.
#[derive(Debug, Clone, Copy)]
pub struct CqCtx {
    /// The transport's CQ.
    pub id: CqId,
    /// Ring base address.
    pub base: u64,
    /// log2 of the ring depth.
    pub log_depth: u32,
    /// CQEs written.
    pub pi: u64,
}

/// Counters of the CQ unit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CqStats {
    /// CQEs written.
    pub cqes: u64,
    /// Completions with an error status.
    pub errors: u64,
    /// CQEs lost because the CQ ring was full.
    pub overruns: u64,
}

/// The CQ unit.
#[derive(Debug)]
pub struct CqUnit {
    /// The unit.
    pub unit: Unit,
    /// CQ contexts, by the node's CQ index (core × 2 + is_recv).
    pub ctxs: Vec<CqCtx>,
    /// Counters.
    pub stats: CqStats,
}

impl CqUnit {
    /// A unit with II `cqe_ps`.
    pub fn new(cqe_ps: TimePs) -> Self {
        CqUnit {
            unit: Unit::new(cqe_ps),
            ctxs: Vec::new(),
            stats: CqStats::default(),
        }
    }
}

impl World {
    /// Moves the completions of `qpn`'s CQs from the transport into CQEs at `now`.
    pub(crate) fn cq_collect(&mut self, n: usize, now: TimePs, qpn: u32) {
        let mut activate = std::mem::take(&mut self.scratch_qpns);
        let mut freed = false;
        {
            let World { nodes, q, app, .. } = self;
            let node = &mut nodes[n];
            let Some(core) = node.nic.qps.get(qpn as usize).map(|q| q.core as usize) else {
                self.scratch_qpns = activate;
                return;
            };
            for idx in [2 * core, 2 * core + 1] {
                let Some(ctx) = node.nic.cq.ctxs.get(idx).copied() else {
                    continue;
                };
                while let Some(c) = node.dev.poll_cq(ctx.id) {
                    let nic = &mut node.nic;
                    if c.status != rnic_transport::WcStatus::Success
                        && nic.tx_buffer_release(c.qpn, u64::MAX)
                    {
                        // The QP is in error: what it had not sent never will be.
                        freed = true;
                    }
                    // CQ full (the consumer index the driver publishes): the CQE is lost.
                    let consumed = app.nodes[n].cores[core].cq[idx % 2].ci;
                    if nic.cq.ctxs[idx].pi - consumed >= 1 << ctx.log_depth {
                        nic.cq.stats.overruns += 1;
                        continue;
                    }
                    let t = nic.cq.unit.serve(now);
                    let c_ctx = &mut nic.cq.ctxs[idx];
                    let slot = c_ctx.pi & ((1 << c_ctx.log_depth) - 1);
                    let pass = c_ctx.pi >> c_ctx.log_depth;
                    c_ctx.pi += 1;
                    let bytes = encode_cqe(&c, pass);
                    rnic_transport::Memory::write(
                        &mut node.mem,
                        ctx.base + slot * CQE_BYTES,
                        &bytes,
                    );
                    nic.cq.stats.cqes += 1;
                    if c.status != rnic_transport::WcStatus::Success {
                        nic.cq.stats.errors += 1;
                    }
                    let land = nic.pcie.posted_write(t, CQE_BYTES);
                    if !matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
                        if let Some(qp) = nic.qps.get_mut(c.qpn as usize) {
                            qp.outstanding = qp.outstanding.saturating_sub(1);
                        }
                        activate.push(c.qpn);
                    }
                    q.push(
                        land,
                        Ev::CqeLanded {
                            node: n as u32,
                            cq: idx as u32,
                        },
                    );
                }
            }
        }
        if freed {
            self.tx_buffer_pump(n, now);
        }
        for &a in &activate {
            // Room under max_outstanding_wqes_per_qp may reactivate the QP.
            self.sched_activate(n, a, now);
        }
        activate.clear();
        self.scratch_qpns = activate;
    }
}
