//! The claim evaluators on synthetic curves: each has a passing and a failing case, so a
//! verdict can fail. csrna-memory is computed, so it runs for real.

use rnic::repro::csrna::{
    eval_fcfs, eval_latency, eval_memory, eval_ooocap, eval_peak, eval_placement, formula2_claim,
    LatencyCurves, PlacementPoint,
};
use rnic::repro::curve::Curve;
use rnic::repro::{self, Claim};

const QPS: [f64; 8] = [8.0, 64.0, 300.0, 600.0, 3000.0, 6400.0, 12800.0, 51200.0];

fn curve(f: impl Fn(f64) -> f64) -> Curve {
    QPS.iter().map(|&x| (x, f(x))).collect()
}

fn all_pass(c: &[Claim]) -> bool {
    !c.is_empty() && c.iter().all(|c| c.pass)
}

fn verdict(c: &[Claim], id: &str) -> bool {
    c.iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no claim {id} in {c:?}"))
        .pass
}

#[test]
fn peak_pass_and_fail() {
    let flat = curve(|x| 66.0 - x * 1e-5);
    assert!(
        all_pass(&eval_peak(&flat, &flat)),
        "{:?}",
        eval_peak(&flat, &flat)
    );
    // A cliff past the cache fails flatness; a low plateau fails the level.
    let cliff = curve(|x| if x > 300.0 { 20.0 } else { 66.0 });
    let low = curve(|_| 40.0);
    let c = eval_peak(&cliff, &low);
    assert!(!verdict(&c, "write-flat") && verdict(&c, "write-peak"));
    assert!(verdict(&c, "read-flat") && !verdict(&c, "read-peak"));
    // Stopping short of 51,200 QPs is not a pass.
    let short: Curve = flat.iter().copied().filter(|p| p.0 < 51200.0).collect();
    assert!(!verdict(&eval_peak(&short, &flat), "write-flat"));
}

#[test]
fn fcfs_pass_and_fail() {
    let cliff = curve(|x| if x > 300.0 { 8.0 } else { 57.0 });
    assert!(all_pass(&eval_fcfs(&cliff, &cliff)));
    let flat = curve(|_| 57.0);
    let c = eval_fcfs(&flat, &cliff);
    assert!(verdict(&c, "write-holds") && !verdict(&c, "write-cliff"));
    let early = curve(|x| if x >= 300.0 { 8.0 } else { 57.0 });
    assert!(!verdict(&eval_fcfs(&early, &cliff), "write-holds"));
}

fn paper_latency() -> LatencyCurves {
    LatencyCurves {
        fcfs: curve(|x| if x > 3000.0 { 12.0 } else { 3.4 }),
        nb: curve(|x| {
            if x > 300.0 {
                3.4 + 0.55 + (x / 51200.0)
            } else {
                3.4
            }
        }),
        lh: curve(|x| {
            if x > 3000.0 {
                3.4 + 0.5 * x / 51200.0
            } else {
                3.4
            }
        }),
        lh_pingpong: curve(|x| if x > 3000.0 { 3.9 } else { 3.6 }),
    }
}

#[test]
fn latency_pass_and_fail() {
    let ok = paper_latency();
    let c = eval_latency("write", &ok, true);
    assert!(all_pass(&c), "{c:?}");
    assert_eq!(c.len(), 5);
    assert_eq!(eval_latency("read", &ok, false).len(), 4);
    // No contention: FCFS adds only one round trip; LH as slow as NB; level off.
    let bad = LatencyCurves {
        fcfs: curve(|x| if x > 3000.0 { 4.0 } else { 3.5 }),
        nb: curve(|x| if x > 300.0 { 5.0 } else { 3.5 }),
        lh: curve(|x| if x > 300.0 { 5.2 } else { 3.5 }),
        lh_pingpong: curve(|_| 5.2),
    };
    let c = eval_latency("write", &bad, true);
    for id in [
        "write-fcfs-steep",
        "write-nb-rtt",
        "write-lh-flat",
        "write-lh-below",
        "write-lh-level",
    ] {
        assert!(!verdict(&c, id), "{id}: {c:?}");
    }
    // Without a --procs latency point past 50k QPs the level cannot pass (perftest's
    // half round trip does not stand in for it).
    let mut no_level = paper_latency();
    no_level.lh.retain(|p| p.0 < 50_000.0);
    assert!(!verdict(
        &eval_latency("write", &no_level, true),
        "write-lh-level"
    ));
}

