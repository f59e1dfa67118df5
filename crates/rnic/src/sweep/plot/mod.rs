//! Plots of sweep results and reproductions with plotters, as PNG (encoded by the `png` crate
//! from an RGB buffer) and SVG. Text uses DejaVu Sans embedded in the binary
//! (assets/DejaVuSans.ttf), so plots need no system fonts and are byte-identical everywhere.
//!
//! Every axis is titled with a name and a unit from [`rnic_model::quantity`], never a raw
//! key; its scale and ticks follow [`axis`]'s rules; series differ in colour, marker and
//! line style, named in a legend beside the plot area ([`style`]); a table of numbers is a
//! figure of its own ([`table`]).

pub mod axis;
pub mod style;
pub mod table;
#[cfg(test)]
mod tests;

pub use axis::Scale;

use super::{value_text, Point, Sweep};
use crate::sweep::PointResult;
use anyhow::anyhow;
use axis::Axis;
use plotters::backend::RGBPixel;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use rnic_model::quantity::{Quantity, Unit};
use std::collections::BTreeMap;
use toml::Value;

/// DejaVu Sans 2.37 (Bitstream Vera license, see assets/README.md).
static FONT: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../assets/DejaVuSans.ttf"
));

/// Font family name the plots use.
const FAMILY: &str = "sans-serif";

/// Plot size in pixels.
pub const WIDTH: u32 = 1024;
pub const HEIGHT: u32 = 640;

/// Room above the title.
const TOP_MARGIN_PX: u32 = 8;

fn ensure_font() -> anyhow::Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(anyhow!("the embedded plot font could not be loaded"))
    }
}

/// One line (or, over categories, one bar per category).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// (x, y), sorted by x.
    pub points: Vec<(f64, f64)>,
}

/// Everything a plot shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotData {
    pub title: String,
    /// A second, smaller title line (a sweep's own title).
    pub subtitle: Option<String>,
    pub x: Quantity,
    pub y: Quantity,
    pub series: Vec<Series>,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Names of categorical x positions 0, 1, ... (x values that are not numbers); drawn as
    /// bars.
    pub x_categories: Option<Vec<String>>,
}

/// A metric name usable in a file name.
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// An axis value as a legend shows it: "4 KB", "300 entries", "fcfs".
fn value_with_unit(q: &Quantity, v: &Value) -> String {
    match (as_number(v), &q.unit) {
        (Some(n), Unit::Bytes) => axis::bytes_text(n),
        (Some(_), Unit::Named(u)) => format!("{} {u}", value_text(v)),
        _ => value_text(v),
    }
}

