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
//! x_log = true                         # log-scale x (and y_log for y)
//! metrics = ["msg_rate_mops", "latency.avg"]   # one plot per metric (default:
//!                                      # msg_rate_mops, goodput_gbps, latency.avg)
//! ```
//!
//! Every point is resolved and checked before anything runs. Outputs are ordered by grid
//! position, never by completion order, so a sweep's CSV, JSON (except `wall_seconds`) and
//! plots are identical from run to run whatever `--jobs` is.

mod csv_out;
pub mod plot;

use crate::config::schema::{self, check_value, closest, short_value, HintStyle};
use crate::config::{parse_toml_table, ConfigError, Override};
use crate::input::{check_keys, check_misplaced, opt_array, opt_bool, opt_str, opt_str_array};
use crate::perf::{execute, PerfOptions, PerfRunner, PerfSpec, RunInputs, PERF_FIELDS};
use crate::report::{is_metric_name, json::write_json, PerfResult};
use crate::scenario::{file_stem, parse_base, read_input, Base, CliOverrides, BASE_KEYS};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use toml::Value;

/// Most points a sweep may have.
pub const MAX_POINTS: usize = 1_000_000;

/// Metrics plotted when a sweep names none.
pub const DEFAULT_METRICS: &[&str] = &["msg_rate_mops", "goodput_gbps", "latency.avg"];

/// What an axis varies.
#[derive(Debug, Clone, PartialEq)]
pub enum AxisTarget {
    /// The profile.
    Profile,
    /// A `[perf]` option (`perf.qp` → `qp`).
    Perf(String),
    /// A config field.
    Config(String),
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
    pub x_log: bool,
    pub y_log: bool,
    pub metrics: Vec<String>,
}

/// One point of the grid: one value per axis, in axis order.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Position in grid order (0-based).
    pub index: usize,
    pub values: Vec<Value>,
}

/// A scalar as text: strings unquoted, numbers in shortest round-trip form.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Integer(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Boolean(b) => b.to_string(),
        other => other.to_string(),
    }
}

fn axis_error(i: usize, key: &str, e: ConfigError) -> ConfigError {
    ConfigError::Inconsistent(format!("axis[{i}] (`{key}`): {e}"))
}

fn parse_axis(i: usize, v: &Value) -> Result<Axis, ConfigError> {
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
    } else if let Some(opt) = key.strip_prefix("perf.") {
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
    // Check each value against the field it sets.
    let mut seen: Vec<&Value> = Vec::new();
    for (j, v) in values.iter().enumerate() {
        if matches!(v, Value::Table(_) | Value::Array(_)) {
            return Err(ConfigError::WrongType {
                path: format!("{section}.values[{j}]"),
                value: short_value(v),
                expected: "a number, string or boolean".into(),
                hint: String::new(),
            });
        }
        if seen.contains(&v) {
            return Err(ConfigError::Inconsistent(format!(
                "`{section}.values` lists {} twice",
                short_value(v)
            )));
        }
        seen.push(v);
        let mut probe = v.clone();
        match &target {
            AxisTarget::Profile => {
                let name = v.as_str().unwrap_or_default();
                crate::config::profile(name).map_err(|e| axis_error(i, &key, e))?;
            }
            AxisTarget::Perf(_) => {
                let doc = PERF_FIELDS.iter().find(|d| d.path == key);
                if let Some(doc) = doc {
                    check_value(doc, &mut probe, HintStyle::None)
                        .map_err(|e| axis_error(i, &key, e))?;
                }
            }
            AxisTarget::Config(path) => {
                if let Some(doc) = schema::field(path) {
                    check_value(doc, &mut probe, HintStyle::None)
                        .map_err(|e| axis_error(i, &key, e))?;
                }
            }
        }
    }
    Ok(Axis {
        key,
        target,
        values,
    })
}

