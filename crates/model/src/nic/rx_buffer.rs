//! The NIC's receive buffer: where a received frame carrying payload for host memory (a
//! WRITE, SEND or READ response packet) waits from its last bit's arrival until that
//! payload has gone out over PCIe to the host.
//!
//! Why: a port faster than PCIe (a 400 Gb/s port on PCIe Gen4 x16), or an incast whose
//! receive rate passes PCIe, fills this buffer, and a real NIC must then either hold its link
//! peer back or lose frames. Without it the model placed received payload and queued its
//! PCIe writes without bound, so the senders ran ahead of the host's memory.
//!
//! The buffer drains at the PCIe link's rate: a frame leaves when its payload's posted
//! write (MPS-sized TLPs, each with its header) has left the NIC, the writes going out one
//! after another from the frames' arrivals. It does not wait for the moment the model's RX
//! pipeline issues that write: the pipeline's queues are unbounded, and it translates a
//! whole message on the message's first packet, so a 64 MiB WRITE's later packets wait and
//! then reach PCIe in one burst, a stall a real NIC translating page by page does not have
//! (counted from there, `write-bw -s 2097152 -D 0.02` held 2.1 MB and a 64 MiB WRITE was
//! resent 10,798 times). Frames without payload (ACKs, READ requests, atomics) are consumed
//! by the pipeline and are not held here.
//!
//! When the buffer cannot take a frame, the frame is dropped at the port and counted
//! (`drops`); the RC transport recovers as a real peer does (go-back-N after the NAK or the
//! ACK timeout). With `net.pfc` the NIC is lossless in intent: once more than `xoff_bytes`
//! are held it sends its link peer a PFC XOFF (a real 802.1Qbb frame, see
//! [`crate::net::pfc`]), and the XON once the buffer has drained to `xon_bytes`; the space
//! above `xoff_bytes` is the headroom for what was already on its way. A drop under PFC
//! means the headroom was too small for the link; it is counted the same way.
//!
//! Each frame's departure is known when it arrives, so the departures are kept in order and
//! drained lazily: an unpaused NIC costs no event.

use std::collections::VecDeque;

use rnic_sim::TimePs;

pub use crate::params::rx_buffer::RxBufferParams;

/// Counters of the receive buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RxBufferStats {
    /// Most bytes held at once.
    pub peak_bytes: u64,
    /// Frames dropped because the buffer could not take them.
    pub drops: u64,
    /// Bytes of those frames.
    pub drop_bytes: u64,
    /// Times the NIC paused its link peer (XOFFs sent to a peer not paused already).
    pub pauses: u64,
    /// PFC frames the NIC sent: XOFFs, their refreshes and XONs.
    pub pfc_frames: u64,
    /// Time the NIC kept its link peer paused (from each first XOFF to its XON, or the end
    /// of the run), ps.
    pub pause_ps: u64,
}

/// What became of an arriving frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Buffered.
    Taken,
    /// Buffered, and the buffer passed its XOFF level: pause the link peer now.
    TakenPause,
    /// No room: dropped.
    Dropped,
}

/// The receive buffer of one NIC port.
#[derive(Debug, Clone)]
pub struct RxBuffer {
    p: RxBufferParams,
    /// When the last admitted frame's payload write leaves the NIC.
    write_free_at: TimePs,
    /// Frames held: (their payload write leaves the NIC, the frame's bytes), in departure
    /// order.
    leaving: VecDeque<(TimePs, u64)>,
    /// Bytes in `leaving`.
    leaving_bytes: u64,
    /// When the standing pause began (the first XOFF), while the peer is paused.
    paused_since: Option<TimePs>,
    /// When the last XOFF was sent (a refresh is due half its pause time later).
    last_xoff: TimePs,
    /// The time of the pending look event, if one is pending.
    pub(crate) look_at: Option<TimePs>,
    /// The pause time of an XOFF at the link peer's rate, ps (known once one is sent).
    pub(crate) xoff_ps: TimePs,
    /// Counters (`pause_ps` holds finished pauses; see [`RxBuffer::stats`]).
    stats: RxBufferStats,
}

