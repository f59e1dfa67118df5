//! The receive path, one stage of the NIC: the RX parse pipeline, the receive buffer (and
//! the PFC frames it sends the link peer) and the RC request sequence that decides which
//! requests are worth translating.
//!
//! The stage owns its state and schedules only its own event (`RxBufferLook`); the QPC
//! lookup, translation and the transport's handling of a frame are carried on by the
//! receive route (`route_rx.rs`) and the `Nic`.

use rnic_sim::TimePs;
use rnic_transport::Device;
use rnic_wire::{BthRepr, Opcode};

use super::cx::NicCx;
use super::rx_buffer::{Admit, PfcDue, RxBuffer};
use super::rx_pipeline::RxPipeline;
use super::rx_sequence::{RequestFate, RxSequence};
use super::rx_wait::RecvWait;
use crate::event::NicEv;
use crate::params::ModelParams;

/// The NIC's receive units.
pub struct RxPath {
    /// RX parse pipeline.
    pub pipe: RxPipeline,
    /// Receive buffer: received frames until their payload has left for the host.
    pub buffer: RxBuffer,
    /// The RC requests in the receive lane the responder will execute: only they are
    /// translated ([`super::rx_sequence`]).
    pub sequence: RxSequence,
    /// Received requests waiting for receive WQEs on their way ([`super::rx_wait`]).
    pub wait: RecvWait,
}

impl RxPath {
    /// The receive path of a NIC with the parameters `p`.
    pub fn new(p: &ModelParams) -> Self {
        RxPath {
            pipe: RxPipeline::new(p.nic.rx_pkt_ps),
            buffer: RxBuffer::new(p.nic.rx_buffer),
            sequence: RxSequence::default(),
            wait: RecvWait::default(),
        }
    }

    /// A frame of `frame_bytes` whose `payload_bytes` go to host memory arrived at `now`:
    /// whether the receive buffer took it (it pauses the link peer when it fills, and
    /// drops what does not fit without flow control).
    pub fn buffer_admit(
        &mut self,
        now: TimePs,
        frame_bytes: u64,
        payload_bytes: u64,
        cx: &mut NicCx<'_>,
    ) -> bool {
        match self.buffer.admit(now, frame_bytes, payload_bytes) {
            Admit::Taken => true,
            Admit::TakenPause => {
                self.pause_peer(now, PfcDue::Refresh, cx);
                true
            }
            Admit::Dropped => false,
        }
    }

    /// The receive buffer's pending look at `now`.
    pub fn on_buffer_look(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if self.buffer.look_at != Some(now) {
            return; // an earlier look replaced this one
        }
        self.buffer.look_at = None;
        self.buffer_look(now, cx);
    }

    /// While the NIC pauses its link peer: sends the XON once the receive buffer has
    /// drained to its XON level (or refreshes the XOFF), and looks again at the next PCIe
    /// departure otherwise.
    fn buffer_look(&mut self, now: TimePs, cx: &mut NicCx<'_>) {
        if !self.buffer.pausing() {
            return;
        }
        if let Some(due) = self.buffer.pfc_due(now) {
            self.pause_peer(now, due, cx);
        }
        let Some(t) = self.buffer.next_look() else {
            return;
        };
        let t = t.max(now);
        if self.buffer.look_at.is_some_and(|l| l <= t) {
            return;
        }
        self.buffer.look_at = Some(t);
        cx.at(t, NicEv::RxBufferLook);
    }

    /// Sends the link peer a PFC frame at `now`: an XOFF (the first or a refresh) or the XON.
    fn pause_peer(&mut self, now: TimePs, due: PfcDue, cx: &mut NicCx<'_>) {
        let quanta = match due {
            PfcDue::Xon => 0,
            PfcDue::Refresh => rnic_wire::pfc::XOFF_QUANTA,
        };
        self.buffer.xoff_ps = cx.wire.pause_peer(cx.node, quanta, now, cx.q, cx.frames);
        if quanta > 0 {
            self.buffer_look(now, cx);
        }
    }

    /// Whether the transport `dev` will execute received frame `b` as far as its
    /// translation matters: `false` only for an RC request predicted beyond the expected
    /// PSN, or a duplicate that is not a READ request (a duplicate READ is executed again;
    /// a WRITE or SEND is re-ACKed and an atomic answered from the replay table, placing
    /// nothing). Every RC request passes here once, on its way to the translation step, so
    /// that the prediction counts the in-sequence ones ahead ([`super::rx_sequence`]).
    /// `dma_len` is a READ request's length (it sets the PSNs the READ takes).
    pub fn executes(&mut self, dev: &Device, b: BthRepr, dma_len: u32) -> bool {
        let Some((expected_psn, span_psns)) = dev.rc_request_sequence(b.dest_qp, b.opcode, dma_len)
        else {
            return true;
        };
        match self
            .sequence
            .admit(b.dest_qp, b.psn, span_psns, expected_psn)
        {
            RequestFate::InSequence => true,
            RequestFate::Duplicate => b.opcode == Opcode::RcReadRequest,
            RequestFate::Beyond => false,
        }
    }
}

impl crate::stats::Report for RxPath {
    /// The parse pipeline's counters (`rx`) and the receive buffer's (`rx_buffer`).
    fn report(&self, prefix: &str, reg: &mut crate::stats::Registry) {
        self.pipe.report(&format!("{prefix}.rx"), reg);
        reg.record(&format!("{prefix}.rx_buffer"), &self.buffer.stats());
    }
}
