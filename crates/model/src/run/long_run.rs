//! A `-D` window too short to stand for its run.
//!
//! The window opens once the rate has settled (`host/steady.rs`) or when the settle test
//! gives up, and then measures for `-D`. Under loss a run's rate is set by its
//! retransmission timeouts: a QP that loses the tail of what it sent waits out a whole ACK
//! timeout (67 ms at `qp.timeout` 14) before it resends, so its rate is bursts of progress
//! between long stalls. A window that holds few of those stalls reads whatever phase it
//! fell in: `send-bw -s 1024 -q 16 --clients 2 -D 0.001` at 2 % loss read 65.5 Gb/s from
//! its 1 ms window, where the run held about 1.2 Gb/s. Such a result is marked
//! (`window_settled` false, the reason appended to `window_reason`) and carries the rate
//! over the run beside the window's ([`LongRun`]), with a `-D` long enough.
//!
//! Long enough, for a run that saw timeouts (rnic's rule, not perftest's), is the longer of
//! * [`TIMEOUTS_IN_WINDOW`] timeouts at the run's mean interval between them: the rate
//!   follows the number of stalls a window holds, and a count of about 100 varies by about
//!   10 % (one standard deviation of a Poisson count, 1/√100) from one window to the next;
//! * [`ACK_TIMEOUTS_IN_WINDOW`] ACK timeouts: a window's edges cut at most a stall each,
//!   a tenth of the window at most.
//!
//! RNR waits stall a QP the same way: a SEND that finds no receive WQE is NAKed, and its
//! requester waits the responder's RNR timer (`qp.min_rnr_timer`, 640 µs at 12) before it
//! sends again, so a receiver whose queue runs dry (`send-bw -r 8`) completes its messages
//! in bursts, one every RNR timer. They count as stalls beside the timeouts, with
//! [`RNR_WAITS_IN_WINDOW`] RNR timers as the least window.
//!
//! A run that never settled without any stall is marked too, with the rate over the run
//! and no `-D` to suggest: its rate varied by itself, which more sub-windows or more
//! spread address (the warning says which fields).

use rnic_sim::TimePs;

use crate::host::perftest::Perftest;
use crate::result::{rates, stalls_in_words, LongRun, PerfResult};

/// Timeouts a window long enough holds at the run's mean interval between them.
pub const TIMEOUTS_IN_WINDOW: u64 = 100;

/// ACK timeouts a window long enough lasts at least.
pub const ACK_TIMEOUTS_IN_WINDOW: u64 = 10;

/// RNR timers a window long enough lasts at least, when the run saw RNR waits.
pub const RNR_WAITS_IN_WINDOW: u64 = 10;

/// What held a run's QPs between bursts of progress: its retransmission timeouts (each an
/// ACK timeout long at least) and its RNR waits (each an RNR timer long).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stalls {
    /// Retransmission (ACK) timeouts.
    pub timeouts: u64,
    /// The QPs' ACK timeout, ps (`None`: `qp.timeout` 0, no timer).
    pub ack_timeout_ps: Option<TimePs>,
    /// RNR NAKs waited out.
    pub rnr_waits: u64,
    /// The RNR timer those waits last, ps.
    pub rnr_timer_ps: TimePs,
}

impl Stalls {
    /// The stalls of a run of `cfg`'s QPs on the devices whose counters are `stats`.
    pub fn of_devices<'a>(
        cfg: &crate::config::Config,
        stats: impl Iterator<Item = &'a rnic_transport::TransportStats>,
    ) -> Stalls {
        let (timeouts, rnr_waits) =
            stats.fold((0, 0), |(t, r), s| (t + s.ack_timeouts, r + s.rnr_waits));
        Stalls {
            timeouts,
            ack_timeout_ps: cfg.qp.ack_timeout_ps(),
            rnr_waits,
            rnr_timer_ps: rnic_transport::timer::rnr_timer_ps(cfg.qp.min_rnr_timer),
        }
    }

    fn count(&self) -> u64 {
        self.timeouts + self.rnr_waits
    }

    /// In words ([`stalls_in_words`]).
    fn named(&self) -> String {
        stalls_in_words(self.timeouts, self.rnr_waits)
    }

    /// The least window each kind of stall the run saw asks for, ps, with it in words:
    /// "10 ACK timeouts of 67.109 ms", "10 RNR timers of 0.640 ms".
    fn least_windows(&self) -> Vec<(TimePs, String)> {
        let ack_ps = self.ack_timeout_ps.unwrap_or(0);
        let kinds = [
            (
                self.timeouts,
                ACK_TIMEOUTS_IN_WINDOW,
                ack_ps,
                "ACK timeouts",
            ),
            (
                self.rnr_waits,
                RNR_WAITS_IN_WINDOW,
                self.rnr_timer_ps,
                "RNR timers",
            ),
        ];
        kinds
            .into_iter()
            .filter(|&(seen, ..)| seen > 0)
            .map(|(_, n, each_ps, what)| {
                let words = format!("{n} {what} of {:.3} ms", each_ps as f64 / 1e9);
                (each_ps.saturating_mul(n), words)
            })
            .collect()
    }
}

