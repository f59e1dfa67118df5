//! Figures: plots shaped like a paper's, their data as long-form CSV, and the PNG/SVG files.
//!
//! An evaluator draws its figures from the same curves its claims read, so what the figure
//! shows is what was checked; these helpers keep that to one call per figure.

use super::curve::Curve;
use crate::sweep::plot::{self, PlotData, Series};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One figure: a plot written as `<stem>.png` and `<stem>.svg`.
#[derive(Debug, Clone)]
pub struct Figure {
    pub stem: String,
    pub plot: PlotData,
}

impl Figure {
    /// A line plot: one series per `(label, curve)`, linear y, log x when `x_log`.
    pub fn line(
        stem: impl Into<String>,
        title: &str,
        x_label: &str,
        y_label: &str,
        series: Vec<(String, Curve)>,
        x_log: bool,
    ) -> Figure {
        Figure {
            stem: stem.into(),
            plot: PlotData {
                title: title.to_string(),
                x_label: x_label.to_string(),
                y_label: y_label.to_string(),
                series: series
                    .into_iter()
                    .map(|(label, points)| Series { label, points })
                    .collect(),
                x_log,
                y_log: false,
                x_categories: None,
            },
        }
    }

    /// One series over named x positions (a table drawn as a plot, e.g. one value per RNIC).
    pub fn categories(
        stem: impl Into<String>,
        title: &str,
        x_label: &str,
        y_label: &str,
        label: &str,
        values: Vec<(String, f64)>,
    ) -> Figure {
        let (names, points) = values
            .into_iter()
            .enumerate()
            .map(|(i, (name, y))| (name, (i as f64, y)))
            .unzip();
        Figure {
            stem: stem.into(),
            plot: PlotData {
                title: title.to_string(),
                x_label: x_label.to_string(),
                y_label: y_label.to_string(),
                series: vec![Series {
                    label: label.to_string(),
                    points,
                }],
                x_log: false,
                y_log: false,
                x_categories: Some(names),
            },
        }
    }

    /// Nothing to draw: every series is empty.
    pub fn is_empty(&self) -> bool {
        self.plot.series.iter().all(|s| s.points.is_empty())
    }
}

/// The figures' data, long form: `figure,series,x,y`.
pub fn figures_csv(figures: &[Figure]) -> String {
    let mut s = String::from("figure,series,x,y\n");
    for f in figures {
        for series in &f.plot.series {
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
        write_file(&png, &plot::render_png(&f.plot)?)?;
        write_file(&svg, plot::render_svg(&f.plot)?.as_bytes())?;
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
        let c = Figure::categories("c", "t", "x", "y", "s", vec![("A".into(), 3.0)]);
        assert_eq!(c.plot.x_categories, Some(vec!["A".to_string()]));
        assert_eq!(c.plot.series[0].points, vec![(0.0, 3.0)]);
        assert!(Figure::line("e", "t", "x", "y", vec![], false).is_empty());
    }
}
