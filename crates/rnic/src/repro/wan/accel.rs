//! wan-accel (Fig. 6): standard RDMA, the large-queue-depth framework and the WAN
//! accelerator over the same 500 µs-one-way link, by message size: the accelerator gives
//! about 35 times standard RDMA at 512 B and beats the large-QD framework from 256 B up at
//! every size but 8 KB, where the paper's framework performed better (its own claim).

use crate::repro::claim::{claim, missing, within, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::{at, Curve};
use crate::repro::figure::Figure;
use crate::repro::{Evaluation, Experiment, Outputs};

use super::points::{run_points, Arm, WanPoint, WanResult};
use super::sizes::{run_sizes, SizeCurves, SizesPlan, SIZES_KM};

/// The paper's factor at 512 B.
pub const PAPER_X_512: f64 = 35.0;
/// The one size at which the paper's large-QD framework beat the accelerator.
pub const EXCEPTION_BYTES: f64 = 8192.0;

/// wan-accel.
pub const EXPERIMENT: Experiment = Experiment {
    id: "wan-accel",
    title: "standard vs large-QD framework vs WAN accelerator over 500 us one way, by size",
    figure: "Fig. 6",
    sweeps: &[],
    runs_flows: true,
    claims: &[
        ClaimSource {
            id: "x35-at-512",
            kind: ClaimKind::Calibration,
            source: "Abstract and §5.3: \"for data transfer of 512-byte messages, the RDMA \
                WAN accelerator has about 35 times performance improvement compared with \
                standard RDMA\". ±10 %. The accelerator's time per frame (a software DPDK \
                instance in the paper, unknown) is calibrated on this point in the `wan` \
                profile, so this claim checks the calibration, not a prediction.",
        },
        ClaimSource {
            id: "beats-apn",
            kind: ClaimKind::Prediction,
            source: "§5.3 and Fig. 6: \"the RDMA WAN accelerator starts to improve network \
                throughput for smaller message sizes, i.e., 256 bytes, and in almost all \
                message sizes except 8192 bytes, the RDMA WAN accelerator performed \
                better\" than the large-QD framework. Ours: the accelerator's throughput is \
                above the large-QD framework's at every size from 256 B to 1 MB except \
                8192 B (judged on its own in apn-wins-8k).",
        },
        ClaimSource {
            id: "apn-wins-8k",
            kind: ClaimKind::Prediction,
            source: "§5.3 and Fig. 6: \"in almost all message sizes except 8192 bytes, the \
                RDMA WAN accelerator performed better\": at 8192 B the large-QD framework's \
                throughput is at least the accelerator's. The paper gives no number and no \
                reason. 8 KB is the smallest size at which the framework's 2048 posted WRITEs \
                (16 MB) cover the 100 km link's bandwidth-delay product (12.5 MB), so from \
                there both arms can run at the line rate; which one is above then depends on \
                costs the paper does not state.",
        },
    ],
    evaluate: |o: &Outputs| eval_accel(&super::plan_of(o, plan_full, SizesPlan::none)),
};

/// 64 B to 1 MB, all three arms.
pub fn plan_full() -> SizesPlan {
    SizesPlan {
        sizes: super::FIG_SIZES.to_vec(),
        arms: vec![Arm::Standard, Arm::Apn, Arm::Accel],
    }
}

/// The measurement window of the steady-state points at 8 KB, µs (several long round trips
/// once the rate has settled).
pub const STEADY_WINDOW_US: f64 = 2000.0;

/// Runs the plan and checks the claims; with the 8 KB point of both the framework and the
/// accelerator in the plan, also their steady state (a `-D` window, no iteration tail).
pub fn eval_accel(plan: &SizesPlan) -> anyhow::Result<Evaluation> {
    let c = run_sizes(plan)?;
    let exception_run = plan.sizes.contains(&(EXCEPTION_BYTES as u64))
        && plan.arms.contains(&Arm::Apn)
        && plan.arms.contains(&Arm::Accel);
    let steady = if exception_run {
        Some(steady_at_exception()?)
    } else {
        None
    };
    Ok(accel_claims(&c, steady))
}

/// The framework's and the accelerator's steady-state rates at 8 KB, Gb/s (`None` for a
/// point that did not end ok with its bytes verified).
pub type Steady = (Option<f64>, Option<f64>);

fn steady_at_exception() -> anyhow::Result<Steady> {
    let points: Vec<WanPoint> = [Arm::Apn, Arm::Accel]
        .into_iter()
        .map(|arm| WanPoint {
            duration_us: Some(STEADY_WINDOW_US),
            ..WanPoint::new(arm, SIZES_KM, EXCEPTION_BYTES as u64, 1)
        })
        .collect();
    let res = run_points(&points)?;
    let rate = |r: &WanResult| r.ok.then_some(r.gbps);
    Ok((rate(&res[0]), rate(&res[1])))
}

/// The claims and figure of wan-accel from the curves (and the 8 KB steady state, if run).
pub fn accel_claims(c: &SizeCurves, steady: Option<Steady>) -> Evaluation {
    let w35 = "accelerator about 35 x standard RDMA at 512 B (±10 %)";
    let wbeat = "accelerator above the large-QD framework at every size from 256 B but 8 KB";
    let w8k = "large-QD framework at or above the accelerator at 8 KB";
    let (Some(std), Some(apn), Some(acc)) = (c.of(Arm::Standard), c.of(Arm::Apn), c.of(Arm::Accel))
    else {
        return Evaluation {
            notes: c.notes.clone(),
            claims: vec![
                missing("x35-at-512", w35, "no points"),
                missing("beats-apn", wbeat, "no points"),
                missing("apn-wins-8k", w8k, "no points"),
            ],
            ..Evaluation::default()
        };
    };
    let mut claims = Vec::new();
    claims.push(match (at(acc, 512.0), at(std, 512.0)) {
        (Some(a), Some(s)) if s > 0.0 => {
            let x = a / s;
            claim(
                "x35-at-512",
                w35,
                format!("{x:.1} x ({a:.2} vs {s:.3} Gb/s)"),
                c.all_ok && within(x, PAPER_X_512, 0.10),
            )
        }
        _ => missing("x35-at-512", w35, "no 512 B point"),
    });
    claims.push(beats_apn_claim(wbeat, acc, apn, c.all_ok));
    claims.push(exception_claim(w8k, acc, apn, c.all_ok, steady));
    let figures = vec![Figure::line(
        "wan-accel",
        "Standard RDMA, large-QD framework and WAN accelerator, 500 us one way (Fig. 6)",
        "message size (bytes)",
        "throughput (Gb/s)",
        vec![
            ("standard".into(), std.clone()),
            ("QD 16384".into(), apn.clone()),
            ("WAN accelerator".into(), acc.clone()),
        ],
        true,
    )];
    Evaluation {
        notes: c.notes.clone(),
        ..Evaluation::new(claims, figures)
    }
}

/// The paper's exception: at 8 KB the framework at or above the accelerator, judged on Fig.
/// 6's measurement (perftest's iterations); the steady state beside it shows whether the
/// framework could be above at all once its completion tail is left out.
fn exception_claim(
    words: &str,
    acc: &Curve,
    apn: &Curve,
    all_ok: bool,
    steady: Option<Steady>,
) -> Claim {
    let (Some(a), Some(p)) = (at(acc, EXCEPTION_BYTES), at(apn, EXCEPTION_BYTES)) else {
        return missing("apn-wins-8k", words, "no 8 KB point");
    };
    let steady_text = match steady {
        Some((Some(sp), Some(sa))) => {
            format!("; steady state (-D) framework {sp:.2} vs accelerator {sa:.2}")
        }
        Some(_) => "; a steady-state point did not end ok".to_string(),
        None => String::new(),
    };
    claim(
        "apn-wins-8k",
        words,
        format!("framework {p:.2} vs accelerator {a:.2} Gb/s{steady_text}"),
        all_ok && p >= a,
    )
}

/// The accelerator above the large-QD framework at every size from 256 B but the paper's
/// exception.
fn beats_apn_claim(words: &str, acc: &Curve, apn: &Curve, all_ok: bool) -> Claim {
    let mut losses = Vec::new();
    let mut compared = 0;
    let sizes = acc
        .iter()
        .filter(|(s, _)| *s >= 256.0 && *s != EXCEPTION_BYTES);
    for &(s, a) in sizes {
        if let Some(p) = at(apn, s) {
            compared += 1;
            if a <= p {
                losses.push(format!("{s} B ({a:.2} vs {p:.2})"));
            }
        }
    }
    if compared == 0 {
        return missing("beats-apn", words, "no sizes from 256 B");
    }
    claim(
        "beats-apn",
        words,
        if losses.is_empty() {
            format!("above at all {compared} sizes")
        } else {
            format!(
                "not above at {} of {compared}: {}",
                losses.len(),
                losses.join(", ")
            )
        },
        all_ok && losses.is_empty(),
    )
}
