//! rnic: a deterministic, cycle-approximate RDMA NIC simulator.
//!
//! This crate holds the `rnic` binary's library: configuration ([`config`]), perftest-style
//! tests and the runner seam ([`perf`]), results and their text/JSON forms ([`report`]),
//! scenario files ([`scenario`]), parameter sweeps with CSV and plots ([`sweep`]), the
//! reproduction registry ([`repro`]) and the command line ([`cli`]).
//!
//! The timing model plugs in behind [`perf::PerfRunner`]; see [`perf::ModelRunner`].

pub mod cli;
pub mod config;
pub mod input;
pub mod model;
pub mod perf;
pub mod report;
pub mod repro;
pub mod scenario;
pub mod sweep;

#[cfg(test)]
pub(crate) mod testing;

/// A mistake in what the user asked for (a bad flag combination, a missing input file, an
/// unknown reproduction id). Like [`config::ConfigError`], it makes the process exit with
/// status 2; any other error exits with 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Exit status of a failed command: 2 for usage and configuration errors, 1 otherwise.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    let usage = err
        .chain()
        .any(|e| e.is::<UsageError>() || e.is::<config::ConfigError>());
    if usage {
        2
    } else {
        1
    }
}
