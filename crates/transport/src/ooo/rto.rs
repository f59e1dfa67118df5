//! The out-of-order requester's retransmission timer: a smoothed round-trip estimator over
//! the QP's own measured round trips, floored at the configured timeout.
//!
//! The ORNIC paper resends from the unacknowledged PSN when a QP sees no ACK or NAK "for a
//! specific time, such as (RTT + OTD / B)", and sizes its structures for a datacenter RTT
//! (90 µs); it says nothing of how a NIC learns the RTT. A timer fixed at a configured RTT
//! that is shorter than the path's (a 20 km link's round trip is about 200 µs) fires on every
//! WQE and resends packets that were not lost. A real NIC's retransmission timer measures
//! instead, as TCP's does (RFC 6298): this estimator keeps the smoothed RTT (SRTT) and its
//! mean deviation (RTTVAR) from samples and proposes SRTT + 4 × RTTVAR.
//!
//! The configured timeout (`ooo.rtt_ns` + OTD / B) is both the initial value (before the
//! first sample) and the minimum: where the measured round trip is within the paper's
//! assumption, the paper's timer runs unchanged, and a timer never fires sooner than the
//! paper allows for its OTD's reordering. Only a path longer than the configured RTT
//! stretches it.
//!
//! RFC 6298's timeout is SRTT + max(G, 4 × RTTVAR), G the clock's granularity. Here the
//! paper's own allowance, OTD / B, takes G's place, so a measured timer is the paper's
//! formula with the measured round trip: SRTT + OTD / B at least. Without it, on a path
//! whose round trips are all alike (a simulated one is exactly alike), RTTVAR decays to
//! nothing and the timer fires at the very picosecond the ACK lands: ORNIC's 1 KiB WRITEs
//! over a 20 km link timed out on every other WQE (1,474 timeouts in 2 ms of window, one
//! packet resent).
//!
//! Samples follow Karn's rule: one packet is timed at a time, from its first sending to the
//! cumulative ACK that covers it; a resend or a timeout discards the sample in progress (an
//! ACK after a resend cannot tell which copy it answers, and one held back by a hole measures
//! the repair, not the path). Karn's rule alone would never learn a round trip longer than
//! the timer: every WQE would time out before its first ACK and every sample be discarded.
//! So, as RFC 6298 requires, each timeout doubles the timer ([`MAX_BACKOFF_SHIFT`] times at
//! most) until a valid sample arrives.
//!
//! The cap stays at 64 × the estimate, below RFC 6298's 60 s. Tried on 2026-11-30: doubling
//! up to 60 s before a QP's first sample let a receiver slower than the timer
//! (`nic.rx_pkt_cycles` = 10^6, 1 ms a packet) be learnt, but under heavy loss Karn's rule
//! leaves a WQE without a sample for good, and twenty 64 KiB WRITEs at 30 % loss took 29 s
//! simulated instead of 128 ms. With the cap, such a receiver gets a fresh copy of every
//! unacknowledged packet at each timeout, faster than it drains them, until a WQE takes
//! `retry_cnt` timeouts in a row without progress and fails with RETRY_EXC_ERR (go-back-N,
//! with its 67 ms timer, finishes there).

/// Most doublings of the timer after successive timeouts (64 × the estimate).
pub const MAX_BACKOFF_SHIFT: u32 = 6;

/// Timeouts a WQE (an out-of-order WRITE or READ) may still take without progress before it
/// fails with RETRY_EXC_ERR: the QP's `retry_cnt`, reloaded by each step of progress, as a
/// go-back-N QP counts its timeouts. Unlimited, it resends for ever (the engine's own tests
/// and benches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retries {
    limit: Option<u8>,
    left: u8,
}

impl Retries {
    /// `retry_cnt` timeouts in a row, and one more, fail the WQE.
    pub fn limited(retry_cnt: u8) -> Retries {
        Retries {
            limit: Some(retry_cnt),
            left: retry_cnt,
        }
    }

    /// Timeouts never fail the WQE.
    pub fn unlimited() -> Retries {
        Retries {
            limit: None,
            left: 0,
        }
    }

    /// Progress (or a new WQE): the whole count again.
    pub fn reload(&mut self) {
        self.left = self.limit.unwrap_or(0);
    }

