//! Congestion control's work at the NIC's port: what a frame arriving there tells it, its
//! CNPs onto the port, its timer events. Functions of the parts they need (the algorithm
//! behind the [`super::hook`], the transport's QP table, the NIC's context), not methods of
//! the `Nic`; what they ask of the rest of the NIC comes back as a value (a QP the TX engine
//! takes up again). A module of its own because it names the NIC's events, which name the
//! hook's.

use rnic_sim::TimePs;
use rnic_transport::Device;
use rnic_wire::frame::IPV4_OFFSET;
use rnic_wire::{BthRepr, Opcode};

use super::hook::{AnyCc, CongestionControl, Ev, Timers};
use crate::event::NicEv;
use crate::nic::cx::NicCx;

/// The ECN field's Congestion Experienced codepoint (RFC 3168).
const CE: u8 = 0b11;

/// Whether `frame` is an IPv4 frame whose ECN field says Congestion Experienced.
fn ce_marked(frame: &[u8]) -> bool {
    frame
        .get(IPV4_OFFSET + 1)
        .is_some_and(|tos| tos & 0b11 == CE)
}

/// Frame `frame` (BTH `bth`) arrived at the port and is parsed at `at`: a CNP cuts its QP's
/// rate (reaction point); CE-marked data may send a CNP to its sender (notification
/// point), addressed from the transport's QP table `dev`. The frame itself goes on as
/// before.
pub(crate) fn on_arrival(
    cc: &mut AnyCc,
    dev: &Device,
    at: TimePs,
    frame: u32,
    bth: Option<BthRepr>,
    cx: &mut NicCx<'_>,
) {
    let Some(b) = bth.filter(|_| cc.is_on()) else {
        return;
    };
    if b.opcode == Opcode::Cnp {
        let mut timers = Timers::new();
        cc.cnp_received(b.dest_qp, at, &mut timers);
        schedule(timers, cx);
        return;
    }
    if b.opcode.has_payload() && ce_marked(cx.frames.get(frame)) {
        answer(cc, dev, at, frame, b.dest_qp, cx);
    }
}

/// CE-marked data of local QP `qpn` in `frame`: a CNP to the sender's QP goes onto the
/// port at `at`, unless one went in the interval. The CNP does not wait in the TX engine's
/// queue of QPs (NICs send CNPs from a queue of their own, ahead of data).
fn answer(cc: &mut AnyCc, dev: &Device, at: TimePs, frame: u32, qpn: u32, cx: &mut NicCx<'_>) {
    let Some(dest_qpn) = dev.qp_dest_qpn(qpn) else {
        return;
    };
    if !cc.data_marked(qpn, at) {
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

/// One of congestion control's events at `now`; returns the QP its rate now lets send
/// again, for the TX engine to take up.
pub(crate) fn on_event(cc: &mut AnyCc, now: TimePs, ev: Ev, cx: &mut NicCx<'_>) -> Option<u32> {
    let mut timers = Timers::new();
    let wake = cc.on_event(ev, now, &mut timers);
    schedule(timers, cx);
    wake
}

/// Schedules the timers an algorithm armed.
fn schedule(timers: Timers, cx: &mut NicCx<'_>) {
    for (t, ev) in timers {
        cx.at(t, NicEv::Cc(ev));
    }
}
