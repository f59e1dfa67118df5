//! A seeded in-memory fabric between endpoints, with impairments.
//!
//! It stands in for a network in protocol tests and the loopback demo: frames handed to
//! [`Fabric::send`] come out of [`Fabric::pop_due`] at their delivery time, possibly dropped,
//! duplicated, corrupted or delayed past later frames (bounded reordering). Every decision is
//! drawn from one seeded RNG, so a seed replays the same run exactly.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rnic_sim::Rng;

/// What the fabric does to frames. Probabilities are per frame, in `0.0..=1.0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Impairments {
    /// One-way delay every frame sees, in picoseconds.
    pub delay_ps: u64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame is delivered twice (the copy after a random extra delay).
    pub duplicate: f64,
    /// Probability that a frame is held back by a random extra delay of up to
    /// `reorder_window_ps`, so later frames overtake it (bounded reordering).
    pub reorder: f64,
    /// Largest extra delay of a reordered or duplicated frame, in picoseconds.
    pub reorder_window_ps: u64,
    /// Probability that one random byte of a frame is flipped (the receiver must drop it).
    pub corrupt: f64,
}

impl Impairments {
    /// A perfect wire with the given one-way delay.
    pub fn clean(delay_ps: u64) -> Self {
        Impairments {
            delay_ps,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_window_ps: 0,
            corrupt: 0.0,
        }
    }

    /// Checks that every probability is a probability.
    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
            ("corrupt", self.corrupt),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!(
                    "impairment `{name}` = {p} is not a probability: use a value in 0.0..=1.0"
                ));
            }
        }
        Ok(())
    }
}

/// Counters of what the fabric did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    pub sent: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub corrupted: u64,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    at_ps: u64,
    seq: u64,
    dst: usize,
    frame: Vec<u8>,
}

/// The fabric: frames in flight, ordered by (delivery time, send order).
#[derive(Debug)]
pub struct Fabric {
    rng: Rng,
    impair: Impairments,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    seq: u64,
    stats: FabricStats,
}

impl Fabric {
    pub fn new(seed: u64, impair: Impairments) -> Self {
        Fabric {
            rng: Rng::new(seed),
            impair,
            in_flight: BinaryHeap::new(),
            seq: 0,
            stats: FabricStats::default(),
        }
    }

    pub fn impairments(&self) -> &Impairments {
        &self.impair
    }

    /// Changes the impairments from now on (frames already in flight keep their fate).
    pub fn set_impairments(&mut self, impair: Impairments) {
        self.impair = impair;
    }

    pub fn stats(&self) -> &FabricStats {
        &self.stats
    }

    /// Hands a frame to the fabric at `now_ps` for endpoint `dst`.
    pub fn send(&mut self, now_ps: u64, dst: usize, frame: &[u8]) {
        self.stats.sent += 1;
        if self.rng.gen_bool(self.impair.loss) {
            self.stats.dropped += 1;
            return;
        }
        let mut at_ps = now_ps + self.impair.delay_ps;
        if self.rng.gen_bool(self.impair.reorder) {
            self.stats.reordered += 1;
            at_ps += self.extra_delay();
        }
        if self.rng.gen_bool(self.impair.duplicate) {
            self.stats.duplicated += 1;
            let copy_at = at_ps + self.extra_delay();
            let copy = self.maybe_corrupt(frame.to_vec());
            self.enqueue(copy_at, dst, copy);
        }
        let frame = self.maybe_corrupt(frame.to_vec());
        self.enqueue(at_ps, dst, frame);
    }

    /// Time of the next delivery, if any frame is in flight.
    pub fn next_delivery_ps(&self) -> Option<u64> {
        self.in_flight.peek().map(|Reverse(f)| f.at_ps)
    }

    /// The next frame due at or before `now_ps`, with its destination.
    pub fn pop_due(&mut self, now_ps: u64) -> Option<(usize, Vec<u8>)> {
        match self.in_flight.peek() {
            Some(Reverse(f)) if f.at_ps <= now_ps => {
                let Reverse(f) = self.in_flight.pop()?;
                self.stats.delivered += 1;
                Some((f.dst, f.frame))
            }
            _ => None,
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    fn extra_delay(&mut self) -> u64 {
        if self.impair.reorder_window_ps == 0 {
            0
        } else {
            self.rng.gen_range(0..self.impair.reorder_window_ps + 1)
        }
    }

    fn maybe_corrupt(&mut self, mut frame: Vec<u8>) -> Vec<u8> {
        if !frame.is_empty() && self.rng.gen_bool(self.impair.corrupt) {
            self.stats.corrupted += 1;
            let at = self.rng.gen_range(0..frame.len() as u64) as usize;
            let bit = 1u8 << self.rng.gen_range(0..8);
            frame[at] ^= bit;
        }
        frame
    }

    fn enqueue(&mut self, at_ps: u64, dst: usize, frame: Vec<u8>) {
        self.seq += 1;
        self.in_flight.push(Reverse(InFlight {
            at_ps,
            seq: self.seq,
            dst,
            frame,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(f: &mut Fabric) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(t) = f.next_delivery_ps() {
            while let Some(d) = f.pop_due(t) {
                out.push(d);
            }
        }
        out
    }

    #[test]
    fn clean_fabric_delivers_in_order_after_delay() {
        let mut f = Fabric::new(1, Impairments::clean(1_000));
        f.send(0, 1, &[1]);
        f.send(0, 1, &[2]);
        assert_eq!(f.next_delivery_ps(), Some(1_000));
        assert!(f.pop_due(999).is_none());
        assert_eq!(drain(&mut f), vec![(1, vec![1]), (1, vec![2])]);
    }

    #[test]
    fn impairments_are_seeded_and_counted() {
        let impair = Impairments {
            delay_ps: 10,
            loss: 0.2,
            duplicate: 0.1,
            reorder: 0.3,
            reorder_window_ps: 100,
            corrupt: 0.05,
        };
        let run = |seed| {
            let mut f = Fabric::new(seed, impair.clone());
            for i in 0..1000u32 {
                f.send(u64::from(i), 0, &i.to_be_bytes());
            }
            (drain(&mut f), f.stats().clone())
        };
        let (a, sa) = run(7);
        let (b, sb) = run(7);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(sa.dropped > 100 && sa.dropped < 300, "{sa:?}");
        assert!(
            sa.duplicated > 30 && sa.reordered > 150 && sa.corrupted > 10,
            "{sa:?}"
        );
        assert_eq!(sa.delivered, sa.sent - sa.dropped + sa.duplicated);
        let in_order = a.windows(2).all(|w| w[0].1 <= w[1].1);
        assert!(!in_order, "reordering must reorder something");
    }

    #[test]
    fn bad_probability_is_named() {
        let mut i = Impairments::clean(0);
        i.loss = 1.5;
        let e = i.validate().unwrap_err();
        assert!(e.contains("loss"), "{e}");
    }
}
