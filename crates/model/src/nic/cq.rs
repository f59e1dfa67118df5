//! The CQ unit: a completion from the transport passes the CQ context (CQC: ring address,
//! producer index; `cqe_cycles`) and is DMA-written as a CQE into the CQ ring in host
//! memory (real bytes, the 64 B format in [`crate::host::driver`]; the PCIe write is
//! `nic.cqe_bytes` long); the application polls the
//! ring when the write has landed. The driver publishes its consumer index in a doorbell
//! record in host memory (as mlx5 does); the unit reads it there to refuse a CQE the full
//! ring has no room for.

use rnic_sim::TimePs;
use rnic_transport::{Completion, CqId, Memory, WcStatus};

use super::unit::Unit;
use crate::host::driver::CQE_BYTES;

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
    /// Address of the doorbell record where the driver publishes its consumer index (a
    /// little-endian `u64`).
    pub ci_record: u64,
    /// The consumer index last read from the record. It only grows, so while the ring has
    /// room by this value it has room by the current one, and the record is read again
    /// only when the ring looks full (as NICs read the consumer index lazily).
    pub ci_seen: u64,
}

/// Where and when a CQE is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqeWrite {
    /// Address of its ring slot.
    pub addr: u64,
    /// The ring pass it belongs to (its owner bit).
    pub pass: u64,
    /// When the unit has built it, ps.
    pub at: TimePs,
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

impl CqUnit {
    /// Places completion `c` in CQ `idx` at `now`: the slot it takes, or `None` when the
    /// ring is full (the consumer index in host memory shows no room: the CQE is lost and
    /// counted as an overrun).
    pub fn place(
        &mut self,
        now: TimePs,
        idx: usize,
        c: &Completion,
        mem: &dyn Memory,
    ) -> Option<CqeWrite> {
        let ctx = self.ctxs.get_mut(idx)?;
        if ctx.pi - ctx.ci_seen >= 1 << ctx.log_depth {
            let mut ci = [0u8; 8];
            mem.read(ctx.ci_record, &mut ci);
            ctx.ci_seen = u64::from_le_bytes(ci);
        }
        if ctx.pi - ctx.ci_seen >= 1 << ctx.log_depth {
            self.stats.overruns += 1;
            return None;
        }
        let at = self.unit.serve(now);
        let slot = ctx.pi & ((1 << ctx.log_depth) - 1);
        let pass = ctx.pi >> ctx.log_depth;
        ctx.pi += 1;
        self.stats.cqes += 1;
        if c.status != WcStatus::Success {
            self.stats.errors += 1;
        }
        Some(CqeWrite {
            addr: ctx.base + slot * CQE_BYTES,
            pass,
            at,
        })
    }
}

impl crate::stats::Report for CqUnit {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.unit"), &self.unit.stats);
    }
}