/// Keys of a sweep file.
pub fn sweep_keys() -> Vec<&'static str> {
    let mut k = BASE_KEYS.to_vec();
    k.extend(["title", "axis", "x", "series", "x_log", "y_log", "metrics"]);
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
    let axes = raw_axes
        .iter()
        .enumerate()
        .map(|(i, v)| parse_axis(i, v))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.key == a.key) {
            return Err(ConfigError::Inconsistent(format!(
                "axis[{i}]: `{}` is already an axis",
                a.key
            )));
        }
    }
    let keys: Vec<&str> = axes.iter().map(|a| a.key.as_str()).collect();
    let find_axis = |field: &str, name: String| -> Result<usize, ConfigError> {
        keys.iter().position(|k| *k == name).ok_or_else(|| {
            ConfigError::Inconsistent(format!(
                "`{field}` = \"{name}\" is not an axis; axes: {}",
                keys.join(", ")
            ))
        })
    };
    let x = match opt_str(&t, "", "x")? {
        Some(name) => find_axis("x", name)?,
        None => 0,
    };
    let series = match opt_str(&t, "", "series")? {
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
    let x_log = opt_bool(&t, "", "x_log")?.unwrap_or(false);
    let y_log = opt_bool(&t, "", "y_log")?.unwrap_or(false);
    if x_log {
        let bad = axes[x].values.iter().find(|v| {
            !matches!(v, Value::Integer(i) if *i > 0) && !matches!(v, Value::Float(f) if *f > 0.0)
        });
        if let Some(v) = bad {
            return Err(ConfigError::Inconsistent(format!(
                "`x_log = true` needs positive numbers on the x axis `{}`, but it has {}",
                keys[x],
                short_value(v)
            )));
        }
    }
    let metrics = opt_str_array(&t, "", "metrics")?
        .unwrap_or_else(|| DEFAULT_METRICS.iter().map(|s| s.to_string()).collect());
    if metrics.is_empty() {
        return Err(ConfigError::Inconsistent(
            "`metrics` is empty: name at least one, e.g. [\"msg_rate_mops\"]".into(),
        ));
    }
    for (i, m) in metrics.iter().enumerate() {
        if !is_metric_name(m) {
            let names = crate::report::fixed_metric_names();
            let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            let hint = closest(m, &refs)
                .map(|c| format!("did you mean `{c}`? "))
                .unwrap_or_default();
            return Err(ConfigError::Inconsistent(format!(
                "`metrics[{i}]` = \"{m}\" is not a result metric; {hint}metrics: {}, \
                 caches.<name>.hits, caches.<name>.misses, onchip_bytes.<name>",
                names.join(", ")
            )));
        }
    }
    let count = axes
        .iter()
        .try_fold(1usize, |acc, a| acc.checked_mul(a.values.len()))
        .filter(|&n| n <= MAX_POINTS);
    if count.is_none() {
        return Err(ConfigError::Inconsistent(format!(
            "the grid has more than {MAX_POINTS} points; split the sweep"
        )));
    }
    Ok(Sweep {
        name: opt_str(&t, "", "name")?.unwrap_or_else(|| file_stem(origin)),
        title: opt_str(&t, "", "title")?,
        description: opt_str(&t, "", "description")?,
        base,
        axes,
        x,
        series,
        x_log,
        y_log,
        metrics,
    })
}

/// Reads and parses a sweep file.
pub fn load_sweep(path: &Path) -> anyhow::Result<Sweep> {
    let src = read_input(path)?;
    let origin = path.display().to_string();
    parse_sweep(&src, &origin).with_context(|| format!("in sweep file {origin}"))
}

/// A point ready to run.
#[derive(Debug, Clone)]
pub struct ResolvedPoint {
    pub point: Point,
    pub profile: String,
    pub config: crate::config::Config,
    pub spec: PerfSpec,
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
            }
        }
        inputs.perf = PerfOptions::from_table(&perf)?;
        Ok(inputs)
    }

    /// Resolves every point (config and spec), so a bad combination fails before any run.
    pub fn resolve_points(&self, cli: &CliOverrides) -> anyhow::Result<Vec<ResolvedPoint>> {
        let points = self.points();
        let total = points.len();
        let mut out = Vec::with_capacity(total);
        for p in points {
            let resolved = self
                .inputs(&p, cli)
                .and_then(|inputs| Ok((inputs.resolve()?, inputs.profile)));
            let ((config, spec), profile) =
                resolved.map_err(anyhow::Error::from).with_context(|| {
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
                spec,
            });
        }
        Ok(out)
    }
}

/// How to run a sweep.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Worker threads; 0 = one per CPU.
    pub jobs: usize,
    /// Output directory.
    pub out_dir: PathBuf,
    /// Show a progress bar (on stderr).
    pub progress: bool,
}

/// What a sweep wrote.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    pub points: usize,
    pub csv: PathBuf,
    pub json: PathBuf,
    pub plots: Vec<PathBuf>,
    pub results: Vec<(Point, PerfResult)>,
    /// Points whose payload failed verification (`k=v, ...`), in grid order.
    pub unverified: Vec<String>,
}

