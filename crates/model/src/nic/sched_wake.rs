//! Scheduler wake-ups without an event of their own.
//!
//! A paused scheduler is woken (`super::Nic::sched_kick`) whenever something downstream
//! may have freed room: a WQE left the WQE buffer, bytes left the TX payload buffer, the
//! descriptor channel took a request. Most of these wake-ups find the scheduler still held
//! back (at the 300-QP 64 B peak, about 3.5 per message), and each used to cost a `Sched`
//! event at the same picosecond: a push, a pop and a dispatch for a step that does nothing
//! but count a stall.
//!
//! The step's outcome does not depend on being an event, only on *when* it runs among the
//! events of that picosecond. A step queued at `now` runs after every event already queued
//! for `now` and before every event queued later. When nothing else is queued for `now` at
//! the wake-up, the queued step would be the very next event popped, so running it
//! directly after the current event, before the next pop, is the same order exactly: the
//! events the current one queues for `now` after the wake-up still come after the step.
//! [`crate::world::World::run_until`] runs such an owed step before it pops the next event
//! (`Nic::run_owed_step`, in `nic/route_tx.rs` beside the step it runs; and not at all if
//! the run stops first, as a queued step would never have been popped).
//! When other events are already queued for `now`, the wake-up stays an event, behind them.
//!
//! So the results are identical event for event (the golden outputs check it); only the
//! event count drops.

use rnic_sim::TimePs;

use super::cx::NicCx;
use super::scheduler::Scheduler;
use crate::event::NicEv;

/// The scheduler's step is due at `now` (it is `pending`): queue it as an event if other
/// events of `now` are queued before it, else owe it right after the current event.
pub(crate) fn wake<M>(sched: &mut Scheduler<M>, now: TimePs, cx: &mut NicCx<'_>) {
    // A wake-up for a later time (none today) or behind other events of `now` is queued.
    if cx.q.pops_next_if_pushed_at(now) {
        sched.owed = true;
    } else {
        cx.at(now, NicEv::Sched);
    }
}
