//! RED/ECN marking on a switch's egress queues (`[net.ecn]`): a frame queued on an output
//! port that already holds `q` bytes is marked Congestion Experienced with probability 0
//! for `q ≤ kmin`, `pmax·(q − kmin)/(kmax − kmin)` up to `kmax`, and 1 above, if it is
//! ECN-capable (ECT(0) or ECT(1); rnic's NICs send ECT(0)). `net.ecn.mark_point` says when
//! the queue is read: as the frame joins it (`q` = the bytes ahead of it, the instantaneous
//! length RED-for-DCQCN uses on the arriving packet), or as it starts onto the wire (`q` =
//! the bytes queued behind it, as the ns-3 HPCC simulator's switch asks its MMU when a
//! frame is dequeued); the two differ by the frames that arrive while it waits. Every
//! switch path marks through [`Ecn::mark_at`], which acts only at the configured point.
//! Marking rewrites the IP header's ECN bits and its checksum; the ICRC masks them, so the
//! frame stays valid end to end.

use std::collections::VecDeque;

use rnic_sim::{Rng, TimePs};
use rnic_wire::frame::IPV4_OFFSET;

use crate::config::{EcnConfig, EcnMarkPoint};

/// The ECN field's values (RFC 3168).
const NOT_ECT: u8 = 0b00;
const CE: u8 = 0b11;

/// One switch output port as the marker saw it: its marks and the queue each frame was
/// judged by at the mark point (where it stood against the thresholds), the occupancy
/// congestion control is judged by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct EcnPortStats {
    /// The switch (index among the switches).
    pub switch: u32,
    /// Its output port.
    pub port: u32,
    /// Frames marked CE.
    pub marks: u64,
    /// Frames queued.
    pub frames: u64,
    /// Frames that saw a queue of at most kmin_bytes at the mark point.
    pub below_kmin: u64,
    /// Frames that saw a queue above kmin_bytes and at most kmax_bytes.
    pub in_band: u64,
    /// Frames that saw a queue above kmax_bytes.
    pub above_kmax: u64,
    /// Mean queue a frame saw, bytes.
    pub mean_queue_bytes: u64,
    /// Longest queue a frame saw, bytes.
    pub max_queue_bytes: u64,
}

/// The queue frames saw at the mark point on one port.
#[derive(Debug, Clone, Copy, Default)]
struct QueueSeen {
    frames: u64,
    below_kmin: u64,
    above_kmax: u64,
    sum_bytes: u128,
    max_bytes: u64,
}

/// The marker of every switch: its thresholds, one random stream per switch, and marks per
/// switch output port.
#[derive(Debug)]
pub struct Ecn {
    /// (kmin, kmax) bytes per switch and output port.
    thresholds: Vec<Vec<(u64, u64)>>,
    pmax: f64,
    point: EcnMarkPoint,
    rngs: Vec<Rng>,
    /// Frames marked CE, per switch and output port.
    pub marks: Vec<Vec<u64>>,
    /// The queues frames saw, per switch and output port.
    queues: Vec<Vec<QueueSeen>>,
    /// Marking at dequeue, per switch and output port: the frames whose departure is
    /// scheduled but which have not started yet, (frame, when its last bit leaves), in
    /// the order they start.
    starting: Vec<Vec<VecDeque<(u32, TimePs)>>>,
}

impl Ecn {
    /// The marker of `port_mbps.len()` switches (each output port's rate, Mb/s), their
    /// random streams forked from `rng` (its own streams, 0x4000 + s, so no other element's
    /// numbers move).
    pub fn new(cfg: &EcnConfig, rng: &Rng, port_mbps: &[Vec<u64>]) -> Ecn {
        let ports_per_switch: Vec<usize> = port_mbps.iter().map(Vec::len).collect();
        let at = |mbps: u64| {
            if cfg.thresholds_at_gbps <= 0.0 {
                return (cfg.kmin_bytes, cfg.kmax_bytes);
            }
            let f = mbps as f64 / (cfg.thresholds_at_gbps * 1000.0);
            let (kmin, kmax) = (cfg.kmin_bytes as f64 * f, cfg.kmax_bytes as f64 * f);
            (
                kmin.round() as u64,
                (kmax.round() as u64).max(kmin.round() as u64 + 1),
            )
        };
        Ecn {
            thresholds: port_mbps
                .iter()
                .map(|ports| ports.iter().map(|&m| at(m)).collect())
                .collect(),
            pmax: cfg.pmax,
            point: cfg.mark_point,
            rngs: (0..ports_per_switch.len())
                .map(|s| rng.fork(0x4000 + s as u64))
                .collect(),
            marks: ports_per_switch.iter().map(|&n| vec![0; n]).collect(),
            queues: ports_per_switch
                .iter()
                .map(|&n| vec![QueueSeen::default(); n])
                .collect(),
            starting: ports_per_switch
                .iter()
                .map(|&n| vec![VecDeque::new(); n])
                .collect(),
        }
    }

