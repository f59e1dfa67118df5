//! Named configurations. `baseline` is [`Config::default()`]; every other profile is a TOML
//! overlay over baseline, so a profile states only what it changes. To add one, append a
//! [`ProfileDef`] to [`PROFILES`]; the tests check that every profile parses and validates.

use super::overrides::merge_tables;
use super::{Config, ConfigError};
use toml::Table;

/// A named profile.
#[derive(Debug, Clone, Copy)]
pub struct ProfileDef {
    /// Name used with `--profile`.
    pub name: &'static str,
    /// One line shown by `rnic config profiles`.
    pub description: &'static str,
    /// TOML overlay applied over baseline (sections and fields as in `rnic config show`).
    pub overlay: &'static str,
}

/// Every profile, baseline first.
pub const PROFILES: &[ProfileDef] = &[ProfileDef {
    name: "baseline",
    description: "Defaults: the seeds' common setup (100 Gb/s Ethernet, PCIe 128 Gb/s with a \
                  500 ns read round trip, 1 GHz NIC, 256 B QPCs, 300-entry LRU QPC cache, FCFS \
                  QPC manager, go-back-N RoCEv2)",
    overlay: "",
}];

/// The names of all profiles.
pub fn profile_names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name).collect()
}

fn find(name: &str) -> Result<&'static ProfileDef, ConfigError> {
    PROFILES
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| ConfigError::UnknownProfile {
            name: name.to_string(),
            known: profile_names().join(", "),
        })
}

/// The profile as a TOML table (baseline merged with the overlay), before overrides.
pub fn profile_table(name: &str) -> Result<Table, ConfigError> {
    let def = find(name)?;
    overlay_table(name, def.overlay)
}

/// Baseline merged with a TOML overlay, checked against the schema; `name` labels errors.
pub fn overlay_table(name: &str, overlay: &str) -> Result<Table, ConfigError> {
    let mut table = Config::default().to_table()?;
    let overlay = super::parse_toml_table(overlay, &format!("profile `{name}`"))?;
    merge_tables(&mut table, overlay);
    super::schema::check_config_table(&table)?;
    Ok(table)
}

/// The configuration of a named profile.
pub fn profile(name: &str) -> Result<Config, ConfigError> {
    Config::from_table(profile_table(name)?)
}
