//! `rnic sweep SWEEP.toml`: run a grid of points in parallel, write a CSV, a JSON file and
//! one line plot (PNG and SVG) per metric.
//!
//! ```toml
//! name = "qpc-scaling"                 # optional; default: the file name; names the outputs
//! title = "WRITE 64 B, FCFS vs csRNA"  # optional plot title
//! profile = "baseline"                 # base of every point (as in a scenario file)
//! seed = 1
//! [perf]
//! test = "write-bw"
//! size = 64
//! [set]
//! net.clients = 10
//!
//! [[axis]]                             # one or more; points are their cartesian product,
//! key = "nic.qpc_manager"              # first axis outermost
//! values = ["fcfs", "nonblocking"]
//! [[axis]]
//! key = "perf.qp"                      # "perf.<flag>", "profile", or any config field
//! values = [1, 10, 100, 1000, 10000]
//! ```
//!
//! Plot keys are top-level keys, so (TOML rule) they go above the first `[table]`:
//!
//! ```toml
//! x = "perf.qp"                        # x axis of the plots (default: the first axis)
//! series = "nic.qpc_manager"           # optional: the axis that labels the lines first
//! x_log = true                         # log-scale x (and y_log for y); false: linear;
//!                                      # absent: log when the data is positive and spans
//!                                      # more than 30x (plot::axis::AUTO_LOG_RATIO)
//! metrics = ["msg_rate_mops", "latency_us.avg"]   # one plot per metric (default:
//!                                      # msg_rate_mops, goodput_gbps, latency_us.avg)
//! ```
//!
//! A sweep with a `[workload]` table instead of `[perf]` runs the workload's flows at each
//! point as `rnic run` does and writes their flow-completion-time slowdowns ([`workload`]);
//! its axes vary `workload.<key>`, `profile` or config fields, never `perf.<option>`.
//!
//! `name` names the output files, so it may not contain a path separator or `..`
//! ([`name`]). Every point is resolved and checked, and every output checked writable, before
//! anything runs; grids of more than [`LARGE_POINTS`] points need `--allow-large` ([`Plan`]).
//! While the sweep runs, each finished point's row goes to `<name>.partial.csv` at once, so a
//! killed sweep keeps what finished; at the end the outputs are written in grid order, never
//! by completion order, so a sweep's CSV, JSON and plots are identical from run to run
//! whatever `--jobs` is (the JSON leaves out each run's `wall_seconds`, the one figure that
//! is not). Every point has a `status` and `reason`. `--shard I/N` runs every N-th point
//! ([`shard`]) and `rnic sweep merge` puts the shards back together into those same bytes
//! ([`merge`]).

mod csv_out;
pub mod merge;
pub mod name;
mod order;
mod partial;
pub mod plot;
pub mod result;
mod run;
pub mod shard;
pub mod workload;

pub use merge::merge;
pub use result::PointResult;
pub use run::{
    output_files, progress_wanted, run_sweep, FailedPoint, Plan, SweepOptions, SweepOutcome,
    LARGE_POINTS, PROGRESS_LINE_POINTS,
};
pub use shard::Shard;

use crate::config::schema::{self, check_value, closest, short_value, HintStyle};
use crate::config::{parse_toml_table, ConfigError, Override};
use crate::input::{check_keys, check_misplaced, opt_array, opt_bool, opt_str, opt_str_array};
use crate::perf::{PerfOptions, PerfSpec, PerfTest, RunInputs, PERF_FIELDS};
use crate::report::is_metric_name;
use crate::scenario::{file_stem, parse_base, read_input, Base, CliOverrides, BASE_KEYS};
use anyhow::Context as _;
use std::path::Path;
use toml::Value;

/// Most points a sweep may have.
pub const MAX_POINTS: usize = 1_000_000;

/// Metrics plotted when a sweep names none.
pub const DEFAULT_METRICS: &[&str] = &["msg_rate_mops", "goodput_gbps", "latency_us.avg"];

/// What an axis varies.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisTarget {
    /// The profile.
    Profile,
    /// A `[perf]` option (`perf.qp` → `qp`).
    Perf(String),
    /// A config field.
    Config(String),
    /// A `[workload]` key (`workload.load` → `load`).
    Workload(String),
}

/// One axis of the grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub target: AxisTarget,
    pub values: Vec<Value>,
}