    /// A timeout: spends one retry, or says (`false`) that none is left.
    pub fn spend(&mut self) -> bool {
        if self.limit.is_none() {
            return true;
        }
        let Some(left) = self.left.checked_sub(1) else {
            return false;
        };
        self.left = left;
        true
    }
}

/// Smoothed round trip and retransmission timeout of one requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RtoEstimator {
    /// The configured timeout: the value before the first sample, and the least ever used.
    floor_ps: u64,
    /// Added to the measured round trip at least (OTD / B): RFC 6298's G.
    margin_ps: u64,
    /// Smoothed RTT (SRTT), once sampled.
    srtt_ps: Option<u64>,
    /// Mean deviation of the samples from SRTT (RTTVAR).
    rttvar_ps: u64,
    /// The packet being timed: its index in the WQE and when it was first sent.
    timed: Option<(u32, u64)>,
    /// Doublings of the timer since the latest sample (timeouts in a row).
    backoff_shift: u32,
    /// Round-trip samples taken.
    pub samples: u64,
}

impl RtoEstimator {
    /// An estimator whose initial and least timeout is `floor_ps`, and whose measured
    /// timeout exceeds the smoothed round trip by `margin_ps` at least.
    pub fn new(floor_ps: u64, margin_ps: u64) -> RtoEstimator {
        RtoEstimator {
            floor_ps,
            margin_ps,
            srtt_ps: None,
            rttvar_ps: 0,
            timed: None,
            backoff_shift: 0,
            samples: 0,
        }
    }

    /// The retransmission timeout now: SRTT + max(margin, 4 × RTTVAR) (RFC 6298), at least
    /// the floor, doubled for each timeout since the latest sample.
    pub fn timeout_ps(&self) -> u64 {
        let base = self.srtt_ps.map_or(self.floor_ps, |srtt| {
            (srtt + self.margin_ps.max(4 * self.rttvar_ps)).max(self.floor_ps)
        });
        base.saturating_mul(1 << self.backoff_shift)
    }

    /// The timer fired: the sample in progress is discarded and the timer backs off.
    pub fn timed_out(&mut self) {
        self.timed = None;
        self.backoff_shift = (self.backoff_shift + 1).min(MAX_BACKOFF_SHIFT);
    }

    /// The smoothed round trip, once sampled.
    pub fn srtt_ps(&self) -> Option<u64> {
        self.srtt_ps
    }

    /// Packet `index` of the WQE left for the first time at `now_ps`: it is timed if no
    /// other packet is.
    pub fn sent_new(&mut self, index: u32, now_ps: u64) {
        if self.timed.is_none() {
            self.timed = Some((index, now_ps));
        }
    }

    /// A packet was resent: the sample in progress is ambiguous.
    pub fn discard(&mut self) {
        self.timed = None;
    }

    /// The cumulative ACK at `now_ps` covers every packet below `acked`: the timed packet,
    /// if covered, gives a sample.
    pub fn acked(&mut self, acked: u32, now_ps: u64) {
        let Some((index, sent_ps)) = self.timed else {
            return;
        };
        if index >= acked {
            return;
        }
        self.timed = None;
        self.sample(now_ps.saturating_sub(sent_ps));
    }

