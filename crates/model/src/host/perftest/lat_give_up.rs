//! UC/UD ping-pong latency tests under loss: a lost ping or pong is never resent, so the
//! client would wait forever (perftest itself hangs there). Each post arms a give-up after
//! `PingPong::give_up_after_ps`; if the iteration is still open then, it is counted as given
//! up (no latency sample) and the next one starts. The event carries only the QP (events
//! stay two words); the post time tells whose give-up it is. Iterations that complete are measured
//! as always.

use rnic_sim::TimePs;

use super::{HostCx, Perftest};
use crate::event::{Ev, HostEv};

impl Perftest {
    /// The client `node` posted the current iteration on `qpn` at `at`: arm its give-up.
    pub(crate) fn lat_arm_give_up(
        &mut self,
        node: usize,
        qpn: u32,
        at: TimePs,
        cx: &mut HostCx<'_>,
    ) {
        let Some(after) = self.ping.give_up_after_ps.filter(|_| self.spec.unreliable) else {
            return;
        };
        cx.q.push(
            at.saturating_add(after),
            Ev::Host {
                node: node as u32,
                ev: HostEv::LatGiveUp { qpn },
            },
        );
    }

    /// A give-up is due at `now`. It is the current iteration's if that iteration was
    /// posted one give-up time ago (each post arms one, and posts are strictly later than
    /// the ones before, so an earlier iteration's give-up comes too early and is stale):
    /// then the iteration is abandoned and the next one starts.
    pub(crate) fn on_lat_give_up(&mut self, now: TimePs, cx: &mut HostCx<'_>) {
        let Some(after) = self.ping.give_up_after_ps else {
            return;
        };
        let current = now >= self.ping.posted_ps.saturating_add(after);
        if self.finished || !current || !self.procs.list.is_empty() {
            return;
        }
        self.ping.given_up += 1;
        self.ping.iteration += 1;
        // The iteration ended here, without a completion: the loop's measured time runs to
        // its last iteration's end, completed or given up.
        self.measure.completed(now);
        let done = if self.spec.duration_mode {
            now >= self.window.span_ps.1
        } else {
            self.ping.iteration >= self.spec.iters
        };
        if done {
            self.finished = true;
            return;
        }
        self.lat_post_next(now, cx);
    }
}
