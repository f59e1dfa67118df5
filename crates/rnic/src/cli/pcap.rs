//! `rnic pcap check FILE [--json FILE]`: the check is [`crate::pcap_check`]; this is its
//! command line (outputs checked first, text or JSON, the exit status).

use super::args::PcapCheckCmd;
use crate::pcap_check::check_path;
use crate::report::json;
use crate::{output, UsageError};
use std::io::Write;
use std::path::Path;

/// The check failed: some RoCEv2 frame did not parse or verify (exit status 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct CheckFailed(String);

pub(super) fn check(
    c: &PcapCheckCmd,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<()> {
    let json_to_stdout = c.json.as_deref() == Some(Path::new("-"));
    output::check_not_inputs(
        &[("--json", c.json.as_deref())],
        &[("the capture to check".into(), c.file.clone())],
    )?;
    if let Some(path) = c.json.as_deref().filter(|_| !json_to_stdout) {
        output::check_file("JSON output", path)?;
    }
    let report = check_path(&c.file).map_err(|e| UsageError(e.0))?;
    // The JSON is made only when asked for: a capture of many flows makes a long one.
    if json_to_stdout {
        out.write_all(report.to_json()?.as_bytes())?;
    } else {
        out.write_all(report.to_text().as_bytes())?;
        if let Some(path) = c.json.as_deref() {
            json::write_file(path, report.to_json()?.as_bytes())?;
        }
    }
    let why = format!("{}: {}", report.file, report.verdict);
    if report.passed() {
        Ok(())
    } else if report.found_no_roce() {
        Err(crate::NothingChecked(why).into())
    } else {
        Err(CheckFailed(why).into())
    }
}
