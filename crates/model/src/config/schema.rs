//! The documentation and accepted range of every configuration field, in one table.
//!
//! [`FIELDS`] drives validation ([`check_and_normalize_config_table`]), `--set` checking,
//! unknown-key errors (which list a section's keys) and `rnic config show`. A test asserts that
//! every leaf of the serialized default config has an entry here and vice versa, so adding a
//! field to [`super::Config`] without documenting it fails the build's tests.

use super::ConfigError;
use toml::{Table, Value};

/// What values a field accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// An integer in `min..=max`.
    UInt { min: u64, max: u64 },
    /// A power of two in `min..=max`.
    Pow2 { min: u64, max: u64 },
    /// One of the listed integers.
    IntSet(&'static [u64]),
    /// A finite number in `min..=max` (`min` itself excluded when `min_exclusive`).
    Float {
        min: f64,
        max: f64,
        min_exclusive: bool,
    },
    /// `true` or `false`.
    Bool,
    /// One of the listed (lowercase) strings.
    Str(&'static [&'static str]),
    /// One of the listed (lowercase) names, or the path of a file ending in the extension.
    NameOrFile(&'static [&'static str], &'static str),
}

impl Kind {
    /// Human description of the accepted values, e.g. `an integer from 0 to 31`.
    pub fn accepted(&self) -> String {
        match *self {
            Kind::UInt { min, max } => format!("an integer from {min} to {max}"),
            Kind::Pow2 { min, max } => format!("a power of two from {min} to {max}"),
            Kind::IntSet(set) => format!("one of {}", join(set.iter().map(|v| v.to_string()))),
            Kind::Float {
                min,
                max,
                min_exclusive,
            } => {
                if min_exclusive {
                    format!("a number greater than {min} and at most {max}")
                } else {
                    format!("a number from {min} to {max}")
                }
            }
            Kind::Bool => "true or false".to_string(),
            Kind::Str(set) => format!("one of {}", join(set.iter().map(|v| format!("\"{v}\"")))),
            Kind::NameOrFile(set, ext) => format!(
                "one of {} or the path of a {ext} file",
                join(set.iter().map(|v| format!("\"{v}\"")))
            ),
        }
    }

    /// Short form for `config show` comments, e.g. `0..=31`.
    pub fn range_short(&self) -> String {
        match *self {
            Kind::UInt { min, max } => format!("{min}..={max}"),
            Kind::Pow2 { min, max } => format!("power of two, {min}..={max}"),
            Kind::IntSet(set) => join_with(set.iter().map(|v| v.to_string()), " | "),
            Kind::Float {
                min,
                max,
                min_exclusive,
            } => {
                if min_exclusive {
                    format!("> {min}, <= {max}")
                } else {
                    format!("{min}..={max}")
                }
            }
            Kind::Bool => "true | false".to_string(),
            Kind::Str(set) => join_with(set.iter().map(|v| format!("\"{v}\"")), " | "),
            Kind::NameOrFile(set, ext) => format!(
                "{} | FILE{ext}",
                join_with(set.iter().map(|v| format!("\"{v}\"")), " | ")
            ),
        }
    }

    fn expected_type(&self) -> &'static str {
        match self {
            Kind::UInt { .. } | Kind::Pow2 { .. } | Kind::IntSet(_) => "an integer",
            Kind::Float { .. } => "a number",
            Kind::Bool => "true or false",
            Kind::Str(_) | Kind::NameOrFile(..) => "a string",
        }
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    join_with(items, ", ")
}

fn join_with(items: impl Iterator<Item = String>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}

/// Documentation of one field.
#[derive(Debug, Clone, Copy)]
pub struct FieldDoc {
    /// Dotted path, e.g. `qp.pmtu`.
    pub path: &'static str,
    /// Unit of the value (`ns`, `bytes`, `cycles`, ...).
    pub unit: &'static str,
    /// Accepted values.
    pub kind: Kind,
    /// May be absent (an `Option` field); `--set path=none` unsets it.
    pub optional: bool,
    /// One-line description.
    pub doc: &'static str,
}

pub(crate) const fn uint(min: u64, max: u64) -> Kind {
    Kind::UInt { min, max }
}

pub(crate) const fn float(min: f64, max: f64) -> Kind {
    Kind::Float {
        min,
        max,
        min_exclusive: false,
    }
}

pub(crate) const fn positive(max: f64) -> Kind {
    Kind::Float {
        min: 0.0,
        max,
        min_exclusive: true,
    }
}

