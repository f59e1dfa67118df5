//! The resource-prefetching paper's evaluators on synthetic curves: each claim passes on a
//! curve shaped as the paper says and fails on one that is not, so no claim is a formality.

use rnic::repro::curve::Curve;
use rnic::repro::prefetch::{
    eval_light, eval_memory, eval_scale, eval_window, ChainReads, FormulaInputs,
};

fn pts(v: &[(f64, f64)]) -> Curve {
    v.to_vec()
}

fn pass(c: &[rnic::repro::Claim], id: &str) -> bool {
    c.iter().find(|c| c.id == id).unwrap().pass
}

#[test]
fn scale_pass_and_fail() {
    let flat = pts(&[(16.0, 66.0), (1024.0, 67.0), (16384.0, 65.0)]);
    assert!(pass(&eval_scale(&flat), "flat"));
    let falls = pts(&[(16.0, 66.0), (1024.0, 60.0), (16384.0, 33.0)]);
    assert!(!pass(&eval_scale(&falls), "flat"));
    assert!(
        !pass(&eval_scale(&pts(&[(16.0, 66.0)])), "flat"),
        "no 16,384 point"
    );
}

/// A curve at `low` Mops at window 0 rising linearly to 70 at window `knee`, flat after,
/// over windows 0 to 20.
fn rising(low: f64, knee: f64) -> Curve {
    (0..=20)
        .map(|w| {
            let w = f64::from(w);
            (w, (low + (70.0 - low) * w / knee).min(70.0))
        })
        .collect()
}

#[test]
fn window_pass_and_fail() {
    let f = FormulaInputs {
        // The prefetch profile's chunk: 56 x 64 B, 287 ns at 100 Gb/s; 4 x 500 / 287 -> 7.
        chunk_bytes: 3584.0,
        visit_msgs: 50.0,
        bw_gbps: 100.0,
        delay_fetch_ns: 500.0,
        chain: ChainReads {
            qpc: 1.0,
            wqe: 1.0,
            mpt: 1.0,
            mtt: 1.0,
            wqe_beside_qpc: false,
        },
    };
    // The paper's shape: 35 at 0, rising to 70 at window 7, flat after.
    let (c, notes) = eval_window(&rising(35.0, 7.0), &f);
    assert!(c.iter().all(|c| c.pass), "{c:?}");
    assert!(notes.contains("wnd >= 7"), "{notes}");
    // A knee at 2 is far from the formula's 7.
    let (c, _) = eval_window(&rising(35.0, 2.0), &f);
    assert!(pass(&c, "window0-low") && pass(&c, "rises"));
    assert!(!pass(&c, "formula"), "knee 2 against 7: {c:?}");
    // Two-sided: window 0 at a fifth of the peak is not "about half".
    assert!(!pass(&eval_window(&rising(14.0, 7.0), &f).0, "window0-low"));
    // A knee past the paper's axis.
    assert!(!pass(&eval_window(&rising(35.0, 18.0), &f).0, "rises"));
    // The prediction takes nothing from the run: another chain count changes the
    // diagnosis, not the verdict.
    let two = FormulaInputs {
        chain: ChainReads {
            qpc: 1.0,
            wqe: 1.0,
            ..ChainReads::default()
        },
        ..f
    };
    let (c, notes) = eval_window(&rising(35.0, 7.0), &two);
    assert!(pass(&c, "formula"), "{c:?}");
    assert!(notes.contains("n = 2.00 resources"), "{notes}");
    // A smaller chunk asks for a larger window: 1 KiB at 100 Gb/s, 82 ns -> 25.
    let small = FormulaInputs {
        chunk_bytes: 1024.0,
        ..f
    };
    assert!(!pass(&eval_window(&rising(35.0, 7.0), &small).0, "formula"));
}

#[test]
fn memory_pass_and_fail() {
    let pf = pts(&[(1.0, 66.0), (256.0, 66.0), (4096.0, 64.0)]);
    let cs = pts(&[(1.0, 70.0), (256.0, 70.0), (4096.0, 40.0)]);
    let c = eval_memory(&pf, &cs);
    assert!(c.iter().all(|c| c.pass), "{c:?}");
    let c = eval_memory(&cs, &pf);
    assert!(c.iter().all(|c| !c.pass), "{c:?}");
    // Two-sided: a fall far below "about 40" of 70 is not the paper's either.
    let deep = pts(&[(1.0, 70.0), (256.0, 70.0), (4096.0, 8.6)]);
    assert!(!pass(&eval_memory(&pf, &deep), "csrna-falls"));
}

#[test]
fn light_pass_and_fail() {
    let none = pts(&[(4.0, 2.4), (64.0, 2.4), (128.0, 2.9), (256.0, 2.9)]);
    let sw = pts(&[(4.0, 2.4), (64.0, 2.4), (128.0, 2.5), (256.0, 2.5)]);
    assert!(eval_light(&none, &sw).iter().all(|c| c.pass));
    let half = pts(&[(4.0, 2.4), (64.0, 2.4), (128.0, 2.65), (256.0, 2.65)]);
    assert!(!pass(&eval_light(&none, &half), "sw-removes"));
    assert!(!pass(&eval_light(&sw, &sw), "rise"));
}