#[test]
fn ooocap_pass_and_fail() {
    let peak = 66.0;
    let good: Vec<(u64, Curve)> = [1u64, 2, 4, 8, 16]
        .iter()
        .map(|&k| {
            let far = peak * (k as f64 / 16.0).powf(0.3);
            (k, curve(move |x| if x > 300.0 { far } else { peak }))
        })
        .collect();
    assert!(all_pass(&eval_ooocap(&good)), "{:?}", eval_ooocap(&good));
    // Non-monotone, and cap 16 far below the peak.
    let bad: Vec<(u64, Curve)> = [(1u64, 30.0), (2, 40.0), (4, 35.0), (8, 36.0), (16, 37.0)]
        .iter()
        .map(|&(k, far)| (k, curve(move |x| if x > 300.0 { far } else { peak })))
        .collect();
    let c = eval_ooocap(&bad);
    assert!(
        !verdict(&c, "monotone") && !verdict(&c, "cap16-peak"),
        "{c:?}"
    );
    assert!(formula2_claim(&[1, 2, 4, 8, 16]).pass);
    assert!(!formula2_claim(&[]).pass);
}

fn points(v: &[(u64, f64, f64)]) -> Vec<PlacementPoint> {
    v.iter()
        .map(|&(size, ratio, host_pcie_rd_util)| PlacementPoint {
            size,
            ratio,
            host_pcie_rd_util,
        })
        .collect()
}

#[test]
fn placement_pass_and_fail() {
    let good = points(&[
        (16, 1.0, 0.5),
        (64, 1.01, 0.9),
        (256, 1.02, 0.99),
        (1024, 1.10, 0.96),
        (4096, 1.0, 0.9),
    ]);
    assert!(all_pass(&eval_placement(&good, 12800.0)));
    // Everything has a big effect, growing with size: no claim holds.
    let bad = points(&[
        (16, 1.5, 1.0),
        (64, 1.6, 1.0),
        (256, 1.7, 1.0),
        (1024, 1.8, 1.0),
        (4096, 1.9, 1.0),
    ]);
    let c = eval_placement(&bad, 12800.0);
    assert!(c.iter().all(|c| !c.pass), "{c:?}");
    // A mid-size peak too small to be an effect, or where PCIe was not the bottleneck.
    let weak = points(&[(64, 1.0, 0.9), (1024, 1.04, 0.96), (4096, 1.0, 0.9)]);
    assert!(!verdict(&eval_placement(&weak, 12800.0), "mid"));
    let not_pcie = points(&[(64, 1.0, 0.9), (1024, 1.3, 0.6), (4096, 1.0, 0.9)]);
    assert!(!verdict(&eval_placement(&not_pcie, 12800.0), "mid"));
    assert!(eval_placement(&[], 0.0).iter().all(|c| !c.pass));
}

#[test]
fn memory_runs_for_real_and_passes() {
    let r = repro::select("csrna-memory").unwrap()[0];
    let dir = std::env::temp_dir().join(format!("rnic-repro-memory-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = repro::ReproOptions {
        jobs: 1,
        out_dir: dir.clone(),
        progress: false,
        quiet: false,
    };
    let o = repro::run(r, &rnic::perf::ModelRunner, &opts, &mut std::io::sink()).unwrap();
    assert!(o.passed(), "{:?}", o.evaluation.claims);
    for f in [
        "csrna-memory.csv",
        "memory.png",
        "memory.svg",
        "claims.csv",
        "section.md",
    ] {
        assert!(dir.join("csrna-memory").join(f).exists(), "{f}");
    }
    let notes = &o.evaluation.notes;
    for row in ["eRNIC", "SRNIC", "ConnectX-5", "csRNA", "SQ address table"] {
        assert!(notes.contains(row), "{notes}");
    }
    // A config far from the paper's fails the 1.4 MB claim.
    let big = rnic::model::nic::mech::csrna::onchip::CsrnaMemoryConfig {
        qps: 1 << 20,
        ..Default::default()
    };
    let ev = eval_memory(&big).unwrap();
    assert!(!ev.claims[0].pass);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn printed_table_has_a_row_per_claim() {
    let ev = eval_memory(&Default::default()).unwrap();
    let t = repro::claims_table("csrna-memory", &ev.claims);
    assert_eq!(t.lines().count(), ev.claims.len() + 1);
    assert!(t.starts_with("claim"));
    assert!(t.lines().skip(1).all(|l| l.ends_with("PASS")), "{t}");
}
