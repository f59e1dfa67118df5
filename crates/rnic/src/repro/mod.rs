//! `rnic repro ID|all`: reproductions of the seeds' claims.
//!
//! A reproduction is one or more committed sweep files (`scenarios/repro/...`, compiled into
//! the binary with `include_str!`), run with the sweep runner, and an evaluator that reads the
//! results, draws a figure shaped like the paper's and checks each claim of
//! `/work/shared/TARGETS.md`: ±10 % where the seed gives a number, the stated shape
//! otherwise. Outputs go to `<out>/<id>/`: the sweeps' own CSV, JSON and per-metric plots,
//! plus `<id>.csv` (the figure's data), `<stem>.png`/`.svg` (the figure) and `claims.csv`.
//! The printed table has one row per claim: id, the seed's claim, rnic's number, PASS/FAIL.
//!
//! `rnic repro csrna` runs every reproduction whose id starts with `csrna-`; `all` runs them
//! all; `--check` resolves every point of every sweep without simulating.

pub mod csrna;

use crate::perf::PerfRunner;
use crate::report::{PerfResult, RunStatus};
use crate::scenario::CliOverrides;
use crate::sweep::{self, plot::PlotData, Point, Sweep, SweepOptions};
use crate::{RunFailed, UsageError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A committed sweep file of a reproduction.
#[derive(Debug, Clone, Copy)]
pub struct SweepFile {
    /// Path in the repository, e.g. `scenarios/repro/csrna/peak.toml`.
    pub path: &'static str,
    /// Its text (compiled in).
    pub toml: &'static str,
}

/// The results of a reproduction's sweeps, in [`Repro::sweeps`] order.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub sweeps: Vec<(Sweep, Vec<(Point, PerfResult)>)>,
}

/// One checked claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Short id, e.g. `write-flat`.
    pub id: String,
    /// What the seed says.
    pub seed: String,
    /// What rnic measured.
    pub ours: String,
    /// Whether rnic's number meets the claim.
    pub pass: bool,
}

/// One figure: a plot written as `<stem>.png` and `<stem>.svg`.
#[derive(Debug, Clone)]
pub struct Figure {
    pub stem: String,
    pub plot: PlotData,
}

/// What an evaluator returns.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// Text printed before the claims table (e.g. Table 1).
    pub notes: String,
    pub claims: Vec<Claim>,
    pub figures: Vec<Figure>,
    /// The figure's data as CSV (written as `<id>.csv`).
    pub csv: String,
}

/// One reproduction.
#[derive(Debug, Clone, Copy)]
pub struct Repro {
    /// Id used on the command line, e.g. `csrna-peak`.
    pub id: &'static str,
    /// One-line description of the claim.
    pub title: &'static str,
    /// The seed's figure or table, e.g. "Fig. 7a".
    pub figure: &'static str,
    /// The experiment: zero or more sweep files.
    pub sweeps: &'static [SweepFile],
    /// Checks the claims on the results and draws the figure.
    pub evaluate: fn(&Outputs) -> anyhow::Result<Evaluation>,
}

/// Every reproduction, in `rnic repro all` order.
pub const REPROS: &[Repro] = csrna::REPROS;

/// The ids of all reproductions.
pub fn ids() -> Vec<&'static str> {
    REPROS.iter().map(|r| r.id).collect()
}

/// Groups: the seed prefixes of the ids (`csrna` for `csrna-peak`, ...).
pub fn groups() -> Vec<&'static str> {
    let mut g: Vec<&'static str> = Vec::new();
    for r in REPROS {
        if let Some((prefix, _)) = r.id.split_once('-') {
            if !g.contains(&prefix) {
                g.push(prefix);
            }
        }
    }
    g
}

/// Looks up `id`; `all` selects every reproduction, a group (`csrna`) every reproduction of
/// that seed. Unknown ids are usage errors that list the known ones.
pub fn select(id: &str) -> Result<Vec<&'static Repro>, UsageError> {
    if id == "all" {
        return Ok(REPROS.iter().collect());
    }
    if let Some(r) = REPROS.iter().find(|r| r.id == id) {
        return Ok(vec![r]);
    }
    let prefix = format!("{id}-");
    let group: Vec<&'static Repro> = REPROS
        .iter()
        .filter(|r| r.id.starts_with(&prefix))
        .collect();
    if group.is_empty() {
        Err(UsageError(format!(
            "unknown reproduction `{id}`; {}",
            known_list()
        )))
    } else {
        Ok(group)
    }
}

/// "known reproductions: a, b" or a note that there are none yet.
pub fn known_list() -> String {
    if REPROS.is_empty() {
        "no reproductions are registered yet (use `all` to run every one)".to_string()
    } else {
        let mut names = ids();
        names.extend(groups());
        format!("known reproductions: {}, all", names.join(", "))
    }
}

