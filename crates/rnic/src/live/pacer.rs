//! perftest's software rate limiter (`--rate_limit`, `--rate_units`, `--burst_size`,
//! `--rate_limit_type SW`): a bandwidth loop posts in bursts of `burst_size` work requests,
//! and a burst may start only a gap after the previous one started, the gap being a burst
//! at the limit's message rate. As perftest's `run_iter_bw`, the check is made at each QP's
//! turn: a QP whose turn comes while no burst is under way and the gap is not over posts
//! nothing that turn.
//!
//! The limit is on posting, so a short run can beat it by up to a burst: the first burst
//! goes at once (perftest's too).

use std::time::{Duration, Instant};

/// The units of `--rate_limit`, as perftest's `--rate_units`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnits {
    /// `M`: MiB/s of payload.
    MebibytesPerS,
    /// `g` (perftest's default): Gb/s of payload.
    GigabitsPerS,
    /// `p`: messages per second.
    MessagesPerS,
}

impl RateUnits {
    /// perftest's letters: `M`, `g`, `p`.
    pub fn parse(s: &str) -> Option<RateUnits> {
        match s {
            "M" => Some(RateUnits::MebibytesPerS),
            "g" => Some(RateUnits::GigabitsPerS),
            "p" => Some(RateUnits::MessagesPerS),
            _ => None,
        }
    }
}

/// A software rate limit: `rate` in `units`, posted in bursts of `burst` messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub rate: f64,
    pub units: RateUnits,
    pub burst: u32,
}

impl RateLimit {
    /// Messages per second at this limit for messages of `size_bytes`, as perftest
    /// computes its `rate_limit_pps`.
    pub fn messages_per_s(&self, size_bytes: u64) -> f64 {
        let size = size_bytes.max(1) as f64;
        match self.units {
            RateUnits::MebibytesPerS => self.rate / size * 1_048_576.0,
            RateUnits::GigabitsPerS => self.rate / (size * 8.0) * 1e9,
            RateUnits::MessagesPerS => self.rate,
        }
    }

    /// The time from one burst's start to the next's.
    pub fn gap(&self, size_bytes: u64) -> Duration {
        let bursts_per_s = self.messages_per_s(size_bytes) / f64::from(self.burst.max(1));
        Duration::from_secs_f64((1.0 / bursts_per_s).min(3600.0))
    }
}

/// The limiter's state in one bandwidth loop; without a limit it lets every post through.
#[derive(Debug)]
pub struct Pacer {
    /// The gap between bursts' starts and the burst's size; `None`: no limit.
    limit: Option<(Duration, u64)>,
    /// A burst is under way, `posted_in_burst` of it posted.
    sending: bool,
    posted_in_burst: u64,
    /// No burst starts before this.
    next_burst_at: Instant,
}

impl Pacer {
    /// The limiter of a loop posting messages of `size_bytes` under `limit`.
    pub fn new(limit: Option<RateLimit>, size_bytes: u64) -> Pacer {
        Pacer {
            limit: limit.map(|l| (l.gap(size_bytes), u64::from(l.burst.max(1)))),
            sending: false,
            posted_in_burst: 0,
            next_burst_at: Instant::now(),
        }
    }

    /// At a QP's turn: whether it may post now, starting a burst if none is under way and
    /// the gap is over. `now` reads the clock, which only a paced loop does: an unpaced one
    /// takes this path for every QP of every round.
    pub fn may_post(&mut self, now: impl FnOnce() -> Instant) -> bool {
        let Some((gap, _)) = self.limit else {
            return true;
        };
        if !self.sending {
            let now = now();
            if now < self.next_burst_at {
                return false;
            }
            self.next_burst_at = now + gap;
            self.sending = true;
            self.posted_in_burst = 0;
        }
        true
    }

    /// Whether the burst under way has room for another post.
    pub fn in_burst(&self) -> bool {
        self.limit.is_none() || self.sending
    }

    /// One post made: the burst ends at its size.
    pub fn posted(&mut self) {
        if let Some((_, burst)) = self.limit {
            self.posted_in_burst += 1;
            if self.posted_in_burst >= burst {
                self.sending = false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gap_is_a_burst_at_the_limits_message_rate_as_perftest_computes_it() {
        let gbps = RateLimit {
            rate: 1.0,
            units: RateUnits::GigabitsPerS,
            burst: 10,
        };
        // 1 Gb/s of 4096-byte messages: 30,517.6 messages/s, a burst of 10 every 327.68 µs.
        assert!((gbps.messages_per_s(4096) - 30_517.578).abs() < 0.01);
        assert_eq!(gbps.gap(4096).as_nanos(), 327_680);
        let mib = RateLimit {
            units: RateUnits::MebibytesPerS,
            rate: 64.0,
            ..gbps
        };
        assert_eq!(mib.messages_per_s(65_536), 1024.0);
        let pps = RateLimit {
            units: RateUnits::MessagesPerS,
            rate: 1000.0,
            burst: 1,
        };
        assert_eq!(pps.gap(8).as_micros(), 1000);
        assert_eq!(RateUnits::parse("g"), Some(RateUnits::GigabitsPerS));
        assert_eq!(RateUnits::parse("G"), None);
    }

    #[test]
    fn bursts_start_a_gap_apart_and_end_at_their_size() {
        let limit = RateLimit {
            rate: 1000.0,
            units: RateUnits::MessagesPerS,
            burst: 3,
        };
        let mut p = Pacer::new(Some(limit), 64);
        let t0 = Instant::now();
        assert!(p.may_post(|| t0));
        for _ in 0..3 {
            assert!(p.in_burst());
            p.posted();
        }
        assert!(!p.in_burst(), "the burst of 3 is over");
        assert!(
            !p.may_post(|| t0 + Duration::from_millis(2)),
            "within the 3 ms gap"
        );
        assert!(
            p.may_post(|| t0 + Duration::from_millis(3)),
            "the gap is over"
        );
        let mut free = Pacer::new(None, 64);
        let clock_read = std::cell::Cell::new(false);
        let read = || {
            clock_read.set(true);
            t0
        };
        assert!(free.may_post(read) && free.in_burst());
        assert!(!clock_read.get(), "an unpaced loop reads no clock");
        free.posted();
        assert!(free.in_burst());
    }
}
