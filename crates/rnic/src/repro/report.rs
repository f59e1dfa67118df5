//! `REPORT.md`: one Markdown report of every reproduction in an output directory.
//!
//! Each experiment writes its section (`<out>/<id>/section.md`: title, claims table, notes,
//! figures) next to its other outputs; the report is the papers' headers (title, authors,
//! venue) with their experiments' sections, in registry order. It is rebuilt from the
//! sections on disk after every run, so `rnic repro csrna-peak` refreshes that section and
//! keeps the others from earlier runs, marked as such, instead of dropping them. Links are
//! relative to the report, so the directory can be moved or published as it is.

use super::claim::{headline, kind_name, parse_claims_csv, verdict, Claim};
use super::{Evaluation, Experiment, Paper, PAPERS};
use crate::report::RunStatus;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The report's file name in the output directory.
pub const REPORT: &str = "REPORT.md";

/// An experiment's section, in its directory.
pub const SECTION: &str = "section.md";

/// `<out>/REPORT.md`.
pub fn path(out_dir: &Path) -> PathBuf {
    out_dir.join(REPORT)
}

/// A table cell: one line, with `|` escaped.
fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

/// The experiment's heading line.
fn heading(e: &Experiment) -> String {
    format!("### {}: {} ({})\n", e.id, e.title, e.figure)
}

/// Markdown table of claims: claim, its kind, the paper's words, rnic's number, verdict, and
/// what flips it when `--sensitivity` was given.
pub fn claims_markdown(claims: &[Claim]) -> String {
    let sensitivity = claims.iter().any(|c| c.sensitivity.is_some());
    let mut s = String::from("| claim | kind | the paper | rnic | verdict |");
    s.push_str(if sensitivity {
        " sensitivity |\n|---|---|---|---|---|---|\n"
    } else {
        "\n|---|---|---|---|---|\n"
    });
    for c in claims {
        let _ = write!(
            s,
            "| `{}` | {} | {} | {} | {} |",
            c.id,
            kind_name(c),
            cell(&c.paper),
            cell(&c.ours),
            verdict(c.pass)
        );
        if sensitivity {
            let _ = write!(
                s,
                " {} |",
                cell(c.sensitivity.as_deref().unwrap_or_default())
            );
        }
        s.push('\n');
    }
    s
}

/// The section of one experiment's run: heading, verdict count, a warning when sweep points
/// did not end ok, the claims table, the notes, the figures (PNG shown, SVG linked) and
/// links to the data. Links are relative to the report (`<id>/<file>`).
pub fn section(e: &Experiment, ev: &Evaluation, status: RunStatus, sweeps: &[String]) -> String {
    let mut s = heading(e);
    let _ = writeln!(s, "\n{}.\n", headline(&ev.claims));
    if status != RunStatus::Ok {
        let _ = writeln!(
            s,
            "**Sweep points did not end ok (worst status: {}), so the claims were not \
             checked**; the sweeps' CSV `status` and `reason` columns say why.\n",
            status.name()
        );
    }
    s.push_str(&claims_markdown(&ev.claims));
    if !ev.notes.is_empty() {
        let _ = write!(s, "\n```text\n{}```\n", ev.notes);
    }
    let drawn: Vec<&str> = ev
        .figures
        .iter()
        .filter(|f| !f.is_empty())
        .map(|f| f.stem.as_str())
        .collect();
    if !drawn.is_empty() {
        s.push('\n');
        for stem in &drawn {
            let _ = writeln!(s, "![{stem}]({}/{stem}.png)", e.id);
        }
    }
    let mut links = Vec::new();
    for stem in &drawn {
        links.push(format!("[{stem}.svg]({}/{stem}.svg)", e.id));
    }
    if !ev.csv.is_empty() {
        links.push(format!("[figure data]({0}/{0}.csv)", e.id));
    }
    links.push(format!("[claims]({}/claims.csv)", e.id));
    for name in sweeps {
        links.push(format!("[sweep {name}]({}/{name}.csv)", e.id));
    }
    let _ = writeln!(s, "\nFiles: {}.", links.join(", "));
    s
}

/// Writes the section of `e` to `<out>/<id>/section.md`.
pub fn write_section(
    e: &Experiment,
    ev: &Evaluation,
    status: RunStatus,
    sweeps: &[String],
    out_dir: &Path,
) -> anyhow::Result<PathBuf> {
    let p = out_dir.join(e.id).join(SECTION);
    crate::report::json::write_file(&p, section(e, ev, status, sweeps).as_bytes())?;
    Ok(p)
}

/// What the report knows of one experiment.
enum Found {
    /// Its section and claims, and whether this command ran it.
    Section {
        text: String,
        claims: Vec<Claim>,
        now: bool,
    },
    NotRun,
}

fn found(out_dir: &Path, e: &Experiment, ran: &[&str]) -> anyhow::Result<Found> {
    let dir = out_dir.join(e.id);
    let text = match std::fs::read_to_string(dir.join(SECTION)) {
        Ok(t) => t,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Found::NotRun),
        Err(err) => return Err(anyhow::anyhow!("{}: {err}", dir.join(SECTION).display())),
    };
    let claims = match std::fs::read(dir.join("claims.csv")) {
        Ok(b) => parse_claims_csv(&b)?,
        Err(_) => Vec::new(),
    };
    Ok(Found::Section {
        text,
        claims,
        now: ran.contains(&e.id),
    })
}

