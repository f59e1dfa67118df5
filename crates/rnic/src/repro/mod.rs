//! `rnic repro`: reproductions of published papers' claims.
//!
//! One registry, [`PAPERS`], and one module per paper ([`csrna`]). A paper module declares a
//! [`Paper`] (its citation and its experiments) and nothing else: the shared modules do the
//! rest. An [`Experiment`] is
//! - one or more committed sweep files (`scenarios/repro/<paper>/...`, compiled into the
//!   binary with `sweep_file!`) run with the sweep runner;
//! - the claims it checks, each with where it comes from in the paper ([`ClaimSource`]);
//! - an evaluator: reads the sweeps' results as curves ([`curve`]), checks each claim
//!   ([`claim`]: ±10 % where the paper gives a number, the stated shape otherwise) and draws
//!   figures shaped like the paper's ([`figure`]).
//!
//! Every claim, with its threshold and its source, is listed in `docs/claims.md`, generated
//! from this registry ([`docs`]) and kept in sync by a test. Every experiment also has a
//! reduced run through the model in `tests/repro_<key>_reduced.rs` (a few points per claim,
//! the same evaluator; [`run_sweeps`] runs it), which `tests/cli/repro_registry.rs` requires.
//!
//! Outputs go to `<out>/<id>/`: the sweeps' own CSV, JSON and per-metric plots, plus
//! `<id>.csv` (the figures' data), `<stem>.png`/`.svg` (the figures), `claims.csv` and
//! `section.md`; `<out>/REPORT.md` gathers the sections, paper by paper ([`report`]). The
//! printed table has one row per claim: id, the paper's claim, rnic's number, PASS/FAIL.
//!
//! Ids: `csrna-peak` runs one experiment, `csrna` (a paper's key) every experiment of that
//! paper, `all` every experiment; `list` (or no id) lists them; `--check` resolves every
//! point of every sweep without simulating.

pub mod claim;
pub mod csrna;
pub mod curve;
pub mod dcqcn;
pub mod disclosures;
pub mod docs;
pub mod figure;
pub mod isolation;
pub mod ornic;
pub mod prefetch;
pub mod profile_params;
pub mod report;
mod run;
pub mod sensitivity;
pub mod wan;

pub use claim::{claims_table, headline, Claim, ClaimKind, ClaimSource};
pub use figure::Figure;
pub use run::{check, command, parse, run, run_sweeps, Judging, ReproOptions, ReproOutcome};

use crate::report::PerfResult;
use crate::sweep::{Point, Sweep};
use crate::UsageError;

/// Every paper, in `rnic repro all` order. A new paper is one module and one entry here.
pub const PAPERS: &[&Paper] = &[
    &csrna::PAPER,
    &isolation::PAPER,
    &prefetch::PAPER,
    &wan::PAPER,
    &ornic::PAPER,
    &dcqcn::PAPER,
];

/// Ids that are commands, not experiments or papers.
pub const RESERVED: &[&str] = &["all", "list"];

/// A paper whose claims rnic reproduces.
#[derive(Debug, Clone, Copy)]
pub struct Paper {
    /// Key on the command line (`rnic repro csrna`); every experiment id starts with
    /// `<key>-`.
    pub key: &'static str,
    /// Short title, e.g. `csRNA`.
    pub short: &'static str,
    /// Full title.
    pub title: &'static str,
    /// Authors, as printed.
    pub authors: &'static str,
    /// Where it appeared.
    pub venue: &'static str,
    /// Which version's section, figure and table numbers the experiments cite (empty when
    /// there is one version).
    pub numbering: &'static str,
    /// Its experiments, in run order.
    pub experiments: &'static [Experiment],
}

impl Paper {
    /// "authors, *title*, venue": the citation used in listings, the report and the docs.
    pub fn citation(&self) -> String {
        format!("{}, \"{}\", {}", self.authors, self.title, self.venue)
    }
}