/// A duration run from its first post to its window's end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RunSpan {
    /// Operations completed in it.
    pub ops: u64,
    /// The first post, ps.
    pub from_ps: TimePs,
    /// The window's end (or the run's, if it stopped first), ps.
    pub to_ps: TimePs,
    /// The window's length as measured, ps.
    pub window_ps: TimePs,
}

/// The span of the duration applications `apps` whose window opened (several flows of one
/// test share one window), the run having ended at `end`; `None` in iteration mode or when
/// no window opened.
pub(crate) fn run_span(apps: &[Perftest], end: TimePs) -> Option<RunSpan> {
    let open: Vec<&Perftest> = apps
        .iter()
        .filter(|a| a.spec.duration_mode && a.window.span_ps.0 != TimePs::MAX)
        .collect();
    let from_ps = open.iter().filter_map(|a| a.measure.first_post_ps).min()?;
    let (start, stop) = open
        .iter()
        .map(|a| {
            (
                a.window.span_ps.0,
                a.window.span_ps.1.min(end.max(a.window.span_ps.0)),
            )
        })
        .fold((TimePs::MAX, 0), |(s, e), (s1, e1)| (s.min(s1), e.max(e1)));
    Some(RunSpan {
        ops: open.iter().map(|a| a.measure.ops_to_window_end).sum(),
        from_ps,
        to_ps: stop,
        window_ps: stop.saturating_sub(start),
    })
}

/// A window long enough for the `stalls` of a run over `span_ps`, ps (`None` without any).
pub fn long_enough_ps(stalls: &Stalls, span_ps: TimePs) -> Option<TimePs> {
    let count = stalls.count();
    if count == 0 {
        return None;
    }
    let by_count = span_ps.saturating_mul(TIMEOUTS_IN_WINDOW) / count;
    let by_length = stalls.least_windows().into_iter().map(|(ps, _)| ps).max();
    Some(by_count.max(by_length.unwrap_or(0)))
}

/// A `-D` value for `ps`, in seconds, rounded up to two significant digits.
fn duration_s(ps: TimePs) -> f64 {
    let s = ps as f64 / 1e12;
    let scale = 10f64.powi(1 - s.log10().floor() as i32);
    // Less a hair, so that a value already at two digits (0.1 s) is not rounded past.
    (s * scale - 1e-9).ceil() / scale
}

/// Marks `result` (a `-D` run of `op_bytes`-byte operations over `span`, held up by
/// `stalls`) when its window cannot stand for the run: it never settled, or it is shorter
/// than the stalls the run saw need. The window's figures stay as measured.
pub(crate) fn judge(result: &mut PerfResult, span: RunSpan, op_bytes: u64, stalls: Stalls) {
    let settled = result.window_settled != Some(false);
    let mark = unsettled(stalls, settled, span, op_bytes, Ask::DashD);
    if let Some(mark) = mark {
        mark.apply(
            &mut result.window_settled,
            &mut result.window_reason,
            &mut result.long_run,
        );
    }
}

/// Marks a `-D` run's or a duration flow's window (its `settled` and `reason` fields) that
/// read above the wire (`why`, from [`crate::verdict::judge_wire_bound`]): its figures stay
/// as measured, as perftest's would.
pub(crate) fn mark_above_wire(settled: &mut Option<bool>, reason: &mut Option<String>, why: &str) {
    *settled = Some(false);
    let reason = reason.get_or_insert_with(String::new);
    if !reason.is_empty() {
        reason.push_str("; ");
    }
    reason.push_str(why);
}

