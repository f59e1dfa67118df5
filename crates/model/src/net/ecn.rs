//! RED/ECN marking on a switch's egress queues (`[net.ecn]`): a frame queued on an output
//! port that already holds `q` bytes is marked Congestion Experienced with probability 0
//! for `q ≤ kmin`, `pmax·(q − kmin)/(kmax − kmin)` up to `kmax`, and 1 above, if it is
//! ECN-capable (ECT(0) or ECT(1); rnic's NICs send ECT(0)). The queue is read when the
//! frame joins it, the instantaneous length RED-for-DCQCN uses (the ns-3 HPCC simulator
//! reads it as the frame leaves; the two differ by the frames that arrive while it waits).
//! Marking rewrites the IP header's ECN bits and its checksum; the ICRC masks them, so the
//! frame stays valid end to end.

use rnic_sim::Rng;
use rnic_wire::frame::IPV4_OFFSET;

use crate::config::EcnConfig;

/// The ECN field's values (RFC 3168).
const NOT_ECT: u8 = 0b00;
const CE: u8 = 0b11;

/// The marker of every switch: its thresholds, one random stream per switch, and marks per
/// switch output port.
#[derive(Debug)]
pub struct Ecn {
    kmin_bytes: u64,
    kmax_bytes: u64,
    pmax: f64,
    rngs: Vec<Rng>,
    /// Frames marked CE, per switch and output port.
    pub marks: Vec<Vec<u64>>,
}

impl Ecn {
    /// The marker of `ports_per_switch.len()` switches, their random streams forked from
    /// `rng` (its own streams, 0x4000 + s, so no other element's numbers move).
    pub fn new(cfg: &EcnConfig, rng: &Rng, ports_per_switch: &[usize]) -> Ecn {
        Ecn {
            kmin_bytes: cfg.kmin_bytes,
            kmax_bytes: cfg.kmax_bytes,
            pmax: cfg.pmax,
            rngs: (0..ports_per_switch.len())
                .map(|s| rng.fork(0x4000 + s as u64))
                .collect(),
            marks: ports_per_switch.iter().map(|&n| vec![0; n]).collect(),
        }
    }

    /// Whether a frame joining a queue of `queued_bytes` on switch `s` is marked (draws a
    /// number only between the thresholds).
    fn congested(&mut self, s: usize, queued_bytes: u64) -> bool {
        if queued_bytes > self.kmax_bytes {
            return true;
        }
        if queued_bytes <= self.kmin_bytes {
            return false;
        }
        let span = (self.kmax_bytes - self.kmin_bytes) as f64;
        let p = self.pmax * (queued_bytes - self.kmin_bytes) as f64 / span;
        self.rngs[s].gen_f64() < p
    }

    /// Marks `frame`, queued on output port `out` of switch `s` behind `queued_bytes`, CE
    /// when RED says so and the frame is ECN-capable.
    pub fn on_queued(&mut self, s: usize, out: usize, queued_bytes: u64, frame: &mut [u8]) {
        let Some(tos) = frame.get(IPV4_OFFSET + 1).copied() else {
            return;
        };
        if tos & 0b11 == NOT_ECT || tos & 0b11 == CE || !self.congested(s, queued_bytes) {
            return;
        }
        let Ok(mut ip) = rnic_wire::ipv4::Packet::new_checked(&mut frame[IPV4_OFFSET..]) else {
            return;
        };
        ip.set_dscp_ecn(tos | CE);
        ip.fill_checksum();
        self.marks[s][out] += 1;
    }

    /// Frames marked on every port.
    pub fn total_marks(&self) -> u64 {
        self.marks.iter().flatten().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(ecn: u8) -> Vec<u8> {
        let mut f = vec![0u8; IPV4_OFFSET + 20];
        let mut ip = rnic_wire::ipv4::Packet::new_unchecked(&mut f[IPV4_OFFSET..]);
        ip.set_version_ihl(4, 5);
        ip.set_total_len(20);
        ip.set_dscp_ecn(ecn);
        ip.fill_checksum();
        f
    }

    fn ecn(kmin: u64, kmax: u64, pmax: f64) -> Ecn {
        let cfg = EcnConfig {
            enabled: true,
            kmin_bytes: kmin,
            kmax_bytes: kmax,
            pmax,
        };
        Ecn::new(&cfg, &Rng::new(1), &[2])
    }

    #[test]
    fn the_marking_probability_rises_from_kmin_to_pmax_at_kmax() {
        let mut e = ecn(1000, 3000, 0.2);
        let rate = |e: &mut Ecn, q: u64| {
            (0..20_000).filter(|_| e.congested(0, q)).count() as f64 / 20_000.0
        };
        assert_eq!(rate(&mut e, 1000), 0.0);
        assert!((rate(&mut e, 2000) - 0.1).abs() < 0.01);
        assert!((rate(&mut e, 2999) - 0.2).abs() < 0.015);
        assert_eq!(rate(&mut e, 3001), 1.0);
    }

    #[test]
    fn only_ect_frames_are_marked_and_their_checksum_stays_valid() {
        let mut e = ecn(0, 1, 1.0);
        let mut f = frame(0b10);
        e.on_queued(0, 1, 10, &mut f);
        let ip = rnic_wire::ipv4::Packet::new_checked(&f[IPV4_OFFSET..]).unwrap();
        assert_eq!(ip.dscp_ecn() & 0b11, CE);
        assert!(ip.verify_checksum());
        assert_eq!(e.marks, vec![vec![0, 1]]);
        let mut not_ect = frame(NOT_ECT);
        e.on_queued(0, 0, 10, &mut not_ect);
        assert_eq!(e.total_marks(), 1, "a Not-ECT frame is never marked");
    }
}
