use super::*;
use crate::testing::FakeRunner;

struct Run {
    code: u8,
    out: String,
    err: String,
}

fn run_with(runner: &dyn PerfRunner, args: &[&str]) -> Run {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut argv = vec!["rnic"];
    argv.extend_from_slice(args);
    let code = main_with(argv, runner, &mut out, &mut err);
    Run {
        code,
        out: String::from_utf8(out).unwrap(),
        err: String::from_utf8(err).unwrap(),
    }
}

fn rnic(args: &[&str]) -> Run {
    run_with(&FakeRunner::default(), args)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn perf_prints_perftest_table() {
    let r = rnic(&["perf", "write-bw", "-s", "64", "-q", "4", "-n", "100"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("RDMA_Write BW Test"), "{}", r.out);
    assert!(r.out.contains(" Number of qps   : 4\t\t"));
    assert!(r.out.contains(crate::report::text::RESULT_FMT));
    assert!(r.out.contains("\n 64         400  "), "{}", r.out);
    assert!(
        r.err.contains("rnic: write-bw simulated") && r.err.contains("verified"),
        "{}",
        r.err
    );
    let r = rnic(&["perf", "write-lat", "--report_gbits"]);
    assert_eq!(r.code, 0);
    assert!(r.out.contains("t_typical[usec]"));
    let r = rnic(&["perf", "read-bw", "--report_gbits", "-m", "1024"]);
    assert!(r.out.contains("BW average[Gb/sec]") && r.out.contains("Mtu             : 1024[B]"));
}

/// The QPs go round robin over the clients: with fewer QPs than clients, the clients
/// past the `-q`-th take no part, which a note says (an incast of four clients on two QPs
/// has two senders).
#[test]
fn clients_without_a_qp_are_noted() {
    let note = "take no part";
    let r = rnic(&[
        "perf",
        "write-bw",
        "-q",
        "2",
        "--clients",
        "4",
        "--reversed",
        "-n",
        "10",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.contains("--clients 4 with -q 2") && r.err.contains("clients 3..4 have no QP"),
        "{}",
        r.err
    );
    let r = rnic(&["perf", "write-lat", "--clients", "2", "-n", "10"]);
    assert!(
        r.err.contains("client 2 has no QP and takes no part;"),
        "{}",
        r.err
    );
    for args in [
        &["perf", "write-bw", "-q", "4", "--clients", "4", "-n", "10"][..],
        &["perf", "write-bw", "-q", "1", "-n", "10"][..],
    ] {
        let r = rnic(args);
        assert!(!r.err.contains(note), "{args:?}: {}", r.err);
    }
}

/// With `-a` each size is a run of its own, connected anew on the same QP numbers and
/// PSNs, and a capture held only the last size's frames (the file was rewritten for each):
/// `--pcap` with `-a` is refused, naming both, before anything runs.
#[test]
fn a_capture_of_all_sizes_is_refused() {
    let d = tmp("pcap-all");
    let pcap = d.join("all.pcap");
    let r = rnic(&[
        "perf",
        "write-bw",
        "-a",
        "-n",
        "5",
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("--pcap") && r.err.contains("-a/--all"),
        "{}",
        r.err
    );
    assert!(r.err.contains("-s"), "{}", r.err);
    assert!(!pcap.exists());
    // A scenario's [output] pcap with perf.all likewise.
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        format!(
            "[perf]\ntest = \"write-bw\"\nall = true\niters = 5\n[output]\npcap = {:?}\n",
            pcap.to_str().unwrap()
        ),
    )
    .unwrap();
    let r = rnic(&["run", f.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("--pcap"), "{}", r.err);
    // One size captures as before.
    let r = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "64",
        "-n",
        "5",
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
}

/// `-I` inlines SEND and WRITE payloads and `-o` bounds outstanding READs and atomics:
/// given to a test of the other verbs they change nothing, and a note says so instead of
/// the run taking them in silence.
#[test]
fn flags_of_other_verbs_are_noted() {
    for (args, note) in [
        (
            &["perf", "read-bw", "-I", "64", "-n", "10"][..],
            "-I/--inline_size has no effect on read-bw",
        ),
        (
            &["perf", "atomic-lat", "-I", "64", "-n", "10"][..],
            "-I/--inline_size has no effect on atomic-lat",
        ),
        (
            &["perf", "write-bw", "-o", "4", "-n", "10"][..],
            "-o/--outs has no effect on write-bw",
        ),
        (
            &["perf", "send-lat", "-o", "4", "-n", "10"][..],
            "-o/--outs has no effect on send-lat",
        ),
        (
            &["perf", "write-bw", "--latency_gap", "10", "-n", "10"][..],
            "--latency_gap has no effect on write-bw",
        ),
        (
            &["perf", "write-lat", "-Q", "4", "-n", "10"][..],
            "-Q/--cq-mod has no effect on write-lat",
        ),
        (
            &["perf", "read-lat", "-l", "4", "-n", "10"][..],
            "-l/--post_list has no effect on read-lat",
        ),
        (
            &["perf", "write-bw", "-r", "16", "-n", "10"][..],
            "-r/--rx-depth has no effect on write-bw",
        ),
        // perftest's latency tests have no -t: one operation is in flight at a time.
        (
            &["perf", "read-lat", "-t", "8", "-n", "10"][..],
            "-t/--tx-depth (perf.tx_depth) has no effect on read-lat",
        ),
        (
            &["perf", "write-lat", "--report_gbits", "-n", "10"][..],
            "--report_gbits (perf.report_gbits) has no effect on write-lat",
        ),
        // An unreliable QP waits for no acknowledgement and resends nothing.
        (
            &["perf", "write-bw", "-c", "UC", "-u", "10", "-n", "10"][..],
            "-u/--qp-timeout (perf.qp_timeout) has no effect on write-bw over UC",
        ),
        (
            &[
                "perf",
                "send-bw",
                "-c",
                "UD",
                "-s",
                "1024",
                "--retry_count",
                "3",
                "-n",
                "10",
            ][..],
            "--retry_count (qp.retry_cnt) has no effect on send-bw over UD",
        ),
    ] {
        let r = rnic(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.err);
        assert!(r.err.contains(note), "{args:?}: {}", r.err);
    }
    for args in [
        &["perf", "write-bw", "-I", "64", "-n", "10"][..],
        &["perf", "read-bw", "-o", "4", "-n", "10"][..],
        &["perf", "write-lat", "--latency_gap", "10", "-n", "10"][..],
        &["perf", "write-bw", "-Q", "4", "-l", "4", "-n", "10"][..],
        &["perf", "send-bw", "-r", "16", "-n", "10"][..],
        &["perf", "read-bw", "-t", "8", "-n", "10"][..],
        &["perf", "read-bw", "--report_gbits", "-n", "10"][..],
        &[
            "perf",
            "write-bw",
            "-u",
            "10",
            "--retry_count",
            "3",
            "-n",
            "10",
        ][..],
    ] {
        let r = rnic(args);
        assert!(!r.err.contains("has no effect"), "{args:?}: {}", r.err);
    }
}

/// A scenario's `[perf]` keys that a latency test does not read get the notes of their
/// flags: its `tx_depth` and `report_gbits` ran a write-lat in silence.
#[test]
fn perf_keys_a_latency_test_does_not_read_are_noted_in_a_scenario() {
    let d = tmp("lat-keys");
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        "[perf]\ntest = \"write-lat\"\niters = 10\ntx_depth = 4\nreport_gbits = true\n",
    )
    .unwrap();
    let r = rnic(&["run", f.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.err);
    for note in [
        "rnic: -t/--tx-depth (perf.tx_depth) has no effect on write-lat",
        "rnic: --report_gbits (perf.report_gbits) has no effect on write-lat",
    ] {
        assert_eq!(r.err.matches(note).count(), 1, "{}", r.err);
    }
}

/// Back to back has no switch: its latency, buffer and PFC levels changed nothing there and
/// the run said nothing; a note now names them. A star reads them: no note.
#[test]
fn switch_fields_on_back_to_back_are_noted() {
    let args = |topology: &str| {
        rnic(&[
            "perf",
            "write-lat",
            "-n",
            "10",
            "--set",
            &format!("net.topology={topology}"),
            "--set",
            "net.switch_latency_ns=300",
            "--set",
            "net.switch_buffer=shared",
        ])
    };
    let r = args("back_to_back");
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.contains(
            "rnic: note: net.switch_latency_ns = 300, net.switch_buffer = \"shared\" have \
             no effect: net.topology = \"back_to_back\""
        ),
        "{}",
        r.err
    );
    let r = args("star");
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.err.contains("has no effect"), "{}", r.err);
}

/// A burst without a rate limits nothing: `--set qp.rate_limit_burst_bytes` alone ran in
/// silence (the flag `--burst_size` without `--rate_limit` is refused); with a rate it is
/// the limiter's bucket, and no note.
#[test]
fn a_rate_limiter_burst_without_a_rate_is_noted() {
    let note = "rnic: note: qp.rate_limit_burst_bytes = 8192 has no effect: qp.rate_limit_gbps = 0";
    let burst = "qp.rate_limit_burst_bytes=8192";
    let r = rnic(&["perf", "write-bw", "-n", "10", "--set", burst]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.err.contains(note), "{}", r.err);
    let rate = "qp.rate_limit_gbps=10";
    let r = rnic(&[
        "perf", "write-bw", "-n", "10", "--set", burst, "--set", rate,
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.err.contains("has no effect"), "{}", r.err);
}

/// The queue trace is written beside the JSON file and nowhere else: without `--json FILE`
/// (none, or `-`) a run took it and dropped it in silence, and a sweep, which writes no
/// trace, did so at every point. Refused, naming the field and where the trace goes.
#[test]
fn a_queue_trace_with_nowhere_to_go_is_refused() {
    let trace = "net.trace_interval_us=1";
    for json in [&[][..], &["--json", "-"][..]] {
        let r = rnic(&[&["perf", "write-bw", "-n", "5", "--set", trace][..], json].concat());
        assert_eq!(r.code, 2, "{json:?}: {}", r.err);
        assert!(
            r.err
                .contains("net.trace_interval_us = 1 traces the queues into FILE-queues.csv")
                && r.err.contains("give --json FILE (not -)"),
            "{}",
            r.err
        );
    }
    let d = tmp("trace-sweep");
    let f = d.join("s.toml");
    std::fs::write(
        &f,
        "name = \"s\"\n[perf]\ntest = \"write-bw\"\niters = 5\n[set]\n\
         net.trace_interval_us = 1\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let out = d.join("out");
    let r = rnic(&["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("a sweep writes no queue trace"), "{}", r.err);
}

/// Two outputs naming one file would overwrite each other (the pcap was replaced by the
/// JSON, rnic's JSON by perftest's): refused before anything runs, naming both flags.
#[test]
fn two_outputs_to_one_file_are_refused() {
    let d = tmp("same-file");
    let f = d.join("same.out");
    let f = f.to_str().unwrap();
    for (args, flags) in [
        (
            vec!["perf", "write-bw", "-n", "5", "--json", f, "--pcap", f],
            ("--json", "--pcap"),
        ),
        (
            vec![
                "perf",
                "write-bw",
                "-n",
                "5",
                "--json",
                f,
                "--out_json_file",
                f,
            ],
            ("--json", "--out_json_file"),
        ),
    ] {
        let r = rnic(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(
            r.err.contains(flags.0) && r.err.contains(flags.1),
            "{}",
            r.err
        );
        assert!(!Path::new(f).exists(), "{args:?} wrote {f}");
    }
    let s = d.join("s.toml");
    std::fs::write(
        &s,
        format!("[perf]\ntest = \"write-bw\"\niters = 5\n[output]\njson = {f:?}\npcap = {f:?}\n"),
    )
    .unwrap();
    let r = rnic(&["run", s.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("both name"), "{}", r.err);
    // `--json -` is standard output, no file.
    let r = rnic(&[
        "perf",
        "write-bw",
        "-n",
        "5",
        "--json",
        "-",
        "--out_json_file",
        f,
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
}

#[test]
fn perf_all_sizes() {
    let r = rnic(&["perf", "send-bw", "-a", "-n", "5"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let rows = r
        .out
        .lines()
        .filter(|l| {
            l.starts_with(" 2")
                || l.starts_with(" 4")
                || l.starts_with(" 8")
                || l.starts_with(" 1")
                || l.starts_with(" 3")
                || l.starts_with(" 5")
                || l.starts_with(" 6")
        })
        .count();
    assert_eq!(rows, 23, "{}", r.out);
}

#[test]
fn json_output_is_deterministic() {
    let d = tmp("json");
    let f1 = d.join("a.json");
    let f2 = d.join("b.json");
    for f in [&f1, &f2] {
        let r = rnic(&[
            "perf",
            "write-bw",
            "--seed",
            "5",
            "--json",
            f.to_str().unwrap(),
        ]);
        assert_eq!(r.code, 0, "{}", r.err);
    }
    let strip = |p: &Path| -> String {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| !l.contains("wall_seconds"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&f1), strip(&f2));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f1).unwrap()).unwrap();
    assert_eq!(v["seed"], 5);
    assert_eq!(v["profile"], "baseline");
    assert_eq!(v["test"], "write-bw");
    // `--json -` prints only JSON on stdout.
    let r = rnic(&["perf", "write-bw", "--json", "-"]);
    let v: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert_eq!(v["size_bytes"], 65536);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_input_exits_2_naming_the_flag_or_field() {
    let cases: &[(&[&str], &str)] = &[
        (&["perf", "write-bw", "-m", "300"], "--mtu"),
        (&["perf", "write-bw", "-q", "0"], "--qp"),
        (&["perf", "write-bw", "-s", "abc"], "--size"),
        (&["perf", "write-bw", "-n", "2"], "--iters"),
        (&["perf", "write-bw", "-D", "-1"], "--duration"),
        (&["perf", "write-bw", "-D", "x"], "--duration"),
        (&["perf", "write-bw", "-u", "32"], "--qp-timeout"),
        (&["perf", "write-bw", "--bogus"], "--bogus"),
        (&["perf", "write-bx"], "write-bw"),
        (&["perf", "write-bw", "-a", "-s", "4"], "--size"),
        (&["perf", "write-bw", "--set", "qp.pmtu"], "KEY=VALUE"),
        (
            &["perf", "write-bw", "--set", "qp.pmtu=300"],
            "`qp.pmtu` = 300",
        ),
        (&["perf", "write-bw", "--set", "nic.foo=1"], "`nic.foo`"),
        (
            &["perf", "write-bw", "--set", "nic.latency_hiding=2"],
            "true or false",
        ),
        (
            &["perf", "write-bw", "--profile", "nope"],
            "unknown profile `nope`",
        ),
        (&["perf", "atomic-bw", "-s", "16"], "8 bytes"),
        (
            &["perf", "write-bw", "-A", "CMP_AND_SWAP"],
            "atomic tests only",
        ),
        (&["perf", "write-bw", "--seed", "-3"], "--seed"),
        (&["perf", "write-bw", "--clients", "0"], "--clients"),
        (
            &["config", "show", "--set", "qp.timeout=99"],
            "`qp.timeout`",
        ),
        (
            &["run", "/nonexistent/x.toml"],
            "cannot read /nonexistent/x.toml",
        ),
        (&["sweep", "/nonexistent/x.toml"], "cannot read"),
        (&["repro", "nope"], "unknown reproduction `nope`"),
        (&["sweep", "x.toml", "--jobs", "0"], "--jobs"),
        (&[], "Usage"),
    ];
    for (args, want) in cases {
        let r = rnic(args);
        assert_eq!(r.code, 2, "{args:?}: out={} err={}", r.out, r.err);
        assert!(r.err.contains(want), "{args:?}: {}", r.err);
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
    }
}

#[test]
fn runner_failures_exit_1() {
    let r = run_with(
        &FakeRunner {
            fail_on_size: Some(65536),
            ..Default::default()
        },
        &["perf", "write-bw"],
    );
    assert_eq!(r.code, 1);
    assert!(r.err.starts_with("error: fake failure"), "{}", r.err);
    // Data that fails verification: results are printed, then exit 1.
    let d = tmp("corrupt");
    let j = d.join("c.json");
    let r = run_with(
        &FakeRunner {
            corrupt_size: Some(64),
            ..Default::default()
        },
        &[
            "perf",
            "write-bw",
            "-s",
            "64",
            "--json",
            j.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1);
    assert!(r.out.contains("RDMA_Write BW Test") && j.exists());
    assert!(r.err.contains("payload verification failed"), "{}", r.err);
    let f = d.join("s.toml");
    std::fs::write(&f, "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128]\n").unwrap();
    let r = run_with(
        &FakeRunner {
            corrupt_size: Some(64),
            ..Default::default()
        },
        &[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            d.join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.err.contains(
            "1 of 2 sweep points did not end ok: perf.size=64 (corrupt): fake corruption"
        ),
        "{}",
        r.err
    );
    assert!(d.join("o/s.csv").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn demo_runs_every_operation_and_verifies() {
    let r = rnic(&["demo"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.contains("bytes verified at their targets"),
        "{}",
        r.out
    );
}

#[test]
fn help_and_version_exit_0() {
    for args in [
        &["--help"][..],
        &["perf", "--help"],
        &["--version"],
        &["sweep", "-h"],
    ] {
        let r = rnic(args);
        assert_eq!(r.code, 0, "{args:?}");
        assert!(!r.out.is_empty());
    }
    // `rnic run` takes a scenario file's profile and seed unless the flags are given: its
    // help does not claim the baseline profile as the default.
    let r = rnic(&["run", "--help"]);
    let profile = r
        .out
        .lines()
        .skip_while(|l| !l.contains("--profile"))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(profile.contains("scenario file's"), "{}", r.out);
    assert!(!profile.contains("[default: baseline]"), "{}", r.out);
}

#[test]
fn config_show_and_profiles() {
    let r = rnic(&[
        "config",
        "show",
        "--set",
        "net.link_km=3",
        "--set",
        "nic.ooo_cap=8",
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("\nlink_km = 3.0\n") && r.out.contains("\nooo_cap = 8\n"));
    assert!(r.out.contains("# overrides: net.link_km=3 nic.ooo_cap=8"));
    let cfg = Config::from_toml_str(&r.out, "show").unwrap();
    assert_eq!(cfg.nic.ooo_cap, 8);
    let r = rnic(&["config", "profiles"]);
    assert!(r.out.starts_with("baseline  "));
}

#[test]
fn run_scenario_file() {
    let d = tmp("run");
    let json = d.join("out/r.json");
    let scen = d.join("s.toml");
    std::fs::write(
        &scen,
        format!(
            "name = \"s\"\nseed = 4\n[perf]\ntest = \"read-lat\"\niters = 50\n[set]\nnic.qpc_cache_entries = 10\n[output]\njson = {:?}\n",
            json.to_str().unwrap()
        ),
    )
    .unwrap();
    let r = rnic(&["run", scen.to_str().unwrap(), "--seed", "6"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.out.contains("RDMA_Read Latency Test"));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["seed"], 6); // --seed wins over the file
    assert_eq!(v["iterations"], 50);
    std::fs::write(&scen, "[perf]\ntest = \"read-lat\"\nqp = 0\n").unwrap();
    let r = rnic(&["run", scen.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("perf.qp") && r.err.contains("s.toml"),
        "{}",
        r.err
    );
    std::fs::write(&scen, "[perf]\ntest = \"read-lat\"\n[set]\nqp.pmtu = 100\n").unwrap();
    let r = rnic(&["run", scen.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.err.contains("`qp.pmtu` = 100") && r.err.contains("s.toml"),
        "{}",
        r.err
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_command() {
    let d = tmp("sweep");
    let f = d.join("sw.toml");
    std::fs::write(
        &f,
        "metrics = [\"msg_rate_mops\"]\n[perf]\ntest = \"write-bw\"\nsize = 64\niters = 10\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 400]\n",
    )
    .unwrap();
    let out_dir = d.join("o");
    let json = d.join("all.json");
    let r = rnic(&[
        "sweep",
        f.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "-j",
        "2",
        "--set",
        "nic.qpc_cache_entries=100",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out
            .starts_with("perf.qp  msg_rate_mops  status  reason\n"),
        "{}",
        r.out
    );
    assert_eq!(r.out.lines().count(), 3);
    assert!(r.out.lines().all(|l| l == l.trim_end()));
    assert!(
        r.err.starts_with("rnic: sweep sw: 2 points, 2 workers\n"),
        "{}",
        r.err
    );
    assert!(out_dir.join("sw.csv").exists() && out_dir.join("sw-msg_rate_mops.svg").exists());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[1]["caches"]["qpc"]["misses"], 300);
    let _ = std::fs::remove_dir_all(&d);
}

/// One file spelled two ways (`d/x` and `d/../d/x`, or through a symlink to `d`) was
/// compared as written, so the check let one output replace the other and the run exit 0:
/// refused like `d/x` twice, for perf, a scenario's `[output]` and a sweep's `--json`.
#[cfg(unix)]
#[test]
fn one_output_file_spelled_two_ways_is_refused() {
    let d = tmp("two-spellings");
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::os::unix::fs::symlink(d.join("out"), d.join("link")).unwrap();
    let at = |p: &str| d.join(p).to_str().unwrap().to_owned();
    let (x, dotdot, linked) = (at("out/x"), at("out/../out/x"), at("link/x"));
    for other in [&dotdot, &linked] {
        let args = [
            "perf",
            "write-lat",
            "-n",
            "5",
            "--json",
            &x,
            "--pcap",
            other,
        ];
        let r = rnic(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.err.contains("--json and --pcap both name"), "{}", r.err);
    }
    let s = d.join("a.toml");
    std::fs::write(
        &s,
        format!(
            "name = \"a\"\n[perf]\ntest = \"write-lat\"\niters = 5\n[output]\njson = {:?}\n\
             pcap = {:?}\n",
            at("out/a.json"),
            at("out/../out/a.json")
        ),
    )
    .unwrap();
    let r = rnic(&["run", s.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(r.err.contains("both name"), "{}", r.err);
    assert!(!d.join("out/a.json").exists(), "the run wrote its JSON");
    let sweep = d.join("sw.toml");
    std::fs::write(
        &sweep,
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    for json in [at("out/../out/sw.json"), at("link/sw.json")] {
        let runner = FakeRunner::default();
        let args = [
            "sweep",
            sweep.to_str().unwrap(),
            "--out",
            &at("out"),
            "--json",
            &json,
        ];
        let r = run_with(&runner, &args);
        assert_eq!(r.code, 2, "{json}: {}", r.err);
        assert!(r.err.contains("--json"), "{}", r.err);
        assert_eq!(calls(&runner), 0, "{json}: points ran");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A workload scenario in `d` whose `[output]` names `out/w.json` and `pcap`, if given.
fn workload_scenario(d: &Path, pcap: Option<&str>) -> PathBuf {
    std::fs::write(d.join("small.cdf"), "0 0\n1000 1\n").unwrap();
    let at = |p: &str| d.join(p).to_str().unwrap().to_owned();
    let pcap = pcap.map_or(String::new(), |p| format!("pcap = {:?}\n", at(p)));
    let s = d.join("w.toml");
    std::fs::write(
        &s,
        format!(
            "name = \"w\"\n[set]\n\"net.clients\" = 1\n[workload]\ncdf = {:?}\nload = 0.1\n\
             duration_us = 20\n[output]\njson = {:?}\n{pcap}",
            at("small.cdf"),
            at("out/w.json")
        ),
    )
    .unwrap();
    s
}

/// The files written beside the JSON (a workload's `-fct.csv`, `-fct-buckets.csv` and
/// `-slowdown.svg`; the traces' `-queues.csv` and `-rates.csv`) were left out of the check
/// of outputs naming one file: the pcap was overwritten by the flow CSV with exit 0.
#[test]
fn an_output_named_like_a_side_file_of_the_json_is_refused() {
    let d = tmp("side-file-clash");
    for side in ["w-fct.csv", "w-fct-buckets.csv", "w-slowdown.svg"] {
        let s = workload_scenario(&d, Some(&format!("out/{side}")));
        let r = run_with(&crate::perf::ModelRunner, &["run", s.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{side}: {}", r.err);
        assert!(
            r.err
                .contains("the pcap (--pcap or [output] pcap) and the workload's")
                && r.err.contains(side),
            "{}",
            r.err
        );
        assert!(!d.join("out").join(side).exists(), "{side} was written");
    }
    let json = d.join("out/x.json");
    let at = |suffix: &str| d.join(format!("out/x-{suffix}.csv"));
    for (pcap, sets) in [
        (at("queues"), &["net.trace_interval_us=1"][..]),
        (
            at("rates"),
            &["net.trace_interval_us=1", "net.cc=dcqcn"][..],
        ),
    ] {
        let mut args = vec!["perf", "write-lat", "-n", "5"];
        args.extend(sets.iter().flat_map(|s| ["--set", s]));
        args.extend([
            "--json",
            json.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ]);
        let r = rnic(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(
            r.err.contains("--pcap and the") && r.err.contains("trace"),
            "{}",
            r.err
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A side file that cannot be written (a directory of its name) failed only after the
/// whole simulation, with exit 4 and no JSON: now it fails before the run, as the JSON does.
#[test]
fn an_unwritable_side_file_fails_before_the_run() {
    let d = tmp("side-file-unwritable");
    let s = workload_scenario(&d, None);
    std::fs::create_dir_all(d.join("out/w-fct.csv")).unwrap();
    let r = run_with(&crate::perf::ModelRunner, &["run", s.to_str().unwrap()]);
    assert_eq!(r.code, 4, "{}", r.err);
    assert!(
        r.err.contains("workload's flow CSV") && r.err.contains("w-fct.csv: it is a directory"),
        "{}",
        r.err
    );
    assert!(r.out.is_empty(), "the run went ahead: {}", r.out);
    let json = d.join("out/x.json");
    std::fs::create_dir_all(d.join("out/x-queues.csv")).unwrap();
    let runner = FakeRunner::default();
    let args = [
        "perf",
        "write-lat",
        "-n",
        "5",
        "--set",
        "net.trace_interval_us=1",
    ];
    let r = run_with(
        &runner,
        &[&args[..], &["--json", json.to_str().unwrap()]].concat(),
    );
    assert_eq!(r.code, 4, "{}", r.err);
    assert!(
        r.err.contains("x-queues.csv: it is a directory"),
        "{}",
        r.err
    );
    assert_eq!(calls(&runner), 0, "the run went ahead");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--json` naming one of the sweep's own files in `--out` (its `<name>.json`, which the
/// merge of shards reads) replaced it with a list of results: refused before any point runs.
#[test]
fn sweep_json_over_the_sweeps_own_files_is_refused() {
    let d = tmp("sweep-json-clash");
    let f = d.join("sw.toml");
    std::fs::write(
        &f,
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let out_dir = d.join("o");
    for name in ["sw.json", "sw.csv", "sw-msg_rate_mops.svg"] {
        let json = out_dir.join(name);
        let runner = FakeRunner::default();
        let r = run_with(
            &runner,
            &[
                "sweep",
                f.to_str().unwrap(),
                "--out",
                out_dir.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ],
        );
        assert_eq!(r.code, 2, "{name}: {}", r.err);
        assert!(
            r.err.contains("--json") && r.err.contains("sw"),
            "{}",
            r.err
        );
        assert_eq!(calls(&runner), 0, "{name}: points ran");
    }
    // Another name in the same directory is fine.
    let r = rnic(&[
        "sweep",
        f.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--json",
        out_dir.join("all-results.json").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let _ = std::fs::remove_dir_all(&d);
}

fn calls(runner: &FakeRunner) -> usize {
    runner.calls.load(std::sync::atomic::Ordering::Relaxed)
}

/// A sweep file over `perf.size` with the given sizes.
fn size_sweep(d: &Path, name: &str, sizes: &str) -> PathBuf {
    let f = d.join(format!("{name}.toml"));
    std::fs::write(
        &f,
        format!(
            "metrics = [\"msg_rate_mops\"]\n[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [{sizes}]\n"
        ),
    )
    .unwrap();
    f
}

#[test]
fn unwritable_outputs_exit_4_before_anything_runs() {
    let d = tmp("unwritable");
    let f = size_sweep(&d, "s", "64, 128");
    let good_out = d.join("o");
    let scen = d.join("scen.toml");
    std::fs::write(
        &scen,
        "[perf]\ntest = \"write-bw\"\n[output]\njson = \"/proc/x/y.json\"\n",
    )
    .unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["perf", "write-bw", "--json", "/proc/x/y.json"],
        vec!["perf", "write-bw", "--pcap", "/proc/x/p.pcap"],
        vec!["run", scen.to_str().unwrap()],
        vec!["sweep", f.to_str().unwrap(), "--out", "/proc/x"],
        vec![
            "sweep",
            f.to_str().unwrap(),
            "--out",
            good_out.to_str().unwrap(),
            "--json",
            "/proc/x/y.json",
        ],
        vec!["repro", "csrna-memory", "--out", "/proc/x"],
    ];
    for args in &cases {
        let runner = FakeRunner::default();
        let r = run_with(&runner, args);
        assert_eq!(r.code, 4, "{args:?}: {}", r.err);
        // A file named by flag in a missing directory is refused as such (rnic creates only
        // the file); the rest fail creating it, with the system's reason.
        let reason = r.err.contains("os error") || r.err.contains("/proc/x does not exist");
        assert!(
            r.err.contains("error: ") && r.err.contains("/proc/x") && reason,
            "{args:?}: {}",
            r.err
        );
        assert_eq!(calls(&runner), 0, "{args:?} ran before failing");
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
    }
    // The probes leave nothing behind in a directory that is writable.
    assert_eq!(std::fs::read_dir(&good_out).unwrap().count(), 0);
    // A write that fails after the run is an output error too.
    let e = crate::report::json::write_file(Path::new("/proc/x/y.json"), b"{}").unwrap_err();
    assert_eq!(crate::exit_status(&e), crate::exit::OUTPUT);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn json_probe_leaves_no_empty_file_and_keeps_an_old_one() {
    let d = tmp("probe");
    let j = d.join("new/r.json");
    std::fs::create_dir_all(j.parent().unwrap()).unwrap();
    let r = run_with(
        &FakeRunner {
            fail_on_size: Some(65536),
            ..Default::default()
        },
        &["perf", "write-bw", "--json", j.to_str().unwrap()],
    );
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(!j.exists(), "a failed run leaves no empty JSON file");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_names_that_escape_the_output_directory_exit_2() {
    let d = tmp("escape");
    let f = d.join("e.toml");
    std::fs::write(
        &f,
        "name = \"../../../tmp/escape\"\n[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let runner = FakeRunner::default();
    let r = run_with(
        &runner,
        &[
            "sweep",
            f.to_str().unwrap(),
            "--out",
            d.join("o").to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("`name` = \"../../../tmp/escape\"")
            && r.err.contains("path separator")
            && r.err.contains("e.toml"),
        "{}",
        r.err
    );
    assert_eq!(calls(&runner), 0);
    assert!(!d.join("o").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn large_sweeps_need_allow_large() {
    let d = tmp("large");
    let f = d.join("big.toml");
    let v = |n: u32| {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    std::fs::write(
        &f,
        format!(
            "metrics = [\"msg_rate_mops\"]\n[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [{}]\n[[axis]]\nkey = \"perf.size\"\nvalues = [{}]\n",
            v(2),
            v(5001)
        ),
    )
    .unwrap();
    let out = d.join("o");
    let args = ["sweep", f.to_str().unwrap(), "--out", out.to_str().unwrap()];
    let runner = FakeRunner::default();
    let r = run_with(&runner, &args);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err
            .contains("sweep big has 10002 points, more than 10000")
            && r.err.contains("--allow-large"),
        "{}",
        r.err
    );
    assert_eq!(calls(&runner), 0);
    let mut with_flag = args.to_vec();
    with_flag.push("--allow-large");
    let r = run_with(&runner, &with_flag);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.err.starts_with("rnic: sweep big: 10002 points, "),
        "{}",
        r.err
    );
    assert_eq!(calls(&runner), 10_002);
    let csv = std::fs::read_to_string(out.join("big.csv")).unwrap();
    assert_eq!(csv.lines().count(), 10_003);
    assert!(!out.join("big.partial.csv").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn sweep_points_that_fail_are_flagged_and_set_the_exit_status() {
    let d = tmp("flagged");
    let f = size_sweep(&d, "st", "64, 128, 256");
    let out = d.join("o");
    let json = d.join("all.json");
    let args = [
        "sweep",
        f.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    // Incomplete: exit 3, every output written, the point and its reason named.
    let r = run_with(
        &FakeRunner {
            incomplete_size: Some(128),
            ..Default::default()
        },
        &args,
    );
    assert_eq!(r.code, 3, "{}", r.err);
    assert!(
        r.err.contains("error: the run did not complete what was asked: 1 of 3 sweep points did not end ok: perf.size=128 (incomplete): fake stop at size 128, at a limit"),
        "{}",
        r.err
    );
    let lines: Vec<&str> = r.out.lines().collect();
    assert_eq!(lines[0], "perf.size  msg_rate_mops  status      reason");
    assert!(lines[1].ends_with("  ok"), "{}", r.out);
    assert!(
        lines[2].ends_with("  incomplete  fake stop at size 128, at a limit"),
        "{}",
        r.out
    );
    let csv = std::fs::read_to_string(out.join("st.csv")).unwrap();
    assert!(csv.starts_with("perf.size,status,reason,"), "{csv}");
    assert!(
        csv.contains("\n128,incomplete,\"fake stop at size 128, at a limit\","),
        "{csv}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v[1]["status"], "incomplete");
    assert_eq!(v[1]["reason"], "fake stop at size 128, at a limit");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("st.json")).unwrap()).unwrap();
    assert_eq!(v["points"][1]["result"]["status"], "incomplete");
    // Corrupt beats incomplete: exit 1.
    let r = run_with(
        &FakeRunner {
            incomplete_size: Some(128),
            corrupt_size: Some(256),
            ..Default::default()
        },
        &args,
    );
    assert_eq!(r.code, 1, "{}", r.err);
    assert!(
        r.err.contains("2 of 3 sweep points") && r.err.contains("perf.size=256 (corrupt)"),
        "{}",
        r.err
    );
    // A point whose run errors is a model_error row; the others still run.
    let runner = FakeRunner {
        fail_on_size: Some(128),
        ..Default::default()
    };
    let r = run_with(&runner, &args);
    assert_eq!(r.code, 1, "{}", r.err);
    assert_eq!(calls(&runner), 3);
    let csv = std::fs::read_to_string(out.join("st.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(
        csv.contains("\n128,model_error,the run failed: fake failure at size 128,"),
        "{csv}"
    );
    assert!(!out.join("st.partial.csv").exists());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn help_lists_the_exit_statuses() {
    let r = rnic(&["--help"]);
    assert_eq!(r.code, 0);
    let at = r.out.find("Exit status:").expect("exit statuses in --help");
    let tail = &r.out[at..];
    for code in 0..=4 {
        assert!(tail.contains(&format!("\n  {code}  ")), "{tail}");
    }
    let r = rnic(&["sweep", "--help"]);
    assert!(
        r.out.contains("--allow-large") && r.out.contains(&crate::sweep::LARGE_POINTS.to_string()),
        "{}",
        r.out
    );
}

#[test]
fn repro_with_points_that_did_not_end_ok_fails_with_their_status() {
    let d = tmp("repro-broken");
    let out = d.join("o");
    let runner = FakeRunner {
        incomplete_size: Some(64),
        ..Default::default()
    };
    let r = run_with(
        &runner,
        &["repro", "csrna-peak", "--out", out.to_str().unwrap()],
    );
    assert_eq!(r.code, 3, "{}", r.err);
    let run_claim = r
        .out
        .lines()
        .find(|l| l.starts_with("csrna-peak/run "))
        .unwrap_or_else(|| panic!("{}", r.out));
    assert!(
        run_claim.contains("did not end ok") && run_claim.ends_with("FAIL"),
        "{run_claim}"
    );
    assert!(
        r.err.contains("rnic: sweep peak: 24 points, ")
            && r.err.contains("sweep points did not end ok in csrna-peak"),
        "{}",
        r.err
    );
    let csv = std::fs::read_to_string(out.join("csrna-peak/peak.csv")).unwrap();
    assert_eq!(csv.matches(",incomplete,").count(), 24, "{csv}");
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert!(
        report.contains("did not end ok (worst status: incomplete)"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn repro_writes_one_report_and_refreshes_it() {
    let d = tmp("repro-report");
    let out = d.join("o");
    let o = out.to_str().unwrap();
    let r = rnic(&["repro", "csrna-memory", "--out", o]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(r.err.contains("REPORT.md"), "{}", r.err);
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    for want in [
        "Written by `rnic repro csrna-memory`",
        "## csRNA: Towards Connection-Scalable RNIC Architecture",
        "Ning Kang",
        "IEEE ICCD 2022",
        "### csrna-memory: ",
        "![memory](csrna-memory/memory.png)",
        "[memory.svg](csrna-memory/memory.svg)",
        "Not run yet: `rnic repro csrna-peak`",
        "**0 of 0 predictions pass; 3 of 3 calculations match**",
        "| `csrna-1.4MB` | calculation | csRNA: 1.4 MB",
    ] {
        assert!(report.contains(want), "{want}: {report}");
    }
    assert!(
        r.out
            .contains("csRNA: 0 of 0 predictions pass; 3 of 3 calculations match\n")
            && r.out
                .ends_with(&format!("report: {}\n", out.join("REPORT.md").display())),
        "{}",
        r.out
    );
    // A paper's key runs each of its experiments and writes their sections; the other
    // papers' stay "Not run yet". (`all` is the same path over every experiment, see
    // `select`; under this fake runner it would also run, in full, the experiments that
    // simulate without a runner: over a minute of this test.)
    let r = rnic(&["repro", "csrna", "--out", o]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(
        r.out.contains("\ncsRNA: ") && r.out.contains(" predictions pass; "),
        "{}",
        r.out
    );
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    let csrna = crate::repro::select("csrna").unwrap();
    for e in &csrna {
        assert!(report.contains(&format!("### {}: ", e.id)), "{}", e.id);
    }
    assert!(!report.contains("Earlier run"), "{report}");
    for p in crate::repro::PAPERS.iter().filter(|p| p.key != "csrna") {
        let not_run = format!("Not run yet: `rnic repro {}`.", p.key);
        assert!(report.contains(&not_run), "{}: {report}", p.key);
    }
    // One experiment refreshes its section and keeps the others, marked as earlier runs.
    rnic(&["repro", "csrna-fcfs", "--out", o]);
    let report = std::fs::read_to_string(out.join("REPORT.md")).unwrap();
    assert_eq!(
        report.matches("*Earlier run:").count(),
        csrna.len() - 1,
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// A claim that misses is a result: the run exits 0 and prints the headline and the report's
/// path; `--strict` (tests, CI) exits 1 on the same run.
#[test]
fn repro_misses_exit_0_unless_strict() {
    let d = tmp("repro-strict");
    let o = d.join("o");
    let o = o.to_str().unwrap();
    let r = rnic(&["repro", "csrna-peak", "--out", o]);
    assert_eq!(r.code, 0, "{}", r.err);
    let missed = r.out.lines().filter(|l| l.ends_with("FAIL")).count();
    assert!(
        missed > 0,
        "the fake runner's rates miss a csrna-peak claim: {}",
        r.out
    );
    assert!(
        r.out.contains("\ncsRNA: ") && r.out.contains("\nreport: "),
        "{}",
        r.out
    );
    let strict = rnic(&["repro", "csrna-peak", "--out", o, "--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.err);
    assert!(
        strict
            .err
            .contains("claims missed in csrna-peak (--strict)"),
        "{}",
        strict.err
    );
    assert_eq!(strict.out, r.out);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn repro_lists_and_checks() {
    let r = rnic(&["repro"]);
    assert_eq!(r.code, 0);
    assert!(
        r.out.contains("csrna-peak") && r.out.contains("csrna-memory"),
        "{}",
        r.out
    );
    let l = rnic(&["repro", "list"]);
    assert_eq!((l.code, &l.out), (0, &r.out));
    let r = rnic(&["repro", "csrna", "--check"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out.lines().count(), 7, "{}", r.out);
}

/// Listing and `--check` run no point and write no file: `--out`, `-j`, `--quiet` (and
/// `--check` on a listing) there are refused, naming the flag, where they were taken in
/// silence (`rnic repro list --out DIR -j 3` listed, `rnic repro csrna --check --out DIR`
/// checked, `rnic repro list --quiet` listed).
#[test]
fn repro_list_and_check_refuse_flags_they_ignore() {
    for (args, flag) in [
        (
            &["repro", "list", "--out", "x"][..],
            "--out has no effect here",
        ),
        (&["repro", "-j", "3"][..], "-j/--jobs has no effect here"),
        (
            &["repro", "list", "--check"][..],
            "--check has no effect here",
        ),
        (
            &["repro", "csrna", "--check", "--out", "x"][..],
            "--out has no effect here",
        ),
        (
            &["repro", "csrna-peak", "--check", "-j", "2"][..],
            "-j/--jobs has no effect here",
        ),
        (
            &["repro", "list", "--strict"][..],
            "--strict has no effect here",
        ),
        (
            &["repro", "csrna", "--check", "--sensitivity"][..],
            "--sensitivity has no effect here",
        ),
        // The global --quiet silences a run's progress; these print none.
        (
            &["repro", "list", "--quiet"][..],
            "--quiet has no effect here",
        ),
        (&["--quiet", "repro"][..], "--quiet has no effect here"),
        (
            &["repro", "csrna", "--check", "--quiet"][..],
            "--quiet has no effect here",
        ),
    ] {
        let r = rnic(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(r.err.contains(flag), "{args:?}: {}", r.err);
        assert!(r.out.is_empty(), "{args:?}: {}", r.out);
    }
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const TOKENS: &[&str] = &[
        "perf",
        "write-bw",
        "read-lat",
        "atomic-bw",
        "send-lat",
        "config",
        "show",
        "profiles",
        "repro",
        "all",
        "demo",
        "-s",
        "-n",
        "-q",
        "-t",
        "-a",
        "-m",
        "-D",
        "-u",
        "-A",
        "--set",
        "--seed",
        "--profile",
        "--clients",
        "--report_gbits",
        "0",
        "1",
        "2",
        "8",
        "64",
        "4096",
        "300",
        "-1",
        "1e9",
        "nan",
        "inf",
        "99999999999999999999",
        "baseline",
        "x",
        "=",
        "qp.pmtu=1024",
        "nic.x=1",
        "a=",
        "=b",
        "nic.qpc_manager=nonblocking",
        "CMP_AND_SWAP",
        "qp=",
        "net.impair={loss=2}",
        "sim.seed=-1",
        "nic=1",
        "",
        "\u{fffd}",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn arbitrary_arguments_never_panic(idx in proptest::collection::vec(0..TOKENS.len(), 0..7)) {
            let args: Vec<&str> = idx.iter().map(|&i| TOKENS[i]).collect();
            // Keep the fake cheap: no huge iteration counts.
            prop_assume!(!args.contains(&"99999999999999999999") || !args.contains(&"-n"));
            // `repro all` runs every reproduction (and writes out/repro): not a fuzz case.
            prop_assume!(!args.contains(&"repro") || !args.contains(&"all"));
            let r = rnic(&args);
            prop_assert!(r.code <= 2, "{args:?} -> {}", r.code);
            if r.code == 2 {
                prop_assert!(!r.err.is_empty());
            }
        }
    }
}

#[test]
fn quiet_drops_progress_lines_and_is_taken_anywhere() {
    let d = tmp("quiet");
    let sizes: Vec<String> = (1..=120).map(|i| (i * 64).to_string()).collect();
    let f = size_sweep(&d, "many", &sizes.join(", "));
    let out = d.join("o");
    let (f, out) = (f.to_str().unwrap(), out.to_str().unwrap());
    for args in [
        &["--quiet", "sweep", f, "--out", out][..],
        &["sweep", f, "--out", out, "--quiet"],
    ] {
        let r = rnic(args);
        assert_eq!(r.code, 0, "{}", r.err);
        assert!(
            r.err.starts_with("rnic: sweep many: 120 points, "),
            "{}",
            r.err
        );
        assert!(!r.err.contains("points done"), "{}", r.err);
    }
    let r = rnic(&["perf", "write-bw", "-n", "100", "--quiet"]);
    assert_eq!(r.code, 0, "{}", r.err);
    let _ = std::fs::remove_dir_all(&d);
}

/// `sim.duration_us` is read only as -D's window: a `--set`, `[set]` or sweep axis of it on a
/// run counted in iterations, or on `[[flow]]`s, is refused naming it (the run went on in
/// silence, and a sweep over it gave identical points); with -D it is the window.
#[test]
fn an_unread_window_is_refused() {
    let set = ["--set", "sim.duration_us=50"];
    for extra in [&["-n", "10"][..], &[]] {
        let mut args = vec!["perf", "write-bw"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&set);
        let r = rnic(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.err);
        assert!(
            r.err
                .contains("`sim.duration_us` = 50 would have no effect")
                && r.err.contains("give -D/--duration"),
            "{}",
            r.err
        );
    }
    let r = rnic(&["perf", "write-bw", "-D", "0.00005", set[0], set[1]]);
    assert_eq!(r.code, 0, "{}", r.err);
    let d = tmp("unread-window");
    let flows = d.join("flows.toml");
    std::fs::write(&flows, "[[flow]]\ntest = \"write-bw\"\niters = 10\n").unwrap();
    let r = rnic(&["run", flows.to_str().unwrap(), set[0], set[1]]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err.contains("a [[flow]] runs for its own duration_us"),
        "{}",
        r.err
    );
    let sweep = d.join("sweep.toml");
    std::fs::write(
        &sweep,
        "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"sim.duration_us\"\nvalues = [10, 20]\n",
    )
    .unwrap();
    let out = d.join("out");
    let r = rnic(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.err);
    assert!(
        r.err
            .contains("`sim.duration_us` = 10 would have no effect"),
        "{}",
        r.err
    );
}

/// The notes a point's config calls for (a burst without a rate, switch fields on a
/// switchless cable) are said once for the sweep, with how many points they concern when not
/// all; a sweep said none of them (`rnic perf` and `rnic run` do).
#[test]
fn a_sweep_says_its_points_config_notes_once() {
    let d = tmp("sweep-config-notes");
    let sweep = d.join("sweep.toml");
    std::fs::write(
        &sweep,
        "[perf]\ntest = \"write-bw\"\niters = 20\n[set]\nqp.rate_limit_burst_bytes = 4096\n\
         net.switch_latency_ns = 100\n[[axis]]\nkey = \"net.topology\"\n\
         values = [\"back_to_back\", \"star\"]\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n",
    )
    .unwrap();
    let out = d.join("out");
    let r = rnic(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.err);
    let burst = "qp.rate_limit_burst_bytes = 4096 has no effect";
    assert_eq!(r.err.matches(burst).count(), 1, "{}", r.err);
    let burst_line = r
        .err
        .lines()
        .find(|l| l.contains(burst))
        .unwrap_or_default();
    assert!(
        !burst_line.contains("(at "),
        "every point has it: {burst_line}"
    );
    let switch = "net.switch_latency_ns = 100 has no effect";
    assert_eq!(r.err.matches(switch).count(), 1, "{}", r.err);
    assert!(r.err.contains("(at 2 of the 4 points)"), "{}", r.err);
}

/// A sweep that gives RC's retry settings to UC or UD points says so once, as `rnic perf`
/// does for -u and --retry_count, counting the points it concerns; an all-RC sweep says
/// nothing.
#[test]
fn a_sweep_says_its_retry_settings_do_nothing_over_uc_and_ud() {
    let d = tmp("sweep-retry-notes");
    let sweep = d.join("sweep.toml");
    let body = "[perf]\ntest = \"send-bw\"\nsize = 64\niters = 20\n[set]\nqp.retry_cnt = 3\n\
                [[axis]]\nkey = \"qp.timeout\"\nvalues = [14, 18]\n";
    std::fs::write(
        &sweep,
        format!("{body}[[axis]]\nkey = \"qp.transport\"\nvalues = [\"rc\", \"ud\"]\n"),
    )
    .unwrap();
    let out = d.join("out");
    let run = |file: &std::path::Path| {
        rnic(&[
            "sweep",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    let r = run(&sweep);
    assert_eq!(r.code, 0, "{}", r.err);
    for flag in ["-u/--qp-timeout", "--retry_count (qp.retry_cnt)"] {
        let line = r.err.lines().find(|l| l.contains(flag)).unwrap_or_default();
        assert!(
            line.contains("no effect on send-bw over UD")
                && line.ends_with("(at 2 of the 4 points)"),
            "{}",
            r.err
        );
    }
    std::fs::write(&sweep, body).unwrap();
    let r = run(&sweep);
    assert_eq!(r.code, 0, "{}", r.err);
    assert!(!r.err.contains("no effect"), "{}", r.err);
}
