//! Judging a finished run: every way it can fall short (the event limit, events in the
//! past, lost CQEs, error completions, a stall, corrupt payloads or buffers, a rate above
//! the wire) recorded in a [`Verdict`]; the buffer check itself is `flow_check`'s (done here
//! at the end, or taken from the check done when a flow of a run of flows completed).

use rnic_sim::TimePs;

use super::build::Built;
use super::flow_check::{check_buffers, EarlyChecks};
use crate::config::Config;
use crate::host::perftest::Perftest;
use crate::limits;
use crate::result::RunStatus;
use crate::verdict::{self, Measured, Verdict};
use crate::world::World;

/// One flow's findings and what it measured.
#[derive(Debug, Clone)]
pub(crate) struct FlowJudged {
    /// The flow's own findings (completion, its buffers, the wire's bound).
    pub verdict: Verdict,
    /// Its measurement.
    pub measured: Measured,
    /// A `-D` window that read above the wire by counting operations in flight when it
    /// opened: why it does not stand for the run.
    pub above_wire: Option<String>,
}

/// Judges the run `b` that ended at `end`: the run's verdict (every finding; with several
/// flows, a flow's findings are prefixed with its name) and each flow's own. A flow whose
/// buffers were checked when it completed (in `early`) is judged on that check.
pub(crate) fn judge(
    b: &Built,
    cfg: &Config,
    end: TimePs,
    early: &mut EarlyChecks,
) -> anyhow::Result<(Verdict, Vec<FlowJudged>)> {
    let (world, p) = (&b.world, &b.p);
    if let Some(e) = &world.net.pcap_error {
        return Err(crate::OutputError(format!("writing the pcap: {e}")).into());
    }
    let mut verdict = Verdict::default();
    if let Some(e) = world.cm.as_ref().and_then(|c| c.error.as_ref()) {
        // The network lost the connection's MADs: the run could not do what was asked,
        // which is an incomplete run (its reason first), not a failure of the model.
        verdict.add(RunStatus::Incomplete, e.clone());
    }
    // A run stopped at the event limit or the clock's horizon did not stall.
    let stopped_early = judge_stop(world, b.max_events, end, &mut verdict);
    judge_internal(world, end, &mut verdict);
    let mut flows = FlowVerdicts::new(b);
    for (fi, app) in world.apps.iter().enumerate() {
        let v = judge_flow_completion(world, cfg, app, end, stopped_early);
        flows.add(&mut verdict, fi, v);
    }
    judge_oracle(world, &mut verdict);
    let mut judged = Vec::with_capacity(b.flows.len());
    for (fi, (app, f)) in world.apps.iter().zip(&b.flows).enumerate() {
        let mut v = Verdict::default();
        let check = early
            .take(fi)
            .unwrap_or_else(|| check_buffers(world, app, &b.layouts[fi]));
        check.record(app, verdict.status() == RunStatus::Ok, &mut v);
        super::unreliable::judge_late_answers(world, app, &mut v);
        let measured = verdict::measured(app, end);
        // The server NIC's own port rate: its link's (a topology file's `gbps`, a fabric's
        // host tier), as the build gave it.
        let server_mbps = world
            .nics
            .get(f.server as usize)
            .map_or(p.eth.mbps, |n| n.p.eth.mbps);
        let op_ps = limits::op_wire_ps_at(
            server_mbps,
            p,
            f.test.verb(),
            f.min_size(),
            f.max_pmtu(cfg),
            cfg.qp.transport,
        );
        let lead_ps = limits::unreliable_lead_ps(p, cfg, f.max_pmtu(cfg));
        let window = f.duration_us.is_some();
        let above = verdict::judge_wire_bound(measured, op_ps, window, lead_ps, &mut v);
        flows.add(&mut verdict, fi, v);
        judged.push((measured, above));
    }
    let judged = flows
        .own
        .into_iter()
        .zip(judged)
        .map(|(verdict, (measured, above_wire))| FlowJudged {
            verdict,
            measured,
            above_wire,
        })
        .collect();
    Ok((verdict, judged))
}

