//! `rnic sweep FILE --shard I/N` and `rnic sweep merge`, through the binary and the model: a
//! sweep run in shards and merged writes exactly the bytes of the whole sweep; bad `--shard`
//! values and shard files that do not make up one sweep are usage errors (exit 2) that say
//! what to do, and a refused merge writes nothing.

mod common;
use common::rnic_in as rnic;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs rnic and insists on exit status 0.
fn ok(args: &[&str], cwd: &Path) -> String {
    let (code, out, err) = rnic(args, cwd);
    assert_eq!(code, 0, "rnic {args:?}: {err}");
    out
}

/// Runs rnic, insists on a usage error (exit 2, no panic) and returns stderr.
fn usage(args: &[&str], cwd: &Path) -> String {
    let (code, _, err) = rnic(args, cwd);
    assert_eq!(code, 2, "rnic {args:?}: {err}");
    assert!(!err.contains("panicked"), "rnic {args:?}: {err}");
    err
}

/// A fresh scratch directory holding `tiny.toml`.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-shards-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    std::fs::write(d.join("tiny.toml"), TINY).expect("write tiny.toml");
    d
}

/// Seven points on the model, a few milliseconds each; seven so that no shard count used
/// here divides it evenly.
const TINY: &str = r#"
name = "tiny"
title = "tiny sharded sweep"
x = "perf.qp"
series = "nic.qpc_cache_entries"
x_log = true
metrics = ["msg_rate_mops", "latency_us.avg"]
[perf]
test = "write-bw"
size = 64
iters = 40
[[axis]]
key = "nic.qpc_cache_entries"
values = [4]
[[axis]]
key = "perf.qp"
values = [1, 2, 3, 5, 8, 13, 21]
"#;

