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
        ] {
            let mut s = spray(policy);
            for _ in 0..400 {
                s.on_frame(0, &mut frame(49152), &mut Vec::new());
            }
            let n = s.per_path().iter().filter(|&&c| c > 0).count();
            assert_eq!(n, used, "{policy:?}: {:?}", s.per_path());
        }
    }

    #[test]
    fn one_path_is_inactive() {
        let s = Spray::new(Rng::new(1), &SprayConfig::default());
        assert!(!s.is_active());
    }
}
