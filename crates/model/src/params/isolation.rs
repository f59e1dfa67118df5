//! The switches of TX isolation, resolved: `nic.tx_isolation` picks an architecture and each
//! `nic.iso_*` part may override it (`auto` follows the architecture).

use crate::config::{
    IsoBackpressure, IsoBsArbiter, IsoCaching, IsoTransport, NicConfig, TxIsolation,
};

/// Which isolation mechanisms run, and their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IsoParts {
    /// A shallow WQE FIFO per BS tenant and one shared LS FIFO (else one shared FIFO).
    pub separate_caching: bool,
    /// BS WQEs yield the transport after a slice; LS WQEs go first (else run to completion).
    pub slicing: bool,
    /// Every QP in turn, one packet each, no station (`nic.iso_transport =
    /// "qp_round_robin"`; neither slicing nor run to completion).
    pub qp_round_robin: bool,
    /// A full BS FIFO pauses only its own tenant's WQE reads (else every QP's).
    pub isolated_backpressure: bool,
    /// BS tenants get `4096 / PMTU` slices per turn (else one).
    pub adaptive_wrr: bool,
    /// Depth of each BS tenant's FIFO, WQEs.
    pub bs_fifo_depth: u32,
    /// Depth of the one WQE FIFO every QP shares without separate caching, WQEs (0:
    /// unbounded, only the WQE buffer bounds it).
    pub shared_fifo_depth: u32,
    /// Packets per slice.
    pub slice_packets: u32,
}

impl Default for IsoParts {
    /// The baseline architecture: nothing isolated.
    fn default() -> Self {
        IsoParts {
            separate_caching: false,
            slicing: false,
            qp_round_robin: false,
            isolated_backpressure: false,
            adaptive_wrr: false,
            bs_fifo_depth: 16,
            shared_fifo_depth: 0,
            slice_packets: 1,
        }
    }
}

impl IsoParts {
    /// The parts the config selects.
    pub fn from_config(n: &NicConfig) -> IsoParts {
        let (v1, v2) = match n.tx_isolation {
            TxIsolation::Baseline => (false, false),
            TxIsolation::V1 => (true, false),
            TxIsolation::V2 => (true, true),
        };
        IsoParts {
            separate_caching: match n.iso_caching {
                IsoCaching::Auto => v1,
                IsoCaching::Shared => false,
                IsoCaching::Separate => true,
            },
            slicing: match n.iso_transport {
                IsoTransport::Auto => v1,
                IsoTransport::RunToCompletion => false,
                IsoTransport::Slicing => true,
                IsoTransport::QpRoundRobin => false,
            },
            qp_round_robin: n.iso_transport == IsoTransport::QpRoundRobin,
            isolated_backpressure: match n.iso_backpressure {
                IsoBackpressure::Auto => v2,
                IsoBackpressure::Coupled => false,
                IsoBackpressure::Isolated => true,
            },
            adaptive_wrr: match n.iso_bs_arbiter {
                IsoBsArbiter::Auto => v2,
                IsoBsArbiter::RoundRobin => false,
                IsoBsArbiter::AdaptiveWrr => true,
            },
            bs_fifo_depth: n.iso_bs_fifo_depth.max(1),
            shared_fifo_depth: n.iso_shared_fifo_depth,
            slice_packets: n.iso_slice_packets.max(1),
        }
    }

    /// Any mechanism differs from rnic's default (a bounded shared FIFO is the paper's
    /// baseline, but not rnic's default: its WQEs are counted like the separate FIFOs').
    pub fn any(&self) -> bool {
        self.separate_caching
            || self.slicing
            || self.qp_round_robin
            || self.isolated_backpressure
            || self.adaptive_wrr
            || self.bounded_shared_fifo()
    }

    /// The shared WQE FIFO has a depth (and its almost-full flag pauses every QP's reads).
    pub fn bounded_shared_fifo(&self) -> bool {
        !self.separate_caching && self.shared_fifo_depth > 0
    }
}

/// The adaptive WRR weight of a BS tenant with path MTU `pmtu_bytes`: slices per turn so
/// that every tenant moves the same bytes per turn (the paper: 1 KB → 4, 2 KB → 2).
pub fn wrr_weight(pmtu_bytes: u32) -> u32 {
    (4096 / pmtu_bytes.clamp(256, 4096)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_and_parts() {
        let mut n = NicConfig::default();
        assert!(!IsoParts::from_config(&n).any());
        n.tx_isolation = TxIsolation::V1;
        let v1 = IsoParts::from_config(&n);
        assert!(v1.separate_caching && v1.slicing && !v1.isolated_backpressure && !v1.adaptive_wrr);
        n.tx_isolation = TxIsolation::V2;
        let v2 = IsoParts::from_config(&n);
        assert!(v2.isolated_backpressure && v2.adaptive_wrr);
        n.tx_isolation = TxIsolation::Baseline;
        n.iso_transport = IsoTransport::Slicing;
        let one = IsoParts::from_config(&n);
        assert!(one.slicing && !one.separate_caching);
        n.iso_transport = IsoTransport::Auto;
        n.iso_shared_fifo_depth = 16;
        let bounded = IsoParts::from_config(&n);
        assert!(bounded.bounded_shared_fifo() && bounded.any());
        n.tx_isolation = TxIsolation::V1;
        assert!(!IsoParts::from_config(&n).bounded_shared_fifo());
    }

    #[test]
    fn weights_follow_the_paper() {
        assert_eq!(wrr_weight(1024), 4);
        assert_eq!(wrr_weight(2048), 2);
        assert_eq!(wrr_weight(4096), 1);
        assert_eq!(wrr_weight(256), 16);
    }
}
