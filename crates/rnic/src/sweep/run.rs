//! Running a sweep: every check before the first point, then the points on worker threads,
//! each row written as it finishes, then the ordered outputs.
//!
//! [`Plan::new`] does everything that can fail before any simulation: it refuses grids of
//! more than [`LARGE_POINTS`] points unless `--allow-large` was given, resolves every point,
//! asks the runner whether each point fits its limits (the memory budget), and checks that
//! every output file can be written ([`crate::output`]). [`Plan::run`] then says how many
//! points and workers there are, runs the points (workers take the biggest first, [`super::order`]; the
//! calling thread does all the writing), shows progress, and streams each finished row to
//! `<name>.partial.csv` ([`super::partial`]). At the end it writes `<name>.csv` in grid order,
//! removes the partial file (the CSV now holds every row), then writes `<name>.json` and the
//! plots.
//!
//! With a [`Shard`] ([`SweepOptions::shard`]) the plan runs only that shard's points and
//! writes `<name>.shard-I-of-N.csv` (with a leading `point` column) and `.json`
//! ([`super::shard`]), no plots; its partial file is `<name>.shard-I-of-N.partial.csv`.
//!
//! Every point gets a row. A point whose run fails outright (the runner returns an error) is
//! recorded with status `refused` (bad input found as the run was built) or `model_error`,
//! the error as its reason and zero figures. Plots leave
//! out points that did not end `ok`. [`SweepOutcome::failure`] turns the points that did not
//! end `ok` into the error the command exits with, after every output is written.

use super::partial::{self, PartialCsv};
use super::shard::{self, Shard, ShardFile, ShardPoint};
use super::workload::WorkloadPoint;
use super::{csv_out, plot, Job, Point, PointResult, ResolvedPoint, Sweep};
use crate::perf::{execute, PerfRunner};
use crate::report::{json::write_json, PerfResult, RunStatus};
use crate::scenario::CliOverrides;
use crate::{output, RunFailed, UsageError};
use anyhow::Context as _;
use rnic_model::words::counted;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Most points a sweep runs without `--allow-large`: beyond it a sweep takes hours and
/// writes very large files, so the user confirms.
pub const LARGE_POINTS: usize = 10_000;

/// Sweeps of at least this many points print a progress line at every tenth when no
/// progress bar is drawn (stdout not a terminal, or CI).
pub const PROGRESS_LINE_POINTS: usize = 100;

/// Failed points listed by name in [`SweepOutcome::failure`]; the rest are counted.
const LISTED_FAILURES: usize = 10;

/// How to run a sweep.
#[derive(Debug, Clone, Default)]
pub struct SweepOptions {
    /// Worker threads; 0 = one per CPU.
    pub jobs: usize,
    /// Output directory.
    pub out_dir: PathBuf,
    /// Show a progress bar (on stderr).
    pub progress: bool,
    /// `--quiet`: no progress lines in the log either (when there is no bar, large sweeps
    /// otherwise log one line per tenth of their points).
    pub quiet: bool,
    /// Run grids of more than [`LARGE_POINTS`] points (`--allow-large`).
    pub allow_large: bool,
    /// Run only this shard's points and write shard files (`--shard I/N`).
    pub shard: Option<Shard>,
}

/// A point that did not end `ok`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedPoint {
    /// `k=v, k=v`.
    pub point: String,
    pub status: RunStatus,
    pub reason: String,
}

/// What a sweep wrote.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    pub points: usize,
    pub csv: PathBuf,
    pub json: PathBuf,
    pub plots: Vec<PathBuf>,
    /// Every point's result, in grid order.
    pub results: Vec<(Point, PointResult)>,
    /// Points that did not end `ok`, in grid order.
    pub failed: Vec<FailedPoint>,
    /// What the outputs leave out and why (a plot with no point its axes can show), for
    /// standard error.
    pub notes: Vec<String>,
}

impl SweepOutcome {
    /// The worst status of any point.
    pub fn worst(&self) -> RunStatus {
        self.failed
            .iter()
            .map(|f| f.status)
            .max()
            .unwrap_or_default()
    }