/// A committed sweep file of an experiment.
#[derive(Debug, Clone, Copy)]
pub struct SweepFile {
    /// Path in the repository, e.g. `scenarios/repro/csrna/peak.toml`.
    pub path: &'static str,
    /// Its text (compiled in).
    pub toml: &'static str,
}

/// A [`SweepFile`] from a path under `scenarios/repro/`, e.g.
/// `sweep_file!("csrna/peak.toml")`; the text is compiled in, so the binary runs the
/// committed file wherever it is started.
macro_rules! sweep_file {
    ($path:literal) => {
        $crate::repro::SweepFile {
            path: concat!("scenarios/repro/", $path),
            toml: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/repro/",
                $path
            )),
        }
    };
}
pub(crate) use sweep_file;

/// One experiment: a figure or table of a paper, re-run and checked.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Id used on the command line, `<paper key>-<name>`, e.g. `csrna-peak`.
    pub id: &'static str,
    /// One-line description of what it shows.
    pub title: &'static str,
    /// The paper's figure or table, e.g. "Fig. 7a".
    pub figure: &'static str,
    /// The experiment: zero or more sweep files.
    pub sweeps: &'static [SweepFile],
    /// The evaluator simulates concurrent flows itself (a sweep runs one flow per point);
    /// it skips them when [`Outputs::dry`] (the claims' wording is wanted, not results).
    pub runs_flows: bool,
    /// Every claim the evaluator reports, in its order, with where it comes from.
    pub claims: &'static [ClaimSource],
    /// Checks the claims on the results and draws the figures.
    pub evaluate: fn(&Outputs) -> anyhow::Result<Evaluation>,
}

/// The results of an experiment's sweeps, in [`Experiment::sweeps`] order.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub sweeps: Vec<(Sweep, Vec<(Point, PerfResult)>)>,
    /// Only the claims' wording is wanted (`docs/claims.md`): evaluators that simulate on
    /// their own ([`Experiment::runs_flows`]) run nothing.
    pub dry: bool,
}

/// What an evaluator returns.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    /// Text printed before the claims table (e.g. a table of the paper).
    pub notes: String,
    pub claims: Vec<Claim>,
    pub figures: Vec<Figure>,
    /// The figures' data as CSV (written as `<id>.csv`).
    pub csv: String,
}

impl Evaluation {
    /// Claims and figures, with the figures' data as the CSV (none without figures: an
    /// experiment without figures wrote a CSV of its header alone, which the report linked
    /// as its figure data) and no notes.
    pub fn new(claims: Vec<Claim>, figures: Vec<Figure>) -> Evaluation {
        Evaluation {
            csv: if figures.is_empty() {
                String::new()
            } else {
                figure::figures_csv(&figures)
            },
            notes: String::new(),
            claims,
            figures,
        }
    }
}

/// Every experiment of every paper, in registry order.
pub fn experiments() -> impl Iterator<Item = &'static Experiment> {
    PAPERS.iter().flat_map(|p| p.experiments.iter())
}

/// The ids of all experiments.
pub fn ids() -> Vec<&'static str> {
    experiments().map(|e| e.id).collect()
}

/// The paper an experiment id belongs to.
pub fn paper_of(id: &str) -> Option<&'static Paper> {
    PAPERS
        .iter()
        .copied()
        .find(|p| p.experiments.iter().any(|e| e.id == id))
}

/// Looks up `id`: `all` selects every experiment, a paper's key every experiment of that
/// paper, an experiment id that experiment. Unknown ids are usage errors that list the
/// known ones.
pub fn select(id: &str) -> Result<Vec<&'static Experiment>, UsageError> {
    if id == "all" {
        return Ok(experiments().collect());
    }
    if let Some(e) = experiments().find(|e| e.id == id) {
        return Ok(vec![e]);
    }
    match PAPERS.iter().find(|p| p.key == id) {
        Some(p) => Ok(p.experiments.iter().collect()),
        None => Err(UsageError(format!(
            "unknown reproduction `{id}`; {}",
            known_list()
        ))),
    }
}

