//! How a bandwidth test gets going: the warm-up (perftest --perform_warm_up, one QP after
//! another) and the initial fill of every QP's tx depth. Here is the start-up's state and
//! its bookkeeping (which core fills which QP next, which cores are done); the posting is
//! the test's (`bw.rs`).

use rnic_sim::{EventQueue, TimePs};

use super::nodes::{NodeApp, Pair};
use crate::event::{Ev, HostEv};

/// The bandwidth test's start-up state. The window of a `-D` test opens only after it is
/// over, so the initial posting burst is no part of the measured steady state.
#[derive(Debug, Clone, Default)]
pub struct BwStart {
    /// The pair whose warm-up is under way (the QPs warm up one after another).
    pub warming_pair: Option<u32>,
    /// Initial fill state per core of the server.
    pub fill: Vec<Fill>,
    /// Cores still posting their QPs' initial `tx_depth` WQEs.
    pub filling_cores: usize,
    /// Pairs that have not yet completed `warmup_rounds` operations (one per round: every
    /// QP has been served, so the initial posting burst is over).
    pub warming_pairs: usize,
}

impl BwStart {
    /// A pair went from `done` to `completed` operations: it has warmed up once it passes
    /// `warmup_rounds`.
    pub(crate) fn pair_progress(&mut self, done: u64, completed: u64, warmup_rounds: u64) {
        if self.warming_pairs > 0 && done < warmup_rounds && completed >= warmup_rounds {
            self.warming_pairs -= 1;
        }
    }

    /// Starts the initial fill at `at`: each of the server's cores (`app`, node `node`)
    /// fills its QPs round robin, one list per QP per round, one post per `Fill` event (so
    /// a million initial posts never sit in the queue at once).
    pub(crate) fn start_fill(
        &mut self,
        pairs: &[Pair],
        app: &NodeApp,
        node: usize,
        at: TimePs,
        q: &mut EventQueue<Ev>,
    ) {
        let cores = app.cores.range();
        let mut per_core: Vec<Vec<u32>> = vec![Vec::new(); cores.len().max(1)];
        for p in pairs {
            let c = usize::from(app.qps[p.s_qpn as usize].core);
            per_core[c - cores.start].push(p.s_qpn);
        }
        self.fill = per_core
            .into_iter()
            .map(|qpns| Fill {
                done: qpns.is_empty(),
                qpns,
                next: 0,
                round: 0,
            })
            .collect();
        self.filling_cores = self.fill.iter().filter(|f| !f.done).count();
        for (i, c) in cores.enumerate() {
            if !self.fill[i].qpns.is_empty() {
                let ev = HostEv::Fill { core: c as u32 };
                q.push(
                    at,
                    Ev::Host {
                        node: node as u32,
                        ev,
                    },
                );
            }
        }
    }

    /// The next step of core `c`'s fill (the `c`-th of the server's cores), `depth` rounds
    /// deep: the QP it posts on next, or, once its rounds are done (or the run is
    /// `finished`), that it stops.
    pub(crate) fn fill_step(&mut self, c: usize, depth: u64, finished: bool) -> FillStep {
        let f = &mut self.fill[c];
        if f.round >= depth || f.qpns.is_empty() || finished {
            let filled = f.round >= depth && !f.done;
            if filled {
                f.done = true;
                self.filling_cores -= 1;
            }
            return FillStep::Stop {
                filled,
                last: filled && self.filling_cores == 0,
            };
        }
        let qpn = f.qpns[f.next];
        f.next += 1;
        if f.next == f.qpns.len() {
            f.next = 0;
            f.round += 1;
        }
        FillStep::Next(qpn)
    }
}

/// What a core's fill does next ([`BwStart::fill_step`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillStep {
    /// It posts on this QP, if the QP has room.
    Next(u32),
    /// It stops; `filled`: its rounds just ended, `last`: it was the last core filling (the
    /// initial posting is over).
    Stop { filled: bool, last: bool },
}

/// A core's initial fill of its QPs (bandwidth tests).
#[derive(Debug, Clone, Default)]
pub struct Fill {
    /// The core's QPs.
    pub qpns: Vec<u32>,
    /// Next QP in the round.
    pub next: usize,
    /// Round (WQEs posted per QP so far by the fill).
    pub round: u64,
    /// Every QP of the core has its `tx_depth` initial WQEs posted.
    pub done: bool,
}
