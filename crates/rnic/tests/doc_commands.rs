//! The outputs the README and the book quote are what the commands print today.
//!
//! Every ```` ```console ```` block of `README.md` and `docs/book/src/**/*.md` is run by
//! trycmd: each `$ rnic ...` line runs the binary this suite built (standard error merged
//! into standard output, as a terminal shows both), and its output must match the lines
//! below it. A line `...` stands for any number of lines the docs do not quote, `[..]` for
//! any text within a line (a wall-clock time); a `? 2` line after the command states a
//! non-zero exit status.
//!
//! When a change moves a quoted number on purpose, rewrite the blocks from real runs:
//!
//! ```sh
//! TRYCMD=overwrite cargo test -p rnic --test doc_commands
//! ```
//!
//! then read the diff (overwrite replaces a block's output whole, `...` included, so put the
//! elisions back where the docs quote only part) and fix the prose around it.
//!
//! The commands run in a scratch directory holding a copy of `scenarios/`, so their
//! outputs (`out/...`, pcaps) never touch the clone. A block too slow for the suite (it
//! runs unoptimised) is marked ```` ```console,ignore ```` and listed in [`TOO_SLOW`] with
//! its cost; the test fails when the two disagree, so the list stays the truth. Those run
//! too with `RNIC_DOCS_ALL=1 cargo test --release -p rnic --test doc_commands` (checked,
//! not rewritten: overwrite mode then writes to scratch copies), except the ones in
//! [`NEEDS_A_SETUP`]: root, a second process or host, a QEMU guest.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The blocks marked `console,ignore`: (file, command, why it is not run here).
const TOO_SLOW: &[(&str, &str, &str)] = &[
    (
        "README.md",
        "rnic sweep scenarios/tour.toml --out out/tour",
        "8 points, 3.6 s optimised on 2 cores",
    ),
    (
        "README.md",
        "rnic repro wan-qd --out out/repro --quiet",
        "11 points over a 100 km link, 8 s optimised",
    ),
    (
        "docs/book/src/measurement.md",
        "rnic perf write-bw -s 16 -q 3000 -t 16 --clients 10 --profile csrna -D 0.0005",
        "3.5 M events, 1 s optimised",
    ),
    (
        "docs/book/src/measurement.md",
        "rnic perf write-bw -s 64 -q 8 --clients 2 -D 0.001 --set net.impair.loss=0.01",
        "6.8 M events, 1.4 s optimised",
    ),
    (
        "docs/book/src/flows.md",
        "rnic run scenarios/fabrics/websearch-small.toml --json out/websearch-small.json",
        "1.4 M events, 1.1 s optimised; tests/workload.rs runs a reduced version",
    ),
    (
        "docs/book/src/flows.md",
        "rnic run scenarios/fabrics/websearch-small.toml",
        "1.4 M events, 1.1 s optimised; tests/workload.rs checks the folded row and --all-flows",
    ),
    (
        "README.md",
        "rnic run scenarios/fabrics/websearch-small.toml --set net.cc=dcqcn --set net.ecn.enabled=true",
        "1.4 M events, 1.1 s optimised; tests/workload.rs runs a reduced version",
    ),
    (
        "docs/book/src/sweeps.md",
        "rnic sweep scenarios/fabrics/sweep-websearch-load.toml --out out/",
        "6 points, 6.3 s unoptimised on 2 cores; tests/cli/workload_sweep.rs runs a reduced version",
    ),
    (
        "docs/book/src/live/rxe-peer.md",
        "sudo scripts/rxe-peer.sh start",
        "boots a QEMU guest (root, about 25 s); crates/rnic/tests/rxe_interop.rs runs it",
    ),
    (
        "README.md",
        "sudo rnic live write-bw --server --bind 10.0.0.1            # on one host",
        "two hosts and root (tests/rxe_interop.rs runs rnic live against rxe)",
    ),
    (
        "docs/book/src/live/accel.md",
        "rnic accel --local veth-l --remote veth-r --emulate-link 5ms,1% --seed 1 --idle-exit-ms 2000",
        "root and two interfaces between network namespaces",
    ),
    (
        "docs/book/src/live/index.md",
        "rnic live write-bw --server --bind 127.0.0.1",
        "two processes, root and real sockets (tests/live_loopback.rs runs them)",
    ),
    (
        "docs/book/src/live/index.md",
        "rnic live write-bw --server --bind 127.0.0.1 -p 18611 &",
        "a speed measurement: two processes, root, seconds of wall time",
    ),
];

