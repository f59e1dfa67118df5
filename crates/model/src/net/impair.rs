//! The impairment element, placeable on any link: seeded loss, duplication, bounded
//! reordering (a frame is held back by 0..=depth frame slots, uniformly, so it is overtaken
//! by at most `depth` later frames) and a fixed extra delay.

use rnic_sim::{Rng, TimePs};

/// What happens to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The frame is lost.
    pub drop: bool,
    /// A copy is delivered too (after the original, by `dup_delay_ps`).
    pub dup: bool,
    /// Extra delay of the frame, ps.
    pub delay_ps: TimePs,
    /// Extra delay of the copy beyond the original's, ps.
    pub dup_delay_ps: TimePs,
}

/// Counters of one element.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImpairStats {
    /// Frames seen.
    pub frames: u64,
    /// Frames dropped.
    pub dropped: u64,
    /// Frames duplicated.
    pub duplicated: u64,
    /// Frames held back for reordering.
    pub reordered: u64,
}

/// An impairment element.
#[derive(Debug, Clone)]
pub struct Impair {
    rng: Rng,
    loss: f64,
    dup: f64,
    depth: u32,
    slot_ps: TimePs,
    extra_ps: TimePs,
    /// Counters.
    pub stats: ImpairStats,
}

impl Impair {
    /// An element with its own RNG stream; `slot_ps` is the reordering unit (one MTU frame
    /// at line rate).
    pub fn new(
        rng: Rng,
        loss: f64,
        dup: f64,
        depth: u32,
        slot_ps: TimePs,
        extra_ps: TimePs,
    ) -> Self {
        Impair {
            rng,
            loss,
            dup,
            depth,
            slot_ps,
            extra_ps,
            stats: ImpairStats::default(),
        }
    }

    /// Whether the element does anything.
    pub fn is_active(&self) -> bool {
        self.loss > 0.0 || self.dup > 0.0 || self.depth > 0 || self.extra_ps > 0
    }

    /// Decides the fate of one frame.
    pub fn judge(&mut self) -> Verdict {
        self.stats.frames += 1;
        let mut v = Verdict {
            drop: false,
            dup: false,
            delay_ps: self.extra_ps,
            dup_delay_ps: 0,
        };
        if self.loss > 0.0 && self.rng.gen_bool(self.loss) {
            self.stats.dropped += 1;
            v.drop = true;
            return v;
        }
        if self.depth > 0 {
            let k = self.rng.gen_below(u64::from(self.depth) + 1);
            if k > 0 {
                self.stats.reordered += 1;
            }
            v.delay_ps += k * self.slot_ps;
        }
        if self.dup > 0.0 && self.rng.gen_bool(self.dup) {
            self.stats.duplicated += 1;
            v.dup = true;
            v.dup_delay_ps = self.slot_ps;
        }
        v
    }
}
