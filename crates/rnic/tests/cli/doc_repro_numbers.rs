//! The numbers the book's reproduction chapters quote in their claim tables, against what
//! `rnic repro all` measured.
//!
//! `docs/book/src/repro/measured/EXPERIMENT/` holds, for every experiment, the
//! `claims.csv` and the figure data (`EXPERIMENT.csv`) of the last `repro all` run the
//! chapters were written from. The checks:
//!
//! * always: every number in the "rnic" column of a chapter's claim table (a row whose
//!   first cell names an experiment) is in that experiment's claims as written, or is one
//!   of its figure-data values at the precision quoted (in the units the chapters use:
//!   KiB or MiB of a byte count, µs or ms of a ns value, percent of a fraction); and the FAIL
//!   verdicts agree: a row marked FAIL names an experiment with a failing claim, and every
//!   failing claim's experiment has a row marked FAIL. A number that is not a measurement
//!   (a parameter the row recalls) is listed in [`NOT_MEASURED`] with the reason.
//! * always: the README's headline and per-paper counts are the snapshot's.
//! * with `RNIC_DOCS_ALL=1` (it runs `repro all`, minutes on an optimised build, much
//!   longer on the test profile): a fresh run's claims and figure data equal the snapshot,
//!   byte for byte; with `RNIC_BLESS=1` as well, the snapshot is rewritten from the run.
//!
//! After a model change, rerun `repro all`, refresh the snapshot (`RNIC_DOCS_ALL=1
//! RNIC_BLESS=1 cargo test -p rnic --test cli doc_repro_numbers::`, or copy `out/repro/*/claims.csv`
//! and `out/repro/EXP/EXP.csv`), then fix the chapters this test names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rnic::repro::claim::{headline, parse_claims_csv, Claim, ClaimKind};

/// Numbers in claim-table rows that recall a parameter or an earlier run, not this run's
/// measurement: (experiment, number as written without commas, why).
const NOT_MEASURED: &[(&str, &str, &str)] = &[
    (
        "csrna-latency",
        "80",
        "host.mem_latency_ns, the CQE's visibility delay",
    ),
    (
        "csrna-latency",
        "4.23",
        "the level before the CQE's 80 ns, a disclosed earlier run",
    ),
    (
        "csrna-latency",
        "8.7",
        "the same earlier run's distance from the paper",
    ),
    (
        "csrna-memory",
        "76800",
        "a term of the structures' sum, bytes",
    ),
    (
        "csrna-memory",
        "1310720",
        "a term of the structures' sum, bytes",
    ),
    (
        "isolation-depth-map",
        "256",
        "the BS tenants' message size, KB",
    ),
    ("wan-qd", "0.95", "the factor applied to the queue depth"),
    (
        "isolation-backpressure",
        "0.6",
        "the fast tenant's own run length, ms, which the figure data does not hold",
    ),
];

/// One experiment's snapshot: its claims file as text and as read back by `repro`, and its
/// figure data's numbers.
struct Measured {
    text: String,
    claims: Vec<Claim>,
    figure_values: Vec<f64>,
}

fn snapshot_dir() -> PathBuf {
    crate::common::repo_root().join("docs/book/src/repro/measured")
}

fn load(dir: &Path) -> BTreeMap<String, Measured> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(dir).expect("the snapshot directory") {
        let path = entry.expect("an entry").path();
        let exp = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(path.join("claims.csv")).expect("claims.csv");
        let claims = parse_claims_csv(text.as_bytes()).expect("claims.csv parses");
        let figure = std::fs::read_to_string(path.join(format!("{exp}.csv"))).unwrap_or_default();
        let figure_values = figure
            .split([',', '\n'])
            .filter_map(|f| f.trim().parse::<f64>().ok())
            .collect();
        out.insert(
            exp,
            Measured {
                text: text.replace(',', " "),
                claims,
                figure_values,
            },
        );
    }
    out
}

/// The numbers of `text` as written, commas removed ("16,384" → "16384"; "4.31" stays).
fn numbers(text: &str) -> Vec<String> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut n = String::new();
        while i < b.len() {
            let c = b[i];
            let next_digit = b.get(i + 1).is_some_and(|d| d.is_ascii_digit());
            let decimal_point = c == '.' && next_digit && !n.contains('.');
            if c.is_ascii_digit() || decimal_point {
                n.push(c);
            } else if c == ',' && next_digit && b.get(i + 2).is_some_and(|d| d.is_ascii_digit()) {
                // A thousands separator ("16,384"), not a list ("1, 2").
            } else {
                break;
            }
            i += 1;
        }
        out.push(n);
    }
    out
}

