//! DCQCN's reaction point for one QP (the DCQCN paper, §3.2 "RP algorithm"): its current
//! and target rates, the congestion estimate α and the two increase counters. Pure state
//! and arithmetic: the NIC's router runs its timers as simulator events and feeds it CNPs
//! and sent bytes.
//!
//! * **α**, each period: α ← (1 − g)·α + g if a CNP came in the period, else (1 − g)·α. α
//!   starts at 1 (the paper's initial value).
//! * **On a CNP** (or, with `rate_decrease_interval_us`, on the next rate-decrease check
//!   after one): target ← current, current ← current·(1 − α/2), never below the minimum
//!   rate; the timer's and the byte counter's increase counts start again from 0. With
//!   `clamp_target_rate` off (the default, as the ns-3 HPCC simulator and ConnectX firmware
//!   run DCQCN), the target moves only on a cut that follows an increase event: a second
//!   CNP before the rate began to recover cuts the rate again but keeps the target, so
//!   the QP recovers toward the rate it had before the queue built, not a fraction of it.
//! * **Increase**, one event per timer period and per byte-counter's worth of bytes sent:
//!   while both counts are at most F, *fast recovery* (current ← (target + current)/2);
//!   once one is past F, *additive increase* (target += R_AI first); once both are,
//!   *hyper increase* (target += R_HAI first). The target never exceeds the line rate.
//!   Without a byte counter (`byte_counter_bytes` = 0, the ns-3 HPCC simulator's Mellanox
//!   DCQCN) the timer's count alone sets the stage: up to F fast recovery, F + 1 additive,
//!   beyond it hyper increase.
//!
//! A QP at line rate is not throttled: it runs no timers (its α decays by the periods that
//! passed when the next CNP comes, as if its timer had kept running).

use crate::params::cc::DcqcnParams;

/// Below this distance from the line rate (Mb/s) a recovering QP is back at line rate.
const AT_LINE_MBPS: f64 = 1e-3;

/// Which increase the last event applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Increase {
    /// current ← (target + current) / 2.
    FastRecovery,
    /// target += R_AI, then fast recovery's step.
    Additive,
    /// target += R_HAI, then fast recovery's step.
    Hyper,
}

/// One QP's reaction-point state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rp {
    /// The rate the QP may send at, Mb/s.
    pub current_mbps: f64,
    /// The rate it recovers toward, Mb/s.
    pub target_mbps: f64,
    /// The congestion estimate, in [0, 1].
    pub alpha: f64,
    /// A CNP came in the current α period.
    pub cnp_in_period: bool,
    /// Timer increase events since the last cut.
    pub timer_events: u32,
    /// Byte-counter increase events since the last cut.
    pub byte_events: u32,
    /// Bytes sent since the byte counter's last event.
    pub bytes_since: u64,
}

impl Rp {
    /// A QP at `line_mbps`, never cut.
    pub fn new(line_mbps: f64) -> Self {
        Rp {
            current_mbps: line_mbps,
            target_mbps: line_mbps,
            alpha: 1.0,
            cnp_in_period: false,
            timer_events: 0,
            byte_events: 0,
            bytes_since: 0,
        }
    }

    /// Whether the QP is held below the line rate (its timers run).
    pub fn throttled(&self, line_mbps: f64) -> bool {
        self.current_mbps < line_mbps
    }

    /// A CNP arrived: cut the rate.
    pub fn on_cnp(&mut self, p: &DcqcnParams) {
        self.cnp_in_period = true;
        self.cut(p);
    }

    /// Cut the rate (on a CNP, or on a rate-decrease check that found one flagged); α's
    /// period is told of the CNP apart.
    pub fn cut(&mut self, p: &DcqcnParams) {
        let increased = self.timer_events > 0 || self.byte_events > 0;
        if p.clamp_target_rate || increased {
            self.target_mbps = self.current_mbps;
        }
        self.current_mbps = (self.current_mbps * (1.0 - self.alpha / 2.0)).max(p.min_rate_mbps);
        self.timer_events = 0;
        self.byte_events = 0;
        self.bytes_since = 0;
    }

    /// One α period ended.
    pub fn alpha_period(&mut self, g: f64) {
        let hit = if self.cnp_in_period { g } else { 0.0 };
        self.alpha = ((1.0 - g) * self.alpha + hit).clamp(0.0, 1.0);
        self.cnp_in_period = false;
    }