/// A parsed sweep file.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub base: Base,
    pub axes: Vec<Axis>,
    /// Index of the x axis in `axes`.
    pub x: usize,
    /// Index of the series axis in `axes`.
    pub series: Option<usize>,
    /// `x_log`/`y_log`: true a log axis, false a linear one, absent the data decides
    /// ([`plot::Scale::Auto`]).
    pub x_scale: plot::Scale,
    pub y_scale: plot::Scale,
    pub metrics: Vec<String>,
    /// The `[workload]` table, as written: a workload sweep (none: a perf sweep).
    pub workload: Option<toml::Table>,
    /// The text the sweep was parsed from and where it came from (a shard carries both to
    /// `rnic sweep merge`, which parses them again).
    pub source: String,
    pub origin: String,
}

/// One point of the grid: one value per axis, in axis order.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Position in grid order (0-based).
    pub index: usize,
    pub values: Vec<Value>,
}

/// A scalar as text: strings unquoted, numbers in shortest round-trip form, floats far from
/// 1 in exponent form as the rest of the command line prints them (5e-324 was 324 digits in
/// the table and the CSV).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => rnic_model::words::short_num(*f),
        Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// A scalar axis value as a hashable key, equal exactly when the values are (`==` on
/// [`Value`]: 0.0 and -0.0 are one value), so duplicates are found in one pass over an axis,
/// however long. A NaN equals nothing and has no key.
#[derive(Debug, PartialEq, Eq, Hash)]
enum ValueKey {
    Str(String),
    Int(i64),
    /// The bits of a float, -0.0 read as 0.0.
    Float(u64),
    Bool(bool),
    Other(String),
}

impl ValueKey {
    fn of(v: &Value) -> Option<ValueKey> {
        Some(match v {
            Value::String(s) => ValueKey::Str(s.clone()),
            Value::Integer(i) => ValueKey::Int(*i),
            Value::Float(f) if f.is_nan() => return None,
            Value::Float(f) => ValueKey::Float(if *f == 0.0 { 0 } else { f.to_bits() }),
            Value::Boolean(b) => ValueKey::Bool(*b),
            other => ValueKey::Other(other.to_string()),
        })
    }
}

pub(super) fn axis_error(i: usize, key: &str, e: ConfigError) -> ConfigError {
    ConfigError::Inconsistent(format!("axis[{i}] (`{key}`): {e}"))
}

