//! One numeric parameter scaled in every configuration built while a [`Perturbation`] is in
//! force: `rnic repro ID --sensitivity` reruns an experiment with each parameter its paper
//! does not state at −20 % and +20 %, whatever profile, sweep or flow builds the experiment's
//! configs (every config passes through [`super::Config::from_table`], which applies it after
//! the profile and the experiment's own overrides).
//!
//! The scale is process-wide, so perturbations are serialized (one in force at a time) and a
//! process that runs one should run nothing else meanwhile: `rnic repro` runs experiments one
//! after the other, and the suite's test of it is a test binary of its own.

use super::schema::{self, FieldDoc, Kind};
use super::ConfigError;
use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};
use toml::{Table, Value};

/// The parameter and factor in force.
static SCALED: RwLock<Option<(&'static FieldDoc, f64)>> = RwLock::new(None);
/// Each distinct `old -> new` change the perturbation made, for the report.
static CHANGES: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());
/// Held by the perturbation in force.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A parameter scaled while this lives; dropping it restores every later config.
pub struct Perturbation {
    _one: MutexGuard<'static, ()>,
}

impl Perturbation {
    /// Scales `key` by `factor` (0.8 for −20 %) in every config built until the perturbation
    /// is dropped. The key must name a numeric field: a switch or a name has no −20 %.
    pub fn new(key: &str, factor: f64) -> Result<Perturbation, ConfigError> {
        let doc = numeric_field(key)?;
        let one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
        lock(&CHANGES).clear();
        *SCALED.write().unwrap_or_else(PoisonError::into_inner) = Some((doc, factor));
        Ok(Perturbation { _one: one })
    }

    /// The changes made so far, `old -> new`, each once (empty when no config built had
    /// the parameter set).
    pub fn changes(&self) -> Vec<(String, String)> {
        lock(&CHANGES).iter().cloned().collect()
    }
}

impl Drop for Perturbation {
    fn drop(&mut self) {
        *SCALED.write().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The field `key` names when it is numeric; an error naming it otherwise.
pub fn numeric_field(key: &str) -> Result<&'static FieldDoc, ConfigError> {
    let doc = schema::field(key).ok_or_else(|| ConfigError::BadOverride {
        arg: key.to_string(),
        reason: "no such configuration field".into(),
    })?;
    match doc.kind {
        Kind::UInt { .. } | Kind::Pow2 { .. } | Kind::IntSet(_) | Kind::Float { .. } => Ok(doc),
        _ => Err(ConfigError::BadOverride {
            arg: key.to_string(),
            reason: format!(
                "not a number ({}), so it cannot be scaled",
                doc.kind.accepted()
            ),
        }),
    }
}

/// Applies the perturbation in force, if any, to a checked config table.
pub(crate) fn apply(table: &mut Table) -> Result<(), ConfigError> {
    let Some((doc, factor)) = *SCALED.read().unwrap_or_else(PoisonError::into_inner) else {
        return Ok(());
    };
    if let Some(change) = scale_in(table, doc, factor)? {
        lock(&CHANGES).insert(change);
    }
    Ok(())
}

/// Scales the field `doc` of `table` by `factor`; the change made (`old`, `new`), or `None`
/// when the table leaves the field unset. A value the field cannot take is an error naming
/// it.
pub fn scale_in(
    table: &mut Table,
    doc: &FieldDoc,
    factor: f64,
) -> Result<Option<(String, String)>, ConfigError> {
    let Some(old) = schema::get_path(table, doc.path).cloned() else {
        return Ok(None);
    };
    let mut new = scaled(doc, &old, factor)?;
    schema::check_value(doc, &mut new, schema::HintStyle::None)?;
    let change = (schema::short_value(&old), schema::short_value(&new));
    super::overrides::set_path(table, doc.path, new)?;
    Ok(Some(change))
}

/// `v` scaled by `factor`, as the field can hold it. A float is multiplied. An integer is
/// multiplied and rounded, and moved one step in the factor's direction when rounding left
/// it unchanged (3 cycles: 2 and 4), so a perturbation always changes a non-zero value. A
/// power of two or a listed value moves to its neighbour in that direction, and an exponent
/// (`qp.timeout`: 4.096 µs × 2^n) by one, halving or doubling the time: the nearest values
/// the field can hold around ±20 %.
pub fn scaled(doc: &FieldDoc, v: &Value, factor: f64) -> Result<Value, ConfigError> {
    let up = factor > 1.0;
    let step = |n: i64| if up { n + 1 } else { (n - 1).max(0) };
    let out = match (doc.kind, v) {
        (Kind::Float { .. }, Value::Float(x)) => Value::Float(x * factor),
        (Kind::Float { .. }, Value::Integer(n)) => Value::Float(*n as f64 * factor),
        (_, Value::Integer(n)) if doc.unit == "exponent" => Value::Integer(step(*n)),
        (Kind::Pow2 { .. }, Value::Integer(n)) => {
            Value::Integer(if up { n * 2 } else { (n / 2).max(1) })
        }
        (Kind::IntSet(set), Value::Integer(n)) => {
            let u = *n as u64;
            let next = if up {
                set.iter().copied().filter(|&s| s > u).min()
            } else {
                set.iter().copied().filter(|&s| s < u).max()
            };
            Value::Integer(next.unwrap_or(u) as i64)
        }
        (Kind::UInt { .. }, Value::Integer(n)) => {
            let r = (*n as f64 * factor).round() as i64;
            Value::Integer(if r == *n && *n != 0 { step(*n) } else { r })
        }
        _ => {
            return Err(ConfigError::BadOverride {
                arg: doc.path.to_string(),
                reason: format!("{} cannot be scaled", schema::short_value(v)),
            })
        }
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(key: &str, v: Value, f: f64) -> Value {
        scaled(schema::field(key).unwrap(), &v, f).unwrap()
    }

    #[test]
    fn each_kind_moves_to_its_nearest_value() {
        assert_eq!(
            at("host.mem_latency_ns", Value::Float(80.0), 0.8),
            Value::Float(64.0)
        );
        assert_eq!(
            at("nic.wqes_per_fetch", Value::Integer(8), 1.2),
            Value::Integer(10)
        );
        assert_eq!(
            at("nic.sched_cycles", Value::Integer(4), 1.2),
            Value::Integer(5)
        );
        assert_eq!(
            at("nic.iso_bs_fifo_depth", Value::Integer(2), 0.8),
            Value::Integer(1)
        );
        assert_eq!(
            at("qp.timeout", Value::Integer(14), 0.8),
            Value::Integer(13)
        );
        assert_eq!(
            at("qp.timeout", Value::Integer(14), 1.2),
            Value::Integer(15)
        );
        assert_eq!(
            at("qp.pmtu", Value::Integer(1024), 1.2),
            Value::Integer(2048)
        );
        assert!(numeric_field("nic.prefetch").is_err() && numeric_field("nic.nope").is_err());
    }

    #[test]
    fn scale_in_changes_one_field_of_a_table() {
        let mut t = super::super::Config::default().to_table().unwrap();
        let doc = numeric_field("host.mem_latency_ns").unwrap();
        let change = scale_in(&mut t, doc, 1.2).unwrap().unwrap();
        assert_eq!(change.1, schema::short_value(&Value::Float(96.0)));
        let cfg = super::super::Config::from_table(t).unwrap();
        assert!((cfg.host.mem_latency_ns - 96.0).abs() < 1e-9);
    }
}
