//! A flow's message-size distribution ([`SizeMix`]): `size = { values = [...], weights =
//! [...] }` in a `[[flow]]` table.
//!
//! Each operation's size is drawn from the values with probabilities proportional to the
//! weights, by a hash of the run's seed, the QP pair and the operation's index on the QP,
//! never by a shared random stream. So the sender (building the k-th WQE of a pair) and the
//! payload oracle (finding which message, and which offset in it, a placed packet's PSN
//! belongs to) draw the same k-th size independently, every byte is still checked, and
//! the sizes do not depend on the order in which events run.

use serde::{Deserialize, Serialize};

use crate::host::pattern::splitmix;

/// Message sizes and their weights.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeMix {
    /// Message sizes, bytes.
    pub values: Vec<u64>,
    /// Relative weight of each size (same length as `values`, each ≥ 1).
    pub weights: Vec<u32>,
}

impl SizeMix {
    /// Checks the mix: values and weights of one length, at least one value, no weight 0.
    pub fn check(&self) -> Result<(), String> {
        if self.values.is_empty() {
            return Err("values is empty: give at least one size".into());
        }
        if self.weights.len() != self.values.len() {
            return Err(format!(
                "weights has {} entries for {} values: give one weight per value (or leave \
                 weights out for equal weights)",
                self.weights.len(),
                self.values.len()
            ));
        }
        if self.weights.contains(&0) {
            return Err("a weight is 0: leave that size out instead".into());
        }
        Ok(())
    }

    /// The size of operation `k` of the pair keyed `pair_key` in a run seeded `seed`.
    pub fn draw(&self, seed: u64, pair_key: u64, k: u64) -> u64 {
        let total: u64 = self.weights.iter().map(|&w| u64::from(w)).sum();
        let h = splitmix(seed ^ splitmix(0x51_2e00_0000 ^ pair_key) ^ splitmix(k));
        let mut r = h % total.max(1);
        for (&v, &w) in self.values.iter().zip(&self.weights) {
            if r < u64::from(w) {
                return v;
            }
            r -= u64::from(w);
        }
        self.values.last().copied().unwrap_or(1)
    }

    /// The smallest size.
    pub fn min(&self) -> u64 {
        self.values.iter().copied().min().unwrap_or(1)
    }

    /// The largest size (what the buffers hold).
    pub fn max(&self) -> u64 {
        self.values.iter().copied().max().unwrap_or(1)
    }

    /// The weighted mean size, bytes.
    pub fn mean(&self) -> f64 {
        let total: f64 = self.weights.iter().map(|&w| f64::from(w)).sum();
        let sum: f64 = self
            .values
            .iter()
            .zip(&self.weights)
            .map(|(&v, &w)| v as f64 * f64::from(w))
            .sum();
        sum / total.max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_the_weights_and_repeat() {
        let m = SizeMix {
            values: vec![64, 4096, 65536],
            weights: vec![6, 3, 1],
        };
        let mut counts = [0u32; 3];
        for k in 0..20_000 {
            let s = m.draw(7, 3, k);
            assert_eq!(s, m.draw(7, 3, k));
            counts[m.values.iter().position(|&v| v == s).unwrap()] += 1;
        }
        for (c, w) in counts.iter().zip([0.6, 0.3, 0.1]) {
            let share = f64::from(*c) / 20_000.0;
            assert!((share - w).abs() < 0.02, "{counts:?}");
        }
        assert_ne!(
            (0..32).map(|k| m.draw(7, 3, k)).collect::<Vec<_>>(),
            (0..32).map(|k| m.draw(7, 4, k)).collect::<Vec<_>>(),
            "pairs draw their own sequences"
        );
        assert_eq!((m.min(), m.max()), (64, 65536));
        assert!((m.mean() - (0.6 * 64.0 + 0.3 * 4096.0 + 0.1 * 65536.0)).abs() < 1e-9);
    }

    #[test]
    fn bad_mixes_say_what_to_fix() {
        let m = |values: Vec<u64>, weights: Vec<u32>| SizeMix { values, weights }.check();
        assert!(m(vec![], vec![]).unwrap_err().contains("values is empty"));
        assert!(m(vec![1, 2], vec![1])
            .unwrap_err()
            .contains("one weight per value"));
        assert!(m(vec![1, 2], vec![1, 0])
            .unwrap_err()
            .contains("weight is 0"));
        assert!(m(vec![1, 2], vec![1, 1]).is_ok());
    }
}
