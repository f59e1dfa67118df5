//! What a NIC sees of its surroundings while it handles an event: the event queue (its own
//! events and the host's), its host's memory (DMA), the frame pool, the network behind its
//! port ([`Wire`]) and whoever watches placed payloads ([`RxObserver`]). The NIC knows no
//! concrete network and no application.

use rnic_host::SparseMemory;
use rnic_sim::{EventQueue, TimePs};
use rnic_wire::Opcode;

pub mod pause_looks;

use crate::event::{CmEv, Ev, FramePool, HostEv, NicEv};
use pause_looks::{ParkedLooks, PauseLook};

/// The network as a NIC's port sees it.
pub trait Wire {
    /// Frame `frame` of node `node` is handed to its transmit port at `at`.
    fn send(
        &mut self,
        node: usize,
        frame: u32,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    );
    /// When node `node`'s transmit port may start its next frame, asked at `now` (`now` or
    /// later): once it is free and not paused by flow control, ps.
    fn port_free_at(&self, node: usize, now: TimePs) -> TimePs;
    /// When node `node`'s port, asked at `now`, answers only "look again" (paused, the XON
    /// not foreseen): what it answers ([`super::pause_looks`]). `None` without flow control.
    fn look_again(&self, node: usize, now: TimePs) -> Option<PauseLook>;
    /// Node `node`'s paused TX engine takes none of the looks `looks` unless its pause or
    /// the XON's outlook changes: the network then wakes it (`NicEv::TxLook`) at the first
    /// look that would have seen the change.
    fn park(&mut self, node: usize, looks: ParkedLooks);
    /// A received frame's last bit reached node `node` at `at` (for taps on the port).
    fn received(&mut self, node: usize, frame: u32, at: TimePs, frames: &FramePool);
    /// Node `node`'s NIC sends its link peer a PFC frame for the RoCE priority at `at`:
    /// pause time `quanta` (0 resumes the peer). Returns the pause time of an XOFF at the
    /// peer's rate, ps (0 without flow control).
    fn pause_peer(
        &mut self,
        node: usize,
        quanta: u16,
        at: TimePs,
        q: &mut EventQueue<Ev>,
        frames: &mut FramePool,
    ) -> TimePs;
}

/// Watches the payloads the transport places (the end-to-end payload oracle).
pub trait RxObserver {
    /// The transport of `node` placed `payload`, carried by packet `psn` (opcode `op`) of
    /// its QP `qpn`, in host memory at `now` (the model writes the receiver's memory then;
    /// the payload's DMA write over PCIe is timed after).
    fn placed(&mut self, now: TimePs, node: usize, qpn: u32, op: Opcode, psn: u32, payload: &[u8]);

    /// The transport of `node` accepted the ATOMIC ACKNOWLEDGE `psn` of its QP `qpn`, whose
    /// AtomicAckETH held the bytes `wire`, and wrote the returned value into `mem`.
    fn atomic_returned(
        &mut self,
        node: usize,
        qpn: u32,
        psn: u32,
        wire: [u8; 8],
        mem: &SparseMemory,
    );
}

/// A NIC's surroundings during one event.
pub struct NicCx<'a> {
    /// This NIC's node.
    pub node: usize,
    /// The event queue.
    pub q: &'a mut EventQueue<Ev>,
    /// The node's host memory.
    pub mem: &'a mut SparseMemory,
    /// Frames in flight.
    pub frames: &'a mut FramePool,
    /// The network behind the port.
    pub wire: &'a mut dyn Wire,
    /// The payload observer.
    pub observer: &'a mut dyn RxObserver,
}

impl NicCx<'_> {
    /// Schedules an event of this NIC at `t`.
    pub fn at(&mut self, t: TimePs, ev: NicEv) {
        self.q.push(
            t,
            Ev::Nic {
                node: self.node as u32,
                ev,
            },
        );
    }

    /// Schedules an event of this node's application at `t`.
    pub fn host(&mut self, t: TimePs, ev: HostEv) {
        self.q.push(
            t,
            Ev::Host {
                node: self.node as u32,
                ev,
            },
        );
    }

    /// Schedules an event of this node's connection manager at `t`.
    pub fn cm(&mut self, t: TimePs, ev: CmEv) {
        self.q.push(
            t,
            Ev::Cm {
                node: self.node as u32,
                ev,
            },
        );
    }

    /// Hands frame `frame` to the port at `at`.
    pub fn send(&mut self, frame: u32, at: TimePs) {
        self.wire.send(self.node, frame, at, self.q, self.frames);
    }
}
