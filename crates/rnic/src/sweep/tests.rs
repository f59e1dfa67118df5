use super::*;
use crate::testing::FakeRunner;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const TINY: &str = r#"
name = "tiny"
title = "fake QPC scaling"
x = "perf.qp"
series = "nic.qpc_cache_entries"
x_log = true
metrics = ["msg_rate_mops", "latency_us.avg"]
[perf]
test = "write-bw"
size = 64
iters = 100
[set]
net.clients = 2

[[axis]]
key = "nic.qpc_cache_entries"
values = [100, 300]
[[axis]]
key = "perf.qp"
values = [1, 10, 1000]
"#;

fn opts(dir: &Path, jobs: usize) -> SweepOptions {
    SweepOptions {
        jobs,
        out_dir: dir.to_path_buf(),
        progress: false,
        quiet: false,
        allow_large: false,
        shard: None,
    }
}

#[test]
fn tiny_sweep_writes_csv_json_and_plots() {
    let sw = parse_sweep(TINY, "tiny.toml").unwrap();
    assert_eq!(sw.points().len(), 6);
    let dir = tmp("tiny");
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&dir, 2),
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(out.points, 6);
    let csv = std::fs::read_to_string(dir.join("tiny.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(
        lines[0].starts_with("nic.qpc_cache_entries,perf.qp,status,reason,size_bytes,"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(",msg_rate_mops,") && lines[0].contains(",latency_us.avg,"));
    assert!(lines[0].contains(",caches.qpc.hits,") && !lines[0].contains("wall_seconds"));
    let firsts: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(","))
        .collect();
    assert_eq!(
        firsts,
        ["100,1", "100,10", "100,1000", "300,1", "300,10", "300,1000"]
    );
    // The fake runner counts QPs beyond the cache as misses; clients come from [set].
    let clients_col = lines[0].split(',').position(|c| c == "clients").unwrap();
    assert!(lines[1..]
        .iter()
        .all(|l| l.split(',').nth(clients_col) == Some("2")));
    for m in ["msg_rate_mops", "latency_us_avg"] {
        let png = std::fs::read(dir.join(format!("tiny-{m}.png"))).unwrap();
        assert!(
            png.len() > 1000 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{m}"
        );
        let svg = std::fs::read_to_string(dir.join(format!("tiny-{m}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("fake QPC scaling"),
            "{m}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tiny.json")).unwrap()).unwrap();
    assert_eq!(json["points"].as_array().unwrap().len(), 6);
    assert_eq!(json["points"][5]["point"]["perf.qp"], 1000);
    assert_eq!(out.plots.len(), 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn outputs_do_not_depend_on_jobs() {
    let sw = parse_sweep(TINY, "tiny.toml").unwrap();
    let (a, b) = (tmp("jobs1"), tmp("jobs4"));
    run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&a, 1),
        &mut std::io::sink(),
    )
    .unwrap();
    run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&b, 4),
        &mut std::io::sink(),
    )
    .unwrap();
    for f in [
        "tiny.csv",
        "tiny-msg_rate_mops.png",
        "tiny-msg_rate_mops.svg",
        "tiny-latency_us_avg.png",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn categorical_and_single_axis_sweeps_plot() {
    let src = r#"
metrics = ["goodput_gbps"]
[perf]
iters = 10
[[axis]]
key = "perf.test"
values = ["write-bw", "read-bw", "send-bw"]
[[axis]]
key = "profile"
values = ["baseline"]
"#;
    let sw = parse_sweep(src, "dir/cat.toml").unwrap();
    assert_eq!(sw.name, "cat");
    let dir = tmp("cat");
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&dir, 0),
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(out.points, 3);
    assert!(
        std::fs::read(dir.join("cat-goodput_gbps.png"))
            .unwrap()
            .len()
            > 1000
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key the file fixes and also sweeps would take the axis value at every point, the
/// fixed one ignored in silence: refused, naming the axis and where the file sets it.
#[test]
fn an_axis_over_a_key_the_file_fixes_is_refused() {
    for (text, want) in [
        (
            "[perf]\ntest = \"write-bw\"\nsize = 64\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [128]",
            "`perf.size` in [perf]",
        ),
        (
            "[perf]\ntest = \"write-bw\"\niters = 5\n[set]\nnic.qpc_cache_entries = 5\n[[axis]]\nkey = \"nic.qpc_cache_entries\"\nvalues = [100, 200]",
            "`nic.qpc_cache_entries` in [set]",
        ),
        (
            "profile = \"csrna\"\n[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"profile\"\nvalues = [\"baseline\"]",
            "`profile`",
        ),
    ] {
        let e = parse_sweep(text, "f.toml").unwrap_err().to_string();
        assert!(e.contains("axis[0]") && e.contains(want), "{e}");
    }
    // The same keys fixed with no axis over them, or swept with none fixed, stay accepted.
    assert!(parse_sweep(
        "[perf]\ntest = \"write-bw\"\nsize = 64\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]",
        "f.toml"
    )
    .is_ok());
}

#[test]
fn cli_overrides_apply_to_every_point_before_axes() {
    let sw = parse_sweep(TINY, "tiny.toml").unwrap();
    let cli = CliOverrides {
        seed: Some(9),
        set: vec![crate::config::parse_set("net.clients=3").unwrap()],
        ..Default::default()
    };
    let pts = sw.resolve_points(&cli).unwrap();
    assert!(pts.iter().all(|p| p.config.sim.seed == 9));
    assert_eq!(pts[0].config.nic.qpc_cache_entries, 100);
    // --set wins over the file's [set]; a flag on an axis field is refused (see
    // flags_that_set_an_axis_field_are_refused_naming_flag_field_and_axis).
    assert_eq!(pts[0].perf_spec().unwrap().clients, 3);
    assert_eq!(pts[2].perf_spec().unwrap().qps, 1000);
}

/// A point the model refuses as it builds the run is bad input for that point, as `rnic
/// perf` exits 2 for it: its row says `refused` and the sweep exits 2, where it said
/// `model_error` and "a simulator bug" (exit 1). A model error still outranks it.
#[test]
fn a_point_refused_as_it_is_built_is_a_refused_row_and_exits_2() {
    let sw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128, 256]",
        "r.toml",
    )
    .unwrap();
    let dir = tmp("refused");
    let runner = |fail_on_size| FakeRunner {
        refuse_at_build_size: Some(128),
        incomplete_size: Some(256),
        fail_on_size,
        ..Default::default()
    };
    let run = |r: &FakeRunner| {
        run_sweep(
            &sw,
            &CliOverrides::default(),
            r,
            &opts(&dir, 2),
            &mut std::io::sink(),
        )
        .unwrap()
    };
    let out = run(&runner(None));
    assert_eq!(out.worst(), crate::report::RunStatus::Refused);
    let f = out.failure().unwrap();
    assert_eq!(crate::status_exit_code(f.status), crate::exit::USAGE);
    assert!(
        f.reason
            .contains("perf.size=128 (refused): the run was refused: fake build refusal"),
        "{}",
        f.reason
    );
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    assert!(
        csv.lines().nth(2).unwrap().starts_with("128,refused,"),
        "{csv}"
    );
    let out = run(&runner(Some(64)));
    assert_eq!(out.worst(), crate::report::RunStatus::ModelError);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn failing_point_is_a_model_error_row_and_the_others_still_run() {
    let sw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128, 256]",
        "f.toml",
    )
    .unwrap();
    let dir = tmp("fail");
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner {
            fail_on_size: Some(128),
            incomplete_size: Some(256),
            ..Default::default()
        },
        &opts(&dir, 2),
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(out.points, 3);
    assert_eq!(out.worst(), crate::report::RunStatus::ModelError);
    let f = out.failure().unwrap();
    assert_eq!(crate::status_exit_code(f.status), crate::exit::FAILED);
    assert!(
        f.reason.starts_with("2 of 3 sweep points did not end ok: perf.size=128 (model_error): the run failed: fake failure at size 128; perf.size=256 (incomplete): fake stop"),
        "{}",
        f.reason
    );
    let csv = std::fs::read_to_string(dir.join("f.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(
        lines[0].starts_with("perf.size,status,reason,size_bytes,"),
        "{}",
        lines[0]
    );
    assert!(lines[1].starts_with("64,ok,,64,"), "{csv}");
    assert!(
        lines[2].starts_with("128,model_error,the run failed: fake failure at size 128,128,"),
        "{csv}"
    );
    // A reason with a comma is one quoted cell.
    assert!(
        lines[3].starts_with("256,incomplete,\"fake stop at size 256, at a limit\",256,"),
        "{csv}"
    );
    // The partial file is gone once the ordered CSV is written; plots skip failed points.
    assert!(!dir.join("f.partial.csv").exists());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("f.json")).unwrap()).unwrap();
    assert_eq!(json["points"][1]["result"]["status"], "model_error");
    assert_eq!(json["points"][2]["result"]["status"], "incomplete");
    assert_eq!(json["points"][0]["result"]["reason"], "");
    let data = plot::plot_data(&sw, &out.results, "msg_rate_mops");
    assert_eq!(data.series[0].points.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_sweep_keeps_the_rows_of_finished_points() {
    let sw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128, 256, 512]",
        "killed.toml",
    )
    .unwrap();
    let dir = tmp("killed");
    // One worker takes the points in grid order; the third one "kills" the sweep.
    let runner = FakeRunner {
        panic_on_size: Some(256),
        ..Default::default()
    };
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_sweep(
            &sw,
            &CliOverrides::default(),
            &runner,
            &opts(&dir, 1),
            &mut std::io::sink(),
        )
    }));
    assert!(crashed.is_err());
    assert!(!dir.join("killed.csv").exists());
    let partial = std::fs::read_to_string(dir.join("killed.partial.csv")).unwrap();
    let lines: Vec<&str> = partial.lines().collect();
    assert_eq!(lines.len(), 3, "{partial}");
    assert!(lines[0].starts_with("point,perf.size,status,reason,size_bytes,"));
    assert!(lines[1].starts_with("1,64,ok,,64,") && lines[2].starts_with("2,128,ok,,128,"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_point_failing_writes_the_table_without_plots() {
    let sw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64]",
        "all.toml",
    )
    .unwrap();
    let dir = tmp("allfail");
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner {
            corrupt_size: Some(64),
            ..Default::default()
        },
        &opts(&dir, 1),
        &mut std::io::sink(),
    )
    .unwrap();
    assert!(out.plots.is_empty() && dir.join("all.csv").exists());
    assert_eq!(
        crate::status_exit_code(out.failure().unwrap().status),
        crate::exit::FAILED
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn point_count_workers_and_progress_lines_are_logged() {
    let values: Vec<String> = (1..=120).map(|i| i.to_string()).collect();
    let src = format!(
        "metrics = [\"msg_rate_mops\"]\n[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [{}]",
        values.join(", ")
    );
    let sw = parse_sweep(&src, "many.toml").unwrap();
    let dir = tmp("many");
    let mut log = Vec::new();
    run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&dir, 2),
        &mut log,
    )
    .unwrap();
    let log = String::from_utf8(log).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines[0], "rnic: sweep many: 120 points, 2 workers");
    assert_eq!(lines[1], "rnic: sweep many: 12/120 points done");
    assert_eq!(lines.last(), Some(&"rnic: sweep many: 120/120 points done"));
    assert_eq!(lines.len(), 11, "{log}");
    // --quiet: the point count, no progress lines.
    let quiet = SweepOptions {
        quiet: true,
        ..opts(&dir, 2)
    };
    let quiet_log = |sw: &Sweep| {
        let mut log = Vec::new();
        let fake = FakeRunner::default();
        run_sweep(sw, &CliOverrides::default(), &fake, &quiet, &mut log).unwrap();
        String::from_utf8(log).unwrap()
    };
    assert_eq!(quiet_log(&sw), "rnic: sweep many: 120 points, 2 workers\n");
    // One point is one point ("1 points" until 2026-12-01).
    let one = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1]",
        "one.toml",
    )
    .unwrap();
    assert_eq!(quiet_log(&one), "rnic: sweep one: 1 point, 1 worker\n");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn large_grids_need_the_flag_and_huge_ones_are_refused() {
    let values: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    let src = format!(
        "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [{v}]\n[[axis]]\nkey = \"perf.size\"\nvalues = [{v}]",
        v = values.join(", ")
    );
    let sw = parse_sweep(&src, "big.toml").unwrap();
    assert_eq!(sw.point_count(), 10_201);
    let dir = tmp("big");
    let runner = FakeRunner::default();
    let e = Plan::new(&sw, &CliOverrides::default(), &runner, &opts(&dir, 1))
        .err()
        .unwrap();
    assert_eq!(crate::exit_status(&e), crate::exit::USAGE);
    let msg = format!("{e:#}");
    assert!(
        msg.contains("10201 points, more than 10000") && msg.contains("--allow-large"),
        "{msg}"
    );
    assert!(!dir.exists(), "refused before creating outputs");
    let mut o = opts(&dir, 1);
    o.allow_large = true;
    let plan = Plan::new(&sw, &CliOverrides::default(), &runner, &o).unwrap();
    assert_eq!(plan.len(), 10_201);
    // Above the hard ceiling the file itself is refused.
    let v1000: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
    let huge = format!(
        "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [{v}]\n[[axis]]\nkey = \"perf.size\"\nvalues = [{v}]",
        v = v1000.join(", ")
    );
    let e = parse_sweep(&huge, "huge.toml").unwrap_err().to_string();
    assert!(
        e.contains("more than 1000000 points") && e.contains("even with --allow-large"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn refused_points_and_unwritable_outputs_fail_before_any_run() {
    let sw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128]",
        "r.toml",
    )
    .unwrap();
    let runner = FakeRunner {
        refuse_size: Some(128),
        ..Default::default()
    };
    let dir = tmp("refuse");
    let e = run_sweep(
        &sw,
        &CliOverrides::default(),
        &runner,
        &opts(&dir, 1),
        &mut std::io::sink(),
    )
    .unwrap_err();
    assert_eq!(crate::exit_status(&e), crate::exit::USAGE);
    assert!(
        format!("{e:#}").contains("sweep point 2 of 2 (perf.size=128): fake refusal"),
        "{e:#}"
    );
    let runner = FakeRunner::default();
    let e = run_sweep(
        &sw,
        &CliOverrides::default(),
        &runner,
        &opts(Path::new("/proc/x"), 1),
        &mut std::io::sink(),
    )
    .unwrap_err();
    assert_eq!(crate::exit_status(&e), crate::exit::OUTPUT);
    assert!(format!("{e:#}").contains("/proc/x"), "{e:#}");
    // An output name taken by a directory is found before running too.
    std::fs::create_dir_all(dir.join("r.json")).unwrap();
    let e = run_sweep(
        &sw,
        &CliOverrides::default(),
        &runner,
        &opts(&dir, 1),
        &mut std::io::sink(),
    )
    .unwrap_err();
    assert!(
        format!("{e:#}").contains("r.json: it is a directory"),
        "{e:#}"
    );
    assert_eq!(runner.calls.load(std::sync::atomic::Ordering::Relaxed), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_that_would_leave_the_output_directory_are_refused_when_parsed() {
    let body = "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1]\n";
    for name in ["../../../tmp/escape", "a/b", "..", ""] {
        let e = parse_sweep(&format!("name = {name:?}\n{body}"), "n.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`name`") && e.contains("e.g. name ="),
            "{name:?}: {e}"
        );
    }
    let e = parse_sweep(
        &format!("metrics = [\"latency_us.avg\", \"latency_us.avg\"]\n{body}"),
        "n.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("twice"), "{e}");
}

#[test]
fn bad_sweep_files_name_the_field() {
    let base = "[perf]\ntest = \"write-bw\"\n";
    let axis = "[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]\n";
    // (top-level keys, axes (None = one good axis), expected text)
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("", Some(""), "at least one [[axis]]"),
        ("", Some("[[axis]]\nkey = \"nic.qpc_cach\"\nvalues = [1]\n"), "did you mean `nic.qpc_cache_"),
        ("", Some("[[axis]]\nkey = \"qp.pmtu\"\nvalues = [4096, 300]\n"), "`qp.pmtu` = 300"),
        ("", Some("[[axis]]\nkey = \"perf.qp\"\nvalues = []\n"), "axis[0].values"),
        ("", Some("[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 1]\n"), "twice"),
        ("", Some("[[axis]]\nkey = \"perf.size\"\nvalues = [64, 64.0]\n"), "twice"),
        ("", Some("[[axis]]\nkey = \"nic.clock_ghz\"\nvalues = [1, 1.0]\n"), "twice"),
        ("", Some("[[axis]]\nkey = \"perf.sise\"\nvalues = [1]\n"), "perf.sise"),
        ("", Some("[[axis]]\nkey = \"profile\"\nvalues = [\"nope\"]\n"), "unknown profile `nope`"),
        ("", Some("[[axis]]\nkey = \"perf.qp\"\nvalue = [1]\n"), "axis[0].value"),
        ("", Some("[[axis]]\nvalues = [1]\n"), "axis[0].key"),
        ("", Some("axis = [1]\n"), "axis[0]"),
        ("x = \"perf.size\"\n", None, "`x` = \"perf.size\" is not an axis"),
        ("series = \"perf.qp\"\n", None, "`series` and `x`"),
        ("metrics = [\"msg_rate\"]\n", None, "did you mean `msg_rate_mops`"),
        ("metrics = []\n", None, "`metrics` is empty"),
        ("metrics = [1]\n", None, "metrics[0]"),
        ("x_log = \"yes\"\n", None, "`x_log`"),
        ("axes = 1\n", None, "did you mean `axis`"),
        ("x_log = true\n", Some("[[axis]]\nkey = \"profile\"\nvalues = [\"baseline\"]\n"), "positive numbers"),
        ("", Some("[[axis]]\nkey = \"perf.qp\"\nvalues = [1]\nmetrics = [\"x\"]\n"), "`axis.metrics`: `metrics` is a top-level key"),
        ("", Some("[set]\nnic.ooo_cap = 3\nx = \"perf.qp\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1]\n"), "`set.x`: `x` is a top-level key"),
    ];
    for (top, axes, want) in cases {
        let src = if axes.is_some_and(|a| !a.starts_with("[[")) {
            format!("{top}{}{base}", axes.unwrap_or(""))
        } else {
            format!("{top}{base}{}", axes.unwrap_or(axis))
        };
        let e = parse_sweep(&src, "bad.toml").unwrap_err().to_string();
        assert!(e.contains(want), "{src:?}: {e}");
    }
    // Points are resolved (and combinations checked) before anything runs.
    let sw = parse_sweep(
        "[perf]\ntest = \"atomic-bw\"\n[[axis]]\nkey = \"perf.size\"\nvalues = [8, 64]",
        "f",
    )
    .unwrap();
    let e = format!(
        "{:#}",
        sw.resolve_points(&CliOverrides::default()).unwrap_err()
    );
    assert!(
        e.contains("sweep point 2 of 2 (perf.size=64)") && e.contains("8 bytes"),
        "{e}"
    );
    // A malformed file reports line and column.
    let e = parse_sweep("[[axis]\n", "m.toml").unwrap_err().to_string();
    assert!(e.contains("m.toml") && e.contains("line 1"), "{e}");
}

#[test]
fn metric_file_names_are_safe() {
    assert_eq!(plot::file_safe("latency_us.p99"), "latency_us_p99");
}

#[test]
fn example_files_in_scenarios_dir_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut n = 0;
    for e in entries {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let origin = path.display().to_string();
        if src.contains("[[axis]]") {
            let sw = parse_sweep(&src, &origin).unwrap_or_else(|e| panic!("{origin}: {e}"));
            sw.resolve_points(&CliOverrides::default())
                .unwrap_or_else(|e| panic!("{origin}: {e:#}"));
        } else {
            let s = crate::scenario::parse_scenario(&src, &origin)
                .unwrap_or_else(|e| panic!("{origin}: {e}"));
            s.base
                .inputs(&CliOverrides::default())
                .and_then(|i| i.resolve())
                .unwrap_or_else(|e| panic!("{origin}: {e}"));
        }
        n += 1;
    }
    assert!(n > 0);
}

/// A sweep point is one row of the CSV, but `-a` (`perf.all`) runs every size from 2 B to
/// 8 MB, which one row cannot hold: the row mixed the last size's rates and operations with
/// every size's simulated time (5 operations at 0.00145 Mops over 7,006 µs). Refused before
/// any point runs, naming the point and the field, with the axis that does it instead.
#[test]
fn a_sweep_point_with_all_sizes_is_refused() {
    for text in [
        "[perf]\ntest = \"write-bw\"\niters = 5\nall = true\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]",
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.all\"\nvalues = [false, true]",
    ] {
        let sw = parse_sweep(text, "f.toml").unwrap();
        let e = format!(
            "{:#}",
            sw.resolve_points(&CliOverrides::default()).unwrap_err()
        );
        assert!(e.contains("sweep point") && e.contains("`perf.all`"), "{e}");
        assert!(e.contains("perf.size"), "{e}");
    }
}

/// `perf.report_gbits`, `stats`, `report_both`, `report_histogram` and `report_unsorted`
/// choose what `rnic perf`'s table prints; a sweep writes no table, and its CSV and JSON
/// are the same whatever they say (an axis over `perf.report_gbits` gave two identical
/// rows, exit 0). Refused in [perf] and as an axis, naming the key.
#[test]
fn table_only_perf_keys_are_refused_in_a_sweep() {
    for key in [
        "report_gbits",
        "stats",
        "report_both",
        "report_histogram",
        "report_unsorted",
    ] {
        for text in [
            format!(
                "[perf]\ntest = \"write-lat\"\niters = 5\n{key} = true\n\
                 [[axis]]\nkey = \"perf.qp\"\nvalues = [1, 2]"
            ),
            format!(
                "[perf]\ntest = \"write-lat\"\niters = 5\n\
                 [[axis]]\nkey = \"perf.{key}\"\nvalues = [true, false]"
            ),
        ] {
            let e = parse_sweep(&text, "f.toml")
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("perf.{key}")), "{key}: {e}");
        }
    }
}

