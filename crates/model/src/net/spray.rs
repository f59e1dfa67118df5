//! The packet sprayer: N parallel paths modelled on one link direction. Each frame is put on
//! a path by the policy and delayed by that path's extra one-way delay (path i of N adds
//! i × MDD / (N − 1)), so frames overtake each other as on a multipath fabric whose paths
//! differ by up to MDD: at 100 Gb/s with 4 KB frames, 20 µs is about 61 frame times, the
//! ORNIC paper's reordering distance. Paths share the sender's serialization (the NIC port);
//! each path is assumed to have the capacity the port has, as in a fabric with spare paths.

use rnic_sim::{Rng, TimePs};

use super::element::{ElementStats, Emitted, Fate, LinkElement};
use crate::config::{SprayConfig, SprayPolicy};

/// Offset of the UDP source port in a RoCEv2 frame (Ethernet 14 + IPv4 20).
const UDP_SRC_PORT_AT: usize = 34;

/// A sprayer on one link direction.
#[derive(Debug, Clone)]
pub struct Spray {
    rng: Rng,
    policy: SprayPolicy,
    path_delay_ps: Vec<TimePs>,
    next: usize,
    /// The path of policy `Pinned`.
    pinned: usize,
    stats: ElementStats,
    per_path: Vec<u64>,
}

impl Spray {
    /// A sprayer with the settings of `cfg`, drawing from its own stream `rng`.
    pub fn new(rng: Rng, cfg: &SprayConfig) -> Spray {
        let n = cfg.paths.max(1) as usize;
        let mdd_ps = rnic_sim::ns(cfg.mdd_ns);
        let path_delay_ps = (0..n)
            .map(|i| {
                if n == 1 {
                    0
                } else {
                    mdd_ps * i as u64 / (n as u64 - 1)
                }
            })
            .collect();
        Spray {
            rng,
            policy: cfg.policy,
            path_delay_ps,
            next: 0,
            pinned: (cfg.path as usize).min(n - 1),
            stats: ElementStats::default(),
            per_path: vec![0; n],
        }
    }

    /// Whether the sprayer changes anything (more than one path).
    pub fn is_active(&self) -> bool {
        self.path_delay_ps.len() > 1
    }

    /// Frames sent down each path.
    pub fn per_path(&self) -> &[u64] {
        &self.per_path
    }

    /// The path of `frame` under the policy.
    fn pick(&mut self, frame: &[u8]) -> usize {
        let n = self.path_delay_ps.len();
        // A CM MAD takes its flow's hashed path, as the fabric would route it: spraying
        // is for the QPs' traffic (and leaves the policy's state to it).
        let policy = if super::impair::is_cm_mad(frame) {
            SprayPolicy::Ecmp
        } else {
            self.policy
        };
        match policy {
            SprayPolicy::Random => self.rng.gen_index(n),
            SprayPolicy::RoundRobin => {
                let p = self.next;
                self.next = (self.next + 1) % n;
                p
            }
            SprayPolicy::Pinned => self.pinned,
            SprayPolicy::Ecmp => {
                let port = frame
                    .get(UDP_SRC_PORT_AT..UDP_SRC_PORT_AT + 2)
                    .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
                // A fixed mix of the port (the same flow always hashes to the same path).
                let h = u64::from(port).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
                (h % n as u64) as usize
            }
        }
    }
}

impl LinkElement for Spray {
    fn on_frame(&mut self, _now: TimePs, frame: &mut Vec<u8>, _emit: &mut Vec<Emitted>) -> Fate {
        self.stats.frames += 1;
        let path = self.pick(frame);
        self.per_path[path] += 1;
        let delay_ps = self.path_delay_ps[path];
        if delay_ps > 0 {
            self.stats.delayed += 1;
        }
        Fate {
            drop: false,
            delay_ps,
        }
    }

    fn stats(&self) -> ElementStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(port: u16) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[UDP_SRC_PORT_AT..UDP_SRC_PORT_AT + 2].copy_from_slice(&port.to_be_bytes());
        f
    }

    fn spray(policy: SprayPolicy) -> Spray {
        let cfg = SprayConfig {
            paths: 4,
            mdd_ns: 20_000.0,
            policy,
            path: 2,
        };
        Spray::new(Rng::new(3), &cfg)
    }

    #[test]
    fn paths_span_the_delay_difference() {
        let s = spray(SprayPolicy::RoundRobin);
        assert_eq!(s.path_delay_ps, vec![0, 6_666_666, 13_333_333, 20_000_000]);
    }

    #[test]
    fn round_robin_and_random_use_every_path_ecmp_one() {
        for (policy, used) in [
            (SprayPolicy::RoundRobin, 4),
            (SprayPolicy::Random, 4),
            (SprayPolicy::Ecmp, 1),
            (SprayPolicy::Pinned, 1),
        ] {
            let mut s = spray(policy);
            for _ in 0..400 {
                s.on_frame(0, &mut frame(49152), &mut Vec::new());
            }
            let n = s.per_path().iter().filter(|&&c| c > 0).count();
            assert_eq!(n, used, "{policy:?}: {:?}", s.per_path());
        }
    }

    /// The reordering the sprayer produces on a back-to-back stream of 4 KB RoCEv2 frames at
    /// 100 Gb/s (4,178 bytes on the wire with preamble and gap: 334 ns apart). The PSN
    /// distance (what ORNIC's OTD bounds: frame i arrives after frame i + d) reaches 57 (round
    /// robin) and 59 (random) with four paths 20 µs apart, under the ORNIC paper's 64; but
    /// only 30 and 41 frames overtake any one frame, since the frames sent in between spread
    /// over all four paths.
    #[test]
    fn four_paths_20_us_apart_reorder_by_under_64_psns() {
        let slot_ps: u64 = 4_178 * 8 * 1_000 / 100;
        let reach = (20_000_000 / slot_ps + 1) as usize;
        for (policy, overtaken) in [
            (SprayPolicy::RoundRobin, 28..=30),
            (SprayPolicy::Random, 28..=50),
        ] {
            let mut s = spray(policy);
            let arrivals: Vec<u64> = (0..20_000u64)
                .map(|i| {
                    let f = s.on_frame(i * slot_ps, &mut frame(49152), &mut Vec::new());
                    i * slot_ps + f.delay_ps
                })
                .collect();
            let (mut psn_distance, mut most_overtaken) = (0, 0);
            for i in 0..arrivals.len() {
                let later = &arrivals[i + 1..(i + 1 + reach).min(arrivals.len())];
                let before: Vec<usize> = (0..later.len())
                    .filter(|&k| later[k] < arrivals[i])
                    .collect();
                psn_distance = psn_distance.max(before.last().map_or(0, |k| k + 1));
                most_overtaken = most_overtaken.max(before.len());
            }
            assert!(
                (56..64).contains(&psn_distance) && overtaken.contains(&most_overtaken),
                "{policy:?}: PSN distance {psn_distance}, overtaken by {most_overtaken}"
            );
        }
    }

    #[test]
    fn pinned_puts_every_frame_on_its_path() {
        let mut s = spray(SprayPolicy::Pinned);
        for port in 49152..49552u16 {
            let f = s.on_frame(0, &mut frame(port), &mut Vec::new());
            assert_eq!(f.delay_ps, 13_333_333);
        }
        assert_eq!(s.per_path(), &[0, 0, 400, 0]);
    }

    #[test]
    fn one_path_is_inactive() {
        let s = Spray::new(Rng::new(1), &SprayConfig::default());
        assert!(!s.is_active());
    }
}
