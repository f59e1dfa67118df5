//! The TX engine: pulls frames from the transport (`poll_transmit_qp`), one QP at a time,
//! and hands them to the Ethernet port. Which QP it serves next is its [`TxOrder`]'s choice:
//! the baseline runs each message to completion (the baseline transport FSM of the
//! TX-isolation paper): after the first packet of a multi-packet message it stays on that
//! QP until the last; TX isolation's slicing execution plugs in through the same seam. Occupancy per frame: `tx_msg_cycles` for the first packet of a
//! message (the calibrated bottleneck of the 64 B path), `tx_pkt_cycles` for each further
//! packet, `ack_cycles` for ACKs/NAKs. The engine runs at most `tx_port_slack_bytes` ahead
//! of the port. After a retransmission timeout it sweeps all QPs (`poll_transmit`).
//!
//! The TX payload buffer (`nic.tx_buffer_bytes`) holds SEND/WRITE payload from the moment
//! its payload read starts until it leaves on the wire; while it is full, decoded WQEs wait
//! for room before their payload read ([`super::wqe_fetch`]) and the scheduler pauses. It
//! bounds how much work the fetch stage runs ahead of the wire in bytes, as a NIC's packet
//! buffer does: without it 512 fetched 4 KB WQEs would put 2 MB of payload "in the NIC",
//! and the hundreds of QPs between a visit's QPC prefetch and its use would thrash the QPC
//! cache. A message longer than the path MTU
//! streams through it and holds at most one packet's worth.

use std::collections::VecDeque;

use rnic_sim::TimePs;

use super::ports::TxOrder;
use super::unit::Unit;

/// Counters of the TX engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TxStats {
    /// Frames the TX engine sent (CNPs leave from congestion control's own queue, not
    /// through the engine: `nic.cc.cnps_sent`).
    pub frames: u64,
    /// Request messages started (first/only packets, not retransmitted).
    pub messages: u64,
    /// ACK/NAK frames.
    pub acks: u64,
    /// Frames the transport sent as resends: requests sent again, and the responses it
    /// replays for duplicate READs and atomics (a replayed READ response may leave for the
    /// first time, when a duplicate READ abandoned its first copy unsent: see the
    /// transport's `replayed_read_responses`).
    pub retransmits: u64,
    /// Most bytes the TX payload buffer ever held.
    pub buffer_peak_bytes: u64,
    /// Messages whose first packet left (the count of the next two).
    pub first_frames: u64,
    /// Longest time from a WQE's decode to its message's first packet leaving the TX
    /// engine, ps: payload read, QPC, and the wait behind other messages at the engine.
    pub first_frame_wait_max_ps: u64,
    /// Sum of those times, ps.
    pub first_frame_wait_sum_ps: u64,
    /// Times the engine, in the middle of a message, waited for its next packet's payload.
    pub payload_stalls: u64,
}

/// The TX engine.
#[derive(Debug, Default)]
pub struct TxEngine<O> {
    /// QPs with something to send, in the mechanism's order ([`TxOrder`]).
    pub order: O,
    /// The QP whose message (or slice) goes on: served before the order's next.
    current: Option<u32>,
    /// QPs whose next frame is an acknowledgement (ACK, NAK, atomic ACK) that their
    /// receive path just queued: served ahead of `current` and the order, at the next packet
    /// boundary. An RNIC's receive path injects its acknowledgements between the TX
    /// pipeline's packets (csRNA's gem5 model pushes each ACK into the one send FIFO the
    /// request packets share); held behind a message run to completion, a 64 B WRITE's
    /// ACK waited 685 µs for the 8 MB WRITE its responder's NIC was sending.
    acks: VecDeque<u32>,
    /// Per QPN: waiting in `acks` (a flag here, not in the 80-byte `QpHw` record, which
    /// has no byte left).
    in_acks: Vec<bool>,
    /// Messages posted to the transport and not yet started on the wire.
    pub backlog: u32,
    /// Bytes in the TX payload buffer: SEND/WRITE payload being read or waiting to be sent
    /// (reserved when the payload read starts, released as first transmissions leave).
    pub buffered_bytes: u64,
    /// A `TxWake` is pending.
    pub wake_pending: bool,
    /// Parked, paused ([`super::cx::pause_looks`]): the time of its pending wake.
    pub park: Option<TimePs>,
    /// Pending wakes a look replaced, by time: they find nothing to do.
    pub stale_wakes: Vec<TimePs>,
    /// Sweep every QP (after a timeout).
    pub sweep: bool,
    /// The engine as a unit.
    pub unit: Unit,
    /// Counters.
    pub stats: TxStats,
    /// Request packets sent again, by QPN (read per flow: the transport counts per device).
    pub retransmits_by_qpn: Vec<u64>,
    /// Per QPN: decode times of the messages handed to the transport and not yet started.
    decoded: Vec<VecDeque<TimePs>>,
}