/// Records a run that stopped before it was done: at the event limit `max_events` (saying
/// how much of the simulated time went to connecting by RDMA CM) or at the clock's horizon.
/// Returns whether it stopped so.
fn judge_stop(world: &World, max_events: u64, end: TimePs, verdict: &mut Verdict) -> bool {
    let stopped_at_limit = world.events >= max_events;
    if stopped_at_limit {
        // The summary counts simulated time from the applications' start, after RDMA CM
        // connected the QPs; this time counts from the run's start, so say how much of it
        // went to connecting.
        let connecting = world.cm.as_ref().map(|cm| {
            let done = cm.stats().done_ps;
            if done == 0 {
                ", all of it connecting the QPs by RDMA CM".to_string()
            } else {
                format!(
                    " ({:.3} µs of it connecting the QPs by RDMA CM, {:.3} µs after the \
                     applications started)",
                    done as f64 / 1e6,
                    end.saturating_sub(world.origin_ps) as f64 / 1e6
                )
            }
        });
        verdict.add(
            RunStatus::Incomplete,
            format!(
                "stopped at the event limit sim.max_events = {max_events} after {:.3} µs \
                 simulated{}; raise it (--set sim.max_events=N) or ask for less",
                end as f64 / 1e6,
                connecting.unwrap_or_default()
            ),
        );
    }
    let horizon = crate::limits::CLOCK_HORIZON_PS;
    let stopped_at_horizon =
        !stopped_at_limit && !world.done() && world.q.peek_time().is_some_and(|t| t > horizon);
    if stopped_at_horizon {
        verdict.add(
            RunStatus::Incomplete,
            format!(
                "stopped at {:.2} days of simulated time, the most a run may reach so that \
                 the picosecond clock (213 days) cannot wrap: its latencies, rates or clock \
                 are too slow for what it asks; lower -n or -q, or bring them nearer to real \
                 hardware",
                horizon as f64 / 86_400e12
            ),
        );
    }
    stopped_at_limit || stopped_at_horizon
}

/// Records the model's own faults (events scheduled in the past, CQEs lost to a ring
/// overrun, host events of no flow) and each NIC's PCIe bound.
fn judge_internal(world: &World, end: TimePs, verdict: &mut Verdict) {
    if world.q.clamped_pushes() > 0 {
        verdict.add(
            RunStatus::ModelError,
            format!(
                "internal: {} events were scheduled in the past",
                world.q.clamped_pushes()
            ),
        );
    }
    let overruns: u64 = world.nics.iter().map(|n| n.host.cq.stats.overruns).sum();
    if overruns > 0 {
        verdict.add(
            RunStatus::ModelError,
            format!("internal: {overruns} CQE(s) lost to CQ ring overrun"),
        );
    }
    if world.unrouted > 0 {
        verdict.add(
            RunStatus::ModelError,
            format!(
                "internal: {} host event(s) belonged to no flow",
                world.unrouted
            ),
        );
    }
    for (node, nic) in world.nics.iter().enumerate() {
        verdict::judge_pcie_bound(
            node,
            &nic.mem.pcie,
            end,
            nic.rx.buffer.params().capacity_bytes,
            verdict,
        );
    }
}

/// Each flow's own verdict, and how its findings also go to the run's.
struct FlowVerdicts<'a> {
    b: &'a Built,
    own: Vec<Verdict>,
}

impl<'a> FlowVerdicts<'a> {
    fn new(b: &'a Built) -> Self {
        FlowVerdicts {
            b,
            own: vec![Verdict::default(); b.flows.len()],
        }
    }

    /// Adds flow `fi`'s findings `v` to its own verdict and to the run's, named by the flow
    /// when the run has several.
    fn add(&mut self, run: &mut Verdict, fi: usize, v: Verdict) {
        let several = self.b.flows.len() > 1;
        for (status, reason) in v.findings() {
            self.own[fi].add(*status, reason.clone());
            let r = if several {
                format!("flow {} ({}): {reason}", fi, self.b.flows[fi].name)
            } else {
                reason.clone()
            };
            run.add(*status, r);
        }
    }
}

