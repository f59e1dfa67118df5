//! How a bandwidth test gets going: the warm-up (perftest --perform_warm_up, one QP after
//! another) and the initial fill of every QP's tx depth.

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