impl RxBuffer {
    /// An empty buffer.
    pub fn new(p: RxBufferParams) -> Self {
        RxBuffer {
            p,
            write_free_at: 0,
            leaving: VecDeque::new(),
            leaving_bytes: 0,
            paused_since: None,
            last_xoff: 0,
            look_at: None,
            xoff_ps: 0,
            stats: RxBufferStats::default(),
        }
    }

    /// Parameters.
    pub fn params(&self) -> RxBufferParams {
        self.p
    }

    /// Bytes held at `now` (after [`RxBuffer::drain`]).
    pub fn held_bytes(&self) -> u64 {
        self.leaving_bytes
    }

    /// Time on the PCIe link of a posted write of `payload` bytes (its TLPs and their
    /// headers), ps.
    fn write_ps(&self, payload: u64) -> TimePs {
        let wire =
            crate::params::data_tlps_wire_bytes(payload, self.p.mps_bytes, self.p.tlp_header_bytes);
        rnic_sim::ser_ps(wire, self.p.pcie_mbps)
    }

    /// Frees the bytes whose PCIe writes have left by `now`.
    pub fn drain(&mut self, now: TimePs) {
        while let Some(&(t, b)) = self.leaving.front() {
            if t > now {
                break;
            }
            self.leaving.pop_front();
            self.leaving_bytes -= b;
        }
    }

    /// A frame of `bytes` carrying `payload` bytes for host memory arrives at `now`.
    pub fn admit(&mut self, now: TimePs, bytes: u64, payload: u64) -> Admit {
        self.drain(now);
        if self.held_bytes() + bytes > self.p.capacity_bytes {
            self.stats.drops += 1;
            self.stats.drop_bytes += bytes;
            return Admit::Dropped;
        }
        let leaves = self.write_free_at.max(now) + self.write_ps(payload);
        self.write_free_at = leaves;
        self.leaving.push_back((leaves, bytes));
        self.leaving_bytes += bytes;
        self.stats.peak_bytes = self.stats.peak_bytes.max(self.held_bytes());
        if self.p.lossless && self.paused_since.is_none() && self.held_bytes() > self.p.xoff_bytes {
            self.paused_since = Some(now);
            self.last_xoff = now;
            self.stats.pauses += 1;
            self.stats.pfc_frames += 1;
            return Admit::TakenPause;
        }
        Admit::Taken
    }

    /// Whether the NIC has its peer paused.
    pub fn pausing(&self) -> bool {
        self.paused_since.is_some()
    }

    /// At `now`, with the peer paused: the PFC frame due, if any (the XON once drained to
    /// `xon_bytes`, or a refresh of the XOFF half its pause time, `xoff_ps`, after the last).
    pub fn pfc_due(&mut self, now: TimePs) -> Option<PfcDue> {
        let xoff_ps = self.xoff_ps;
        let since = self.paused_since?;
        self.drain(now);
        if self.held_bytes() <= self.p.xon_bytes {
            self.paused_since = None;
            self.stats.pause_ps += now - since;
            self.stats.pfc_frames += 1;
            return Some(PfcDue::Xon);
        }
        if now >= self.last_xoff + xoff_ps / 2 {
            self.last_xoff = now;
            self.stats.pfc_frames += 1;
            return Some(PfcDue::Refresh);
        }
        None
    }

    /// When the peer is paused, the next time the buffer must look again: the next PCIe
    /// departure, or the refresh of the XOFF, whichever is first.
    pub fn next_look(&self) -> Option<TimePs> {
        self.paused_since?;
        let refresh = self.last_xoff + self.xoff_ps / 2;
        Some(
            self.leaving
                .front()
                .map_or(refresh, |&(t, _)| t.min(refresh)),
        )
    }

    /// The run ended at `end`: a pause still standing is counted up to `end` and closed.
    pub fn end_pauses(&mut self, end: TimePs) {
        if let Some(since) = self.paused_since.take() {
            self.stats.pause_ps += end.saturating_sub(since);
        }
    }

    /// Counters (pauses still standing not included; see [`RxBuffer::end_pauses`]).
    pub fn stats(&self) -> RxBufferStats {
        self.stats
    }
}

