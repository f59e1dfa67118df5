//! `rnic config show`: the resolved config as TOML, each field preceded by its documentation.
//! The output parses back to the same config.

use super::schema::{get_path, FIELDS, SECTIONS};
use super::{Config, ConfigError, Override};
use std::fmt::Write as _;

/// Renders `cfg` as commented TOML. `profile` and `overrides` are only echoed in the header.
pub fn render(cfg: &Config, profile: &str, overrides: &[Override]) -> Result<String, ConfigError> {
    let table = cfg.to_table()?;
    let defaults = Config::default().to_table()?;
    let mut out = String::new();
    let _ = writeln!(out, "# rnic configuration, profile `{profile}`");
    if !overrides.is_empty() {
        let list: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
        let _ = writeln!(out, "# overrides: {}", list.join(" "));
    }
    let _ = writeln!(
        out,
        "# Above each field: unit — description (baseline default; accepted values).\n\
         # Change a field with --set section.field=value, or in a scenario's [set] table."
    );
    let mut section = "";
    for doc in FIELDS.iter() {
        let (sec, name) = doc.path.rsplit_once('.').unwrap_or(("", doc.path));
        if sec != section {
            let _ = writeln!(out, "\n[{sec}]");
            // What applies to the whole section (DCQCN's fields act with net.cc = "dcqcn"
            // only): its fields' own lines did not say so.
            if let Some((_, about)) = SECTIONS.iter().find(|(path, _)| *path == sec) {
                let _ = writeln!(out, "# {about}");
            }
            section = sec;
        }
        let default = get_path(&defaults, doc.path)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "unset".to_string());
        let _ = writeln!(
            out,
            "# {} — {} (default {}; {})",
            doc.unit,
            doc.doc,
            default,
            doc.kind.range_short()
        );
        match get_path(&table, doc.path) {
            Some(v) => {
                let _ = writeln!(out, "{name} = {v}");
            }
            None => {
                let _ = writeln!(out, "# {name} = (unset)");
            }
        }
    }
    Ok(out)
}
