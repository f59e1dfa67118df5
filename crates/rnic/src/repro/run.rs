//! Running experiments: their sweeps, their evaluators, their output files, and the
//! `rnic repro` command around them.

use super::claim::{claims_csv, claims_table, headline, one_line, Claim};
use super::{figure, listing, report, select, Evaluation, Experiment, Outputs};
use crate::perf::PerfRunner;
use crate::report::RunStatus;
use crate::scenario::CliOverrides;
use crate::sweep::{self, Sweep, SweepOptions};
use crate::{RunFailed, UsageError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Parses every sweep file of `e`.
pub fn parse(e: &Experiment) -> Result<Vec<Sweep>, UsageError> {
    e.sweeps
        .iter()
        .map(|f| {
            sweep::parse_sweep(f.toml, f.path).map_err(|err| {
                UsageError(format!(
                    "reproduction {}: {} is malformed: {err}",
                    e.id, f.path
                ))
            })
        })
        .collect()
}

/// Parses every sweep of `e` and resolves every point (config and perf spec) without
/// simulating; returns the number of points.
pub fn check(e: &Experiment) -> anyhow::Result<usize> {
    let mut n = 0;
    for (sw, f) in parse(e)?.iter().zip(e.sweeps) {
        let points = sw
            .resolve_points(&CliOverrides::default())
            .map_err(|err| anyhow::anyhow!("reproduction {}: {}: {err:#}", e.id, f.path))?;
        n += points.len();
    }
    Ok(n)
}

/// The outcome of one experiment.
#[derive(Debug, Clone)]
pub struct ReproOutcome {
    pub id: &'static str,
    pub evaluation: Evaluation,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// The worst status of any sweep point (`ok` when every point completed and verified).
    pub status: RunStatus,
    /// The experiment ran and its evaluator judged every claim (not a failed `run` claim).
    pub judged: bool,
}

impl ReproOutcome {
    /// Every claim passed.
    pub fn passed(&self) -> bool {
        self.evaluation.claims.iter().all(|c| c.pass)
    }
}

/// How `rnic repro` judges a run, beyond where it writes ([`ReproOptions`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Judging {
    /// `--strict`: a claim that misses fails the command (exit 1), for tests and CI. Without
    /// it a miss is a result: a run in which every experiment ran and every claim was judged
    /// exits 0.
    pub strict: bool,
    /// `--sensitivity`: rerun each experiment with every parameter its paper does not state
    /// at −20 % and +20 % ([`super::sensitivity`]) and say which flips a verdict.
    pub sensitivity: bool,
}

/// How to run experiments.
#[derive(Debug, Clone)]
pub struct ReproOptions {
    /// Worker threads; 0 = one per CPU.
    pub jobs: usize,
    /// Output directory (each experiment writes to `<out>/<id>/`, the report to
    /// `<out>/REPORT.md`).
    pub out_dir: PathBuf,
    /// Show progress bars.
    pub progress: bool,
    /// `--quiet`: no progress lines either.
    pub quiet: bool,
}

fn failed_run(e: &Experiment, err: &anyhow::Error) -> Evaluation {
    Evaluation {
        claims: vec![super::claim::claim(
            "run",
            format!("{} runs", e.figure),
            format!("the run failed: {}", one_line(&format!("{err:#}"))),
            false,
        )],
        ..Evaluation::default()
    }
}

/// Runs one experiment on its committed sweeps ([`run_sweeps`]).
pub fn run(
    e: &Experiment,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    log: &mut dyn Write,
) -> anyhow::Result<ReproOutcome> {
    run_sweeps(e, parse(e)?, runner, opts, log)
}

