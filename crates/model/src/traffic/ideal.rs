//! The ideal flow-completion time: the flow alone on an idle fabric, in closed form (as the
//! HPCC paper's slowdown divides by), so a slowdown says what the other flows cost it.
//!
//! ideal = 2 × one-way latency (every link's propagation and every switch's forwarding
//! latency, there for the data and back for the last acknowledgement)
//!       + the message's wire time at the path's bottleneck rate (every packet with its
//!         Ethernet, IPv4, UDP, BTH and ICRC headers, a RETH on a WRITE's first packet,
//!         padding, FCS, preamble and inter-frame gap: `limits::op_wire_ps`; sprayed or
//!         adaptively routed, the rate of every shortest path together: `net::path`)
//!       + (links − 1) × one packet's wire time (store and forward: the last packet is
//!         serialised again on every link after the first).
//!
//! Left out, so a lone flow's slowdown is a little above 1: the host's and NIC's own time
//! (doorbell, WQE fetch, payload DMA over PCIe, completion) and the acknowledgement's
//! serialisation.

use rnic_sim::TimePs;

use crate::config::Config;
use crate::net::path::IdlePath;
use crate::params::ModelParams;
use crate::workload::Verb;

/// The ideal completion time of a `bytes`-byte `verb` message (WRITE or SEND) over `path`
/// with path MTU `pmtu`, ps.
pub fn ideal_fct_ps(cfg: &Config, path: &IdlePath, verb: Verb, bytes: u64, pmtu: u32) -> TimePs {
    let mut p = ModelParams::from_config(cfg);
    p.eth.mbps = path.bottleneck_mbps;
    let wire = |size| crate::limits::op_wire_ps(&p, verb, size, pmtu, cfg.qp.transport);
    let one_packet = wire(bytes.min(u64::from(pmtu)));
    2 * path.one_way_ps + wire(bytes) + u64::from(path.links.saturating_sub(1)) * one_packet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_write_is_its_wire_time_and_a_small_one_its_round_trip() {
        let cfg = Config::resolve("baseline", &[]).unwrap();
        let path = IdlePath {
            links: 2,
            one_way_ps: 2_000_000,
            bottleneck_mbps: 100_000,
        };
        // 1 MB at 100 Gb/s is 80 µs of payload; headers add 62 + 24 B per 4 KiB packet
        // (about 2 %), the RETH 16 B once.
        let big = ideal_fct_ps(&cfg, &path, Verb::Write, 1 << 20, 4096);
        let payload_ps = (1u64 << 20) * 8 * 10;
        let packets = 256;
        let headers_ps = (packets * (14 + 20 + 8 + 12 + 4 + 4 + 20) + 16) * 80;
        let store_forward_ps = (4096 + 16 + 14 + 20 + 8 + 12 + 4 + 4 + 20) * 80;
        assert_eq!(
            big,
            4_000_000 + payload_ps + headers_ps + store_forward_ps,
            "{big}"
        );
        let small = ideal_fct_ps(&cfg, &path, Verb::Write, 64, 4096);
        assert!((4_000_000..4_030_000).contains(&small), "{small}");
    }
}