impl<O: TxOrder + Default> TxEngine<O> {
    /// An idle engine serving QPs in `order`.
    pub fn with_order(order: O) -> Self {
        TxEngine {
            order,
            ..TxEngine::default()
        }
    }
    /// Reserves `bytes` of the TX payload buffer for a QP holding `qp_bytes` of it.
    pub fn reserve(&mut self, qp_bytes: &mut u32, bytes: u64) {
        let b = bytes.min(u64::from(u32::MAX - *qp_bytes));
        *qp_bytes += b as u32;
        self.buffered_bytes += b;
        self.stats.buffer_peak_bytes = self.stats.buffer_peak_bytes.max(self.buffered_bytes);
    }

    /// Releases up to `bytes` of a QP's `qp_bytes` share of the buffer; returns whether
    /// anything was released.
    pub fn release(&mut self, qp_bytes: &mut u32, bytes: u64) -> bool {
        let b = bytes.min(u64::from(*qp_bytes));
        *qp_bytes -= b as u32;
        self.buffered_bytes -= b;
        b > 0
    }

    /// Queues `qpn`, tagged `iso_tag` (whose `in_tx` flag is given), if it is not queued.
    pub fn enlist(&mut self, qpn: u32, in_tx: &mut bool, iso_tag: u32) {
        if !*in_tx {
            *in_tx = true;
            self.order.enlist(qpn, iso_tag);
        }
    }

    /// Makes sure the engine runs: the time of a wake to schedule, if none is pending.
    pub fn kick(&mut self, now: TimePs) -> Option<TimePs> {
        if self.wake_pending {
            return None;
        }
        self.wake_pending = true;
        Some(now.max(self.unit.free_at()))
    }

    /// The QP to serve next: the one in the middle of a message (`true`), else the order's
    /// next, else a queued QP whose next frame is a response (`responds`) that the order
    /// holds back ([`TxOrder::pop_response`]).
    pub fn next_qp(&mut self, responds: impl Fn(u32) -> bool) -> Option<(u32, bool)> {
        if let Some(q) = self.current.take() {
            return Some((q, true));
        }
        let next = self.order.pop();
        next.or_else(|| self.order.pop_response(responds))
            .map(|q| (q, false))
    }

    /// A message of `qpn` decoded at `at` went to the transport.
    pub fn posted(&mut self, qpn: u32, at: TimePs) {
        let i = qpn as usize;
        if i >= self.decoded.len() {
            crate::per_qp::grow_for(&mut self.decoded, i, VecDeque::new);
        }
        self.decoded[i].push_back(at);
    }

    /// The first packet of `qpn`'s oldest posted message left at `now`.
    pub fn started(&mut self, qpn: u32, now: TimePs) {
        let Some(at) = self
            .decoded
            .get_mut(qpn as usize)
            .and_then(|d| d.pop_front())
        else {
            return;
        };
        let w = now.saturating_sub(at);
        self.stats.first_frames += 1;
        self.stats.first_frame_wait_max_ps = self.stats.first_frame_wait_max_ps.max(w);
        self.stats.first_frame_wait_sum_ps += w;
    }

    /// `qpn` went to error: its posted messages will not start.
    pub fn forget(&mut self, qpn: u32) {
        if let Some(d) = self.decoded.get_mut(qpn as usize) {
            d.clear();
        }
    }

    /// Runs `qpn`'s message to completion: it is served next again.
    pub fn stay_on(&mut self, qpn: u32) {
        self.current = Some(qpn);
    }

    /// `qpn`'s next frame is an acknowledgement: it goes at the next packet boundary, if
    /// it is not waiting there already.
    pub fn enlist_ack(&mut self, qpn: u32) {
        let i = qpn as usize;
        if i >= self.in_acks.len() {
            crate::per_qp::grow_for(&mut self.in_acks, i, || false);
        }
        if !self.in_acks[i] {
            self.in_acks[i] = true;
            self.acks.push_back(qpn);
        }
    }

    /// The oldest QP with an acknowledgement to send, if any.
    #[inline]
    pub fn pop_ack(&mut self) -> Option<u32> {
        let qpn = self.acks.pop_front()?;
        self.in_acks[qpn as usize] = false;
        Some(qpn)
    }

    /// Whether anything is left to send.
    pub fn has_more(&self) -> bool {
        self.sweep || self.current.is_some() || !self.order.is_empty() || !self.acks.is_empty()
    }
}

impl<O> crate::stats::Report for TxEngine<O> {
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        reg.record(prefix, &self.stats);
        reg.record(&format!("{prefix}.unit"), &self.unit.stats);
        // Bytes still in the payload buffer (0 after a run that sent all it fetched).
        reg.set(&format!("{prefix}.buffer_left_bytes"), self.buffered_bytes);
    }
}