/// `s` with its first letter in upper case, unless its first word holds a digit ("p99").
fn capitalized(s: &str) -> String {
    let first_word = s.split(' ').next().unwrap_or_default();
    if first_word.chars().any(|c| c.is_ascii_digit()) {
        return s.to_string();
    }
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Groups results into lines: x from the sweep's x axis, one line per combination of the
/// other axes (the series axis first in labels and order). Points that did not end `ok` are
/// left out: their figures are partial or untrustworthy (the CSV flags them). The title
/// names the metric and the x axis; the sweep's title is the subtitle.
pub fn plot_data(sweep: &Sweep, results: &[(Point, PointResult)], metric: &str) -> PlotData {
    let x_axis = &sweep.axes[sweep.x];
    let numeric = x_axis.values.iter().all(|v| as_number(v).is_some());
    let mut others: Vec<usize> = (0..sweep.axes.len()).filter(|&i| i != sweep.x).collect();
    if let Some(s) = sweep.series {
        others.retain(|&i| i != s);
        others.insert(0, s);
    }
    let (x, y) = (Quantity::of_axis(&x_axis.key), Quantity::of_metric(metric));
    let mut groups: BTreeMap<Vec<usize>, Series> = BTreeMap::new();
    for (p, r) in results {
        if r.status() != crate::report::RunStatus::Ok {
            continue;
        }
        let key: Vec<usize> = others
            .iter()
            .map(|&a| {
                sweep.axes[a]
                    .values
                    .iter()
                    .position(|v| v == &p.values[a])
                    .unwrap_or(0)
            })
            .collect();
        let label = if others.is_empty() {
            y.name.clone()
        } else {
            others
                .iter()
                .map(|&a| {
                    let q = Quantity::of_axis(&sweep.axes[a].key);
                    format!("{} = {}", q.name, value_with_unit(&q, &p.values[a]))
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let series = groups.entry(key).or_insert_with(|| Series {
            label,
            points: Vec::new(),
        });
        let xv = &p.values[sweep.x];
        let xf = if numeric {
            as_number(xv).unwrap_or(f64::NAN)
        } else {
            x_axis.values.iter().position(|v| v == xv).unwrap_or(0) as f64
        };
        let Some(yf) = r.metric(metric).map(|m| m.as_f64()) else {
            continue;
        };
        let usable = xf.is_finite()
            && yf.is_finite()
            && (sweep.y_scale != Scale::Log || yf > 0.0)
            && (sweep.x_scale != Scale::Log || xf > 0.0);
        if usable {
            series.points.push((xf, yf));
        }
    }
    let mut series: Vec<Series> = groups.into_values().collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    PlotData {
        title: format!("{} vs {}", capitalized(&y.name), x.name),
        subtitle: Some(sweep.title.clone().unwrap_or_else(|| sweep.name.clone())),
        x,
        y,
        series,
        x_scale: sweep.x_scale,
        y_scale: sweep.y_scale,
        x_categories: (!numeric).then(|| x_axis.values.iter().map(value_text).collect()),
    }
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

impl PlotData {
    fn values(&self, pick: fn(&(f64, f64)) -> f64) -> Vec<f64> {
        self.series
            .iter()
            .flat_map(|s| s.points.iter().map(pick))
            .collect()
    }

    /// The x and y axes as drawn.
    pub fn axes(&self) -> (Axis, Axis) {
        let x = match &self.x_categories {
            Some(names) => Axis::categories(&self.x, names),
            None => Axis::numeric(&self.x, &self.values(|p| p.0), self.x_scale, false),
        };
        let y = Axis::numeric(&self.y, &self.values(|p| p.1), self.y_scale, true);
        (x, y)
    }

    /// What the plot draws otherwise than asked: a log axis (`x_log`, `y_log`) drawn
    /// linear because its data has no drawable log range ([`Axis::note`]).
    pub fn axis_notes(&self) -> Vec<String> {
        let (x, y) = self.axes();
        [("x axis (x_log = true)", x), ("y axis (y_log = true)", y)]
            .into_iter()
            .filter_map(|(which, a)| a.note.map(|n| format!("the {which} is {n}")))
            .collect()
    }
}

/// A coordinate with the axis's own ticks (plotters' `WithKeyPoints` over a linear range
/// has no value formatter, which the mesh needs).
struct Ticked<R> {
    inner: R,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl<R: Ranged<ValueType = f64>> Ranged for Ticked<R> {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn axis_pixel_range(&self, limit: (i32, i32)) -> std::ops::Range<i32> {
        self.inner.axis_pixel_range(limit)
    }
}

fn ticked<R>(inner: impl Into<R>, a: &Axis) -> Ticked<R> {
    Ticked {
        inner: inner.into(),
        bold: a.ticks.clone(),
        light: a.light.clone(),
    }
}

fn draw_chart<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    xs: X,
    ys: Y,
    d: &PlotData,
    (xa, ya): (&Axis, &Axis),
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .x_label_area_size(60)
        .y_label_area_size(85)
        .build_cartesian_2d(xs, ys)
        .map_err(plot_err)?;
    let x_fmt = |v: &f64| xa.label(*v);
    let y_fmt = |v: &f64| ya.label(*v);
    chart
        .configure_mesh()
        .x_desc(xa.title.as_str())
        .y_desc(ya.title.as_str())
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 18))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .draw()
        .map_err(plot_err)?;
    let (x0, x1) = xa.range;
    let (y0, y1) = ya.range;
    let inside =
        |p: &(f64, f64)| (!xa.log || p.0 > 0.0) && (!ya.log || p.1 > 0.0) && p.1 >= y0 && p.1 <= y1;
    let plot = chart.plotting_area();
    for (i, s) in d.series.iter().enumerate() {
        let look = style::look(i);
        let points: Vec<(f64, f64)> = s.points.iter().copied().filter(inside).collect();
        if d.x_categories.is_some() {
            draw_bars(
                plot,
                &points,
                (i, d.series.len()),
                if ya.log { y0 } else { 0.0 },
            )?;
        } else {
            style::draw_line(plot, points.clone(), look)?;
        }
        for p in points {
            let at = match d.x_categories {
                Some(_) => (bar_centre(p.0, i, d.series.len()), p.1),
                None => p,
            };
            style::draw_marker(plot, at, look.marker, look.color)?;
        }
    }
    plot.draw(&Rectangle::new([(x0, y0), (x1, y1)], style::FRAME))
        .map_err(plot_err)?;
    Ok(())
}

/// Bars of series `i` of `n` share each category's 0.8 width.
fn bar_centre(x: f64, i: usize, n: usize) -> f64 {
    let w = 0.8 / n as f64;
    x - 0.4 + w * (i as f64 + 0.5)
}

fn draw_bars<DB, CT>(
    plot: &DrawingArea<DB, CT>,
    points: &[(f64, f64)],
    (i, n): (usize, usize),
    base: f64,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    let look = style::look(i);
    let half = 0.4 / n as f64 * 0.9;
    for &(x, y) in points {
        let c = bar_centre(x, i, n);
        let corners = [(c - half, base), (c + half, y)];
        plot.draw(&Rectangle::new(corners, look.color.mix(0.35).filled()))
            .map_err(plot_err)?;
        plot.draw(&Rectangle::new(corners, look.color.stroke_width(1)))
            .map_err(plot_err)?;
    }
    Ok(())
}

/// Title and subtitle on top; the chart, and the legend beside it when there is more than
/// one series.
fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, d: &PlotData) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(plot_err)?;
    let mut body = root
        .margin(TOP_MARGIN_PX, 0, 0, 0)
        .titled(&d.title, (FAMILY, 24))
        .map_err(plot_err)?;
    if let Some(sub) = &d.subtitle {
        body = body.titled(sub, (FAMILY, 16)).map_err(plot_err)?;
    }
    let labels: Vec<&str> = d.series.iter().map(|s| s.label.as_str()).collect();
    let (chart_area, legend_area) = if labels.len() > 1 {
        let (w, _) = body.dim_in_pixel();
        let legend_w = style::legend_width(&body, &labels).min(w * 45 / 100);
        let (a, b) = body.split_horizontally(w - legend_w);
        (a, Some(b))
    } else {
        (body, None)
    };
    let (xa, ya) = d.axes();
    let (xr, yr) = (xa.range.0..xa.range.1, ya.range.0..ya.range.1);
    let axes = (&xa, &ya);
    type Lin = RangedCoordf64;
    type Log = LogCoord<f64>;
    match (xa.log, ya.log) {
        (false, false) => draw_chart(
            &chart_area,
            ticked::<Lin>(xr, &xa),
            ticked::<Lin>(yr, &ya),
            d,
            axes,
        )?,
        (true, false) => draw_chart(
            &chart_area,
            ticked::<Log>(xr.log_scale(), &xa),
            ticked::<Lin>(yr, &ya),
            d,
            axes,
        )?,
        (false, true) => draw_chart(
            &chart_area,
            ticked::<Lin>(xr, &xa),
            ticked::<Log>(yr.log_scale(), &ya),
            d,
            axes,
        )?,
        (true, true) => draw_chart(
            &chart_area,
            ticked::<Log>(xr.log_scale(), &xa),
            ticked::<Log>(yr.log_scale(), &ya),
            d,
            axes,
        )?,
    }
    if let Some(legend) = legend_area {
        style::draw_legend(&legend, &labels, 15)?;
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Something drawn as a figure: a plot or a table.
pub trait Drawing {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> anyhow::Result<()>;
}

impl Drawing for PlotData {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw(root, self)
    }
}

/// The drawing as PNG bytes.
pub fn render_png(d: &impl Drawing) -> anyhow::Result<Vec<u8>> {
    ensure_font()?;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let backend = BitMapBackend::<RGBPixel>::with_buffer_and_format(&mut rgb, (WIDTH, HEIGHT))
            .map_err(plot_err)?;
        d.draw_on(backend.into_drawing_area())?;
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, WIDTH, HEIGHT);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc
            .write_header()
            .map_err(|e| anyhow!("encoding PNG: {e}"))?;
        w.write_image_data(&rgb)
            .map_err(|e| anyhow!("encoding PNG: {e}"))?;
        w.finish().map_err(|e| anyhow!("encoding PNG: {e}"))?;
    }
    Ok(out)
}

/// The drawing as SVG text.
pub fn render_svg(d: &impl Drawing) -> anyhow::Result<String> {
    ensure_font()?;
    let mut s = String::new();
    {
        let backend = SVGBackend::with_string(&mut s, (WIDTH, HEIGHT));
        d.draw_on(backend.into_drawing_area())?;
    }
    Ok(s)
}
