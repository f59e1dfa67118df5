//! The `rnic` binary: usage errors exit 2 with a message naming the flag or field, never a
//! panic; `config show` works without the model.

use std::process::Command;

fn rnic(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .env("CI", "true")
        .output()
        .expect("run rnic");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn usage_errors_exit_2() {
    for (args, want) in [
        (&["perf", "write-bw", "-m", "300"][..], "--mtu"),
        (&["perf", "write-bw", "--set", "qp.pmtu=300"], "qp.pmtu"),
        (&["perf", "write-bw", "--set", "nic.nope=1"], "nic.nope"),
        (&["perf", "nope"], "write-bw"),
        (&["config", "show", "--profile", "nope"], "unknown profile"),
        (&["run", "/nonexistent.toml"], "cannot read"),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn config_show_prints_the_documented_config() {
    let (code, out, err) = rnic(&["config", "show", "--set", "nic.qpc_cache_entries=3000"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\n[nic]\n") && out.contains("\nqpc_cache_entries = 3000\n"));
    let (code, out, _) = rnic(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("rnic "));
}
