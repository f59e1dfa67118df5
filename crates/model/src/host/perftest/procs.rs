//! `--procs` latency tests (csRNA's): the server's processes, each cycling over its QPs: each
//! posts on its current QP, polls its completion, records the full operation latency and
//! moves on.

use rnic_sim::TimePs;

use super::{HostCx, Perftest};

/// The server's processes of a `--procs` latency test (empty otherwise).
#[derive(Debug, Clone, Default)]
pub struct Procs {
    /// The processes; process p owns the pairs p, p + N, p + 2N, ...
    pub list: Vec<Proc>,
    /// Operations posted over all processes.
    pub posted: u64,
    /// Processes still posting or waiting for a completion.
    pub active: usize,
    /// With warm-up rounds: processes that have not yet completed `warmup_rounds` rounds.
    pub warming: usize,
}

/// A server process of a `--procs` latency test.
#[derive(Debug, Clone, Default)]
pub struct Proc {
    /// The process's pairs, visited round robin.
    pub pairs: Vec<u32>,
    /// Index of the current pair.
    pub next: usize,
    /// Completed rounds over the process's pairs.
    pub rounds: u64,
}

impl Perftest {
    /// `--procs`: process `pr` posts on its current QP at `at`, if work is left; otherwise
    /// it retires (and the run ends with the last process).
    pub(super) fn procs_post(&mut self, pr: usize, at: TimePs, cx: &mut HostCx<'_>) {
        let work = if self.spec.duration_mode {
            at < self.window.span_ps.1
        } else {
            self.procs.posted < self.spec.iters
        };
        if !work || self.finished {
            self.procs.active = self.procs.active.saturating_sub(1);
            if self.procs.active == 0 {
                self.finished = true;
            }
            return;
        }
        let p = &self.procs.list[pr];
        let i = p.pairs[p.next];
        let s_qpn = self.pairs[i as usize].s_qpn;
        self.procs.posted += 1;
        self.post(self.server, s_qpn, at, cx);
    }

    /// `--procs`: the server consumed the completion of `i` at `t` (posted at `posted`).
    pub(super) fn procs_cqe(&mut self, t: TimePs, i: u32, posted: TimePs, cx: &mut HostCx<'_>) {
        self.pairs[i as usize].completed += 1;
        self.measure.bytes_moved += self.spec.op_bytes();
        // Each process polls on its own core: the latest poll, not the last handled.
        self.measure
            .sample(t, t.saturating_sub(posted) as f64, &self.window);
        self.observe(t, i);
        let n = self.procs.list.len();
        let pr = i as usize % n;
        let p = &mut self.procs.list[pr];
        p.next = (p.next + 1) % p.pairs.len();
        if p.next == 0 {
            p.rounds += 1;
            if self.procs.warming > 0 && p.rounds == self.spec.warmup_rounds {
                self.procs.warming -= 1;
            }
        }
        self.maybe_open(t, cx);
        self.procs_post(pr, t + self.costs.latency_gap_ps, cx);
    }
}
