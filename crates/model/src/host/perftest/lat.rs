//! The latency tests' steps. The ping-pong: the client posts, the server answers
//! (write-lat polls the last byte, send-lat its receive completion), the client sees the
//! answer and the iteration ends, or (UC/UD) gives it up (`lat_give_up.rs`). `--procs`:
//! each of the server's processes posts on its current QP and measures the operation once
//! its completion is polled (`procs.rs`).

use rnic_sim::TimePs;

use super::procs::Turn;
use super::{HostCx, Perftest};
use crate::workload::{PerfTest, Verb};

impl Perftest {
    /// Latency tests: the client of the current iteration's pair posts at `at`.
    pub(crate) fn lat_post_next(&mut self, at: TimePs, cx: &mut HostCx<'_>) {
        let i = self.ping.pair(self.pairs.len());
        let p = self.pairs[i as usize];
        let c = p.c_node as usize;
        if self.lat_defer(c, i, at) {
            return;
        }
        let core = usize::from(self.nodes[c].qps[p.c_qpn as usize].core);
        let start = at.max(self.nodes[c].cores[core].busy);
        self.ping.posted_ps = start;
        self.ping.ponged = false;
        self.write_poll_byte(c, i, cx);
        self.post_parts().post(c, p.c_qpn, start, cx);
        let give_up = self
            .ping
            .give_up_event(self.spec.unreliable, c, p.c_qpn, start);
        if let Some((due, ev)) = give_up {
            cx.q.push(due, ev);
        }
    }

    /// Latency tests: the client of the current iteration saw the answer at `t`.
    pub(super) fn lat_iteration_done(&mut self, t: TimePs, cx: &mut HostCx<'_>) {
        let full = t.saturating_sub(self.ping.posted_ps);
        let (sample, ways) = match self.spec.test {
            PerfTest::WriteLat | PerfTest::SendLat => (full as f64 / 2.0, 2),
            _ => (full as f64, 1),
        };
        self.measure.bytes_moved += ways * self.spec.op_bytes();
        // Duration mode counts the iterations that end inside the window.
        self.measure.sample(t, sample, &self.window);
        self.observe(t, self.ping.pair(self.pairs.len()));
        self.ping.iteration += 1;
        self.maybe_open(t, cx);
        self.lat_next(t, t + self.costs.latency_gap_ps, cx);
    }

    /// The ping-pong's iteration ended at `t`, completed or given up: the run is over once
    /// the window has closed (duration mode) or every iteration has run; otherwise the next
    /// iteration is posted at `next_at`.
    fn lat_next(&mut self, t: TimePs, next_at: TimePs, cx: &mut HostCx<'_>) {
        let done = if self.spec.duration_mode {
            t >= self.window.span_ps.1
        } else {
            self.ping.iteration >= self.spec.iters
        };
        if done {
            self.finished = true;
            return;
        }
        self.lat_post_next(next_at, cx);
    }

    /// The server answers a ping of pair `i` at `at` (write-lat and send-lat).
    pub(super) fn lat_pong(&mut self, i: u32, at: TimePs, cx: &mut HostCx<'_>) {
        if self.lat_defer(self.server, i, at) {
            return;
        }
        let p = self.pairs[i as usize];
        let server = self.server;
        self.write_poll_byte(server, i, cx);
        self.post_parts().post(server, p.s_qpn, at, cx);
    }

    /// write-lat: `node` stores the current iteration's poll byte, the last byte of pair
    /// `i`'s source buffer, before it posts the write that carries it.
    fn write_poll_byte(&mut self, node: usize, i: u32, cx: &mut HostCx<'_>) {
        if self.spec.test.verb() != Verb::Write {
            return;
        }
        let v = self.ping.poll_byte(self.pairs.len());
        let addr =
            self.nodes[node].src_buffer(&self.spec, i) + u64::from(self.spec.size_bytes.max(1)) - 1;
        rnic_transport::Memory::write(&mut cx.mems[node], addr, &[v]);
        cx.oracle.set_last_byte(node, self.spec.oracle_slot(i), v);
    }

