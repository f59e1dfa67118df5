//! The reproduction registry: every id is listed with its paper and figure, every committed
//! sweep file parses and every point resolves (`rnic repro --check`), and the committed files
//! on disk are the ones compiled in.

use rnic::repro::{self, experiments, PAPERS};

const CSRNA: [&str; 7] = [
    "csrna-peak",
    "csrna-fcfs",
    "csrna-latency",
    "csrna-ooocap",
    "csrna-placement",
    "csrna-memory",
    "csrna-udlat",
];

const ISOLATION: [&str; 6] = [
    "isolation-ls-alone",
    "isolation-ls-bs",
    "isolation-depth-map",
    "isolation-bs-bs",
    "isolation-backpressure",
    "isolation-linerate",
];

const PREFETCH: [&str; 4] = [
    "prefetch-scale",
    "prefetch-window",
    "prefetch-memory",
    "prefetch-light",
];

const ORNIC: [&str; 7] = [
    "ornic-sizing",
    "ornic-bitmap-cycles",
    "ornic-bitmap-blocks",
    "ornic-throughput",
    "ornic-vs-gbn",
    "ornic-vs-gbn-paths",
    "ornic-acks",
];

const WAN: [&str; 5] = ["wan-standard", "wan-qd", "wan-apn", "wan-accel", "wan-loss"];

const DCQCN: [&str; 3] = ["dcqcn-two-flows", "dcqcn-incast", "dcqcn-fct-websearch"];

#[test]
fn registry_lists_every_experiment() {
    let all: Vec<&str> = CSRNA
        .iter()
        .chain(&ISOLATION)
        .chain(&PREFETCH)
        .chain(&WAN)
        .chain(&ORNIC)
        .chain(&DCQCN)
        .copied()
        .collect();
    assert_eq!(repro::ids(), all);
    let listing = repro::listing();
    for id in CSRNA {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} is not listed: {listing}"));
        let e = repro::select(id).unwrap()[0];
        assert!(line.contains("csRNA") && line.contains(e.figure), "{line}");
    }
    // A header, one line per experiment, one per paper, `all`, then the citations.
    let table = listing.split("\n\n").next().unwrap();
    assert_eq!(
        table.lines().count(),
        1 + CSRNA.len()
            + ISOLATION.len()
            + PREFETCH.len()
            + WAN.len()
            + ORNIC.len()
            + DCQCN.len()
            + PAPERS.len()
            + 1,
        "{listing}"
    );
    assert!(
        listing.contains("Ning Kang") && listing.contains("ICCD 2022"),
        "{listing}"
    );
    assert_eq!(repro::select("csrna").unwrap().len(), 7);
    assert_eq!(repro::select("isolation").unwrap().len(), 6);
    for id in ISOLATION {
        let line = listing
            .lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("{id} is not listed: {listing}"));
        assert!(line.contains("TX isolation"), "{line}");
    }
    assert_eq!(repro::select("wan").unwrap().len(), 5);
    assert_eq!(repro::select("all").unwrap().len(), experiments().count());
    assert!(repro::select("csrna-nope").is_err());
}

#[test]
fn every_sweep_parses_and_resolves() {
    for r in experiments() {
        let n = repro::check(r).unwrap_or_else(|e| panic!("{}: {e:#}", r.id));
        assert_eq!(n == 0, r.sweeps.is_empty(), "{}", r.id);
    }
}

#[test]
fn committed_files_match_the_compiled_ones() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for r in experiments() {
        for f in r.sweeps {
            let disk = std::fs::read_to_string(root.join(f.path)).unwrap();
            assert_eq!(disk, f.toml, "{}", f.path);
        }
    }
}

#[test]
fn message_rate_points_reach_51200_qps() {
    for id in ["csrna-peak", "csrna-ooocap", "csrna-placement"] {
        let r = repro::select(id).unwrap()[0];
        let sweeps = repro::parse(r).unwrap();
        let qp = sweeps[0].axis("perf.qp").expect("perf.qp axis");
        let max = qp.values.iter().filter_map(|v| v.as_integer()).max();
        assert_eq!(max, Some(51_200), "{id}");
    }
}

#[test]
fn every_experiment_has_a_reduced_run_in_the_suite() {
    // A paper's reduced reproductions live in tests/cli/repro_<key>_reduced.rs and name each
    // of its experiments, so a new experiment cannot land without one.
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli");
    for p in PAPERS {
        let file = tests.join(format!("repro_{}_reduced.rs", p.key));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for e in p.experiments {
            assert!(
                text.contains(&format!("\"{}\"", e.id)),
                "{} has no reduced run in {}",
                e.id,
                file.display()
            );
        }
    }
}

/// The README and the book count the papers `rnic repro` reproduces; they said "five" for
/// long after DCQCN became the sixth.
#[test]
fn the_front_door_counts_every_paper() {
    let word = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
    ]
    .get(PAPERS.len())
    .expect("a number word for the papers");
    let root = crate::common::repo_root();
    for (file, words) in [
        (
            "README.md",
            format!("reproduces {word} published RDMA papers"),
        ),
        (
            "README.md",
            format!("every experiment of the {word} papers"),
        ),
        (
            "docs/book/src/introduction.md",
            format!("The {word} papers, cited by title"),
        ),
        (
            "docs/book/src/combining.md",
            format!("The {word} papers' mechanisms"),
        ),
    ] {
        let text = std::fs::read_to_string(root.join(file)).expect("read the doc");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&words), "{file} should say {words:?}");
    }
}