/// Runs `sweeps` (the experiment's committed ones, or the suite's reduced copies of them,
/// in the same order) in parallel points, then the experiment's evaluator, then writes the
/// figures, their CSV, the claims and the report section. A sweep whose points did not all
/// end `ok` (or that fails to run) gives a failed `run` claim instead of an evaluation, since
/// claims cannot be checked on broken points, and the other experiments still run; errors
/// are only returned for malformed files, refused points and unwritable outputs. `log` gets
/// each sweep's point count and progress.
pub fn run_sweeps(
    e: &Experiment,
    sweeps: Vec<Sweep>,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    log: &mut dyn Write,
) -> anyhow::Result<ReproOutcome> {
    let dir = opts.out_dir.join(e.id);
    let sweep_opts = SweepOptions {
        jobs: opts.jobs,
        out_dir: dir.clone(),
        progress: opts.progress,
        quiet: opts.quiet,
        // The committed sweeps are sized on purpose; `every_repro_sweep_parses` keeps them
        // under the limit.
        allow_large: true,
        shard: None,
    };
    let mut files = Vec::new();
    let mut outputs = Outputs {
        sweeps: Vec::new(),
        dry: false,
    };
    let mut failure: Option<anyhow::Error> = None;
    let mut status = RunStatus::Ok;
    let names: Vec<String> = sweeps.iter().map(|sw| sw.name.clone()).collect();
    for sw in sweeps {
        match sweep::run_sweep(&sw, &CliOverrides::default(), runner, &sweep_opts, log) {
            Ok(o) => {
                files.push(o.csv.clone());
                files.push(o.json.clone());
                files.extend(o.plots.iter().cloned());
                if let Some(f) = o.failure() {
                    status = status.max(f.status);
                    if failure.is_none() {
                        failure = Some(anyhow::anyhow!("sweep {}: {}", sw.name, f.reason));
                    }
                }
                // A reproduction's sweeps are perf sweeps (its judges read perf results).
                let results = o.results.into_iter();
                let perf = results.filter_map(|(p, r)| Some((p, r.into_perf()?)));
                outputs.sweeps.push((sw, perf.collect()));
            }
            Err(err) => {
                let code = crate::exit_status(&err);
                if code == crate::exit::USAGE || code == crate::exit::OUTPUT {
                    return Err(err.context(format!("reproduction {}: sweep {}", e.id, sw.name)));
                }
                failure = Some(err.context(format!("sweep {}", sw.name)));
                break;
            }
        }
    }
    let judged_evaluation = match failure {
        Some(err) => Err(err),
        None => (e.evaluate)(&outputs),
    };
    let judged = judged_evaluation.is_ok();
    let mut evaluation = judged_evaluation.unwrap_or_else(|err| failed_run(e, &err));
    evaluation.claims.iter_mut().for_each(|c| {
        c.ours = one_line(&c.ours);
        c.kind = e.claims.iter().find(|s| s.id == c.id).map(|s| s.kind);
    });
    files.extend(write_evaluation(e.id, &evaluation, &dir)?);
    files.push(report::write_section(
        e,
        &evaluation,
        status,
        &names,
        &opts.out_dir,
    )?);
    Ok(ReproOutcome {
        id: e.id,
        evaluation,
        files,
        status,
        judged,
    })
}

/// Rewrites the claims and the report section of an outcome whose claims changed after
/// the run (`--sensitivity` adds a column).
pub fn rewrite_claims(
    e: &Experiment,
    o: &ReproOutcome,
    sweeps: &[String],
    opts: &ReproOptions,
) -> anyhow::Result<()> {
    let dir = opts.out_dir.join(e.id);
    crate::report::json::write_file(&dir.join("claims.csv"), &claims_csv(&o.evaluation.claims)?)?;
    report::write_section(e, &o.evaluation, o.status, sweeps, &opts.out_dir)?;
    Ok(())
}

/// Writes `<id>.csv`, the figures and `claims.csv` into `dir`.
pub fn write_evaluation(id: &str, ev: &Evaluation, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use crate::report::json::write_file;
    let mut files = Vec::new();
    if !ev.csv.is_empty() {
        let p = dir.join(format!("{id}.csv"));
        write_file(&p, ev.csv.as_bytes())?;
        files.push(p);
    }
    files.extend(figure::write_figures(dir, &ev.figures)?);
    let p = dir.join("claims.csv");
    write_file(&p, &claims_csv(&ev.claims)?)?;
    files.push(p);
    Ok(files)
}

