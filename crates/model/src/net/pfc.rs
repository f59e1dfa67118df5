//! Priority flow control (IEEE 802.1Qbb, one priority: the RoCE traffic class), switched by
//! `net.pfc`.
//!
//! Why: RoCEv2 fabrics are run lossless. Without flow control an incast (several clients
//! writing into one server port) overflows the switch buffer, and go-back-N plus perftest's
//! 67 ms ACK timeout turn the drops into a collapse that a PFC fabric never shows.
//!
//! The model: a switch accounts the bytes each ingress port has brought that are still
//! queued on any output port. When a frame takes an ingress above `net.pfc_xoff_bytes`, the
//! switch sends a PAUSE up that link; when the ingress's bytes have drained to
//! `net.pfc_xon_bytes`, it sends the resume. Output ports drain at known times (they are
//! store-and-forward queues with fixed departure times), so the resume time is computed
//! when the pause is sent and moved later by every frame that arrives while the pause
//! stands (frames already on the wire when it was sent). The PAUSE and the resume each
//! cross the link back (a 64-byte frame's wire time and the propagation delay); the NIC's
//! transmitter starts no frame while it is paused and finishes the one on the wire.
//!
//! Limits: only ingress ports facing a NIC pause their sender. A switch's ingress from
//! another switch is accounted but never pauses it (a multi-switch fabric can still drop);
//! the PAUSE frames are timing, not frames in the capture; the output buffer
//! (`net.switch_buffer_bytes`) must hold the in-flight headroom above XOFF, as a real
//! switch's headroom buffer does.

use rnic_sim::TimePs;

/// Thresholds of [`Pfc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PfcParams {
    /// An ingress above this many queued bytes pauses its sender.
    pub xoff_bytes: u64,
    /// A paused ingress resumes its sender once drained to this many bytes.
    pub xon_bytes: u64,
    /// Wire time of a PAUSE frame (64 bytes) on the link back, ps.
    pub pause_frame_ps: TimePs,
}

/// Counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct PfcStats {
    /// PAUSE frames sent (each pause episode sends one and one resume).
    pub pauses: u64,
    /// Time NIC transmitters spent paused, summed over NICs, ps.
    pub paused_ps: u64,
    /// Most bytes one ingress port had queued at once.
    pub max_ingress_bytes: u64,
}

/// One ingress port: the frames it brought that are still in the switch.
#[derive(Debug, Clone, Default)]
struct Ingress {
    /// (the time its last bit leaves the output port, bytes).
    queued: Vec<(TimePs, u64)>,
    /// When the switch sends the resume of the pause it holds, if it holds one.
    xon_at: Option<TimePs>,
}

impl Ingress {
    /// Forgets the frames gone by `now`; returns the bytes left.
    fn bytes_at(&mut self, now: TimePs) -> u64 {
        self.queued.retain(|&(leaves, _)| leaves > now);
        self.queued.iter().map(|&(_, b)| b).sum()
    }

    /// The first time the queued bytes are at most `xon` (no more arriving).
    fn drained_to(&self, now: TimePs, xon: u64) -> TimePs {
        let mut left: u64 = self.queued.iter().map(|&(_, b)| b).sum();
        if left <= xon {
            return now;
        }
        let mut leaving = self.queued.clone();
        leaving.sort_unstable();
        for (t, b) in leaving {
            left -= b;
            if left <= xon {
                return t;
            }
        }
        now
    }
}

/// Flow control of every switch ingress port, and the pauses of the NICs' transmitters.
#[derive(Debug, Clone)]
pub struct Pfc {
    p: PfcParams,
    /// Per link direction (the ingress it leads into).
    ingress: Vec<Ingress>,
    /// Per node: its transmitter's pause, `[from, until)`.
    pause: Vec<Option<(TimePs, TimePs)>>,
    /// Counters; `paused_ps` holds the finished pauses only (see [`Pfc::stats`]).
    stats: PfcStats,
}

impl Pfc {
    /// Flow control over `links` link directions and `nodes` NICs.
    pub fn new(p: PfcParams, links: usize, nodes: usize) -> Pfc {
        Pfc {
            p,
            ingress: vec![Ingress::default(); links],
            pause: vec![None; nodes],
            stats: PfcStats::default(),
        }
    }

