//! The uncontended one-way latency of a WRITE of `size` bytes, component by component, from
//! the same parameters the model runs on. With every cache hit (after warm-up) the model's
//! write-lat (half the ping-pong round trip, as ib_write_lat reports) equals the sum; the
//! physics test checks that, and the book's model chapter (`docs/book/src/model/index.md`)
//! shows the figures.

use serde::Serialize;

use super::net::port::Port;
use super::nic::pcie::Pcie;
use super::params::ModelParams;
use crate::config::Config;

/// One component of the latency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Component {
    /// Short name.
    pub name: String,
    /// What it is.
    pub what: String,
    /// Duration, ns.
    pub ns: f64,
}

/// The whole breakdown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakdown {
    /// Message size, bytes.
    pub size_bytes: u64,
    /// Components in path order.
    pub components: Vec<Component>,
    /// Sum, ns.
    pub total_ns: f64,
}

/// Frame length (without FCS) of a WRITE-only packet of `size` payload bytes.
pub fn write_only_frame_len(size: u64) -> usize {
    let pad = (4 - size % 4) % 4;
    (14 + 20 + 8 + 12 + 16 + size + pad + 4) as usize
}

/// The write-lat breakdown for `size` bytes (at most one PMTU) under `cfg`.
pub fn write_lat_breakdown(cfg: &Config, size: u64) -> Breakdown {
    let p = ModelParams::from_config(cfg);
    let n = &p.nic;
    let pcie = Pcie::new(p.pcie.clone());
    let port = Port::new(p.eth.clone());
    let pages = |s: u64| {
        if s == 0 {
            0
        } else {
            (s - 1) / n.page_bytes + 1
        }
    };
    let frame = write_only_frame_len(size);
    let ns = |ps: u64| ps as f64 / 1000.0;
    let mut c: Vec<(&str, &str, u64)> = vec![
        (
            "host_post",
            "CPU: write the WQE, store the doorbell (host.post_send_ns)",
            p.host.post_send_ps,
        ),
        (
            "doorbell_mmio",
            "PCIe host→NIC: doorbell TLP serialization + posted-write latency",
            pcie.mmio_latency(),
        ),
        (
            "doorbell_unit",
            "NIC doorbell unit (doorbell_cycles)",
            n.doorbell_ps,
        ),
        ("scheduler", "QP scheduler visit (sched_cycles)", n.sched_ps),
        (
            "qpc_lookup_tx",
            "QPC manager lookup, descriptor channel, hit (qpc_lookup_cycles)",
            n.qpc_lookup_ps,
        ),
        (
            "wqe_fetch",
            "DMA read of one 64 B WQE: request TLP + PCIe round trip + completion",
            pcie.read_latency(n.wqe_bytes),
        ),
        (
            "wqe_decode",
            "WQE decode (wqe_decode_cycles)",
            n.wqe_decode_ps,
        ),
        (
            "translate_tx",
            "MPT lookup + one MTT lookup per page (hits)",
            n.mpt_lookup_ps + pages(size) * n.mtt_lookup_ps,
        ),
        (
            "payload_read",
            "DMA read of the payload",
            pcie.read_latency(size),
        ),
        (
            "qpc_lookup_req",
            "QPC manager lookup, requester channel, hit",
            n.qpc_lookup_ps,
        ),
        (
            "tx_engine",
            "TX engine, first packet of a message (tx_msg_cycles)",
            n.tx_msg_ps,
        ),
        (
            "nic_port",
            "serialization at the sender's port (frame + FCS + preamble/IFG)",
            port.wire_time(frame),
        ),
        (
            "link_up",
            "propagation sender → switch",
            p.net.link_delay_ps,
        ),
        (
            "switch",
            "switch latency + store-and-forward serialization at the output port",
            p.net.switch_latency_ps + port.wire_time(frame),
        ),
        (
            "link_down",
            "propagation switch → receiver",
            p.net.link_delay_ps,
        ),
        ("rx_pipeline", "RX parse (rx_pkt_cycles)", n.rx_pkt_ps),
        (
            "qpc_lookup_rx",
            "QPC manager lookup, responder channel, hit",
            n.qpc_lookup_ps,
        ),
        (
            "translate_rx",
            "MPT lookup (rkey) + MTT lookups of the target pages (hits)",
            n.mpt_lookup_ps + pages(size) * n.mtt_lookup_ps,
        ),
        (
            "payload_write",
            "DMA write of the payload until visible in host memory",
            pcie.write_latency(size),
        ),
        (
            "host_poll",
            "polling CPU sees the new byte (host.mem_latency_ns)",
            p.host.mem_latency_ps,
        ),
    ];
    if size == 0 {
        c.retain(|(k, _, _)| *k != "payload_read");
    }
    let components: Vec<Component> = c
        .into_iter()
        .map(|(name, what, ps)| Component {
            name: name.to_string(),
            what: what.to_string(),
            ns: ns(ps),
        })
        .collect();
    let total_ns = components.iter().map(|c| c.ns).sum();
    Breakdown {
        size_bytes: size,
        components,
        total_ns,
    }
}