/// Largest integer TOML can hold (i64::MAX).
pub const TOML_INT_MAX: u64 = i64::MAX as u64;
pub(crate) const CYCLES: Kind = uint(0, 1_000_000);
/// The longest simulated time any setting or run may name, µs: an hour (`-D`, every
/// `*_us` field, a flow's start and duration), far inside the picosecond clock's range.
pub const MAX_SIM_US: f64 = 3.6e9;
/// The longest delay a `*_ns` setting may give, ns (10 s): the config's and a topology
/// file's.
pub const MAX_DELAY_NS: f64 = 1e10;
pub(crate) const NS: Kind = float(0.0, MAX_DELAY_NS);
pub(crate) const ENTRIES: Kind = uint(0, 1 << 24);
/// Accepted path MTUs (IB MTU enumeration).
pub const PMTUS: &[u64] = &[256, 512, 1024, 2048, 4096];

/// Every configuration field, in the order `rnic config show` prints them: each section's
/// own fields as it declares them ([`super::declare`]), nested sections (`net.impair`) after
/// their parent's scalar fields.
pub static FIELDS: std::sync::LazyLock<Vec<FieldDoc>> = std::sync::LazyLock::new(|| {
    use super::*;
    [
        SimConfig::FIELDS,
        NicConfig::FIELDS,
        PcieConfig::FIELDS,
        DdrConfig::FIELDS,
        EthConfig::FIELDS,
        NetConfig::FIELDS,
        ImpairConfig::FIELDS,
        SprayConfig::FIELDS,
        FabricConfig::FIELDS,
        EcnConfig::FIELDS,
        DcqcnConfig::FIELDS,
        HostConfig::FIELDS,
        QpConfig::FIELDS,
        OooConfig::FIELDS,
    ]
    .concat()
});

/// Every section's path and documentation, in the order of [`FIELDS`]: what applies to the
/// section as a whole (`net.dcqcn`: with net.cc = "dcqcn"), printed by `rnic config show`
/// under its header.
pub const SECTIONS: &[(&str, &str)] = {
    use super::*;
    &[
        SimConfig::SECTION,
        NicConfig::SECTION,
        PcieConfig::SECTION,
        DdrConfig::SECTION,
        EthConfig::SECTION,
        NetConfig::SECTION,
        ImpairConfig::SECTION,
        SprayConfig::SECTION,
        FabricConfig::SECTION,
        EcnConfig::SECTION,
        DcqcnConfig::SECTION,
        HostConfig::SECTION,
        QpConfig::SECTION,
        OooConfig::SECTION,
    ]
};

/// The documentation entry of a path.
pub fn field(path: &str) -> Option<&'static FieldDoc> {
    FIELDS.iter().find(|d| d.path == path)
}

/// The declared ends of the numeric field at `path` (an integer's, a power of two's or a
/// number's), so that a caller quoting or applying them states them nowhere else; `None` for
/// another kind of field or no such field.
pub fn declared_range(path: &str) -> Option<(f64, f64)> {
    match field(path)?.kind {
        Kind::UInt { min, max } | Kind::Pow2 { min, max } => Some((min as f64, max as f64)),
        Kind::Float { min, max, .. } => Some((min, max)),
        _ => None,
    }
}

/// Whether `value` of the field at `path` names a file rather than one of its built-in
/// names (a [`Kind::NameOrFile`] field's value ending in its extension, as `net.topology`'s
/// `.toml`): the rule the field's check applies, for callers that must spare the file.
pub fn names_a_file(path: &str, value: &str) -> bool {
    match field(path).map(|d| d.kind) {
        Some(Kind::NameOrFile(names, ext)) => {
            !names.contains(&value.to_ascii_lowercase().as_str()) && value.ends_with(ext)
        }
        _ => false,
    }
}

/// How an error hint is phrased for a family of fields.
#[derive(Clone, Copy)]
pub enum HintStyle {
    /// Config fields: "(baseline: 4096; e.g. --set qp.pmtu=4096)".
    Config,
    /// No hint.
    None,
}

/// Checks a (possibly partial) config table: unknown keys, types, ranges. Integer fields given
/// as whole floats (`2e9`) are converted to integers; optional fields set to `"none"` are
/// removed.
pub fn check_and_normalize_config_table(table: &mut Table) -> Result<(), ConfigError> {
    check_tree(table, "", &FIELDS, HintStyle::Config)
}

/// Like [`check_and_normalize_config_table`] on a copy.
pub fn check_config_table(table: &Table) -> Result<(), ConfigError> {
    let mut t = table.clone();
    check_and_normalize_config_table(&mut t)
}

/// Whether a string value unsets an optional field: `"none"` or the empty string (`--set
/// sim.warmup_us=none`, `--set sim.warmup_us=`), the field's default being no value.
pub fn unsets_optional(s: &str) -> bool {
    s == "none" || s.is_empty()
}

