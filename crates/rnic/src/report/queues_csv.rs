//! The traces beside the JSON (`net.trace_interval_us`; paths: [`SideFile`]): `x.json` gives `x-queues.csv`,
//! one line per switch output port and NIC per sample, and, with `net.cc = "dcqcn"`,
//! `x-rates.csv`, one line per QP with DCQCN state per sample.

use std::path::Path;

use crate::report::side_files::SideFile;

use rnic_model::net::queue_trace::QueueTrace;
use rnic_model::nic::mech::cc::rate_trace::RateTrace;

/// Writes the traces there are beside `json`.
pub fn write(
    queues: Option<&QueueTrace>,
    rates: Option<&RateTrace>,
    json: &Path,
) -> anyhow::Result<()> {
    if let Some(t) = queues {
        crate::report::json::write_file(&SideFile::Queues.beside(json), t.to_csv().as_bytes())?;
    }
    if let Some(t) = rates {
        crate::report::json::write_file(&SideFile::Rates.beside(json), t.to_csv().as_bytes())?;
    }
    Ok(())
}