fn paper_header(p: &Paper) -> String {
    let mut s = format!("## {}: {}\n\n{}.", p.short, p.title, p.citation());
    if !p.numbering.is_empty() {
        let _ = write!(s, " {}", p.numbering);
    }
    s.push_str("\n\n");
    s
}

/// The report of `out_dir` after `rnic repro <command>` ran the experiments `ran`: every
/// paper with its experiments' sections found on disk, in registry order.
pub fn render(out_dir: &Path, command: &str, ran: &[&str]) -> anyhow::Result<String> {
    let mut body = String::new();
    let (mut all, mut earlier, mut missing) = (Vec::new(), 0, 0);
    for p in PAPERS {
        let (mut sections, mut paper_claims, mut any) = (String::new(), Vec::new(), false);
        let mut not_run = Vec::new();
        for e in p.experiments {
            match found(out_dir, e, ran)? {
                Found::Section { text, claims, now } => {
                    any = true;
                    paper_claims.extend(claims);
                    let (head, rest) = text.split_once('\n').unwrap_or((&text, ""));
                    sections.push_str(head);
                    sections.push('\n');
                    if !now {
                        earlier += 1;
                        sections.push_str(
                            "\n*Earlier run: not run by this command; its files are from an \
                             earlier run into this directory.*\n",
                        );
                    }
                    sections.push_str(rest);
                    sections.push('\n');
                }
                Found::NotRun => {
                    missing += 1;
                    not_run.push(e);
                }
            }
        }
        body.push_str(&paper_header(p));
        if !any {
            let _ = writeln!(body, "Not run yet: `rnic repro {}`.\n", p.key);
            continue;
        }
        let _ = writeln!(body, "**{}: {}.**\n", p.short, headline(&paper_claims));
        body.push_str(&sections);
        for e in not_run {
            body.push_str(&heading(e));
            let _ = writeln!(body, "\nNot run yet: `rnic repro {}`.\n", e.id);
        }
        all.extend(paper_claims);
    }
    let mut s = String::from("# rnic reproduction report\n\n");
    let _ = writeln!(
        s,
        "Written by `rnic repro {command}`. Per paper, each experiment's claims (the paper's \
         words with the threshold rnic applies, rnic's number, the verdict) and its figures; \
         every file linked here is in the experiment's directory next to this report. \
         `docs/claims.md` in the repository says where each threshold comes from.\n"
    );
    let ran_sections = PAPERS.iter().flat_map(|p| p.experiments.iter()).count() - earlier - missing;
    let _ = writeln!(
        s,
        "**{}** ({ran_sections} experiment(s) run by this command, {earlier} from earlier \
         runs, {missing} not run yet). A prediction is a simulated number the model was not \
         fitted to; a calibration a number a model parameter was set from; a calculation a \
         closed form on the paper's inputs; a structural check holds by construction of the \
         model or workload (`docs/claims.md` classifies every claim).\n",
        headline(&all)
    );
    s.push_str(&body);
    Ok(s)
}

/// Renders and writes `<out>/REPORT.md`.
pub fn write_report(out_dir: &Path, command: &str, ran: &[&str]) -> anyhow::Result<PathBuf> {
    let p = path(out_dir);
    crate::report::json::write_file(&p, render(out_dir, command, ran)?.as_bytes())?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repro::{claim::claim, select};

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rnic-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn cells_stay_in_their_column() {
        let t = claims_markdown(&[claim("a", "x | y", "1\n2".into(), false)]);
        assert!(t.ends_with("| `a` | - | x \\| y | 1 2 | FAIL |\n"), "{t}");
    }

    #[test]
    fn report_keeps_earlier_sections_and_names_the_missing() {
        let d = tmp("merge");
        let e = select("csrna-peak").unwrap()[0];
        let mut c = claim("c", "p", "o".into(), true);
        c.kind = Some(crate::repro::ClaimKind::Prediction);
        let ev = Evaluation::new(vec![c], vec![]);
        write_section(e, &ev, RunStatus::Ok, &["peak".into()], &d).unwrap();
        crate::report::json::write_file(
            &d.join(e.id).join("claims.csv"),
            &crate::repro::claim::claims_csv(&ev.claims).unwrap(),
        )
        .unwrap();
        let now = render(&d, "csrna-peak", &["csrna-peak"]).unwrap();
        let others = crate::repro::experiments().count() - 1;
        assert!(now.contains(&format!("**1 of 1 predictions pass** (1 experiment(s) run by this command, 0 from earlier runs, {others} not run yet)")), "{now}");
        assert!(
            now.contains("### csrna-fcfs: ")
                && now.contains("Not run yet: `rnic repro csrna-fcfs`"),
            "{now}"
        );
        assert!(now.contains("**csRNA: 1 of 1 predictions pass.**"), "{now}");
        assert!(
            now.contains("[sweep peak](csrna-peak/peak.csv)") && !now.contains("Earlier run"),
            "{now}"
        );
        let later = render(&d, "csrna-fcfs", &["csrna-fcfs"]).unwrap();
        assert!(later.contains("*Earlier run:"), "{later}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