/// `n` (as written) appears in `text` as a whole number.
fn appears(text: &str, n: &str) -> bool {
    let t: Vec<char> = text.chars().collect();
    let w: Vec<char> = n.chars().collect();
    (0..t.len().saturating_sub(w.len() - 1)).any(|i| {
        t[i..i + w.len()] == w[..]
            && (i == 0 || !(t[i - 1].is_ascii_digit() || t[i - 1] == '.'))
            && t.get(i + w.len()).is_none_or(|c| !c.is_ascii_digit())
    })
}

/// `n` is one of `values` at its own precision, in one of the units the chapters quote.
fn is_a_value(values: &[f64], n: &str) -> bool {
    let decimals = n.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let Ok(want) = n.parse::<f64>() else {
        return false;
    };
    let scale = 10f64.powi(decimals);
    let units = [1.0, 1.0 / 1024.0, 1.0 / 1_048_576.0, 100.0, 1e-3, 1e-6, 1e3];
    values.iter().any(|v| {
        units
            .iter()
            .any(|u| ((v * u * scale).round() - want * scale).abs() < 0.5)
    })
}

/// A claim-table row of a chapter: its experiments, its rnic cell, and whether it says FAIL.
struct Row {
    chapter: String,
    experiments: Vec<String>,
    rnic: String,
    fails: bool,
}

fn rows(known: &BTreeMap<String, Measured>) -> Vec<Row> {
    let dir = crate::common::repo_root().join("docs/book/src/repro");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("the chapters") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a chapter");
        for line in text.lines().filter(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            if cells.len() < 3 {
                continue;
            }
            let experiments: Vec<String> = known
                .keys()
                .filter(|e| cells[0].contains(e.as_str()))
                .cloned()
                .collect();
            if experiments.is_empty() {
                continue;
            }
            out.push(Row {
                chapter: path.file_name().unwrap().to_string_lossy().to_string(),
                experiments,
                rnic: cells[cells.len() - 2].to_string(),
                fails: cells[cells.len() - 1].contains("FAIL"),
            });
        }
    }
    out
}

