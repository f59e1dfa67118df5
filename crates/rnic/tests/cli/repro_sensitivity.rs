//! `rnic repro ID --sensitivity` on a reduced experiment: ORNIC's Table 2 bench (30 WQEs per
//! cell instead of 100) rerun with LEFT's cache threshold, a parameter the paper does not
//! state, at −20 % and +20 % (2 blocks: 1 and 3).
//!
//! A test binary of its own: the perturbation is process-wide while a rerun runs, so no
//! other test may build configs meanwhile.

use rnic::model::config::Config;
use rnic::perf::ModelRunner;
use rnic::repro::ornic::{eval_cycles, TablePlan};
use rnic::repro::sensitivity::{run_sweeps_with_sensitivity, unstated};
use rnic::repro::{select, Experiment, Outputs, ReproOptions};

const KEY: &str = "ooo.left_cache_threshold_blocks";

#[test]
fn sensitivity_reruns_each_parameter_and_names_what_flips() {
    let full = select("ornic-bitmap-cycles").unwrap()[0];
    let params = unstated(full.id);
    assert_eq!(params.iter().map(|u| u.key).collect::<Vec<_>>(), [KEY]);
    let reduced = Experiment {
        evaluate: |_: &Outputs| {
            eval_cycles(&TablePlan {
                trials: 30,
                ..TablePlan::full()?
            })
        },
        ..*full
    };
    let out = std::env::temp_dir().join(format!("rnic-sensitivity-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let opts = ReproOptions {
        jobs: 1,
        out_dir: out.clone(),
        progress: false,
        quiet: true,
    };
    let o = run_sweeps_with_sensitivity(
        &reduced,
        Vec::new(),
        params,
        &ModelRunner,
        &opts,
        &mut Vec::new(),
    )
    .unwrap();
    // The perturbation reached the model's config, each way, and is gone afterwards.
    for change in ["2 -> 1 (-20 %)", "2 -> 3 (+20 %)"] {
        assert!(
            o.evaluation.notes.contains(&format!("{KEY} {change}")),
            "{}",
            o.evaluation.notes
        );
    }
    let after = Config::resolve("ornic", &[]).unwrap();
    assert_eq!(after.ooo.left_cache_threshold_blocks, 2);
    // Each rerun's own claims, in its own directory; LEFT's numbers moved with the threshold.
    let claims = |dir: &std::path::Path| {
        let bytes = std::fs::read(dir.join(full.id).join("claims.csv")).unwrap();
        rnic::repro::claim::parse_claims_csv(&bytes).unwrap()
    };
    let left = |cs: &[rnic::repro::Claim]| cs.iter().find(|c| c.id == "left").unwrap().clone();
    let sens = out.join(full.id).join("sensitivity");
    let lower = claims(&sens.join(format!("{KEY}x0.8")));
    assert_ne!(left(&lower).ours, left(&o.evaluation.claims).ours);
    // Every claim has its cell: robust, or the rerun that flips it (with the value).
    let base = claims(&out);
    for (c, written) in o.evaluation.claims.iter().zip(&base) {
        let cell = c.sensitivity.as_deref().unwrap();
        assert_eq!(written.sensitivity.as_deref(), Some(cell));
        let flipped_at: Vec<f64> = [0.8, 1.2]
            .into_iter()
            .filter(|f| {
                let rerun = claims(&sens.join(format!("{KEY}x{f}")));
                rerun.iter().any(|r| r.id == c.id && r.pass != c.pass)
            })
            .collect();
        match flipped_at.as_slice() {
            [] => assert!(
                cell.starts_with("robust (1 parameter(s)"),
                "{}: {cell}",
                c.id
            ),
            fs => {
                for f in fs {
                    let v = if *f < 1.0 { "2 -> 1" } else { "2 -> 3" };
                    assert!(cell.contains(&format!("{KEY} {v}")), "{}: {cell}", c.id);
                }
            }
        }
    }
    let section = std::fs::read_to_string(out.join(full.id).join("section.md")).unwrap();
    assert!(section.contains("| verdict | sensitivity |"), "{section}");
    let _ = std::fs::remove_dir_all(&out);
}
