//! One field given twice by `--set` with different values is refused (exit 2) naming the
//! field and both values, rather than the last quietly winning; every value is checked,
//! the ones a later override replaces too.

use crate::common::{rnic, rnic_in};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-reset-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `--set sim.seed=3 --set sim.seed=4` ran with seed 4 without a word; with `--seed 4` the
/// refusal named 3 as --set's value though 4 took effect; `config show --set
/// nic.qpc_manager=bogus --set nic.qpc_manager=fcfs` exited 0.
#[test]
fn a_field_set_twice_with_different_values_is_refused() {
    let twice = "sim.seed is set twice by --set: to 3 and to 4";
    for args in [
        &[
            "perf",
            "write-bw",
            "-n",
            "5",
            "-s",
            "64",
            "--set",
            "sim.seed=3",
            "--set",
            "sim.seed=4",
        ][..],
        &[
            "perf",
            "write-bw",
            "-n",
            "5",
            "-s",
            "64",
            "--seed",
            "4",
            "--set",
            "sim.seed=3",
            "--set",
            "sim.seed=4",
        ],
        &[
            "config",
            "show",
            "--set",
            "sim.seed=3",
            "--set",
            "sim.seed=4",
        ],
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(twice), "{args:?}: {err}");
    }
    let (code, _, err) = rnic(&[
        "config",
        "show",
        "--set",
        "nic.qpc_manager=bogus",
        "--set",
        "nic.qpc_manager=fcfs",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nic.qpc_manager") && err.contains("bogus"),
        "{err}"
    );
    // The same value twice changes nothing, whichever wins: accepted.
    let (code, _, err) = rnic(&[
        "config",
        "show",
        "--set",
        "sim.seed=3",
        "--set",
        "sim.seed=3.0",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// A scenario's `[set]` is overridden by `--set` (the command line wins), but its value is
/// still checked; `--seed` agreeing with the `--set` that takes effect is no conflict; and
/// a sweep's `--set` goes the same way.
#[test]
fn scenario_and_sweep_sets_take_the_same_checks() {
    let d = scratch("scenario");
    let perf = "[perf]\ntest = \"write-bw\"\nsize = 64\niters = 5\n";
    std::fs::write(
        d.join("bad.toml"),
        format!("name = \"bad\"\n{perf}[set]\nnic.qpc_manager = \"bogus\"\n"),
    )
    .unwrap();
    let (code, _, err) = rnic_in(&["run", "bad.toml", "--set", "nic.qpc_manager=fcfs"], &d);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("nic.qpc_manager") && err.contains("bogus"),
        "{err}"
    );
    std::fs::write(
        d.join("seed.toml"),
        format!("name = \"seed\"\n{perf}[set]\nsim.seed = 3\n"),
    )
    .unwrap();
    let (code, _, err) = rnic_in(
        &["run", "seed.toml", "--seed", "4", "--set", "sim.seed=4"],
        &d,
    );
    assert_eq!(code, 0, "{err}");
    std::fs::write(
        d.join("sw.toml"),
        format!("name = \"sw\"\n{perf}[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n"),
    )
    .unwrap();
    let args = [
        "sweep",
        "sw.toml",
        "--out",
        "o",
        "--set",
        "sim.seed=3",
        "--set",
        "sim.seed=4",
    ];
    let (code, _, err) = rnic_in(&args, &d);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sim.seed is set twice by --set"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
