//! Every relative link of the README and the book (`README.md`, `docs/**/*.md`) leads
//! somewhere: its file exists, and its `#anchor` names a heading of that file, slugged as
//! GitHub renders the repository's Markdown and, for the book's chapters, as mdBook does.
//! Every chapter under `docs/book/src/` is listed in its `SUMMARY.md` (mdBook leaves an
//! unlisted file out of the book without a word).
//!
//! Chapters that only `{{#include}}` a file of `docs/` (architecture, contracts, claims, the
//! speed log) have that file's headings. Links to other sites (`https://`, `mailto:`) are
//! not followed: the suite runs offline.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

mod common;

fn root() -> PathBuf {
    common::repo_root()
}

/// README.md and every Markdown file under docs/.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    common::readme_and_markdown_under(root, "docs")
}

/// The lines of `text` outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if m == open => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// `line` without its inline code spans, where brackets are code, not links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            out.push(c);
        }
    }
    out
}

/// The targets of the inline links and images of `line`: what follows `](` up to `)`.
fn link_targets(line: &str) -> Vec<String> {
    let text = without_code_spans(line);
    text.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &text[i + 2..];
            rest.find(')').map(|end| rest[..end].trim().to_string())
        })
        .filter(|t| !t.is_empty())
        .collect()
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

/// A heading's text as rendered: no code marks or emphasis, links reduced to their text.
fn rendered_heading(raw: &str) -> String {
    let mut out = String::new();
    let mut rest = raw.trim().trim_end_matches('#').trim_end();
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace(['`', '*'], "")
}

