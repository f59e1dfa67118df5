//! Every configuration field at the ends of its accepted range, and at each value it lists,
//! in a small run: the run completes, is refused naming the field (exit 2), or ends
//! incomplete and says why (exit 3); never a panic or another exit. A value just past the
//! range is refused naming the field. The time and rate fields, which can also overflow the
//! clock, have their own test (`clock_range.rs`).

use crate::common::rnic;

use rnic_model::config::schema::{FieldDoc, Kind, FIELDS};

/// Fields counted in time or rate units, `clock_range.rs`'s.
const CLOCK_UNITS: [&str; 7] = ["ns", "us", "µs", "ps", "GHz", "Gb/s", "km"];

/// In-range values worth a run: both ends of a range, every listed value.
fn in_range_values(kind: Kind) -> Vec<String> {
    match kind {
        Kind::UInt { min, max } | Kind::Pow2 { min, max } => vec![min.to_string(), max.to_string()],
        Kind::IntSet(set) => set.iter().map(u64::to_string).collect(),
        Kind::Float {
            min,
            max,
            min_exclusive,
        } => {
            let low = if min_exclusive {
                min + (max - min) * 1e-9
            } else {
                min
            };
            vec![format!("{low:e}"), format!("{max:e}")]
        }
        Kind::Bool => vec!["true".into(), "false".into()],
        Kind::Str(names) | Kind::NameOrFile(names, _) => {
            names.iter().map(|n| format!("\"{n}\"")).collect()
        }
    }
}

/// A value just above the range, where there is one.
fn above_range(kind: Kind) -> Option<String> {
    match kind {
        Kind::UInt { max, .. } if max < u64::MAX / 2 => Some((max + 1).to_string()),
        Kind::Pow2 { max, .. } if max < u64::MAX / 4 => Some((max * 2).to_string()),
        Kind::Float { max, .. } if max > 0.0 => Some(format!("{:e}", max * 2.0)),
        _ => None,
    }
}

fn fields() -> Vec<&'static FieldDoc> {
    FIELDS
        .iter()
        .filter(|f| !CLOCK_UNITS.contains(&f.unit))
        .collect()
}

/// Runs a small WRITE test (2 clients, 2 QPs each, 4 KiB, 10 iterations) with `set`.
fn run_with(set: &str) -> (i32, String) {
    let args = [
        "perf",
        "write-bw",
        "-s",
        "4096",
        "-n",
        "10",
        "-q",
        "2",
        "--clients",
        "2",
        "--quiet",
        "--set",
        set,
    ];
    let (code, _, err) = rnic(&args);
    (code, err)
}

#[test]
fn every_field_at_its_range_ends_and_listed_values_exits_cleanly() {
    let fields = fields();
    assert!(fields.len() >= 100, "{} fields", fields.len());
    let mut runs = 0;
    for f in fields {
        for v in in_range_values(f.kind) {
            let set = format!("{}={v}", f.path);
            let (code, err) = run_with(&set);
            runs += 1;
            assert!(!err.contains("panicked"), "{set}: {err}");
            assert!(matches!(code, 0 | 2 | 3), "{set}: exit {code}: {err}");
            if code == 2 {
                // A run check refused it: it names a field (this one or the one it
                // conflicts with).
                let named = FIELDS.iter().any(|g| err.contains(g.path));
                assert!(err.contains("error:") && named, "{set}: {err}");
            }
        }
    }
    assert!(runs >= 250, "{runs} runs");
}

#[test]
fn every_field_just_past_its_range_is_refused_naming_it() {
    let mut refused = 0;
    for f in fields() {
        let Some(v) = above_range(f.kind) else {
            continue;
        };
        let set = format!("{}={v}", f.path);
        let (code, err) = run_with(&set);
        assert_eq!(code, 2, "{set}: {err}");
        assert!(err.contains(f.path), "{set}: {err}");
        refused += 1;
    }
    assert!(refused >= 80, "{refused} fields refused");
}