    /// The error to exit with when some point did not end `ok`: the worst status, and the
    /// failed points with their reasons.
    pub fn failure(&self) -> Option<RunFailed> {
        if self.failed.is_empty() {
            return None;
        }
        let mut listed: Vec<String> = self
            .failed
            .iter()
            .take(LISTED_FAILURES)
            .map(|f| format!("{} ({}): {}", f.point, f.status, f.reason))
            .collect();
        if self.failed.len() > LISTED_FAILURES {
            listed.push(format!(
                "and {} more (see the status and reason columns of {})",
                self.failed.len() - LISTED_FAILURES,
                self.csv.display()
            ));
        }
        Some(RunFailed {
            status: self.worst(),
            reason: format!(
                "{} of {} sweep points did not end ok: {}",
                self.failed.len(),
                self.points,
                listed.join("; ")
            ),
        })
    }
}

/// Every file a sweep (or one of its shards: CSV, partial CSV and JSON) writes in `dir`.
pub fn output_files(sweep: &Sweep, dir: &Path, shard: Option<Shard>) -> Vec<PathBuf> {
    let stem = shard::stem(&sweep.name, shard);
    let mut files = vec![
        dir.join(format!("{stem}.csv")),
        partial::path(sweep, dir, shard),
        dir.join(format!("{stem}.json")),
    ];
    if shard.is_none() {
        files.extend(plot_files(sweep, dir));
    }
    files
}

/// The plot files of a sweep in `dir`.
pub(super) fn plot_files(sweep: &Sweep, dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for m in &sweep.metrics {
        let stem = format!("{}-{}", sweep.name, plot::file_safe(m));
        files.push(dir.join(format!("{stem}.png")));
        files.push(dir.join(format!("{stem}.svg")));
    }
    files
}

/// A sweep checked and resolved, ready to run.
pub struct Plan<'a> {
    sweep: &'a Sweep,
    /// The points to run: the grid's, or a shard's.
    points: Vec<ResolvedPoint>,
    /// Shards: the whole grid's size and hash.
    grid: Option<(usize, String)>,
    opts: SweepOptions,
    pool: rayon::ThreadPool,
}

