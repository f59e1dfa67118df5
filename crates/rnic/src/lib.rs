//! rnic: a deterministic, cycle-approximate RDMA NIC simulator.
//!
//! This crate holds the `rnic` binary's library: the runner seam and the perftest options
//! ([`perf`]), results' text/JSON forms ([`report`]), scenario files ([`scenario`]),
//! parameter sweeps with CSV and plots ([`sweep`]), the reproduction registry ([`repro`]),
//! output files checked before the work ([`output`]), the check of real captures
//! ([`pcap_check`]) and the command line ([`cli`]).
//!
//! The timed model, its configuration and its results are the `rnic-model` crate
//! (re-exported as [`model`] and [`config`]); it plugs in behind [`perf::PerfRunner`], see
//! [`perf::ModelRunner`].

pub mod accel;
pub mod calc;
pub mod cli;
pub mod flows;
pub mod flows_run;
pub mod input;
pub mod live;
pub mod output;
pub mod pcap_check;
pub mod perf;
pub mod progress;
pub mod report;
pub mod repro;
pub mod scenario;
pub mod sweep;
pub mod traffic;

pub use rnic_model as model;
pub use rnic_model::config;
pub use rnic_model::{OutputError, UsageError};

#[cfg(test)]
pub(crate) mod testing;

/// The process's exit statuses (`rnic --help` and the README list them).
pub mod exit {
    /// Everything asked completed and every byte verified.
    pub const OK: u8 = 0;
    /// Data did not verify, or the model contradicted physics (a simulator bug); for `pcap
    /// check`, a RoCEv2 frame failed to parse or failed its ICRC.
    pub const FAILED: u8 = 1;
    /// Bad input or usage: flags, config fields, scenario, sweep or capture files.
    pub const USAGE: u8 = 2;
    /// The run ended without completing what was asked (a limit, error completions, a
    /// stall); the reason is printed and in the JSON. For `pcap check`, the capture holds no
    /// RoCEv2 frame, so nothing was checked.
    pub const INCOMPLETE: u8 = 3;
    /// An output (JSON, CSV, pcap, plot, directory) could not be written.
    pub const OUTPUT: u8 = 4;
}

/// A run (or sweep point) that did not end `ok`; exits with its status's code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {reason}", status_headline(*status))]
pub struct RunFailed {
    /// The worst status.
    pub status: report::RunStatus,
    /// What went wrong.
    pub reason: String,
}

fn status_headline(s: report::RunStatus) -> &'static str {
    match s {
        report::RunStatus::Ok => "the run completed",
        report::RunStatus::Incomplete => "the run did not complete what was asked",
        report::RunStatus::Refused => "the run was refused as asked (bad input)",
        report::RunStatus::ModelError => {
            "model error (a simulator bug: the figures above are not trustworthy)"
        }
        report::RunStatus::Corrupt => {
            "payload verification failed (data did not arrive intact: the figures above are not trustworthy)"
        }
    }
}

/// The exit status of a run that ended with `status`.
pub fn status_exit_code(status: report::RunStatus) -> u8 {
    match status {
        report::RunStatus::Ok => exit::OK,
        report::RunStatus::Incomplete => exit::INCOMPLETE,
        report::RunStatus::Refused => exit::USAGE,
        report::RunStatus::ModelError | report::RunStatus::Corrupt => exit::FAILED,
    }
}

/// A command that found nothing to do what was asked with (`pcap check` of a capture with
/// no RoCEv2 frame); exits [`exit::INCOMPLETE`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NothingChecked(pub String);

/// Exit status of a failed command: [`exit::USAGE`] for usage and configuration errors,
/// [`exit::OUTPUT`] for outputs that cannot be written, the run's own status for runs that
/// did not end `ok`, [`exit::FAILED`] otherwise.
pub fn exit_status(err: &anyhow::Error) -> u8 {
    for e in err.chain() {
        if e.is::<UsageError>() || e.is::<config::ConfigError>() {
            return exit::USAGE;
        }
        if e.is::<OutputError>() {
            return exit::OUTPUT;
        }
        if let Some(f) = e.downcast_ref::<RunFailed>() {
            return status_exit_code(f.status);
        }
        if e.is::<NothingChecked>() {
            return exit::INCOMPLETE;
        }
    }
    exit::FAILED
}