    /// When the queue is read.
    pub fn point(&self) -> EcnMarkPoint {
        self.point
    }

    /// Marking at dequeue: `frame`, scheduled on output port `out` of switch `s`, waits to
    /// start; its last bit leaves at `end`. [`Ecn::next_start`] hands it back when it does.
    pub fn await_start(&mut self, s: usize, out: usize, frame: u32, end: TimePs) {
        self.starting[s][out].push_back((frame, end));
    }

    /// The next frame to start on output port `out` of switch `s` of those awaiting it:
    /// (frame, when its last bit leaves).
    pub fn next_start(&mut self, s: usize, out: usize) -> Option<(u32, TimePs)> {
        self.starting[s][out].pop_front()
    }

    /// Whether a frame joining a queue of `queued_bytes` on output port `out` of switch `s`
    /// is marked (draws a number only between the thresholds).
    fn congested(&mut self, s: usize, out: usize, queued_bytes: u64) -> bool {
        let (kmin, kmax) = self.thresholds[s][out];
        if queued_bytes > kmax {
            return true;
        }
        if queued_bytes <= kmin {
            return false;
        }
        let span = (kmax - kmin) as f64;
        let p = self.pmax * (queued_bytes - kmin) as f64 / span;
        self.rngs[s].gen_f64() < p
    }