fn parse_axis(i: usize, v: &Value, workload: Option<&toml::Table>) -> Result<Axis, ConfigError> {
    let section = format!("axis[{i}]");
    let t = v.as_table().ok_or_else(|| ConfigError::WrongType {
        path: section.clone(),
        value: short_value(v),
        expected: "a table { key = \"...\", values = [...] }".into(),
        hint: String::new(),
    })?;
    check_misplaced(t, "axis", &["key", "values"])?;
    check_keys(t, &section, &["key", "values"])?;
    let key = opt_str(t, &section, "key")?.ok_or_else(|| {
        ConfigError::Inconsistent(format!(
            "`{section}.key` is missing: name a config field, `perf.<option>` or `profile`"
        ))
    })?;
    let values = opt_array(t, &section, "values")?.unwrap_or_default();
    if values.is_empty() {
        return Err(ConfigError::Inconsistent(format!(
            "`{section}.values` must be a non-empty array of values for `{key}`"
        )));
    }
    let target = if key == "profile" {
        AxisTarget::Profile
    } else if let Some(wk) = key.strip_prefix("workload.") {
        if workload.is_none() {
            return Err(ConfigError::Inconsistent(format!(
                "axis[{i}]: `{key}` varies the workload, but the sweep has no [workload] table \
                 (it runs [perf]); add one, or sweep a perf option or config field"
            )));
        }
        workload::check_axis_key(wk).map_err(|e| axis_error(i, &key, e))?;
        AxisTarget::Workload(wk.to_string())
    } else if let Some(opt) = key.strip_prefix("perf.") {
        if workload.is_some() {
            return Err(ConfigError::Inconsistent(format!(
                "axis[{i}]: `{key}` is a [perf] option, but this sweep runs a [workload] \
                 (its flows' sizes come from workload.cdf, one message each); sweep \
                 workload.<key>, `profile` or a config field instead"
            )));
        }
        if !PERF_FIELDS.iter().any(|d| d.path == key) {
            return Err(axis_error(
                i,
                &key,
                schema::unknown_key(&key, "perf.", PERF_FIELDS),
            ));
        }
        AxisTarget::Perf(opt.to_string())
    } else if schema::field(&key).is_some() {
        AxisTarget::Config(key.clone())
    } else {
        let mut all: Vec<&str> = vec!["profile"];
        all.extend(PERF_FIELDS.iter().map(|d| d.path));
        all.extend(schema::FIELDS.iter().map(|d| d.path));
        let hint = closest(&key, &all)
            .map(|c| format!("did you mean `{c}`? "))
            .unwrap_or_default();
        return Err(ConfigError::Inconsistent(format!(
            "axis[{i}]: unknown key `{key}`; {hint}an axis varies `profile`, a perf option \
             (perf.size, perf.qp, perf.iters, perf.tx_depth, perf.mtu, perf.test, ...) or a \
             config field (see `rnic config show`)"
        )));
    };
    // Check each value against the field it sets; a value is a duplicate when the field
    // reads it the same (64 and 64.0 are one size, 1 and 1.0 one clock).
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    for (j, v) in values.iter().enumerate() {
        if matches!(v, Value::Table(_) | Value::Array(_)) {
            return Err(ConfigError::WrongType {
                path: format!("{section}.values[{j}]"),
                value: short_value(v),
                expected: "a number, string or boolean".into(),
                hint: String::new(),
            });
        }
        let mut probe = v.clone();
        match &target {
            AxisTarget::Profile => {
                let name = v.as_str().ok_or_else(|| ConfigError::WrongType {
                    path: format!("{section}.values[{j}]"),
                    value: short_value(v),
                    expected: "a profile name, a string such as \"baseline\"".into(),
                    hint: format!(" (axis[{i}] sweeps `profile`)"),
                })?;
                crate::config::profile(name).map_err(|e| axis_error(i, &key, e))?;
            }
            AxisTarget::Perf(_) => {
                let doc = PERF_FIELDS.iter().find(|d| d.path == key);
                if let Some(doc) = doc {
                    check_value(doc, &mut probe, HintStyle::None)
                        .map_err(|e| axis_error(i, &key, e))?;
                }
            }
            AxisTarget::Config(path) => match schema::field(path) {
                // `"none"` (or `""`) unsets an optional field, as in `[set]` and `--set`:
                // one value, so listing both is a duplicate.
                Some(doc) if doc.optional && v.as_str().is_some_and(schema::unsets_optional) => {
                    probe = Value::String("none".into());
                }
                Some(doc) => {
                    check_value(doc, &mut probe, HintStyle::None)
                        .map_err(|e| axis_error(i, &key, e))?;
                }
                None => {}
            },
            // Checked once every axis is known: another axis may give a key this value
            // needs (workload::check_values).
            AxisTarget::Workload(_) => {}
        }
        if ValueKey::of(&probe).is_some_and(|k| !seen.insert(k)) {
            return Err(ConfigError::Inconsistent(format!(
                "`{section}.values` lists {} twice",
                short_value(v)
            )));
        }
    }
    Ok(Axis {
        key,
        target,
        values,
    })
}

/// Refuses a grid of more than [`MAX_POINTS`] points from the axes' raw value arrays, before
/// any value is checked or any point made: an axis of ten million values is refused at
/// once rather than checked value by value first.
fn check_grid_size(raw_axes: &[Value]) -> Result<(), ConfigError> {
    let values = |a: &Value| {
        a.get("values")
            .and_then(Value::as_array)
            .map_or(1, |v| v.len())
    };
    let count = raw_axes
        .iter()
        .try_fold(1usize, |acc, a| acc.checked_mul(values(a)))
        .filter(|&n| n <= MAX_POINTS);
    if count.is_none() {
        let sizes: Vec<String> = raw_axes.iter().map(|a| values(a).to_string()).collect();
        return Err(ConfigError::Inconsistent(format!(
            "the grid has more than {MAX_POINTS} points ({} values), the most a sweep may \
             have, even with --allow-large; split the sweep",
            sizes.join(" × ")
        )));
    }
    Ok(())
}

/// `[perf]` options that only choose what `rnic perf`'s table prints.
const TABLE_ONLY_PERF_KEYS: &[&str] = &[
    "report_gbits",
    "stats",
    "report_both",
    "report_histogram",
    "report_unsorted",
];

/// Keys of a sweep file.
pub fn sweep_keys() -> Vec<&'static str> {
    let mut k = BASE_KEYS.to_vec();
    k.extend([
        "title", "axis", "x", "series", "x_log", "y_log", "metrics", "workload",
    ]);
    k
}

