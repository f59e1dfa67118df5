//! Shards and merge with the fake runner: points that fail (model errors, reasons with
//! commas) and an empty shard merge to the bytes of the whole sweep, with its exit status.

use super::*;
use crate::testing::FakeRunner;
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-shard-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn opts(dir: &Path, shard: Option<Shard>) -> SweepOptions {
    SweepOptions {
        jobs: 2,
        out_dir: dir.to_path_buf(),
        progress: false,
        quiet: false,
        allow_large: false,
        shard,
    }
}

fn runner() -> FakeRunner {
    FakeRunner {
        fail_on_size: Some(128),
        incomplete_size: Some(256),
        ..Default::default()
    }
}

#[test]
fn failed_points_and_an_empty_shard_merge_to_the_whole_sweep() {
    let sw = parse_sweep(
        "metrics = [\"msg_rate_mops\"]\n[perf]\ntest = \"write-bw\"\niters = 5\n\
         [[axis]]\nkey = \"perf.size\"\nvalues = [64, 128, 256]",
        "f.toml",
    )
    .unwrap();
    let root = tmp("failed");
    let whole = run_sweep(
        &sw,
        &CliOverrides::default(),
        &runner(),
        &opts(&root.join("whole"), None),
        &mut std::io::sink(),
    )
    .unwrap();
    // Four shards of three points: shard 4 has none and still writes its (empty) files.
    let parts: Vec<PathBuf> = (1..=4).map(|i| root.join(format!("s{i}"))).collect();
    for (i, dir) in parts.iter().enumerate() {
        let s = Shard {
            index: i + 1,
            count: 4,
        };
        let o = run_sweep(
            &sw,
            &CliOverrides::default(),
            &runner(),
            &opts(dir, Some(s)),
            &mut std::io::sink(),
        )
        .unwrap();
        assert_eq!(o.points, s.points_of(3));
        assert!(o.plots.is_empty());
    }
    let (_, merged) = merge(&parts, &root.join("merged"), &mut std::io::sink()).unwrap();
    for f in [
        "f.csv",
        "f.json",
        "f-msg_rate_mops.png",
        "f-msg_rate_mops.svg",
    ] {
        let a = std::fs::read(root.join("whole").join(f)).unwrap();
        let b = std::fs::read(root.join("merged").join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
    assert_eq!(merged.failed, whole.failed);
    assert_eq!(
        merged.failure().map(|f| (f.status, f.reason)),
        whole.failure().map(|f| (f.status, f.reason))
    );
    // The empty shard's file is not needed: its points are none.
    let (_, again) = merge(&parts[..3], &root.join("merged3"), &mut std::io::sink()).unwrap();
    assert_eq!(again.points, 3);
    let _ = std::fs::remove_dir_all(&root);
}