/// "known reproductions: a, b, ..., all" or a note that there are none yet.
pub fn known_list() -> String {
    if experiments().next().is_none() {
        "no reproductions are registered yet (use `all` to run every one)".to_string()
    } else {
        let mut names = ids();
        names.extend(PAPERS.iter().map(|p| p.key));
        format!("known reproductions: {}, all, list", names.join(", "))
    }
}

/// The listing printed by `rnic repro list` (and `rnic repro`): one line per experiment
/// (id, paper, figure, what it shows), one per paper key and one for `all`, then the
/// papers' citations.
pub fn listing() -> String {
    if experiments().next().is_none() {
        return "no reproductions are registered yet\n".to_string();
    }
    let mut rows: Vec<[String; 4]> = vec![[
        "id".into(),
        "paper".into(),
        "figure".into(),
        "experiment".into(),
    ]];
    for p in PAPERS {
        for e in p.experiments {
            rows.push([e.id.into(), p.short.into(), e.figure.into(), e.title.into()]);
        }
    }
    for p in PAPERS {
        rows.push([
            p.key.into(),
            p.short.into(),
            String::new(),
            format!("every {} experiment", p.short),
        ]);
    }
    rows.push([
        "all".into(),
        String::new(),
        String::new(),
        "every experiment; writes REPORT.md in the output directory".into(),
    ]);
    let mut w = [0usize; 3];
    for r in &rows {
        for (i, c) in r.iter().take(3).enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in &rows {
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
    s.push_str("\npapers:\n");
    for p in PAPERS {
        s.push_str(&format!("  {}: {}\n", p.short, p.citation()));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An experiment without figures has no figure data: no CSV to write or link (it wrote
    /// one of the header alone, `dcqcn-two-flows.csv` and `dcqcn-incast.csv`).
    #[test]
    fn an_evaluation_without_figures_has_no_figure_data() {
        let c = claim::claim("c", "p", "o".into(), true);
        assert_eq!(Evaluation::new(vec![c], Vec::new()).csv, "");
    }

    #[test]
    fn unknown_id_is_a_usage_error() {
        let e = select("nope").unwrap_err();
        assert!(e.0.contains("nope") && e.0.contains("list"));
        assert_eq!(select("all").unwrap().len(), experiments().count());
    }

    #[test]
    fn paper_keys_select_their_experiments() {
        let g = select("csrna").unwrap();
        assert_eq!(g.len(), 7);
        assert!(g.iter().all(|r| r.id.starts_with("csrna-")));
        assert_eq!(paper_of("csrna-peak").map(|p| p.key), Some("csrna"));
        assert!(paper_of("nope").is_none());
    }

    #[test]
    fn ids_are_unique_prefixed_and_not_reserved() {
        let mut seen = std::collections::HashSet::new();
        for p in PAPERS {
            assert!(!RESERVED.contains(&p.key), "{}", p.key);
            assert!(seen.insert(p.key), "{}", p.key);
            for e in p.experiments {
                assert!(e.id.starts_with(&format!("{}-", p.key)), "{}", e.id);
                assert!(seen.insert(e.id), "{}", e.id);
            }
        }
    }

    #[test]
    fn every_repro_sweep_parses() {
        for e in experiments() {
            for sw in parse(e).unwrap() {
                assert!(
                    sw.point_count() <= crate::sweep::LARGE_POINTS,
                    "{}",
                    sw.name
                );
            }
        }
    }

    #[test]
    fn listing_names_paper_and_figure() {
        let l = listing();
        let peak = l.lines().find(|l| l.starts_with("csrna-peak ")).unwrap();
        assert!(peak.contains("csRNA") && peak.contains("Fig. 7a"), "{peak}");
        assert!(
            l.contains("Towards Connection-Scalable RNIC Architecture"),
            "{l}"
        );
    }
}
