//! DCQCN in one NIC: the notification point for the QPs that receive, the reaction point
//! and its pacer for the QPs that send (the DCQCN paper; [`super::rp`], [`super::np`]).
//!
//! The pacer is the rate limiter's per-QP rate: a throttled QP's next request frame may
//! leave once the previous one's wire bytes have passed at its *current* rate (the ns-3
//! HPCC simulator's `rdma-hw` paces the same way, and rescales the gap when the rate
//! changes); a QP at line rate is not paced at all, so the port alone sets its pace, as
//! without congestion control.
//!
//! The gap is kept as the previous frame's start and wire bytes, not as a deadline fixed
//! at the rate it left with: a QP cut to 100 Mb/s waits 336 µs after a 4 KiB frame, and a
//! deadline computed then would hold it that long even after its rate recovered.

use rnic_sim::TimePs;

use super::hook::{CcStats, CongestionControl, Ev, Timers};
use super::np::CnpPacer;
use super::rate_trace::RateSampler;
use super::rp::{Increase, Rp};
use crate::params::cc::DcqcnParams;

/// One QP's sending state.
#[derive(Debug, Clone, Copy)]
struct QpCc {
    rp: Rp,
    /// When the gap after its last paced request frame started, ps.
    paced_from_ps: TimePs,
    /// Wire bytes of that frame (0: no gap to keep).
    paced_bytes: u64,
    /// A wake-up to re-enlist it is pending.
    wake_pending: bool,
    /// Generation of its α timer (an event of another generation is stale).
    alpha_gen: u32,
    /// Its α timer runs.
    alpha_on: bool,
    /// When its α was last brought up to date, ps (`None`: never cut, α is its initial 1).
    alpha_at: Option<TimePs>,
    /// Generation of its rate-increase timer.
    increase_gen: u32,
    /// Its rate-increase timer runs.
    increase_on: bool,
    /// DCQCN met the QP (not a slot filled below a higher QP number).
    used: bool,
    /// A CNP came since its last rate-decrease check (with a rate-decrease interval).
    decrease_flag: bool,
    /// Its rate-decrease check runs.
    decrease_on: bool,
    /// Generation of its rate-decrease check.
    decrease_gen: u32,
    /// When its first rate-decrease check came, ps: the checks' grid (`None`: no CNP yet).
    decrease_phase_ps: Option<TimePs>,
}

impl QpCc {
    /// When its next request frame may leave, ps: the last paced frame's wire bytes at the
    /// current rate after that frame's start.
    fn next_send_ps(&self) -> TimePs {
        // bytes × 8 bit / (Mb/s × 10^6 bit/s) s = bytes × 8 × 10^6 / Mb/s ps.
        let gap_ps = (self.paced_bytes as f64 * 8e6 / self.rp.current_mbps).ceil() as TimePs;
        self.paced_from_ps.saturating_add(gap_ps)
    }

    /// When its next rate-decrease check comes after a CNP at `now`, with checks every
    /// `every` ps: on the grid its first check set (one interval and a nanosecond after
    /// its first CNP, as rdma-hw schedules it: after that instant's α update), so a check
    /// stopped for want of CNPs comes back where it would have been had it kept running.
    fn next_check_ps(&mut self, now: TimePs, every: TimePs) -> TimePs {
        match self.decrease_phase_ps {
            None => {
                let at = now + every + 1_000;
                self.decrease_phase_ps = Some(at);
                at
            }
            Some(ph) if now < ph => ph,
            Some(ph) => ph + ((now - ph) / every + 1) * every,
        }
    }

    /// The rate restarts its increase timer (a cut): its next event one period on.
    fn restart_increase(&mut self, qpn: u32, now: TimePs, p: &DcqcnParams, timers: &mut Timers) {
        self.increase_on = true;
        self.increase_gen = self.increase_gen.wrapping_add(1);
        let gen = self.increase_gen;
        timers.push((now + p.increase_period_ps, Ev::Increase { qpn, gen }));
    }

    /// Its α at `t`: a QP whose α timer stopped decays by the periods passed since.
    fn alpha_at(&self, t: TimePs, p: &DcqcnParams) -> f64 {
        match (self.alpha_on, self.alpha_at) {
            (false, Some(at)) => {
                let mut rp = self.rp;
                rp.alpha_idle(p.g, t.saturating_sub(at) / p.alpha_period_ps.max(1));
                rp.alpha
            }
            _ => self.rp.alpha,
        }
    }
}