/// The commands of [`TOO_SLOW`] that `RNIC_DOCS_ALL=1` leaves out too: they need a setup
/// this test does not make (their own tests run them).
const NEEDS_A_SETUP: &[&str] = &[
    "sudo scripts/rxe-peer.sh start",
    "sudo rnic live write-bw --server --bind 10.0.0.1            # on one host",
    "rnic accel --local veth-l --remote veth-r --emulate-link 5ms,1% --seed 1 --idle-exit-ms 2000",
    "rnic live write-bw --server --bind 127.0.0.1",
    "rnic live write-bw --server --bind 127.0.0.1 -p 18611 &",
];

mod common;

fn root() -> PathBuf {
    common::repo_root()
}

/// README.md and the book's chapters.
fn docs(root: &Path) -> Vec<PathBuf> {
    common::readme_and_markdown_under(root, "docs/book/src")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the scratch copy");
    for entry in std::fs::read_dir(from)
        .expect("read a directory to copy")
        .flatten()
    {
        let dest = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy a file");
        }
    }
}

/// (file relative to the root, first command) of every `console,ignore` block.
fn ignored_blocks(root: &Path, files: &[PathBuf]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            if line.trim_start().starts_with("```console,ignore") {
                let command = lines
                    .next()
                    .and_then(|l| l.strip_prefix("$ "))
                    .unwrap_or("")
                    .to_string();
                let rel = file.strip_prefix(root).unwrap().display().to_string();
                found.push((rel, command));
            }
        }
    }
    found
}

#[test]
fn the_slow_list_names_exactly_the_blocks_left_out() {
    let root = root();
    let mut listed: Vec<(String, String)> = TOO_SLOW
        .iter()
        .map(|(f, c, _)| (f.to_string(), c.to_string()))
        .collect();
    let mut found = ignored_blocks(&root, &docs(&root));
    for command in NEEDS_A_SETUP {
        assert!(
            listed.iter().any(|(_, c)| c == command),
            "NEEDS_A_SETUP names {command:?}, which TOO_SLOW does not"
        );
    }
    listed.sort();
    found.sort();
    assert_eq!(
        found, listed,
        "the `console,ignore` blocks of the docs and TOO_SLOW in this file disagree"
    );
}

#[test]
fn every_console_block_of_the_docs_prints_what_it_quotes() {
    let root = root();
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("doc-commands");
    let _ = std::fs::remove_dir_all(&scratch);
    // Scenario files name flow-size distributions by their path from the working directory.
    for dir in ["scenarios", "workloads"] {
        copy_dir(&root.join(dir), &scratch.join(dir));
    }
    // trycmd runs each command in the current directory; this binary's other test does not
    // depend on it.
    std::env::set_current_dir(&scratch).expect("enter the scratch directory");
    let cases = trycmd::TestCases::new();
    cases
        .register_bin("rnic", PathBuf::from(env!("CARGO_BIN_EXE_rnic")))
        .env("CI", "true")
        .timeout(Duration::from_secs(300));
    let run_slow = std::env::var_os("RNIC_DOCS_ALL").is_some_and(|v| v == "1");
    for file in docs(&root) {
        cases.case(if run_slow {
            with_slow_blocks(&file, &scratch)
        } else {
            file
        });
    }
}

/// For `RNIC_DOCS_ALL=1`: a copy of `file` in `scratch` whose `console,ignore` blocks run
/// too (the file itself when it has none). Overwrite mode rewrites the copy, not the docs.
fn with_slow_blocks(file: &Path, scratch: &Path) -> PathBuf {
    let text = std::fs::read_to_string(file).unwrap();
    if !text.contains("```console,ignore") {
        return file.to_path_buf();
    }
    let name = file.to_string_lossy().replace(['/', '\\'], "_");
    let copy = scratch.join("slow").join(name);
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let command = lines
            .peek()
            .and_then(|l| l.strip_prefix("$ "))
            .unwrap_or("");
        if line.trim_start().starts_with("```console,ignore") && !NEEDS_A_SETUP.contains(&command) {
            out.push_str(&line.replace("```console,ignore", "```console"));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    std::fs::write(&copy, out).unwrap();
    copy
}
