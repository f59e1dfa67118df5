//! Bandwidth tests: the warm-up, the initial fill of every QP's tx depth, how many WQEs
//! a QP posts next, and a pair that failed.

use rnic_sim::TimePs;

use super::bw_start::FillStep;
use super::{HostCx, Perftest};
use crate::event::{Ev, HostEv};
use crate::host::driver::Cqe;

impl Perftest {
    /// The warm-up of pair `i` from `at`: its QP posts `warm_up` operations (in post lists).
    pub(super) fn warm_pair(&mut self, i: u32, at: TimePs, cx: &mut HostCx<'_>) {
        let (node, qpn) = (self.server, self.pairs[i as usize].s_qpn);
        let (mut at, mut left) = (at, self.spec.warm_up_ops);
        while left > 0 {
            let k = left.min(u64::from(self.spec.post_list)) as u32;
            at = self.post_parts().list(node, qpn, k, at, cx);
            left -= u64::from(k);
        }
    }

    /// Pair `i` finished its warm-up at `t`: the next pair warms up, or the run begins.
    pub(super) fn warmed(&mut self, i: u32, t: TimePs, cx: &mut HostCx<'_>) {
        if (i as usize) + 1 < self.pairs.len() {
            self.bw_start.warming_pair = Some(i + 1);
            self.warm_pair(i + 1, t, cx);
        } else {
            self.bw_start.warming_pair = None;
            let (pairs, server) = (&self.pairs, self.server);
            self.bw_start
                .start_fill(pairs, &self.nodes[server], server, t, cx.q);
        }
    }

    /// One step of a core's initial fill at `now` ([`super::BwStart::fill_step`]): it posts a
    /// list on its next QP with room, and comes back once the post is over.
    pub(crate) fn on_fill(&mut self, node: usize, now: TimePs, core: u32, cx: &mut HostCx<'_>) {
        // `self.bw_start.fill` holds the server's cores from the first of the flow's on.
        let c = core as usize - self.nodes[self.server].cores.range().start;
        // Rounds of one list per QP fill the tx depth.
        let depth = u64::from(self.spec.tx_depth.div_ceil(self.spec.post_list));
        loop {
            let qpn = match self.bw_start.fill_step(c, depth, self.finished) {
                FillStep::Next(qpn) => qpn,
                FillStep::Stop { filled, last } => {
                    if last {
                        // The initial posting is no part of the steady state.
                        if let Some(s) = self.window.steady.as_mut() {
                            s.arm(now);
                        }
                    }
                    if filled {
                        self.maybe_open(now, cx);
                    }
                    return;
                }
            };
            let k = self.list_len(node, qpn, now);
            if k > 0 {
                let end = self.post_parts().list(node, qpn, k, now, cx);
                cx.q.push(
                    end,
                    Ev::Host {
                        node: node as u32,
                        ev: HostEv::Fill { core },
                    },
                );
                return;
            }
        }
    }

    /// How many WQEs the initiator posts on `qpn` now as one list (0: none): `post_list`,
    /// or what is left of the iterations, once tx_depth has room for all of them.
    pub(super) fn list_len(&self, node: usize, qpn: u32, t: TimePs) -> u32 {
        let i = self.nodes[node].qps[qpn as usize].pair as usize;
        let p = self.pairs[i];
        let left = if self.spec.duration_mode {
            if t < self.window.span_ps.1 {
                u64::MAX
            } else {
                0
            }
        } else {
            self.spec.per_pair_ops().saturating_sub(p.posted)
        };
        let free = u64::from(self.spec.tx_depth).saturating_sub(p.posted - p.completed);
        let want = u64::from(self.spec.post_list).min(left);
        if self.finished || want == 0 || free < want {
            0
        } else {
            want as u32
        }
    }