    /// An RDMA WRITE payload landed in `node`'s memory for `qpn` (write-lat polling).
    pub(crate) fn on_landed(&mut self, node: usize, now: TimePs, qpn: u32, cx: &mut HostCx<'_>) {
        if self.spec.test != PerfTest::WriteLat || self.finished || !self.procs.list.is_empty() {
            return;
        }
        let Some(hq) = self.nodes[node].qps.get(qpn as usize).copied() else {
            return;
        };
        let i = hq.pair;
        let current = i == self.ping.pair(self.pairs.len());
        // The server answers each ping once; the client waits for the answer.
        if !current || (node == self.server) == self.ping.ponged {
            self.ping.stale_polls += 1;
            return;
        }
        let expect = self.ping.poll_byte(self.pairs.len());
        let addr = self.dst(node, i) + u64::from(self.spec.size_bytes.max(1)) - 1;
        let mut b = [0u8; 1];
        rnic_transport::Memory::read(&cx.mems[node], addr, &mut b);
        if b[0] != expect {
            // An older write (a late UC answer): the poll loop keeps waiting.
            self.ping.stale_polls += 1;
            return;
        }
        let core = usize::from(hq.core);
        let seen = (now + self.costs.mem_latency_ps).max(self.nodes[node].cores[core].busy);
        if node == self.server {
            self.ping.ponged = true;
            self.lat_pong(i, seen, cx);
        } else {
            self.lat_iteration_done(seen, cx);
        }
    }

    pub(super) fn lat_cqe(
        &mut self,
        node: usize,
        t: TimePs,
        is_recv: bool,
        qpn: u32,
        i: u32,
        cx: &mut HostCx<'_>,
    ) {
        match self.spec.test.verb() {
            Verb::Send if is_recv => {
                self.post_parts().recv(node, qpn, 1, t, false, cx);
                let t = self.nodes[node].cores
                    [usize::from(self.nodes[node].qps[qpn as usize].core)]
                .busy;
                if node == self.server {
                    self.lat_pong(i, t, cx);
                } else {
                    self.lat_iteration_done(t, cx);
                }
            }
            Verb::Read | Verb::Atomic if node != self.server && !is_recv => {
                self.pairs[i as usize].completed += 1;
                self.lat_iteration_done(t, cx);
            }
            _ => {
                if !is_recv {
                    self.pairs[i as usize].completed += 1;
                    self.lat_send_done(node, t, cx);
                }
            }
        }
    }

    /// write-lat and send-lat: whether `node`'s post for pair `i` at `at` must wait for its
    /// previous send's completion (then it is kept, and made by [`Self::lat_send_done`]);
    /// otherwise the post is marked in flight.
    pub(super) fn lat_defer(&mut self, node: usize, i: u32, at: TimePs) -> bool {
        if !matches!(self.spec.test, PerfTest::WriteLat | PerfTest::SendLat) {
            return false;
        }
        self.ping.defer(node, i, at)
    }

    /// write-lat and send-lat: `node`'s send completed (its CQE polled at `t`); a post that
    /// waited for it goes now.
    pub(super) fn lat_send_done(&mut self, node: usize, t: TimePs, cx: &mut HostCx<'_>) {
        let Some((i, at)) = self.ping.send_done(node) else {
            return;
        };
        let at = at.max(t);
        if node == self.server {
            self.lat_pong(i, at, cx);
        } else {
            self.lat_post_next(at, cx);
        }
    }

    /// A give-up is due at `now` ([`super::PingPong::give_up_is_current`]): if it is the current
    /// iteration's, the iteration is abandoned and the next one starts.
    pub(crate) fn on_lat_give_up(&mut self, now: TimePs, cx: &mut HostCx<'_>) {
        if self.finished || !self.ping.give_up_is_current(now) || !self.procs.list.is_empty() {
            return;
        }
        self.ping.give_up();
        // The iteration ended here, without a completion: the loop's measured time runs to
        // its last iteration's end, completed or given up.
        self.measure.completed(now);
        self.lat_next(now, now, cx);
    }

    /// `--procs`: process `pr` posts on its current QP at `at`, if work is left
    /// ([`super::Procs::turn`]); otherwise it retires (and the run ends with the last process).
    pub(super) fn procs_post(&mut self, pr: usize, at: TimePs, cx: &mut HostCx<'_>) {
        let work = if self.spec.duration_mode {
            at < self.window.span_ps.1
        } else {
            self.procs.posted < self.spec.iters
        };
        match self.procs.turn(pr, work && !self.finished) {
            Turn::Post(i) => {
                let (server, s_qpn) = (self.server, self.pairs[i as usize].s_qpn);
                self.post_parts().post(server, s_qpn, at, cx);
            }
            Turn::Retired { last } => self.finished |= last,
        }
    }

    /// `--procs`: the server consumed the completion of `i` at `t` (posted at `posted`).
    pub(super) fn procs_cqe(&mut self, t: TimePs, i: u32, posted: TimePs, cx: &mut HostCx<'_>) {
        self.pairs[i as usize].completed += 1;
        self.measure.bytes_moved += self.spec.op_bytes();
        // Each process polls on its own core: the latest poll, not the last handled.
        self.measure
            .sample(t, t.saturating_sub(posted) as f64, &self.window);
        self.observe(t, i);
        let pr = self.procs.completed(i, self.spec.warmup_rounds);
        self.maybe_open(t, cx);
        self.procs_post(pr, t + self.costs.latency_gap_ps, cx);
    }
}
