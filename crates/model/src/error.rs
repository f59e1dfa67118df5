//! The errors a run is refused or stopped with, besides configuration errors
//! ([`crate::config::ConfigError`]).

/// A mistake in what the user asked for (a bad flag combination, a missing input file, a run
/// the model cannot measure or hold). A command-line tool exits with its usage status.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// An output file or directory that cannot be written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct OutputError(pub String);