/// The listing printed by `rnic repro` without an id.
pub fn listing() -> String {
    if REPROS.is_empty() {
        return "no reproductions are registered yet\n".to_string();
    }
    let w = REPROS.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let mut s = String::new();
    for r in REPROS {
        s.push_str(&format!("{:<w$}  {} ({})\n", r.id, r.title, r.figure));
    }
    for g in groups() {
        s.push_str(&format!("{g:<w$}  every {g}-* reproduction\n"));
    }
    s.push_str(&format!("{:<w$}  every reproduction\n", "all"));
    s
}

/// Parses every sweep file of `r`.
pub fn parse(r: &Repro) -> Result<Vec<Sweep>, UsageError> {
    r.sweeps
        .iter()
        .map(|f| {
            sweep::parse_sweep(f.toml, f.path).map_err(|e| {
                UsageError(format!(
                    "reproduction {}: {} is malformed: {e}",
                    r.id, f.path
                ))
            })
        })
        .collect()
}

/// Parses every sweep of `r` and resolves every point (config and perf spec) without
/// simulating; returns the number of points.
pub fn check(r: &Repro) -> anyhow::Result<usize> {
    let mut n = 0;
    for (sw, f) in parse(r)?.iter().zip(r.sweeps) {
        let points = sw
            .resolve_points(&CliOverrides::default())
            .map_err(|e| anyhow::anyhow!("reproduction {}: {}: {e:#}", r.id, f.path))?;
        n += points.len();
    }
    Ok(n)
}

/// The outcome of one reproduction.
#[derive(Debug, Clone)]
pub struct ReproOutcome {
    pub id: &'static str,
    pub evaluation: Evaluation,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// The worst status of any sweep point (`ok` when every point completed and verified).
    pub status: RunStatus,
}

impl ReproOutcome {
    /// Every claim passed.
    pub fn passed(&self) -> bool {
        self.evaluation.claims.iter().all(|c| c.pass)
    }
}

/// How to run reproductions.
#[derive(Debug, Clone)]
pub struct ReproOptions {
    /// Worker threads; 0 = one per CPU.
    pub jobs: usize,
    /// Output directory (each reproduction writes to `<out>/<id>/`).
    pub out_dir: PathBuf,
    /// Show progress bars.
    pub progress: bool,
}

fn failed_run(r: &Repro, e: &anyhow::Error) -> Evaluation {
    Evaluation {
        claims: vec![Claim {
            id: "run".into(),
            seed: format!("{} runs", r.figure),
            ours: format!("the run failed: {}", one_line(&format!("{e:#}"))),
            pass: false,
        }],
        ..Evaluation::default()
    }
}

fn one_line(s: &str) -> String {
    let s = s.replace('\n', " ");
    if s.chars().count() > 160 {
        let mut t: String = s.chars().take(157).collect();
        t.push_str("...");
        t
    } else {
        s
    }
}