/// Parses sweep text; `origin` names it in errors and gives the default name. Every axis
/// value is checked against its field; then every grid point is resolved by
/// [`Sweep::resolve_points`] before running.
pub fn parse_sweep(src: &str, origin: &str) -> Result<Sweep, ConfigError> {
    let t = parse_toml_table(src, origin)?;
    check_keys(&t, "", &sweep_keys())?;
    let base = parse_base(&t)?;
    let raw_axes = opt_array(&t, "", "axis")?.unwrap_or_default();
    if raw_axes.is_empty() {
        return Err(ConfigError::Inconsistent(
            "a sweep needs at least one [[axis]] with `key` and `values`".into(),
        ));
    }
    check_grid_size(&raw_axes)?;
    let workload = parse_workload_table(&t, &base)?;
    let axes = raw_axes
        .iter()
        .enumerate()
        .map(|(i, v)| parse_axis(i, v, workload.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(raw) = &workload {
        workload::check_values(raw, &axes)?;
    }
    check_no_table_only_option(&axes, &base)?;
    check_tx_depth_meets_a_bandwidth_test(&axes, &base)?;
    check_axes_distinct_and_free(&axes, &base, workload.as_ref())?;
    let (x, series) = plot_axes(&t, &axes)?;
    let (x_scale, y_scale) = plot_scales(&t, &axes[x])?;
    let metrics = parse_metrics(&t, workload.is_some())?;
    name::check_metric_files(&metrics)?;
    Ok(Sweep {
        name: sweep_name(&t, origin)?,
        title: opt_str(&t, "", "title")?,
        description: opt_str(&t, "", "description")?,
        base,
        axes,
        x,
        series,
        x_scale,
        y_scale,
        metrics,
        workload,
        source: src.to_string(),
        origin: origin.to_string(),
    })
}

/// The `[workload]` table as written, checked as a scenario's is; a sweep runs either it
/// or `[perf]`, not both.
fn parse_workload_table(t: &toml::Table, base: &Base) -> Result<Option<toml::Table>, ConfigError> {
    let Some(workload) = crate::input::opt_table(t, "", "workload")? else {
        return Ok(None);
    };
    if let Some(opt) = base.perf.keys().next() {
        return Err(ConfigError::Inconsistent(format!(
            "`perf.{opt}`: the sweep has a [workload] table, whose flows take their sizes \
             from workload.cdf, one message each; a sweep runs [perf] or [workload], not \
             both: remove the [perf] table"
        )));
    }
    Ok(Some(workload))
}

/// Refuses what only `rnic perf`'s table prints, as an axis or in `[perf]`: a sweep writes
/// no table, and its CSV and JSON are the same whatever these say, so each would be ignored
/// in silence.
fn check_no_table_only_option(axes: &[Axis], base: &Base) -> Result<(), ConfigError> {
    for opt in TABLE_ONLY_PERF_KEYS {
        let axis = axes
            .iter()
            .position(|a| matches!(&a.target, AxisTarget::Perf(o) if o == opt));
        let at = match axis {
            Some(i) => format!("axis[{i}]"),
            None if base.perf.contains_key(*opt) => "[perf]".to_string(),
            None => continue,
        };
        return Err(ConfigError::Inconsistent(format!(
            "{at}: `perf.{opt}` chooses what `rnic perf`'s table prints, but a sweep writes \
             no table: its CSV and JSON hold every point's figures (bw_avg_mb_s in MiB/s, \
             goodput_gbps in Gb/s, the counters in `stats`, each direction of -b in \
             `directions`, the latency percentiles) whatever it says; remove it"
        )));
    }
    Ok(())
}

/// Where a sweep gives `perf.tx_depth` (`axis[i]` or `[perf]`), and the latency tests among
/// its points' tests (`perf.test` in `[perf]` or an axis), with whether every test is one.
fn tx_depth_on_latency_tests(axes: &[Axis], base: &Base) -> Option<(String, Vec<String>, bool)> {
    let axis_of = |opt: &str| {
        axes.iter()
            .position(|a| matches!(&a.target, AxisTarget::Perf(o) if o == opt))
    };
    let at = match axis_of("tx_depth") {
        Some(i) => format!("axis[{i}]"),
        None if base.perf.contains_key("tx_depth") => "[perf]".to_string(),
        None => return None,
    };
    let tests: Vec<&Value> = match axis_of("test") {
        Some(i) => axes[i].values.iter().collect(),
        None => base.perf.get("test").into_iter().collect(),
    };
    let tests: Vec<PerfTest> = tests
        .into_iter()
        .filter_map(|v| v.as_str().and_then(PerfTest::from_name))
        .collect();
    let latency: Vec<String> = tests
        .iter()
        .filter(|t| t.is_latency())
        .map(|t| t.name().to_string())
        .collect();
    let all = !tests.is_empty() && latency.len() == tests.len();
    (!latency.is_empty()).then_some((at, latency, all))
}

/// A latency test keeps one operation in flight: `perf.tx_depth` changes none of its
/// figures. A sweep whose every point is a latency test is refused (its points were the
/// same whatever -t said, in silence); a sweep that also runs bandwidth tests gets a note
/// ([`Sweep::notes`]).
fn check_tx_depth_meets_a_bandwidth_test(axes: &[Axis], base: &Base) -> Result<(), ConfigError> {
    match tx_depth_on_latency_tests(axes, base) {
        Some((at, latency, true)) => Err(ConfigError::Inconsistent(format!(
            "{at}: `perf.tx_depth` (-t) has no effect on {}: a latency test keeps one \
             operation in flight, so every point's figures are the same whatever it says; \
             remove it, or sweep a bandwidth test",
            latency.join(", ")
        ))),
        _ => Ok(()),
    }
}

impl Sweep {
    /// Notes on standard error before the points run, each once for the whole sweep.
    /// The RC retry settings the sweep gives (by an axis, `[perf]` or `[set]`), named as
    /// `rnic perf`'s notes name them: over UC or UD they change nothing. Each with whether it
    /// is the timeout, which is a UC/UD ping-pong's give-up time
    /// ([`crate::report::text::retry_no_effect_note`]).
    pub fn retry_settings(&self) -> Vec<(&'static str, bool)> {
        let given = |key: &str| {
            self.axes.iter().any(|a| a.key == key) || self.base.set.iter().any(|o| o.key == key)
        };
        let timeout = given("qp.timeout")
            || given("perf.qp_timeout")
            || self.base.perf.contains_key("qp_timeout");
        let retry = given("qp.retry_cnt");
        [
            (
                timeout,
                ("-u/--qp-timeout (perf.qp_timeout, qp.timeout)", true),
            ),
            (retry, ("--retry_count (qp.retry_cnt)", false)),
        ]
        .into_iter()
        .filter_map(|(given, name)| given.then_some(name))
        .collect()
    }

    pub fn notes(&self) -> Vec<String> {
        match tx_depth_on_latency_tests(&self.axes, &self.base) {
            Some((at, latency, false)) => vec![format!(
                "{at}: `perf.tx_depth` (-t) has no effect on the {} points: a latency test \
                 keeps one operation in flight (the bandwidth tests' points take it)",
                latency.join(", ")
            )],
            _ => Vec::new(),
        }
    }
}

/// Refuses an axis given twice, and an axis over a value the file also fixes (`profile`,
/// `[perf]` or `[set]`): the axis would replace it at every point.
fn check_axes_distinct_and_free(
    axes: &[Axis],
    base: &Base,
    workload: Option<&toml::Table>,
) -> Result<(), ConfigError> {
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.key == a.key) {
            return Err(ConfigError::Inconsistent(format!(
                "axis[{i}]: `{}` is already an axis",
                a.key
            )));
        }
        let fixed = match &a.target {
            AxisTarget::Profile => base.profile.as_ref().map(|_| "`profile`".to_string()),
            AxisTarget::Perf(opt) => base
                .perf
                .contains_key(opt.as_str())
                .then(|| format!("`perf.{opt}` in [perf]"))
                .or_else(|| set_field_of_perf_axis(a, opt, base)),
            AxisTarget::Config(path) => base
                .set
                .iter()
                .any(|o| o.key == *path)
                .then(|| format!("`{path}` in [set]"))
                .or_else(|| perf_flag_setting(path, &base.perf))
                .or_else(|| file_seed(path, base)),
            AxisTarget::Workload(key) => workload
                .is_some_and(|w| w.contains_key(key.as_str()))
                .then(|| format!("`workload.{key}` in [workload]")),
        };
        if let Some(fixed) = fixed {
            return Err(ConfigError::Inconsistent(format!(
                "axis[{i}] sweeps `{}`, which the file also sets ({fixed}); every point would \
                 take the axis value and ignore that one: remove one of them",
                a.key
            )));
        }
    }
    Ok(())
}

