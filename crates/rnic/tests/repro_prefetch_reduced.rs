//! Reduced reproductions of the resource-prefetching paper ("Toward Scalable RDMA Through
//! Resource Prefetching"), so that a change to a claim's outcome turns the suite red without
//! running the full `rnic repro prefetch`.
//!
//! Each test takes an experiment's committed sweep files, keeps the points its claims read,
//! runs them through the real model ([`ModelRunner`]) with the same runner code as
//! `rnic repro`, and checks the results with the experiment's own evaluator: same curves,
//! same claims, same thresholds. Every point must end ok (bytes verified).
//!
//! Not every claim of this paper passes in rnic (the README's section on the paper says
//! why: at 4,096 MRs the chain of four PCIe reads outlasts the window on a busy PCIe; at
//! light load the receiver's context miss, which no sender-side prefetch can hide, is more
//! than half the rise past the cache). Each
//! test states the verdict every claim has today, so a change that breaks a
//! passing claim — or makes a failing one pass — turns the suite red and the README's
//! claim table must follow.

use rnic::perf::ModelRunner;
use rnic::report::RunStatus;
use rnic::repro::{self, claims_table, ReproOptions};
use rnic::sweep::Sweep;
use toml::Value;

/// Replaces the values of the axis `key`.
fn axis(sw: &mut Sweep, key: &str, values: &[i64]) {
    let a = sw
        .axes
        .iter_mut()
        .find(|a| a.key == key)
        .unwrap_or_else(|| panic!("sweep {} has no axis {key}", sw.name));
    a.values = values.iter().map(|&v| Value::Integer(v)).collect();
}

/// Runs experiment `id` on its committed sweeps, each changed by `reduce`, and asserts that
/// every point ended ok and that the claims' verdicts are `want` (claim id, passes).
fn reproduce(id: &str, reduce: impl Fn(&mut Sweep), want: &[(&str, bool)]) {
    let e = repro::select(id).unwrap()[0];
    let mut sweeps = repro::parse(e).unwrap();
    sweeps.iter_mut().for_each(&reduce);
    let out_dir = std::env::temp_dir().join(format!("rnic-reduced-{}-{id}", std::process::id()));
    let opts = ReproOptions {
        jobs: 2,
        out_dir: out_dir.clone(),
        progress: false,
        quiet: false,
    };
    let mut log = Vec::new();
    let o = repro::run_sweeps(e, sweeps, &ModelRunner, &opts, &mut log).unwrap();
    let table = claims_table(id, &o.evaluation.claims);
    eprintln!("{table}");
    assert_eq!(
        o.status,
        RunStatus::Ok,
        "{id}: a point did not end ok\n{table}"
    );
    let got: Vec<(&str, bool)> = o
        .evaluation
        .claims
        .iter()
        .map(|c| (c.id.as_str(), c.pass))
        .collect();
    assert_eq!(got, want, "{table}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn scale_up_to_16384_qps() {
    // The claim reads the peak (reached from a few hundred QPs) and 16,384 QPs.
    reproduce(
        "prefetch-scale",
        |sw| axis(sw, "perf.qp", &[256, 16384]),
        &[("flat", true)],
    );
}

#[test]
fn window_sweep() {
    // Window 0, the rise, the model's knee (6), and the top of the paper's axis.
    reproduce(
        "prefetch-window",
        |sw| axis(sw, "nic.prefetch_window", &[0, 2, 6, 16]),
        // window0-low misses its two-sided reading (35-65 %): 19.9 % of the peak.
        &[("window0-low", false), ("rises", true), ("formula", true)],
    );
}

#[test]
fn memory_regions() {
    // One MR, the caches' 256, and 4,096.
    reproduce(
        "prefetch-memory",
        |sw| axis(sw, "perf.mrs", &[1, 256, 4096]),
        // csrna-falls misses its two-sided reading (45-70 %): 12 % of its rate at 256 MRs.
        &[("csrna-falls", false), ("prefetch-flat", false)],
    );
}

#[test]
fn light_load_latency() {
    // 4 and 64 QPs fit the 100-entry cache; 128 and 256 do not.
    reproduce(
        "prefetch-light",
        |sw| {
            axis(sw, "perf.qp", &[4, 64, 128, 256]);
            sw.base.perf.insert("iters".into(), Value::Integer(1000));
        },
        // sw-removes misses: the software trigger hides 0.36 of the sender's 0.52 us miss,
        // not the receiver's (it passed while the scheduler trigger read the WQEs before
        // the context that holds their address had arrived).
        &[("flat", true), ("rise", true), ("sw-removes", false)],
    );
}
