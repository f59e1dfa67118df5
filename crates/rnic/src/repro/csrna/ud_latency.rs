//! csrna-udlat (Fig. 1c): UD SEND latency with 1-byte messages vs QPs on the baseline RNIC
//! (first-come-first-served QPC manager, 300-entry cache): flat while the QPs fit the
//! cache, higher once they exceed it, each message then paying its QPC misses.

use super::CACHE;
use crate::repro::claim::{claim, missing, Claim, ClaimKind, ClaimSource};
use crate::repro::curve::Curve;
use crate::repro::{sweep_file, Evaluation, Experiment, Figure, Outputs};

/// csrna-udlat.
pub const EXPERIMENT: Experiment = Experiment {
    id: "csrna-udlat",
    title: "UD SEND latency (1 B) rises once the QPs exceed the QPC cache",
    figure: "Fig. 1c",
    sweeps: &[sweep_file!("csrna/ud-latency.toml")],
    runs_flows: false,
    claims: &[ClaimSource {
        id: "ud-rise",
        kind: ClaimKind::Prediction,
        source: UD_RISE,
    }],
    evaluate: evaluate_ud_latency,
};

const UD_RISE: &str = "§3 and Fig. 1c (measured there on ConnectX-5): the average latency of \
    UD SENDs of 1-byte messages, one direction, \"when the number of connections exceeds the \
    QPC cache capacity, the overall end-to-end latency starts to increase\", a QPC miss \
    costing \"a PCIe Round Trip Time\", \"around 500 nanoseconds\". Ours: flat (within \
    +0.1 us of the fewest QPs) while the QPs fit the 300-entry cache, and at least half a \
    PCIe RTT (+0.25 us) higher at every point from twice the cache on.";

/// Half the paper's PCIe round trip (§3: "around 500 nanoseconds"), µs: the least rise
/// past the cache that shows the misses.
pub const UD_RISE_US: f64 = 0.25;
/// How far the latency may move while the QPs fit the cache, µs (ours).
pub const UD_FLAT_US: f64 = 0.1;

/// Fig. 1c: `c` is the UD SEND latency (µs) vs QPs.
pub fn eval_ud_latency(c: &Curve) -> Vec<Claim> {
    let words = "UD SEND 1 B latency: flat while QPs <= the 300-entry cache (within +0.1 us), \
                 at least +0.25 us (half a PCIe RTT) from 600 QPs on";
    let Some(&(x0, base)) = c.first() else {
        return vec![missing("ud-rise", words, "no points")];
    };
    let inside: Vec<f64> = c.iter().filter(|p| p.0 <= CACHE).map(|p| p.1).collect();
    let past: Vec<(f64, f64)> = c.iter().copied().filter(|p| p.0 >= 2.0 * CACHE).collect();
    if inside.len() < 2 || past.is_empty() {
        return vec![missing(
            "ud-rise",
            words,
            "need two points up to 300 QPs and one from 600",
        )];
    }
    let flat = inside.iter().map(|y| y - base).fold(f64::MIN, f64::max);
    let rise = past.iter().map(|p| p.1 - base).fold(f64::MAX, f64::min);
    let last = past.last().map_or(0.0, |p| p.0);
    vec![claim(
        "ud-rise",
        words,
        format!(
            "{base:.2} us at {x0} QPs, at most {flat:+.2} us up to 300; at least {rise:+.2} us \
             from 600 to {last} QPs"
        ),
        flat <= UD_FLAT_US && rise >= UD_RISE_US,
    )]
}

fn evaluate_ud_latency(o: &Outputs) -> anyhow::Result<Evaluation> {
    let c = o.curve(0, &[], "latency_us.avg")?;
    let claims = eval_ud_latency(&c);
    let figures = vec![Figure::line(
        "ud-latency".to_string(),
        "UD SEND, 1 B: average latency vs QPs, 300-entry QPC cache (Fig. 1c)",
        "QPs",
        "latency (µs)",
        vec![("fcfs, qcap 300".into(), c)],
        true,
    )];
    Ok(Evaluation::new(claims, figures))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_claim_needs_both_the_flat_part_and_the_rise() {
        let pts = |v: &[(f64, f64)]| -> Curve { v.to_vec() };
        let good = pts(&[(1.0, 2.7), (300.0, 2.75), (600.0, 3.2), (3000.0, 3.3)]);
        assert!(eval_ud_latency(&good)[0].pass);
        let no_rise = pts(&[(1.0, 2.7), (300.0, 2.7), (600.0, 2.8), (3000.0, 3.3)]);
        assert!(!eval_ud_latency(&no_rise)[0].pass);
        let early = pts(&[(1.0, 2.7), (300.0, 3.0), (600.0, 3.2)]);
        assert!(!eval_ud_latency(&early)[0].pass);
        assert!(!eval_ud_latency(&pts(&[(600.0, 3.2)]))[0].pass);
    }
}
