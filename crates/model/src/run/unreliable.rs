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
        if let (true, Some((node, qpn))) = (r.transport.is_empty(), ends(a).next()) {
            r.transport = match world.nics[node].dev.qp_service(qpn) {
                Some(ServiceType::Ud) => "ud",
                Some(ServiceType::Uc) => "uc",
                _ => "rc",
            }
            .to_string();
        }
        let (sent, received) = sent_and_received(world, a);
        r.messages_sent += sent;
        r.messages_received += received;
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

/// Every QP of `a`'s pairs, both ends (in latency tests both send): (node, QPN), the
/// server's end first.
fn ends(a: &Perftest) -> impl Iterator<Item = (usize, u32)> + '_ {
    (a.pairs.iter()).flat_map(|p| [(a.server, p.s_qpn), (p.c_node as usize, p.c_qpn)])
}

/// Messages `a`'s QPs sent whole and received whole, summed over both ends of every pair.
fn sent_and_received(world: &World, a: &Perftest) -> (u64, u64) {
    ends(a).fold((0, 0), |(sent, received), (node, qpn)| {
        let dev = &world.nics[node].dev;
        (
            sent + dev.sq_done(qpn),
            received + dev.qp_messages_received(qpn),
        )
    })
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
    let (sent, received) = sent_and_received(world, a);
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