/// The file names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn shards_merge_to_the_bytes_of_the_whole_sweep() {
    let d = scratch("same");
    ok(&["sweep", "tiny.toml", "--out", "whole"], &d);
    let whole = names(&d.join("whole"));
    assert_eq!(
        whole,
        [
            "tiny-latency_us_avg.png",
            "tiny-latency_us_avg.svg",
            "tiny-msg_rate_mops.png",
            "tiny-msg_rate_mops.svg",
            "tiny.csv",
            "tiny.json"
        ]
    );
    // Two shards in two directories; three shards with two of them in one directory.
    let runs: [(&str, &[(&str, &str)]); 2] = [
        ("2", &[("1/2", "a"), ("2/2", "b")]),
        ("3", &[("1/3", "c"), ("2/3", "c"), ("3/3", "d")]),
    ];
    for (n, shards) in runs {
        let mut dirs: Vec<&str> = Vec::new();
        for (shard, dir) in shards {
            ok(&["sweep", "tiny.toml", "--shard", shard, "--out", dir], &d);
            if !dirs.contains(dir) {
                dirs.push(dir);
            }
        }
        let out = format!("merged{n}");
        let mut args = vec!["sweep", "merge"];
        args.extend(&dirs);
        args.extend(["--out", &out]);
        let table = ok(&args, &d);
        assert!(table.contains("msg_rate_mops"), "{table}");
        assert_eq!(names(&d.join(&out)), whole, "{n} shards");
        for f in &whole {
            let a = std::fs::read(d.join("whole").join(f)).expect("whole");
            let b = std::fs::read(d.join(&out).join(f)).expect("merged");
            assert!(a == b, "{f} from {n} shards differs from the whole sweep's");
        }
    }
    // A shard holds the grid points I, I+N, ... (1-based), with no plots, and is the same
    // from run to run.
    let shard = std::fs::read_to_string(d.join("c/tiny.shard-2-of-3.csv")).expect("shard csv");
    let points: Vec<&str> = shard
        .lines()
        .map(|l| l.split(',').next().unwrap_or(""))
        .collect();
    assert_eq!(points, ["point", "2", "5"]);
    assert_eq!(
        names(&d.join("c")),
        [
            "tiny.shard-1-of-3.csv",
            "tiny.shard-1-of-3.json",
            "tiny.shard-2-of-3.csv",
            "tiny.shard-2-of-3.json"
        ]
    );
    ok(
        &["sweep", "tiny.toml", "--shard", "2/3", "--out", "again"],
        &d,
    );
    for f in ["tiny.shard-2-of-3.csv", "tiny.shard-2-of-3.json"] {
        let a = std::fs::read(d.join("c").join(f)).expect("first");
        let b = std::fs::read(d.join("again").join(f)).expect("second");
        assert!(a == b, "{f} differs between two runs");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A shard's CSV has the columns its own points report: with an RC and a UD point in
/// different shards, the RC shard has no `unreliable.*` columns, which the whole sweep's
/// CSV (and the merge's) has. The chapter said a shard's CSV had "the sweep's columns".
#[test]
fn a_shards_csv_has_the_columns_of_its_own_points() {
    let d = scratch("columns");
    std::fs::write(
        d.join("mix.toml"),
        "name = \"mix\"\n[perf]\ntest = \"send-bw\"\nsize = 1024\niters = 20\n\
         [[axis]]\nkey = \"qp.transport\"\nvalues = [\"rc\", \"ud\"]\n",
    )
    .expect("write mix.toml");
    ok(&["sweep", "mix.toml", "--out", "whole", "--quiet"], &d);
    ok(
        &[
            "sweep", "mix.toml", "--shard", "1/2", "--out", "p1", "--quiet",
        ],
        &d,
    );
    ok(
        &[
            "sweep", "mix.toml", "--shard", "2/2", "--out", "p2", "--quiet",
        ],
        &d,
    );
    let header = |file: &str| -> Vec<String> {
        let csv = std::fs::read_to_string(d.join(file)).expect("csv");
        let line = csv.lines().next().expect("header").to_string();
        line.split(',').map(str::to_string).collect()
    };
    let whole = header("whole/mix.csv");
    let (rc, ud) = (
        header("p1/mix.shard-1-of-2.csv"),
        header("p2/mix.shard-2-of-2.csv"),
    );
    let lost = "unreliable.messages_lost".to_string();
    assert!(whole.contains(&lost) && ud.contains(&lost), "{whole:?}");
    assert!(!rc.contains(&lost), "{rc:?}");
    assert_eq!(ud[1..], whole[..], "the UD shard reports every column");
    let chapter = std::fs::read_to_string(common::repo_root().join("docs/book/src/sweeps.md"))
        .expect("chapter")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        chapter.contains("then the sweep's columns that its own points report"),
        "sweeps.md no longer says which columns a shard's CSV has"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_shard_values_name_the_flag_and_the_fix() {
    let d = scratch("bad");
    for (value, says) in [
        ("0/2", "use --shard 1/2 to --shard 2/2"),
        ("3/2", "there is no shard 3 of 2"),
        ("x", "`x` is not I/N"),
        ("1/x", "`x` is not a number of shards"),
        ("1/0", "the number of shards must be from 1"),
        ("2", "e.g. --shard 2/8"),
    ] {
        let err = usage(&["sweep", "tiny.toml", "--shard", value, "--out", "o"], &d);
        assert!(err.contains("--shard"), "{value}: {err}");
        assert!(err.contains(says), "{value}: {err}");
    }
    assert!(!d.join("o").exists(), "a refused shard must not run");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn merge_refuses_parts_that_are_not_one_sweep() {
    let d = scratch("refuse");
    for (args, dir) in [
        (&["--shard", "1/2"][..], "s1"),
        (&["--shard", "2/2"], "s2"),
        (&["--shard", "2/3"], "n3"),
        (&["--shard", "2/2", "--seed", "7"], "seed"),
    ] {
        let mut a = vec!["sweep", "tiny.toml", "--out", dir];
        a.extend(args);
        ok(&a, &d);
    }
    // Another sweep file under the same name.
    std::fs::write(d.join("other.toml"), TINY.replace("21]", "34]")).expect("other.toml");
    ok(
        &["sweep", "other.toml", "--shard", "2/2", "--out", "other"],
        &d,
    );
    // The same shard twice; a shard file claiming a point of another shard.
    std::fs::create_dir_all(d.join("copy")).expect("copy dir");
    std::fs::copy(
        d.join("s1/tiny.shard-1-of-2.json"),
        d.join("copy/tiny.shard-1-of-2.json"),
    )
    .expect("copy shard");
    std::fs::create_dir_all(d.join("stolen")).expect("stolen dir");
    let s1 = std::fs::read_to_string(d.join("s1/tiny.shard-1-of-2.json")).expect("s1");
    assert!(s1.contains("\"position\": 3,"), "{s1}");
    std::fs::write(
        d.join("stolen/tiny.shard-1-of-2.json"),
        s1.replacen("\"position\": 3,", "\"position\": 2,", 1),
    )
    .expect("stolen shard");
    // A renamed file and a file that is not a shard's.
    std::fs::create_dir_all(d.join("renamed")).expect("renamed dir");
    std::fs::write(d.join("renamed/tiny.shard-2-of-2.json"), &s1).expect("renamed");
    std::fs::create_dir_all(d.join("junk")).expect("junk dir");
    std::fs::write(d.join("junk/tiny.shard-2-of-2.json"), "{}").expect("junk");
    std::fs::create_dir_all(d.join("empty")).expect("empty dir");

    for (dirs, says) in [
        (
            &["s1"][..],
            "3 of 7 points are missing (2, 4, 6); shard 2 of 2",
        ),
        (&["s1"], "run `rnic sweep tiny.toml --shard 2/2`"),
        (&["s1", "n3"], "the number of shards N of --shard I/N"),
        (&["s1", "seed"], "the grid's points"),
        (&["s1", "other"], "the sweep file's text"),
        (
            &["s1", "copy", "s2"],
            "shard 1 of 2 of sweep `tiny` is in more than one file",
        ),
        (
            &["stolen", "s2"],
            "point 2 belongs to shard 2 of 2, not to shard 1 of 2",
        ),
        (&["s1", "renamed"], "but its name says shard 2 of 2"),
        (&["s1", "junk"], "is not a shard file"),
        (&["empty"], "no shard files in empty"),
        (&["nowhere"], "cannot read the shard directory nowhere"),
    ] {
        let mut a = vec!["sweep", "merge"];
        a.extend(dirs);
        a.extend(["--out", "merged"]);
        let err = usage(&a, &d);
        assert!(err.contains(says), "{dirs:?}: {err}");
        assert!(
            !d.join("merged").exists(),
            "{dirs:?}: a refused merge wrote"
        );
    }
    // The same directory twice is read once.
    ok(
        &["sweep", "merge", "s1", "s1", "./s2", "--out", "merged"],
        &d,
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `scripts/slurm-sweep.sh` as a Slurm array task runs it: the task index and count become
/// `--shard I/N`, the shards land in one directory, and they merge; outside Slurm it refuses.
#[test]
fn the_slurm_array_script_runs_one_shard_per_task() {
    let d = scratch("slurm");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-sweep.sh");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_rnic"))
        .parent()
        .expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for task in ["1", "2"] {
        let out = Command::new("bash")
            .arg(&script)
            .args(["tiny.toml", "shared", "--quiet"])
            .env("PATH", &path)
            .env("SLURM_ARRAY_TASK_ID", task)
            .env("SLURM_ARRAY_TASK_COUNT", "2")
            .current_dir(&d)
            .output()
            .expect("run the slurm script");
        assert!(
            out.status.success(),
            "task {task}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ok(&["sweep", "tiny.toml", "--out", "whole"], &d);
    ok(&["sweep", "merge", "shared", "--out", "merged"], &d);
    for f in ["tiny.csv", "tiny.json"] {
        let whole = std::fs::read(d.join("whole").join(f)).expect("whole");
        let merged = std::fs::read(d.join("merged").join(f)).expect("merged");
        assert!(whole == merged, "{f} differs after the Slurm-style shards");
    }
    let outside = Command::new("bash")
        .arg(&script)
        .args(["tiny.toml", "shared"])
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_COUNT")
        .current_dir(&d)
        .output()
        .expect("run the slurm script");
    assert!(!outside.status.success());
    assert!(String::from_utf8_lossy(&outside.stderr).contains("sbatch --array"));
}

/// Writes both shards of `tiny.toml` into `dir` with `from` replaced by `to` in their JSON
/// files, as someone editing them by hand would.
fn edited_shards(d: &Path, dir: &str, from: &str, to: &str) {
    std::fs::create_dir_all(d.join(dir)).expect("edited dir");
    for i in 1..=2 {
        let name = format!("tiny.shard-{i}-of-2.json");
        let text = std::fs::read_to_string(d.join(format!("s{i}")).join(&name)).expect("shard");
        assert!(text.contains(from), "{from} not in {name}");
        std::fs::write(d.join(dir).join(&name), text.replace(from, to)).expect("edited shard");
    }
}

/// Shard files edited consistently by hand: a grid larger than any sweep may have is refused
/// naming the file and the field (the merge allocated a slot per claimed point and aborted
/// asking for 24 TB), and edited axis keys are named as what differs (the message compared
/// two equal descriptions, "sweep `tiny` of 7 points, but its shards say `tiny` of 7").
#[test]
fn merge_names_the_field_edited_in_the_shard_files() {
    let d = scratch("edited");
    ok(&["sweep", "tiny.toml", "--shard", "1/2", "--out", "s1"], &d);
    ok(&["sweep", "tiny.toml", "--shard", "2/2", "--out", "s2"], &d);
    edited_shards(
        &d,
        "huge",
        "\"grid_points\": 7,",
        "\"grid_points\": 1000000000000,",
    );
    edited_shards(
        &d,
        "axes",
        "\"nic.qpc_cache_entries\",",
        "\"nic.qpc_manager\",",
    );
    for (dir, says) in [
        (
            "huge",
            "`shard.grid_points` is 1000000000000, but a sweep has at most 1000000",
        ),
        ("huge", "tiny.shard-1-of-2.json"),
        (
            "axes",
            "the axes are [nic.qpc_cache_entries, perf.qp], axes/tiny.shard-1-of-2.json says \
             [nic.qpc_manager, perf.qp] (`axes`)",
        ),
    ] {
        let err = usage(&["sweep", "merge", dir, "--out", "merged"], &d);
        assert!(err.contains(says), "{dir}: {err}");
        assert!(!d.join("merged").exists(), "{dir}: a refused merge wrote");
    }
    let _ = std::fs::remove_dir_all(&d);
}
