//! Reading the hand-written parts of scenario and sweep files with errors that name the key.

use crate::config::schema::{closest, short_value};
use crate::config::ConfigError;
use toml::{Table, Value};

/// Rejects keys not in `known`; `section` is "" for the top level.
pub fn check_keys(t: &Table, section: &str, known: &[&str]) -> Result<(), ConfigError> {
    for k in t.keys() {
        if !known.contains(&k.as_str()) {
            let path = join(section, k);
            let suggestion = closest(k, known)
                .map(|c| format!(", did you mean `{}`?", join(section, c)))
                .unwrap_or_default();
            let section_desc = if section.is_empty() {
                "the top level".to_string()
            } else {
                format!("section `{section}`")
            };
            return Err(ConfigError::UnknownKey {
                path,
                suggestion,
                section_desc,
                known: known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    Ok(())
}

/// `section.key`, or `key` at the top level.
pub fn join(section: &str, key: &str) -> String {
    if section.is_empty() {
        key.to_string()
    } else {
        format!("{section}.{key}")
    }
}

fn wrong(path: &str, v: &Value, expected: &str) -> ConfigError {
    ConfigError::WrongType {
        path: path.to_string(),
        value: short_value(v),
        expected: expected.to_string(),
        hint: String::new(),
    }
}

/// An optional string.
pub fn opt_str(t: &Table, section: &str, key: &str) -> Result<Option<String>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(wrong(&join(section, key), v, "a string")),
    }
}

/// An optional boolean.
pub fn opt_bool(t: &Table, section: &str, key: &str) -> Result<Option<bool>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(*b)),
        Some(v) => Err(wrong(&join(section, key), v, "true or false")),
    }
}

/// An optional non-negative integer.
pub fn opt_u64(t: &Table, section: &str, key: &str) -> Result<Option<u64>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Integer(i)) if *i >= 0 => Ok(Some(*i as u64)),
        Some(v) => Err(wrong(&join(section, key), v, "a non-negative integer")),
    }
}

/// An optional table.
pub fn opt_table(t: &Table, section: &str, key: &str) -> Result<Option<Table>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Table(s)) => Ok(Some(s.clone())),
        Some(v) => Err(wrong(&join(section, key), v, "a table")),
    }
}

/// An optional array.
pub fn opt_array(t: &Table, section: &str, key: &str) -> Result<Option<Vec<Value>>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a.clone())),
        Some(v) => Err(wrong(&join(section, key), v, "an array")),
    }
}

/// An optional array of strings.
pub fn opt_str_array(
    t: &Table,
    section: &str,
    key: &str,
) -> Result<Option<Vec<String>>, ConfigError> {
    let Some(a) = opt_array(t, section, key)? else {
        return Ok(None);
    };
    a.iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            v => Err(wrong(
                &format!("{}[{i}]", join(section, key)),
                v,
                "a string",
            )),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Keys that belong at the top level of scenario and sweep files.
pub const FILE_TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "profile",
    "seed",
    "perf",
    "set",
    "output",
    "flow",
    "title",
    "axis",
    "x",
    "series",
    "x_log",
    "y_log",
    "metrics",
];

/// TOML puts every key written after a `[table]` or `[[array]]` header into that table, so a
/// top-level key placed at the end of a file lands in the last table. Detects that and says
/// how to fix it. `local` lists the keys the table itself accepts.
pub fn check_misplaced(t: &Table, section: &str, local: &[&str]) -> Result<(), ConfigError> {
    for k in t.keys() {
        if !local.contains(&k.as_str()) && FILE_TOP_KEYS.contains(&k.as_str()) {
            return Err(ConfigError::Inconsistent(format!(
                "`{section}.{k}`: `{k}` is a top-level key, but TOML puts keys written after a \
                 [{section}] header into that table; move `{k} = ...` above the first [table] \
                 or [[axis]] header"
            )));
        }
    }
    Ok(())
}
