//! Payload streams (`nic.dma_read_arbiter = "round_robin"`): a QP's SEND/WRITE payload, and
//! separately its READ response data, is read from host memory in MRRS-sized requests, in
//! message order, and a packet may leave once its own bytes are in the NIC.
//!
//! Why: reading a whole message before its first packet delays a 1 MB WRITE's first packet
//! by the ~65 µs the megabyte takes over PCIe, and makes one read hold every tag. A NIC
//! streams instead: it keeps a bounded read-ahead per stream (`nic.payload_read_ahead_bytes`,
//! bytes requested and not yet sent) and refills it as packets leave.
//!
//! Accounting: `credit` = bytes arrived − fresh bytes sent. Requests and their completions
//! are in order per stream (one source of the arbiter, one FIFO PCIe lane back), so the
//! bytes of the next fresh packet are in the NIC exactly when `credit` covers it. A stream
//! with nothing left to arrive never holds a packet back (a fallback: whatever the model's
//! bookkeeping missed cannot stall a QP).

use std::collections::VecDeque;

use rnic_sim::TimePs;

/// One message of a stream.
#[derive(Debug, Clone, Copy)]
struct Msg {
    /// The fetched WQE waiting for its first packet's bytes (SEND/WRITE), if any.
    job: Option<u32>,
    len: u64,
    to_request: u64,
    arrived: u64,
    /// Bytes that must be in before `job` may go to the transport.
    ready_bytes: u64,
    /// Earliest time its reads may be issued (translation done), ps.
    at: TimePs,
}

/// One payload stream.
#[derive(Debug, Default)]
pub struct PayloadStream {
    /// Messages not yet fully arrived, oldest first.
    msgs: VecDeque<Msg>,
    /// Index in `msgs` before which every message is fully requested (`to_request` only
    /// shrinks), so the next request looks from here instead of from the oldest message:
    /// at a deep read-ahead of small messages, most of the queue is requested and waiting.
    requested_upto: usize,
    /// Bytes requested and not arrived.
    in_flight: u64,
    /// Bytes arrived minus fresh bytes sent (negative after a retransmission sweep sent a
    /// fresh packet early).
    credit: i64,
    /// Bytes still in flight from before a reset: dropped when they arrive.
    discard: u64,
    /// The TX engine found the next packet waiting for this stream's bytes: the next
    /// arrival must let the QP transmit again.
    pub waiting: bool,
}

impl PayloadStream {
    /// Appends a message of `len` bytes whose reads may start at `at`; `job` becomes ready
    /// once `ready_bytes` of it arrived.
    pub fn push(&mut self, job: Option<u32>, len: u64, ready_bytes: u64, at: TimePs) {
        if self.msgs.capacity() == 0 {
            // Most QPs stream one message at a time: room for one first (a VecDeque's
            // first growth takes 4, 192 bytes).
            self.msgs.reserve_exact(1);
        }
        self.msgs.push_back(Msg {
            job,
            len,
            to_request: len,
            arrived: 0,
            ready_bytes: ready_bytes.min(len),
            at,
        });
    }

    /// The next request to issue, `(earliest time, bytes)`, if the read-ahead has room: at
    /// most `mrrs` bytes, never across a message boundary (each message is its own buffer).
    pub fn next_request(&mut self, read_ahead: u64, mrrs: u64) -> Option<(TimePs, u64)> {
        let outstanding = self.in_flight + self.credit.max(0) as u64;
        while self
            .msgs
            .get(self.requested_upto)
            .is_some_and(|m| m.to_request == 0)
        {
            self.requested_upto += 1;
        }
        let m = self.msgs.get_mut(self.requested_upto)?;
        let chunk = m.to_request.min(mrrs);
        if outstanding > 0 && outstanding + chunk > read_ahead {
            return None;
        }
        m.to_request -= chunk;
        self.in_flight += chunk;
        Some((m.at, chunk))
    }

    /// `bytes` of the oldest requested data arrived; returns the job whose first packet is
    /// now complete, if one is.
    pub fn arrive(&mut self, bytes: u64) -> Option<u32> {
        let dropped = self.discard.min(bytes);
        self.discard -= dropped;
        let bytes = bytes - dropped;
        self.in_flight = self.in_flight.saturating_sub(bytes + dropped);
        if bytes == 0 {
            return None;
        }
        self.credit += bytes as i64;
        let m = self.msgs.front_mut()?;
        let before = m.arrived;
        m.arrived += bytes;
        let ready = before < m.ready_bytes && m.arrived >= m.ready_bytes;
        let job = if ready { m.job } else { None };
        if m.arrived >= m.len {
            self.msgs.pop_front();
            self.requested_upto = self.requested_upto.saturating_sub(1);
        }
        job
    }

