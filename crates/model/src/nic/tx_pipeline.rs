//! The TX engine: pulls frames from the transport (`poll_transmit_qp`), one QP at a time,
//! and hands them to the Ethernet port. It runs each message to completion (the baseline
//! transport FSM of seed 001): after the first packet of a multi-packet message it stays on
//! that QP until the last. Occupancy per frame: `tx_msg_cycles` for the first packet of a
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

use rnic_sim::{bytes_time_ps_mbps, TimePs};
use rnic_wire::Opcode;

use super::unit::Unit;
use crate::event::Ev;
use crate::world::World;

/// Counters of the TX engine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TxStats {
    /// Frames sent.
    pub frames: u64,
    /// Request messages started (first/only packets, not retransmitted).
    pub messages: u64,
    /// ACK/NAK frames.
    pub acks: u64,
    /// Retransmitted frames.
    pub retransmits: u64,
    /// Most bytes the TX payload buffer ever held.
    pub buffer_peak_bytes: u64,
}

/// The TX engine.
#[derive(Debug, Default)]
pub struct TxEngine {
    /// QPs with something to send.
    pub queue: VecDeque<u32>,
    current: Option<u32>,
    /// Messages posted to the transport and not yet started on the wire.
    pub backlog: u32,
    /// Bytes in the TX payload buffer: SEND/WRITE payload being read or waiting to be sent
    /// (reserved when the payload read starts, released as first transmissions leave).
    pub buffered_bytes: u64,
    /// A `TxWake` is pending.
    pub wake_pending: bool,
    /// Sweep every QP (after a timeout).
    pub sweep: bool,
    /// The engine as a unit.
    pub unit: Unit,
    /// Counters.
    pub stats: TxStats,
}

impl super::Nic {
    /// Reserves `bytes` of the TX payload buffer for a payload read of `qpn`.
    pub fn tx_buffer_reserve(&mut self, qpn: u32, bytes: u64) {
        if let Some(qp) = self.qps.get_mut(qpn as usize) {
            let b = bytes.min(u64::from(u32::MAX - qp.tx_buffered_bytes));
            qp.tx_buffered_bytes += b as u32;
            self.tx.buffered_bytes += b;
            self.tx.stats.buffer_peak_bytes =
                self.tx.stats.buffer_peak_bytes.max(self.tx.buffered_bytes);
        }
    }

    /// Releases up to `bytes` of `qpn`'s share of the TX payload buffer (sent, or never to
    /// be sent); `u64::MAX` releases all of it (the QP completed in error: the transport
    /// flushes what it had not sent). Returns whether anything was released.
    pub fn tx_buffer_release(&mut self, qpn: u32, bytes: u64) -> bool {
        let Some(qp) = self.qps.get_mut(qpn as usize) else {
            return false;
        };
        let b = bytes.min(u64::from(qp.tx_buffered_bytes));
        qp.tx_buffered_bytes -= b as u32;
        self.tx.buffered_bytes -= b;
        b > 0
    }
}

impl World {
    /// Makes sure the TX engine runs.
    pub(crate) fn tx_kick(&mut self, n: usize, now: TimePs) {
        let tx = &mut self.nodes[n].nic.tx;
        if !tx.wake_pending {
            tx.wake_pending = true;
            self.q
                .push(now.max(tx.unit.free_at()), Ev::TxWake { node: n as u32 });
        }
    }

    /// The TX engine sends at most one frame at `now`.
    pub(crate) fn on_tx_wake(&mut self, n: usize, now: TimePs) {
        let np = &self.p.nic;
        let (msg_ps, pkt_ps, ack_ps) = (np.tx_msg_ps, np.tx_pkt_ps, np.ack_ps);
        let slack = bytes_time_ps_mbps(np.tx_port_slack_bytes, self.p.eth.mbps);
        let node = &mut self.nodes[n];
        let tx = &mut node.nic.tx;
        tx.wake_pending = false;
        let wake_at = tx
            .unit
            .free_at()
            .max(self.net.nic_ports[n].free_at().saturating_sub(slack));
        if wake_at > now {
            tx.wake_pending = true;
            self.q.push(wake_at, Ev::TxWake { node: n as u32 });
            return;
        }
        let slot = self.frames.alloc();
        let (meta, qpn_used) = loop {
            let tx = &mut node.nic.tx;
            if tx.sweep {
                match node
                    .dev
                    .poll_transmit(now, &node.mem, self.frames.buf_mut(slot))
                {
                    Some(m) => break (m, None),
                    None => {
                        node.nic.tx.sweep = false;
                        continue;
                    }
                }
            }
            let Some(qpn) = tx.current.take().or_else(|| tx.queue.pop_front()) else {
                self.frames.release(slot);
                return;
            };
            match node
                .dev
                .poll_transmit_qp(qpn, now, &node.mem, self.frames.buf_mut(slot))
            {
                Some(m) => break (m, Some(qpn)),
                None => {
                    if let Some(qp) = node.nic.qps.get_mut(qpn as usize) {
                        qp.in_tx = false;
                    }
                }
            }
        };
        let op = meta.opcode;
        let starts = op.is_first() || op.is_only();
        let cost = if matches!(op, Opcode::RcAck | Opcode::Cnp) {
            node.nic.tx.stats.acks += 1;
            ack_ps
        } else if starts {
            msg_ps
        } else {
            pkt_ps
        };
        let tx = &mut node.nic.tx;
        let done = tx.unit.serve_for(now, cost);
        tx.stats.frames += 1;
        if meta.is_retransmit {
            tx.stats.retransmits += 1;
        }
        let mut kick_sched = false;
        let mut freed = false;
        if let Some(qpn) = qpn_used {
            if op.is_request() && !meta.is_retransmit && meta.payload_len > 0 {
                freed = node.nic.tx_buffer_release(qpn, u64::from(meta.payload_len));
            }
        }
        let tx = &mut node.nic.tx;
        if op.is_request() && starts && !meta.is_retransmit {
            tx.stats.messages += 1;
            tx.backlog = tx.backlog.saturating_sub(1);
            kick_sched = true;
        }
        if let Some(qpn) = qpn_used {
            if op.is_first() || op.is_middle() {
                tx.current = Some(qpn);
            } else if node.dev.qp_wants_transmit(qpn) {
                node.nic.tx.queue.push_back(qpn);
            } else if let Some(qp) = node.nic.qps.get_mut(qpn as usize) {
                qp.in_tx = false;
            }
        }
        let tx = &node.nic.tx;
        let more = tx.sweep || tx.current.is_some() || !tx.queue.is_empty();
        self.net_send(n, slot, done);
        if more {
            self.nodes[n].nic.tx.wake_pending = true;
            self.q.push(done, Ev::TxWake { node: n as u32 });
        }
        if freed {
            self.tx_buffer_pump(n, now);
        } else if kick_sched {
            self.sched_kick(n, now);
        }
        self.arm_timer(n, now);
    }
}
