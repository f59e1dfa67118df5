//! The queue trace beside the JSON (`net.trace_interval_us`): `x.json` gives
//! `x-queues.csv`, one line per switch output port and NIC per sample.

use std::path::{Path, PathBuf};

use rnic_model::net::queue_trace::QueueTrace;

/// The trace's path beside `json`.
pub fn path(json: &Path) -> PathBuf {
    let stem = json
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    json.with_file_name(format!("{stem}-queues.csv"))
}

/// Writes `trace` beside `json`, if there is one.
pub fn write(trace: Option<&QueueTrace>, json: &Path) -> anyhow::Result<()> {
    match trace {
        Some(t) => crate::report::json::write_file(&path(json), t.to_csv().as_bytes()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_goes_beside_the_json() {
        assert_eq!(path(Path::new("out/a.json")), Path::new("out/a-queues.csv"));
        assert_eq!(path(Path::new("a.json")), Path::new("a-queues.csv"));
    }
}