/// DCQCN's state in one NIC.
#[derive(Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    line_mbps: f64,
    qps: Vec<QpCc>,
    np: CnpPacer,
    /// Counters.
    pub stats: CcStats,
    /// The rate trace's samples, when one is asked for.
    trace: Option<RateSampler>,
}

impl Dcqcn {
    /// DCQCN with parameters `p` on a port of `line_mbps`.
    pub fn new(p: DcqcnParams, line_mbps: f64) -> Self {
        Dcqcn {
            p,
            line_mbps,
            qps: Vec::new(),
            np: CnpPacer::new(p.cnp_interval_ps),
            stats: CcStats::default(),
            trace: RateSampler::new(p.trace_interval_ps),
        }
    }

    fn qp(&mut self, qpn: u32) -> &mut QpCc {
        let i = qpn as usize;
        let line = self.line_mbps;
        crate::per_qp::grow_for(&mut self.qps, i, || QpCc {
            rp: Rp::new(line),
            paced_from_ps: 0,
            paced_bytes: 0,
            wake_pending: false,
            alpha_gen: 0,
            alpha_on: false,
            alpha_at: None,
            increase_gen: 0,
            increase_on: false,
            used: false,
            decrease_flag: false,
            decrease_on: false,
            decrease_gen: 0,
            decrease_phase_ps: None,
        });
        self.qps[i].used = true;
        &mut self.qps[i]
    }

    /// Each used QP's (qpn, rate, target, α) at `t`, for the rate trace.
    fn state_at(&self, t: TimePs) -> impl Iterator<Item = (u32, f64, f64, f64)> + '_ {
        self.qps
            .iter()
            .enumerate()
            .filter(|(_, q)| q.used)
            .map(move |(n, q)| {
                let alpha = q.alpha_at(t, &self.p);
                (n as u32, q.rp.current_mbps, q.rp.target_mbps, alpha)
            })
    }

    /// A hook runs at `now`: the rate trace's samples due before it see the state as it
    /// stands. With no trace or no sample due, one branch.
    #[inline]
    fn sample_before(&mut self, now: TimePs) {
        if !self.trace.as_ref().is_some_and(|t| t.due_before(now)) {
            return;
        }
        if let Some(mut t) = self.trace.take() {
            t.take_before(now, |at| self.state_at(at));
            self.trace = Some(t);
        }
    }

    /// The run ended at `end`: the rate trace's samples up to it.
    pub fn end_trace(&mut self, end: TimePs) {
        if let Some(mut t) = self.trace.take() {
            t.finish(end, |at| self.state_at(at));
            self.trace = Some(t);
        }
    }

    /// The rate trace, when one is asked for, keeps at most `max_rows` rows.
    pub fn cap_trace_rows(&mut self, max_rows: usize) {
        if let Some(t) = self.trace.as_mut() {
            t.cap_rows(max_rows);
        }
    }

    /// The rate trace's samples, when one is asked for.
    pub fn rate_samples(&self) -> Option<&RateSampler> {
        self.trace.as_ref()
    }

    /// The current rate of `qpn`, Mb/s (line rate for a QP never cut).
    pub fn rate_mbps(&self, qpn: u32) -> f64 {
        self.qps
            .get(qpn as usize)
            .map_or(self.line_mbps, |q| q.rp.current_mbps)
    }

    fn count(&mut self, inc: Increase) {
        match inc {
            Increase::FastRecovery => self.stats.fast_recovery += 1,
            Increase::Additive => self.stats.additive_increases += 1,
            Increase::Hyper => self.stats.hyper_increases += 1,
        }
    }
}

impl CongestionControl for Dcqcn {
    fn is_on(&self) -> bool {
        true
    }

    fn data_marked(&mut self, qpn: u32, now: TimePs) -> bool {
        let due = self.np.marked(qpn, now);
        if due {
            self.stats.cnps_sent += 1;
        } else {
            self.stats.cnps_paced += 1;
        }
        due
    }

