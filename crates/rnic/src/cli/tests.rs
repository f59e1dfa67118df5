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
    assert!(r.err.contains("1 of 2 points (perf.size=64)"), "{}", r.err);
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
    assert!(r.out.starts_with("perf.qp  msg_rate_mops\n"), "{}", r.out);
    assert_eq!(r.out.lines().count(), 3);
    assert!(out_dir.join("sw.csv").exists() && out_dir.join("sw-msg_rate_mops.svg").exists());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[1]["caches"]["qpc"]["misses"], 300);
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
    let r = rnic(&["repro", "csrna", "--check"]);
    assert_eq!(r.code, 0, "{}", r.err);
    assert_eq!(r.out.lines().count(), 6, "{}", r.out);
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
