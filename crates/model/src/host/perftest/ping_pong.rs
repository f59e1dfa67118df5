//! The latency ping-pong's state (write-lat, send-lat, read-lat, atomic-lat without
//! `--procs`): one iteration in flight over all the flow's QPs.

use rnic_sim::TimePs;

/// Where the ping-pong is. Iteration k runs on pair k mod (pairs); its poll byte (write-lat)
/// is k / (pairs) + 1.
#[derive(Debug, Clone, Default)]
pub struct PingPong {
    /// The current iteration (iterations finished or given up so far).
    pub iteration: u64,
    /// Post time of the current iteration, ps.
    pub posted_ps: TimePs,
    /// write-lat: the server has answered the current iteration.
    pub ponged: bool,
    /// write-lat and send-lat, per node: a send is posted and not yet completed, and the
    /// post (pair, time) waiting for it. perftest's loop polls the send CQ after each post
    /// before it waits for the peer, so a node never has two pings (or pongs) in flight: a
    /// lost ACK holds the next post until the retransmission is acknowledged.
    pub sends: Vec<(bool, Option<(u32, TimePs)>)>,
    /// write-lat polls that saw an older value (retransmitted or duplicated writes).
    pub stale_polls: u64,
    /// UC/UD ping-pong tests: a client still waiting this long after its post gives the
    /// iteration up (`qp.timeout`, the transport's own bound on a round trip; `None`: wait
    /// forever).
    pub give_up_after_ps: Option<TimePs>,
    /// UC/UD ping-pong iterations given up (a ping or pong lost).
    pub given_up: u64,
}

impl PingPong {
    /// The pair of the current iteration, of `pairs`.
    pub(crate) fn pair(&self, pairs: usize) -> u32 {
        (self.iteration % pairs as u64) as u32
    }

    /// write-lat: the value of the current iteration's poll byte, with `pairs` pairs.
    pub(crate) fn poll_byte(&self, pairs: usize) -> u8 {
        (self.iteration / pairs as u64 + 1) as u8
    }

    /// Whether `node`'s post for pair `i` at `at` must wait for its previous send's
    /// completion (then it is kept); otherwise the post is marked in flight.
    pub(crate) fn defer(&mut self, node: usize, i: u32, at: TimePs) -> bool {
        if self.sends.len() <= node {
            self.sends.resize(node + 1, (false, None));
        }
        let s = &mut self.sends[node];
        if s.0 {
            s.1 = Some((i, at));
            return true;
        }
        s.0 = true;
        false
    }

    /// `node`'s send completed: the post that waited for it, if any.
    pub(crate) fn send_done(&mut self, node: usize) -> Option<(u32, TimePs)> {
        let s = self.sends.get_mut(node)?;
        s.0 = false;
        s.1.take()
    }
}
