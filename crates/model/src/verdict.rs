//! How a run ended, decided after it: every way a run can fall short is named with its
//! status ([`RunStatus`]) and a reason a user can act on, and the figures a run reports
//! cover what completed over the time it took.
//!
//! The checks, worst first:
//! * **corrupt**: a placed payload or a final buffer differs from its source;
//! * **model error**: the model contradicted physics or itself: more operations measured
//!   than the wire can carry in the time ([`super::limits::op_wire_ps`]), an event
//!   scheduled in the past, a CQE lost to ring overrun, a CQE the application could not
//!   read;
//! * **incomplete**: the event limit, error completions (by verbs status), a stall with
//!   work left, a `-D` window that never opened or in which nothing completed.

use rnic_sim::TimePs;

use super::host::bw_peak::PeakSpan;
use super::host::perftest::Perftest;
use crate::result::RunStatus;

/// The findings of one run.
#[derive(Debug, Clone, Default)]
pub struct Verdict {
    findings: Vec<(RunStatus, String)>,
}

impl Verdict {
    /// Records a finding.
    pub fn add(&mut self, status: RunStatus, reason: String) {
        self.findings.push((status, reason));
    }

    /// The worst status found (`Ok` when nothing was).
    pub fn status(&self) -> RunStatus {
        self.findings
            .iter()
            .map(|(s, _)| *s)
            .max()
            .unwrap_or_default()
    }

