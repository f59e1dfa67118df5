//! The ideal flow-completion time: the flow alone on an idle fabric, in closed form (as the
//! HPCC paper's slowdown divides by), so a slowdown says what the other flows cost it. It
//! runs to the same moment as the flow's measured FCT ([`FctEnd`]), so a slowdown below 1
//! would mean the closed form missed a cost the idle fabric has, not a shorter definition.
//!
//! ideal = the one-way latency (every link's propagation and every switch's forwarding
//!         latency), twice where the FCT runs to the last acknowledgement's return (RC: there
//!         for the data and back for the acknowledgement), once where it runs to the last
//!         byte's arrival (UC, UD, and behind the WAN accelerator)
//!       + the message's wire time at the path's bottleneck rate (every packet with its
//!         Ethernet, IPv4, UDP, BTH and ICRC headers, a RETH on a WRITE's first packet,
//!         padding, FCS, preamble and inter-frame gap: `limits::op_wire_ps`; sprayed or
//!         adaptively routed, the rate of every shortest path together: `net::path`)
//!       + one packet's wire time on every link but the bottleneck, each at its own rate
//!         (store and forward: the last packet is serialised again on every link after the
//!         first; the bottleneck's time for it is in the message's), (links − 1) × one
//!         packet's at the bottleneck rate where every link runs at that rate.
//!
//! Left out, so a lone flow's slowdown is a little above 1: the host's and NIC's own time
//! (doorbell, WQE fetch, payload DMA over PCIe, completion) and the acknowledgement's
//! serialisation.

use rnic_sim::TimePs;

use crate::config::{Config, Transport};
use crate::net::path::IdlePath;
use crate::params::ModelParams;
use crate::workload::Verb;

/// The moment a workload flow's FCT runs to, from its first post: the same for its measured
/// FCT and its ideal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FctEnd {
    /// Its sender's completion, on the last acknowledgement's return (RC; the CQE as its
    /// core polls it), as HPCC-style simulators report.
    Ack,
    /// Its receiver's placement of its last byte: over UC and UD a sender completes at
    /// transmission, whether or not the message arrives, and behind the WAN accelerator
    /// (`net.wan_accel`) a WRITE completes on the accelerator's pseudo-ACK, before Remote has
    /// it (until 2026-12-01 these FCTs were the sender's too, against an ideal with the
    /// acknowledgement's way back: slowdowns down to 0.02).
    LastByte,
}

impl FctEnd {
    /// Where the flows of a run under `cfg` end.
    pub fn of(cfg: &Config) -> FctEnd {
        if cfg.qp.transport != Transport::Rc || cfg.net.wan_accel {
            FctEnd::LastByte
        } else {
            FctEnd::Ack
        }
    }

    /// The one-way latencies the ideal counts: there and back, or there.
    fn ways(self) -> u64 {
        match self {
            FctEnd::Ack => 2,
            FctEnd::LastByte => 1,
        }
    }
}

/// The ideal completion time of a `bytes`-byte `verb` message (WRITE or SEND) over `path`
/// with path MTU `pmtu`, ps, to the moment [`FctEnd::of`] `cfg` says.
pub fn ideal_fct_ps(cfg: &Config, path: &IdlePath, verb: Verb, bytes: u64, pmtu: u32) -> TimePs {
    let mut p = ModelParams::from_config(cfg);
    let mut wire = |size, mbps| {
        p.eth.mbps = mbps;
        crate::limits::op_wire_ps(&p, verb, size, pmtu, cfg.qp.transport)
    };
    let packet = bytes.min(u64::from(pmtu));
    // One packet on every link, less one at the bottleneck rate (until 2026-12-01 every
    // link's at the bottleneck rate: over host links 8 times faster than the spine links,
    // a lone 9 KB flow's ideal was 39 µs and its FCT 31).
    let per_link: TimePs = path.link_mbps.iter().map(|&m| wire(packet, m)).sum();
    let store_forward = per_link.saturating_sub(wire(packet, path.bottleneck_mbps));
    FctEnd::of(cfg).ways() * path.one_way_ps + wire(bytes, path.bottleneck_mbps) + store_forward
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_write_is_its_wire_time_and_a_small_one_its_round_trip() {
        let cfg = Config::resolve("baseline", &[]).unwrap();
        let path = IdlePath {
            link_mbps: vec![100_000, 100_000],
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

    /// Over UC and UD, and behind the WAN accelerator, the FCT runs to the receiver's last
    /// byte: the ideal counts the one-way latency once, not there and back.
    #[test]
    fn to_the_last_byte_the_ideal_counts_one_way_once() {
        let path = IdlePath {
            link_mbps: vec![100_000, 100_000],
            one_way_ps: 2_000_000,
            bottleneck_mbps: 100_000,
        };
        let with = |sets: &[&str]| {
            let o: Vec<_> = sets
                .iter()
                .map(|s| crate::config::parse_set(s).unwrap())
                .collect();
            Config::resolve("baseline", &o).unwrap()
        };
        let rc = with(&[]);
        assert_eq!(FctEnd::of(&rc), FctEnd::Ack);
        let rc_ps = ideal_fct_ps(&rc, &path, Verb::Write, 4096, 4096);
        for sets in [
            &["qp.transport=uc"][..],
            &["net.topology=wan", "net.wan_accel=true"][..],
        ] {
            let cfg = with(sets);
            assert_eq!(FctEnd::of(&cfg), FctEnd::LastByte, "{sets:?}");
            // The same packets as RC's: the difference is the way back.
            let ps = ideal_fct_ps(&cfg, &path, Verb::Write, 4096, 4096);
            assert_eq!(rc_ps - ps, path.one_way_ps, "{sets:?}");
        }
        assert_eq!(FctEnd::of(&with(&["qp.transport=ud"])), FctEnd::LastByte);
    }

    /// Over links of different rates the last packet is serialised again at each link's own
    /// rate: a 9175 B WRITE from a 40 Gb/s host link over two 5 Gb/s spine links (a
    /// leaf-spine at 2:1 with four spines) had an ideal of 39.2 µs, every extra link's packet
    /// at 5 Gb/s, and a real FCT of 30.7 µs (a slowdown of 0.78).
    #[test]
    fn each_link_s_store_and_forward_is_at_its_own_rate() {
        let cfg = Config::resolve("baseline", &[]).unwrap();
        let path = IdlePath {
            link_mbps: vec![40_000, 5_000, 5_000, 40_000],
            one_way_ps: 0,
            bottleneck_mbps: 5_000,
        };
        let bytes = 9175;
        let ideal = ideal_fct_ps(&cfg, &path, Verb::Write, bytes, 4096);
        let mut p = ModelParams::from_config(&cfg);
        let mut wire = |size, mbps| {
            p.eth.mbps = mbps;
            crate::limits::op_wire_ps(&p, Verb::Write, size, 4096, cfg.qp.transport)
        };
        let want = wire(bytes, 5_000) + wire(4096, 5_000) + 2 * wire(4096, 40_000);
        assert_eq!(ideal, want);
        // 11.7 µs less than every extra link's packet at 5 Gb/s.
        let old = wire(bytes, 5_000) + 3 * wire(4096, 5_000);
        assert_eq!(old - ideal, 2 * (wire(4096, 5_000) - wire(4096, 40_000)));
        assert!((11_500_000..12_000_000).contains(&(old - ideal)), "{ideal}");
    }
}