/// Checks `table` (whose keys live under `prefix`, "" for the root, else ending in '.')
/// against `fields`.
pub fn check_tree(
    table: &mut Table,
    prefix: &str,
    fields: &[FieldDoc],
    hints: HintStyle,
) -> Result<(), ConfigError> {
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let full = format!("{prefix}{key}");
        if let Some(doc) = fields.iter().find(|d| d.path == full) {
            let remove = {
                let v = table.get_mut(&key).expect("key listed above");
                if doc.optional && v.as_str().is_some_and(unsets_optional) {
                    true
                } else {
                    check_value(doc, v, hints)?;
                    false
                }
            };
            if remove {
                table.remove(&key);
            }
            continue;
        }
        let sub_prefix = format!("{full}.");
        if fields.iter().any(|d| d.path.starts_with(&sub_prefix)) {
            match table.get_mut(&key) {
                Some(Value::Table(sub)) => check_tree(sub, &sub_prefix, fields, hints)?,
                Some(other) => {
                    return Err(ConfigError::WrongType {
                        path: full.clone(),
                        value: short_value(other),
                        expected: format!(
                            "a section (table) with keys {}",
                            section_keys(prefix_keys(fields, &sub_prefix))
                        ),
                        hint: String::new(),
                    })
                }
                None => {}
            }
            continue;
        }
        return Err(unknown_key(&full, prefix, fields));
    }
    Ok(())
}

/// The direct children (leaf names and sub-section names) of `prefix`, in table order.
pub fn prefix_keys(fields: &[FieldDoc], prefix: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for d in fields {
        if let Some(rest) = d.path.strip_prefix(prefix) {
            let child = rest.split('.').next().unwrap_or(rest);
            if !out.contains(&child) {
                out.push(child);
            }
        }
    }
    out
}

fn section_keys(keys: Vec<&str>) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds an unknown-key error listing the keys accepted at `prefix`.
pub fn unknown_key(full: &str, prefix: &str, fields: &[FieldDoc]) -> ConfigError {
    let keys = prefix_keys(fields, prefix);
    let key = full.strip_prefix(prefix).unwrap_or(full);
    let suggestion = closest(key, &keys)
        .map(|k| format!(", did you mean `{prefix}{k}`?"))
        .unwrap_or_default();
    let section_desc = if prefix.is_empty() {
        "the top level".to_string()
    } else {
        format!("section `{}`", prefix.trim_end_matches('.'))
    };
    ConfigError::UnknownKey {
        path: full.to_string(),
        suggestion,
        section_desc,
        known: section_keys(keys),
    }
}