    /// A frame of `bytes` that came in over link `link` is queued in the switch at `now`
    /// and leaves it at `leaves`. `sender`: the NIC at the far end of that link and the
    /// link's delay back to it, if a NIC sent it.
    pub fn on_queued(
        &mut self,
        now: TimePs,
        link: usize,
        leaves: TimePs,
        bytes: u64,
        sender: Option<(usize, TimePs)>,
    ) {
        let (xoff, xon) = (self.p.xoff_bytes, self.p.xon_bytes);
        let ing = &mut self.ingress[link];
        let queued = ing.bytes_at(now) + bytes;
        ing.queued.push((leaves, bytes));
        self.stats.max_ingress_bytes = self.stats.max_ingress_bytes.max(queued);
        let Some((node, back_ps)) = sender else {
            return;
        };
        let holding = ing.xon_at.is_some_and(|t| t > now);
        if !holding && queued <= xoff {
            return;
        }
        let resume = ing.drained_to(now, xon);
        ing.xon_at = Some(resume);
        let travel = self.p.pause_frame_ps + back_ps;
        let until = resume + travel;
        if holding {
            // A frame that was on the wire when the pause went out: the resume moves later.
            if let Some((_, u)) = self.pause[node].as_mut() {
                *u = (*u).max(until);
            }
            return;
        }
        self.stats.pauses += 1;
        let from = now + travel;
        if let Some((f, u)) = self.pause[node].replace((from, until)) {
            self.stats.paused_ps += u - f;
        }
    }

    /// The time node `node`'s transmitter may start a frame it would start at `t`: `t`, or
    /// the end of a pause `t` falls in.
    pub fn hold(&self, node: usize, t: TimePs) -> TimePs {
        match self.pause.get(node).copied().flatten() {
            Some((from, until)) if (from..until).contains(&t) => until,
            _ => t,
        }
    }

    /// Counters, the pauses still standing included.
    pub fn stats(&self) -> PfcStats {
        let open: u64 = self
            .pause
            .iter()
            .flatten()
            .map(|&(from, until)| until - from)
            .sum();
        PfcStats {
            paused_ps: self.stats.paused_ps + open,
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KB: u64 = 1024;

    fn pfc() -> Pfc {
        let p = PfcParams {
            xoff_bytes: 8 * KB,
            xon_bytes: 4 * KB,
            pause_frame_ps: 5,
        };
        Pfc::new(p, 2, 1)
    }

    #[test]
    fn below_xoff_nothing_pauses() {
        let mut f = pfc();
        for i in 0..2 {
            f.on_queued(i * 10, 0, 1000 + i * 100, 4 * KB, Some((0, 50)));
        }
        assert_eq!(f.stats().pauses, 0);
        assert_eq!(f.hold(0, 500), 500);
    }

    #[test]
    fn above_xoff_pauses_until_drained_to_xon() {
        let mut f = pfc();
        // Three 4 KB frames leaving at 1000, 1100, 1200: above 8 KB at the third; drained
        // to 4 KB when the second leaves (1100). The pause crosses 5 + 50 ps each way.
        for i in 0..3 {
            f.on_queued(i * 10, 0, 1000 + i * 100, 4 * KB, Some((0, 50)));
        }
        assert_eq!(f.stats().pauses, 1);
        assert_eq!(f.hold(0, 74), 74, "before the PAUSE arrives");
        assert_eq!(f.hold(0, 75), 1155);
        assert_eq!(f.hold(0, 1155), 1155);
        assert_eq!(f.stats().paused_ps, 1155 - 75);
        // A frame already on the wire arrives during the pause: the resume moves later.
        f.on_queued(30, 0, 1300, 4 * KB, Some((0, 50)));
        assert_eq!(f.stats().pauses, 1);
        assert_eq!(f.hold(0, 75), 1255);
        assert_eq!(f.stats().max_ingress_bytes, 16 * KB);
    }

    #[test]
    fn a_switch_ingress_is_accounted_but_pauses_nobody() {
        let mut f = pfc();
        for i in 0..4 {
            f.on_queued(i, 1, 1000 + i, 4 * KB, None);
        }
        assert_eq!(f.stats().pauses, 0);
        assert_eq!(f.stats().max_ingress_bytes, 16 * KB);
        assert_eq!(f.hold(0, 100), 100);
    }

    #[test]
    fn a_new_pause_after_the_resume_counts_again() {
        let mut f = pfc();
        for i in 0..3 {
            f.on_queued(i, 0, 100 + i, 4 * KB, Some((0, 10)));
        }
        // Everything gone by 200; fill again.
        for i in 0..3 {
            f.on_queued(200 + i, 0, 300 + i, 4 * KB, Some((0, 10)));
        }
        let s = f.stats();
        assert_eq!(s.pauses, 2);
        // Each pause: from arrival + 15 to the second frame's departure + 15.
        assert_eq!(s.paused_ps, (101 + 15 - (2 + 15)) + (301 + 15 - (202 + 15)));
    }
}