/// A latency test keeps one operation in flight, so `perf.tx_depth` changes none of its
/// figures: a sweep of latency tests alone over it (or with it in [perf]) gave identical
/// points in silence and is refused; one that also runs bandwidth tests gets one note.
#[test]
fn tx_depth_on_latency_tests_is_refused_or_noted_once() {
    for text in [
        "[perf]\ntest = \"write-lat\"\niters = 5\n\
         [[axis]]\nkey = \"perf.tx_depth\"\nvalues = [1, 4]",
        "[perf]\niters = 5\ntx_depth = 4\n\
         [[axis]]\nkey = \"perf.test\"\nvalues = [\"write-lat\", \"read-lat\"]",
    ] {
        let e = parse_sweep(text, "f.toml")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`perf.tx_depth` (-t) has no effect on"),
            "{text}: {e}"
        );
    }
    let mixed = parse_sweep(
        "[perf]\niters = 5\ntx_depth = 4\n\
         [[axis]]\nkey = \"perf.test\"\nvalues = [\"write-lat\", \"write-bw\"]",
        "f.toml",
    )
    .unwrap();
    let notes = mixed.notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("has no effect on the write-lat points"),
        "{notes:?}"
    );
    let bw = parse_sweep(
        "[perf]\ntest = \"write-bw\"\niters = 5\n\
         [[axis]]\nkey = \"perf.tx_depth\"\nvalues = [1, 4]",
        "f.toml",
    )
    .unwrap();
    assert!(bw.notes().is_empty());
}

