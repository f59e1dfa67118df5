//! `<name>.partial.csv`: each point's row, written and flushed the moment the point finishes,
//! so a sweep that is killed (or whose machine dies) keeps every finished point.
//!
//! Rows are in completion order, so they carry a leading `point` column (the 1-based grid
//! position, in a shard's partial file too); the other columns are those of the final CSV
//! ([`super::csv_out`]). The metric columns are only known as results arrive (cache names can
//! differ between points): when a result brings a new column, the file is rewritten from the
//! finished results with the wider header, so it is always one valid CSV. When the sweep
//! ends, the ordered `<name>.csv` (or the shard's files) is written and this file removed.

use super::csv_out::{add_columns, header, metric_cells, row};
use super::PointResult;
use super::{Point, Shard, Sweep};
use crate::OutputError;
use std::fs::File;
use std::path::{Path, PathBuf};

/// The partial CSV being written.
pub(super) struct PartialCsv {
    path: PathBuf,
    writer: Option<csv::Writer<File>>,
    columns: Vec<String>,
    /// Grid indices of the rows written, in completion order.
    order: Vec<usize>,
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> OutputError {
    OutputError(format!(
        "cannot write the partial results {}: {e}",
        path.display()
    ))
}

impl PartialCsv {
    /// A partial file at `path`; nothing is created until the first row.
    pub(super) fn new(path: PathBuf) -> PartialCsv {
        PartialCsv {
            path,
            writer: None,
            columns: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Appends the row of `slots[index]` (which must be finished) and flushes it to disk.
    pub(super) fn push(
        &mut self,
        sweep: &Sweep,
        slots: &[Option<(Point, PointResult)>],
        index: usize,
    ) -> Result<(), OutputError> {
        let Some((p, r)) = &slots[index] else {
            return Ok(());
        };
        self.order.push(index);
        let cells = metric_cells(r);
        let widened = add_columns(&mut self.columns, &cells);
        if widened || self.writer.is_none() {
            return self.rewrite(sweep, slots);
        }
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| io_error(&self.path, "not open"))?;
        let mut rec = vec![(p.index + 1).to_string()];
        rec.extend(row(p, r, &cells, &self.columns));
        w.write_record(&rec).map_err(|e| io_error(&self.path, e))?;
        w.flush().map_err(|e| io_error(&self.path, e))
    }

    /// Writes the file anew: the header with every column seen, then every finished row.
    fn rewrite(
        &mut self,
        sweep: &Sweep,
        slots: &[Option<(Point, PointResult)>],
    ) -> Result<(), OutputError> {
        let file = File::create(&self.path).map_err(|e| io_error(&self.path, e))?;
        let mut w = csv::Writer::from_writer(file);
        let mut head = vec!["point".to_string()];
        head.extend(header(sweep, &self.columns));
        w.write_record(&head).map_err(|e| io_error(&self.path, e))?;
        for &i in &self.order {
            if let Some((p, r)) = &slots[i] {
                let mut rec = vec![(p.index + 1).to_string()];
                rec.extend(row(p, r, &metric_cells(r), &self.columns));
                w.write_record(&rec).map_err(|e| io_error(&self.path, e))?;
            }
        }
        w.flush().map_err(|e| io_error(&self.path, e))?;
        self.writer = Some(w);
        Ok(())
    }

    /// Closes the file and removes it (the ordered CSV now holds every row).
    pub(super) fn remove(mut self) -> Result<(), OutputError> {
        if let Some(mut w) = self.writer.take() {
            let _ = w.flush();
        }
        crate::output::remove_file(&self.path)
    }
}

/// The partial file of `sweep` (or of one of its shards) in `dir`.
pub(super) fn path(sweep: &Sweep, dir: &Path, shard: Option<Shard>) -> PathBuf {
    dir.join(format!(
        "{}.partial.csv",
        super::shard::stem(&sweep.name, shard)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::PerfResult;

    #[test]
    fn rows_stream_in_completion_order_and_new_columns_rewrite_the_file() {
        let sw = super::super::parse_sweep(
            "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.size\"\nvalues = [64, 128, 256]",
            "p.toml",
        )
        .unwrap();
        let dir = std::env::temp_dir().join(format!("rnic-partial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut slots: Vec<Option<(Point, PointResult)>> = vec![None; 3];
        let pts = sw.points();
        let mut part = PartialCsv::new(path(&sw, &dir, None));
        let fill = |slots: &mut Vec<Option<(Point, PointResult)>>, i: usize, cache: bool| {
            let mut r = PerfResult {
                size_bytes: 64 << i,
                reason: if i == 2 {
                    "a, \"b\"".into()
                } else {
                    String::new()
                },
                ..Default::default()
            };
            if cache {
                r.caches.insert("qpc".into(), Default::default());
            }
            slots[i] = Some((pts[i].clone(), r.into()));
        };
        fill(&mut slots, 2, false);
        part.push(&sw, &slots, 2).unwrap();
        fill(&mut slots, 0, false);
        part.push(&sw, &slots, 0).unwrap();
        let text = std::fs::read_to_string(path(&sw, &dir, None)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("point,perf.size,status,reason,size_bytes,"));
        assert!(
            lines[1].starts_with("3,256,ok,\"a, \"\"b\"\"\",256,"),
            "{text}"
        );
        assert!(lines[2].starts_with("1,64,ok,,64,"), "{text}");
        // A new column (a cache) rewrites the file with the wider header.
        fill(&mut slots, 1, true);
        part.push(&sw, &slots, 1).unwrap();
        let text = std::fs::read_to_string(path(&sw, &dir, None)).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().next().unwrap().contains("caches.qpc.hits"));
        assert!(text.lines().nth(3).unwrap().starts_with("2,128,ok,"));
        let p = path(&sw, &dir, None);
        part.remove().unwrap();
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
