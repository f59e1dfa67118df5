//! The papers' mechanisms composed: every pair, and every mechanism on at once, of csRNA's
//! non-blocking QPC manager with latency hiding, resource prefetching (sched+sw), TX isolation
//! v1 or v2 (or the ns-3 NIC's QP round robin in its place), ORNIC reliability sprayed over
//! four paths, a 20 km long-distance link with or without the WAN accelerator or instead a
//! leaf-spine routing each frame adaptively over four spines, PFC, QPCs in the NIC's DDR, and
//! DCQCN congestion control with ECN marking. The papers describe them as orthogonal and a
//! user turns several on at once, so each run either completes with every byte verified
//! (exit 0, `verified_bytes` = size × iterations) or is refused before the work (exit 2) with
//! a message naming the conflicting fields — never a stall (exit 3), a model
//! error (exit 1) or a panic.
//!
//! Two workloads, each a few ms of simulated time: three QPs streaming 1 MB WRITEs (the shape
//! that stalled ORNIC under slicing on a 20 km link), and four QPs of 64 KB WRITEs with 2 %
//! of frames lost (every mechanism's retransmission path: go-back-N's NAKs and timeouts,
//! ORNIC's bitmap NAKs and timeouts, the accelerator's resends).

use crate::common::rnic;

use rnic::report::{PerfResult, RunStatus};

/// One mechanism: its name, the `--set` assignments that turn it on, and the group of
/// mechanisms it excludes (two settings of the same fields, never paired).
struct Mechanism {
    name: &'static str,
    sets: &'static [&'static str],
    group: &'static str,
}

const MECHANISMS: &[Mechanism] = &[
    Mechanism {
        name: "csrna",
        sets: &["nic.qpc_manager=nonblocking", "nic.latency_hiding=true"],
        group: "csrna",
    },
    Mechanism {
        name: "prefetch",
        sets: &["nic.prefetch=sched+sw"],
        group: "prefetch",
    },
    Mechanism {
        name: "isolation-v1",
        sets: &["nic.tx_isolation=v1"],
        group: "isolation",
    },
    Mechanism {
        name: "isolation-v2",
        sets: &["nic.tx_isolation=v2"],
        group: "isolation",
    },
    Mechanism {
        name: "qp-round-robin",
        sets: &["nic.iso_transport=qp_round_robin"],
        group: "isolation",
    },
    Mechanism {
        name: "ornic-sprayed",
        sets: &["qp.reliability=ornic", "net.spray.paths=4"],
        group: "ornic",
    },
    Mechanism {
        name: "wan-20km",
        sets: &["net.topology=wan", "net.wan_km=20"],
        group: "topology",
    },
    Mechanism {
        name: "wan-20km-accel",
        sets: &["net.topology=wan", "net.wan_km=20", "net.wan_accel=true"],
        group: "topology",
    },
    // A generated leaf-spine routing every frame adaptively over four spines: the server
    // and the client under leaves of their own.
    Mechanism {
        name: "fabric-adaptive",
        sets: &[
            "net.topology=leaf_spine",
            "net.fabric.leaves=2",
            "net.fabric.hosts_per_leaf=1",
            "net.fabric.spines=4",
            "net.fabric.routing=adaptive",
        ],
        group: "topology",
    },
    Mechanism {
        name: "pfc",
        sets: &["net.pfc=true"],
        group: "pfc",
    },
    Mechanism {
        name: "ddr-qpcs",
        sets: &["nic.qpc_placement=ddr"],
        group: "ddr",
    },
    Mechanism {
        name: "dcqcn",
        sets: &["net.cc=dcqcn", "net.ecn.enabled=true"],
        group: "cc",
    },
];

/// Combinations refused on purpose (exit 2): the mechanisms, and words the refusal must
/// contain (the conflicting fields). None today: every combination runs.
const REFUSED: &[(&[&str], &[&str])] = &[];

/// The workloads: `rnic perf write-bw` arguments.
const WORKLOADS: &[&[&str]] = &[
    &["-s", "1048576", "-n", "5", "-q", "3"],
    &[
        "-s",
        "65536",
        "-n",
        "20",
        "-q",
        "4",
        "--set",
        "net.impair.loss=0.02",
    ],
];

/// Every pair of mechanisms from different groups, and the three all-on combinations, one
/// per network (v1 with the plain long link, v2 with the accelerator, v1 on the adaptive
/// fabric).
fn combinations() -> Vec<Vec<&'static Mechanism>> {
    let mut out = Vec::new();
    for (i, a) in MECHANISMS.iter().enumerate() {
        for b in &MECHANISMS[i + 1..] {
            if a.group != b.group {
                out.push(vec![a, b]);
            }
        }
    }
    for (isolation, network) in [
        ("isolation-v1", "wan-20km"),
        ("isolation-v2", "wan-20km-accel"),
        ("isolation-v1", "fabric-adaptive"),
    ] {
        out.push(
            MECHANISMS
                .iter()
                .filter(|m| match m.group {
                    "isolation" if m.name.starts_with("isolation-") => m.name == isolation,
                    "topology" => m.name == network,
                    _ => true,
                })
                .collect(),
        );
    }
    out
}