/// Runs one reproduction: its sweeps (in parallel points), the evaluator, then writes the
/// figure, its CSV and the claims. A sweep whose points did not all end `ok` (or that fails
/// to run) gives a failed `run` claim instead of an evaluation, since claims cannot be checked
/// on broken points, and the other reproductions still run; errors are only returned for
/// malformed files, refused points and unwritable outputs. `log` gets each sweep's point count
/// and progress.
pub fn run(
    r: &Repro,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    log: &mut dyn Write,
) -> anyhow::Result<ReproOutcome> {
    let sweeps = parse(r)?;
    let dir = opts.out_dir.join(r.id);
    let sweep_opts = SweepOptions {
        jobs: opts.jobs,
        out_dir: dir.clone(),
        progress: opts.progress,
        // The committed sweeps are sized on purpose; `every_repro_sweep_parses` keeps them
        // under the limit.
        allow_large: true,
    };
    let mut files = Vec::new();
    let mut outputs = Outputs { sweeps: Vec::new() };
    let mut failure: Option<anyhow::Error> = None;
    let mut status = RunStatus::Ok;
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
                outputs.sweeps.push((sw, o.results));
            }
            Err(e) => {
                let code = crate::exit_status(&e);
                if code == crate::exit::USAGE || code == crate::exit::OUTPUT {
                    return Err(e.context(format!("reproduction {}: sweep {}", r.id, sw.name)));
                }
                failure = Some(e.context(format!("sweep {}", sw.name)));
                break;
            }
        }
    }
    let mut evaluation = match failure {
        Some(e) => failed_run(r, &e),
        None => (r.evaluate)(&outputs).unwrap_or_else(|e| failed_run(r, &e)),
    };
    evaluation.claims.iter_mut().for_each(|c| {
        c.ours = one_line(&c.ours);
    });
    files.extend(write_evaluation(r.id, &evaluation, &dir)?);
    Ok(ReproOutcome {
        id: r.id,
        evaluation,
        files,
        status,
    })
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
    for f in &ev.figures {
        if f.plot.series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let png = dir.join(format!("{}.png", f.stem));
        let svg = dir.join(format!("{}.svg", f.stem));
        write_file(&png, &sweep::plot::render_png(&f.plot)?)?;
        write_file(&svg, sweep::plot::render_svg(&f.plot)?.as_bytes())?;
        files.push(png);
        files.push(svg);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["claim", "seed", "rnic", "verdict"])?;
    for c in &ev.claims {
        w.write_record([
            c.id.as_str(),
            c.seed.as_str(),
            c.ours.as_str(),
            verdict(c.pass),
        ])?;
    }
    let p = dir.join("claims.csv");
    write_file(&p, &w.into_inner()?)?;
    files.push(p);
    Ok(files)
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// The claims table: claim id, the seed's claim, rnic's number, verdict.
pub fn claims_table(id: &str, claims: &[Claim]) -> String {
    let rows: Vec<[String; 4]> = claims
        .iter()
        .map(|c| {
            [
                format!("{id}/{}", c.id),
                c.seed.clone(),
                c.ours.clone(),
                verdict(c.pass).to_string(),
            ]
        })
        .collect();
    let header = [
        "claim".to_string(),
        "seed".to_string(),
        "rnic".to_string(),
        "verdict".to_string(),
    ];
    let mut w = [0usize; 4];
    for r in std::iter::once(&header).chain(&rows) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// `rnic repro [ID|all] [--check]`: lists, checks or runs; prints each reproduction's claims
/// table and a summary. Every output directory is checked writable before anything runs.
/// After writing everything, fails with the worst point status's exit status when some
/// sweep point did not end `ok`, else with exit status 1 if any claim fails.
pub fn command(
    id: Option<&str>,
    check_only: bool,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<()> {
    let Some(id) = id else {
        out.write_all(listing().as_bytes())?;
        return Ok(());
    };
    let selected = select(id)?;
    if selected.is_empty() {
        writeln!(out, "no reproductions are registered yet")?;
        return Ok(());
    }
    if check_only {
        for r in selected {
            let n = check(r)?;
            writeln!(
                out,
                "{}: {} sweep file(s), {n} points resolve",
                r.id,
                r.sweeps.len()
            )?;
        }
        return Ok(());
    }
    for r in &selected {
        crate::output::check_dir("reproduction output directory", &opts.out_dir.join(r.id))?;
    }
    let (mut pass, mut total, mut failed) = (0usize, 0usize, Vec::new());
    let (mut worst, mut broken) = (RunStatus::Ok, Vec::new());
    for r in selected {
        let o = run(r, runner, opts, err)?;
        if o.status != RunStatus::Ok {
            worst = worst.max(o.status);
            broken.push(r.id);
        }
        writeln!(out, "== {}: {} ({})", r.id, r.title, r.figure)?;
        if !o.evaluation.notes.is_empty() {
            out.write_all(o.evaluation.notes.as_bytes())?;
        }
        out.write_all(claims_table(r.id, &o.evaluation.claims).as_bytes())?;
        writeln!(out)?;
        writeln!(err, "rnic: wrote {}", opts.out_dir.join(r.id).display())?;
        total += o.evaluation.claims.len();
        pass += o.evaluation.claims.iter().filter(|c| c.pass).count();
        if !o.passed() {
            failed.push(r.id);
        }
    }
    writeln!(out, "{pass} of {total} claims pass")?;
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
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("claims failed in {}", failed.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_id_is_a_usage_error() {
        let e = select("nope").unwrap_err();
        assert!(e.0.contains("nope"));
        assert_eq!(select("all").unwrap().len(), REPROS.len());
    }

    #[test]
    fn groups_select_their_members() {
        let g = select("csrna").unwrap();
        assert_eq!(g.len(), 6);
        assert!(g.iter().all(|r| r.id.starts_with("csrna-")));
    }

    #[test]
    fn every_repro_sweep_parses() {
        for r in REPROS {
            for sw in parse(r).unwrap() {
                assert!(sw.point_count() <= sweep::LARGE_POINTS, "{}", sw.name);
            }
        }
    }

    #[test]
    fn table_aligns_columns() {
        let t = claims_table(
            "x",
            &[
                Claim {
                    id: "a".into(),
                    seed: "s".into(),
                    ours: "ours".into(),
                    pass: true,
                },
                Claim {
                    id: "bbb".into(),
                    seed: "long seed".into(),
                    ours: "o".into(),
                    pass: false,
                },
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].ends_with("PASS") && lines[2].ends_with("FAIL"));
        let col = lines[0].find("verdict").unwrap();
        assert_eq!(lines[1].find("PASS").unwrap(), col);
    }
}