/// The `[perf]` key among `perf` that sets config field `path` (`duration` sets
/// `sim.duration_us`): an axis over the field clashed with it at every point, refused as set
/// twice "by --set (or a file's [set])", naming neither the axis nor the key.
fn perf_flag_setting(path: &str, perf: &toml::Table) -> Option<String> {
    let options = PerfOptions::from_table(perf).ok()?;
    options
        .config_overrides()
        .into_iter()
        .find(|(_, o)| o.key == path)
        .map(|(flag, _)| format!("{flag} in [perf], which sets it"))
}

/// The `[set]` field that perf option `opt`, swept by `axis`, sets (`mtu` sets `qp.pmtu`),
/// when the file's `[set]` gives it too.
fn set_field_of_perf_axis(axis: &Axis, opt: &str, base: &Base) -> Option<String> {
    let first = axis.values.first()?;
    let one = toml::Table::from_iter([(opt.to_string(), first.clone())]);
    let options = PerfOptions::from_table(&one).ok()?;
    options
        .config_overrides()
        .into_iter()
        .find(|(_, o)| base.set.iter().any(|s| s.key == o.key))
        .map(|(_, o)| format!("`{}` in [set], the field it sets", o.key))
}

/// The file's `seed` key, when `path` is the field it sets (`sim.seed`): an axis over it
/// would replace the seed at every point (it was refused as set twice "by --seed and by
/// --set", naming neither the key nor the axis).
fn file_seed(path: &str, base: &Base) -> Option<String> {
    base.seed
        .filter(|_| path == SEED_FIELD)
        .map(|s| format!("`seed = {s}`"))
}

