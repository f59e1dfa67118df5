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

#[test]
fn window_pass_and_fail() {
    let f = FormulaInputs {
        chunk_bytes: 1024.0,
        visit_msgs: 8.0,
        bw_gbps: 100.0,
        delay_fetch_ns: 500.0,
        // Every resource read, one after the other: n = 4.
        chain: ChainReads {
            qpc: 1.0,
            wqe: 1.0,
            mpt: 1.0,
            mtt: 1.0,
            wqe_beside_qpc: false,
        },
    };
    // The paper's shape: 35 at 0, rising to 70 at the formula's window (8 msgs at 70 Mops:
    // 114 ns a visit, 4 x 500 / 114 -> 18), flat after.
    let paper: Curve = (0..=20)
        .map(|w| (f64::from(w), (35.0 + 35.0 * f64::from(w) / 18.0).min(70.0)))
        .collect();
    let (c, notes) = eval_window(&paper, &f);
    assert!(
        c.iter().filter(|c| c.id != "rises").all(|c| c.pass),
        "{c:?}"
    );
    assert!(
        !pass(&c, "rises"),
        "knee at 18 is past the paper's axis of 16"
    );
    assert!(notes.contains("literal"), "{notes}");
    let early: Curve = (0..=16)
        .map(|w| (f64::from(w), (35.0 + 35.0 * f64::from(w) / 4.0).min(70.0)))
        .collect();
    let (c, _) = eval_window(&early, &f);
    assert!(pass(&c, "window0-low") && pass(&c, "rises"));
    // Two-sided: window 0 at a fifth of the peak is not "about half".
    let fifth: Curve = (0..=16)
        .map(|w| (f64::from(w), (14.0 + 56.0 * f64::from(w) / 4.0).min(70.0)))
        .collect();
    assert!(!pass(&eval_window(&fifth, &f).0, "window0-low"));
    assert!(
        !pass(&c, "formula"),
        "knee 4 is far from the predicted 18: {c:?}"
    );
    // The same knee-at-6 curve against two chains: the prediction follows the reads the
    // run counted (n = 2: 1000 / 114 -> 9, knee within 50 %), not a constant.
    let knee6: Curve = (0..=16)
        .map(|w| (f64::from(w), (35.0 + 35.0 * f64::from(w) / 6.0).min(70.0)))
        .collect();
    assert!(!pass(&eval_window(&knee6, &f).0, "formula"), "n = 4: 18");
    let two = FormulaInputs {
        chain: ChainReads {
            qpc: 1.0,
            wqe: 1.0,
            ..ChainReads::default()
        },
        ..f
    };
    let (c, notes) = eval_window(&knee6, &two);
    assert!(pass(&c, "formula"), "n = 2: 9 {c:?}");
    assert!(notes.contains("n = 2.00 reads"), "{notes}");
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
