//! Reordering within a distance: the network emulator holds `distance` consecutive packets
//! and releases them in a random order, so no packet is overtaken by a packet sent
//! `distance` or more places after it, and none overtakes one sent that far before it (the
//! ORNIC paper's emulator "disorders packets within a specified OOO distance").

use rnic_sim::Rng;

/// A reordering element over a packet sequence.
#[derive(Debug, Clone)]
pub struct WindowShuffle {
    distance: usize,
    rng: Rng,
}

impl WindowShuffle {
    /// Reorders within windows of `distance` packets (1 = in order), drawing from `rng`.
    pub fn new(distance: u32, rng: Rng) -> WindowShuffle {
        WindowShuffle {
            distance: distance.max(1) as usize,
            rng,
        }
    }

    /// `sent` in the order the element releases it: each window of `distance` consecutive
    /// packets shuffled (Fisher-Yates), windows kept in order.
    pub fn reorder<T>(&mut self, mut sent: Vec<T>) -> Vec<T> {
        for window in sent.chunks_mut(self.distance) {
            for i in (1..window.len()).rev() {
                let j = self.rng.gen_index(i + 1);
                window.swap(i, j);
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_within_the_distance_and_keeps_every_packet() {
        let mut w = WindowShuffle::new(64, Rng::new(7));
        let out = w.reorder((0u32..1000).collect());
        let mut sorted = out.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        assert_ne!(out, sorted);
        for (pos, &psn) in out.iter().enumerate() {
            assert!((pos as i64 - i64::from(psn)).abs() < 64, "{psn} at {pos}");
        }
        let again = WindowShuffle::new(64, Rng::new(7)).reorder((0u32..1000).collect());
        assert_eq!(out, again);
    }
}
