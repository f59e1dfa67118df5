//! The sweep CSV: one row per point in grid order; the axis values, then every scalar metric
//! of [`PerfResult::metrics`] (columns are the union over all points, in first-seen order;
//! a metric a point lacks is left empty). `wall_seconds` is left out so the file is
//! identical from run to run.

use super::{value_text, Point, Sweep};
use crate::report::PerfResult;
use anyhow::Context as _;

pub(super) fn to_csv(sweep: &Sweep, results: &[(Point, PerfResult)]) -> anyhow::Result<String> {
    let per_point: Vec<Vec<(String, String)>> = results
        .iter()
        .map(|(_, r)| {
            r.metrics()
                .into_iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect()
        })
        .collect();
    let mut columns: Vec<String> = Vec::new();
    for m in &per_point {
        for (k, _) in m {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header: Vec<String> = sweep.axes.iter().map(|a| a.key.clone()).collect();
    header.extend(columns.iter().cloned());
    w.write_record(&header).context("writing CSV header")?;
    for ((p, _), metrics) in results.iter().zip(&per_point) {
        let mut row: Vec<String> = p.values.iter().map(value_text).collect();
        for c in &columns {
            row.push(
                metrics
                    .iter()
                    .find(|(k, _)| k == c)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
            );
        }
        w.write_record(&row).context("writing CSV row")?;
    }
    let bytes = w.into_inner().context("finishing CSV")?;
    String::from_utf8(bytes).context("CSV is not UTF-8")
}