/// `rnic repro [ID|all|list] [--check] [--strict] [--sensitivity]`: lists, checks or runs;
/// prints each experiment's claims table, then the headline (per paper and in total: "N of M
/// predictions pass; K of K calibrations hold; ...") and where the report is, and writes
/// `REPORT.md`. Every output directory and the report are checked writable before anything
/// runs. A claim that misses is a result, not an error: after writing everything, the
/// command fails only when an experiment did not run to its claims (with the worst point
/// status's exit status when sweep points did not end `ok`, else 1), or, with `--strict`,
/// when a claim missed (1).
pub fn command(
    id: Option<&str>,
    check_only: bool,
    judging: Judging,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let id = match id {
        None | Some("list") => {
            out.write_all(listing().as_bytes())?;
            return Ok(());
        }
        Some(id) => id,
    };
    let selected = select(id)?;
    if selected.is_empty() {
        writeln!(out, "no reproductions are registered yet")?;
        return Ok(());
    }
    if check_only {
        for e in selected {
            let n = check(e)?;
            writeln!(
                out,
                "{}: {} sweep file(s), {n} points resolve",
                e.id,
                e.sweeps.len()
            )?;
        }
        return Ok(());
    }
    crate::output::check_dir("reproduction output directory (--out)", &opts.out_dir)?;
    for e in &selected {
        crate::output::check_dir("reproduction output directory", &opts.out_dir.join(e.id))?;
    }
    let report_path = report::path(&opts.out_dir);
    crate::output::check_file("reproduction report", &report_path)?;
    let mut claims: Vec<(&str, Claim)> = Vec::new();
    let (mut failed, mut unjudged) = (Vec::new(), Vec::new());
    let (mut worst, mut broken) = (RunStatus::Ok, Vec::new());
    for e in &selected {
        let o = if judging.sensitivity {
            super::sensitivity::run_with_sensitivity(e, runner, opts, err)?
        } else {
            run(e, runner, opts, err)?
        };
        if o.status != RunStatus::Ok {
            worst = worst.max(o.status);
            broken.push(e.id);
        } else if !o.judged {
            unjudged.push(e.id);
        }
        writeln!(out, "== {}: {} ({})", e.id, e.title, e.figure)?;
        if !o.evaluation.notes.is_empty() {
            out.write_all(o.evaluation.notes.as_bytes())?;
        }
        out.write_all(claims_table(e.id, &o.evaluation.claims).as_bytes())?;
        writeln!(out)?;
        writeln!(err, "rnic: wrote {}", opts.out_dir.join(e.id).display())?;
        if !o.passed() {
            failed.push(e.id);
        }
        let paper = super::paper_of(e.id).map_or("", |p| p.short);
        claims.extend(o.evaluation.claims.into_iter().map(|c| (paper, c)));
    }
    let ran: Vec<&str> = selected.iter().map(|e| e.id).collect();
    report::write_report(&opts.out_dir, id, &ran)?;
    writeln!(err, "rnic: wrote {}", report_path.display())?;
    out.write_all(headlines(&claims).as_bytes())?;
    writeln!(out, "report: {}", report_path.display())?;
    if !broken.is_empty() {
        return Err(RunFailed {
            status: worst,
            reason: format!(
                "sweep points did not end ok in {}, so their claims were not checked (the \
                 `run` claim and the sweeps' CSV status and reason columns say why)",
                broken.join(", ")
            ),
        }
        .into());
    }
    if !unjudged.is_empty() {
        anyhow::bail!(
            "the evaluation failed in {}, so their claims were not judged (the `run` claim \
             says why)",
            unjudged.join(", ")
        );
    }
    if judging.strict && !failed.is_empty() {
        anyhow::bail!("claims missed in {} (--strict)", failed.join(", "));
    }
    Ok(())
}

/// The headline of each paper that ran (`<paper>: N of M predictions pass; ...`), and of
/// all of them when more than one ran.
fn headlines(claims: &[(&str, Claim)]) -> String {
    let mut papers: Vec<&str> = claims.iter().map(|(p, _)| *p).collect();
    papers.dedup();
    let of = |paper: Option<&str>| -> Vec<Claim> {
        claims
            .iter()
            .filter(|(p, _)| paper.is_none_or(|want| *p == want))
            .map(|(_, c)| c.clone())
            .collect()
    };
    let mut s = String::new();
    for p in &papers {
        s.push_str(&format!("{p}: {}\n", headline(&of(Some(p)))));
    }
    if papers.len() > 1 {
        s.push_str(&format!("total: {}\n", headline(&of(None))));
    }
    s
}

/// Runs `run` on every point on two worker threads (the machine the reproductions are sized
/// for), returning the results in the input's order; an error names the point by `label`.
pub fn on_two_workers<P: Sync, R: Send>(
    points: &[P],
    label: impl Fn(&P) -> String,
    run: impl Fn(&P) -> anyhow::Result<R> + Sync,
) -> anyhow::Result<Vec<R>> {
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get().min(2));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<anyhow::Result<R>>>> =
        points.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(p) = points.get(i) else { break };
                let r = run(p);
                *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            });
        }
    });
    results
        .into_iter()
        .zip(points)
        .map(|(m, p)| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(anyhow::anyhow!("point {} did not run", label(p))))
                .map_err(|e| e.context(format!("point {}", label(p))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::headlines;
    use crate::repro::{claim::claim, ClaimKind};

    /// A headline per paper that ran, and one in total only when more than one paper ran.
    #[test]
    fn headlines_add_a_total_only_over_papers() {
        let predicted = |pass| {
            let mut c = claim("c", "p", "o".into(), pass);
            c.kind = Some(ClaimKind::Prediction);
            c
        };
        let one = headlines(&[("csRNA", predicted(true)), ("csRNA", predicted(false))]);
        assert_eq!(one, "csRNA: 1 of 2 predictions pass\n");
        let two = headlines(&[("csRNA", predicted(true)), ("ORNIC", predicted(true))]);
        assert_eq!(
            two,
            "csRNA: 1 of 1 predictions pass\nORNIC: 1 of 1 predictions pass\n\
             total: 2 of 2 predictions pass\n"
        );
    }
}
