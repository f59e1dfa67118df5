//! Channel arbiter and request FIFOs in front of a QPC manager (csRNA §4.3, Fig. 4b: "the
//! channel arbiter unit arbitrates requests from multiple QPC requesters in the RDMA engine
//! and forwards QPC responses back").
//!
//! Each of the three channels (descriptor unit 0, requester unit 1, responder unit 2) has a
//! request FIFO; the arbiter hands the request handling unit one request per cycle, round
//! robin over the non-empty FIFOs. Responses carry their channel, so routing them back needs
//! no state here. The arbiter also enforces the requester contract the pending structures'
//! sizes rest on: a channel's outstanding requests carry distinct indices below `ooo_cap`
//! (each requester owns `ooo_cap` indices, §4.4), so at most `3 × ooo_cap` requests are ever
//! outstanding.

use std::collections::VecDeque;

use super::types::{Channel, QpcManagerConfig, QpcRequest, SubmitError, NUM_CHANNELS};

/// Request FIFOs, round-robin arbiter and the outstanding (channel, index) bitmap.
#[derive(Debug, Clone)]
pub struct ChannelArbiter {
    fifos: [VecDeque<QpcRequest>; NUM_CHANNELS],
    depth: usize,
    ooo_cap: usize,
    /// Outstanding (accepted, unanswered) requests per channel, by index.
    outstanding: [Vec<bool>; NUM_CHANNELS],
    outstanding_count: usize,
    /// Channel the round robin looks at first.
    rr_next: usize,
    /// Requests handed to the manager so far (the next acceptance sequence number).
    next_seq: u64,
}

impl ChannelArbiter {
    /// An arbiter for `cfg`.
    pub fn new(cfg: QpcManagerConfig) -> Self {
        let depth = cfg.req_fifo_depth();
        ChannelArbiter {
            fifos: std::array::from_fn(|_| VecDeque::with_capacity(depth)),
            depth,
            ooo_cap: cfg.ooo_cap(),
            outstanding: std::array::from_fn(|_| vec![false; cfg.ooo_cap()]),
            outstanding_count: 0,
            rr_next: 0,
            next_seq: 0,
        }
    }

    /// Queues `req` in its channel's FIFO, checking the index contract.
    pub fn submit(&mut self, req: QpcRequest) -> Result<(), SubmitError> {
        let ch = req.channel.number();
        let idx = usize::from(req.index);
        if idx >= self.ooo_cap {
            return Err(SubmitError::IndexOutOfRange {
                index: req.index,
                ooo_cap: self.ooo_cap,
            });
        }
        if self.outstanding[ch][idx] {
            return Err(SubmitError::IndexInFlight {
                channel: req.channel,
                index: req.index,
            });
        }
        if self.fifos[ch].len() >= self.depth {
            return Err(SubmitError::Backpressure);
        }
        self.outstanding[ch][idx] = true;
        self.outstanding_count += 1;
        self.fifos[ch].push_back(req);
        Ok(())
    }

    /// Round robin: the head of the first non-empty FIFO at or after the pointer, with its
    /// acceptance sequence number; the pointer moves past the granted channel.
    pub fn arbitrate(&mut self) -> Option<(QpcRequest, u64)> {
        for k in 0..NUM_CHANNELS {
            let ch = (self.rr_next + k) % NUM_CHANNELS;
            if let Some(req) = self.fifos[ch].pop_front() {
                self.rr_next = (ch + 1) % NUM_CHANNELS;
                let seq = self.next_seq;
                self.next_seq += 1;
                return Some((req, seq));
            }
        }
        None
    }

    /// The request (`channel`, `index`) has been answered; its index may be reused.
    /// Returns `false` if it was not outstanding.
    pub fn complete(&mut self, channel: Channel, index: u8) -> bool {
        match self.outstanding[channel.number()].get_mut(usize::from(index)) {
            Some(slot) if *slot => {
                *slot = false;
                self.outstanding_count -= 1;
                true
            }
            _ => false,
        }
    }

    /// Whether (`channel`, `index`) is outstanding.
    pub fn is_outstanding(&self, channel: Channel, index: u8) -> bool {
        self.outstanding[channel.number()]
            .get(usize::from(index))
            .copied()
            .unwrap_or(false)
    }

    /// Whether any request FIFO holds a request.
    pub fn has_queued(&self) -> bool {
        self.fifos.iter().any(|f| !f.is_empty())
    }

    /// Requests waiting in `channel`'s FIFO.
    pub fn queued(&self, channel: Channel) -> usize {
        self.fifos[channel.number()].len()
    }

    /// Requests waiting in all FIFOs.
    pub fn queued_total(&self) -> usize {
        self.fifos.iter().map(VecDeque::len).sum()
    }

    /// Accepted and unanswered requests (queued here or inside the manager).
    pub fn outstanding(&self) -> usize {
        self.outstanding_count
    }

    /// Depth of each request FIFO.
    pub fn depth(&self) -> usize {
        self.depth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(qpn: u32, channel: Channel, index: u8) -> QpcRequest {
        QpcRequest {
            qpn,
            channel,
            index,
            write: false,
        }
    }

    #[test]
    fn round_robin_over_non_empty_channels() {
        let mut a = ChannelArbiter::new(QpcManagerConfig::new(4).unwrap());
        a.submit(req(1, Channel::Descriptor, 0)).unwrap();
        a.submit(req(2, Channel::Descriptor, 1)).unwrap();
        a.submit(req(3, Channel::Responder, 0)).unwrap();
        a.submit(req(4, Channel::Requester, 0)).unwrap();
        let order: Vec<(u32, u64)> = std::iter::from_fn(|| a.arbitrate())
            .map(|(r, s)| (r.qpn, s))
            .collect();
        assert_eq!(order, vec![(1, 0), (4, 1), (3, 2), (2, 3)]);
        assert_eq!(a.outstanding(), 4);
        assert!(a.complete(Channel::Descriptor, 0));
        assert!(!a.complete(Channel::Descriptor, 0));
        assert_eq!(a.outstanding(), 3);
    }

    #[test]
    fn index_contract_and_backpressure() {
        let cfg = QpcManagerConfig::with_req_fifo_depth(2, 1).unwrap();
        let mut a = ChannelArbiter::new(cfg);
        assert_eq!(
            a.submit(req(1, Channel::Requester, 2)),
            Err(SubmitError::IndexOutOfRange {
                index: 2,
                ooo_cap: 2
            })
        );
        a.submit(req(1, Channel::Requester, 0)).unwrap();
        assert_eq!(
            a.submit(req(1, Channel::Requester, 0)),
            Err(SubmitError::IndexInFlight {
                channel: Channel::Requester,
                index: 0
            })
        );
        assert_eq!(
            a.submit(req(1, Channel::Requester, 1)),
            Err(SubmitError::Backpressure)
        );
        assert_eq!(a.outstanding(), 1);
        assert!(!a.is_outstanding(Channel::Requester, 1));
    }
}
