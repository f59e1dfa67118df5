//! TX performance isolation: the mechanisms of "Optimize the TX Architecture of RDMA NIC for
//! Performance Isolation in the Cloud Environment" (GLSVLSI '23), each switchable, against
//! the baseline TX architecture the paper blames for interference (and rnic's default):
//! a shared WQE-cache FIFO, a run-to-completion transport FSM, coupled backpressure and
//! round robin.
//!
//! One switch, `nic.tx_isolation = "baseline" | "v1" | "v2"`, and one per part
//! (`nic.iso_caching`, `nic.iso_transport`, `nic.iso_backpressure`, `nic.iso_bs_arbiter`,
//! each `auto` by default) resolved into [`IsoParts`]:
//! - [`tenant`]: tenant id and class (LS or BS) in the QP number;
//! - [`fifos`]: v1 separate WQE caching (a shallow FIFO per BS tenant, one shared LS FIFO)
//!   and the backpressure of full FIFOs (coupled, or v2's isolated); [`admission`] makes
//!   them the scheduler's [`WqeAdmission`](crate::nic::ports::WqeAdmission);
//! - [`slicing`]: v1 slicing execution (BS WQEs yield the transport after a slice, LS first)
//!   and v2 adaptive WRR between BS tenants (weights from PMTU);
//! - [`tenant_ring`]: under slicing, BS tenants (not QPs) take turns at the transport, and
//!   each has one slicing-station entry; [`order`] makes it the TX engine's
//!   [`TxOrder`](crate::nic::ports::TxOrder);
//! - [`stats`]: LS/BS waiting time, per-tenant bytes, FIFO and station occupancy.
//!
//! The shared TX path reaches the mechanism only through two hooks, the seams of
//! [`crate::nic::ports`]: the scheduler's [`WqeAdmission`](crate::nic::ports::WqeAdmission)
//! (which FIFO a WQE waits in, whether a visit may read, which parked QPs may read again) and
//! the TX engine's [`TxOrder`](crate::nic::ports::TxOrder) (enlist a QP, pick the next, what
//! follows a frame). [`hooks`] holds each as an enum of its baseline kind and the paper's,
//! chosen once in `Nic::new` from [`IsoParts`]; the baseline kinds are a FIFO and a no-op.
//! [`Isolation`] keeps the admission and the waiting-time samples. With every part at its
//! baseline and no tenant but 0, nothing here changes a number or a report.

pub mod admission;
pub mod fifos;
pub mod hooks;
pub mod order;
pub mod slicing;
pub mod stats;
pub mod tenant;
pub mod tenant_ring;

use std::collections::VecDeque;

use rnic_sim::TimePs;

pub use crate::params::isolation::{wrr_weight, IsoParts};

use hooks::{AnyTxOrder, AnyWqeAdmission};
use stats::IsoStats;

/// Bytes of one slicing-station entry: the pending WQE (64 B) and its progress (next PSN
/// 3 B, payload offset 4 B, slice count 1 B).
pub const STATION_ENTRY_BYTES: u64 = 72;

/// When a WQE handed to the transport entered the NIC, became ready and was handed over.
#[derive(Debug, Clone, Copy)]
struct WqeTimes {
    in_nic: TimePs,
    ready: TimePs,
    handed: TimePs,
}

/// TX isolation in one NIC: the scheduler's WQE admission and the waiting-time samples.
/// (The TX engine's order, the other hook, lives in the TX engine.)
#[derive(Debug, Default)]
pub struct Isolation {
    /// Which mechanisms run (read here for the on-chip bytes only: the TX path asks the
    /// hooks, never the switches).
    parts: IsoParts,
    /// The WQE FIFOs: the scheduler's admission.
    pub admission: AnyWqeAdmission,
    /// Per QPN: when each WQE handed to the transport and not yet started entered the NIC
    /// (decoded into the WQE buffer), became ready, and was handed to the transport. Kept
    /// only while [`Isolation::reporting`]:
    /// it feeds the waiting-time samples and nothing else (without a mechanism, no WQE
    /// waits in an isolation FIFO, so [`Isolation::forget`] has none to give back).
    ready_at: Vec<VecDeque<WqeTimes>>,
    /// Report the isolation counters (a mechanism runs, or a QP has a tenant other than 0).
    /// Final before the first event: the mechanisms are set when the NIC is built and every
    /// QP is added before the run starts. Without it, no waiting time is sampled: the
    /// samples would grow by one per message (megabytes of page faults in long runs) for
    /// a report that is never printed.
    pub reporting: bool,
    /// Counters.
    pub stats: IsoStats,
    /// One NIC cycle, ps (waiting times are also reported in cycles, as the paper's).
    cycle_ps: TimePs,
}

impl crate::nic::ports::TxIsolation for Isolation {
    type Admission = AnyWqeAdmission;

    #[inline]
    fn admission(&mut self) -> &mut AnyWqeAdmission {
        &mut self.admission
    }

    #[inline]
    fn ready(&mut self, qpn: u32, in_nic: TimePs, ready: TimePs, now: TimePs) {
        Isolation::ready(self, qpn, in_nic, ready, now);
    }

    #[inline]
    fn started(&mut self, qpn: u32, tag: u32, now: TimePs) {
        Isolation::started(self, qpn, tag, now);
    }

    #[inline]
    fn sent(&mut self, tenant: u16, bytes: u64) {
        Isolation::sent(self, tenant, bytes);
    }

    #[inline]
    fn forget(&mut self, qpn: u32) -> u32 {
        Isolation::forget(self, qpn)
    }
}

