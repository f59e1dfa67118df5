//! Reordering within a distance, as the ORNIC paper's FPGA network emulator does: the
//! element takes windows of `distance` consecutive frames and releases each window in a
//! random order, `distance` frame slots after the window opened. Frames arriving back to
//! back at line rate therefore leave as a shuffle within each window and windows stay in
//! order: no frame is overtaken by one sent `distance` or more places after it. Pure
//! acknowledgements pass untouched. (The impairment's `reorder_depth` instead delays each
//! frame independently.)

use rnic_sim::{Rng, TimePs};

use super::element::{ElementStats, Emitted, Fate, LinkElement};

/// A window-shuffle element.
#[derive(Debug, Clone)]
pub struct ReorderWindow {
    rng: Rng,
    distance: u32,
    slot_ps: TimePs,
    window_start_ps: TimePs,
    /// Release order of the current window's frames.
    perm: Vec<u32>,
    /// Frames of the current window seen so far.
    seen: u32,
    stats: ElementStats,
}

impl ReorderWindow {
    /// Windows of `distance` frames (0 or 1: in order); `slot_ps` is one MTU frame at line
    /// rate.
    pub fn new(rng: Rng, distance: u32, slot_ps: TimePs) -> ReorderWindow {
        ReorderWindow {
            rng,
            distance,
            slot_ps,
            window_start_ps: 0,
            perm: Vec::new(),
            seen: distance,
            stats: ElementStats::default(),
        }
    }

    /// Whether the element reorders at all.
    pub fn is_active(&self) -> bool {
        self.distance > 1
    }

    fn open_window(&mut self, now: TimePs) {
        self.window_start_ps = now;
        self.perm = (0..self.distance).collect();
        for i in (1..self.perm.len()).rev() {
            let j = self.rng.gen_index(i + 1);
            self.perm.swap(i, j);
        }
        self.seen = 0;
    }
}

impl LinkElement for ReorderWindow {
    fn on_frame(&mut self, now: TimePs, frame: &mut Vec<u8>, _emit: &mut Vec<Emitted>) -> Fate {
        self.stats.frames += 1;
        // Data frames only: a sparse ACK stream would wait for windows it cannot fill.
        // Nor the connection managers' MADs, sent before the traffic.
        if !self.is_active() || super::impair::is_ack(frame) || super::impair::is_cm_mad(frame) {
            return Fate::default();
        }
        if self.seen >= self.distance {
            self.open_window(now);
        }
        let k = self.perm[self.seen as usize];
        self.seen += 1;
        let release =
            self.window_start_ps + (u64::from(self.distance) + u64::from(k)) * self.slot_ps;
        let delay_ps = release.saturating_sub(now);
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

    #[test]
    fn back_to_back_frames_leave_shuffled_within_each_window() {
        let slot = 1000;
        let mut e = ReorderWindow::new(Rng::new(5), 64, slot);
        let mut out: Vec<(TimePs, u32)> = (0..640u32)
            .map(|i| {
                let now = u64::from(i) * slot;
                let f = e.on_frame(now, &mut Vec::new(), &mut Vec::new());
                assert!(!f.drop);
                (now + f.delay_ps, i)
            })
            .collect();
        out.sort();
        let order: Vec<u32> = out.iter().map(|o| o.1).collect();
        assert_ne!(order, (0..640).collect::<Vec<_>>());
        for (pos, &i) in order.iter().enumerate() {
            assert_eq!(pos as u32 / 64, i / 64, "frame {i} left its window");
        }
    }

    /// A RoCEv2 frame (Ethernet, IPv4, UDP to 4791, BTH) with `opcode` and nothing after.
    fn roce_frame(opcode: rnic_wire::Opcode) -> Vec<u8> {
        let mut f = vec![0u8; 42 + 12];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[23] = 17;
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        f[42] = opcode as u8;
        f
    }

    /// The emulator reorders data: RoCEv2 ACKs and ORNIC's out-of-order ACKs and bitmap NAKs
    /// pass at once (they used to be shuffled as data when out of order).
    #[test]
    fn acknowledgements_pass_untouched_data_waits() {
        use rnic_wire::Opcode;
        let mut e = ReorderWindow::new(Rng::new(5), 64, 1000);
        for op in [Opcode::RcAck, Opcode::OooAck, Opcode::OooNak] {
            let f = e.on_frame(0, &mut roce_frame(op), &mut Vec::new());
            assert_eq!(f, Fate::default(), "{op:?}");
        }
        let f = e.on_frame(0, &mut roce_frame(Opcode::OooWriteSpot), &mut Vec::new());
        assert!(f.delay_ps >= 64 * 1000, "{f:?}");
    }

    #[test]
    fn distance_one_is_in_order() {
        let mut e = ReorderWindow::new(Rng::new(5), 1, 1000);
        assert!(!e.is_active());
        assert_eq!(
            e.on_frame(0, &mut Vec::new(), &mut Vec::new()),
            Fate::default()
        );
    }
}
