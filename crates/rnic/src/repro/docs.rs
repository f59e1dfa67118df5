//! `docs/claims.md`: every claim the reproductions check, with its threshold and where it
//! comes from in the paper, rendered from the registry so that the document cannot drift
//! from the code (`crates/rnic/tests/repro_docs.rs` compares it with the committed file;
//! `RNIC_BLESS=1` rewrites it).
//!
//! The claim's wording is the evaluator's own (the same text the claims table prints), so
//! the threshold in the document is the one the code applies; the source is the
//! experiment's [`ClaimSource`](super::ClaimSource) for that claim.

use super::{
    disclosures, parse, profile_params, sensitivity, Claim, ClaimKind, ClaimSource, Experiment,
    Outputs, Paper, PAPERS,
};
use std::fmt::Write as _;

/// The claims `e` reports, as its evaluator words them: the evaluator on its sweeps with no
/// results (every claim then fails for want of data, with the wording it has when checked).
pub fn claim_texts(e: &Experiment) -> anyhow::Result<Vec<Claim>> {
    let outputs = Outputs {
        sweeps: parse(e)?.into_iter().map(|s| (s, Vec::new())).collect(),
        dry: true,
    };
    Ok((e.evaluate)(&outputs)?.claims)
}

fn cell(s: &str) -> String {
    s.replace('\n', " ").replace('|', "\\|")
}

fn experiment(s: &mut String, e: &Experiment) -> anyhow::Result<()> {
    let claims = claim_texts(e)?;
    let ids: Vec<&str> = claims.iter().map(|c| c.id.as_str()).collect();
    let registered: Vec<&str> = e.claims.iter().map(|c| c.id).collect();
    anyhow::ensure!(
        ids == registered,
        "{}: the evaluator reports claims {ids:?} but the registry lists {registered:?}",
        e.id
    );
    let _ = writeln!(s, "### `{}`: {} ({})\n", e.id, e.title, e.figure);
    if e.runs_flows {
        let _ = writeln!(
            s,
            "Concurrent flows built by the experiment's evaluator. Run: `rnic repro {}`.\n",
            e.id
        );
    } else if e.sweeps.is_empty() {
        let _ = writeln!(s, "Computed, no simulation. Run: `rnic repro {}`.\n", e.id);
    } else {
        let files: Vec<String> = e.sweeps.iter().map(|f| format!("`{}`", f.path)).collect();
        let _ = writeln!(
            s,
            "Sweeps: {}. Run: `rnic repro {}`.\n",
            files.join(", "),
            e.id
        );
    }
    unstated(s, e);
    s.push_str("| claim | kind | what rnic checks | where it comes from |\n|---|---|---|---|\n");
    for (c, src) in claims.iter().zip(e.claims) {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            c.id,
            kind_cell(e, src),
            cell(&c.paper),
            cell(src.source)
        );
    }
    s.push('\n');
    Ok(())
}

/// The kind, with the commits of any post-hoc change that flipped the claim.
fn kind_cell(e: &Experiment, src: &ClaimSource) -> String {
    let commits: Vec<String> = disclosures::of(e.id, src.id)
        .into_iter()
        .map(|p| format!("[{0}](#post-hoc-changes-that-flipped-a-verdict)", p.commit))
        .collect();
    if commits.is_empty() {
        src.kind.name().to_string()
    } else {
        format!("{}; post-hoc: {}", src.kind.name(), commits.join(", "))
    }
}

/// The parameters `--sensitivity` varies for `e`.
fn unstated(s: &mut String, e: &Experiment) {
    let params = sensitivity::unstated(e.id);
    if params.is_empty() {
        return;
    }
    let keys: Vec<String> = params.iter().map(|u| format!("`{}`", u.key)).collect();
    let _ = writeln!(
        s,
        "Parameters the paper does not state, varied by `--sensitivity`: {}.\n",
        keys.join(", ")
    );
}

/// The kinds' legend.
fn kinds_legend() -> String {
    let mut s = String::from(
        "Each claim has a kind, which says what its pass is worth; the headline of `rnic \
         repro` counts each kind apart:\n\n",
    );
    for k in ClaimKind::ALL {
        let _ = writeln!(s, "- **{}**: {}.", k.name(), k.meaning());
    }
    let mut counts = String::new();
    for k in ClaimKind::ALL {
        let n = super::experiments()
            .flat_map(|e| e.claims)
            .filter(|c| c.kind == k)
            .count();
        let _ = write!(
            counts,
            "{}{n} {}",
            if counts.is_empty() { "" } else { ", " },
            k.name()
        );
    }
    let _ = writeln!(s, "\nRegistered: {counts}.\n");
    s
}

/// The post-hoc changes section.
fn post_hoc() -> String {
    let mut s = String::from(
        "## Post-hoc changes that flipped a verdict\n\n\
         Model or profile changes made after the claim had been measured to miss, each of \
         which flipped its verdict (the numbers are the commits' own measurements). The \
         claims stay in the kind they are, marked with the commit, since a reading chosen \
         after the miss makes a weaker pass than one the model gave first.\n\n\
         | commit | claim | what changed |\n|---|---|---|\n",
    );
    for p in disclosures::POST_HOC {
        let claims: Vec<String> = p
            .claims
            .iter()
            .map(|c| format!("`{}/{c}`", p.experiment))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            p.commit,
            claims.join(", "),
            cell(p.what)
        );
    }
    s.push('\n');
    s
}

fn paper(s: &mut String, p: &Paper) -> anyhow::Result<()> {
    let _ = writeln!(s, "## {}: {}\n", p.short, p.title);
    let _ = write!(s, "{}.", p.citation());
    if !p.numbering.is_empty() {
        let _ = write!(s, " {}", p.numbering);
    }
    s.push_str("\n\n");
    for e in p.experiments {
        experiment(s, e)?;
    }
    Ok(())
}

/// The whole document. Fails when an experiment's evaluator and its registered claim
/// sources disagree on the claims, so a claim cannot be added without saying where it
/// comes from.
pub fn claims_markdown() -> anyhow::Result<String> {
    let mut s = String::from(
        "# Claims the reproductions check\n\n\
         <!-- Generated from the reproduction registry (crates/rnic/src/repro/); \
         `RNIC_BLESS=1 cargo test -p rnic --test repro_docs` rewrites it. -->\n\n\
         Every claim `rnic repro` checks, paper by paper. \"What rnic checks\" is the claim \
         in rnic's words with the threshold the code applies (the same text the claims \
         table prints); \"where it comes from\" names the paper's section, figure or table. \
         Where the paper gives a number, rnic's value must be within ±10 % of it. Where it \
         gives a shape (\"flat\", \"drops dramatically\", \"little effect\"), the threshold \
         is rnic's reading of those words and is marked *ours*. Thresholds come from the \
         paper's words, never from what a run measured, and do not move to make a run \
         pass.\n\n",
    );
    s.push_str(&kinds_legend());
    for p in PAPERS {
        paper(&mut s, p)?;
    }
    s.push_str(&post_hoc());
    s.push_str(&profile_params::markdown()?);
    Ok(s.trim_end().to_string() + "\n")
}