/// The config field that a file's `seed` key and `--seed` set.
const SEED_FIELD: &str = "sim.seed";

/// The plots' x axis (`x`, the first axis by default) and series axis (`series`, none by
/// default), as axis indices; each must name an axis, and not the same one.
fn plot_axes(t: &toml::Table, axes: &[Axis]) -> Result<(usize, Option<usize>), ConfigError> {
    let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
    let find_axis = |field: &str, name: String| -> Result<usize, ConfigError> {
        keys.iter().position(|k| *k == name).ok_or_else(|| {
            ConfigError::Inconsistent(format!(
                "`{field}` = \"{name}\" is not an axis; axes: {}",
                keys.join(", ")
            ))
        })
    };
    let x = match opt_str(t, "", "x")? {
        Some(name) => find_axis("x", name)?,
        None => 0,
    };
    let series = match opt_str(t, "", "series")? {
        Some(name) => {
            let s = find_axis("series", name)?;
            if s == x {
                return Err(ConfigError::Inconsistent(format!(
                    "`series` and `x` are both `{}`; the series axis labels the lines",
                    keys[x]
                )));
            }
            Some(s)
        }
        None => None,
    };
    Ok((x, series))
}

/// The plots' x and y scales (`x_log`, `y_log`; automatic when not given). A log x axis
/// needs positive numbers on `x_axis`.
fn plot_scales(t: &toml::Table, x_axis: &Axis) -> Result<(plot::Scale, plot::Scale), ConfigError> {
    let scale = |log: Option<bool>| match log {
        Some(true) => plot::Scale::Log,
        Some(false) => plot::Scale::Linear,
        None => plot::Scale::Auto,
    };
    let x_scale = scale(opt_bool(t, "", "x_log")?);
    let y_scale = scale(opt_bool(t, "", "y_log")?);
    if x_scale == plot::Scale::Log {
        let bad = x_axis.values.iter().find(|v| {
            !matches!(v, Value::Integer(i) if *i > 0) && !matches!(v, Value::Float(f) if *f > 0.0)
        });
        if let Some(v) = bad {
            return Err(ConfigError::Inconsistent(format!(
                "`x_log = true` needs positive numbers on the x axis `{}`, but it has {}",
                x_axis.key,
                short_value(v)
            )));
        }
    }
    Ok((x_scale, y_scale))
}

/// `metrics` ([`DEFAULT_METRICS`], or [`workload::DEFAULT_METRICS`] for a workload sweep,
/// when not given): at least one, each a result metric.
fn parse_metrics(t: &toml::Table, workload: bool) -> Result<Vec<String>, ConfigError> {
    let defaults = if workload {
        workload::DEFAULT_METRICS
    } else {
        DEFAULT_METRICS
    };
    let metrics = opt_str_array(t, "", "metrics")?
        .unwrap_or_else(|| defaults.iter().map(|s| s.to_string()).collect());
    if metrics.is_empty() {
        return Err(ConfigError::Inconsistent(format!(
            "`metrics` is empty: name at least one, e.g. [\"{}\"]",
            defaults[0]
        )));
    }
    if workload {
        return check_workload_metrics(&metrics);
    }
    for (i, m) in metrics.iter().enumerate() {
        if !is_metric_name(m) {
            let names = crate::report::fixed_metric_names();
            let mut candidates = names.clone();
            candidates.extend(crate::report::map_metric_names());
            let refs: Vec<&str> = candidates.iter().map(|s| s.as_str()).collect();
            let hint = closest(m, &refs)
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return Err(ConfigError::Inconsistent(format!(
                "`metrics[{i}]` = \"{m}\" is not a result metric; {hint}metrics: {}, \
                 caches.<name>.hits and caches.<name>.misses of the caches {}, \
                 onchip_bytes.<name> of the on-chip structures {} (each present when the \
                 configuration has it), -D runs' window_open_us and window_settled, UC/UD \
                 runs' unreliable.<count> ({})",
                names.join(", "),
                crate::report::CACHE_NAMES.join(", "),
                rnic_model::nic::onchip::ONCHIP_STRUCTURES.join(", "),
                rnic_model::result::UnreliableResult::default()
                    .counts()
                    .map(|(n, _)| n)
                    .join(", ")
            )));
        }
    }
    Ok(metrics)
}