#[test]
fn the_claim_tables_quote_what_repro_all_measured() {
    let known = load(&snapshot_dir());
    assert!(
        known.len() >= 29,
        "the snapshot holds {} experiments",
        known.len()
    );
    let rows = rows(&known);
    assert!(
        rows.len() >= 40,
        "only {} claim-table rows found",
        rows.len()
    );
    let mut wrong = Vec::new();
    for row in &rows {
        for n in numbers(&row.rnic) {
            let measured = row.experiments.iter().any(|e| {
                let m = &known[e];
                appears(&m.text, &n) || is_a_value(&m.figure_values, &n)
            });
            let exempt = NOT_MEASURED
                .iter()
                .any(|(e, x, _)| *x == n && row.experiments.iter().any(|r| r == e));
            if !measured && !exempt {
                wrong.push(format!(
                    "{} ({}): {n} in \"{}\"",
                    row.chapter,
                    row.experiments.join(", "),
                    row.rnic
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "numbers the chapters quote that the last repro all did not measure:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_claim_tables_fail_what_repro_all_failed() {
    let known = load(&snapshot_dir());
    let rows = rows(&known);
    let failing: BTreeSet<&String> = known
        .iter()
        .filter(|(_, m)| m.claims.iter().any(|c| !c.pass))
        .map(|(e, _)| e)
        .collect();
    for row in rows.iter().filter(|r| r.fails) {
        assert!(
            row.experiments.iter().any(|e| failing.contains(e)),
            "{}: a row of {} says FAIL, but every claim passed",
            row.chapter,
            row.experiments.join(", ")
        );
    }
    for e in failing {
        assert!(
            rows.iter().any(|r| r.fails && r.experiments.contains(e)),
            "{e} has a failing claim ({:?}) that no chapter row marks FAIL",
            known[e]
                .claims
                .iter()
                .filter(|c| !c.pass)
                .map(|c| &c.id)
                .collect::<Vec<_>>()
        );
    }
}

#[test]
fn the_number_reader_reads_the_chapters_ways_of_writing() {
    assert_eq!(
        numbers("16,384 QPs: 1, 2, 4.31 µs (+10.7 %)"),
        ["16384", "1", "2", "4.31", "10.7"]
    );
    assert!(appears("min 66.7 Mops at 3000", "66.7") && !appears("166.75", "66.7"));
    assert!(is_a_value(&[75.84755], "75.8") && !is_a_value(&[75.84755], "75.9"));
    assert!(is_a_value(&[67_108_864.0], "64") && is_a_value(&[327.68], "0.33"));
}

/// With `RNIC_DOCS_ALL=1`: a fresh `repro all` measures what the snapshot holds.
#[test]
fn a_fresh_repro_all_measures_the_snapshot() {
    if std::env::var_os("RNIC_DOCS_ALL").is_none() {
        eprintln!("skipped: set RNIC_DOCS_ALL=1 to run repro all and compare");
        return;
    }
    let out = crate::common::repo_root().join("target/doc-repro");
    let (code, _, err) =
        crate::common::rnic_at_root(&["repro", "all", "--quiet", "--out", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bless = std::env::var_os("RNIC_BLESS").is_some();
    let mut differ = Vec::new();
    for exp in load(&snapshot_dir()).keys() {
        for file in ["claims.csv".to_string(), format!("{exp}.csv")] {
            let fresh = std::fs::read_to_string(out.join(exp).join(&file)).unwrap_or_default();
            let kept_path = snapshot_dir().join(exp).join(&file);
            let kept = std::fs::read_to_string(&kept_path).unwrap_or_default();
            if fresh != kept {
                differ.push(format!("{exp}/{file}"));
                if bless && !fresh.is_empty() {
                    std::fs::write(&kept_path, fresh).expect("the snapshot is writable");
                }
            }
        }
    }
    assert!(
        bless || differ.is_empty(),
        "the snapshot differs from a fresh run: {differ:?}"
    );
}

/// The README's headline and per-paper counts are the snapshot's: each kind's passing
/// claims of all, and each paper's predictions.
#[test]
fn the_readme_counts_what_repro_all_judged() {
    let known = load(&snapshot_dir());
    let of = |exp_prefix: &str| -> Vec<Claim> {
        let claims = known.iter().filter(|(e, _)| e.starts_with(exp_prefix));
        claims.flat_map(|(_, m)| m.claims.iter().cloned()).collect()
    };
    let predictions = |exp_prefix: &str| {
        let all: Vec<Claim> = of(exp_prefix)
            .into_iter()
            .filter(|c| c.kind == Some(ClaimKind::Prediction))
            .collect();
        (all.iter().filter(|c| c.pass).count(), all.len())
    };
    let papers = [
        ("csrna-", "csRNA"),
        ("isolation-", "TX isolation"),
        ("prefetch-", "prefetching"),
        ("wan-", "long distance"),
        ("ornic-", "ORNIC"),
        ("dcqcn-", "DCQCN"),
    ];
    let per_paper: Vec<String> = papers
        .iter()
        .map(|(prefix, name)| {
            let (pass, all) = predictions(prefix);
            format!("{name} {pass}/{all}")
        })
        .collect();
    let readme = std::fs::read_to_string(crate::common::repo_root().join("README.md")).unwrap();
    let flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    let want = [
        format!("runs the {} experiments", known.len()),
        headline(&of("")),
        format!("(predictions: {})", per_paper.join(", ")),
    ];
    for w in &want {
        assert!(flat.contains(w.as_str()), "the README does not say \"{w}\"");
    }
    // The table of papers: each paper's predictions, in the table's order.
    let table: Vec<String> = papers
        .iter()
        .map(|(prefix, _)| {
            let (pass, all) = predictions(prefix);
            format!("| {pass} of {all} |")
        })
        .collect();
    let rows: Vec<&str> = readme
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("[`repro "))
        .collect();
    for (cell, paper) in table.iter().zip(papers) {
        let row = rows
            .iter()
            .find(|r| r.contains(&format!("`repro {}`", paper.0.trim_end_matches('-'))))
            .unwrap_or_else(|| panic!("no README row for {}", paper.1));
        assert!(
            row.ends_with(cell.as_str()),
            "README row for {}: want {cell}: {row}",
            paper.1
        );
    }
}