    fn cnp_received(&mut self, qpn: u32, now: TimePs, timers: &mut Timers) {
        self.sample_before(now);
        self.stats.cnps_received += 1;
        let (p, period) = (self.p, self.p.alpha_period_ps);
        let check = p.rate_decrease_interval_ps;
        let q = self.qp(qpn);
        let first = q.decrease_phase_ps.is_none();
        if !q.alpha_on {
            // α decays by the periods its timer would have run without a CNP.
            if let Some(at) = q.alpha_at {
                q.rp.alpha_idle(p.g, now.saturating_sub(at) / period.max(1));
            }
            q.alpha_on = true;
            q.alpha_at = Some(now);
            q.alpha_gen = q.alpha_gen.wrapping_add(1);
            timers.push((
                now + period,
                Ev::Alpha {
                    qpn,
                    gen: q.alpha_gen,
                },
            ));
        }
        if check == 0 {
            q.rp.on_cnp(&p);
            // The cut restarts the rate-increase timer.
            q.restart_increase(qpn, now, &p, timers);
            self.stats.rate_cuts += 1;
            return;
        }
        // The QP's first CNP starts its timers with α at 1 and counts in no α period
        // (rdma-hw's first CNP); every later one counts in the period it falls in.
        q.rp.cnp_in_period |= !first;
        q.decrease_flag = true;
        if !q.decrease_on {
            q.decrease_on = true;
            q.decrease_gen = q.decrease_gen.wrapping_add(1);
            let (at, gen) = (q.next_check_ps(now, check), q.decrease_gen);
            timers.push((at, Ev::Decrease { qpn, gen }));
        }
    }

    fn may_send(&mut self, qpn: u32, now: TimePs) -> Result<(), (TimePs, bool)> {
        self.sample_before(now);
        let line = self.line_mbps;
        let q = self.qp(qpn);
        let at = q.next_send_ps();
        if !q.rp.throttled(line) || now >= at {
            return Ok(());
        }
        let schedule = !q.wake_pending;
        q.wake_pending = true;
        self.stats.deferrals += 1;
        Err((at, schedule))
    }

    fn sent(&mut self, qpn: u32, wire_bytes: u64, now: TimePs) {
        self.sample_before(now);
        let (p, line) = (self.p, self.line_mbps);
        let q = self.qp(qpn);
        if !q.rp.throttled(line) {
            q.paced_bytes = 0;
            return;
        }
        q.paced_from_ps = q.next_send_ps().max(now);
        q.paced_bytes = wire_bytes;
        for inc in q.rp.sent(wire_bytes, &p, line) {
            self.count(inc);
        }
    }