    /// `bytes` of fresh payload left the NIC.
    pub fn sent(&mut self, bytes: u64) {
        self.credit -= bytes as i64;
    }

    /// Whether a fresh packet of `payload` bytes must wait for its data.
    pub fn blocks(&self, payload: u32) -> bool {
        !self.msgs.is_empty() && self.credit < i64::from(payload)
    }

    /// The transport abandoned the last `bytes` of this stream's unsent data (queued READ
    /// responses a duplicate READ replaced, `Device::take_abandoned_read_bytes`). Bytes
    /// not yet requested are never requested (trimmed from the newest messages, a message
    /// left with nothing to arrive goes); bytes requested, in flight or arrived, count as
    /// sent, so `credit` again covers exactly the packets still to leave (conservative: a
    /// kept packet whose bytes are in may wait for abandoned bytes requested after its own,
    /// at most the read-ahead, which arrive next). Without this the
    /// stream would go on reading data for no packet ahead of the replay's, and its credit
    /// would let later packets leave before their own bytes arrived.
    pub fn abandon(&mut self, mut bytes: u64) {
        while bytes > 0 {
            let Some(m) = self.msgs.back_mut() else { break };
            let cut = m.to_request.min(bytes);
            m.to_request -= cut;
            m.len -= cut;
            m.ready_bytes = m.ready_bytes.min(m.len);
            bytes -= cut;
            if m.to_request > 0 {
                break;
            }
            if m.arrived >= m.len {
                // Nothing of it is in flight: nothing will arrive for it.
                self.msgs.pop_back();
                self.requested_upto = self.requested_upto.min(self.msgs.len());
                continue;
            }
            // Requested bytes only from here back (requests go in message order).
            break;
        }
        self.credit -= bytes as i64;
    }

    /// The QP went to error: forget its messages; what is in flight is dropped on arrival.
    /// Returns the jobs still waiting for their first packet's bytes: they must go on (to
    /// be flushed by the QP in error and give their TX buffer back), or they would hold
    /// every later WQE in fetch order forever.
    pub fn reset(&mut self) -> Vec<u32> {
        let waiting = self
            .msgs
            .iter()
            .filter(|m| m.arrived < m.ready_bytes)
            .filter_map(|m| m.job)
            .collect();
        self.msgs.clear();
        self.requested_upto = 0;
        self.discard = self.in_flight;
        self.credit = 0;
        waiting
    }
}

/// Every QP's two payload streams (SEND/WRITE data, READ response data).
#[derive(Debug, Default)]
pub struct Streams {
    by_qp: Vec<[PayloadStream; 2]>,
}

impl Streams {
    /// The stream of `qpn` (`resp`: its READ responses). Inlined: several calls per packet,
    /// each a few instructions once the table has grown.
    #[inline]
    pub fn get_mut(&mut self, qpn: u32, resp: bool) -> &mut PayloadStream {
        let i = qpn as usize;
        if i >= self.by_qp.len() {
            self.grow_for(i);
        }
        &mut self.by_qp[i][usize::from(resp)]
    }

    /// Makes room for QPN `i` (rare: the table grows by an eighth at a time).
    #[cold]
    #[inline(never)]
    fn grow_for(&mut self, i: usize) {
        crate::per_qp::grow_for(&mut self.by_qp, i, Default::default);
    }