/// A PFC frame the receive buffer asks the NIC to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcDue {
    /// Resume the peer.
    Xon,
    /// Pause the peer again before its pause time runs out.
    Refresh,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer of 10,000 bytes draining at 8 Gb/s (1 byte per ns), MPS 1000, TLP header 0:
    /// a payload of n bytes leaves n ns (n × 1000 ps) after the write before it.
    fn buffer(lossless: bool) -> RxBuffer {
        RxBuffer::new(RxBufferParams {
            capacity_bytes: 10_000,
            lossless,
            xoff_bytes: 6_000,
            xon_bytes: 3_000,
            pcie_mbps: 8_000,
            mps_bytes: 1_000,
            tlp_header_bytes: 0,
        })
    }

    #[test]
    fn a_full_buffer_drops_and_counts() {
        let mut b = buffer(false);
        assert_eq!(b.admit(0, 4_000, 4_000), Admit::Taken, "leaves at 4 µs");
        assert_eq!(b.admit(0, 4_000, 4_000), Admit::Taken, "leaves at 8 µs");
        assert_eq!(b.admit(1, 4_000, 4_000), Admit::Dropped);
        assert_eq!(b.stats().drops, 1);
        assert_eq!(b.stats().drop_bytes, 4_000);
        assert_eq!(b.stats().peak_bytes, 8_000);
        assert_eq!(b.admit(3_999_999, 4_000, 4_000), Admit::Dropped);
        assert_eq!(
            b.admit(4_000_000, 4_000, 4_000),
            Admit::Taken,
            "the first left"
        );
        assert_eq!(b.held_bytes(), 8_000);
        // The writes go one after another: this one leaves at 12 µs.
        b.drain(11_999_999);
        assert_eq!(b.held_bytes(), 4_000);
        b.drain(12_000_000);
        assert_eq!(b.held_bytes(), 0);
    }

    #[test]
    fn the_tlp_headers_slow_the_drain() {
        let mut b = buffer(false);
        b.p.tlp_header_bytes = 100;
        // 2500 B in 3 TLPs: 2800 B on the link.
        b.admit(0, 2_600, 2_500);
        b.drain(2_799_999);
        assert_eq!(b.held_bytes(), 2_600);
        b.drain(2_800_000);
        assert_eq!(b.held_bytes(), 0);
    }

    #[test]
    fn lossless_pauses_above_xoff_and_resumes_at_xon() {
        let mut b = buffer(true);
        assert_eq!(b.admit(0, 4_000, 4_000), Admit::Taken);
        assert_eq!(b.admit(0, 4_000, 4_000), Admit::TakenPause, "8000 > 6000");
        assert!(b.pausing());
        assert_eq!(b.admit(0, 1_000, 1_000), Admit::Taken, "the pause stands");
        b.xoff_ps = 1_000_000_000;
        assert_eq!(b.next_look(), Some(4_000_000));
        assert_eq!(b.pfc_due(3_999_999), None);
        assert_eq!(b.pfc_due(4_000_000), None, "5000 is above XON");
        assert_eq!(b.next_look(), Some(8_000_000));
        assert_eq!(b.pfc_due(8_000_000), Some(PfcDue::Xon), "1000 held");
        assert!(!b.pausing());
        b.end_pauses(9_000_000);
        let s = b.stats();
        assert_eq!((s.pauses, s.pfc_frames, s.pause_ps), (1, 2, 8_000_000));
    }

    #[test]
    fn a_long_pause_is_refreshed_and_counted_to_the_end() {
        let mut b = buffer(true);
        b.p.pcie_mbps = 1; // drains too slowly to matter
        b.admit(10, 7_000, 7_000);
        b.xoff_ps = 100;
        assert_eq!(b.next_look(), Some(60));
        assert_eq!(b.pfc_due(59), None);
        assert_eq!(b.pfc_due(60), Some(PfcDue::Refresh));
        assert_eq!(b.next_look(), Some(110));
        b.end_pauses(500);
        assert_eq!(b.stats().pause_ps, 490, "still standing: up to the end");
        assert_eq!(b.stats().pauses, 1, "a refresh is no new pause");
        assert!(!b.pausing());
    }
}
