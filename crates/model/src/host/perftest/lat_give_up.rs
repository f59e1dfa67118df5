//! UC/UD ping-pong latency tests under loss: a lost ping or pong is never resent, so the
//! client would wait forever (perftest itself hangs there). Each post arms a give-up after
//! `PingPong::give_up_after_ps`; if the iteration is still open then, it is counted as given
//! up (no latency sample) and the next one starts. The event carries only the QP (events
//! stay two words); the post time tells whose give-up it is. Iterations that complete are measured
//! as always. Here is the ping-pong's side (arming, telling a current give-up from a stale
//! one, counting it); the test's (`Perftest::on_lat_give_up`, which starts the next
//! iteration) is in `lat.rs`.

use rnic_sim::TimePs;

use super::PingPong;
use crate::event::{Ev, HostEv};

impl PingPong {
    /// The client `node` posted the current iteration on `qpn` at `at`: the give-up event
    /// to arm, and when (UC/UD, `unreliable`, with a give-up time; `None` otherwise).
    pub(crate) fn give_up_event(
        &self,
        unreliable: bool,
        node: usize,
        qpn: u32,
        at: TimePs,
    ) -> Option<(TimePs, Ev)> {
        let after = self.give_up_after_ps.filter(|_| unreliable)?;
        let ev = Ev::Host {
            node: node as u32,
            ev: HostEv::LatGiveUp { qpn },
        };
        Some((at.saturating_add(after), ev))
    }

    /// A give-up is due at `now`: whether it is the current iteration's. It is if that
    /// iteration was posted one give-up time ago (each post arms one, and posts are
    /// strictly later than the ones before, so an earlier iteration's give-up comes too
    /// early and is stale).
    pub(crate) fn give_up_is_current(&self, now: TimePs) -> bool {
        self.give_up_after_ps
            .is_some_and(|after| now >= self.posted_ps.saturating_add(after))
    }

    /// The current iteration is given up: counted, and the next one is current.
    pub(crate) fn give_up(&mut self) {
        self.given_up += 1;
        self.iteration += 1;
    }
}
