//! An output that lands on one of the command's own input files is refused (exit 2) before
//! anything runs or is written: the capture to check, a scenario or sweep file, a topology
//! file or a workload's CDF. Each input is left byte for byte as it was.

use crate::common::{repo_root, rnic_in};
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-spare-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `args` in `dir` and checks the refusal: exit 2, the flag and the input named, and
/// `input` (relative to `dir`) unchanged.
fn refused(dir: &Path, args: &[&str], flag: &str, input: &str) {
    let before = std::fs::read(dir.join(input)).unwrap();
    let (code, _, err) = rnic_in(args, dir);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(
        err.contains(flag) && err.contains(input) && err.contains("would replace the input"),
        "{args:?}: {err}"
    );
    assert_eq!(std::fs::read(dir.join(input)).unwrap(), before, "{args:?}");
}

/// `pcap check same.pcap --json same.pcap` exited 0 having replaced the capture with its
/// JSON report (through a symlink too); `run sc.toml --json sc.toml` replaced the scenario.
#[test]
fn an_output_naming_an_input_file_is_refused() {
    let d = scratch("all");
    let root = repo_root();
    let capture = root.join("crates/rnic/tests/golden/send-bw-4K-pcap.pcap");
    std::fs::copy(capture, d.join("same.pcap")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(d.join("same.pcap"), d.join("link.json")).unwrap();
    std::fs::copy(root.join("scenarios/write-bw-64B.toml"), d.join("sc.toml")).unwrap();
    std::fs::copy(root.join("workloads/websearch.cdf"), d.join("w.cdf")).unwrap();
    std::fs::copy(
        root.join("scenarios/topologies/two-tor.toml"),
        d.join("t.toml"),
    )
    .unwrap();
    std::fs::write(
        d.join("wl.toml"),
        "name = \"wl\"\n[set]\nnet.clients = 3\n[workload]\ncdf = \"w.cdf\"\nload = 0.1\n\
         duration_us = 5\n",
    )
    .unwrap();
    std::fs::copy(
        root.join("scenarios/sweep-qpc-scaling.toml"),
        d.join("sw.toml"),
    )
    .unwrap();
    refused(
        &d,
        &["pcap", "check", "same.pcap", "--json", "same.pcap"],
        "--json",
        "same.pcap",
    );
    #[cfg(unix)]
    refused(
        &d,
        &["pcap", "check", "same.pcap", "--json", "link.json"],
        "--json",
        "same.pcap",
    );
    refused(
        &d,
        &["run", "sc.toml", "--json", "sc.toml"],
        "--json",
        "sc.toml",
    );
    refused(
        &d,
        &["run", "sc.toml", "--pcap", "./sc.toml"],
        "--pcap",
        "sc.toml",
    );
    refused(
        &d,
        &["run", "wl.toml", "--json", "w.cdf"],
        "--json",
        "w.cdf",
    );
    refused(
        &d,
        &[
            "perf",
            "write-bw",
            "-n",
            "5",
            "--set",
            "net.topology=t.toml",
            "--json",
            "t.toml",
        ],
        "--json",
        "t.toml",
    );
    refused(
        &d,
        &["sweep", "sw.toml", "--out", "o", "--json", "sw.toml"],
        "--json",
        "sw.toml",
    );
    let _ = std::fs::remove_dir_all(&d);
}