/// Each of `metrics` a workload point's metric.
fn check_workload_metrics(metrics: &[String]) -> Result<Vec<String>, ConfigError> {
    let names = workload::metric_names();
    for (i, m) in metrics.iter().enumerate() {
        if !names.contains(m) {
            let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let hint = closest(m, &refs)
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return Err(ConfigError::Inconsistent(format!(
                "`metrics[{i}]` = \"{m}\" is not a metric of a workload sweep; {hint}metrics: {}",
                names.join(", ")
            )));
        }
    }
    Ok(metrics.to_vec())
}

/// The sweep's name: `name`, or the file's stem; either must make good file names.
fn sweep_name(t: &toml::Table, origin: &str) -> Result<String, ConfigError> {
    match opt_str(t, "", "name")? {
        Some(n) => {
            name::check_name(&n, true, origin)?;
            Ok(n)
        }
        None => {
            let n = file_stem(origin);
            name::check_name(&n, false, origin)?;
            Ok(n)
        }
    }
}

/// Reads and parses a sweep file.
pub fn load_sweep(path: &Path) -> anyhow::Result<Sweep> {
    let src = read_input(path, "a sweep file")?;
    let origin = path.display().to_string();
    parse_sweep(&src, &origin).with_context(|| format!("in sweep file {origin}"))
}

/// What a point runs.
#[derive(Debug, Clone)]
pub enum Job {
    /// A perftest-style run.
    Perf(PerfSpec),
    /// A workload's flows, as `rnic run` runs them.
    Workload(Box<crate::flows_run::FlowsRun>),
}

/// A point ready to run.
#[derive(Debug, Clone)]
pub struct ResolvedPoint {
    pub point: Point,
    pub profile: String,
    /// The config the point runs (a workload's with `host.cores` raised to hold its flows).
    pub config: crate::config::Config,
    pub job: Job,
}

impl ResolvedPoint {
    /// The perf run's spec, if the point runs one.
    pub fn perf_spec(&self) -> Option<&PerfSpec> {
        match &self.job {
            Job::Perf(spec) => Some(spec),
            Job::Workload(_) => None,
        }
    }
}

impl Sweep {
    /// Index in `axes` of the axis varying `key`.
    pub fn axis_index(&self, key: &str) -> Option<usize> {
        self.axes.iter().position(|a| a.key == key)
    }

    /// The axis varying `key`.
    pub fn axis(&self, key: &str) -> Option<&Axis> {
        self.axis_index(key).map(|i| &self.axes[i])
    }

    /// Number of points of the grid (at most [`MAX_POINTS`], checked when parsed).
    pub fn point_count(&self) -> usize {
        self.axes
            .iter()
            .try_fold(1usize, |acc, a| acc.checked_mul(a.values.len()))
            .unwrap_or(usize::MAX)
    }

    /// The grid in order: the first axis outermost, the last innermost.
    pub fn points(&self) -> Vec<Point> {
        let mut points = vec![Vec::new()];
        for axis in &self.axes {
            let mut next = Vec::with_capacity(points.len() * axis.values.len());
            for p in &points {
                for v in &axis.values {
                    let mut q: Vec<Value> = p.clone();
                    q.push(v.clone());
                    next.push(q);
                }
            }
            points = next;
        }
        points
            .into_iter()
            .enumerate()
            .map(|(index, values)| Point { index, values })
            .collect()
    }