/// The candidate closest to `key` by edit distance, if it is close enough to be a typo.
pub fn closest<'a>(key: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (key.len() / 3).max(2);
    let near = candidates
        .iter()
        .map(|c| (edit_distance(key, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    // A truncated name (`nic.qpc_cach`) suggests the shortest key it starts.
    near.or_else(|| {
        (key.len() >= 3)
            .then(|| {
                candidates
                    .iter()
                    .filter(|c| c.starts_with(key))
                    .min_by_key(|c| c.len())
                    .copied()
            })
            .flatten()
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A number as an error message shows it: as written for everyday magnitudes, in exponent
/// form from 10^15 on (`1e300`, not its 301 digits).
pub fn shown_number(x: f64) -> String {
    if x.is_finite() && x.abs() >= 1e15 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

/// A value as written in TOML, shortened for error messages.
pub fn short_value(v: &Value) -> String {
    let s = match v {
        Value::Table(_) => "a table".to_string(),
        Value::Array(_) => "an array".to_string(),
        other => other.to_string(),
    };
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn hint_for(doc: &FieldDoc, hints: HintStyle) -> String {
    match hints {
        HintStyle::None => String::new(),
        HintStyle::Config => {
            let example = match super::Config::default().to_table() {
                Ok(t) => get_path(&t, doc.path).map(|v| v.to_string()),
                Err(_) => None,
            };
            // An optional field says how to unset it: `=unset` and the like are refused.
            let unset = if doc.optional {
                format!("; --set {}=none unsets it", doc.path)
            } else {
                String::new()
            };
            match example {
                Some(ex) => format!(" (baseline: {ex}; e.g. --set {}={ex}{unset})", doc.path),
                None => format!(" (unset in baseline; e.g. --set {}=VALUE{unset})", doc.path),
            }
        }
    }
}

/// Checks one value against its field, normalizing whole floats for integer fields.
pub fn check_value(doc: &FieldDoc, v: &mut Value, hints: HintStyle) -> Result<(), ConfigError> {
    let wrong_type = |v: &Value| ConfigError::WrongType {
        path: doc.path.to_string(),
        value: short_value(v),
        expected: format!("{} ({})", doc.kind.expected_type(), doc.kind.accepted()),
        hint: hint_for(doc, hints),
    };
    let out_of_range = |shown: String| ConfigError::OutOfRange {
        path: doc.path.to_string(),
        value: shown,
        accepted: doc.kind.accepted(),
        hint: hint_for(doc, hints),
    };
    match doc.kind {
        Kind::UInt { .. } | Kind::Pow2 { .. } | Kind::IntSet(_) => {
            let n: i128 = match *v {
                Value::Integer(i) => i128::from(i),
                Value::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.2e18 => {
                    x as i128
                }
                // Whole but beyond any integer field's range: no note about fractions.
                Value::Float(x) if x.is_finite() && x.fract() == 0.0 => {
                    return Err(out_of_range(shown_number(x)))
                }
                Value::Float(x) if x.is_finite() => {
                    return Err(out_of_range(shown_number(x)).with_note_integer(x))
                }
                _ => return Err(wrong_type(v)),
            };
            let ok = match doc.kind {
                Kind::UInt { min, max } => n >= i128::from(min) && n <= i128::from(max),
                Kind::Pow2 { min, max } => {
                    n >= i128::from(min) && n <= i128::from(max) && (n as u64).is_power_of_two()
                }
                Kind::IntSet(set) => n >= 0 && set.contains(&(n as u64)),
                _ => unreachable!("integer kinds only"),
            };
            if !ok {
                return Err(out_of_range(n.to_string()));
            }
            *v = Value::Integer(n as i64);
        }
        Kind::Float {
            min,
            max,
            min_exclusive,
        } => {
            let x = match v {
                Value::Integer(i) => *i as f64,
                Value::Float(x) => *x,
                _ => return Err(wrong_type(v)),
            };
            let low_ok = if min_exclusive { x > min } else { x >= min };
            if !x.is_finite() || !low_ok || x > max {
                let shown = if x.is_finite() {
                    shown_number(x)
                } else {
                    v.to_string()
                };
                return Err(out_of_range(shown));
            }
            *v = Value::Float(x);
        }
        Kind::Bool => {
            if !v.is_bool() {
                return Err(wrong_type(v));
            }
        }
        Kind::Str(set) => match v {
            Value::String(s) => {
                let lower = s.to_ascii_lowercase();
                if !set.contains(&lower.as_str()) {
                    let mut e = out_of_range(format!("\"{s}\""));
                    if let (Some(k), ConfigError::OutOfRange { hint, .. }) =
                        (closest(&lower, set), &mut e)
                    {
                        *hint = format!(", did you mean \"{k}\"?{hint}");
                    }
                    return Err(e);
                }
                *v = Value::String(lower);
            }
            _ => return Err(wrong_type(v)),
        },
        Kind::NameOrFile(set, ext) => match v {
            // A control character in a file name is a mistake (a pasted escape), and an
            // error quoting the name would print it raw to the terminal.
            Value::String(s) if s.chars().any(char::is_control) => {
                return Err(ConfigError::Inconsistent(format!(
                    "{}: {} holds a control character; name a file without one",
                    doc.path,
                    s.escape_debug()
                )));
            }
            Value::String(s) => {
                let lower = s.to_ascii_lowercase();
                if set.contains(&lower.as_str()) {
                    *v = Value::String(lower);
                } else if !s.ends_with(ext) {
                    let mut e = out_of_range(format!("\"{s}\""));
                    if let (Some(k), ConfigError::OutOfRange { hint, .. }) =
                        (closest(&lower, set), &mut e)
                    {
                        *hint = format!(", did you mean \"{k}\"?{hint}");
                    }
                    return Err(e);
                }
            }
            _ => return Err(wrong_type(v)),
        },
    }
    Ok(())
}

impl ConfigError {
    fn with_note_integer(self, x: f64) -> ConfigError {
        match self {
            ConfigError::OutOfRange {
                path,
                accepted,
                hint,
                ..
            } => ConfigError::OutOfRange {
                path,
                value: shown_number(x),
                accepted: format!("{accepted} (whole numbers only)"),
                hint,
            },
            other => other,
        }
    }
}

/// The value at a dotted path.
pub fn get_path<'a>(table: &'a Table, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut cur = table.get(first)?;
    for p in parts {
        cur = cur.as_table()?.get(p)?;
    }
    Some(cur)
}

/// Every leaf path of a table (depth first, table order).
pub fn leaf_paths(table: &Table) -> Vec<String> {
    fn walk(t: &Table, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in t {
            let p = format!("{prefix}{k}");
            match v {
                Value::Table(sub) => walk(sub, &format!("{p}."), out),
                _ => out.push(p),
            }
        }
    }
    let mut out = Vec::new();
    walk(table, "", &mut out);
    out
}