/// What went wrong with one run, or `None` when it completed verified or was refused as
/// [`REFUSED`] says.
fn check(combo: &[&Mechanism], workload: &[&str]) -> Option<String> {
    let names: Vec<&str> = combo.iter().map(|m| m.name).collect();
    let mut args = vec!["perf", "write-bw", "--quiet", "--json", "-"];
    args.extend_from_slice(workload);
    for m in combo {
        for s in m.sets {
            args.extend_from_slice(&["--set", s]);
        }
    }
    let (code, out, err) = rnic(&args);
    let what = format!("{names:?} {workload:?}");
    let refusal = REFUSED
        .iter()
        .find(|(ms, _)| ms.iter().all(|m| names.contains(m)));
    if let Some((_, fields)) = refusal {
        let named = fields.iter().all(|f| err.contains(f));
        return (code != 2 || !named)
            .then(|| format!("{what}: should be refused naming {fields:?}; exit {code}: {err}"));
    }
    if code != 0 {
        return Some(format!("{what}: exit {code}: {}", err.trim()));
    }
    let r: PerfResult = match serde_json::from_str(&out) {
        Ok(r) => r,
        Err(e) => return Some(format!("{what}: no JSON ({e})")),
    };
    let expected = flag(workload, "-s") * flag(workload, "-n") * flag(workload, "-q");
    let verified = r.status == RunStatus::Ok && r.bytes_verified && r.verified_bytes == expected;
    if !verified {
        return Some(format!(
            "{what}: status {:?}, {} of {expected} bytes verified ({})",
            r.status, r.verified_bytes, r.reason
        ));
    }
    lost_nothing_though_lossy(workload, &out).map(|why| format!("{what}: {why}"))
}

/// A lossy workload whose run lost no frame would pass without testing the retransmission
/// paths it is there for (a mechanism that took the frames around the lossy link, say).
fn lost_nothing_though_lossy(workload: &[&str], json: &str) -> Option<String> {
    if !workload.iter().any(|a| a.starts_with("net.impair.loss=")) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let dropped = v["stats"]["net.elements.dropped"].as_u64();
    (dropped.unwrap_or(0) == 0).then(|| {
        format!("the lossy link dropped no frame (stats.net.elements.dropped = {dropped:?})")
    })
}

/// The number after `name` in `args`.
fn flag(args: &[&str], name: &str) -> u64 {
    let i = args.iter().position(|a| *a == name).expect("the flag") + 1;
    args[i].parse().expect("a number")
}

#[test]
fn every_pair_and_all_on_completes_verified() {
    let runs: Vec<(Vec<&Mechanism>, &[&str])> = combinations()
        .into_iter()
        .flat_map(|c| WORKLOADS.iter().map(move |w| (c.clone(), *w)))
        .collect();
    let failures: Vec<String> =
        crate::common::in_two_workers(&runs, |(combo, workload)| check(combo, workload))
            .into_iter()
            .flatten()
            .collect();
    assert!(
        failures.is_empty(),
        "{} of {} runs failed:\n{}",
        failures.len(),
        runs.len(),
        failures.join("\n")
    );
}

/// The book's "Combining mechanisms" chapter quotes the matrix's size; it read 53
/// combinations and 106 runs after the adaptive leaf-spine had made them 63 and 126.
#[test]
fn the_book_quotes_the_matrix_size() {
    let combinations = combinations().len();
    let runs = combinations * WORKLOADS.len();
    let chapter = crate::common::repo_root().join("docs/book/src/combining.md");
    let text = std::fs::read_to_string(&chapter).expect("read combining.md");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let quote = format!("({combinations} combinations, {runs} runs)");
    assert!(flat.contains(&quote), "combining.md should say {quote}");
}

/// The run: ORNIC under slicing execution on a 20 km link stalled with 14 of 15
/// WRITEs done on every seed (the timeout's resends bypassed the slicing station through the
/// transport's sweep, leaving a finished WQE's entry in it for good). It completes, and the
/// retransmission timer, learning the 200 µs round trip, fires at most once per QP (before
/// the QP's first round-trip sample) where the fixed 90 µs timer fired on every WQE.
#[test]
fn ornic_under_slicing_on_a_long_link_completes_without_needless_timeouts() {
    for slicing in [false, true] {
        let mut args = vec![
            "perf",
            "write-bw",
            "--profile",
            "ornic",
            "-s",
            "1048576",
            "-n",
            "5",
            "-t",
            "1",
            "-q",
            "3",
            "--set",
            "net.link_km=20",
            "--quiet",
            "--json",
            "-",
        ];
        if slicing {
            args.extend_from_slice(&["--set", "nic.iso_transport=slicing"]);
        }
        let (code, out, err) = rnic(&args);
        assert_eq!(code, 0, "slicing {slicing}: {err}");
        let r: PerfResult = serde_json::from_str(&out).unwrap();
        assert!(
            r.bytes_verified && r.verified_bytes == 15 * 1048576,
            "slicing {slicing}: {} bytes verified",
            r.verified_bytes
        );
        assert!(
            r.timeouts <= 3,
            "slicing {slicing}: {} timeouts, {} resends on a lossless link",
            r.timeouts,
            r.retransmissions
        );
    }
}
