//! `--set key=value` overrides: a dotted key and a TOML value, merged into the config table
//! before it is checked and deserialized.

use super::ConfigError;
use toml::{Table, Value};

/// One override of a config field.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Dotted path, e.g. `nic.qpc_cache_entries`.
    pub key: String,
    /// The new value.
    pub value: Value,
}

impl Override {
    /// An override from a path and a value.
    pub fn new(key: impl Into<String>, value: impl Into<Value>) -> Override {
        Override {
            key: key.into(),
            value: value.into(),
        }
    }

    /// Sets the value in `table`, creating intermediate sections as needed. Whether the key
    /// exists is checked later, against the schema, so the error can list the section's keys.
    pub fn apply(&self, table: &mut Table) -> Result<(), ConfigError> {
        set_path(table, &self.key, self.value.clone())
    }
}

impl std::fmt::Display for Override {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// Parses `key=value`. The value is read as a TOML value (`300`, `1e-3`, `true`, `"lru"`,
/// `[1, 2]`); anything that is not valid TOML is taken as a string, so `--set
/// nic.qpc_manager=nonblocking` needs no quotes.
pub fn parse_set(arg: &str) -> Result<Override, ConfigError> {
    let bad = |reason: &str| ConfigError::BadOverride {
        arg: arg.to_string(),
        reason: reason.to_string(),
    };
    let Some((key, raw)) = arg.split_once('=') else {
        return Err(bad(
            "expected KEY=VALUE, e.g. --set nic.qpc_cache_entries=3000 (see `rnic config show`)",
        ));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(bad("the key before '=' is empty"));
    }
    if key.split('.').any(|p| p.is_empty()) {
        return Err(bad(
            "the key has an empty part; write it like section.field",
        ));
    }
    if let Some(c) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '.' || *c == '-'))
    {
        return Err(bad(&format!(
            "the key contains `{c}`; keys are section.field"
        )));
    }
    Ok(Override {
        key: key.to_string(),
        value: parse_value(raw.trim()),
    })
}

/// Whether two values of one field are equal, numbers by value (`--set
/// sim.duration_us=10000` is `-D 0.01`, `3` is `3.0`).
pub fn same_value(a: &Value, b: &Value) -> bool {
    let num = |v: &Value| v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
    match (num(a), num(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-9 * x.abs().max(y.abs()),
        _ => a == b,
    }
}

/// Refuses a field that `sets` (all given by `by`, e.g. "--set") gives twice with different
/// values: applied in order the last would win and the others vanish unseen, so which one
/// was meant is asked rather than guessed. The same value repeated is accepted: it
/// changes nothing whichever wins.
pub fn check_repeated(sets: &[Override], by: &str) -> Result<(), ConfigError> {
    for (i, later) in sets.iter().enumerate() {
        let earlier = sets[..i]
            .iter()
            .find(|o| o.key == later.key && !same_value(&o.value, &later.value));
        if let Some(earlier) = earlier {
            return Err(ConfigError::Inconsistent(format!(
                "{} is set twice by {by}: to {} and to {}; give it once",
                later.key,
                super::schema::short_value(&earlier.value),
                super::schema::short_value(&later.value)
            )));
        }
    }
    Ok(())
}

/// Reads a TOML value, falling back to a string.
pub fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match doc.parse::<Table>() {
        Ok(mut t) if t.len() == 1 => t.remove("v").unwrap_or_else(|| Value::String(raw.into())),
        _ => Value::String(raw.to_string()),
    }
}

/// Sets a dotted path in a table.
pub fn set_path(table: &mut Table, key: &str, value: Value) -> Result<(), ConfigError> {
    let parts: Vec<&str> = key.split('.').collect();
    let (last, parents) = parts.split_last().ok_or_else(|| ConfigError::BadOverride {
        arg: key.to_string(),
        reason: "empty key".to_string(),
    })?;
    let mut cur = table;
    for (i, p) in parents.iter().enumerate() {
        let entry = cur
            .entry(p.to_string())
            .or_insert_with(|| Value::Table(Table::new()));
        cur = match entry {
            Value::Table(t) => t,
            other => {
                return Err(ConfigError::WrongType {
                    path: parts[..=i].join("."),
                    value: super::schema::short_value(other),
                    expected: format!("a section containing `{}`", parts[i + 1..].join(".")),
                    hint: String::new(),
                })
            }
        };
    }
    match (cur.get_mut(*last), value) {
        // Merging a table into a section keeps the section's other keys.
        (Some(Value::Table(existing)), Value::Table(new)) => merge_tables(existing, new),
        (_, value) => {
            cur.insert(last.to_string(), value);
        }
    }
    Ok(())
}

/// Deep merge: keys of `overlay` replace those of `base`, sub-tables merge recursively.
pub fn merge_tables(base: &mut Table, overlay: Table) {
    for (k, v) in overlay {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge_tables(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Flattens a `[set]` table of a scenario into overrides. Both dotted keys
/// (`nic.qpc_cache_entries = 300`, which TOML nests) and quoted dotted keys
/// (`"nic.qpc_cache_entries" = 300`) are accepted. An empty table (`nic.clock_ghz = {}`,
/// `[set.nci]`) is kept as an override of its key with that table, so the schema check
/// refuses it naming the key (a field given a table, an unknown section) as `--set
/// nic.clock_ghz={}` is refused; flattened away, it set nothing without a word.
pub fn overrides_from_table(table: &Table) -> Vec<Override> {
    fn walk(t: &Table, prefix: &str, out: &mut Vec<Override>) {
        for (k, v) in t {
            let key = format!("{prefix}{k}");
            match v {
                Value::Table(sub) if !sub.is_empty() => walk(sub, &format!("{key}."), out),
                v => out.push(Override::new(key, v.clone())),
            }
        }
    }
    let mut out = Vec::new();
    walk(table, "", &mut out);
    out
}
