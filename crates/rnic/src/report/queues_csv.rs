//! The traces beside the JSON (`net.trace_interval_us`): `x.json` gives `x-queues.csv`,
//! one line per switch output port and NIC per sample, and, with `net.cc = "dcqcn"`,
//! `x-rates.csv`, one line per QP with DCQCN state per sample.

use std::path::{Path, PathBuf};

use rnic_model::net::queue_trace::QueueTrace;
use rnic_model::nic::mech::cc::rate_trace::RateTrace;

/// The path beside `json` named by its stem and `suffix` (`x.json`, "queues": `x-queues.csv`).
pub fn path(json: &Path, suffix: &str) -> PathBuf {
    let stem = json
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    json.with_file_name(format!("{stem}-{suffix}.csv"))
}

/// Writes the traces there are beside `json`.
pub fn write(
    queues: Option<&QueueTrace>,
    rates: Option<&RateTrace>,
    json: &Path,
) -> anyhow::Result<()> {
    if let Some(t) = queues {
        crate::report::json::write_file(&path(json, "queues"), t.to_csv().as_bytes())?;
    }
    if let Some(t) = rates {
        crate::report::json::write_file(&path(json, "rates"), t.to_csv().as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_go_beside_the_json() {
        let p = |j: &str, s: &str| path(Path::new(j), s);
        assert_eq!(p("out/a.json", "queues"), Path::new("out/a-queues.csv"));
        assert_eq!(p("a.json", "queues"), Path::new("a-queues.csv"));
        assert_eq!(p("out/a.json", "rates"), Path::new("out/a-rates.csv"));
    }
}