    /// `k=v, k=v` for a point.
    pub fn describe(&self, p: &Point) -> String {
        self.axes
            .iter()
            .zip(&p.values)
            .map(|(a, v)| format!("{}={}", a.key, value_text(v)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The run inputs of a point: base, then command-line overrides, then the axis values.
    pub fn inputs(&self, p: &Point, cli: &CliOverrides) -> Result<RunInputs, ConfigError> {
        let mut inputs = self.base.inputs(cli)?;
        let mut perf = self.base.perf.clone();
        for (axis, v) in self.axes.iter().zip(&p.values) {
            match &axis.target {
                AxisTarget::Profile => inputs.profile = value_text(v),
                AxisTarget::Perf(opt) => {
                    perf.insert(opt.clone(), v.clone());
                }
                AxisTarget::Config(path) => inputs.sets.push(Override::new(path, v.clone())),
                AxisTarget::Workload(_) => {}
            }
        }
        inputs.perf = PerfOptions::from_table(&perf)?;
        Ok(inputs)
    }

    /// The `[workload]` of a point (its axis values applied), for a workload sweep.
    pub fn workload_options(
        &self,
        p: &Point,
    ) -> Result<Option<crate::traffic::WorkloadOptions>, ConfigError> {
        let Some(raw) = &self.workload else {
            return Ok(None);
        };
        let sets: Vec<(&str, &Value)> = self
            .axes
            .iter()
            .zip(&p.values)
            .filter_map(|(a, v)| match &a.target {
                AxisTarget::Workload(k) => Some((k.as_str(), v)),
                _ => None,
            })
            .collect();
        workload::options_with(raw, &sets).map(Some)
    }

    /// A point's config and job.
    fn resolve_point(
        &self,
        p: &Point,
        cli: &CliOverrides,
    ) -> anyhow::Result<(crate::config::Config, Job, String)> {
        let inputs = self.inputs(p, cli)?;
        if let Some(w) = self.workload_options(p)? {
            let run = crate::flows_run::FlowsRun::prepare(&inputs, &[], Some(&w))?;
            return Ok((
                run.cfg.clone(),
                Job::Workload(Box::new(run)),
                inputs.profile,
            ));
        }
        let (config, spec) = inputs.resolve()?;
        one_row_per_point(&spec)?;
        Ok((config, Job::Perf(spec), inputs.profile))
    }

    /// Refuses a command-line flag that sets what an axis varies (`--profile` beside a
    /// `profile` axis, `--set FIELD=...` or `--seed` beside an axis over that field): every
    /// point would take the axis value and drop the flag's, as the same clash in the file is
    /// refused ([`check_axes_distinct_and_free`]). `--set` and `--profile` were ignored in
    /// silence, `--seed` refused as set twice "by --set".
    pub fn check_overrides(&self, cli: &CliOverrides) -> Result<(), ConfigError> {
        for (i, axis) in self.axes.iter().enumerate() {
            if let Some(flag) = flag_setting(&axis.target, cli) {
                return Err(ConfigError::Inconsistent(format!(
                    "{flag} sets `{}`, which axis[{i}] of the sweep file sweeps; every point \
                     would take the axis value and ignore the flag: remove the flag, or the \
                     axis",
                    axis.key
                )));
            }
        }
        Ok(())
    }

    /// Resolves every point (config and spec), so a bad combination fails before any run.
    pub fn resolve_points(&self, cli: &CliOverrides) -> anyhow::Result<Vec<ResolvedPoint>> {
        self.check_overrides(cli)?;
        let points = self.points();
        let total = points.len();
        let mut out = Vec::with_capacity(total);
        for p in points {
            let (config, job, profile) = self.resolve_point(&p, cli).with_context(|| {
                format!(
                    "sweep point {} of {total} ({})",
                    p.index + 1,
                    self.describe(&p)
                )
            })?;
            out.push(ResolvedPoint {
                point: p,
                profile,
                config,
                job,
            });
        }
        Ok(out)
    }
}

/// The command-line flag, as given, that sets what `target` varies, if any.
fn flag_setting(target: &AxisTarget, cli: &CliOverrides) -> Option<String> {
    match target {
        AxisTarget::Profile => cli.profile.as_ref().map(|p| format!("--profile {p}")),
        AxisTarget::Config(path) => cli
            .set
            .iter()
            .find(|o| o.key == *path)
            .map(|o| format!("--set {path}={}", o.value))
            .or_else(|| {
                cli.seed
                    .filter(|_| path == SEED_FIELD)
                    .map(|s| format!("--seed {s}"))
            }),
        AxisTarget::Perf(_) | AxisTarget::Workload(_) => None,
    }
}

/// A point is one row of the CSV and one result in the JSON. `-a` runs every size from 2 B
/// to 8 MB, whose figures one row cannot hold (the row mixed the last size's rates and
/// operations with every size's simulated time), so it is refused with the axis that runs
/// the sizes as points of their own.
fn one_row_per_point(spec: &crate::perf::PerfSpec) -> anyhow::Result<()> {
    if let [first, .., last] = spec.sizes[..] {
        anyhow::bail!(crate::UsageError(format!(
            "`perf.all` = true (-a): a sweep point is one row, but -a runs every size from \
             {first} B to {last} B, which one row cannot hold; sweep the sizes instead, an \
             [[axis]] with key = \"perf.size\" and the sizes as its values"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod shard_tests;
