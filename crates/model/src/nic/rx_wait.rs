//! Receive WQEs on their way: a request that needs a receive WQE the host has posted and
//! rung the doorbell for, but whose read from the RQ ring has not landed yet, waits in the
//! receive path for it instead of finding the receive queue empty.
//!
//! The NIC learns of posted receive WQEs from the RQ doorbell's producer index and reads
//! them from host memory ([`super::host_if::HostIf::on_doorbell_rq`]); the transport's
//! receive queue holds them only once the read completes. A SEND, a WRITE with immediate's
//! last packet or a UD datagram arriving in between found no receive WQE: an RC responder
//! answered RNR NAK, and the requester waited out its RNR timer (0.64 ms by default) before
//! it resent; UC and UD dropped the message. A responder that knows the WQE is posted
//! fetches it and places the message when it has it, so such a request now waits
//! ([`super::rx_path::RxPath::waiting`]), with every later request of its QP behind it (a
//! QP's requests are handled in order), and goes back to the step after its QPC lookup
//! when the read lands ([`super::route_rx::on_rq_landed`]). Requests of other QPs pass
//! it. A request whose WQE the host has not rung for is answered as before: the NIC
//! cannot know it is coming.
//!
//! Found on `rnic perf send-bw -r 64 -s 64 -n 20000`: 311 of its 312 RNR NAKs came while
//! the receive WQE was being read, and the run averaged 6.08 MB/s (598 MB/s now; 871 MB/s
//! with `-r 100`, where the receives stay ahead).

use std::collections::{BTreeMap, VecDeque};

use rnic_transport::Device;
use rnic_wire::{peek_bth, BthRepr};

use super::host_if::HostIf;
use super::qp_table::QpHw;
use super::rx_translate::{consumes_recv, needs_recv};
use crate::event::FramePool;

/// The requests waiting for receive WQEs on their way, per QP in arrival order.
#[derive(Debug, Default)]
pub struct RecvWait {
    /// Per QP: its waiting requests' frames, each with its place in the order of arrival
    /// among all waiting requests.
    queues: BTreeMap<u32, VecDeque<(u64, u32)>>,
    /// The next place in that order.
    next_place: u64,
    /// Requests released when their WQEs landed, not yet past the step they waited before:
    /// they go on without another look.
    released: Vec<u32>,
}

impl RecvWait {
    /// Whether received frame `b`, just past its QPC lookup, must wait: a request of a QP
    /// with requests waiting (a QP's requests are handled in order), or one that needs the
    /// receive WQE its messages ahead leave at the head of its receive queue when that WQE
    /// is among those being read.
    #[inline]
    pub fn must_wait(&self, qps: &[QpHw], dev: &Device, host: &HostIf, b: BthRepr) -> bool {
        let qpn = b.dest_qp;
        if !self.queues.is_empty() && b.opcode.is_request() && self.queues.contains_key(&qpn) {
            return true;
        }
        needs_recv(b.opcode) && wqe_on_its_way(qps, dev, host, qpn, 0)
    }

    /// Request `frame` of QP `qpn` waits.
    pub fn hold(&mut self, qpn: u32, frame: u32) {
        let place = self.next_place;
        self.next_place += 1;
        self.queues
            .entry(qpn)
            .or_default()
            .push_back((place, frame));
    }

    /// Whether `frame` was released when its WQEs landed (and is no longer counted so).
    #[inline]
    pub fn was_released(&mut self, frame: u32) -> bool {
        if self.released.is_empty() {
            return false;
        }
        match self.released.iter().position(|&f| f == frame) {
            Some(i) => {
                self.released.swap_remove(i);
                true
            }
            None => false,
        }
    }

    /// Receive WQEs of RQ ring `ring` landed: releases, in their order of arrival, each
    /// waiting request of the ring's QPs up to the first whose WQE is still on its way (the
    /// rest of its QP's wait on). A released request that needs a WQE finds one posted, or
    /// none on its way (then the transport refuses it, as a request the host had not rung
    /// for). On a shared receive queue each QP counts the WQEs posted as its own, as
    /// [`Device::recv_target`] does.
    pub fn release(
        &mut self,
        ring: u32,
        (qps, dev, host): (&[QpHw], &Device, &HostIf),
        frames: &FramePool,
    ) -> Vec<(u32, u32)> {
        let mut out: Vec<(u64, u32, u32)> = Vec::new();
        for (&qpn, queue) in &mut self.queues {
            if host.ring_of(qpn, dev.qp_srq(qpn)) != ring {
                continue;
            }
            let mut consumed = 0;
            while let Some(&(place, frame)) = queue.front() {
                let op = peek_bth(frames.get(frame)).ok().map(|b| b.opcode);
                if op.is_some_and(needs_recv) && wqe_on_its_way(qps, dev, host, qpn, consumed) {
                    break;
                }
                consumed += u32::from(op.is_some_and(consumes_recv));
                queue.pop_front();
                out.push((place, qpn, frame));
            }
        }
        self.queues.retain(|_, q| !q.is_empty());
        out.sort_unstable();
        self.released.extend(out.iter().map(|&(_, _, frame)| frame));
        out.into_iter()
            .map(|(_, qpn, frame)| (qpn, frame))
            .collect()
    }
}

/// Whether the receive WQE a message of QP `qpn` lands in, behind the messages on their way
/// to the transport and `more` released before it, is among those being read from its RQ
/// ring: posted ≤ that place < posted + in flight.
fn wqe_on_its_way(qps: &[QpHw], dev: &Device, host: &HostIf, qpn: u32, more: u32) -> bool {
    let (Some(qp), Some(posted)) = (qps.get(qpn as usize), dev.recvs_posted(qpn)) else {
        return false;
    };
    let Some(ring) = qps.get(host.ring_of(qpn, dev.qp_srq(qpn)) as usize) else {
        return false;
    };
    let in_flight = ring.rq_fetched.wrapping_sub(ring.rq_landed);
    let place = qp.rx_recvs_ahead.saturating_add(more);
    (posted..posted.saturating_add(in_flight)).contains(&place)
}
