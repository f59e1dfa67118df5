//! The end of a run's capture.

use crate::net::capture::Capture;
use crate::workload::PcapOut;
use crate::OutputError;

/// Finishes the run's capture, if it has one (its last frames flushed): one that cannot be
/// finished is an output that cannot be written, naming the file (`out`'s) as the error on
/// creating it does.
pub(crate) fn finish(pcap: Option<&mut Capture>, out: Option<&PcapOut>) -> Result<(), OutputError> {
    let Some(w) = pcap else {
        return Ok(());
    };
    w.finish().map_err(|e| match out {
        Some(out) => OutputError(format!("cannot write the pcap {}: {e}", out.path.display())),
        None => OutputError(format!("cannot write the pcap: {e}")),
    })
}