    /// The one marking function of every switch path: at mark point `at`, `frame` on output
    /// port `out` of switch `s` sees `queued_bytes` in its queue (ahead of it at enqueue,
    /// behind it at dequeue); if `at` is the configured point, it is marked CE when RED says
    /// so and the frame is ECN-capable (else nothing happens: the other point reads it).
    pub fn mark_at(
        &mut self,
        at: EcnMarkPoint,
        s: usize,
        out: usize,
        queued_bytes: u64,
        frame: &mut [u8],
    ) {
        if at != self.point {
            return;
        }
        self.seen(s, out, queued_bytes);
        let Some(tos) = frame.get(IPV4_OFFSET + 1).copied() else {
            return;
        };
        if tos & 0b11 == NOT_ECT || tos & 0b11 == CE || !self.congested(s, out, queued_bytes) {
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

    /// A frame saw a queue of `queued_bytes` on port `out` of switch `s`.
    fn seen(&mut self, s: usize, out: usize, queued_bytes: u64) {
        let (kmin, kmax) = self.thresholds[s][out];
        let q = &mut self.queues[s][out];
        q.frames += 1;
        q.below_kmin += u64::from(queued_bytes <= kmin);
        q.above_kmax += u64::from(queued_bytes > kmax);
        q.sum_bytes += u128::from(queued_bytes);
        q.max_bytes = q.max_bytes.max(queued_bytes);
    }

    /// Every switch output port that queued a frame: its marks and queue.
    pub fn port_stats(&self) -> Vec<EcnPortStats> {
        let mut out = Vec::new();
        for (s, ports) in self.queues.iter().enumerate() {
            for (p, q) in ports.iter().enumerate().filter(|(_, q)| q.frames > 0) {
                out.push(EcnPortStats {
                    switch: s as u32,
                    port: p as u32,
                    marks: self.marks[s][p],
                    frames: q.frames,
                    below_kmin: q.below_kmin,
                    in_band: q.frames - q.below_kmin - q.above_kmax,
                    above_kmax: q.above_kmax,
                    mean_queue_bytes: (q.sum_bytes / u128::from(q.frames)) as u64,
                    max_queue_bytes: q.max_bytes,
                });
            }
        }
        out
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
            mark_point: EcnMarkPoint::Enqueue,
            thresholds_at_gbps: 0.0,
        };
        Ecn::new(&cfg, &Rng::new(1), &[vec![100_000; 2]])
    }

    #[test]
    fn the_marking_probability_rises_from_kmin_to_pmax_at_kmax() {
        let mut e = ecn(1000, 3000, 0.2);
        let rate = |e: &mut Ecn, q: u64| {
            (0..20_000).filter(|_| e.congested(0, 0, q)).count() as f64 / 20_000.0
        };
        assert_eq!(rate(&mut e, 1000), 0.0);
        assert!((rate(&mut e, 2000) - 0.1).abs() < 0.01);
        assert!((rate(&mut e, 2999) - 0.2).abs() < 0.015);
        assert_eq!(rate(&mut e, 3001), 1.0);
    }

    #[test]
    fn thresholds_given_at_a_rate_scale_with_each_port_rate() {
        let mut cfg = ecn(400_000, 1_600_000, 0.2);
        assert_eq!(
            cfg.thresholds,
            vec![vec![(400_000, 1_600_000); 2]],
            "one pair"
        );
        let c = EcnConfig {
            enabled: true,
            kmin_bytes: 400_000,
            kmax_bytes: 1_600_000,
            pmax: 0.2,
            mark_point: EcnMarkPoint::Enqueue,
            thresholds_at_gbps: 100.0,
        };
        cfg = Ecn::new(&c, &Rng::new(1), &[vec![100_000, 400_000], vec![25_000]]);
        assert_eq!(
            cfg.thresholds,
            vec![
                vec![(400_000, 1_600_000), (1_600_000, 6_400_000)],
                vec![(100_000, 400_000)]
            ],
            "the HPCC simulator's maps at 25, 100 and 400 Gb/s"
        );
        assert!(
            !cfg.congested(0, 1, 1_600_000),
            "at kmin of the 400 Gb/s port"
        );
        assert!(
            cfg.congested(0, 0, 1_600_001),
            "above kmax of the 100 Gb/s port"
        );
    }

    #[test]
    fn only_ect_frames_are_marked_and_their_checksum_stays_valid() {
        let mut e = ecn(0, 1, 1.0);
        let mut f = frame(0b10);
        e.mark_at(EcnMarkPoint::Enqueue, 0, 1, 10, &mut f);
        let ip = rnic_wire::ipv4::Packet::new_checked(&f[IPV4_OFFSET..]).unwrap();
        assert_eq!(ip.dscp_ecn() & 0b11, CE);
        assert!(ip.verify_checksum());
        assert_eq!(e.marks, vec![vec![0, 1]]);
        let mut not_ect = frame(NOT_ECT);
        e.mark_at(EcnMarkPoint::Enqueue, 0, 0, 10, &mut not_ect);
        assert_eq!(e.total_marks(), 1, "a Not-ECT frame is never marked");
    }

    #[test]
    fn only_the_configured_point_reads_the_queue() {
        let mut e = ecn(0, 1, 1.0);
        let mut f = frame(0b10);
        e.mark_at(EcnMarkPoint::Dequeue, 0, 1, 10, &mut f);
        assert_eq!(
            f,
            frame(0b10),
            "an enqueue marker ignores the dequeue point"
        );
        assert!(e.port_stats().is_empty(), "nor counts what it saw there");
        e.point = EcnMarkPoint::Dequeue;
        e.mark_at(EcnMarkPoint::Dequeue, 0, 1, 10, &mut f);
        assert_eq!(e.total_marks(), 1);
    }

    #[test]
    fn each_port_reports_the_queues_its_frames_joined() {
        let mut e = ecn(1000, 3000, 0.0);
        for q in [0, 1000, 2000, 3000, 3001] {
            e.mark_at(EcnMarkPoint::Enqueue, 0, 1, q, &mut frame(NOT_ECT));
        }
        let got = e.port_stats();
        assert_eq!(got.len(), 1, "port 0 queued nothing");
        let p = got[0];
        assert_eq!((p.switch, p.port, p.frames), (0, 1, 5));
        assert_eq!((p.below_kmin, p.in_band, p.above_kmax), (2, 2, 1));
        assert_eq!((p.mean_queue_bytes, p.max_queue_bytes), (1800, 3001));
    }
}