/// GitHub's heading id: lower case, letters, digits, `-` and `_` kept, spaces to `-`.
fn github_slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// mdBook's heading id (`normalize_id`): ASCII lower case, whitespace to `-`.
fn mdbook_slug(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// The ids of `slugs`, a repeated one numbered `-1`, `-2`, ... as both renderers do.
fn unique_ids(slugs: impl Iterator<Item = String>) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut ids = BTreeSet::new();
    for slug in slugs {
        let n = seen.entry(slug.clone()).or_insert(0);
        ids.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    ids
}

/// The file's text with each `{{#include PATH}}` line replaced by that file's text.
fn expanded(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let inc = line
                .trim()
                .strip_prefix("{{#include ")
                .and_then(|r| r.strip_suffix("}}"));
            match inc {
                Some(rel) => std::fs::read_to_string(path.parent().unwrap().join(rel.trim()))
                    .unwrap_or_else(|e| panic!("{}: include {rel}: {e}", path.display())),
                None => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The anchors a link may name in `path`: its headings' ids (both renderers' for the
/// book's chapters, which are read on GitHub and in the built book) and explicit
/// `id="..."` / `name="..."` attributes.
fn anchors(path: &Path, in_book: bool) -> BTreeSet<String> {
    let text = expanded(path);
    let headings: Vec<String> = prose_lines(&text)
        .into_iter()
        .filter_map(|(_, l)| {
            let hashes = l.chars().take_while(|&c| c == '#').count();
            ((1..=6).contains(&hashes) && l[hashes..].starts_with(' '))
                .then(|| rendered_heading(&l[hashes..]))
        })
        .collect();
    let github = unique_ids(headings.iter().map(|h| github_slug(h)));
    let mut ids = if in_book {
        let mdbook = unique_ids(headings.iter().map(|h| mdbook_slug(h)));
        github.intersection(&mdbook).cloned().collect()
    } else {
        github
    };
    for attr in ["id=\"", "name=\""] {
        for (i, _) in text.match_indices(attr) {
            let rest = &text[i + attr.len()..];
            if let Some(end) = rest.find('"') {
                ids.insert(rest[..end].to_string());
            }
        }
    }
    ids
}

/// What is wrong with the link `target` written in `file`, if anything.
fn broken(root: &Path, file: &Path, target: &str) -> Option<String> {
    let (path_part, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let dest = if path_part.is_empty() {
        file.to_path_buf()
    } else {
        file.parent().unwrap().join(path_part)
    };
    let Ok(dest) = dest.canonicalize() else {
        return Some("no such file".into());
    };
    if !dest.starts_with(root) {
        return Some("outside the repository".into());
    }
    let anchor = anchor?;
    if dest.extension().is_none_or(|e| e != "md") {
        return Some("an anchor into a file that is not Markdown".into());
    }
    let in_book = dest.starts_with(root.join("docs/book/src"));
    if anchors(&dest, in_book).contains(anchor) {
        None
    } else {
        Some(format!(
            "no heading with the id `{anchor}` in {}",
            dest.display()
        ))
    }
}

#[test]
fn every_relative_link_of_the_docs_leads_to_a_file_and_a_heading() {
    let root = root();
    let files = doc_files(&root);
    assert!(files.len() > 10, "found only {files:?}");
    let mut problems = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line_no, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if is_external(&target) {
                    continue;
                }
                checked += 1;
                if let Some(why) = broken(&root, file, &target) {
                    let shown = file.strip_prefix(&root).unwrap().display();
                    problems.push(format!("{shown}:{line_no}: ({target}): {why}"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the scan broken?"
    );
    assert!(
        problems.is_empty(),
        "broken links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_chapter_of_the_book_is_in_its_table_of_contents() {
    let root = root();
    let src = root.join("docs/book/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = prose_lines(&summary)
        .into_iter()
        .flat_map(|(_, l)| link_targets(l))
        .map(|t| src.join(t))
        .collect();
    let unlisted: Vec<_> = doc_files(&root)
        .into_iter()
        .filter(|f| f.starts_with(&src) && !f.ends_with("SUMMARY.md") && !listed.contains(f))
        .collect();
    assert!(
        unlisted.is_empty(),
        "chapters missing from docs/book/src/SUMMARY.md: {unlisted:?}"
    );
}

#[test]
fn the_slugs_follow_github_and_mdbook() {
    let heading = rendered_heading("The measurement window of `-D` runs");
    assert_eq!(github_slug(&heading), "the-measurement-window-of--d-runs");
    assert_eq!(mdbook_slug(&heading), "the-measurement-window-of--d-runs");
    let heading = rendered_heading("Checking real captures: `rnic pcap check`");
    assert_eq!(
        github_slug(&heading),
        "checking-real-captures-rnic-pcap-check"
    );
    assert_eq!(
        rendered_heading("see [UC and UD](engine.md#uc) here"),
        "see UC and UD here"
    );
    let ids = unique_ids(["a".to_string(), "a".to_string(), "a".to_string()].into_iter());
    assert_eq!(
        ids,
        BTreeSet::from(["a".into(), "a-1".into(), "a-2".into()])
    );
    assert_eq!(
        link_targets("x [a](b.md#c) `[d](e)` ![f](g.png)"),
        vec!["b.md#c", "g.png"]
    );
}

/// The book builds: `mdbook build` reads `SUMMARY.md`, every chapter and every
/// `{{#include}}`, and fails on a missing one. mdbook is an external tool like tshark: a
/// missing one skips this test with a note, unless RNIC_REQUIRE_EXTERNAL_TOOLS=1 or CI is
/// set (as `scripts/test.sh`, which installs it, and CI do).
#[test]
fn the_book_builds_with_mdbook() {
    if !rnic_loopback::conformance::external_tool("mdbook", &["--version"]) {
        return;
    }
    let dest = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("book");
    let out = std::process::Command::new("mdbook")
        .arg("build")
        .arg(root().join("docs/book"))
        .arg("--dest-dir")
        .arg(&dest)
        .output()
        .expect("run mdbook");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "mdbook build failed:\n{log}");
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "mdbook build warned:\n{log}"
    );
    for page in [
        "index.html",
        "repro/csrna.html",
        "claims.html",
        "plots/csrna/peak.png",
    ] {
        assert!(dest.join(page).exists(), "the built book has no {page}");
    }
}
