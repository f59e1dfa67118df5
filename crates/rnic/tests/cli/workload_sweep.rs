//! `rnic sweep` over a `[workload]`: each point runs the workload's flows as `rnic run` does
//! and writes one row of flow-completion-time slowdowns; the outputs are the same bytes
//! whatever `--jobs` is and when run in shards and merged; a perf-only option on a workload
//! sweep (and the reverse) is refused naming the field.

use crate::common::rnic_in;
use std::path::{Path, PathBuf};

/// A directory of its own for a test's files, holding the flow-size distribution.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rnic-wlsweep-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    // Half the flows up to 10 KB, a fifth above 100 KB up to 2 MB: short and long flows
    // both, and small enough to simulate in a second.
    std::fs::write(
        dir.join("small.cdf"),
        "0 0\n10000 0.5\n100000 0.8\n2000000 1\n",
    )
    .expect("write the distribution");
    dir
}

/// The fabric and workload of every sweep here: a 2-leaf leaf-spine of 4 hosts, 500 µs of
/// arrivals. The buffer is shared, so its derived PFC levels sit above ECN's Kmin and DCQCN
/// sees marks (with the per-port default PFC pauses first, and net.cc would change nothing).
const FABRIC: &str = "seed = 1\n[set]\nnet.topology = \"leaf_spine\"\nnet.fabric.leaves = 2\n\
    net.fabric.spines = 2\nnet.fabric.hosts_per_leaf = 2\nnet.clients = 3\nnet.pfc = true\n\
    net.ecn.enabled = true\nnet.switch_buffer = \"shared\"\n";

const WORKLOAD: &str = "[workload]\ncdf = \"small.cdf\"\nduration_us = 500\n";

/// The sweep: net.cc (series) by workload.load (x), four points.
fn write_sweep(dir: &Path) {
    let text = format!(
        "name = \"wl\"\nx = \"workload.load\"\nseries = \"net.cc\"\n{FABRIC}{WORKLOAD}\
         [[axis]]\nkey = \"net.cc\"\nvalues = [\"none\", \"dcqcn\"]\n\
         [[axis]]\nkey = \"workload.load\"\nvalues = [0.3, 0.6]\n"
    );
    std::fs::write(dir.join("wl.toml"), text).expect("write the sweep");
}