/// A log y axis cannot show a metric that is 0 at every point (no retransmission): that
/// plot is left out with a note naming the metric and `y_log`, the other plots are written
/// and the sweep's status is its points' (it failed with exit 1, after writing nothing past
/// the CSV and JSON, saying the metric was "missing from every result").
#[test]
fn a_log_axis_leaves_out_a_metric_that_is_zero_everywhere() {
    let sw = parse_sweep(
        "name = \"ylog\"\nx = \"perf.qp\"\ny_log = true\n\
         metrics = [\"retransmissions\", \"msg_rate_mops\"]\n\
         [perf]\ntest = \"write-bw\"\niters = 5\n\
         [[axis]]\nkey = \"perf.qp\"\nvalues = [1, 10]",
        "ylog.toml",
    )
    .unwrap();
    let dir = tmp("ylog");
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&dir, 1),
        &mut std::io::sink(),
    )
    .unwrap();
    assert!(out.failure().is_none());
    assert!(out
        .results
        .iter()
        .all(|(_, r)| r.perf().unwrap().retransmissions == 0));
    assert_eq!(out.plots.len(), 2, "{:?}", out.plots);
    assert!(dir.join("ylog-msg_rate_mops.png").exists());
    assert!(!dir.join("ylog-retransmissions.png").exists());
    assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
    assert!(
        out.notes[0].contains("`retransmissions`") && out.notes[0].contains("y_log"),
        "{}",
        out.notes[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A grid past [`MAX_POINTS`] is refused from the axes' lengths before any value is looked
/// at (here every value of the first axis is of the wrong type, which would be the error
/// were they checked first), and duplicates are found in one pass: an axis of 200,000 sizes
/// (20 billion comparisons for the pairwise check) parses, and its one repeat is named.
#[test]
fn huge_axes_are_refused_at_once_and_duplicates_found_in_linear_time() {
    let bad: Vec<String> = (0..1001).map(|i| format!("\"x{i}\"")).collect();
    let v1001: Vec<String> = (1..=1001).map(|i| i.to_string()).collect();
    let huge = format!(
        "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [{}]\n[[axis]]\nkey = \"perf.size\"\nvalues = [{}]",
        bad.join(","),
        v1001.join(",")
    );
    let e = parse_sweep(&huge, "huge.toml").unwrap_err().to_string();
    assert!(
        e.contains("more than 1000000 points (1001 × 1001 values)"),
        "{e}"
    );
    let sizes: Vec<String> = (1..=200_000).map(|i| i.to_string()).collect();
    let long = |extra: &str| {
        format!(
            "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.size\"\nvalues = [{}{extra}]",
            sizes.join(",")
        )
    };
    let sw = parse_sweep(&long(""), "long.toml").unwrap();
    assert_eq!(sw.point_count(), 200_000);
    let e = parse_sweep(&long(",64.0"), "long.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("lists 64.0 twice"), "{e}");
    // 0.0 and -0.0 are one value; a key per float keeps that.
    let e = parse_sweep(
        "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"net.impair.loss\"\nvalues = [0.0, -0.0]",
        "z.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("twice"), "{e}");
}

/// A sweep of write-lat points over one axis `key` with `values`, and `head` above it.
fn one_axis(head: &str, key: &str, values: &str) -> String {
    format!(
        "{head}\n[perf]\ntest = \"write-lat\"\nsize = 2\niters = 10\n[[axis]]\nkey = \
         \"{key}\"\nvalues = {values}\n"
    )
}

/// `--set`, `--profile` and `--seed` that set what an axis sweeps are refused alike, naming
/// the flag, the field and the axis: `--set` and `--profile` were ignored in silence (the
/// axis value won), `--seed` refused as "set twice ... by --set".
#[test]
fn flags_that_set_an_axis_field_are_refused_naming_flag_field_and_axis() {
    let cases = [
        (
            ("net.clients", "[1, 2]"),
            CliOverrides {
                set: vec![Override::new("net.clients", 3)],
                ..Default::default()
            },
            "--set net.clients=3 sets `net.clients`, which axis[0]",
        ),
        (
            ("profile", "[\"baseline\", \"csrna\"]"),
            CliOverrides {
                profile: Some("ornic".into()),
                ..Default::default()
            },
            "--profile ornic sets `profile`, which axis[0]",
        ),
        (
            ("sim.seed", "[1, 2]"),
            CliOverrides {
                seed: Some(4),
                ..Default::default()
            },
            "--seed 4 sets `sim.seed`, which axis[0]",
        ),
    ];
    for ((key, values), cli, says) in cases {
        let sw = parse_sweep(&one_axis("", key, values), "s.toml").unwrap();
        let e = format!("{:#}", sw.resolve_points(&cli).unwrap_err());
        assert!(
            e.contains(says) && e.contains("remove the flag"),
            "{key}: {e}"
        );
    }
    // A flag on another field still applies.
    let sw = parse_sweep(&one_axis("", "net.clients", "[1, 2]"), "s.toml").unwrap();
    let cli = CliOverrides {
        seed: Some(4),
        set: vec![Override::new("nic.qpc_cache_entries", 300)],
        profile: Some("baseline".into()),
    };
    assert_eq!(sw.resolve_points(&cli).unwrap().len(), 2);
}

/// The file's `seed` beside a `sim.seed` axis is named as what it is (the message said "to 3
/// by --seed and to 1 by --set", though neither flag was given).
#[test]
fn the_file_seed_beside_a_seed_axis_is_named() {
    let e = parse_sweep(&one_axis("seed = 3", "sim.seed", "[1, 2]"), "s.toml").unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("axis[0] sweeps `sim.seed`, which the file also sets (`seed = 3`)"),
        "{e}"
    );
    assert!(!e.contains("--seed") && !e.contains("--set"), "{e}");
}

/// A `[perf]` key and an axis over the config field it sets, or a `[set]` field and an
/// axis over the perf option that sets it, are refused when the file is read, naming both:
/// every point was refused as set twice "by --set", naming neither the axis nor the key.
#[test]
fn a_perf_key_and_an_axis_over_its_field_are_refused_naming_both() {
    let file = one_axis("", "qp.pmtu", "[1024, 2048]").replace("iters = 10", "mtu = 4096");
    let e = parse_sweep(&file, "s.toml").unwrap_err().to_string();
    assert!(
        e.contains(
            "axis[0] sweeps `qp.pmtu`, which the file also sets (-m/--mtu (perf.mtu) in [perf]"
        ),
        "{e}"
    );
    let file = format!(
        "{}[set]\nqp.pmtu = 1024\n",
        one_axis("", "perf.mtu", "[2048, 4096]")
    );
    let e = parse_sweep(&file, "s.toml").unwrap_err().to_string();
    assert!(
        e.contains("axis[0] sweeps `perf.mtu`, which the file also sets (`qp.pmtu` in [set]"),
        "{e}"
    );
    assert!(!e.contains("--set"), "{e}");
    // An axis over a field no [perf] key sets is free.
    let file = one_axis("", "qp.timeout", "[14, 16]").replace("iters = 10", "mtu = 4096");
    assert!(parse_sweep(&file, "s.toml").is_ok());
}

/// A number on a `profile` axis is refused as a value that must be a string, naming the
/// axis and the value (it read as the empty name: "unknown profile ``").
#[test]
fn a_profile_axis_value_must_be_a_string() {
    let e = parse_sweep(&one_axis("", "profile", "[1, 2]"), "s.toml").unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("`axis[0].values[0]` = 1: expected a profile name, a string"),
        "{e}"
    );
    assert!(!e.contains("unknown profile"), "{e}");
}

/// A misspelt cache or on-chip structure name is refused with the file, before any point
/// runs, listing the names there are (any `caches.X.misses` or `onchip_bytes.X` passed, and
/// the sweep ran every point to end with exit 1 "missing from every result").
#[test]
fn unknown_cache_and_structure_metrics_are_refused_with_the_file() {
    for (metric, says) in [
        (
            "caches.nonexistent.misses",
            "the caches qpc, mpt, mtt, clients.qpc",
        ),
        (
            "onchip_bytes.qpc_cach",
            "did you mean `onchip_bytes.qpc_cache`?",
        ),
        ("onchip_bytes.nothing", "sq_address_table"),
    ] {
        let head = format!("metrics = [\"{metric}\"]");
        let e = parse_sweep(&one_axis(&head, "net.clients", "[1, 2]"), "m.toml").unwrap_err();
        let e = e.to_string();
        assert!(e.contains(&format!("`metrics[0]` = \"{metric}\"")), "{e}");
        assert!(e.contains(says), "{metric}: {e}");
    }
    let head = "metrics = [\"caches.clients.qpc.hits\", \"onchip_bytes.sq_address_table\"]";
    assert!(parse_sweep(&one_axis(head, "net.clients", "[1, 2]"), "m.toml").is_ok());
}

/// A structure some configurations have but none of this sweep's points (the fake runner
/// reports only the QPC cache) is bad input, exit 2 naming the metric and what the points
/// do report, not exit 1 as data that did not verify.
#[test]
fn a_metric_no_point_reports_is_a_usage_error_naming_it() {
    let head = "metrics = [\"onchip_bytes.sq_address_table\"]";
    let sw = parse_sweep(&one_axis(head, "net.clients", "[1, 2]"), "m.toml").unwrap();
    let dir = tmp("absent-metric");
    let e = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts(&dir, 1),
        &mut std::io::sink(),
    )
    .unwrap_err();
    assert!(e.downcast_ref::<crate::UsageError>().is_some(), "{e:#}");
    let e = format!("{e:#}");
    assert!(
        e.contains("`onchip_bytes.sq_address_table`, which no point of this sweep reports")
            && e.contains("its points report onchip_bytes.qpc_cache"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A float axis value far from 1 reads in exponent form in the table and the CSV: 5e-324 was
/// printed as 324 digits; values near 1 keep their decimals.
#[test]
fn tiny_and_huge_axis_values_print_in_exponent_form() {
    let text = |f: f64| value_text(&toml::Value::Float(f));
    assert_eq!(text(5e-324), "5e-324");
    assert_eq!(text(1e20), "1e20");
    assert_eq!(text(0.0001), "0.0001");
    assert_eq!(text(0.5), "0.5");
    assert_eq!(text(0.0), "0");
    assert_eq!(text(3000.0), "3000");
}

/// `"none"` unsets an optional field in `[set]` and `--set`; as an axis value it was
/// refused ("expected a number"), so automatic and fixed warm-ups could not be swept side
/// by side. Now it unsets the field at its points, and `""`, the same value, beside it is a
/// duplicate.
#[test]
fn an_optional_field_axis_takes_none_as_set_does() {
    let src = one_axis("", "sim.warmup_us", "[\"none\", 100]");
    let sw = parse_sweep(&src, "s.toml").unwrap();
    let pts = sw.resolve_points(&CliOverrides::default()).unwrap();
    let warmups: Vec<Option<f64>> = pts.iter().map(|p| p.config.sim.warmup_us).collect();
    assert_eq!(warmups, [None, Some(100.0)]);
    let src = one_axis("", "sim.warmup_us", "[\"none\", \"\"]");
    let e = parse_sweep(&src, "s.toml").unwrap_err().to_string();
    assert!(e.contains("twice"), "{e}");
    // A field that is not optional still refuses it.
    let src = one_axis("", "nic.qpc_cache_entries", "[\"none\"]");
    let e = parse_sweep(&src, "s.toml").unwrap_err().to_string();
    assert!(e.contains("nic.qpc_cache_entries"), "{e}");
}
