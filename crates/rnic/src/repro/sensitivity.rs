//! `rnic repro ID --sensitivity`: how fragile is each verdict?
//!
//! A verdict is only as firm as the parameters under it that the paper does not state and
//! rnic had to choose. Each experiment declares them here ([`UNSTATED`]); the flag reruns the
//! experiment with each of them at −20 % and +20 % (one at a time, the rest as they are,
//! through [`Perturbation`]) and gives every claim a column: `robust`, or each parameter and
//! value at which its verdict flips. No paper reports this; it is what a reader of a
//! reproduction needs to judge a pass or a miss. It multiplies the run time by up to twice
//! the number of parameters, so it is asked for, never the default.

use super::claim::Claim;
use super::run::{parse, rewrite_claims, run, run_sweeps, ReproOptions, ReproOutcome};
use super::Experiment;
use crate::model::config::perturb::Perturbation;
use crate::perf::PerfRunner;
use crate::sweep::Sweep;
use std::io::Write;

/// A parameter an experiment depends on that its paper does not state.
#[derive(Debug, Clone, Copy)]
pub struct Unstated {
    /// The configuration field (`--set` key).
    pub key: &'static str,
    /// Why it matters here and what the paper leaves open.
    pub why: &'static str,
}

/// The factors each parameter is run at: −20 % and +20 % (integers and exponents move to
/// their nearest other value, see [`crate::model::config::perturb::scaled`]).
pub const FACTORS: [f64; 2] = [0.8, 1.2];

const MEM_LATENCY: Unstated = Unstated {
    key: "host.mem_latency_ns",
    why: "host memory's latency to a polling core and to the NIC's writes; no paper states it",
};
const WQES_PER_FETCH: Unstated = Unstated {
    key: "nic.wqes_per_fetch",
    why: "WQEs the descriptor unit reads per visit; the papers state no fetch size",
};
const RX_PKT: Unstated = Unstated {
    key: "nic.rx_pkt_cycles",
    why: "the receive pipeline's cycles per packet; the csRNA paper states the clock only",
};
const TX_PKT: Unstated = Unstated {
    key: "nic.tx_pkt_cycles",
    why: "the transmit pipeline's cycles per packet; no paper states it",
};
const DDR_LATENCY: Unstated = Unstated {
    key: "ddr.latency_ns",
    why: "the on-board DDR's access latency; the csRNA paper states none",
};
const BS_FIFO: Unstated = Unstated {
    key: "nic.iso_bs_fifo_depth",
    why: "the BS WQE FIFO's depth: the slides say \"e.g. depth = 2\", not what was measured",
};
const WQE_PREP: Unstated = Unstated {
    key: "host.wqe_prep_ns",
    why: "the time to prepare a WQE: \"at least several hundreds of nanoseconds\"",
};
const CORES: Unstated = Unstated {
    key: "host.cores",
    why: "host cores posting work: rnic's choice, the prefetching paper states none",
};
const PREFETCH_WINDOW: Unstated = Unstated {
    key: "nic.prefetch_window",
    why: "the profile's window, derived by rnic from the paper's condition with n = 4",
};
const TIMEOUT: Unstated = Unstated {
    key: "qp.timeout",
    why: "the local ACK timeout (exponent: 4.096 us x 2^n, moved by one); no paper states it",
};
const ACK_TURN: Unstated = Unstated {
    key: "ooo.ack_turn_ns",
    why: "ORNIC's register-scheduler turn between a QP's ACKs; the paper states none",
};
const LEFT_THRESHOLD: Unstated = Unstated {
    key: "ooo.left_cache_threshold_blocks",
    why: "blocks a LEFT walk reads before its cache engages: rnic's 2, the paper states none",
};
const ACCEL_BUFFER: Unstated = Unstated {
    key: "net.wan_accel_buffer_bytes",
    why: "the accelerator's resend buffer; the paper states none",
};

