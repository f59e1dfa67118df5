//! The sweep CSV: one row per point in grid order; the axis values, the point's `status`
//! (`ok`, `incomplete`, `refused`, `model_error`, `corrupt`) and `reason` (empty when ok), then every
//! scalar metric of [`PointResult::metrics`] (columns are the union over all points, in
//! first-seen order; a metric a point lacks is left empty). `wall_seconds` is left out so the
//! file is identical from run to run. The `csv` crate quotes cells that need it, so a reason
//! with commas or quotes stays one cell.
//!
//! The partial file written while a sweep runs ([`super::partial`]) and a shard's CSV
//! ([`super::shard`]) have the same columns after a leading `point` column.

use super::PointResult;
use super::{value_text, Point, Sweep};
use anyhow::Context as _;

/// The non-metric columns after the axes.
pub(super) const STATUS_COLUMNS: [&str; 2] = ["status", "reason"];

/// A result's metrics as (column, cell text).
pub(super) fn metric_cells(r: &PointResult) -> Vec<(String, String)> {
    r.metrics()
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect()
}

/// Adds the metric columns of `cells` that `columns` lacks; returns whether any was added.
pub(super) fn add_columns(columns: &mut Vec<String>, cells: &[(String, String)]) -> bool {
    let before = columns.len();
    for (k, _) in cells {
        if !columns.contains(k) {
            columns.push(k.clone());
        }
    }
    columns.len() != before
}

/// The header: the axes, status and reason, then the metric columns.
pub(super) fn header(sweep: &Sweep, columns: &[String]) -> Vec<String> {
    let mut h: Vec<String> = sweep.axes.iter().map(|a| a.key.clone()).collect();
    h.extend(STATUS_COLUMNS.iter().map(|s| s.to_string()));
    h.extend(columns.iter().cloned());
    h
}

/// One point's row under [`header`].
pub(super) fn row(
    p: &Point,
    r: &PointResult,
    cells: &[(String, String)],
    columns: &[String],
) -> Vec<String> {
    let mut row: Vec<String> = p.values.iter().map(value_text).collect();
    row.push(r.status().name().to_string());
    row.push(r.reason().to_string());
    for c in columns {
        row.push(
            cells
                .iter()
                .find(|(k, _)| k == c)
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
        );
    }
    row
}

/// The CSV of `results` in their order; `positions` adds the leading `point` column (the
/// 1-based grid position) of the partial and shard files.
pub(super) fn to_csv(
    sweep: &Sweep,
    results: &[(Point, PointResult)],
    positions: bool,
) -> anyhow::Result<String> {
    let per_point: Vec<Vec<(String, String)>> =
        results.iter().map(|(_, r)| metric_cells(r)).collect();
    let mut columns: Vec<String> = Vec::new();
    for m in &per_point {
        add_columns(&mut columns, m);
    }
    let mut w = csv::Writer::from_writer(Vec::new());
    let lead = |first: String, rest: Vec<String>| -> Vec<String> {
        if positions {
            std::iter::once(first).chain(rest).collect()
        } else {
            rest
        }
    };
    w.write_record(lead("point".to_string(), header(sweep, &columns)))
        .context("writing CSV header")?;
    for ((p, r), cells) in results.iter().zip(&per_point) {
        w.write_record(lead((p.index + 1).to_string(), row(p, r, cells, &columns)))
            .context("writing CSV row")?;
    }
    let bytes = w.into_inner().context("finishing CSV")?;
    String::from_utf8(bytes).context("CSV is not UTF-8")
}