    /// The reasons, worst first, one sentence each.
    pub fn reason(&self) -> String {
        let mut f: Vec<&(RunStatus, String)> = self.findings.iter().collect();
        f.sort_by_key(|x| std::cmp::Reverse(x.0));
        f.iter()
            .map(|(_, r)| r.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Every reason, in the order found.
    pub fn reasons(&self) -> Vec<String> {
        self.findings.iter().map(|(_, r)| r.clone()).collect()
    }

    /// Every finding, in the order found.
    pub fn findings(&self) -> &[(RunStatus, String)] {
        &self.findings
    }

    /// Whether a finding of `status` was recorded.
    pub fn has(&self, status: RunStatus) -> bool {
        self.findings.iter().any(|(s, _)| *s == status)
    }
}

/// What a run measured: operations and the time they took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    /// Operations completed in the measurement.
    pub ops: u64,
    /// Time of the measurement, ps.
    pub time_ps: TimePs,
    /// When it started (the window's opening, or the first post), ps.
    pub from_ps: TimePs,
    /// perftest's BW peak: the run of consecutive operations with the best rate (`None`:
    /// not measured: latency tests, `-D`, `-N`).
    pub peak: Option<PeakSpan>,
    /// A `-D` window: operations in flight when it opened (see
    /// [`crate::host::perftest::Measurement::in_flight_at_open`]); 0 otherwise.
    pub in_flight_at_open: u64,
}

/// The measurement of a finished (or stopped) run that ended at `end`: a `-D` window from
/// its opening to its end (or to `end` if the run stopped first); otherwise from the first
/// post to the last completion of a complete run, or to `end` of one that stopped.
pub fn measured(app: &Perftest, end: TimePs) -> Measured {
    if app.spec.duration_mode {
        let (t0, t1) = app.window.span_ps;
        let time_ps = if t0 == TimePs::MAX {
            0
        } else {
            t1.min(end.max(t0)) - t0
        };
        return Measured {
            ops: app.measure.ops_in_window,
            time_ps,
            from_ps: if t0 == TimePs::MAX { 0 } else { t0 },
            peak: None,
            in_flight_at_open: app.measure.in_flight_at_open,
        };
    }
    let last = if app.finished {
        app.measure.last_completion_ps
    } else {
        end.max(app.measure.last_completion_ps)
    };
    let ops = if app.spec.is_lat() {
        app.measure.ops_in_window
    } else {
        app.ops_done()
    };
    let from_ps = app.measure.first_post_ps.unwrap_or(last);
    Measured {
        ops,
        time_ps: last.saturating_sub(from_ps),
        from_ps,
        peak: app.measure.peak.as_ref().and_then(|p| p.best()),
        in_flight_at_open: 0,
    }
}

/// Checks that the application did what was asked and says why not.
pub fn judge_completion(app: &Perftest, end: TimePs, stopped_at_limit: bool, v: &mut Verdict) {
    let done = app.ops_done();
    let asked = if app.spec.duration_mode {
        String::new()
    } else {
        format!(" of {}", app.ops_asked())
    };
    if !app.errors.by_status.is_empty() {
        // The QPs in error stop the run; their first error is the reason.
        let n: u64 = app.errors.by_status.values().sum();
        let by = app
            .errors
            .by_status
            .iter()
            .map(|(k, c)| format!("{c} {k}"))
            .collect::<Vec<_>>()
            .join(", ");
        v.add(
            RunStatus::Incomplete,
            format!(
                "{done}{asked} operations completed; {n} work request(s) completed in error \
                 ({by}); first: {}",
                app.errors.first.as_deref().unwrap_or("?")
            ),
        );
        return;
    }
    if let Some(e) = &app.errors.first {
        v.add(
            RunStatus::ModelError,
            format!(
                "internal: {} application error(s), first: {e}",
                app.errors.count
            ),
        );
    }
    if stopped_at_limit {
        return;
    }
    if !app.finished {
        v.add(
            RunStatus::Incomplete,
            format!(
                "the run stalled at {:.3} µs with {done}{asked} operations completed: nothing \
                 was left to simulate",
                end as f64 / 1e6
            ),
        );
        return;
    }
    if app.spec.duration_mode {
        if app.window.span_ps.0 == TimePs::MAX {
            v.add(
                RunStatus::Incomplete,
                "the -D window never opened: the run ended before every QP had completed \
                 sim.warmup_rounds operations and the rate had settled (or sim.warmup_us \
                 had passed)"
                    .to_string(),
            );
        } else if app.measure.ops_in_window == 0 {
            v.add(
                RunStatus::Incomplete,
                "no operation completed inside the -D window".to_string(),
            );
        }
    } else if done < app.ops_asked() {
        v.add(
            RunStatus::Incomplete,
            format!(
                "{done} of {} operations completed before the run ended",
                app.ops_asked()
            ),
        );
    }
}

/// How the reason of a `-D` window that read above the wire begins (the window's reason
/// holds it among its clauses; the text report finds it there).
pub const ABOVE_WIRE: &str = "above the wire";

/// The wire's bound: `ops` operations that each occupy the server's port for at least
/// `op_ps` cannot complete in less time than they take on the wire. A `-D` window counts
/// whole completions, so it may hold one operation more than its length, plus 1 % for
/// completions whose delay after the wire varies (ACK coalescing, queueing). `lead_ps` is
/// how far a sender's completions may run ahead of its frames on the wire: 0 for RC, whose
/// completions wait for the answer; for UC and UD, which complete a message as its last
/// packet is built, the port's wire time of what the TX engine may have queued ahead of it
/// (`nic.tx_port_slack_bytes` and the frame it hands over).
///
/// Returns, for a window that read above the wire only by counting operations that were in
/// flight when it opened, why its figures do not stand for the run (starting
/// [`ABOVE_WIRE`]).
pub fn judge_wire_bound(
    m: Measured,
    op_ps: TimePs,
    window: bool,
    lead_ps: TimePs,
    v: &mut Verdict,
) -> Option<String> {
    if m.ops == 0 || op_ps == 0 {
        return None;
    }
    let wire_ps = u128::from(m.ops) * u128::from(op_ps);
    // A window also counts the operations in flight when it opened, whose frames may all
    // have crossed before it: a window shorter than the completions' bursts (a CQE per
    // `-Q` operations, READs over many QPs) reads above the wire, as perftest's would
    // (until 2026-12-02 such a run, `write-bw -s 4096 -q 100 -D 0.0002 -Q 4`, exited 1 as
    // a model error).
    let allowed = if window {
        u128::from(m.time_ps) * 101 / 100
            + u128::from(op_ps) * (1 + u128::from(m.in_flight_at_open))
    } else {
        u128::from(m.time_ps) + u128::from(m.time_ps) / 1000
    } + u128::from(lead_ps);
    if wire_ps > allowed {
        v.add(
            RunStatus::ModelError,
            format!(
                "internal: {} operations cannot complete in {:.3} µs: they need at least \
                 {:.3} µs on the server's port ({:.3} µs each); the rate is above the wire",
                m.ops,
                m.time_ps as f64 / 1e6,
                wire_ps as f64 / 1e6,
                op_ps as f64 / 1e6
            ),
        );
        return None;
    }
    let on_its_own = u128::from(m.time_ps) * 101 / 100 + u128::from(op_ps) + u128::from(lead_ps);
    (window && wire_ps > on_its_own).then(|| {
        format!(
            "{ABOVE_WIRE}: its {} operations need {:.3} µs on the server's port, more than \
             its {:.3} µs, because it counted some of the {} in flight when it opened (their \
             completions come in bursts: a CQE per -Q operations, READs over many QPs); a \
             window several bursts long averages them out",
            m.ops,
            wire_ps as f64 / 1e6,
            m.time_ps as f64 / 1e6,
            m.in_flight_at_open
        )
    })
}

/// A PCIe direction of node `node` moves its transfers one after another, so it cannot
/// have been busy longer than the run lasted (`end`, from time 0) plus what was still queued
/// on it when the run ended. Received payload waits in the NIC's receive buffer, which
/// drains at the PCIe rate and holds back (drops, or pauses the link peer) what does not
/// fit, so the NIC → host lane's backlog stays near that buffer: its writes, their TLP
/// headers and a CQE write per frame, at most `3 × rx_buffer_bytes` of lane time (a 64 B
/// payload, two 24 B headers, a 64 B CQE). A busier lane means the NIC took in data faster
/// than PCIe carries it without holding frames back: a simulator bug. The host → NIC
/// lane's reads are issued only as the NIC's buffers make room and hold a read tag each,
/// so its backlog is at most the completions of every tag's read (`max_read_tags` reads
/// of `mrrs_bytes` with their TLP headers): a run that ends with reads outstanding (its
/// QPs failed, so it stopped before their data arrived) may leave that much queued.
pub fn judge_pcie_bound(
    node: usize,
    pcie: &crate::nic::pcie::Pcie,
    end: TimePs,
    rx_buffer_bytes: u64,
    v: &mut Verdict,
) {
    let up_slack_ps = rnic_sim::ser_ps(rx_buffer_bytes.saturating_mul(3), pcie.p.mbps);
    let one_read_bytes = crate::params::data_tlps_wire_bytes(
        pcie.p.mrrs_bytes,
        pcie.p.mps_bytes,
        pcie.p.tlp_header_bytes,
    );
    let down_slack_ps = rnic_sim::ser_ps(
        one_read_bytes.saturating_mul(u64::from(pcie.p.max_read_tags)),
        pcie.p.mbps,
    );
    let up_backlog = format!(
        "what the receive buffer (nic.rx_buffer_bytes = {rx_buffer_bytes}) can leave queued \
         allow: received frames did not wait for PCIe"
    );
    let down_backlog = format!(
        "the completions of its {} read tags (pcie.max_read_tags) allow: reads were issued \
         faster than PCIe returns them",
        pcie.p.max_read_tags
    );
    for (busy_ps, slack_ps, lane, backlog) in [
        (pcie.up.busy_ps, up_slack_ps, "NIC to host", up_backlog),
        (
            pcie.down.busy_ps,
            down_slack_ps,
            "host to NIC",
            down_backlog,
        ),
    ] {
        if busy_ps > end.saturating_add(slack_ps) {
            v.add(
                RunStatus::ModelError,
                format!(
                    "internal: node {node}'s PCIe link ({lane}) was busy {:.3} µs in a run of \
                     {:.3} µs, more than its transfers one after another and {backlog}",
                    busy_ps as f64 / 1e6,
                    end as f64 / 1e6
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host → NIC lane may end a run with every read tag's completions still queued
    /// (a run whose QPs failed stops before they arrive), and no more: a backlog within
    /// that is no finding, one past it is a model error that names the read tags.
    #[test]
    fn the_host_to_nic_lane_may_hold_every_tags_completions_at_the_end() {
        let p = crate::params::ModelParams::baseline().pcie;
        let tags_bytes =
            crate::params::data_tlps_wire_bytes(p.mrrs_bytes, p.mps_bytes, p.tlp_header_bytes)
                * u64::from(p.max_read_tags);
        let mut pcie = crate::nic::pcie::Pcie::new(p.clone());
        let end: TimePs = 1_000_000;
        // Busy from 0 to the end, then every tag's completions queued behind it.
        let run_bytes = end * p.mbps / 8_000_000;
        pcie.down.reserve(0, run_bytes + tags_bytes, 0, 1);
        let mut ok = Verdict::default();
        judge_pcie_bound(1, &pcie, end, 262_144, &mut ok);
        assert_eq!(ok.status(), RunStatus::Ok, "{}", ok.reason());
        pcie.down.reserve(0, 4096, 0, 1);
        let mut bad = Verdict::default();
        judge_pcie_bound(1, &pcie, end, 262_144, &mut bad);
        assert_eq!(bad.status(), RunStatus::ModelError);
        assert!(
            bad.reason().contains("pcie.max_read_tags"),
            "{}",
            bad.reason()
        );
    }

    #[test]
    fn the_worst_finding_decides_and_leads_the_reason() {
        let mut v = Verdict::default();
        assert_eq!(v.status(), RunStatus::Ok);
        v.add(RunStatus::Incomplete, "a".into());
        v.add(RunStatus::Corrupt, "b".into());
        assert_eq!(v.status(), RunStatus::Corrupt);
        assert_eq!(v.reason(), "b; a");
    }

    #[test]
    fn a_window_may_count_the_operations_in_flight_when_it_opened() {
        let op = 171_000_000;
        let w = 10_000_000_000;
        let m = |in_flight_at_open| Measured {
            ops: 61,
            time_ps: w,
            from_ps: 0,
            peak: None,
            in_flight_at_open,
        };
        // 61 need 10.43 ms: two in flight at the opening explain it, none does not.
        let mut v = Verdict::default();
        let above = judge_wire_bound(m(2), op, true, 0, &mut v);
        assert_eq!(v.status(), RunStatus::Ok);
        assert!(above.is_some_and(|a| a.contains("2 in flight")));
        let mut v = Verdict::default();
        assert_eq!(judge_wire_bound(m(0), op, true, 0, &mut v), None);
        assert_eq!(v.status(), RunStatus::ModelError);
        // Iteration mode counts no window: no allowance.
        let mut v = Verdict::default();
        judge_wire_bound(m(2), op, false, 0, &mut v);
        assert_eq!(v.status(), RunStatus::ModelError);
    }

    #[test]
    fn a_rate_above_the_wire_is_a_model_error() {
        let op = 171_000_000; // a 2 MB WRITE: 171 µs on a 100 Gb/s port
        let mut v = Verdict::default();
        // 126 completions in a 200 µs window: the reported 10,570 Gb/s.
        let m = Measured {
            ops: 126,
            time_ps: 200_000_000,
            from_ps: 0,
            peak: None,
            in_flight_at_open: 0,
        };
        judge_wire_bound(m, op, true, 0, &mut v);
        assert_eq!(v.status(), RunStatus::ModelError);
        // 59 in 10 ms fits; 61 does not.
        let mut ok = Verdict::default();
        let w = 10_000_000_000;
        judge_wire_bound(
            Measured {
                ops: 59,
                time_ps: w,
                from_ps: 0,
                peak: None,
                in_flight_at_open: 0,
            },
            op,
            true,
            0,
            &mut ok,
        );
        assert_eq!(ok.status(), RunStatus::Ok);
        judge_wire_bound(
            Measured {
                ops: 61,
                time_ps: w,
                from_ps: 0,
                peak: None,
                in_flight_at_open: 0,
            },
            op,
            true,
            0,
            &mut ok,
        );
        assert_eq!(ok.status(), RunStatus::ModelError);
        // Iteration mode allows no quantum: 5 messages need 5 × 171 µs (lead 0). An
        // unreliable sender's completions may lead the wire by the port's lead, and by no
        // more: 5 × 171 µs in 800 µs needs a lead of 55 µs.
        for (lead, status) in [
            (0, RunStatus::ModelError),
            (55_000_000, RunStatus::Ok),
            (54_000_000, RunStatus::ModelError),
        ] {
            let mut u = Verdict::default();
            judge_wire_bound(
                Measured {
                    ops: 5,
                    time_ps: 800_000_000,
                    from_ps: 0,
                    peak: None,
                    in_flight_at_open: 0,
                },
                op,
                false,
                lead,
                &mut u,
            );
            assert_eq!(u.status(), status, "lead {lead} ps");
        }
    }
}