/// Whether flow `app` completed (or stalled), with why its requests may have timed out,
/// and what an infinite ACK timeout does to a flow left waiting.
fn judge_flow_completion(
    world: &World,
    cfg: &Config,
    app: &Perftest,
    end: TimePs,
    stopped_early: bool,
) -> Verdict {
    let mut v = Verdict::default();
    verdict::judge_completion(app, end, stopped_early, &mut v);
    if app.errors.by_status.contains_key("RETRY_EXC_ERR") {
        if let Some(hint) = ack_timeout_hint(world, cfg) {
            v.add(RunStatus::Incomplete, hint);
        }
    }
    if !app.finished && !stopped_early && cfg.qp.ack_timeout_ns().is_none() {
        // IBA's infinite local ACK timeout: what was lost with nothing behind it is
        // never resent (nor a lost ping-pong iteration given up), so the QP waits
        // forever, as it would on real hardware.
        v.add(
            RunStatus::Incomplete,
            "qp.timeout = 0 (-u 0) is the infinite local ACK timeout: a lost packet with \
             nothing sent behind it is never resent, so the QP waits forever; give -u 1 \
             to 31 (4.096 µs × 2^n)"
                .to_string(),
        );
    }
    v
}

/// Records what the payload oracle found as it ran: placed payloads that differ from their
/// source, atomics that returned a wrong value, atomic targets wrong at the end.
fn judge_oracle(world: &World, verdict: &mut Verdict) {
    if let Some(m) = &world.oracle.first_mismatch {
        verdict.add(
            RunStatus::Corrupt,
            format!(
                "{} placed payload(s) differ from their source; first: {m}",
                world.oracle.mismatches
            ),
        );
    }
    if let Some(m) = &world.oracle.atomics.first_mismatch {
        verdict.add(
            RunStatus::Corrupt,
            format!(
                "{} atomic(s) returned a wrong value; first: {m}",
                world.oracle.atomics.mismatches
            ),
        );
    }
    let finals = world.oracle.atomics.check_final(&world.mems);
    if let Some(first) = finals.first() {
        verdict.add(
            RunStatus::Corrupt,
            format!(
                "{} atomic target(s) hold a wrong value at the end; first: {first}",
                finals.len()
            ),
        );
    }
}

/// Why every request may have timed out: the propagation round trip between the server and
/// its farthest client is longer than the local ACK timeout (`qp.timeout`), so no ACK can
/// come back in time and the QP retries until RETRY_EXC_ERR. `None` when it is shorter.
fn ack_timeout_hint(world: &World, cfg: &Config) -> Option<String> {
    let timeout_ns = cfg.qp.ack_timeout_ns()?;
    let net = &world.net;
    let rtt_ps = (1..net.nodes())
        .filter_map(|c| Some(net.path_delay_ps(0, c)? + net.path_delay_ps(c, 0)?))
        .max()?;
    let rtt_ns = rtt_ps as f64 / 1e3;
    if rtt_ns < timeout_ns {
        return None;
    }
    // The least exponent whose timeout is longer than the round trip.
    let fix = (1..=31u8)
        .find(|&n| 4096.0 * f64::from(1u32 << n) > rtt_ns)
        .map_or(
            "no qp.timeout is that long (31, the most, is 8796 s)".to_string(),
            |n| format!("raise qp.timeout (-u) to at least {n}"),
        );
    Some(format!(
        "the round trip between the server and its farthest client, {:.3} µs of propagation \
         alone, is longer than the local ACK timeout, qp.timeout = {} ({:.3} µs): no ACK can \
         return before the request is resent, so the QP exhausts its retries; {fix}",
        rtt_ns / 1e3,
        cfg.qp.timeout,
        timeout_ns / 1e3
    ))
}
