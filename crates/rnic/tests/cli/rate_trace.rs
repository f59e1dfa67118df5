//! The rate trace (`net.trace_interval_us` with `net.cc = "dcqcn"`) through the CLI: the
//! two-flow DCQCN run writes FILE-rates.csv beside its JSON, each QP's DCQCN rate sampled at
//! the queue trace's instants, within DCQCN's bounds; the trace adds no event.

use crate::common::{json_stat, rnic_in, DCQCN_TWO_FLOWS};
use std::path::{Path, PathBuf};

const LINE_GBPS: f64 = 100.0;
const MIN_RATE_MBPS: f64 = 100.0;

/// A directory of its own for a test's files.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rnic-rates-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// Two clients writing into the server through one marking switch, with DCQCN (the
/// command of the networks chapter), plus `sets`; its JSON.
fn two_flows(dir: &Path, name: &str, sets: &[&str]) -> serde_json::Value {
    let line = format!("eth.gbps={LINE_GBPS}");
    let min = format!("net.dcqcn.min_rate_mbps={MIN_RATE_MBPS}");
    let file = format!("{name}.json");
    let mut args = DCQCN_TWO_FLOWS.to_vec();
    for s in ["net.cc=dcqcn", &line, &min]
        .into_iter()
        .chain(sets.iter().copied())
    {
        args.extend(["--set", s]);
    }
    args.extend(["--json", &file]);
    let (code, out, err) = rnic_in(&args, dir);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(&std::fs::read_to_string(dir.join(&file)).unwrap()).unwrap()
}

/// One line of the CSV.
struct Row {
    time_us: f64,
    qp: (u32, u32),
    rate_gbps: f64,
    target_gbps: f64,
    alpha: f64,
}

fn rows(csv: &str) -> Vec<Row> {
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("time_us,node,qpn,rate_gbps,target_gbps,alpha")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), 6, "{l}");
            let num = |i: usize| f[i].parse::<f64>().unwrap_or_else(|_| panic!("{l}"));
            Row {
                time_us: num(0),
                qp: (f[1].parse().unwrap(), f[2].parse().unwrap()),
                rate_gbps: num(3),
                target_gbps: num(4),
                alpha: num(5),
            }
        })
        .collect()
}

#[test]
fn the_two_flows_rates_drop_after_the_first_cnps_and_stay_in_bounds() {
    let dir = scratch("two");
    let traced = two_flows(&dir, "t", &["net.trace_interval_us=10"]);
    let rows = rows(&std::fs::read_to_string(dir.join("t-rates.csv")).expect("the trace"));
    assert!(json_stat(&traced, "clients.nic.cc.cnps_received") > 0);
    let mut qps: Vec<(u32, u32)> = rows.iter().map(|r| r.qp).collect();
    qps.sort_unstable();
    qps.dedup();
    // The samples are 10 µs apart, in time order.
    assert!(rows.windows(2).all(|w| w[0].time_us <= w[1].time_us));
    assert!(rows
        .iter()
        .all(|r| (r.time_us / 10.0 - (r.time_us / 10.0).round()).abs() < 1e-9));
    let mut cut = 0;
    for qp in &qps {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.qp == *qp).collect();
        assert_eq!(
            mine[0].rate_gbps, LINE_GBPS,
            "{qp:?} starts at line rate, before any CNP"
        );
        if mine.iter().any(|r| r.rate_gbps < LINE_GBPS) {
            cut += 1;
        }
        for r in mine {
            assert!(
                r.rate_gbps <= LINE_GBPS && r.rate_gbps * 1e3 >= MIN_RATE_MBPS,
                "{qp:?} at {} µs: {} Gb/s",
                r.time_us,
                r.rate_gbps
            );
            assert!(r.target_gbps <= LINE_GBPS && r.target_gbps >= r.rate_gbps);
            assert!((0.0..=1.0).contains(&r.alpha));
        }
    }
    assert_eq!(cut, 2, "the two flows' QPs are cut: {qps:?}");
    // The trace adds no event, and without the interval there is none.
    let plain = two_flows(&dir, "n", &[]);
    assert!(!dir.join("n-rates.csv").exists());
    assert_eq!(plain["events"], traced["events"]);
    assert_eq!(plain["stats"], traced["stats"]);
    std::fs::remove_dir_all(&dir).ok();
}