    fn on_event(&mut self, ev: Ev, now: TimePs, timers: &mut Timers) -> Option<u32> {
        self.sample_before(now);
        let (p, line) = (self.p, self.line_mbps);
        match ev {
            Ev::Wake { qpn } => {
                self.qp(qpn).wake_pending = false;
                return Some(qpn);
            }
            Ev::Alpha { qpn, gen } => {
                let q = self.qp(qpn);
                if !q.alpha_on || gen != q.alpha_gen {
                    return None;
                }
                q.rp.alpha_period(p.g);
                q.alpha_at = Some(now);
                q.alpha_on = q.rp.throttled(line) || q.decrease_on;
                if q.alpha_on {
                    timers.push((now + p.alpha_period_ps, Ev::Alpha { qpn, gen }));
                }
            }
            Ev::Increase { qpn, gen } => {
                let q = self.qp(qpn);
                if !q.increase_on || gen != q.increase_gen {
                    return None;
                }
                let inc = q.rp.timer_fired(&p, line);
                q.increase_on = q.rp.throttled(line);
                if q.increase_on {
                    timers.push((now + p.increase_period_ps, Ev::Increase { qpn, gen }));
                }
                if q.wake_pending {
                    // The faster rate shortens the gap: an earlier wake-up (the later one
                    // finds the QP sent already, and only re-enlists it).
                    timers.push((q.next_send_ps().max(now), Ev::Wake { qpn }));
                }
                self.count(inc);
            }
            Ev::Decrease { qpn, gen } => {
                let q = self.qp(qpn);
                if !q.decrease_on || gen != q.decrease_gen {
                    return None;
                }
                if !q.decrease_flag {
                    // No CNP since the last check: it stops until the next one.
                    q.decrease_on = false;
                    return None;
                }
                q.decrease_flag = false;
                q.rp.cut(&p);
                q.restart_increase(qpn, now, &p, timers);
                let every = p.rate_decrease_interval_ps;
                timers.push((now + every, Ev::Decrease { qpn, gen }));
                self.stats.rate_cuts += 1;
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dcqcn() -> Dcqcn {
        let mut cfg = crate::config::Config::default();
        cfg.net.cc = crate::config::CcKind::Dcqcn;
        let p = crate::params::cc::CcParams::from_config(&cfg)
            .dcqcn()
            .unwrap();
        Dcqcn::new(p, 100_000.0)
    }

    #[test]
    fn a_qp_at_line_rate_is_not_paced() {
        let mut d = dcqcn();
        for _ in 0..10 {
            assert!(d.may_send(1, 0).is_ok());
            d.sent(1, 4200, 0);
        }
    }

    #[test]
    fn a_cut_qp_is_paced_at_its_rate_and_its_timers_run_until_line_rate() {
        let mut d = dcqcn();
        let mut timers = Vec::new();
        d.cnp_received(1, 1_000, &mut timers);
        assert_eq!(d.rate_mbps(1), 50_000.0);
        assert_eq!(timers.len(), 2, "the alpha and the increase timer");
        d.sent(1, 5000, 1_000);
        // 5000 B at 50 Gb/s = 800 ns.
        let (at, schedule) = d.may_send(1, 1_000).unwrap_err();
        assert_eq!((at, schedule), (801_000, true));
        assert!(!d.may_send(1, 2_000).unwrap_err().1, "one wake-up");
        assert_eq!(d.on_event(Ev::Wake { qpn: 1 }, at, &mut timers), Some(1));
        assert!(d.may_send(1, at).is_ok());
        // Run the timers until none is left: the QP is back at line rate.
        let mut fired = 0;
        while let Some(i) = (0..timers.len()).min_by_key(|&i| timers[i].0) {
            let (t, ev) = timers.swap_remove(i);
            d.on_event(ev, t, &mut timers);
            fired += 1;
            assert!(fired < 1_000_000, "timers never stop");
        }
        assert_eq!(d.rate_mbps(1), 100_000.0);
        assert!(d.stats.fast_recovery >= 5 && d.stats.additive_increases > 0);
    }

    #[test]
    fn a_rate_rise_shortens_the_gap_already_running() {
        let mut d = dcqcn();
        let mut timers = Vec::new();
        for t in 0..10 {
            d.cnp_received(1, t, &mut timers);
        }
        d.sent(1, 4096, 10);
        let (slow, _) = d.may_send(1, 10).unwrap_err();
        let (t, ev) = *timers.last().expect("the last cut's increase timer");
        timers.clear();
        d.on_event(ev, t, &mut timers);
        let (fast, _) = d.may_send(1, 10).unwrap_err();
        assert!(fast < slow, "the recovered rate's gap: {fast} < {slow}");
        assert!(
            timers
                .iter()
                .any(|&(at, e)| e == Ev::Wake { qpn: 1 } && at == fast.max(t)),
            "the wake-up comes forward"
        );
    }

    proptest::proptest! {
        /// Pacing at rate R delivers R: a QP that sends whenever it may moves its frames'
        /// wire bytes in their time at R, to within a picosecond per frame.
        #[test]
        fn pacing_at_a_rate_delivers_that_rate(
            cuts in 1usize..12,
            sizes in proptest::collection::vec(64u64..9_000, 1..200),
        ) {
            let mut d = dcqcn();
            let mut timers = Vec::new();
            for _ in 0..cuts {
                d.cnp_received(1, 0, &mut timers);
            }
            let rate = d.rate_mbps(1);
            let (mut now, mut bytes) = (0, 0u64);
            for &b in &sizes {
                while let Err((at, _)) = d.may_send(1, now) {
                    proptest::prop_assert!(at > now);
                    now = at;
                }
                let ideal_ps = bytes as f64 * 8e6 / rate;
                proptest::prop_assert!((now as f64 - ideal_ps).abs() <= sizes.len() as f64 + 1.0,
                    "frame after {bytes} B left at {now} ps, at rate {rate} Mb/s {ideal_ps} ps");
                d.sent(1, b, now);
                bytes += b;
            }
        }
    }

    #[test]
    fn the_rate_trace_samples_each_used_qp_before_and_after_a_cut() {
        assert!(dcqcn().rate_samples().is_none(), "no interval: no trace");
        let mut d = dcqcn();
        d.p.trace_interval_ps = 1_000_000;
        d.trace = RateSampler::new(d.p.trace_interval_ps);
        let mut timers = Vec::new();
        assert!(d.may_send(4, 0).is_ok());
        // The cut at 1.5 µs: the samples at 0 and 1 µs see line rate, 2 µs the cut.
        d.cnp_received(4, 1_500_000, &mut timers);
        d.end_trace(2_000_000);
        let got: Vec<(u64, u32, f64, f64, f64)> = d
            .rate_samples()
            .unwrap()
            .samples()
            .iter()
            .map(|r| (r.index, r.qpn, r.rate_mbps, r.target_mbps, r.alpha))
            .collect();
        let line = 100_000.0;
        assert_eq!(
            got,
            vec![
                (0, 4, line, line, 1.0),
                (1, 4, line, line, 1.0),
                (2, 4, 50_000.0, line, 1.0),
            ],
            "QPs 0..=3, never met, are not traced"
        );
    }

    /// DCQCN with rdma-hw's rate-decrease check every 4 µs.
    fn checked() -> Dcqcn {
        let mut d = dcqcn();
        d.p.rate_decrease_interval_ps = 4_000_000;
        d
    }

    /// The one rate-decrease check among `timers`: (when, event).
    fn the_check(timers: &Timers) -> (TimePs, Ev) {
        let checks: Vec<_> = timers
            .iter()
            .filter(|(_, e)| matches!(e, Ev::Decrease { .. }))
            .copied()
            .collect();
        assert_eq!(checks.len(), 1, "{timers:?}");
        checks[0]
    }

    #[test]
    fn with_a_decrease_interval_cnps_flag_and_the_check_cuts_once_per_interval() {
        let mut d = checked();
        let mut timers = Vec::new();
        d.cnp_received(1, 1_000, &mut timers);
        assert_eq!(d.rate_mbps(1), 100_000.0, "the first CNP does not cut");
        let (at, ev) = the_check(&timers);
        assert_eq!(at, 1_000 + 4_000_000 + 1_000, "one interval and 1 ns on");
        timers.clear();
        for t in [2_000_000, 3_000_000, 4_000_000] {
            d.cnp_received(1, t, &mut timers);
        }
        assert!(timers
            .iter()
            .all(|(_, e)| !matches!(e, Ev::Decrease { .. })));
        assert_eq!(d.rate_mbps(1), 100_000.0);
        d.on_event(ev, at, &mut timers);
        assert_eq!(d.rate_mbps(1), 50_000.0, "four CNPs, one cut");
        assert_eq!((d.stats.cnps_received, d.stats.rate_cuts), (4, 1));
        assert!(timers.iter().any(|(_, e)| matches!(e, Ev::Increase { .. })));
        let (next, ev) = the_check(&timers);
        assert_eq!(next, at + 4_000_000);
        timers.clear();
        d.on_event(ev, next, &mut timers);
        assert_eq!(d.rate_mbps(1), 50_000.0, "no CNP since: no cut");
        assert!(timers.is_empty(), "and the check stops");
        // A CNP later brings the check back on its grid, not one interval after it.
        d.cnp_received(1, next + 9_000_000, &mut timers);
        assert_eq!(the_check(&timers).0, next + 12_000_000);
    }

    #[test]
    fn without_a_decrease_interval_every_cnp_cuts_and_no_check_runs() {
        let mut d = dcqcn();
        let mut timers = Vec::new();
        d.cnp_received(1, 1_000, &mut timers);
        d.cnp_received(1, 2_000, &mut timers);
        assert_eq!(d.rate_mbps(1), 25_000.0);
        assert_eq!(d.stats.rate_cuts, 2);
        assert!(timers
            .iter()
            .all(|(_, e)| !matches!(e, Ev::Decrease { .. })));
    }

    #[test]
    fn a_later_cnp_restarts_the_increase_timer_and_stale_events_do_nothing() {
        let mut d = dcqcn();
        let mut timers = Vec::new();
        d.cnp_received(1, 0, &mut timers);
        let stale = timers[1];
        timers.clear();
        d.cnp_received(1, 10, &mut timers);
        assert_eq!(timers.len(), 1, "the alpha timer runs already");
        let r = d.rate_mbps(1);
        d.on_event(stale.1, stale.0, &mut timers);
        assert_eq!(d.rate_mbps(1), r, "a stale increase event does nothing");
    }
}
