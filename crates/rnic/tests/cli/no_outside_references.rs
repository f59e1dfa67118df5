//! Nothing in the repository points outside it: no absolute paths of the machine it was
//! written on, no notes that only exist there, no private numbering of papers or tasks. A
//! reader of a clone must be able to follow every reference; papers are cited by title,
//! authors and venue (`docs/claims.md`, the README).
//!
//! Every tracked text file (`git ls-files`; without git, the tree minus `target*`, `.git`
//! and `out`) is searched, case-insensitively, for the needles below.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What must not appear. Built from pieces so that this file does not match itself.
fn needles() -> Vec<String> {
    vec![
        format!("/{}/", "work"),
        format!("{}/", "shared"),
        format!("{} 00", "seed"),
        format!("{}.md", "targets"),
    ]
}

/// "issue" followed by a space and a digit: a task number.
fn task_number(line: &str) -> bool {
    let key = format!("{} ", "issue");
    line.match_indices(&key).any(|(i, _)| {
        line[i + key.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// The text with every line break, and the comment markers and indentation after it,
/// replaced by one space.
fn joined_comments(text: &str) -> String {
    text.lines()
        .map(|l| {
            l.trim_start()
                .trim_start_matches(['/', '!', '#', '*'])
                .trim()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tracked(root: &Path) -> Vec<PathBuf> {
    let git = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output();
    if let Ok(o) = git {
        if o.status.success() {
            return o
                .stdout
                .split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
                .collect();
        }
    }
    let mut files = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if p.is_dir() {
                if !(name.starts_with("target") || name == ".git" || name == "out") {
                    dirs.push(p);
                }
            } else {
                files.push(p);
            }
        }
    }
    files
}

#[test]
fn no_file_points_outside_the_repository() {
    let root = root();
    let needles = needles();
    let mut hits = Vec::new();
    for path in tracked(&root) {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        if bytes.contains(&0) {
            continue; // binary
        }
        let text = String::from_utf8_lossy(&bytes);
        // A needle wrapped over two comment lines ("seed" / "/// 00N") counts too.
        let joined = joined_comments(&text).to_lowercase();
        for k in &needles {
            if joined.contains(k.as_str()) && !text.to_lowercase().contains(k.as_str()) {
                let rel = path.strip_prefix(&root).unwrap_or(&path);
                hits.push(format!("{}: `{k}` across a line break", rel.display()));
            }
        }
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            if needles.iter().any(|k| lower.contains(k.as_str())) || task_number(&lower) {
                let rel = path.strip_prefix(&root).unwrap_or(&path);
                hits.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "{} line(s) point outside the repository:\n{}",
        hits.len(),
        hits.join("\n")
    );
}