/// Why a window cannot stand for its run, and the rate over the run.
pub(crate) struct Unsettled {
    /// Appended to the window's reason when the window is too short.
    too_short: Option<String>,
    long_run: LongRun,
}

impl Unsettled {
    /// Writes the mark into a result's three window fields.
    pub(crate) fn apply(
        self,
        settled: &mut Option<bool>,
        reason: &mut Option<String>,
        long_run: &mut Option<LongRun>,
    ) {
        if let Some(why) = self.too_short {
            let reason = reason.get_or_insert_with(String::new);
            if !reason.is_empty() {
                reason.push_str("; ");
            }
            reason.push_str(&why);
        }
        *settled = Some(false);
        *long_run = Some(self.long_run);
    }
}

/// How a user asks for a longer window, in the words of the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// `rnic perf`'s `-D`, seconds.
    DashD,
    /// A scenario flow's `duration_us`.
    DurationUs,
}

impl Ask {
    fn longer_than(self, ps: TimePs) -> String {
        match self {
            Ask::DashD => format!("-D {} or longer", duration_s(ps)),
            Ask::DurationUs => {
                let us = (duration_s(ps) * 1e6).round() as u64;
                format!("duration_us = {us} or longer")
            }
        }
    }
}

/// The mark of a window over `span` (of `op_bytes`-byte operations, in a run held up by
/// `stalls`) that opened `settled` or not; `None` when the window stands for the run.
pub(crate) fn unsettled(
    stalls: Stalls,
    settled: bool,
    span: RunSpan,
    op_bytes: u64,
    ask: Ask,
) -> Option<Unsettled> {
    let run_ps = span.to_ps.saturating_sub(span.from_ps);
    let long_enough = long_enough_ps(&stalls, run_ps);
    let too_short = long_enough.filter(|&need| span.window_ps < need);
    if settled && too_short.is_none() {
        return None;
    }
    let why = too_short.map(|need| {
        format!(
            "too short: the {:.3} ms window is shorter than the {:.3} ms that the run's {} \
             need (about {TIMEOUTS_IN_WINDOW} of them at their mean interval, and at least \
             {}): {}",
            span.window_ps as f64 / 1e9,
            need as f64 / 1e9,
            stalls.named(),
            stalls
                .least_windows()
                .into_iter()
                .map(|(_, words)| words)
                .collect::<Vec<_>>()
                .join(" and "),
            ask.longer_than(need)
        )
    });
    let time_us = run_ps as f64 / 1e6;
    let (mops, gbps, mb_s) = rates(op_bytes, span.ops, time_us);
    Some(Unsettled {
        too_short: why,
        long_run: LongRun {
            rate_settled: settled,
            window_long_enough: too_short.is_none(),
            ops_completed: span.ops,
            time_us,
            msg_rate_mops: mops,
            goodput_gbps: gbps,
            bw_avg_mb_s: mb_s,
            timeouts: stalls.timeouts,
            rnr_waits: stalls.rnr_waits,
            long_enough_duration_s: long_enough.map(duration_s),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: TimePs = 1_000_000_000;

    #[test]
    fn long_enough_holds_a_hundred_timeouts_and_ten_ack_timeouts() {
        // 287 timeouts over 1.216 s: one every 4.24 ms, so 100 take 424 ms; ten ACK
        // timeouts of 67.1 ms take 671 ms, the longer.
        let rto = 67_108_864_000;
        assert_eq!(
            long_enough_ps(&timeouts(287, rto), 1216 * MS),
            Some(10 * rto)
        );
        // Frequent timeouts: the count decides.
        assert_eq!(
            long_enough_ps(&timeouts(1000, MS), 1000 * MS),
            Some(100 * MS)
        );
        assert_eq!(long_enough_ps(&timeouts(0, rto), 1000 * MS), None);
        assert_eq!(duration_s(10 * rto), 0.68);
        assert_eq!(duration_s(424 * MS), 0.43);
        assert_eq!(duration_s(3 * MS), 0.003);
    }

    fn timeouts(timeouts: u64, ack_timeout_ps: TimePs) -> Stalls {
        Stalls {
            timeouts,
            ack_timeout_ps: Some(ack_timeout_ps),
            ..Stalls::default()
        }
    }

    /// `send-bw -s 1024 -r 8 -D 0.0002`: the receiver's 8 WQEs ran dry every 640 µs RNR
    /// timer, so its 374 RNR waits over 240 ms let 8 messages through at a time, and a
    /// 200 µs window held none. 100 of them take 64 ms, longer than 10 RNR timers (6.4 ms);
    /// the ACK timeout, which never fired, does not count.
    #[test]
    fn rnr_waits_stall_a_run_as_timeouts_do() {
        let stalls = Stalls {
            timeouts: 0,
            ack_timeout_ps: Some(67_108_864_000),
            rnr_waits: 374,
            rnr_timer_ps: 640_000_000,
        };
        let need = long_enough_ps(&stalls, 240 * MS).expect("stalled");
        assert_eq!(need, 240 * MS * 100 / 374);
        assert_eq!(duration_s(need), 0.065);
        // Waits more often than their timer (several QPs): ten RNR timers at least.
        let often = Stalls {
            rnr_waits: 1000,
            ..stalls
        };
        assert_eq!(long_enough_ps(&often, MS), Some(10 * 640_000_000));
        let mut r = result(true, 0);
        let run = RunSpan {
            ops: 3000,
            from_ps: 0,
            to_ps: 240 * MS,
            window_ps: MS / 5,
        };
        judge(&mut r, run, 1024, stalls);
        let why = r.window_reason.as_deref().unwrap_or_default();
        assert!(why.contains("the run's 374 RNR waits need"), "{why}");
        assert!(why.contains("at least 10 RNR timers of 0.640 ms"), "{why}");
        assert!(why.ends_with("-D 0.065 or longer"), "{why}");
        let l = r.long_run.expect("the rate over the run");
        assert_eq!((l.timeouts, l.rnr_waits), (0, 374));
    }

    fn result(settled: bool, timeouts: u64) -> PerfResult {
        PerfResult {
            timeouts,
            window_settled: Some(settled),
            window_reason: Some("settled: rate within 2 %".into()),
            ..PerfResult::default()
        }
    }

    fn span(window_ps: TimePs) -> RunSpan {
        RunSpan {
            ops: 1_000_000,
            from_ps: 0,
            to_ps: 1000 * MS,
            window_ps,
        }
    }

    #[test]
    fn a_short_window_under_timeouts_is_marked_with_the_rate_over_the_run() {
        let mut r = result(true, 1000);
        judge(&mut r, span(MS), 1024, timeouts(1000, MS));
        assert_eq!(r.window_settled, Some(false));
        let why = r.window_reason.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("settled: rate within 2 %; too short: the 1.000 ms window"),
            "{why}"
        );
        assert!(why.ends_with("-D 0.1 or longer"), "{why}");
        let l = r.long_run.expect("the rate over the run");
        // A million 1 KiB operations in a second.
        assert_eq!(l.ops_completed, 1_000_000);
        assert!((l.msg_rate_mops - 1.0).abs() < 1e-9, "{}", l.msg_rate_mops);
        assert!((l.goodput_gbps - 8.192).abs() < 1e-9, "{}", l.goodput_gbps);
        assert_eq!(l.long_enough_duration_s, Some(0.1));
        assert!(l.rate_settled && !l.window_long_enough);
    }

    #[test]
    fn a_long_enough_settled_window_is_left_alone() {
        let mut r = result(true, 1000);
        judge(&mut r, span(100 * MS), 1024, timeouts(1000, MS));
        assert_eq!(r, result(true, 1000));
        let mut r = result(true, 0);
        judge(&mut r, span(MS), 1024, timeouts(0, MS));
        assert_eq!(
            r,
            result(true, 0),
            "no timeout: nothing to be too short for"
        );
    }

    #[test]
    fn a_window_that_never_settled_carries_the_rate_over_the_run() {
        let mut r = result(false, 0);
        judge(&mut r, span(100 * MS), 1024, timeouts(0, MS));
        assert_eq!(r.window_reason.as_deref(), Some("settled: rate within 2 %"));
        let l = r.long_run.expect("the rate over the run");
        assert_eq!(l.long_enough_duration_s, None);
        assert!(!l.rate_settled && l.window_long_enough);
    }
}
