//! On-chip memory accounting: every on-chip structure reports its bytes, so the papers'
//! memory tables come out of the model.
//!
//! | structure | bytes |
//! |---|---|
//! | `qpc_cache` | QPC cache entries × `qpc_entry_bytes` |
//! | `qpc_request_fifo`, `qpc_waiting_fifos` | FIFO depth × 8 B record (×3 channels for waiting) |
//! | `mpt_cache`, `mtt_cache` | entries × 64 B / 8 B |
//! | `sched_ring` | active-QP ring: a 3 B QPN and a 1 B chunk estimate per QP that can be active (sized for the QPs in use) |
//! | `wqe_buffer` | visits in flight × `wqes_per_fetch` × `wqe_bytes` |
//! | `tx_backlog` | `tx_backlog_cap` × 16 B message descriptors |
//! | `tx_payload_buffer` | `tx_buffer_bytes` |
//! | `cq_contexts` | 32 B per CQ |
//! | `qpc_requester_index_fifos`, `qpc_pending_fifo`, `qpc_pending_record_table` | non-blocking manager: 3 × QR + PF + PRT, bit-exact from the structures (csRNA Formula 2, [`super::mech::csrna::onchip`]) |
//! | `qpc_waiting_srams` | non-blocking requesters: 3 × `ooo_cap` × 8 B (replaces the waiting FIFOs) |
//! | `sq_address_table` | latency hiding: `sq_table_entry_bytes` (10 B) per QP in use |
//! | `wqe_cache`, `prefetch_queue` | resource prefetching: `wqe_cache_entries` × `wqe_bytes`, and a 3 B QPN per QP in use when the scheduler triggers prefetches ([`super::mech::prefetch`]) |
//! | `iso_bs_wqe_fifos`, `iso_slicing_station`, `iso_wrr_weights` | TX isolation: per BS tenant in use, `iso_bs_fifo_depth` × `wqe_bytes`, one 72 B p_wqe, a 1 B weight ([`super::mech::isolation`]) |

use std::collections::BTreeMap;

use super::host_if::HostIf;
use super::mech::prefetch::hook::AnyPrefetch;
use super::mem_path::MemPath;
use super::qp_table::QpHw;
use crate::params::ModelParams;

/// Every structure name [`super::Nic::onchip`] can report, whatever the configuration (which ones a
/// run reports depends on its manager and mechanisms). `onchip_bytes.<name>` metrics are
/// checked against it before a sweep runs, so a misspelt name is refused as bad input
/// rather than found missing from every result afterwards.
pub const ONCHIP_STRUCTURES: &[&str] = &[
    "qpc_cache",
    "qpc_request_fifo",
    "qpc_waiting_fifos",
    "qpc_requester_index_fifos",
    "qpc_pending_fifo",
    "qpc_pending_record_table",
    "qpc_waiting_srams",
    "mpt_cache",
    "mtt_cache",
    "sched_ring",
    "sq_address_table",
    "wqe_buffer",
    "tx_backlog",
    "tx_payload_buffer",
    "cq_contexts",
    "wqe_cache",
    "prefetch_queue",
    "iso_bs_wqe_fifos",
    "iso_slicing_station",
    "iso_wrr_weights",
];

/// Bytes of each on-chip structure: the memory path's caches and FIFOs, the rings and tables
/// sized by the QPs in use (`qps`), the host interface's CQ contexts, prefetching's
/// structures and the isolation mechanism's (`iso`, its `Isolation::onchip`: the mechanism
/// is reached through its hooks, not named here). A function of the parts it reads, not a
/// method of the `Nic`.
pub fn bytes(
    mem: &MemPath,
    qps: &[QpHw],
    host: &HostIf,
    pf: &AnyPrefetch,
    iso: Vec<(&'static str, u64)>,
    p: &ModelParams,
) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    m.insert("qpc_cache".to_string(), mem.qpc.cache().onchip_bytes());
    for (k, v) in mem.qpc.onchip() {
        m.insert(k.to_string(), v);
    }
    for (k, v) in mem.trans.onchip() {
        m.insert(k.to_string(), v);
    }
    let qps = qps.iter().filter(|q| q.valid).count() as u64;
    m.insert("sched_ring".to_string(), 4 * qps);
    if p.nic.latency_hiding {
        m.insert(
            "sq_address_table".to_string(),
            p.nic.sq_table_entry_bytes * qps,
        );
    }
    m.insert(
        "wqe_buffer".to_string(),
        u64::from(p.nic.max_visits_in_flight) * u64::from(p.nic.wqes_per_fetch) * p.nic.wqe_bytes,
    );
    m.insert(
        "tx_backlog".to_string(),
        u64::from(p.nic.tx_backlog_cap) * 16,
    );
    m.insert("tx_payload_buffer".to_string(), p.nic.tx_buffer_bytes);
    m.insert("cq_contexts".to_string(), 32 * host.cq.ctxs.len() as u64);
    for (k, v) in pf.onchip(p.nic.wqe_bytes, qps) {
        m.insert(k.to_string(), v);
    }
    for (k, v) in iso {
        m.insert(k.to_string(), v);
    }
    debug_assert!(
        m.keys().all(|k| ONCHIP_STRUCTURES.contains(&k.as_str())),
        "a structure missing from ONCHIP_STRUCTURES: {:?}",
        m.keys().collect::<Vec<_>>()
    );
    m
}