/// Each experiment's unstated parameters, by id: every registered experiment has an entry
/// (a test checks it), empty for the computations, which take the paper's inputs only.
pub const UNSTATED: &[(&str, &[Unstated])] = &[
    ("csrna-peak", &[MEM_LATENCY, WQES_PER_FETCH, RX_PKT]),
    ("csrna-fcfs", &[MEM_LATENCY, WQES_PER_FETCH, RX_PKT]),
    ("csrna-latency", &[MEM_LATENCY, WQES_PER_FETCH, RX_PKT]),
    ("csrna-ooocap", &[MEM_LATENCY, WQES_PER_FETCH, RX_PKT]),
    (
        "csrna-placement",
        &[MEM_LATENCY, WQES_PER_FETCH, RX_PKT, DDR_LATENCY],
    ),
    ("csrna-memory", &[]),
    ("csrna-udlat", &[MEM_LATENCY, RX_PKT]),
    ("isolation-ls-alone", &[BS_FIFO, TX_PKT, MEM_LATENCY]),
    ("isolation-ls-bs", &[BS_FIFO, TX_PKT, MEM_LATENCY]),
    ("isolation-depth-map", &[BS_FIFO, TX_PKT, MEM_LATENCY]),
    ("isolation-bs-bs", &[BS_FIFO, TX_PKT]),
    ("isolation-backpressure", &[BS_FIFO, TX_PKT]),
    ("isolation-linerate", &[BS_FIFO, TX_PKT]),
    (
        "prefetch-scale",
        &[
            WQE_PREP,
            WQES_PER_FETCH,
            MEM_LATENCY,
            CORES,
            PREFETCH_WINDOW,
        ],
    ),
    (
        "prefetch-window",
        &[WQE_PREP, WQES_PER_FETCH, MEM_LATENCY, CORES],
    ),
    (
        "prefetch-memory",
        &[
            WQE_PREP,
            WQES_PER_FETCH,
            MEM_LATENCY,
            CORES,
            PREFETCH_WINDOW,
        ],
    ),
    ("prefetch-light", &[WQE_PREP, WQES_PER_FETCH, MEM_LATENCY]),
    ("wan-standard", &[TX_PKT, MEM_LATENCY]),
    ("wan-qd", &[TX_PKT, MEM_LATENCY]),
    ("wan-apn", &[TX_PKT, MEM_LATENCY]),
    ("wan-accel", &[TX_PKT, MEM_LATENCY]),
    ("wan-loss", &[TIMEOUT, ACCEL_BUFFER]),
    ("ornic-sizing", &[]),
    ("ornic-bitmap-cycles", &[LEFT_THRESHOLD]),
    ("ornic-bitmap-blocks", &[LEFT_THRESHOLD]),
    ("ornic-throughput", &[ACK_TURN, MEM_LATENCY, TX_PKT]),
    ("ornic-vs-gbn", &[TIMEOUT, ACK_TURN, MEM_LATENCY]),
    ("ornic-vs-gbn-paths", &[TIMEOUT, ACK_TURN, MEM_LATENCY]),
    ("ornic-acks", &[]),
    // DCQCN's and the marker's parameters are the published defaults their fields cite; the
    // thresholds each experiment sets (PFC level, Kmin, Kmax) are stated in its claims.
    ("dcqcn-two-flows", &[]),
    ("dcqcn-incast", &[]),
    // The fat-tree's setup (load, buffer, link delay, marking) is the paper's, stated in the
    // claims; the NIC's and host's parameters leave a flow's time in the network's queues.
    ("dcqcn-fct-websearch", &[]),
];

/// The unstated parameters of experiment `id` (empty when it declares none).
pub fn unstated(id: &str) -> &'static [Unstated] {
    UNSTATED
        .iter()
        .find(|(e, _)| *e == id)
        .map_or(&[], |(_, u)| *u)
}

/// One rerun: a parameter at a factor, the values it took and the verdicts it gave.
#[derive(Debug, Clone)]
pub struct Rerun {
    pub key: &'static str,
    pub factor: f64,
    /// `old -> new`, each distinct change once (empty: no config of the run had it set).
    pub changes: Vec<(String, String)>,
    /// The claims' verdicts (claim id, pass); `None` when the rerun did not reach its claims.
    pub verdicts: Option<Vec<(String, bool)>>,
}

impl Rerun {
    /// `key 300 -> 240 (-20 %)`.
    fn label(&self) -> String {
        let values: Vec<String> = self
            .changes
            .iter()
            .map(|(a, b)| format!("{a} -> {b}"))
            .collect();
        let pct = (self.factor - 1.0) * 100.0;
        format!("{} {} ({pct:+.0} %)", self.key, values.join(", "))
    }
}

/// The sensitivity cell of claim `c` given the reruns: `robust (N runs)`, the reruns at which
/// its verdict flips, and those that did not reach the claims.
pub fn cell(c: &Claim, reruns: &[Rerun]) -> String {
    if reruns.is_empty() {
        return "no unstated parameter".to_string();
    }
    let mut flips = Vec::new();
    let mut unjudged = Vec::new();
    for r in reruns {
        match &r.verdicts {
            None => unjudged.push(r.label()),
            Some(v) => match v.iter().find(|(id, _)| *id == c.id) {
                Some((_, pass)) if *pass != c.pass => flips.push(r.label()),
                Some(_) => {}
                None => unjudged.push(r.label()),
            },
        }
    }
    let mut parts = Vec::new();
    if !flips.is_empty() {
        parts.push(format!("flips at {}", flips.join("; ")));
    }
    if !unjudged.is_empty() {
        parts.push(format!("not judged at {}", unjudged.join("; ")));
    }
    if parts.is_empty() {
        format!(
            "robust ({} parameter(s) at -20 % and +20 %)",
            reruns.len() / 2
        )
    } else {
        parts.join("; ")
    }
}

