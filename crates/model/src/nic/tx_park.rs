//! The TX engine's waits for its port: parked while paused ([`super::cx::pause_looks`]).

use rnic_sim::TimePs;

use super::cx::pause_looks::parked_looks;
use super::cx::NicCx;
use super::Nic;
use crate::event::NicEv;

impl Nic {
    /// Whether the `TxWake` due at `now` is still wanted (a look may have replaced it).
    pub(crate) fn tx_wake_due(&mut self, now: TimePs) -> bool {
        let stale = &mut self.tx.engine.stale_wakes;
        if let Some(i) = stale.iter().position(|&t| t == now) {
            stale.swap_remove(i);
            return false;
        }
        if self.tx.engine.park == Some(now) {
            self.tx.engine.park = None;
        }
        true
    }

    /// The TX engine, its look at `now` answered "not before `wake_at`" (its port paused or
    /// busy, or its unit busy), waits: parked when its port only says to look again
    /// (its wake at the pause's end then stands for all the looks until then), else woken
    /// at `wake_at`.
    pub(crate) fn tx_wait(
        &mut self,
        now: TimePs,
        wake_at: TimePs,
        slack: TimePs,
        cx: &mut NicCx<'_>,
    ) {
        self.tx.engine.wake_pending = true;
        let looks = cx
            .wire
            .look_again(cx.node, now)
            .and_then(|l| parked_looks(now, self.tx.engine.unit.free_at(), slack, l));
        let Some(p) = looks else {
            cx.at(wake_at, NicEv::TxWake);
            return;
        };
        debug_assert_eq!(
            p.first, wake_at,
            "the first parked look is the wake it replaces"
        );
        let stale = &mut self.tx.engine.stale_wakes;
        match stale.iter().position(|&t| t == p.end) {
            // The wake a look replaced is the one wanted again.
            Some(i) => {
                stale.swap_remove(i);
            }
            None => cx.at(p.end, NicEv::TxWake),
        }
        self.tx.engine.park = Some(p.end);
        cx.wire.park(cx.node, p);
    }

    /// The network wakes the parked TX engine at `now`, the first of its looks that sees a
    /// change of its pause: it looks as it did then.
    pub(crate) fn on_tx_look(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        let Some(end) = self.tx.engine.park.take() else {
            return;
        };
        self.tx.engine.stale_wakes.push(end);
        self.on_tx_wake(now, cx);
    }
}
