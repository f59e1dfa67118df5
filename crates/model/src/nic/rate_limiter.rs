//! The per-QP rate limiter of the TX engine (perftest `--rate_limit`, the NIC's own
//! limiter, "HW" or packet pacing "PP"): a token bucket per QP in bytes on the wire (each
//! frame padded to the minimum, with its FCS, preamble and inter-frame gap, as the port
//! serializes it).
//!
//! A QP's request packet may leave when its bucket is not in debt; the frame's bytes are then
//! taken from it (it may go into debt by at most one frame, so a frame larger than the burst
//! still goes, and the long-run rate holds exactly). The bucket refills at `rate` and holds
//! at most `burst_bytes`, what an idle QP may send back to back. A QP in debt leaves the TX
//! engine's queue until its bucket is even again; the other QPs go on meanwhile. ACKs and
//! READ responses are not limited: the limit is on what the QP itself sends.

use rnic_sim::TimePs;

/// Counters of the limiter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RateStats {
    /// Times a QP was held back for want of tokens.
    pub deferrals: u64,
    /// Bytes on the wire charged (frame, FCS, preamble and inter-frame gap).
    pub charged_bytes: u64,
}

/// One QP's bucket.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    /// Tokens, bytes (negative: in debt).
    tokens: f64,
    /// When `tokens` was last brought up to date.
    at: TimePs,
    /// A wake-up to re-enlist the QP is pending.
    wake_pending: bool,
}

/// The rate limiter of one NIC.
#[derive(Debug, Default)]
pub struct RateLimiter {
    /// Refill rate, bytes per ps (0: off).
    bytes_per_ps: f64,
    /// Most tokens a bucket holds, bytes.
    burst_bytes: f64,
    buckets: Vec<Bucket>,
    /// Counters.
    pub stats: RateStats,
}

impl RateLimiter {
    /// A limiter of `gbps` per QP (0: off) with buckets of `burst_bytes`.
    pub fn new(gbps: f64, burst_bytes: u64) -> Self {
        RateLimiter {
            bytes_per_ps: gbps / 8.0 / 1000.0,
            burst_bytes: burst_bytes as f64,
            ..RateLimiter::default()
        }
    }

    /// Whether the limiter runs.
    pub fn on(&self) -> bool {
        self.bytes_per_ps > 0.0
    }

    fn bucket(&mut self, qpn: u32, now: TimePs) -> &mut Bucket {
        let i = qpn as usize;
        if self.buckets.len() <= i {
            self.buckets.resize(
                i + 1,
                Bucket {
                    tokens: self.burst_bytes,
                    at: 0,
                    wake_pending: false,
                },
            );
        }
        let (rate, cap) = (self.bytes_per_ps, self.burst_bytes);
        let b = &mut self.buckets[i];
        if now > b.at {
            b.tokens = (b.tokens + (now - b.at) as f64 * rate).min(cap);
            b.at = now;
        }
        b
    }

    /// Whether `qpn` may send a request packet at `now`; if not, when it may (`Err`), and
    /// whether the caller must schedule the wake-up (none pending yet).
    pub fn check(&mut self, qpn: u32, now: TimePs) -> Result<(), (TimePs, bool)> {
        if !self.on() {
            return Ok(());
        }
        let rate = self.bytes_per_ps;
        let b = self.bucket(qpn, now);
        if b.tokens >= 0.0 {
            return Ok(());
        }
        // Saturating: a wake-up past the clock's end must not wrap into the past.
        let at = now.saturating_add((-b.tokens / rate).ceil() as TimePs);
        let schedule = !b.wake_pending;
        b.wake_pending = true;
        self.stats.deferrals += 1;
        Err((at, schedule))
    }

    /// The wake-up of `qpn` came.
    pub fn woke(&mut self, qpn: u32) {
        if let Some(b) = self.buckets.get_mut(qpn as usize) {
            b.wake_pending = false;
        }
    }

    /// A request frame of `bytes` of `qpn` left at `now`.
    pub fn charge(&mut self, qpn: u32, bytes: u64, now: TimePs) {
        if !self.on() {
            return;
        }
        self.bucket(qpn, now).tokens -= bytes as f64;
        self.stats.charged_bytes += bytes;
    }
}

impl crate::stats::Report for RateLimiter {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        if self.on() {
            reg.record(prefix, &self.stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sending whenever allowed, a QP's long-run rate is the limit, whatever the frame size.
    #[test]
    fn the_long_run_rate_is_the_limit() {
        for frame in [64u64, 1100, 4154] {
            let mut r = RateLimiter::new(10.0, 0);
            let (mut now, mut sent) = (0u64, 0u64);
            while now < 1_000_000_000 {
                match r.check(7, now) {
                    Ok(()) => {
                        r.charge(7, frame, now);
                        sent += frame;
                    }
                    Err((at, _)) => {
                        r.woke(7);
                        now = at;
                    }
                }
            }
            // 10 Gb/s over 1 ms = 1.25 MB, within one frame.
            let want = 1_250_000.0;
            assert!(
                (sent as f64 - want).abs() <= frame as f64 + 1.0,
                "{frame}: {sent}"
            );
        }
    }

    #[test]
    fn a_burst_goes_back_to_back_then_paces() {
        let mut r = RateLimiter::new(8.0, 4000); // 8 Gb/s = 1 B/ns
        let mut at_once = 0;
        while r.check(1, 0).is_ok() {
            r.charge(1, 1000, 0);
            at_once += 1;
        }
        // The burst, and one frame of debt.
        assert_eq!(at_once, 5, "the burst");
        let (when, schedule) = r.check(1, 0).unwrap_err();
        assert!(!schedule, "one wake-up is pending already");
        assert_eq!(when, 1000 * 1000, "1000 B of debt at 1 B/ns");
        assert!(r.check(2, 0).is_ok(), "other QPs have their own buckets");
    }

    #[test]
    fn off_limits_nothing() {
        let mut r = RateLimiter::new(0.0, 0);
        for _ in 0..100 {
            assert!(r.check(1, 0).is_ok());
            r.charge(1, 1 << 20, 0);
        }
    }
}
