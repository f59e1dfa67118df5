//! The events of the model (small `Copy` values, no allocation) and the frame pool whose
//! slots they carry. Every event names the component it is for: a node's NIC, the network,
//! a node's application, or the run's measurement.

use rnic_wire::{RoceHeaders, WireError};

use crate::header_memo::HeaderMemo;
pub use crate::nic::mech::cc::hook::Ev as CcEv;
pub use crate::nic::mech::prefetch::hook::Ev as PrefetchEv;

/// One event. `node` indexes the topology's nodes; `frame` a [`FramePool`] slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ev {
    /// For the NIC of `node`.
    Nic { node: u32, ev: NicEv },
    /// For the network.
    Net(NetEv),
    /// For the application on the host of `node`.
    Host { node: u32, ev: HostEv },
    /// For the connection manager on the host of `node` (`host.connect = "cm"`).
    Cm { node: u32, ev: CmEv },
    /// The measurement window opens (duration mode): read the counters it reports.
    WindowOpen,
    /// A flow that shares its window with the run's other flows is ready to open it
    /// (`Window::joint` of `host/perftest/window.rs`): the window opens once every such flow is.
    WindowReady,
    /// End of the measurement window (duration mode).
    End,
}

/// An event of one NIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NicEv {
    /// A host core stores an SQ doorbell: the MMIO write enters PCIe.
    Mmio { qpn: u32, pi: u32 },
    /// A host core stores an RQ doorbell.
    MmioRq { qpn: u32, pi: u32 },
    /// An SQ doorbell reaches the NIC.
    Doorbell { qpn: u32, pi: u32 },
    /// An RQ doorbell reaches the NIC.
    DoorbellRq { qpn: u32, pi: u32 },
    /// The QP scheduler may pick the next QP.
    Sched,
    /// The completion of a host read reaches the NIC's PCIe interface.
    DmaArrive { slot: u32 },
    /// A DMA read is complete (last byte in the NIC).
    DmaDone { slot: u32 },
    /// A fetched WQE that needs no payload read is ready for the requester.
    TxJobReady { job: u32 },
    /// The requester has a fetched WQE's QPC: post it to the transport.
    TxPost { job: u32 },
    /// The TX engine may send its next frame.
    TxWake,
    /// A paused TX engine's look that sees a change of its pause (a parked engine's, see
    /// [`crate::nic::cx::pause_looks`]).
    TxLook,
    /// A rate-limited QP's bucket is even again: it may send.
    RateWake { qpn: u32 },
    /// A frame's last bit reaches the NIC's port.
    RxArrive { frame: u32 },
    /// The RX pipeline hands a frame to the transport (QPC and translation done).
    RxHandle { frame: u32 },
    /// The receive buffer, pausing its link peer, looks whether it may resume it.
    RxBufferLook,
    /// A transport timer may have expired.
    Timer,
    /// Resource prefetching's own events.
    Prefetch(PrefetchEv),
    /// Congestion control's own events (its pacing wake-ups and timers).
    Cc(CcEv),
}

/// An event of the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetEv {
    /// A frame's last bit reaches the switch link direction `link` leads to.
    SwitchIn { frame: u32, link: u32 },
    /// The timer of element `element` on link direction `link` is due.
    ElementWake { link: u32, element: u32 },
    /// Flow control: a PFC frame's last bit reaches the end of link direction `link`.
    PfcFrame { frame: u32, link: u32 },
    /// Flow control: `bytes` that came into a switch over link direction `link` have left it.
    PfcLeft { link: u32, bytes: u32 },
    /// [`NetEv::PfcLeft`] for the frame the pausable switch port feeding link direction
    /// `port` started last, then that port's [`NetEv::PfcEgress`] for its next frame: the two
    /// events that port's start queues for the frame's end one after the other, as one
    /// (see `Network::left_then_start_at`).
    PfcLeftThenEgress { link: u32, bytes: u16, port: u32 },
    /// Flow control: the pausable switch port feeding link direction `link` may start its
    /// next frame.
    PfcEgress { link: u32 },
    /// ECN marking at dequeue: the next frame awaiting its start on output port `out` of
    /// switch `switch` starts onto the wire.
    EcnDequeue { switch: u32, out: u32 },
}

/// An event of a host's application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostEv {
    /// A server core posts the next WQE of its initial fill (bandwidth tests).
    Fill { core: u32 },
    /// An RDMA WRITE payload is visible in host memory to a polling CPU (latency tests).
    Landed { qpn: u32 },
    /// A CQE is in host memory (CQ `cq` of the node).
    CqeLanded { cq: u32 },
    /// UC/UD ping-pong: the client (QP `qpn`) gives its current iteration up if it has
    /// waited for it the whole give-up time (its ping or pong was lost; nothing resends it).
    LatGiveUp { qpn: u32 },
}

/// An event of a host's connection manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmEv {
    /// A MAD to QP1 (frame `frame`) has reached the host.
    Mad { frame: u32 },
    /// The response timer of connection `conn` (the node's own numbering) may be due.
    Timeout { conn: u32 },
    /// Every connection is established: the applications start.
    Ready,
    /// A MAD the manager built (frame `frame`) goes to the port now, when the CM thread's
    /// work on it is done; handed over earlier with a later start, it would hold the port
    /// idle until then and delay every frame behind it.
    Send { frame: u32 },
}

/// Frame buffers in flight, reused (no allocation per frame once warmed up).
#[derive(Debug, Default)]
pub struct FramePool {
    bufs: Vec<Vec<u8>>,
    free: Vec<u32>,
    /// Frames currently held.
    pub live: usize,
    /// The headers of recently read frames (see [`FramePool::roce`]).
    headers: HeaderMemo,
    /// Per slot, the routing fields the switches read (see [`FramePool::route_fields`]);
    /// empty until a frame crosses a switch.
    routes: Vec<Option<RouteFields>>,
}

