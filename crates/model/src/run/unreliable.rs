//! What a UC or UD run lost, from the transports' own counts: every QP of every flow, both
//! ends (in latency tests both send), messages sent whole against messages received whole.

use rnic_transport::ServiceType;

use crate::host::perftest::Perftest;
use crate::result::{RunStatus, UnreliableResult};
use crate::verdict::Verdict;
use crate::workload::PerfTest;
use crate::world::World;

/// The loss summary of a UC/UD run (`None` for RC runs).
pub(crate) fn summary(world: &World) -> Option<UnreliableResult> {
    if !world.drain_rx {
        return None;
    }
    let mut r = UnreliableResult::default();
    for a in &world.apps {
        r.iterations_given_up += a.ping.given_up;
        for p in &a.pairs {
            for (node, qpn) in [(a.server, p.s_qpn), (p.c_node as usize, p.c_qpn)] {
                let dev = &world.nics[node].dev;
                if r.transport.is_empty() {
                    r.transport = match dev.qp_service(qpn) {
                        Some(ServiceType::Ud) => "ud",
                        Some(ServiceType::Uc) => "uc",
                        _ => "rc",
                    }
                    .to_string();
                }
                r.messages_sent += dev.sq_done(qpn);
                r.messages_received += dev.qp_messages_received(qpn);
            }
        }
    }
    for n in &world.nics {
        let u = n.dev.stats().unreliable;
        r.uc_messages_abandoned += u.uc_messages_abandoned;
        r.no_recv_messages += u.no_recv_messages;
        r.qkey_mismatches += u.ud_qkey_mismatches;
        r.recv_errors += u.recv_errors;
    }
    r.messages_lost = r.messages_sent.saturating_sub(r.messages_received);
    Some(r)
}

/// Messages `node`'s QP `qpn` received whole (for the final buffer check: a UC/UD pair's
/// destination holds its source only if a message arrived).
pub(crate) fn received(world: &World, node: usize, qpn: u32) -> u64 {
    world
        .nics
        .get(node)
        .map_or(0, |n| n.dev.qp_messages_received(qpn))
}

/// A UC/UD send-lat that gave up more iterations than its messages lost: some answers came
/// after the give-up time (`-u`), late, not lost. A late SEND is the next receive the client
/// completes, so it ended a later iteration early, and the latencies from then on are too
/// short (a half round trip of 3.1 µs where the wire needs 15): the run is incomplete, not
/// measured. (write-lat's answers carry the iteration in their poll byte, so a late one is
/// told apart and ignored; its given-up iterations are only noted.)
pub(crate) fn judge_late_answers(world: &World, a: &Perftest, verdict: &mut Verdict) {
    if !world.drain_rx || a.spec.test != PerfTest::SendLat || a.ping.given_up == 0 {
        return;
    }
    let (mut sent, mut received) = (0u64, 0u64);
    for p in &a.pairs {
        for (node, qpn) in [(a.server, p.s_qpn), (p.c_node as usize, p.c_qpn)] {
            let dev = &world.nics[node].dev;
            sent += dev.sq_done(qpn);
            received += dev.qp_messages_received(qpn);
        }
    }
    let late = a
        .ping
        .given_up
        .saturating_sub(sent.saturating_sub(received));
    if late > 0 {
        verdict.add(
            RunStatus::Incomplete,
            format!(
                "{late} send-lat iteration(s) given up though their messages arrived, late: the \
                 give-up time, the local ACK timeout (-u, qp.timeout), is shorter than this \
                 run's round trip, so a late answer ended a later iteration and its latency \
                 is too short; raise -u"
            ),
        );
    }
}