impl<'a> Plan<'a> {
    /// Checks everything that can be checked before running (see the module docs).
    pub fn new(
        sweep: &'a Sweep,
        cli: &CliOverrides,
        runner: &dyn PerfRunner,
        opts: &SweepOptions,
    ) -> anyhow::Result<Plan<'a>> {
        let count = sweep.point_count();
        if count > LARGE_POINTS && !opts.allow_large {
            return Err(UsageError(format!(
                "sweep {} has {count} points, more than {LARGE_POINTS}: it would run for a \
                 long time and write large files; pass --allow-large to run it anyway, or \
                 split the sweep",
                sweep.name
            ))
            .into());
        }
        let mut points = sweep.resolve_points(cli)?;
        for p in &points {
            check_point(runner, p).with_context(|| {
                format!(
                    "sweep point {} of {count} ({})",
                    p.point.index + 1,
                    sweep.describe(&p.point)
                )
            })?;
        }
        let grid = match opts.shard {
            Some(s) => {
                let hash = shard::grid_hash(&points)?;
                points.retain(|p| s.owns(p.point.index));
                Some((count, hash))
            }
            None => None,
        };
        output::check_dir("sweep output directory (--out)", &opts.out_dir)?;
        for f in output_files(sweep, &opts.out_dir, opts.shard) {
            output::check_file("sweep output", &f)?;
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.jobs)
            .build()
            .context("starting worker threads")?;
        Ok(Plan {
            sweep,
            points,
            grid,
            opts: opts.clone(),
            pool,
        })
    }

    /// The notes the points' configs call for ([`crate::report::text::config_notes`]), and
    /// the retry settings the sweep gives to UC or UD points, each once, with how many
    /// points it concerns when not all: a sweep printed none of them.
    pub fn config_notes(&self) -> Vec<String> {
        let mut tally: Vec<(String, usize)> = Vec::new();
        let retry = self.sweep.retry_settings();
        for p in &self.points {
            let test = p.perf_spec().map(|s| s.test);
            let unreliable = retry.iter().filter_map(|&flag| {
                crate::report::text::retry_no_effect_note(flag, test?, p.config.qp.transport)
            });
            for note in crate::report::text::config_notes(&p.config)
                .into_iter()
                .chain(unreliable)
            {
                match tally.iter_mut().find(|(n, _)| *n == note) {
                    Some((_, k)) => *k += 1,
                    None => tally.push((note, 1)),
                }
            }
        }
        let all = self.points.len();
        tally
            .into_iter()
            .map(|(note, k)| match k == all {
                true => note,
                false => format!("{note} (at {k} of the {all} points)"),
            })
            .collect()
    }

    /// A sweep writes no queue trace (only `rnic perf` and `rnic run` with `--json FILE`
    /// write `FILE-queues.csv`): a point whose config sets `net.trace_interval_us` above 0 (by
    /// `[set]`, `--set`, an axis or a profile) would take the trace and drop it, in silence;
    /// refused, with how many points it concerns.
    pub fn check_traces_nothing(&self) -> Result<(), UsageError> {
        let key = "net.trace_interval_us";
        let traced: Vec<f64> = (self.points.iter())
            .map(|p| p.config.net.trace_interval_us)
            .filter(|&us| us > 0.0)
            .collect();
        let Some(&first) = traced.first() else {
            return Ok(());
        };
        Err(UsageError(format!(
            "{key} = {first} (at {} of the {} points): a sweep writes no queue trace \
             (FILE-queues.csv beside the JSON is written by rnic perf and rnic run with --json \
             FILE), so every such point would take it and drop it; remove it, or run the point \
             to trace with rnic perf or rnic run --json FILE",
            traced.len(),
            self.points.len()
        )))
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the grid is empty (it never is: a sweep has at least one axis value).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Worker threads that will run points.
    pub fn workers(&self) -> usize {
        self.pool
            .current_num_threads()
            .min(self.points.len())
            .max(1)
    }

    /// Runs every point and writes the outputs; `log` gets the point count and progress
    /// lines. Points that did not end `ok` are in [`SweepOutcome::failed`], not an error;
    /// errors are outputs that could not be written.
    pub fn run(self, runner: &dyn PerfRunner, log: &mut dyn Write) -> anyhow::Result<SweepOutcome> {
        let sweep = self.sweep;
        let n = self.points.len();
        let workers = self.workers();
        let what = match (self.opts.shard, &self.grid) {
            (Some(s), Some((total, _))) => {
                format!(", {s}: {n} of {}", counted(*total as u64, "point"))
            }
            _ => format!(": {}", counted(n as u64, "point")),
        };
        let _ = writeln!(
            log,
            "rnic: sweep {}{what}, {}",
            sweep.name,
            counted(workers as u64, "worker")
        );
        let bar = progress_bar(sweep, n, self.opts.progress);
        let mut progress =
            ProgressLines::new(&sweep.name, n, !self.opts.progress && !self.opts.quiet);
        let mut partial =
            PartialCsv::new(partial::path(sweep, &self.opts.out_dir, self.opts.shard));
        let mut slots: Vec<Option<(Point, PointResult)>> = vec![None; n];
        let mut write_error: Option<crate::OutputError> = None;
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let (tx, rx) = std::sync::mpsc::channel::<(usize, PointResult)>();
        let points = &self.points;
        let order = &super::order::run_order(points);
        self.pool.in_place_scope(|s| {
            for _ in 0..workers {
                let tx = tx.clone();
                let (next, stop) = (&next, &stop);
                s.spawn(move |_| loop {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else {
                        break;
                    };
                    let p = &points[i];
                    let r = run_point(runner, sweep, p).unwrap_or_else(|e| failed_result(p, &e));
                    if tx.send((i, r)).is_err() {
                        break;
                    }
                });
            }
            drop(tx);
            for (i, r) in rx.iter() {
                slots[i] = Some((points[i].point.clone(), r));
                bar.inc(1);
                progress.done(log);
                if write_error.is_none() {
                    if let Err(e) = partial.push(sweep, &slots, i) {
                        write_error = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
        bar.finish_and_clear();
        if let Some(e) = write_error {
            return Err(anyhow::Error::from(e).context(format!(
                "sweep {} stopped: a finished point's row could not be written",
                sweep.name
            )));
        }
        let results: Vec<(Point, PointResult)> = slots.into_iter().flatten().collect();
        warn_unsettled(sweep, &results, log);
        match (self.opts.shard, self.grid) {
            (Some(s), Some((total, hash))) => {
                write_shard_outputs(sweep, s, total, hash, results, &self.opts, partial)
            }
            _ => write_outputs(sweep, results, &self.opts.out_dir, Some(partial)),
        }
    }
}

/// Refuses a point the runner cannot run (its memory budget), without running it.
fn check_point(runner: &dyn PerfRunner, p: &ResolvedPoint) -> Result<(), UsageError> {
    match &p.job {
        Job::Perf(spec) => runner.check(&p.config, spec),
        Job::Workload(run) => run.check(runner),
    }
}

/// Runs one point: a perf run as `rnic perf` does, a workload's flows as `rnic run` does.
fn run_point(
    runner: &dyn PerfRunner,
    sweep: &Sweep,
    p: &ResolvedPoint,
) -> anyhow::Result<PointResult> {
    Ok(match &p.job {
        Job::Perf(spec) => execute(runner, &p.config, spec, &p.profile)?.into(),
        Job::Workload(run) => {
            let r = run.run(runner, &sweep.name, &p.profile)?;
            PointResult::from(WorkloadPoint::from_run(&r))
        }
    })
}

/// One warning line per point whose rate never settled (its window opened at
/// `sim.max_warmup_us`); the point still counts, its `window_settled` column says so.
fn warn_unsettled(sweep: &Sweep, results: &[(Point, PointResult)], log: &mut dyn Write) {
    for (p, r) in results.iter().filter_map(|(p, r)| Some((p, r.perf()?))) {
        if r.window_settled == Some(false) {
            let _ = writeln!(
                log,
                "rnic: warning: sweep {} point {}: {}",
                sweep.name,
                sweep.describe(p),
                r.window_reason
                    .as_deref()
                    .unwrap_or("the rate never settled")
            );
        }
    }
}

/// The result recorded for a point whose run returned an error: what the point asked,
/// status `refused` for bad input found as the run was built (a combination the model
/// cannot run: exit 2), `model_error` otherwise, the error as its reason.
fn failed_result(p: &ResolvedPoint, e: &anyhow::Error) -> PointResult {
    let (status, reason) = if crate::exit_status(e) == crate::exit::USAGE {
        (RunStatus::Refused, format!("the run was refused: {e:#}"))
    } else {
        (RunStatus::ModelError, format!("the run failed: {e:#}"))
    };
    let spec = match &p.job {
        Job::Perf(spec) => spec,
        Job::Workload(_) => {
            return PointResult::from(WorkloadPoint {
                profile: p.profile.clone(),
                seed: p.config.sim.seed,
                status,
                reason,
                clients: p.config.net.clients,
                ..Default::default()
            })
        }
    };
    PointResult::from(PerfResult {
        test: spec.test.name().to_string(),
        size_bytes: spec.sizes.last().copied().unwrap_or_default(),
        qps: spec.qps,
        clients: spec.clients,
        seed: p.config.sim.seed,
        profile: p.profile.clone(),
        status,
        reason,
        ..Default::default()
    })
}

fn progress_bar(sweep: &Sweep, n: usize, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(n as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} points, eta {eta}",
    ) {
        b.set_style(style);
    }
    b.set_prefix(sweep.name.clone());
    b
}

/// One line per tenth of a large sweep, for logs where no bar is drawn. Lines depend only on
/// the count of finished points, so they are the same from run to run.
struct ProgressLines<'n> {
    name: &'n str,
    total: usize,
    done: usize,
    step: usize,
}

impl<'n> ProgressLines<'n> {
    fn new(name: &'n str, total: usize, enabled: bool) -> ProgressLines<'n> {
        let step = if enabled && total >= PROGRESS_LINE_POINTS {
            total.div_ceil(10)
        } else {
            usize::MAX
        };
        ProgressLines {
            name,
            total,
            done: 0,
            step,
        }
    }

    fn done(&mut self, log: &mut dyn Write) {
        self.done += 1;
        if self.step != usize::MAX
            && (self.done.is_multiple_of(self.step) || self.done == self.total)
        {
            let _ = writeln!(
                log,
                "rnic: sweep {}: {}/{} points done",
                self.name, self.done, self.total
            );
        }
    }
}

/// Resolves, checks and runs a sweep ([`Plan::new`] then [`Plan::run`]).
pub fn run_sweep(
    sweep: &Sweep,
    cli: &CliOverrides,
    runner: &dyn PerfRunner,
    opts: &SweepOptions,
    log: &mut dyn Write,
) -> anyhow::Result<SweepOutcome> {
    Plan::new(sweep, cli, runner, opts)?.run(runner, log)
}

/// Writes `<name>.csv` of the finished results (in grid order), `<name>.json` and the plots
/// in `dir` (a sweep, and `rnic sweep merge`, which must write the same bytes), removing the
/// sweep's partial file once the CSV holds every row.
pub(super) fn write_outputs(
    sweep: &Sweep,
    results: Vec<(Point, PointResult)>,
    dir: &Path,
    partial: Option<PartialCsv>,
) -> anyhow::Result<SweepOutcome> {
    let csv_path = dir.join(format!("{}.csv", sweep.name));
    let csv = csv_out::to_csv(sweep, &results, false)?;
    output::write_file(&csv_path, csv.as_bytes())?;
    if let Some(p) = partial {
        p.remove()?;
    }

    let json_path = dir.join(format!("{}.json", sweep.name));
    write_json(&json_path, &json_document(sweep, &results)?)?;

    let any_ok = results.iter().any(|(_, r)| r.status() == RunStatus::Ok);
    let mut plots = Vec::new();
    let mut notes = Vec::new();
    for metric in &sweep.metrics {
        let data = plot::plot_data(sweep, &results, metric);
        if data.series.iter().all(|s| s.points.is_empty()) {
            if !any_ok {
                // No point ended ok: nothing trustworthy to plot; the failure says why.
                continue;
            }
            if let Some(why) = unplottable(sweep, &results, metric) {
                // The figures are in the CSV and JSON; only the plot cannot show them.
                notes.push(format!("no plot of `{metric}`: {why}"));
                continue;
            }
            if let Some(why) = absent_metric(&results, metric, &json_path) {
                anyhow::bail!(crate::UsageError(why));
            }
            anyhow::bail!("metric `{metric}` is not finite in any result; nothing to plot");
        }
        let stem = format!("{}-{}", sweep.name, plot::file_safe(metric));
        let png = dir.join(format!("{stem}.png"));
        let svg = dir.join(format!("{stem}.svg"));
        notes.extend(
            data.axis_notes()
                .into_iter()
                .map(|n| format!("plot of `{metric}`: {n}")),
        );
        output::write_file(&png, &plot::render_png(&data)?)?;
        output::write_file(&svg, plot::render_svg(&data)?.as_bytes())?;
        plots.push(png);
        plots.push(svg);
    }
    let mut outcome = outcome(sweep, results, csv_path, json_path, plots);
    outcome.notes = notes;
    Ok(outcome)
}

/// Why `metric`, a name some configuration reports (checked with the file), is in none of
/// the results that ended ok: this sweep's configurations do not have it (an on-chip
/// structure of a mechanism that is off), so the file asks for what its points cannot give,
/// bad input rather than data that failed to verify. Lists the names of its kind the
/// results do have. `None` when some result has it.
fn absent_metric(results: &[(Point, PointResult)], metric: &str, json: &Path) -> Option<String> {
    let ok = || results.iter().filter(|(_, r)| r.status() == RunStatus::Ok);
    if ok().any(|(_, r)| r.metric(metric).is_some()) {
        return None;
    }
    let kind = metric.split('.').next().unwrap_or(metric);
    let mut present: Vec<String> = ok()
        .flat_map(|(_, r)| r.metrics().into_iter().map(|(n, _)| n))
        .filter(|n| n.split('.').next() == Some(kind))
        .collect();
    present.sort();
    present.dedup();
    let have = if present.is_empty() {
        format!("no `{kind}` metric")
    } else {
        present.join(", ")
    };
    Some(format!(
        "`metrics` names `{metric}`, which no point of this sweep reports (its configuration \
         has no such part); its points report {have} (every point's metrics are in {})",
        json.display()
    ))
}

/// Why the points that ended ok give `metric` no point a log y axis can show (`None`:
/// another cause).
fn unplottable(sweep: &Sweep, results: &[(Point, PointResult)], metric: &str) -> Option<String> {
    let ok = || results.iter().filter(|(_, r)| r.status() == RunStatus::Ok);
    let ys: Vec<f64> = ok()
        .filter_map(|(_, r)| r.metric(metric).map(|m| m.as_f64()))
        .collect();
    if sweep.y_scale == plot::Scale::Log
        && !ys.is_empty()
        && ys.iter().all(|y| y.is_finite() && *y <= 0.0)
    {
        let max = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let values = if ys.iter().all(|y| *y == 0.0) {
            "it is 0 at every point".to_string()
        } else {
            format!("its largest value is {max}")
        };
        return Some(format!(
            "{values}, which a log y axis (y_log = true) cannot show; its values are in the \
             CSV and JSON (leave out y_log to plot it)"
        ));
    }
    // (x_log over values that are not all positive is refused with the file.)
    None
}

/// A shard's outputs: `<name>.shard-I-of-N.csv` (with the `point` column) and `.json`;
/// then its partial file is removed.
fn write_shard_outputs(
    sweep: &Sweep,
    s: Shard,
    grid_points: usize,
    grid_hash: String,
    results: Vec<(Point, PointResult)>,
    opts: &SweepOptions,
    partial: PartialCsv,
) -> anyhow::Result<SweepOutcome> {
    let stem = shard::stem(&sweep.name, Some(s));
    let csv_path = opts.out_dir.join(format!("{stem}.csv"));
    let csv = csv_out::to_csv(sweep, &results, true)?;
    output::write_file(&csv_path, csv.as_bytes())?;
    partial.remove()?;
    let mut points = Vec::with_capacity(results.len());
    for (p, r) in &results {
        points.push(ShardPoint {
            position: p.index + 1,
            point: point_value(sweep, p)?,
            result: result_value(r)?,
        });
    }
    let json_path = opts.out_dir.join(format!("{stem}.json"));
    let doc = ShardFile::new(sweep, s, grid_points, grid_hash, points);
    write_json(&json_path, &doc)?;
    Ok(outcome(sweep, results, csv_path, json_path, Vec::new()))
}

fn outcome(
    sweep: &Sweep,
    results: Vec<(Point, PointResult)>,
    csv: PathBuf,
    json: PathBuf,
    plots: Vec<PathBuf>,
) -> SweepOutcome {
    let failed = results
        .iter()
        .filter(|(_, r)| r.status() != RunStatus::Ok)
        .map(|(p, r)| FailedPoint {
            point: sweep.describe(p),
            status: r.status(),
            reason: r.reason().to_string(),
        })
        .collect();
    SweepOutcome {
        notes: Vec::new(),
        points: results.len(),
        csv,
        json,
        plots,
        results,
        failed,
    }
}

/// A point's axis values by axis key.
pub(super) fn point_value(sweep: &Sweep, p: &Point) -> anyhow::Result<serde_json::Value> {
    let mut at = serde_json::Map::new();
    for (a, v) in sweep.axes.iter().zip(&p.values) {
        at.insert(a.key.clone(), serde_json::to_value(v)?);
    }
    Ok(serde_json::Value::Object(at))
}

/// A result as the sweep's JSON holds it: every field but `wall_seconds`, the one that
/// differs between identical runs, so the file is the same from run to run (and a merge of
/// shards writes the same bytes as the whole sweep).
pub(super) fn result_value(r: &PointResult) -> anyhow::Result<serde_json::Value> {
    let mut v = serde_json::to_value(r)?;
    if let Some(o) = v.as_object_mut() {
        o.remove(WALL_SECONDS);
    }
    Ok(v)
}

/// The field of a result the sweep's JSON leaves out.
pub(super) const WALL_SECONDS: &str = "wall_seconds";

fn json_document(
    sweep: &Sweep,
    results: &[(Point, PointResult)],
) -> anyhow::Result<serde_json::Value> {
    let mut points = Vec::with_capacity(results.len());
    for (p, r) in results {
        points.push(
            serde_json::json!({ "point": point_value(sweep, p)?, "result": result_value(r)? }),
        );
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
