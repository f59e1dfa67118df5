//! The `rnic` binary: usage errors exit 2 with a message naming the flag or field, never a
//! panic; `config show` works without the model.

use crate::common::rnic;

#[test]
fn usage_errors_exit_2() {
    for (args, want) in [
        (&["perf", "write-bw", "-m", "300"][..], "--mtu"),
        (&["perf", "write-bw", "--set", "qp.pmtu=300"], "qp.pmtu"),
        (&["perf", "write-bw", "--set", "nic.nope=1"], "nic.nope"),
        (&["perf", "nope"], "write-bw"),
        (&["config", "show", "--profile", "nope"], "unknown profile"),
        (&["run", "/nonexistent.toml"], "cannot read"),
        // A missing relative path says where it was looked for.
        (
            &["perf", "write-bw", "--set", "net.topology=no-such-net.toml"],
            "a relative path is taken from the working directory",
        ),
        (
            &[
                "perf",
                "send-lat",
                "-c",
                "UD",
                "-n",
                "5",
                "--set",
                "net.impair.dup=0.3",
            ],
            "net.impair.dup",
        ),
        (&["perf", "write-lat", "-D", "0.00001"], "round trip"),
        // The star has one path between two nodes: nothing to spray over.
        (
            &["perf", "write-bw", "--set", "net.fabric.routing=spray"],
            "net.fabric.routing = \"spray\" chooses among equal-cost paths",
        ),
        // One window of 85 packets per 100 µs round trip: 100 MiB take 30.1 ms.
        (
            &[
                "perf",
                "write-bw",
                "-s",
                "1048576",
                "-D",
                "0.01",
                "--set",
                "qp.window_psns=85",
                "--set",
                "net.link_km=5",
            ],
            "85 packets unacknowledged (qp.window_psns)",
        ),
        (
            &[
                "perf",
                "read-bw",
                "-s",
                "65536",
                "-n",
                "5",
                "--set",
                "qp.window_psns=4",
            ],
            "qp.window_psns",
        ),
        (
            &[
                "perf",
                "write-bw",
                "-n",
                "5",
                "--set",
                "net.switch_buffer_bytes=0",
            ],
            "net.switch_buffer_bytes",
        ),
        (
            &[
                "perf",
                "write-lat",
                "-n",
                "2000",
                "--set",
                "host.latency_gap_us=1e10",
            ],
            "host.latency_gap_us",
        ),
        (
            &[
                "perf",
                "write-bw",
                "-n",
                "5",
                "--set",
                "qp.rate_limit_gbps=1e-12",
            ],
            "qp.rate_limit_gbps",
        ),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A queue is a power-of-two ring of at most the device's `max_qp_wr` (32,768 WQEs), so a
/// send depth (`-t`) or receive depth (`-r`, `host.rx_depth`, a flow's `tx_depth`) that
/// rounds up past it is bad input, refused naming the flag (exit 2); `-t 32769` failed
/// inside the model with exit 1 and a debug dump (`AttrOutOfRange { attr: "max_send_wr",
/// value: 65536, .. }`). The largest depth still runs.
#[test]
fn queue_depths_beyond_the_device_limit_exit_2() {
    for (args, want) in [
        (
            &["perf", "write-bw", "-s", "2", "-n", "5", "-t", "32769"][..],
            "--tx-depth",
        ),
        (
            &["perf", "send-bw", "-s", "2", "-n", "5", "-r", "65536"],
            "--rx-depth",
        ),
        (
            &[
                "perf",
                "send-bw",
                "-s",
                "2",
                "-n",
                "5",
                "--set",
                "host.rx_depth=40000",
            ],
            "host.rx_depth",
        ),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(want) && err.contains("32768"),
            "{args:?}: {err}"
        );
    }
    let (code, _, err) = rnic(&["perf", "write-bw", "-s", "2", "-n", "5", "-t", "32768"]);
    assert_eq!(code, 0, "{err}");
}

/// A PCIe link so slow that the ACK timers give up is an incomplete run (exit 3, the QPs'
/// error completions named), not a simulator bug: the host-to-NIC lane may still hold the
/// completions of reads the NIC issued (at most its read tags') when the failed QPs end the
/// run. It was judged a `model_error` (exit 1, "node 1's PCIe link (host to NIC) was busy
/// 576192.000 µs in a run of 574387.913 µs").
#[test]
fn reads_still_queued_on_pcie_when_a_failed_run_ends_are_no_model_error() {
    let (code, _, err) = rnic(&[
        "perf",
        "send-bw",
        "-s",
        "1024",
        "-n",
        "5",
        "-q",
        "2",
        "--set",
        "pcie.gbps=0.001",
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("RETRY_EXC_ERR") && !err.contains("model error"),
        "{err}"
    );
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

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-exit-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

#[test]
fn unwritable_outputs_exit_4_before_simulating() {
    let cliff = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/cliff.toml");
    let d = scratch("outputs");
    let good = d.join("o");
    let good = good.to_str().expect("utf-8 path");
    for args in [
        &["perf", "write-bw", "--json", "/proc/x/y.json"][..],
        &["perf", "write-bw", "--pcap", "/proc/x/p.pcap"],
        // The cliff sweep runs for minutes: these must fail before its first point.
        &["sweep", cliff, "--out", "/proc/x"],
        &["sweep", cliff, "--out", good, "--json", "/proc/x/y.json"],
        &["repro", "csrna", "--out", "/proc/x"],
    ] {
        let start = std::time::Instant::now();
        let (code, out, err) = rnic(args);
        assert_eq!(code, 4, "{args:?}: {err}");
        // A file named by flag in a missing directory is refused as such (rnic creates only
        // the file); the others fail creating a directory, with the system's reason.
        let reason = err.contains("os error") || err.contains("/proc/x does not exist");
        assert!(err.contains("/proc/x") && reason, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{args:?} took {:?}: it simulated before checking its outputs",
            start.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_names_are_checked_and_points_flagged() {
    let d = scratch("sweep");
    let f = d.join("s.toml");
    let body = "[perf]\ntest = \"write-bw\"\nsize = 64\niters = 200\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n";
    std::fs::write(&f, format!("name = \"../../../tmp/escape\"\n{body}")).expect("write");
    let out = d.join("o");
    let (f_s, out_s) = (f.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let (code, _, err) = rnic(&["sweep", f_s, "--out", out_s]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`name`") && err.contains("path separator"),
        "{err}"
    );
    // A point stopped at a limit: exit 3, the CSV says which and why.
    std::fs::write(&f, format!("name = \"limited\"\n{body}")).expect("write");
    let (code, out_text, err) =
        rnic(&["sweep", f_s, "--out", out_s, "--set", "sim.max_events=100"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("rnic: sweep limited: 2 points, "), "{err}");
    assert!(
        err.contains("2 of 2 sweep points did not end ok") && err.contains("sim.max_events"),
        "{err}"
    );
    assert!(out_text.contains("incomplete"), "{out_text}");
    let csv = std::fs::read_to_string(out.join("limited.csv")).expect("csv");
    assert!(csv.starts_with("perf.qp,status,reason,"), "{csv}");
    assert_eq!(csv.matches(",incomplete,").count(), 2, "{csv}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn help_lists_exit_codes() {
    let (code, out, _) = rnic(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Exit status:"), "{out}");
    for c in 0..=4 {
        assert!(out.contains(&format!("\n  {c}  ")), "{out}");
    }
}

/// The help and running.md said "every simulating command" takes --profile, --seed and
/// --set; `rnic repro` takes none of them and `rnic demo` --seed only. Both now name the
/// commands that do, and each of those has all four flags (with --json).
#[test]
fn the_commands_said_to_take_profile_seed_and_set_do() {
    let (code, out, _) = rnic(&["--help"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("`perf`, `run` and `sweep` take --profile, --seed and repeatable --set"),
        "{out}"
    );
    for cmd in ["perf", "run", "sweep"] {
        let (code, help, _) = rnic(&[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}");
        for flag in ["--profile", "--seed", "--set", "--json"] {
            assert!(
                help.contains(flag),
                "rnic {cmd} --help lacks {flag}: {help}"
            );
        }
    }
    for (cmd, has_seed) in [("repro", false), ("demo", true)] {
        let (_, help, _) = rnic(&[cmd, "--help"]);
        assert!(
            !help.contains("--profile") && !help.contains("--set"),
            "{help}"
        );
        assert_eq!(help.contains("--seed"), has_seed, "{help}");
    }
    let chapter =
        std::fs::read_to_string(crate::common::repo_root().join("docs/book/src/running.md"))
            .expect("chapter")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
    assert!(
        chapter
            .contains("`rnic perf`, `rnic run` and `rnic sweep` take `--profile NAME`, `--seed N`")
            && !chapter.contains("Every simulating command"),
        "running.md no longer names the commands that take --profile, --seed and --set"
    );
}

#[test]
fn a_d_run_says_when_its_window_opened_and_warns_if_it_never_settled() {
    let base = [
        "perf",
        "write-bw",
        "-s",
        "64",
        "-q",
        "8",
        "--clients",
        "2",
        "-D",
        "0.00005",
    ];
    let (code, _, err) = rnic(&base);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("rnic: window opened at ") && err.contains(": settled: rate within 2 %"),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");
    // Forced never to settle: a warning, not a failure, and the JSON carries the flag.
    let mut args = base.to_vec();
    args.extend([
        "--set",
        "sim.settle_windows=1000",
        "--set",
        "sim.max_warmup_us=100",
        "--json",
        "-",
    ]);
    let (code, out, err) = rnic(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("never settled by sim.max_warmup_us = 100 µs: measured anyway"),
        "{err}"
    );
    assert!(
        err.contains(
            "rnic: warning: the -D window's figures do not stand for the run: the rate never \
             settled"
        ) && err.contains("sim.warmup_us"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["window_settled"], serde_json::Value::Bool(false), "{out}");
    assert!(
        v["window_open_us"].as_f64().is_some_and(|t| t >= 100.0),
        "{out}"
    );
    // Beside the window's figures, the rate over the run; no timeout, so no -D to give.
    assert_eq!(v["long_run"]["rate_settled"], false, "{out}");
    assert!(
        v["long_run"]["goodput_gbps"]
            .as_f64()
            .is_some_and(|g| g > 0.0),
        "{out}"
    );
    assert!(v["long_run"]["long_enough_duration_s"].is_null(), "{out}");
}

/// A `-D` sweep's CSV has a point's `window_open_us` and `window_settled` as columns, but
/// not `window_reason`, text the CSV's numeric columns leave out: that is in the sweep's
/// JSON, as in `rnic perf`'s. The measurement chapter said the CSV carried all three.
#[test]
fn a_d_sweeps_csv_has_the_window_columns_and_its_json_the_reason() {
    let d = scratch("window-columns");
    let f = d.join("w.toml");
    std::fs::write(
        &f,
        "name = \"w\"\n[perf]\ntest = \"write-bw\"\nsize = 64\nqp = 8\nduration = 0.00005\n\
         [set]\nnet.clients = 2\n[[axis]]\nkey = \"perf.tx_depth\"\nvalues = [128]\n",
    )
    .expect("write");
    let out = d.join("o");
    let (f_s, out_s) = (f.to_str().expect("utf-8"), out.to_str().expect("utf-8"));
    let (code, _, err) = rnic(&["sweep", f_s, "--out", out_s, "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(out.join("w.csv")).expect("csv");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    for column in ["window_open_us", "window_settled"] {
        assert!(header.contains(&column), "{csv}");
    }
    assert!(!header.contains(&"window_reason"), "{csv}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("w.json")).expect("json"))
            .expect("JSON");
    let reason = json["points"][0]["result"]["window_reason"].as_str();
    assert!(reason.is_some_and(|r| r.starts_with("settled: ")), "{json}");
    let chapter =
        std::fs::read_to_string(crate::common::repo_root().join("docs/book/src/measurement.md"))
            .expect("chapter")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
    assert!(
        chapter.contains(
            "a sweep's CSV has the first two as columns, and the reason's text only in its JSON"
        ),
        "measurement.md no longer says which window columns a sweep's CSV has"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A `-D` window shorter than the retransmission timeouts its run saw is marked: the table
/// row carries the rate over the run and a `-D` long enough, the JSON says
/// `window_settled: false` with the reason and `long_run`, and standard error warns. The
/// window is fixed (`sim.warmup_us`), so it opened on a settled rate: only its length is at
/// fault. One lost packet's timeout (1 ms at `qp.timeout` 8) stalls a QP for as long as the
/// whole window, so the window read 3.67 Gb/s where the run held 7.57 Gb/s. The same run
/// without loss sees no timeout and is left alone, its row as perftest prints it.
#[test]
fn a_window_too_short_for_the_runs_timeouts_is_marked_with_the_rate_over_the_run() {
    let base = [
        "perf",
        "write-bw",
        "-s",
        "4096",
        "-q",
        "2",
        "-D",
        "0.001",
        "--set",
        "qp.timeout=8",
        "--set",
        "sim.warmup_us=100",
    ];
    let lossy = [&base[..], &["--set", "net.impair.loss=0.05"]].concat();
    let (code, out, err) = rnic(&lossy);
    assert_eq!(code, 0, "{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with(" 4096"))
        .unwrap_or_default();
    assert!(
        row.contains("[window not settled: ") && row.contains("over the run (1.100 ms); -D "),
        "{out}"
    );
    assert!(
        err.contains("; too short: the 1.000 ms window is shorter than")
            && err.contains("the window is too short for the")
            && err.contains(" or longer."),
        "{err}"
    );
    let (code, out, err) = rnic(&[&lossy[..], &["--json", "-"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["window_settled"], false, "{out}");
    let l = &v["long_run"];
    assert_eq!(
        (l["rate_settled"].clone(), l["window_long_enough"].clone()),
        (true.into(), false.into())
    );
    let longer = l["long_enough_duration_s"]
        .as_f64()
        .expect("a -D long enough");
    assert!(longer > 0.001, "{out}");
    assert!(v["timeouts"].as_u64().is_some_and(|t| t > 0), "{out}");
    // The window's own figures are still what it measured.
    assert!(v["goodput_gbps"].as_f64().is_some_and(|g| g > 0.0), "{out}");
    // Without loss: no timeout, no mark.
    let (code, out, err) = rnic(&[&base[..], &["--json", "-"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    assert_eq!(v["window_settled"], true, "{out}");
    assert!(v.get("long_run").is_none(), "{out}");
    assert!(!err.contains("warning"), "{err}");
}

/// A topology file whose one switch's buffer cannot hold the run's frame is refused before
/// the run, naming the switch and its field (the check used to cover the star only, and the
/// run failed with RETRY_EXC_ERR or a CM timeout instead).
#[test]
fn a_topology_switch_too_small_for_one_frame_exits_2() {
    let path = std::env::temp_dir().join(format!("rnic-tiny-switch-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "[[switch]]\nname = \"edge\"\nbuffer_bytes = 300\n\
         [[link]]\nends = [\"node0\", \"edge\"]\n[[link]]\nends = [\"node1\", \"edge\"]\n",
    )
    .unwrap();
    let topology = format!("net.topology={}", path.display());
    let (code, _, err) = rnic(&[
        "perf", "write-bw", "-s", "64", "-n", "5", "--set", &topology,
    ]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("switch[0] (\"edge\").buffer_bytes = 300")
            && err.contains("322")
            && !err.contains("panicked"),
        "{err}"
    );
}

/// A huge number is shown as it was written, in exponent form, not as its hundreds of
/// digits, in `--set` errors and in a flow file's.
#[test]
fn huge_numbers_are_shown_in_exponent_form() {
    for value in ["eth.gbps=1e300", "host.cores=1e300"] {
        let (code, _, err) = rnic(&["perf", "write-bw", "-n", "5", "--set", value]);
        assert_eq!(code, 2, "{value}: {err}");
        assert!(err.contains("= 1e300 is not accepted"), "{value}: {err}");
    }
    let dir = scratch("huge-number");
    let file = dir.join("flows.toml");
    std::fs::write(
        &file,
        "[[flow]]\ntest = \"write-bw\"\nsize = 64\nstart_us = 1e300\n",
    )
    .unwrap();
    let (code, _, err) = rnic(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`flow[0].start_us` = 1e300 is not accepted"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-` means standard output for `--json`; a pcap or perftest's JSON file cannot go there,
/// so `--pcap -` and `--out_json_file -` exit 4 before simulating instead of writing a file
/// named `-` in the working directory (tcpdump's `-w -` is standard output).
#[test]
fn a_dash_names_standard_output_only_where_it_can_go() {
    let d = scratch("dash");
    for args in [
        &["perf", "write-bw", "-n", "5", "--pcap", "-"][..],
        &["perf", "write-bw", "-n", "5", "--out_json_file", "-"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_rnic"))
            .args(args)
            .current_dir(&d)
            .env("CI", "true")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {err}");
        assert!(err.contains("standard output"), "{args:?}: {err}");
        assert!(!d.join("-").exists(), "{args:?} wrote a file named -");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// perftest's JSON report that cannot be written when the run ends (a full disk: `/dev/full`
/// opens, so the check before the run passes) is an output that cannot be written, exit 4
/// naming `--out_json_file`, as `--json` and `--pcap` are; it exited 1, the status of bytes
/// that did not verify.
#[test]
fn a_perftest_json_report_that_cannot_be_written_exits_4() {
    if std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .is_err()
    {
        return; // not Linux
    }
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-n",
        "5",
        "--out_json_file",
        "/dev/full",
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("cannot write the --out_json_file /dev/full"),
        "{err}"
    );
}

/// A capture that cannot be finished when the run ends (a full disk) names its file, as the
/// error on creating it does: it said only "cannot write the pcap: No space left on device",
/// for `rnic perf` and for a scenario's flows alike.
#[test]
fn a_pcap_that_cannot_be_finished_names_its_file() {
    if std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .is_err()
    {
        return; // not Linux
    }
    let dir = scratch("pcap-full");
    let flows = dir.join("flows.toml");
    std::fs::write(
        &flows,
        "[[flow]]\ntest = \"write-bw\"\nsize = 64\niters = 5\n",
    )
    .unwrap();
    for args in [
        &["perf", "write-bw", "-n", "5", "--pcap", "/dev/full"][..],
        &["run", flows.to_str().unwrap(), "--pcap", "/dev/full"],
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 4, "{args:?}: {err}");
        assert!(
            err.contains("cannot write the pcap /dev/full: "),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The BW peak's stamps, 16 bytes per operation of every QP, are reserved before the run:
/// `-q 100000 -n 100000000` passed the memory check without them and aborted (exit 134)
/// on an allocation of 80 TB. Refused before the run, exit 2, naming the stamps and `-N`.
#[test]
fn bw_peak_stamps_beyond_the_memory_budget_exit_2() {
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "64",
        "-q",
        "100000",
        "-n",
        "100000000",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("BW peak stamps for -n 100000000 operations per QP")
            && err.contains("-N/--noPeak")
            && !err.contains("memory allocation"),
        "{err}"
    );
}

/// A WAN accelerator retransmission timer shorter than the long link's round trip would
/// resend every frame before its acknowledgement could return (1 ns ran 772 M events in
/// 40 s of wall time): refused, naming the field and the least value.
#[test]
fn a_wan_accelerator_timer_shorter_than_the_round_trip_exits_2() {
    let with_timer = |ns: &str| {
        let timer = format!("net.wan_accel_timeout_ns={ns}");
        let args = ["perf", "write-bw", "-n", "5", "--profile", "wan"];
        let sets = ["--set", "net.wan_accel=true", "--set", &timer];
        rnic(&[&args[..], &sets[..]].concat())
    };
    let (code, _, err) = with_timer("1");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("net.wan_accel_timeout_ns = 1 ") && err.contains("round trip"),
        "{err}"
    );
    let (code, _, err) = with_timer("2000000");
    assert_eq!(
        code, 0,
        "a timer above the 1 ms round trip of 100 km runs: {err}"
    );
}

/// A scenario file's `[perf]` has no flags: a cross-field refusal names the key as well
/// as the flag (it named `-s/--size` alone).
#[test]
fn a_scenario_refusal_names_the_perf_key() {
    let dir = scratch("perf-key");
    let file = dir.join("atomic.toml");
    std::fs::write(&file, "[perf]\ntest = \"atomic-bw\"\nsize = 16\n").unwrap();
    let (code, _, err) = rnic(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("(perf.size) = 16"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A field set by a perftest flag and by `--set` (or a scenario's `[set]`) to different
/// values is refused naming both; one of them used to win without a word (the flag for
/// `--clients`, `-m`, `-u`, `-D` and `--seed`, `--set` for the others). The same value
/// twice, and `--set` changing what a flag only implies, still run.
#[test]
fn a_field_set_by_a_flag_and_by_set_to_different_values_exits_2() {
    let write_bw = |extra: &[&str]| {
        let base = ["perf", "write-bw", "-s", "64", "--quiet"];
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let (code, _, err) = rnic(&args);
        (args.join(" "), code, err)
    };
    for (extra, field, flag) in [
        (
            &["--clients", "2", "--set", "net.clients=3"][..],
            "net.clients",
            "--clients",
        ),
        (
            &["--set", "net.clients=3", "--clients", "2"],
            "net.clients",
            "--clients",
        ),
        (
            &["--seed", "3", "--set", "sim.seed=4"],
            "sim.seed",
            "--seed",
        ),
        (
            &["-m", "1024", "--set", "qp.pmtu=2048"],
            "qp.pmtu",
            "-m/--mtu",
        ),
        (
            &["-l", "4", "--set", "host.post_list=8"],
            "host.post_list",
            "-l/--post_list",
        ),
        (
            &["-Q", "2", "--set", "host.cq_mod=4"],
            "host.cq_mod",
            "-Q/--cq-mod",
        ),
    ] {
        let (args, code, err) = write_bw(extra);
        assert_eq!(code, 2, "{args}: {err}");
        assert!(err.contains(field) && err.contains(flag), "{args}: {err}");
    }
    for extra in [
        &["--clients", "2", "--set", "net.clients=2"][..],
        // -D 0.00002 is 20 µs: the same number written as an integer.
        &["-D", "0.00002", "--set", "sim.duration_us=20"],
        // -l 4 implies a CQ moderation of 4, which --set may change.
        &["-l", "4", "--set", "host.cq_mod=2"],
    ] {
        let (args, code, err) = write_bw(extra);
        assert_eq!(code, 0, "{args}: {err}");
    }
    let d = scratch("flag-set");
    let file = d.join("s.toml");
    std::fs::write(
        &file,
        "[perf]\ntest = \"write-bw\"\nsize = 64\niters = 5\nclients = 2\n",
    )
    .expect("scenario");
    let path = file.to_str().expect("utf-8 path");
    let (code, _, err) = rnic(&["run", path, "--quiet", "--set", "net.clients=3"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("net.clients") && err.contains("perf.clients"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `--all-flows` unfolds a `[workload]`'s rows; on a scenario without one it would change
/// nothing, so it is refused (exit 2, naming the flag) before anything runs.
#[test]
fn all_flows_without_a_workload_is_refused() {
    let dir = scratch("all-flows");
    for (name, text) in [
        ("perf.toml", "[perf]\ntest = \"write-bw\"\nsize = 64\n"),
        ("flows.toml", "[[flow]]\ntest = \"write-bw\"\nsize = 64\n"),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let (code, out, err) = rnic(&["run", file.to_str().unwrap(), "--all-flows"]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(
            err.contains("--all-flows") && err.contains("no [workload]"),
            "{err}"
        );
        assert!(out.is_empty(), "{name}: refused before running: {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
