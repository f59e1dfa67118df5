//! `--procs` latency tests (csRNA's): the server's processes, each cycling over its QPs: each
//! posts on its current QP, polls its completion, records the full operation latency and
//! moves on. Here is the processes' state and its steps; the test that posts and measures
//! is in `lat.rs`.

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

/// A process's turn (`Procs::turn`): it posts on a pair, or it retires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// The process posts on this pair's QP.
    Post(u32),
    /// The process retired; `last`: it was the last one active (the run is over).
    Retired { last: bool },
}

impl Procs {
    /// Process `pr`'s turn: it posts on its current pair if `work` is left for it,
    /// otherwise it retires.
    pub(crate) fn turn(&mut self, pr: usize, work: bool) -> Turn {
        if !work {
            self.active = self.active.saturating_sub(1);
            return Turn::Retired {
                last: self.active == 0,
            };
        }
        let p = &self.list[pr];
        self.posted += 1;
        Turn::Post(p.pairs[p.next])
    }

    /// The operation on pair `i` completed: its process moves on to its next pair (a round
    /// is done when it wraps; the warm-up is over for the process after `warmup_rounds`).
    /// Returns the process.
    pub(crate) fn completed(&mut self, i: u32, warmup_rounds: u64) -> usize {
        let pr = i as usize % self.list.len();
        let p = &mut self.list[pr];
        p.next = (p.next + 1) % p.pairs.len();
        if p.next == 0 {
            p.rounds += 1;
            if self.warming > 0 && p.rounds == warmup_rounds {
                self.warming -= 1;
            }
        }
        pr
    }
}
