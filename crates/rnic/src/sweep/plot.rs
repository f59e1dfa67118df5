//! Line plots of sweep results with plotters, as PNG (encoded by the `png` crate from an RGB
//! buffer) and SVG. Text uses DejaVu Sans embedded in the binary (assets/DejaVuSans.ttf), so
//! plots need no system fonts and are byte-identical everywhere.

use super::{value_text, Point, Sweep};
use crate::report::PerfResult;
use anyhow::anyhow;
use plotters::backend::RGBPixel;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
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

/// One line.
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
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub x_log: bool,
    pub y_log: bool,
    /// Names of categorical x positions 0, 1, ... (x values that are not numbers).
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

/// Groups results into lines: x from the sweep's x axis, one line per combination of the
/// other axes (the series axis first in labels and order). Points that did not end `ok` are
/// left out: their figures are partial or untrustworthy (the CSV flags them).
pub fn plot_data(sweep: &Sweep, results: &[(Point, PerfResult)], metric: &str) -> PlotData {
    let x_axis = &sweep.axes[sweep.x];
    let numeric = x_axis.values.iter().all(|v| as_number(v).is_some());
    let mut others: Vec<usize> = (0..sweep.axes.len()).filter(|&i| i != sweep.x).collect();
    if let Some(s) = sweep.series {
        others.retain(|&i| i != s);
        others.insert(0, s);
    }
    let mut groups: BTreeMap<Vec<usize>, Series> = BTreeMap::new();
    for (p, r) in results {
        if r.status != crate::report::RunStatus::Ok {
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
            metric.to_string()
        } else {
            others
                .iter()
                .map(|&a| format!("{}={}", sweep.axes[a].key, value_text(&p.values[a])))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let series = groups.entry(key).or_insert_with(|| Series {
            label,
            points: Vec::new(),
        });
        let xv = &p.values[sweep.x];
        let x = if numeric {
            as_number(xv).unwrap_or(f64::NAN)
        } else {
            x_axis.values.iter().position(|v| v == xv).unwrap_or(0) as f64
        };
        let Some(y) = r.metric(metric).map(|m| m.as_f64()) else {
            continue;
        };
        let usable = x.is_finite()
            && y.is_finite()
            && (!sweep.y_log || y > 0.0)
            && (!sweep.x_log || x > 0.0);
        if usable {
            series.points.push((x, y));
        }
    }
    let mut series: Vec<Series> = groups.into_values().collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    PlotData {
        title: sweep.title.clone().unwrap_or_else(|| sweep.name.clone()),
        x_label: x_axis.key.clone(),
        y_label: metric.to_string(),
        series,
        x_log: sweep.x_log,
        y_log: sweep.y_log,
        x_categories: (!numeric).then(|| x_axis.values.iter().map(value_text).collect()),
    }
}

/// Compact tick label: integers as integers, others with up to 3 decimals, extremes in
/// scientific notation.
pub fn tick_label(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        return format!("{v:.1e}");
    }
    if (v - v.round()).abs() < 1e-9 {
        return format!("{}", v.round() as i64);
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

fn x_range(d: &PlotData) -> (f64, f64) {
    if let Some(c) = &d.x_categories {
        return (-0.5, c.len() as f64 - 0.5);
    }
    let (lo, hi) =
        bounds(d.series.iter().flat_map(|s| s.points.iter().map(|p| p.0))).unwrap_or((1.0, 10.0));
    if d.x_log {
        if lo == hi {
            (lo / 2.0, hi * 2.0)
        } else {
            let f = (hi / lo).powf(0.03);
            (lo / f, hi * f)
        }
    } else if lo == hi {
        (lo - 1.0, hi + 1.0)
    } else {
        let pad = (hi - lo) * 0.03;
        (lo - pad, hi + pad)
    }
}

fn y_range(d: &PlotData) -> (f64, f64) {
    let (lo, hi) =
        bounds(d.series.iter().flat_map(|s| s.points.iter().map(|p| p.1))).unwrap_or((0.0, 1.0));
    if d.y_log {
        (lo / 1.5, hi * 1.5)
    } else {
        let lo = lo.min(0.0);
        let hi = if hi <= lo {
            lo + 1.0
        } else {
            hi + (hi - lo) * 0.08
        };
        (lo, hi)
    }
}

fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

fn draw_chart<DB, XS, YS>(
    root: &DrawingArea<DB, Shift>,
    xs: XS,
    ys: YS,
    d: &PlotData,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    XS: AsRangedCoord<Value = f64>,
    YS: AsRangedCoord<Value = f64>,
    XS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    YS::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(root)
        .caption(&d.title, (FAMILY, 24))
        .margin(20)
        .x_label_area_size(55)
        .y_label_area_size(80)
        .build_cartesian_2d(xs, ys)
        .map_err(plot_err)?;
    let categories = d.x_categories.clone();
    let x_fmt = move |v: &f64| match &categories {
        Some(c) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                c.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        None => tick_label(*v),
    };
    let y_fmt = |v: &f64| tick_label(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(d.x_label.as_str())
        .y_desc(d.y_label.as_str())
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt);
    if let Some(c) = &d.x_categories {
        mesh.x_labels(c.len().max(2));
    }
    mesh.draw().map_err(plot_err)?;
    for (i, s) in d.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(plot_err)?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(plot_err)?;
    }
    if d.series.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(plot_err)?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, d: &PlotData) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(plot_err)?;
    let (x0, x1) = x_range(d);
    let (y0, y1) = y_range(d);
    match (d.x_log, d.y_log) {
        (false, false) => draw_chart(&root, x0..x1, y0..y1, d)?,
        (true, false) => draw_chart(&root, (x0..x1).log_scale(), y0..y1, d)?,
        (false, true) => draw_chart(&root, x0..x1, (y0..y1).log_scale(), d)?,
        (true, true) => draw_chart(&root, (x0..x1).log_scale(), (y0..y1).log_scale(), d)?,
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// The plot as PNG bytes.
pub fn render_png(d: &PlotData) -> anyhow::Result<Vec<u8>> {
    ensure_font()?;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let backend = BitMapBackend::<RGBPixel>::with_buffer_and_format(&mut rgb, (WIDTH, HEIGHT))
            .map_err(plot_err)?;
        draw(backend.into_drawing_area(), d)?;
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

/// The plot as SVG text.
pub fn render_svg(d: &PlotData) -> anyhow::Result<String> {
    ensure_font()?;
    let mut s = String::new();
    {
        let backend = SVGBackend::with_string(&mut s, (WIDTH, HEIGHT));
        draw(backend.into_drawing_area(), d)?;
    }
    Ok(s)
}