/// The notes' paragraph: each parameter, why, and the values each rerun took.
fn notes(e: &Experiment, reruns: &[Rerun]) -> String {
    let mut s = format!(
        "sensitivity: {} parameter(s) the paper does not state, each at -20 % and +20 %:\n",
        unstated(e.id).len()
    );
    for u in unstated(e.id) {
        s.push_str(&format!("  {}: {}\n", u.key, u.why));
    }
    for r in reruns {
        let verdict = match &r.verdicts {
            None => "did not reach its claims".to_string(),
            Some(v) => format!(
                "{} of {} claims pass",
                v.iter().filter(|x| x.1).count(),
                v.len()
            ),
        };
        let what = if r.changes.is_empty() {
            format!("{} unset in every config", r.key)
        } else {
            r.label()
        };
        s.push_str(&format!("  {what}: {verdict}\n"));
    }
    s
}

/// Runs `e` as `rnic repro` does, then reruns it at each of `params` and factor in `factors`
/// (the committed sweeps, or the suite's reduced copies of them, `sweeps`), each into
/// `<out>/<id>/sensitivity/<key>x<factor>/`, and adds the sensitivity column and notes.
pub fn run_sweeps_with_sensitivity(
    e: &Experiment,
    sweeps: Vec<Sweep>,
    params: &[Unstated],
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    log: &mut dyn Write,
) -> anyhow::Result<ReproOutcome> {
    let names: Vec<String> = sweeps.iter().map(|s| s.name.clone()).collect();
    let mut o = run_sweeps(e, sweeps.clone(), runner, opts, log)?;
    let mut reruns = Vec::new();
    for u in params {
        for factor in FACTORS {
            let sub = ReproOptions {
                out_dir: opts
                    .out_dir
                    .join(e.id)
                    .join("sensitivity")
                    .join(format!("{}x{factor}", u.key)),
                progress: false,
                ..opts.clone()
            };
            writeln!(log, "rnic: {} with {} x {factor}", e.id, u.key)?;
            let p = Perturbation::new(u.key, factor)?;
            let r = run_sweeps(e, sweeps.clone(), runner, &sub, log);
            let changes = p.changes();
            drop(p);
            let r = r?;
            let verdicts = (r.judged && r.status == crate::report::RunStatus::Ok).then(|| {
                r.evaluation
                    .claims
                    .iter()
                    .map(|c| (c.id.clone(), c.pass))
                    .collect()
            });
            reruns.push(Rerun {
                key: u.key,
                factor,
                changes,
                verdicts,
            });
        }
    }
    for c in &mut o.evaluation.claims {
        c.sensitivity = Some(cell(c, &reruns));
    }
    o.evaluation.notes.push_str(&notes(e, &reruns));
    rewrite_claims(e, &o, &names, opts)?;
    Ok(o)
}

/// [`run_sweeps_with_sensitivity`] on the experiment's committed sweeps and its declared
/// parameters ([`UNSTATED`]).
pub fn run_with_sensitivity(
    e: &Experiment,
    runner: &dyn PerfRunner,
    opts: &ReproOptions,
    log: &mut dyn Write,
) -> anyhow::Result<ReproOutcome> {
    let params = unstated(e.id);
    if params.is_empty() {
        let mut o = run(e, runner, opts, log)?;
        for c in &mut o.evaluation.claims {
            c.sensitivity = Some(cell(c, &[]));
        }
        let names: Vec<String> = parse(e)?.iter().map(|s| s.name.clone()).collect();
        rewrite_claims(e, &o, &names, opts)?;
        return Ok(o);
    }
    run_sweeps_with_sensitivity(e, parse(e)?, params, runner, opts, log)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::perturb::numeric_field;
    use crate::repro::claim::claim;

    #[test]
    fn every_experiment_declares_numeric_fields() {
        let ids = crate::repro::ids();
        let declared: Vec<&str> = UNSTATED.iter().map(|(id, _)| *id).collect();
        assert_eq!(
            declared, ids,
            "UNSTATED lists every experiment in registry order"
        );
        for (id, params) in UNSTATED {
            for u in *params {
                numeric_field(u.key).unwrap_or_else(|e| panic!("{id}: {e}"));
            }
        }
    }

    fn rerun(factor: f64, pass: Option<bool>) -> Rerun {
        Rerun {
            key: "host.wqe_prep_ns",
            factor,
            changes: vec![("300.0".into(), format!("{}", 300.0 * factor))],
            verdicts: pass.map(|p| vec![("c".to_string(), p)]),
        }
    }

    #[test]
    fn the_cell_names_the_flip_or_says_robust() {
        let c = claim("c", "p", "o".into(), true);
        let robust = cell(&c, &[rerun(0.8, Some(true)), rerun(1.2, Some(true))]);
        assert_eq!(robust, "robust (1 parameter(s) at -20 % and +20 %)");
        let flip = cell(&c, &[rerun(0.8, Some(true)), rerun(1.2, Some(false))]);
        assert_eq!(flip, "flips at host.wqe_prep_ns 300.0 -> 360 (+20 %)");
        let broken = cell(&c, &[rerun(0.8, None), rerun(1.2, Some(true))]);
        assert!(
            broken.starts_with("not judged at host.wqe_prep_ns"),
            "{broken}"
        );
        assert_eq!(cell(&c, &[]), "no unstated parameter");
    }
}