/// What a switch reads of a frame to route it: its destination node and its 5-tuple for
/// ECMP's hash, read from the bytes once per frame instead of at every hop, where the
/// frame's first bytes are seldom still in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteFields {
    /// The node its IPv4 destination names, if any.
    pub dst_node: Option<u32>,
    /// Its 5-tuple as ECMP hashes it.
    pub tuple: [u64; 2],
}

/// Free frame buffers the pool keeps beyond the number held (see [`FramePool::release`]).
const SPARE_FRAMES: usize = 4096;

impl FramePool {
    /// Takes an empty buffer.
    pub fn alloc(&mut self) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.headers.forget(i);
            self.forget_route(i);
            self.bufs[i as usize].clear();
            i
        } else {
            self.bufs.push(Vec::with_capacity(128));
            (self.bufs.len() - 1) as u32
        }
    }

    /// Returns a buffer. Past a burst (RDMA CM sends every connection's REQ at once: a
    /// million frames at a million QPs) the pool would keep every buffer for good; a buffer
    /// returned while more are free than held (plus a margin) gives its memory back.
    pub fn release(&mut self, i: u32) {
        self.live -= 1;
        if self.free.len() > self.live + SPARE_FRAMES {
            self.bufs[i as usize] = Vec::new();
        }
        self.free.push(i);
    }

    /// Gives back the memory of the free buffers beyond `SPARE_FRAMES` (the most recently
    /// returned are kept): after a burst (RDMA CM's REQs at a million QPs) `release` keeps
    /// as many free buffers as were held, which the steady state never needs.
    pub fn trim(&mut self) {
        let keep_from = self.free.len().saturating_sub(SPARE_FRAMES);
        for &i in &self.free[..keep_from] {
            self.bufs[i as usize] = Vec::new();
        }
    }

    /// The bytes of slot `i`.
    pub fn get(&self, i: u32) -> &[u8] {
        &self.bufs[i as usize]
    }

    /// The buffer of slot `i` (its bytes may change: the headers read from them are
    /// forgotten).
    pub fn buf_mut(&mut self, i: u32) -> &mut Vec<u8> {
        self.headers.forget(i);
        self.forget_route(i);
        &mut self.bufs[i as usize]
    }

    /// The routing fields of slot `i`: remembered, or read from its bytes by `read` and
    /// remembered until its bytes may change.
    #[inline]
    pub fn route_fields(&mut self, i: u32, read: impl FnOnce(&[u8]) -> RouteFields) -> RouteFields {
        let at = i as usize;
        if self.routes.len() <= at {
            self.routes.resize(self.bufs.len().max(at + 1), None);
        }
        *self.routes[at].get_or_insert_with(|| read(&self.bufs[at]))
    }

    #[inline]
    fn forget_route(&mut self, i: u32) {
        if let Some(r) = self.routes.get_mut(i as usize) {
            *r = None;
        }
    }

    /// The RoCEv2 headers of slot `i`, as [`rnic_wire::peek_roce`] reads them: read once
    /// while the frame travels a NIC's receive path, whose stages each need them.
    pub fn roce(&mut self, i: u32) -> Result<&RoceHeaders, WireError> {
        self.headers.read(i, &self.bufs[i as usize])
    }

    /// The headers [`FramePool::roce`] last read from slot `i`, if still remembered (a
    /// shared borrow, to read them next to the frame's bytes).
    pub fn remembered_roce(&self, i: u32) -> Option<&RoceHeaders> {
        self.headers.remembered(i)
    }

    /// Copies slot `i` into a new slot.
    pub fn duplicate(&mut self, i: u32) -> u32 {
        let j = self.alloc();
        let (a, b) = if i < j {
            let (lo, hi) = self.bufs.split_at_mut(j as usize);
            (&lo[i as usize], &mut hi[0])
        } else {
            let (lo, hi) = self.bufs.split_at_mut(i as usize);
            (&hi[0], &mut lo[j as usize])
        };
        b.extend_from_slice(a);
        j
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Routing fields as read from the bytes, remembered until the bytes may change (the
    /// reader counts its calls).
    #[test]
    fn route_fields_are_read_once_until_the_bytes_may_change() {
        let mut pool = FramePool::default();
        let i = pool.alloc();
        pool.buf_mut(i).extend_from_slice(&[7, 8]);
        let reads = std::cell::Cell::new(0);
        let read = |b: &[u8]| {
            reads.set(reads.get() + 1);
            RouteFields {
                dst_node: Some(u32::from(b[0])),
                tuple: [u64::from(b[1]), 0],
            }
        };
        assert_eq!(pool.route_fields(i, read).dst_node, Some(7));
        assert_eq!(pool.route_fields(i, read).tuple[0], 8);
        assert_eq!(reads.get(), 1);
        pool.buf_mut(i)[0] = 9;
        assert_eq!(pool.route_fields(i, read).dst_node, Some(9));
        assert_eq!(reads.get(), 2);
        // A released slot taken again holds another frame.
        pool.release(i);
        let j = pool.alloc();
        assert_eq!(j, i);
        pool.buf_mut(j).extend_from_slice(&[3, 4]);
        assert_eq!(pool.route_fields(j, read).dst_node, Some(3));
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn events_stay_small() {
        // The queue moves events by value; keep them at two words.
        assert!(
            std::mem::size_of::<Ev>() <= 16,
            "{}",
            std::mem::size_of::<Ev>()
        );
    }
}