/// Runs every point (in parallel) and writes `<out>/<name>.csv`, `<out>/<name>.json` and
/// `<out>/<name>-<metric>.{png,svg}`.
pub fn run_sweep(
    sweep: &Sweep,
    cli: &CliOverrides,
    runner: &dyn PerfRunner,
    opts: &SweepOptions,
) -> anyhow::Result<SweepOutcome> {
    use rayon::prelude::*;
    let points = sweep.resolve_points(cli)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(opts.jobs)
        .build()
        .context("starting worker threads")?;
    let bar = if opts.progress {
        let b = indicatif::ProgressBar::new(points.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} points, eta {eta}",
        ) {
            b.set_style(style);
        }
        b.set_prefix(sweep.name.clone());
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    let outcomes: Vec<anyhow::Result<PerfResult>> = pool.install(|| {
        points
            .par_iter()
            .map(|p| {
                let r = execute(runner, &p.config, &p.spec, &p.profile);
                bar.inc(1);
                r
            })
            .collect()
    });
    bar.finish_and_clear();
    let mut results = Vec::with_capacity(points.len());
    let mut failures: Vec<anyhow::Error> = Vec::new();
    for (p, r) in points.iter().zip(outcomes) {
        match r {
            Ok(r) => results.push((p.point.clone(), r)),
            Err(e) => failures.push(e.context(format!(
                "sweep point {} of {} ({})",
                p.point.index + 1,
                points.len(),
                sweep.describe(&p.point)
            ))),
        }
    }
    let Some(first) = failures.into_iter().next() else {
        return write_outputs(sweep, results, opts);
    };
    // Keep what finished: write the outputs of the points that ran, then report the failure.
    let failed = points.len() - results.len();
    let note = if results.is_empty() {
        format!("{failed} of {} points failed", points.len())
    } else {
        let written = write_outputs(sweep, results, opts)
            .map(|o| {
                format!(
                    "outputs of the other {} points are in {}",
                    o.points,
                    o.csv.display()
                )
            })
            .unwrap_or_else(|e| format!("writing the other points' outputs failed too: {e:#}"));
        format!("{failed} of {} points failed; {written}", points.len())
    };
    Err(first.context(note))
}

/// Writes the CSV, JSON and plots of finished results (in grid order).
pub fn write_outputs(
    sweep: &Sweep,
    results: Vec<(Point, PerfResult)>,
    opts: &SweepOptions,
) -> anyhow::Result<SweepOutcome> {
    let dir = &opts.out_dir;
    let csv_path = dir.join(format!("{}.csv", sweep.name));
    let csv = csv_out::to_csv(sweep, &results)?;
    crate::report::json::write_file(&csv_path, csv.as_bytes())?;

    let json_path = dir.join(format!("{}.json", sweep.name));
    write_json(&json_path, &json_document(sweep, &results)?)?;

    let mut plots = Vec::new();
    for metric in &sweep.metrics {
        let data = plot::plot_data(sweep, &results, metric);
        if data.series.iter().all(|s| s.points.is_empty()) {
            anyhow::bail!(
                "metric `{metric}` is missing from every result (or not finite); nothing to plot"
            );
        }
        let stem = format!("{}-{}", sweep.name, plot::file_safe(metric));
        let png = dir.join(format!("{stem}.png"));
        let svg = dir.join(format!("{stem}.svg"));
        crate::report::json::write_file(&png, &plot::render_png(&data)?)?;
        crate::report::json::write_file(&svg, plot::render_svg(&data)?.as_bytes())?;
        plots.push(png);
        plots.push(svg);
    }
    let unverified = results
        .iter()
        .filter(|(_, r)| !r.bytes_verified && r.ops_completed > 0)
        .map(|(p, _)| sweep.describe(p))
        .collect();
    Ok(SweepOutcome {
        points: results.len(),
        csv: csv_path,
        json: json_path,
        plots,
        results,
        unverified,
    })
}

fn json_document(
    sweep: &Sweep,
    results: &[(Point, PerfResult)],
) -> anyhow::Result<serde_json::Value> {
    let mut points = Vec::with_capacity(results.len());
    for (p, r) in results {
        let mut at = serde_json::Map::new();
        for (a, v) in sweep.axes.iter().zip(&p.values) {
            at.insert(a.key.clone(), serde_json::to_value(v)?);
        }
        points.push(serde_json::json!({ "point": at, "result": r }));
    }
    Ok(serde_json::json!({
        "name": sweep.name,
        "axes": sweep.axes.iter().map(|a| a.key.clone()).collect::<Vec<_>>(),
        "points": points,
    }))
}

/// Whether a progress bar should be drawn: stdout is a terminal and `CI` is not set.
pub fn progress_wanted() -> bool {
    use std::io::IsTerminal as _;
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    std::io::stdout().is_terminal() && !ci
}

#[cfg(test)]
mod tests;