    /// `periods` α periods without a CNP passed (a QP whose timer was not running).
    pub fn alpha_idle(&mut self, g: f64, periods: u64) {
        let n = i32::try_from(periods).unwrap_or(i32::MAX);
        self.alpha = (self.alpha * (1.0 - g).powi(n)).clamp(0.0, 1.0);
        self.cnp_in_period = false;
    }

    /// The rate-increase timer fired.
    pub fn timer_fired(&mut self, p: &DcqcnParams, line_mbps: f64) -> Increase {
        self.timer_events = self.timer_events.saturating_add(1);
        self.increase(p, line_mbps)
    }

    /// The QP sent `bytes` on the wire: the byte counter's increase events it completes.
    pub fn sent(&mut self, bytes: u64, p: &DcqcnParams, line_mbps: f64) -> Vec<Increase> {
        let mut done = Vec::new();
        if p.byte_counter_bytes == 0 {
            return done;
        }
        self.bytes_since += bytes;
        while self.bytes_since >= p.byte_counter_bytes {
            self.bytes_since -= p.byte_counter_bytes;
            self.byte_events = self.byte_events.saturating_add(1);
            done.push(self.increase(p, line_mbps));
        }
        done
    }

    /// One increase event, by the stage the two counts say.
    fn increase(&mut self, p: &DcqcnParams, line_mbps: f64) -> Increase {
        let f = p.fast_recovery_steps;
        let (hi, lo) = if p.byte_counter_bytes == 0 {
            // The timer alone: hyper increase from its second event past F.
            (self.timer_events, self.timer_events.saturating_sub(1))
        } else {
            (
                self.timer_events.max(self.byte_events),
                self.timer_events.min(self.byte_events),
            )
        };
        let stage = if hi <= f {
            Increase::FastRecovery
        } else if lo <= f {
            Increase::Additive
        } else {
            Increase::Hyper
        };
        match stage {
            Increase::FastRecovery => {}
            Increase::Additive => self.target_mbps += p.rate_ai_mbps,
            Increase::Hyper => self.target_mbps += p.rate_hai_mbps,
        }
        self.target_mbps = self.target_mbps.min(line_mbps);
        self.current_mbps = ((self.target_mbps + self.current_mbps) / 2.0).min(line_mbps);
        if line_mbps - self.current_mbps < AT_LINE_MBPS {
            self.current_mbps = line_mbps;
        }
        stage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn params() -> DcqcnParams {
        crate::params::cc::CcParams::from_config(&dcqcn_config())
            .dcqcn()
            .expect("dcqcn")
    }

    fn dcqcn_config() -> crate::config::Config {
        let mut cfg = crate::config::Config::default();
        cfg.net.cc = crate::config::CcKind::Dcqcn;
        cfg
    }

    #[test]
    fn the_first_cnp_halves_the_rate_and_sets_the_target() {
        let p = params();
        let mut rp = Rp::new(100_000.0);
        rp.on_cnp(&p);
        assert_eq!(rp.target_mbps, 100_000.0);
        assert_eq!(rp.current_mbps, 50_000.0, "alpha starts at 1: a cut by 1/2");
        assert!(rp.throttled(100_000.0));
    }

    #[test]
    fn a_second_cut_before_any_increase_keeps_the_target_unless_clamped() {
        let mut p = params();
        let line = 100_000.0;
        let mut rp = Rp::new(line);
        rp.on_cnp(&p);
        rp.on_cnp(&p);
        assert_eq!((rp.current_mbps, rp.target_mbps), (25_000.0, line));
        rp.timer_fired(&p, line);
        rp.on_cnp(&p);
        assert_eq!(
            rp.target_mbps, 62_500.0,
            "after an increase the cut moves it"
        );
        p.clamp_target_rate = true;
        let mut clamped = Rp::new(line);
        clamped.on_cnp(&p);
        clamped.on_cnp(&p);
        assert_eq!(clamped.target_mbps, 50_000.0, "the paper's rule: every cut");
    }

    #[test]
    fn alpha_follows_the_ewma_with_and_without_cnps() {
        let g = 1.0 / 256.0;
        let mut rp = Rp::new(100_000.0);
        rp.alpha = 0.5;
        rp.cnp_in_period = true;
        rp.alpha_period(g);
        assert!((rp.alpha - ((1.0 - g) * 0.5 + g)).abs() < 1e-12);
        let a = rp.alpha;
        rp.alpha_period(g);
        assert!(
            (rp.alpha - (1.0 - g) * a).abs() < 1e-12,
            "no CNP: decay only"
        );
        let mut idle = rp;
        idle.alpha_idle(g, 3);
        let mut ticked = rp;
        (0..3).for_each(|_| ticked.alpha_period(g));
        assert!((idle.alpha - ticked.alpha).abs() < 1e-12);
    }

    #[test]
    fn recovery_goes_fast_then_additive_then_hyper_back_to_line_rate() {
        let p = params();
        let line = 100_000.0;
        let mut rp = Rp::new(line);
        rp.on_cnp(&p);
        let stages: Vec<Increase> = (0..7).map(|_| rp.timer_fired(&p, line)).collect();
        assert_eq!(stages[..5], [Increase::FastRecovery; 5]);
        assert_eq!(stages[5], Increase::Additive, "timer past F, bytes not");
        // 5 fast-recovery halvings close 31/32 of the gap to the target.
        rp.byte_events = p.fast_recovery_steps + 1;
        assert_eq!(rp.timer_fired(&p, line), Increase::Hyper);
        let mut events = 0;
        while rp.throttled(line) {
            rp.timer_fired(&p, line);
            events += 1;
            assert!(events < 100_000, "never recovers");
        }
        assert_eq!(rp.current_mbps, line);
    }

    #[test]
    fn without_a_byte_counter_the_timer_alone_sets_the_stage() {
        let mut p = params();
        p.byte_counter_bytes = 0;
        p.fast_recovery_steps = 1;
        let line = 100_000.0;
        let mut rp = Rp::new(line);
        rp.on_cnp(&p);
        assert!(rp.sent(1 << 40, &p, line).is_empty(), "no byte counter");
        let stages: Vec<Increase> = (0..4).map(|_| rp.timer_fired(&p, line)).collect();
        assert_eq!(
            stages,
            [
                Increase::FastRecovery,
                Increase::Additive,
                Increase::Hyper,
                Increase::Hyper
            ]
        );
    }

    #[test]
    fn the_byte_counter_counts_increase_events() {
        let p = params();
        let mut rp = Rp::new(100_000.0);
        rp.on_cnp(&p);
        let done = rp.sent(p.byte_counter_bytes * 2 + 7, &p, 100_000.0);
        assert_eq!(done, vec![Increase::FastRecovery; 2]);
        assert_eq!((rp.byte_events, rp.bytes_since), (2, 7));
    }

    /// One step of an arbitrary sequence: a CNP, an α period, a timer or bytes sent.
    #[derive(Debug, Clone)]
    enum Step {
        Cnp,
        Alpha,
        Timer,
        Bytes(u64),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            Just(Step::Cnp),
            Just(Step::Alpha),
            Just(Step::Timer),
            (0u64..30_000_000).prop_map(Step::Bytes),
        ]
    }

    proptest! {
        /// For any sequence of CNPs, periods, timers and bytes: the rate stays within
        /// [min rate, line rate], the target within the line rate, α within [0, 1].
        #[test]
        fn rate_and_alpha_stay_in_their_bounds(
            steps in proptest::collection::vec(step(), 0..400),
            line in 1_000.0f64..400_000.0,
        ) {
            let p = params();
            let mut rp = Rp::new(line);
            for s in steps {
                match s {
                    Step::Cnp => rp.on_cnp(&p),
                    Step::Alpha => rp.alpha_period(p.g),
                    Step::Timer => { rp.timer_fired(&p, line); }
                    Step::Bytes(b) => { rp.sent(b, &p, line); }
                }
                prop_assert!(rp.current_mbps >= p.min_rate_mbps && rp.current_mbps <= line,
                    "current {}", rp.current_mbps);
                prop_assert!(rp.target_mbps <= line, "target {}", rp.target_mbps);
                prop_assert!((0.0..=1.0).contains(&rp.alpha), "alpha {}", rp.alpha);
            }
        }
    }
}