    /// Bandwidth tests in iteration mode: an initiator's work request of a pair completed
    /// in error. Its QP is in ERR and flushes what it holds, so once every operation the
    /// pair posted is either completed or failed, the pair is done (it can post nothing
    /// more), and with every pair done the application is finished: the run ends at the
    /// last report, polled at `t`, instead of at a timer its QPs armed before they failed.
    /// An error report is a completion the application waited for, so the measured time
    /// runs to it (the retransmission timeouts a failed QP waited out stay in it).
    pub(super) fn bw_pair_failed(&mut self, node: usize, cqe: &Cqe, t: TimePs) {
        if self.spec.is_lat()
            || !self.procs.list.is_empty()
            || self.spec.duration_mode
            || cqe.is_recv
        {
            return;
        }
        self.measure.completed(t);
        let Some(hq) = self.nodes[node].qps.get(cqe.qpn as usize).copied() else {
            return;
        };
        let p = &mut self.pairs[hq.pair as usize];
        let was_open = p.completed + p.failed < p.posted;
        p.failed += 1;
        if was_open && p.completed + p.failed == p.posted {
            self.pairs_done += 1;
            if self.pairs_done == self.pairs.len() {
                self.finished = true;
            }
        }
    }

    /// Bandwidth tests: `node` polled `cqe` of pair `i` at `t`. A target reposts its
    /// receives; the initiator counts the operations the CQE reports and refills the slots
    /// they freed.
    pub(super) fn bw_cqe(
        &mut self,
        node: usize,
        t: TimePs,
        cqe: &Cqe,
        i: u32,
        cx: &mut HostCx<'_>,
    ) {
        if cqe.is_recv {
            // SEND bandwidth target: keep the receive queue full, a list at a time.
            let q = &mut self.nodes[node].qps[cqe.qpn as usize];
            q.rq_owed += 1;
            if q.rq_owed >= self.spec.recv_post_list {
                let k = std::mem::take(&mut q.rq_owed);
                self.post_parts().recv(node, cqe.qpn, k, t, false, cx);
            }
            return;
        }
        // Bandwidth initiator completion. Operations and their latencies count inside the
        // window only (iteration mode: the whole run), as the rate does.
        // One CQE reports every operation since the previous signaled one (-Q).
        let done = self.pairs[i as usize].completed;
        let ops = self.spec.covered(done);
        let bytes = match self.spec.size_mix {
            None => self.spec.op_bytes() * ops,
            Some(_) => (done..done + ops)
                .map(|k| u64::from(self.spec.op_size(i, k)))
                .sum(),
        };
        self.pairs[i as usize].completed += ops;
        self.measure.bytes_moved += bytes;
        if self.bw_start.warming_pair.is_some() {
            // The warm-up: not measured; its QP's last completion starts the next.
            let p = self.pairs[i as usize];
            self.bw_start
                .pair_progress(done, p.completed, self.spec.warmup_rounds);
            if self.bw_start.warming_pair == Some(i) && p.completed >= self.spec.warm_up_ops {
                self.warmed(i, t, cx);
            }
            return;
        }
        let lat_ps = t.saturating_sub(cqe.wr_id);
        self.measure
            .bw_completion(t, ops, bytes, lat_ps, &self.window);
        for _ in 0..ops {
            self.observe(t, i);
        }
        let p = self.pairs[i as usize];
        self.bw_start
            .pair_progress(done, p.completed, self.spec.warmup_rounds);
        self.maybe_open(t, cx);
        let mut k = self.list_len(node, cqe.qpn, t);
        if k > 0 {
            // Refill the slots this CQE freed (several lists when it reported several
            // operations, -Q); slots still free from the initial fill are the fill's.
            let (mut at, mut refilled) = (t, 0);
            while k > 0 && refilled < ops {
                at = self.post_parts().list(node, cqe.qpn, k, at, cx);
                refilled += u64::from(k);
                k = self.list_len(node, cqe.qpn, at);
            }
        } else if !self.spec.duration_mode && p.completed == self.spec.per_pair_ops() {
            self.pairs_done += 1;
            if self.pairs_done == self.pairs.len() {
                self.finished = true;
            }
        }
    }
}
