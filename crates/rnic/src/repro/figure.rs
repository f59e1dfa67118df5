//! Figures: plots shaped like a paper's, their data as long-form CSV, and the PNG/SVG files.
//!
//! An evaluator draws its figures from the same curves its claims read, so what the figure
//! shows is what was checked; these helpers keep that to one call per figure.

use super::curve::Curve;
use crate::sweep::plot::table::TableData;
use crate::sweep::plot::{self, PlotData, Scale, Series};
use rnic_model::quantity::Quantity;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One figure: a plot or a table, written as `<stem>.png` and `<stem>.svg`.
#[derive(Debug, Clone)]
pub struct Figure {
    pub stem: String,
    pub content: Content,
}

/// What a figure draws.
#[derive(Debug, Clone)]
pub enum Content {
    Plot(PlotData),
    /// A table of numbers, for experiments that compute rather than run.
    Table(TableData),
}

impl Figure {
    /// A line plot: one series per `(label, curve)`. Axes are quantities (a
    /// [`Quantity::of_metric`] or [`Quantity::of_axis`] entry, or a "name (unit)" label).
    /// `x_log` declares the log x axis of the paper's figure; without it, and for y, the
    /// data decides ([`Scale::Auto`]); [`Figure::y_log`] declares a log y axis.
    pub fn line(
        stem: impl Into<String>,
        title: &str,
        x: impl Into<Quantity>,
        y: impl Into<Quantity>,
        series: Vec<(String, Curve)>,
        x_log: bool,
    ) -> Figure {
        Figure {
            stem: stem.into(),
            content: Content::Plot(PlotData {
                title: title.to_string(),
                subtitle: None,
                x: x.into(),
                y: y.into(),
                series: series
                    .into_iter()
                    .map(|(label, points)| Series { label, points })
                    .collect(),
                x_scale: if x_log { Scale::Log } else { Scale::Auto },
                y_scale: Scale::Auto,
                x_categories: None,
            }),
        }
    }

    /// The paper's figure has a log y axis.
    pub fn y_log(mut self) -> Figure {
        if let Content::Plot(p) = &mut self.content {
            p.y_scale = Scale::Log;
        }
        self
    }

    /// Bars over named x positions (a table drawn as a plot, e.g. one value per RNIC): one
    /// series per `(label, values)`, a value per name.
    pub fn categories(
        stem: impl Into<String>,
        title: &str,
        x: impl Into<Quantity>,
        y: impl Into<Quantity>,
        names: Vec<String>,
        series: Vec<(String, Vec<f64>)>,
    ) -> Figure {
        let series = series
            .into_iter()
            .map(|(label, ys)| Series {
                label,
                points: ys
                    .into_iter()
                    .enumerate()
                    .map(|(i, y)| (i as f64, y))
                    .collect(),
            })
            .collect();
        Figure {
            stem: stem.into(),
            content: Content::Plot(PlotData {
                title: title.to_string(),
                subtitle: None,
                x: x.into(),
                y: y.into(),
                series,
                x_scale: Scale::Linear,
                y_scale: Scale::Auto,
                x_categories: Some(names),
            }),
        }
    }

    /// A table: a header and rows of cells (names first, numbers after).
    pub fn table(
        stem: impl Into<String>,
        title: &str,
        header: &[&str],
        rows: Vec<Vec<String>>,
    ) -> Figure {
        Figure {
            stem: stem.into(),
            content: Content::Table(TableData {
                title: title.to_string(),
                header: header.iter().map(|h| h.to_string()).collect(),
                rows,
            }),
        }
    }

    /// The plot, when the figure is one.
    pub fn plot(&self) -> Option<&PlotData> {
        match &self.content {
            Content::Plot(p) => Some(p),
            Content::Table(_) => None,
        }
    }

    /// Nothing to draw: every series is empty, or the table has no row.
    pub fn is_empty(&self) -> bool {
        match &self.content {
            Content::Plot(p) => p.series.iter().all(|s| s.points.is_empty()),
            Content::Table(t) => t.rows.is_empty(),
        }
    }
}

/// The figures' data, long form: `figure,series,x,y` (a table's data is the experiment's own
/// CSV).
pub fn figures_csv(figures: &[Figure]) -> String {
    let mut s = String::from("figure,series,x,y\n");
    for f in figures {
        let Some(p) = f.plot() else { continue };
        for series in &p.series {
            for (x, y) in &series.points {
                let _ = writeln!(s, "{},{},{x},{y}", f.stem, series.label);
            }
        }
    }
    s
}

/// Writes `<stem>.png` and `<stem>.svg` of every figure that has points into `dir`; returns
/// the files written.
pub fn write_figures(dir: &Path, figures: &[Figure]) -> anyhow::Result<Vec<PathBuf>> {
    use crate::report::json::write_file;
    let mut files = Vec::new();
    for f in figures.iter().filter(|f| !f.is_empty()) {
        let png = dir.join(format!("{}.png", f.stem));
        let svg = dir.join(format!("{}.svg", f.stem));
        let (png_bytes, svg_text) = match &f.content {
            Content::Plot(p) => (plot::render_png(p)?, plot::render_svg(p)?),
            Content::Table(t) => (plot::render_png(t)?, plot::render_svg(t)?),
        };
        write_file(&png, &png_bytes)?;
        write_file(&svg, svg_text.as_bytes())?;
        files.push(png);
        files.push(svg);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_is_long_form() {
        let f = Figure::line(
            "f",
            "t",
            "x",
            "y",
            vec![("a".into(), vec![(1.0, 2.5)])],
            true,
        );
        assert_eq!(figures_csv(&[f]), "figure,series,x,y\nf,a,1,2.5\n");
        let c = Figure::categories(
            "c",
            "t",
            "x",
            "y",
            vec!["A".into()],
            vec![("s".into(), vec![3.0])],
        );
        let p = c.plot().unwrap();
        assert_eq!(p.x_categories, Some(vec!["A".to_string()]));
        assert_eq!(p.series[0].points, vec![(0.0, 3.0)]);
        assert!(Figure::line("e", "t", "x", "y", vec![], false).is_empty());
    }
}