    /// RFC 6298's update with gains 1/8 (SRTT) and 1/4 (RTTVAR).
    fn sample(&mut self, rtt_ps: u64) {
        self.samples += 1;
        self.backoff_shift = 0;
        match self.srtt_ps {
            None => {
                self.srtt_ps = Some(rtt_ps);
                self.rttvar_ps = rtt_ps / 2;
            }
            Some(srtt) => {
                self.rttvar_ps = (3 * self.rttvar_ps + srtt.abs_diff(rtt_ps)) / 4;
                self.srtt_ps = Some((7 * srtt + rtt_ps) / 8);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_run_out_after_the_count_and_reload_on_progress() {
        let mut r = Retries::limited(2);
        assert!(r.spend() && r.spend());
        assert!(!r.spend(), "the third timeout in a row fails");
        r.reload();
        assert!(r.spend() && r.spend() && !r.spend());
        let mut never = Retries::unlimited();
        assert!((0..1000).all(|_| never.spend()));
        let mut none = Retries::limited(0);
        assert!(!none.spend(), "retry_cnt 0: the first timeout fails");
    }

    #[test]
    fn before_a_sample_the_configured_timeout_runs() {
        let e = RtoEstimator::new(111_000_000, 0);
        assert_eq!(e.timeout_ps(), 111_000_000);
        assert_eq!(e.srtt_ps(), None);
    }

    #[test]
    fn a_short_round_trip_keeps_the_floor() {
        let mut e = RtoEstimator::new(111_000_000, 0);
        for k in 0..20u64 {
            e.sent_new(0, k * 100_000_000);
            e.acked(1, k * 100_000_000 + 10_000_000);
        }
        assert_eq!(e.samples, 20);
        assert_eq!(e.timeout_ps(), 111_000_000);
    }

    #[test]
    fn a_long_round_trip_stretches_the_timer_to_cover_it() {
        let mut e = RtoEstimator::new(111_000_000, 0);
        let rtt = 200_000_000;
        e.sent_new(0, 0);
        e.acked(1, rtt);
        assert_eq!(
            e.timeout_ps(),
            rtt + 4 * (rtt / 2),
            "first sample: SRTT + 2 SRTT"
        );
        for k in 1..50u64 {
            e.sent_new(0, k * 1_000_000_000);
            e.acked(1, k * 1_000_000_000 + rtt);
        }
        // Steady samples: RTTVAR decays towards 0, the timeout towards the round trip,
        // never below it.
        assert_eq!(e.srtt_ps(), Some(rtt));
        assert!(e.timeout_ps() >= rtt && e.timeout_ps() < rtt + rtt / 10);
    }

    /// Round trips all alike: the timeout stays the margin above them, where it fell to the
    /// round trip itself and fired at the ACK's picosecond.
    #[test]
    fn alike_round_trips_keep_the_margin_above_them() {
        let margin = 21_120_000;
        let mut e = RtoEstimator::new(111_120_000, margin);
        let rtt = 201_236_200;
        for k in 0..100u64 {
            e.sent_new(0, k * 1_000_000_000);
            e.acked(1, k * 1_000_000_000 + rtt);
        }
        assert_eq!(e.srtt_ps(), Some(rtt));
        assert_eq!(e.timeout_ps(), rtt + margin);
        // Before the round trips settle, their spread is the wider allowance.
        let mut first = RtoEstimator::new(111_120_000, margin);
        first.sent_new(0, 0);
        first.acked(1, rtt);
        assert_eq!(first.timeout_ps(), rtt + 4 * (rtt / 2));
    }

    #[test]
    fn karn_a_resend_or_timeout_discards_the_sample() {
        let mut e = RtoEstimator::new(1_000, 0);
        e.sent_new(3, 0);
        e.sent_new(4, 10);
        e.discard();
        e.acked(10, 5_000_000);
        assert_eq!(e.samples, 0, "a resent window gives no sample");
        e.sent_new(5, 100);
        e.acked(5, 200);
        assert_eq!(e.samples, 0, "the ACK does not cover the timed packet yet");
        e.acked(6, 300);
        assert_eq!((e.samples, e.srtt_ps()), (1, Some(200)));
    }

    /// A round trip longer than the floor: the first WQE times out before its ACK, the
    /// backed-off timer lets the next one's ACK in, and its sample resets the backoff.
    #[test]
    fn timeouts_back_off_until_a_sample_comes() {
        let mut e = RtoEstimator::new(100, 0);
        e.sent_new(0, 0);
        e.timed_out();
        assert_eq!(e.timeout_ps(), 200);
        e.acked(1, 250);
        assert_eq!(e.samples, 0, "the timeout discarded the sample");
        for _ in 0..10 {
            e.timed_out();
        }
        assert_eq!(e.timeout_ps(), 100 << MAX_BACKOFF_SHIFT);
        e.sent_new(0, 1_000);
        e.acked(1, 1_250);
        assert_eq!(e.samples, 1);
        assert_eq!(e.timeout_ps(), 250 + 4 * 125, "a sample ends the backoff");
    }
}
