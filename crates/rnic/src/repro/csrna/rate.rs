//! csrna-peak (Fig. 7a) and csrna-fcfs (Fig. 1b): 64 B message rate vs QPs, with csRNA's
//! mechanisms and with the first-come-first-served baseline they replace.

use super::{CACHE, PEAK_MOPS};
use crate::repro::claim::{claim, missing, pct, within, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::{at, max_point, min_point, normalized, Curve};
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};

/// csrna-peak.
pub const PEAK: Experiment = Experiment {
    id: "csrna-peak",
    title: "non-blocking + latency hiding hold the peak message rate up to 51,200 QPs",
    figure: "Fig. 7a",
    sweeps: &[sweep_file!("csrna/peak.toml")],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "write-flat",
            kind: ClaimKind::Prediction,
            source: FLAT_SOURCE,
        },
        ClaimSource {
            id: "write-peak",
            kind: ClaimKind::Calibration,
            source: PEAK_SOURCE,
        },
        ClaimSource {
            id: "read-flat",
            kind: ClaimKind::Prediction,
            source: FLAT_SOURCE,
        },
        ClaimSource {
            id: "read-peak",
            kind: ClaimKind::Calibration,
            source: PEAK_SOURCE,
        },
    ],
    evaluate: evaluate_peak,
};

const FLAT_SOURCE: &str = "§5.2 and Fig. 7a: csRNA \"can maintain a peak message rate even \
    when reaching 51.2K connections\", RDMA WRITE and READ, 64 B. Fig. 7a is normalized and \
    states no tolerance: the 5 % band is ours.";
const PEAK_SOURCE: &str = "Abstract and §7: peak message rate 66.4 Mop/s with over 50K \
    connections; ±10 % is rnic's tolerance for a number the paper states. Calibration: \
    nic.tx_msg_cycles = 15 (one message per 15 ns at 1 GHz, 66.7 Mops) was set from this \
    number, so the peak checks that fit, not a prediction.";

/// csrna-fcfs.
pub const FCFS: Experiment = Experiment {
    id: "csrna-fcfs",
    title: "FCFS QPC management collapses once QPs exceed the 300-entry cache",
    figure: "Fig. 1b",
    sweeps: &[sweep_file!("csrna/fcfs.toml")],
    runs_flows: false,
    claims: &[
        ClaimSource {
            id: "write-holds",
            kind: ClaimKind::Prediction,
            source: HOLDS_SOURCE,
        },
        ClaimSource {
            id: "write-cliff",
            kind: ClaimKind::Prediction,
            source: CLIFF_SOURCE,
        },
        ClaimSource {
            id: "read-holds",
            kind: ClaimKind::Prediction,
            source: HOLDS_SOURCE,
        },
        ClaimSource {
            id: "read-cliff",
            kind: ClaimKind::Prediction,
            source: CLIFF_SOURCE,
        },
    ],
    evaluate: evaluate_fcfs,
};

const HOLDS_SOURCE: &str = "§3 and Fig. 1b: first-come-first-served QPC management with a \
    300-entry QPC cache, one server to 10 clients; the rate holds while the QPs fit the \
    cache. The paper shows RDMA WRITE; rnic checks READ too. 95 % of the peak is ours.";
const CLIFF_SOURCE: &str = "§3 and Fig. 1b: \"when the number of connections slightly \
    exceeded the cache size, RNIC's message rate dropped dramatically\". Ours: \"slightly\" \
    is 600 QPs (twice the cache), \"dramatically\" is at most half the peak.";

