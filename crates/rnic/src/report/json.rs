//! JSON output (`--json FILE`): `serde_json::to_string_pretty` of [`PerfResult`], newline
//! terminated. `-` writes to stdout.

use super::PerfResult;
use anyhow::Context as _;
use std::path::Path;

/// The JSON text of a result.
pub fn to_json(result: &PerfResult) -> anyhow::Result<String> {
    let mut s = serde_json::to_string_pretty(result).context("serializing the result")?;
    s.push('\n');
    Ok(s)
}

/// Writes any serializable value as pretty JSON to `path`, creating parent directories.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut s = serde_json::to_string_pretty(value).context("serializing JSON")?;
    s.push('\n');
    write_file(path, s.as_bytes())
}

/// Writes bytes to `path`, creating parent directories; errors are
/// [`crate::OutputError`]s naming the file.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    Ok(crate::output::write_file(path, bytes)?)
}