fn ok(args: &[&str], dir: &Path) -> String {
    let (code, out, err) = rnic_in(args, dir);
    assert_eq!(code, 0, "rnic {args:?}: {out}{err}");
    out
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One row per point with the slowdown columns; every flow of every point completed with
/// its bytes verified; one plot per default metric. A point's short-flow p95 is the one
/// `rnic run` gives for the same scenario (the same path runs it); the run once more with
/// two workers, and in two shards merged, writes the same bytes.
#[test]
fn a_workload_sweep_writes_slowdowns_per_point_deterministically() {
    let dir = scratch("rows");
    write_sweep(&dir);
    ok(&["sweep", "wl.toml", "--out", "one", "--jobs", "1"], &dir);
    let csv = String::from_utf8(read(&dir.join("one/wl.csv"))).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 4, "{csv}");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name}: {csv}"))
    };
    for row in &rows {
        assert_eq!(row[col("status")], "ok", "{csv}");
        assert_eq!(
            row[col("flows_completed")],
            row[col("flows_started")],
            "{csv}"
        );
        assert!(
            row[col("flows_started")].parse::<u64>().unwrap() > 0,
            "{csv}"
        );
        let short = row[col("slowdown.short.p95")].parse::<f64>().unwrap();
        assert!(
            short >= 1.0,
            "a slowdown below 1 beat the idle fabric: {csv}"
        );
    }
    assert!(!header.contains(&"msg_rate_mops"), "perf columns: {csv}");
    // The series axis reaches the run: at load 0.6 DCQCN reacts to marks (rows are none
    // 0.3, none 0.6, dcqcn 0.3, dcqcn 0.6).
    assert_ne!(
        rows[1][col("events")],
        rows[3][col("events")],
        "net.cc changed nothing: {csv}"
    );
    for metric in ["slowdown.short.p95", "slowdown.long.p95"] {
        for ext in ["png", "svg"] {
            assert!(
                dir.join(format!("one/wl-{}.{ext}", metric.replace('.', "_")))
                    .is_file(),
                "{metric}"
            );
        }
    }

    // The last point (dcqcn at 0.6) through `rnic run`.
    let scenario = format!(
        "name = \"wl\"\n{}net.cc = \"dcqcn\"\n{WORKLOAD}load = 0.6\n",
        FABRIC
    );
    std::fs::write(dir.join("point.toml"), scenario).unwrap();
    ok(&["run", "point.toml", "--json", "point.json"], &dir);
    let run: serde_json::Value = serde_json::from_slice(&read(&dir.join("point.json"))).unwrap();
    let mut short: Vec<f64> = run["workload"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["completed"] == true && f["size_bytes"].as_u64().unwrap() <= 100_000)
        .map(|f| f["slowdown"].as_f64().unwrap())
        .collect();
    short.sort_by(f64::total_cmp);
    let rank = ((0.95 * short.len() as f64).ceil() as usize).clamp(1, short.len());
    let want = short[rank - 1];
    let got: f64 = rows[3][col("slowdown.short.p95")].parse().unwrap();
    assert_eq!(got, want, "sweep point against rnic run: {csv}");

    ok(&["sweep", "wl.toml", "--out", "two", "--jobs", "2"], &dir);
    for shard in ["1/2", "2/2"] {
        ok(
            &["sweep", "wl.toml", "--shard", shard, "--out", "parts"],
            &dir,
        );
    }
    ok(&["sweep", "merge", "parts", "--out", "merged"], &dir);
    for f in ["wl.csv", "wl.json", "wl-slowdown_short_p95.svg"] {
        let one = read(&dir.join("one").join(f));
        assert_eq!(one, read(&dir.join("two").join(f)), "{f}: --jobs 2");
        assert_eq!(one, read(&dir.join("merged").join(f)), "{f}: merged shards");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Perf-only settings on a workload sweep, workload axes on a perf sweep, perf metrics and
/// bad workload values: exit 2 naming the field, before any point runs.
#[test]
fn bad_combinations_are_refused_naming_the_field() {
    let dir = scratch("bad");
    let axis = |key: &str, values: &str| format!("[[axis]]\nkey = \"{key}\"\nvalues = {values}\n");
    let perf = "[perf]\ntest = \"write-bw\"\n";
    for (k, (text, want)) in [
        (
            format!(
                "{FABRIC}{WORKLOAD}load = 0.3\n{}",
                axis("perf.qp", "[1, 2]")
            ),
            "`perf.qp` is a [perf] option, but this sweep runs a [workload]",
        ),
        (
            format!(
                "{FABRIC}{perf}{WORKLOAD}load = 0.3\n{}",
                axis("net.cc", "[\"none\"]")
            ),
            "`perf.test`: the sweep has a [workload] table",
        ),
        (
            format!("{FABRIC}{perf}{}", axis("workload.load", "[0.3]")),
            "`workload.load` varies the workload, but the sweep has no [workload] table",
        ),
        (
            format!(
                "metrics = [\"msg_rate_mops\"]\n{FABRIC}{WORKLOAD}{}",
                axis("workload.load", "[0.3]")
            ),
            "`metrics[0]` = \"msg_rate_mops\" is not a metric of a workload sweep",
        ),
        (
            format!("{FABRIC}{WORKLOAD}{}", axis("workload.load", "[0.3, 1.5]")),
            "workload.load",
        ),
        (
            format!(
                "{FABRIC}{WORKLOAD}{}",
                axis("net.cc", "[\"none\", \"dcqcn\"]")
            ),
            "`workload.load` is missing",
        ),
        (
            format!(
                "{FABRIC}{}{}",
                WORKLOAD.replace("duration_us = 500", "duration_us = 0"),
                axis("workload.load", "[0.3]")
            ),
            "caused by: `workload.duration_us` = 0",
        ),
        (
            format!("{FABRIC}{WORKLOAD}{}", axis("workload.matrix", "[1]")),
            "`workload.matrix` is a table",
        ),
        (
            format!(
                "{FABRIC}{WORKLOAD}load = 0.3\n{}",
                axis("workload.load", "[0.5]")
            ),
            "`workload.load` in [workload]",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let file = format!("bad{k}.toml");
        std::fs::write(dir.join(&file), &text).unwrap();
        let (code, out, err) = rnic_in(&["sweep", &file, "--out", "o"], &dir);
        assert_eq!(code, 2, "{text}: {out}{err}");
        assert!(err.contains(want), "{text}: {err}");
        assert!(
            !dir.join("o").exists(),
            "{text}: a refused sweep wrote files"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped example (`scenarios/fabrics/sweep-websearch-load.toml`, run from the
/// repository as the book shows): every point resolves before any runs, and its first
/// point, run alone as a shard, completes every flow.
#[test]
fn the_shipped_workload_sweep_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = scratch("shipped").join("out");
    let out_arg = out.display().to_string();
    let file = "scenarios/fabrics/sweep-websearch-load.toml";
    ok(
        &[
            "sweep", file, "--shard", "1/6", "--out", &out_arg, "--quiet",
        ],
        &root,
    );
    let csv = String::from_utf8(read(&out.join("websearch-load.shard-1-of-6.csv"))).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(row[col("status")], "ok", "{csv}");
    assert_eq!(
        row[col("flows_completed")],
        row[col("flows_started")],
        "{csv}"
    );
}
