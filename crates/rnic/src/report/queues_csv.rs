//! The traces beside the JSON (`net.trace_interval_us`; paths: [`SideFile`]): `x.json` gives `x-queues.csv`,
//! one line per switch output port and NIC per sample, and, with `net.cc = "dcqcn"`,
//! `x-rates.csv`, one line per QP with DCQCN state per sample.

use std::path::Path;

use crate::report::side_files::SideFile;

use rnic_model::net::queue_trace::QueueTrace;
use rnic_model::nic::mech::cc::rate_trace::RateTrace;
use rnic_model::params::trace::TRACE_ROW_BUDGET;

/// Writes the traces there are beside `json`.
pub fn write(
    queues: Option<&QueueTrace>,
    rates: Option<&RateTrace>,
    json: &Path,
) -> anyhow::Result<()> {
    if let Some(t) = queues {
        crate::report::json::write_file(&SideFile::Queues.beside(json), t.to_csv().as_bytes())?;
    }
    if let Some(t) = rates {
        crate::report::json::write_file(&SideFile::Rates.beside(json), t.to_csv().as_bytes())?;
    }
    Ok(())
}

/// A warning for each trace that stopped at its share of the row budget before the run
/// ended: the CSV covers less time than the run, and a longer interval covers more.
pub fn cut_warnings(queues: Option<&QueueTrace>, rates: Option<&RateTrace>) -> Vec<String> {
    let queue = queues
        .filter(|t| t.cut)
        .map(|t| cut_warning("queue", t.samples as u64, t.interval_ps));
    let rate = rates.and_then(|t| Some(cut_warning("rate", t.cut_at?, t.interval_ps)));
    queue.into_iter().chain(rate).collect()
}

fn cut_warning(trace: &str, samples: u64, interval_ps: u64) -> String {
    let last_us = samples.saturating_sub(1) as f64 * interval_ps as f64 / 1e6;
    format!(
        "rnic: warning: the {trace} trace stops at {last_us} µs after {samples} samples, before \
         the run's end: a trace holds at most {TRACE_ROW_BUDGET} rows (a row per port, NIC \
         or QP per sample); raise net.trace_interval_us to cover the whole run"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_cut_trace_is_warned_of_naming_the_interval_field() {
        let mut q = QueueTrace {
            interval_ps: 2_000_000,
            samples: 3,
            ..QueueTrace::default()
        };
        assert!(cut_warnings(Some(&q), None).is_empty());
        q.cut = true;
        let w = cut_warnings(Some(&q), None);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("queue trace stops at 4 µs after 3 samples"),
            "{}",
            w[0]
        );
        assert!(w[0].contains("net.trace_interval_us"), "{}", w[0]);
        let r = RateTrace {
            interval_ps: 1_000_000,
            rows: Vec::new(),
            cut_at: Some(5),
        };
        assert!(cut_warnings(None, Some(&r))[0].contains("rate trace stops at 4 µs"));
    }
}