impl Isolation {
    /// The units for `parts` in a NIC whose cycle is `cycle_ps`.
    pub fn new(parts: IsoParts, cycle_ps: TimePs) -> Self {
        Isolation {
            parts,
            cycle_ps,
            admission: AnyWqeAdmission::for_parts(&parts),
            reporting: parts.any(),
            ..Isolation::default()
        }
    }

    /// The TX engine's order for `parts` (the hook [`Isolation`] does not keep).
    pub fn tx_order(parts: &IsoParts) -> AnyTxOrder {
        AnyTxOrder::for_parts(parts)
    }

    /// A WQE of `qpn` that entered the NIC at `in_nic` (decoded into the WQE buffer) and
    /// became ready at `ready` went to the transport at `now`.
    pub fn ready(&mut self, qpn: u32, in_nic: TimePs, ready: TimePs, now: TimePs) {
        if !self.reporting {
            return;
        }
        let i = qpn as usize;
        if self.ready_at.len() <= i {
            crate::per_qp::grow_for(&mut self.ready_at, i, VecDeque::new);
        }
        let times = WqeTimes {
            in_nic,
            ready,
            handed: now,
        };
        crate::per_qp::push_small(&mut self.ready_at[i], times);
    }

    /// The first packet of `qpn`'s oldest ready WQE (the QP tagged `tag`) left at `now`:
    /// its waiting time is counted. (Its leaving its FIFO is the admission's
    /// [`WqeAdmission::left`](crate::nic::ports::WqeAdmission::left).)
    pub fn started(&mut self, qpn: u32, tag: u32, now: TimePs) {
        let Some(t) = self
            .ready_at
            .get_mut(qpn as usize)
            .and_then(|d| d.pop_front())
        else {
            return;
        };
        let w = now.saturating_sub(t.ready);
        if tenant::is_ls(tag) {
            self.stats.ls_wait.push(w);
            self.stats
                .ls_wait_fifo
                .push(t.handed.saturating_sub(t.ready));
            self.stats.ls_wait_engine.push(now.saturating_sub(t.handed));
            self.stats.ls_in_nic.push(now.saturating_sub(t.in_nic));
        } else {
            self.stats.bs_wait.push(w);
        }
    }

    /// `bytes` of first transmissions of `tenant` left.
    pub fn sent(&mut self, tenant: u16, bytes: u64) {
        self.stats.sent(tenant, bytes);
    }

    /// `qpn` went to error: its ready WQEs will not start.
    pub fn forget(&mut self, qpn: u32) -> u32 {
        self.ready_at.get_mut(qpn as usize).map_or(0, |d| {
            let n = d.len() as u32;
            d.clear();
            n
        })
    }

    /// Bytes of the structures the mechanisms add: the BS FIFOs (depth × WQE per BS tenant
    /// in use), the slicing station (one p_wqe per BS tenant in use) and the WRR weights
    /// (1 B per BS tenant). The LS FIFO reuses the shared WQE buffer.
    pub fn onchip(&self, wqe_bytes: u64) -> Vec<(&'static str, u64)> {
        let bs = self.admission.bs_tenants() as u64;
        let mut v = Vec::new();
        if self.parts.separate_caching {
            v.push((
                "iso_bs_wqe_fifos",
                bs * u64::from(self.parts.bs_fifo_depth) * wqe_bytes,
            ));
        }
        if self.parts.slicing {
            v.push(("iso_slicing_station", bs * STATION_ENTRY_BYTES));
        }
        if self.parts.adaptive_wrr {
            v.push(("iso_wrr_weights", bs));
        }
        v
    }

    /// Records the isolation counters under `prefix`, with those of the TX engine's
    /// `order`, when [`Isolation::reporting`].
    pub fn report(&self, order: &AnyTxOrder, prefix: &str, reg: &mut crate::stats::Registry) {
        if !self.reporting {
            return;
        }
        let s = &self.stats;
        let c = self.cycle_ps;
        s.ls_wait.report(&format!("{prefix}.ls_wait"), c, reg);
        s.ls_wait_fifo
            .report(&format!("{prefix}.ls_wait_fifo"), c, reg);
        s.ls_wait_engine
            .report(&format!("{prefix}.ls_wait_engine"), c, reg);
        s.bs_wait.report(&format!("{prefix}.bs_wait"), c, reg);
        s.ls_in_nic.report(&format!("{prefix}.ls_in_nic"), c, reg);
        for (t, &b) in s.tenant_tx_bytes.iter().enumerate() {
            if b > 0 {
                reg.set(&format!("{prefix}.tenant{t}.tx_bytes"), b);
            }
        }
        order.report(prefix, reg);
        self.admission.report(prefix, reg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_sampled_only_while_reporting() {
        let mut quiet = Isolation::new(IsoParts::default(), 1000);
        assert!(!quiet.reporting);
        quiet.ready(3, 5, 10, 20);
        quiet.started(3, 0, 50);
        assert!(quiet.stats.ls_wait.is_empty() && quiet.stats.bs_wait.is_empty());
        assert_eq!(quiet.forget(3), 0);

        let mut reporting = Isolation::new(IsoParts::default(), 1000);
        reporting.reporting = true;
        reporting.ready(3, 5, 10, 20);
        reporting.ready(3, 5, 15, 30);
        assert_eq!(reporting.forget(3), 2);
        reporting.ready(3, 5, 10, 20);
        reporting.started(3, 0, 50);
        assert_eq!(
            reporting.stats.ls_wait.len() + reporting.stats.bs_wait.len(),
            1
        );
        assert_eq!(
            reporting.stats.ls_wait.mean_ps() + reporting.stats.bs_wait.mean_ps(),
            40
        );
    }
}