    /// The stream of `qpn`, if it exists.
    pub fn get(&self, qpn: u32, resp: bool) -> Option<&PayloadStream> {
        self.by_qp.get(qpn as usize).map(|s| &s[usize::from(resp)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_ready_after_its_first_packet_and_gated_after() {
        let mut s = PayloadStream::default();
        s.push(Some(7), 8192, 4096, 100);
        let mut reqs = Vec::new();
        while let Some(r) = s.next_request(16384, 512) {
            reqs.push(r);
        }
        assert_eq!(reqs.len(), 16);
        assert!(reqs.iter().all(|&(at, n)| at == 100 && n == 512));
        for _ in 0..7 {
            assert_eq!(s.arrive(512), None);
        }
        assert_eq!(s.arrive(512), Some(7));
        s.sent(4096);
        assert!(s.blocks(4096));
        for _ in 0..8 {
            s.arrive(512);
        }
        assert!(!s.blocks(4096));
    }

    #[test]
    fn read_ahead_bounds_requested_unsent_bytes() {
        let mut s = PayloadStream::default();
        s.push(None, 1 << 20, 0, 0);
        let n = std::iter::from_fn(|| s.next_request(16384, 512)).count();
        assert_eq!(n, 32);
        for _ in 0..8 {
            s.arrive(512);
        }
        assert!(s.next_request(16384, 512).is_none());
        s.sent(4096);
        assert_eq!(std::iter::from_fn(|| s.next_request(16384, 512)).count(), 8);
    }

    /// The requests a stream issues: those of its oldest message with bytes left to request,
    /// as found by a scan from the oldest message (what the cursor saves).
    #[derive(Default)]
    struct ScanStream {
        msgs: VecDeque<(u64, u64, u64, TimePs)>, // (len, to_request, arrived, at)
        in_flight: u64,
    }

    impl ScanStream {
        fn next_request(
            &mut self,
            read_ahead: u64,
            mrrs: u64,
            credit: i64,
        ) -> Option<(TimePs, u64)> {
            let outstanding = self.in_flight + credit.max(0) as u64;
            let m = self.msgs.iter_mut().find(|m| m.1 > 0)?;
            let chunk = m.1.min(mrrs);
            if outstanding > 0 && outstanding + chunk > read_ahead {
                return None;
            }
            m.1 -= chunk;
            self.in_flight += chunk;
            Some((m.3, chunk))
        }

        fn arrive(&mut self, bytes: u64) {
            self.in_flight = self.in_flight.saturating_sub(bytes);
            if let Some(m) = self.msgs.front_mut() {
                m.2 += bytes;
                if m.2 >= m.0 {
                    self.msgs.pop_front();
                }
            }
        }
    }

    #[test]
    fn requests_follow_message_order_as_messages_come_and_go() {
        let mut s = PayloadStream::default();
        let mut r = ScanStream::default();
        let mut x = 12345u64;
        let mut rand = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let mut requested = VecDeque::new();
        for step in 0..5000u64 {
            match rand(4) {
                0 => {
                    // Zero-length messages too: the cursor must step over them.
                    let len = [0, 64, 512, 700, 4096][rand(5) as usize];
                    s.push(None, len, 0, step);
                    r.msgs.push_back((len, len, 0, step));
                }
                1 | 2 => {
                    let (ahead, mrrs) = (2048, 256);
                    let got = s.next_request(ahead, mrrs);
                    assert_eq!(got, r.next_request(ahead, mrrs, s.credit), "step {step}");
                    if let Some((_, n)) = got {
                        requested.push_back(n);
                    }
                }
                _ => {
                    if let Some(n) = requested.pop_front() {
                        s.arrive(n);
                        r.arrive(n);
                        s.sent(n);
                    }
                }
            }
            assert_eq!(s.msgs.len(), r.msgs.len(), "step {step}");
        }
    }

    /// Three READs' data (4, 4 and 2 KB), 3 KB of it requested, 1 KB arrived and sent: a
    /// duplicate abandons the last 8 KB (the third READ, the second, and the first READ's
    /// last 2 KB, 1 KB never requested and 1 KB in flight). Nothing more is requested for
    /// them, and the kept 1 KB leaves once both chunks in flight are in (the abandoned one
    /// counts for no packet); then the replay's bytes.
    #[test]
    fn abandoned_bytes_are_not_read_and_not_counted() {
        let mut s = PayloadStream::default();
        for len in [4096, 4096, 2048] {
            s.push(None, len, 0, 0);
        }
        assert_eq!(std::iter::from_fn(|| s.next_request(3072, 1024)).count(), 3);
        s.arrive(1024);
        s.sent(1024);
        s.abandon(2048 + 4096 + 2048);
        assert_eq!(s.next_request(8192, 1024), None, "nothing left to request");
        s.push(None, 2048, 0, 0); // the replay
        s.arrive(1024);
        assert!(s.blocks(1024), "the abandoned 1 KB is still on its way");
        assert_eq!(s.next_request(8192, 1024), Some((0, 1024)));
        assert_eq!(s.next_request(8192, 1024), Some((0, 1024)));
        s.arrive(1024);
        assert!(!s.blocks(1024));
        s.sent(1024);
        assert!(s.blocks(1024), "the replay's bytes are not in yet");
        s.arrive(1024);
        s.arrive(1024);
        assert!(!s.blocks(1024));
        s.sent(2048);
        assert_eq!(s.credit, 0);
        assert!(s.msgs.is_empty());
    }

    #[test]
    fn reset_drops_what_is_in_flight() {
        let mut s = PayloadStream::default();
        s.push(Some(1), 1024, 1024, 0);
        s.next_request(16384, 512);
        let _ = s.reset();
        assert_eq!(s.arrive(512), None);
        assert!(!s.blocks(512));
    }
}
