//! The RDMA WAN accelerator of the long-distance RDMA paper ("Long-distance
//! RDMA-acceleration Frameworks"), as a link element on Local's side of a long link.
//!
//! Local's RC WRITE packets pass it on their way out; it keeps a copy of each, answers it at
//! once with a pseudo-ACK ([`pseudo_ack`]: the ACK Remote would send for that PSN), so
//! Local's window is released after a short local round trip instead of the long one. It
//! absorbs Remote's real ACKs for what it already acknowledged, frees its copies as they
//! are covered, and on a sequence NAK or when Remote's ACKs stop making progress sends its
//! copies again (go-back-N from the missing PSN): with the accelerator in place, loss on the
//! long link costs throughput, never data. Each connection is a state machine without I/O
//! ([`conn`]), with at most one go-back-N round under way.
//!
//! A round's frames leave one at a time on the accelerator's timer, each after the core has
//! handled it (`net.wan_accel_frame_ns`) and no faster than the long link's line rate: the
//! accelerator has one port toward Remote, and a burst faster than that port would only
//! queue (and, past the switch's buffer, be dropped) at the switch in front of the long
//! link, and every drop there is one more gap for Remote to NAK.
//!
//! How it learns a connection (`net.wan_accel_learn`): with "setup" (the default), as the
//! paper's accelerator, by parsing the RDMA CM exchange as it crosses: the hosts' connection
//! managers (`host/cm`) send REQ, REP and RTU as MADs to QP1 before any traffic; the
//! accelerator keeps each REQ until the REP of the same transaction passes the other way,
//! and from the pair learns the connection whose requester is on Local's side: the
//! addresses, both QPNs, that side's starting PSN (MSN 0, as every RC QP starts). With
//! "traffic" it learns from the traffic itself: the starting PSN from the
//! connection's first request, Local's QPN (which no request carries) from Remote's first
//! response; it buffers meanwhile but acknowledges nothing, so acceleration starts one long
//! round trip late. A connection is keyed by the IPv4 addresses and the UDP source port
//! (Remote's ACKs do not carry Remote's QPN; the entropy port is a function of both QPNs).
//!
//! Only WRITEs without immediate data are accelerated. READ, SEND, WRITE with immediate
//! and atomics pass through unaccelerated (their responses carry data or depend on
//! Remote's receive queue, which a pseudo-ACK cannot promise), and a connection stops
//! being accelerated until Remote has acknowledged them.
//!
//! Costs: one software core processes the frames it handles one after another
//! (`net.wan_accel_frame_ns` each) and adds `net.wan_accel_latency_ns` to each; the buffer
//! holds `net.wan_accel_buffer_bytes`; when full the accelerator stops pseudo-ACKing
//! and Local's own window applies until room frees.

pub mod accel;
pub mod conn;
pub mod pseudo_ack;

use std::cell::RefCell;
use std::rc::Rc;

use rnic_sim::TimePs;

use super::element::{ElementStats, Emitted, Fate, LinkElement};
use super::port::Port;
use crate::config::{NetConfig, WanAccelLearn};
pub use accel::{Accel, AccelConfig, AccelStats, Direction, Emit, Verdict};
pub use conn::MAX_STALLED_ROUNDS;

/// One half of the accelerator, on one direction of Local's link: the simulator's glue
/// around the shared [`Accel`].
#[derive(Debug)]
pub struct WanAccelHalf {
    side: Direction,
    shared: Rc<RefCell<Accel>>,
}

/// The accelerator's parameters from the network configuration. `long_rtt_ps` is the long
/// link's round trip (for the default timeout); `long_link` a port at its line rate
/// (resends are paced by its wire time).
pub fn accel_config(net: &NetConfig, long_rtt_ps: TimePs, long_link: Port) -> AccelConfig {
    let timeout_ps = if net.wan_accel_timeout_ns > 0.0 {
        rnic_sim::ns(net.wan_accel_timeout_ns)
    } else {
        2 * long_rtt_ps + rnic_sim::ns(100_000.0)
    };
    AccelConfig {
        buffer_bytes: net.wan_accel_buffer_bytes,
        frame_ps: rnic_sim::ns(net.wan_accel_frame_ns),
        latency_ps: rnic_sim::ns(net.wan_accel_latency_ns),
        timeout_ps,
        long_link,
        learn_at_setup: net.wan_accel_learn == WanAccelLearn::Setup,
    }
}

/// The two halves of one accelerator: (on Local's link toward Remote, on it toward Local).
pub fn wan_accel(
    net: &NetConfig,
    long_rtt_ps: TimePs,
    long_link: Port,
) -> (WanAccelHalf, WanAccelHalf) {
    let shared = Rc::new(RefCell::new(Accel::new(accel_config(
        net,
        long_rtt_ps,
        long_link,
    ))));
    (
        WanAccelHalf {
            side: Direction::LocalToRemote,
            shared: shared.clone(),
        },
        WanAccelHalf {
            side: Direction::RemoteToLocal,
            shared,
        },
    )
}

impl WanAccelHalf {
    /// The accelerator's counters (both halves share them).
    pub fn accel_stats(&self) -> AccelStats {
        self.shared.borrow().stats()
    }

    /// The accelerator's frames as this half's link sees them: all travel against it.
    fn emitted(&self, emits: Vec<Emit>, out: &mut Vec<Emitted>) {
        out.extend(emits.into_iter().map(|e| Emitted {
            bytes: e.bytes,
            delay_ps: e.delay_ps,
            back: e.direction != self.side,
        }));
    }
}

impl LinkElement for WanAccelHalf {
    fn on_frame(&mut self, now: TimePs, frame: &mut Vec<u8>, emit: &mut Vec<Emitted>) -> Fate {
        let mut emits = Vec::new();
        let v = self
            .shared
            .borrow_mut()
            .handle(now, self.side, frame, &mut emits);
        self.emitted(emits, emit);
        Fate {
            drop: v.drop,
            delay_ps: v.delay_ps,
        }
    }

    fn stats(&self) -> ElementStats {
        let a = self.shared.borrow();
        let s = a.stats();
        let frames = a.frames_seen(self.side);
        match self.side {
            Direction::LocalToRemote => ElementStats {
                frames,
                // Held-behind packets do not pass here; the inbound half emits them.
                absorbed: s.dropped_dups + s.held_behind_round,
                emitted: s.pseudo_acks,
                ..ElementStats::default()
            },
            Direction::RemoteToLocal => ElementStats {
                frames,
                absorbed: s.absorbed,
                emitted: s.retransmitted + a.held_sent(),
                ..ElementStats::default()
            },
        }
    }

    fn wake_at(&self) -> Option<TimePs> {
        // The inbound half owns the timer (its `back` direction leads to Remote).
        match self.side {
            Direction::RemoteToLocal => self.shared.borrow().poll_timeout(),
            Direction::LocalToRemote => None,
        }
    }

    fn on_wake(&mut self, now: TimePs, emit: &mut Vec<Emitted>) {
        if self.side == Direction::RemoteToLocal {
            let mut emits = Vec::new();
            self.shared.borrow_mut().handle_timeout(now, &mut emits);
            self.emitted(emits, emit);
        }
    }

    fn holds_frames(&self) -> bool {
        self.side == Direction::RemoteToLocal && self.shared.borrow().held_bytes() > 0
    }
}

impl WanAccelHalf {
    /// The accelerator's counters, from the half that reports them (the inbound one).
    pub fn reported_stats(&self) -> Option<AccelStats> {
        (self.side == Direction::RemoteToLocal).then(|| self.accel_stats())
    }
}
