//! Congestion control's work with the NIC's units (an `impl Nic`): what a frame arriving at
//! the port tells it, its CNPs onto the port, its events.

use rnic_sim::TimePs;
use rnic_wire::frame::IPV4_OFFSET;
use rnic_wire::{BthRepr, Opcode};

use super::hook::{CongestionControl, Ev, Timers};
use crate::event::NicEv;
use crate::nic::cx::NicCx;
use crate::nic::Nic;

/// The ECN field's Congestion Experienced codepoint (RFC 3168).
const CE: u8 = 0b11;

/// Whether `frame` is an IPv4 frame whose ECN field says Congestion Experienced.
fn ce_marked(frame: &[u8]) -> bool {
    frame
        .get(IPV4_OFFSET + 1)
        .is_some_and(|tos| tos & 0b11 == CE)
}

impl Nic {
    /// Frame `frame` (BTH `bth`) arrived at the port and is parsed at `at`: a CNP cuts its
    /// QP's rate (reaction point); CE-marked data may send a CNP to its sender (notification
    /// point). The frame itself goes on as before.
    pub(crate) fn cc_on_arrival(
        &mut self,
        at: TimePs,
        frame: u32,
        bth: Option<BthRepr>,
        cx: &mut NicCx<'_>,
    ) {
        let Some(b) = bth.filter(|_| self.cc.is_on()) else {
            return;
        };
        if b.opcode == Opcode::Cnp {
            let mut timers = Timers::new();
            self.cc.cnp_received(b.dest_qp, at, &mut timers);
            schedule(timers, cx);
            return;
        }
        if b.opcode.has_payload() && ce_marked(cx.frames.get(frame)) {
            self.cc_answer(at, frame, b.dest_qp, cx);
        }
    }

    /// CE-marked data of local QP `qpn` in `frame`: a CNP to the sender's QP goes onto the
    /// port at `at`, unless one went in the interval. The CNP does not wait in the TX
    /// engine's queue of QPs (NICs send CNPs from a queue of their own, ahead of data).
    fn cc_answer(&mut self, at: TimePs, frame: u32, qpn: u32, cx: &mut NicCx<'_>) {
        let Some(dest_qpn) = self.dev.qp_dest_qpn(qpn) else {
            return;
        };
        if !self.cc.data_marked(qpn, at) {
            return;
        }
        let slot = cx.frames.alloc();
        let mut buf = std::mem::take(cx.frames.buf_mut(slot));
        let built = super::cnp::answer(cx.frames.get(frame), dest_qpn, &mut buf);
        *cx.frames.buf_mut(slot) = buf;
        if built {
            cx.send(slot, at);
        } else {
            cx.frames.release(slot);
        }
    }

    /// One of congestion control's events.
    pub(crate) fn on_cc_event(&mut self, now: TimePs, ev: Ev, cx: &mut NicCx<'_>) {
        let mut timers = Timers::new();
        let wake = self.cc.on_event(ev, now, &mut timers);
        schedule(timers, cx);
        if let Some(qpn) = wake {
            self.tx_enlist(qpn);
            self.tx_kick(now, cx);
        }
    }
}

/// Schedules the timers an algorithm armed.
fn schedule(timers: Timers, cx: &mut NicCx<'_>) {
    for (t, ev) in timers {
        cx.at(t, NicEv::Cc(ev));
    }
}