/// Fig. 7a: both verbs flat within 5 % of their maximum up to ≥ 51,200 QPs, the maximum
/// within ±10 % of 66.4 Mops.
pub fn eval_peak(write: &Curve, read: &Curve) -> Vec<Claim> {
    let mut out = Vec::new();
    for (verb, c) in [("write", write), ("read", read)] {
        let flat_words = format!(
            "{} rate flat within 5 % from a few QPs to 51,200",
            verb.to_uppercase()
        );
        let peak_words = format!(
            "{} peak about {PEAK_MOPS} Mops (±10 %)",
            verb.to_uppercase()
        );
        let (Some((_, hi)), Some((xlo, lo))) = (max_point(c), min_point(c)) else {
            out.push(missing(format!("{verb}-flat"), flat_words, "no points"));
            out.push(missing(format!("{verb}-peak"), peak_words, "no points"));
            continue;
        };
        let xmax = c.last().map_or(0.0, |p| p.0);
        out.push(claim(
            format!("{verb}-flat"),
            flat_words,
            format!(
                "min {lo:.1} Mops at {xlo} QPs = {:.1} % of max, up to {xmax} QPs",
                pct(lo, hi)
            ),
            lo >= 0.95 * hi && xmax >= 51_200.0,
        ));
        out.push(claim(
            format!("{verb}-peak"),
            peak_words,
            format!(
                "max {hi:.1} Mops ({:+.1} %)",
                pct(hi - PEAK_MOPS, PEAK_MOPS)
            ),
            within(hi, PEAK_MOPS, 0.10),
        ));
    }
    out
}

fn evaluate_peak(o: &Outputs) -> anyhow::Result<Evaluation> {
    let w = o.curve(0, &[("perf.test", "write-bw")], "msg_rate_mops")?;
    let rd = o.curve(0, &[("perf.test", "read-bw")], "msg_rate_mops")?;
    let claims = eval_peak(&w, &rd);
    let figures = vec![
        Figure::line(
            "peak",
            "csRNA (nb + LatHiding, cache 300), 64 B: normalized message rate (Fig. 7a)",
            "QPs",
            "normalized message rate",
            vec![
                ("csRNA WRITE".into(), normalized(&w)),
                ("csRNA READ".into(), normalized(&rd)),
            ],
            true,
        ),
        Figure::line(
            "peak-mops",
            "csRNA, 64 B: message rate vs QPs",
            "QPs",
            "message rate (Mops)",
            vec![("WRITE".into(), w), ("READ".into(), rd)],
            true,
        ),
    ];
    Ok(Evaluation::new(claims, figures))
}

/// Fig. 1b: with FCFS and a 300-entry cache the rate holds up to the cache size (≥ 95 % of
/// the peak at 300 QPs) and collapses slightly past it (≤ 50 % of the peak at 600 QPs).
pub fn eval_fcfs(write: &Curve, read: &Curve) -> Vec<Claim> {
    let mut out = Vec::new();
    for (verb, c) in [("write", write), ("read", read)] {
        let v = verb.to_uppercase();
        let hold_words =
            format!("{v}: rate holds while QPs fit the cache (>= 95 % of peak at 300)");
        let cliff_words =
            format!("{v}: drops dramatically slightly past the cache (<= 50 % of peak at 600)");
        let fit: Curve = c.iter().copied().filter(|p| p.0 <= CACHE).collect();
        let (Some((_, peak)), Some(r300), Some(r600)) =
            (max_point(&fit), at(c, CACHE), at(c, 600.0))
        else {
            out.push(missing(
                format!("{verb}-holds"),
                hold_words,
                "need 300 and 600 QPs",
            ));
            out.push(missing(
                format!("{verb}-cliff"),
                cliff_words,
                "need 300 and 600 QPs",
            ));
            continue;
        };
        out.push(claim(
            format!("{verb}-holds"),
            hold_words,
            format!(
                "{r300:.1} Mops at 300 = {:.1} % of peak {peak:.1}",
                pct(r300, peak)
            ),
            r300 >= 0.95 * peak,
        ));
        out.push(claim(
            format!("{verb}-cliff"),
            cliff_words,
            format!("{r600:.1} Mops at 600 = {:.1} % of peak", pct(r600, peak)),
            r600 <= 0.5 * peak,
        ));
    }
    out
}

fn evaluate_fcfs(o: &Outputs) -> anyhow::Result<Evaluation> {
    let w = o.curve(0, &[("perf.test", "write-bw")], "msg_rate_mops")?;
    let rd = o.curve(0, &[("perf.test", "read-bw")], "msg_rate_mops")?;
    let claims = eval_fcfs(&w, &rd);
    let figures = vec![Figure::line(
        "fcfs",
        "First-come-first-served, 300-entry QPC cache, 64 B: message rate (Fig. 1b)",
        "QPs",
        "message rate (Mops)",
        vec![("FCFS WRITE".into(), w), ("FCFS READ".into(), rd)],
        true,
    )];
    Ok(Evaluation::new(claims, figures))
}
