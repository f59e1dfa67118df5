//! The TX engine's waits for its port: parked while paused ([`crate::nic::cx::pause_looks`]).
//! A part of the transmit path's stage: it needs only the TX engine and the wire.

use rnic_sim::TimePs;

use super::TxPath;
use crate::event::NicEv;
use crate::nic::cx::pause_looks::parked_looks;
use crate::nic::cx::NicCx;

impl<O> TxPath<O> {
    /// Whether the `TxWake` due at `now` is still wanted (a look may have replaced it).
    pub fn wake_due(&mut self, now: TimePs) -> bool {
        let stale = &mut self.engine.stale_wakes;
        if let Some(i) = stale.iter().position(|&t| t == now) {
            stale.swap_remove(i);
            return false;
        }
        if self.engine.park == Some(now) {
            self.engine.park = None;
        }
        true
    }

    /// The TX engine, its look at `now` answered "not before `wake_at`" (its port paused or
    /// busy, or its unit busy), waits: parked when its port only says to look again
    /// (its wake at the pause's end then stands for all the looks until then), else woken
    /// at `wake_at`.
    pub fn wait(&mut self, now: TimePs, wake_at: TimePs, slack: TimePs, cx: &mut NicCx<'_>) {
        self.engine.wake_pending = true;
        let looks = cx
            .wire
            .look_again(cx.node, now)
            .and_then(|l| parked_looks(now, self.engine.unit.free_at(), slack, l));
        let Some(p) = looks else {
            cx.at(wake_at, NicEv::TxWake);
            return;
        };
        debug_assert_eq!(
            p.first, wake_at,
            "the first parked look is the wake it replaces"
        );
        let stale = &mut self.engine.stale_wakes;
        match stale.iter().position(|&t| t == p.end) {
            // The wake a look replaced is the one wanted again.
            Some(i) => {
                stale.swap_remove(i);
            }
            None => cx.at(p.end, NicEv::TxWake),
        }
        self.engine.park = Some(p.end);
        cx.wire.park(cx.node, p);
    }
}
