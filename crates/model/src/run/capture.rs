//! The end of a run's capture.

use std::path::Path;

use crate::net::capture::Capture;
use crate::OutputError;

/// Finishes the run's capture, if it has one (its last frames flushed): one that cannot be
/// finished is an output that cannot be written, naming the file (`path`) as the error on
/// creating it does.
pub(crate) fn finish(pcap: Option<&mut Capture>, path: Option<&Path>) -> Result<(), OutputError> {
    let Some(w) = pcap else {
        return Ok(());
    };
    w.finish().map_err(|e| match path {
        Some(path) => OutputError(format!("cannot write the pcap {}: {e}", path.display())),
        None => OutputError(format!("cannot write the pcap: {e}")),
    })
}
