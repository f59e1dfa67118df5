//! Every figure of a short sweep, and reproduction figures from canned curves, read back
//! from their SVG: axis titles name a quantity and its unit (no raw key), each metric has its
//! own title, the legend box lies outside the plot area and every data mark inside one of
//! the two, and tick labels do not run into each other.

use super::style::{FRAME, LEGEND_BORDER, PALETTE};
use crate::repro::figure::{write_figures, Figure};
use crate::scenario::CliOverrides;
use crate::sweep::{parse_sweep, run_sweep, SweepOptions};
use crate::testing::FakeRunner;
use plotters::style::RGBColor;
use std::path::{Path, PathBuf};

/// One SVG element: its tag, attributes and (for text) content.
#[derive(Debug)]
struct Element {
    tag: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn num(&self, name: &str) -> f64 {
        self.attr(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    }

    /// Whether this element is drawn in one of the series colours.
    fn series_coloured(&self) -> bool {
        let colours: Vec<String> = PALETTE.iter().map(hex).collect();
        ["fill", "stroke"]
            .iter()
            .any(|a| self.attr(a).is_some_and(|c| colours.iter().any(|p| p == c)))
    }

    /// The points this element draws (vertices, centres or corners).
    fn points(&self) -> Vec<(f64, f64)> {
        match self.tag.as_str() {
            "polyline" | "polygon" => self
                .attr("points")
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect(),
            "circle" => vec![(self.num("cx"), self.num("cy"))],
            "line" => vec![
                (self.num("x1"), self.num("y1")),
                (self.num("x2"), self.num("y2")),
            ],
            "rect" => vec![
                (self.num("x"), self.num("y")),
                (
                    self.num("x") + self.num("width"),
                    self.num("y") + self.num("height"),
                ),
            ],
            _ => Vec::new(),
        }
    }
}

fn hex(c: &RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// The elements of plotters' SVG output (one tag per line, text content on its own line).
fn parse_svg(svg: &str) -> Vec<Element> {
    let mut out: Vec<Element> = Vec::new();
    let mut lines = svg.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.trim().strip_prefix('<') else {
            continue;
        };
        if rest.starts_with('/') {
            continue;
        }
        let tag: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
        let mut attrs = Vec::new();
        for part in rest.split("\" ").chain(std::iter::once("")) {
            if let Some((k, v)) = part.split_once("=\"") {
                let k = k.rsplit(' ').next().unwrap_or(k).to_string();
                let v = v.trim_end_matches("/>").trim_end_matches('>');
                attrs.push((k, v.trim_end_matches('"').to_string()));
            }
        }
        let text = if tag == "text" {
            lines.next().unwrap_or_default().trim().to_string()
        } else {
            String::new()
        };
        out.push(Element { tag, attrs, text });
    }
    out
}

/// (x0, y0, x1, y1) of the one rectangle outlined in `colour`.
fn outlined(elements: &[Element], colour: RGBColor) -> Vec<(f64, f64, f64, f64)> {
    elements
        .iter()
        .filter(|e| e.tag == "rect" && e.attr("stroke") == Some(hex(&colour).as_str()))
        .map(|e| {
            let p = e.points();
            (p[0].0, p[0].1, p[1].0, p[1].1)
        })
        .collect()
}

fn inside(b: (f64, f64, f64, f64), p: (f64, f64)) -> bool {
    p.0 >= b.0 - 6.0 && p.0 <= b.2 + 6.0 && p.1 >= b.1 - 6.0 && p.1 <= b.3 + 6.0
}

fn disjoint(a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)) -> bool {
    a.2 < b.0 || b.2 < a.0 || a.3 < b.1 || b.3 < a.1
}

/// What one figure's SVG shows, checked for the conventions every figure keeps.
struct Checked {
    texts: Vec<String>,
    has_legend: bool,
    /// Labels of the x ticks, left to right.
    x_ticks: Vec<String>,
}

fn check_svg(name: &str, svg: &str) -> Checked {
    let elements = parse_svg(svg);
    let frames = outlined(&elements, FRAME);
    assert_eq!(frames.len(), 1, "{name}: one plot area frame");
    let frame = frames[0];
    let legends = outlined(&elements, LEGEND_BORDER);
    assert!(legends.len() <= 1, "{name}: at most one legend");
    for legend in &legends {
        assert!(
            disjoint(*legend, frame),
            "{name}: legend {legend:?} overlaps the plot area {frame:?}"
        );
    }
    for e in elements.iter().filter(|e| e.series_coloured()) {
        for p in e.points() {
            let in_legend = legends.iter().any(|l| inside(*l, p));
            assert!(
                inside(frame, p) || in_legend,
                "{name}: a series mark at {p:?} is outside the plot area {frame:?} and the legend"
            );
        }
    }
    let texts: Vec<String> = elements
        .iter()
        .filter(|e| e.tag == "text")
        .map(|e| e.text.clone())
        .collect();
    for raw in [
        "perf.",
        "nic.",
        "latency_us",
        "_gbps",
        "_mops",
        "caches.",
        "pcie_rd",
        "_bytes",
    ] {
        assert!(
            !texts.iter().any(|t| t.contains(raw)),
            "{name}: a raw key ({raw}) in {texts:?}"
        );
    }
    // Tick labels under the frame, one row: neighbours must not touch.
    let mut ticks: Vec<(f64, f64, String)> = elements
        .iter()
        .filter(|e| e.tag == "text" && e.attr("transform").is_none())
        .filter(|e| e.num("y") > frame.3 && e.num("y") < frame.3 + 25.0)
        .map(|e| (e.num("x"), e.num("font-size"), e.text.clone()))
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    for w in ticks.windows(2) {
        let half = |t: &(f64, f64, String)| t.2.chars().count() as f64 * t.1 * 0.6 / 2.0;
        assert!(
            w[1].0 - w[0].0 > half(&w[0]) + half(&w[1]),
            "{name}: tick labels {:?} and {:?} collide",
            w[0].2,
            w[1].2
        );
    }
    Checked {
        texts,
        has_legend: !legends.is_empty(),
        x_ticks: ticks.into_iter().map(|t| t.2).collect(),
    }
}

/// A fresh directory for the figures; under `RNIC_KEEP_FIGURES` (a directory) they are kept
/// there to be looked at.
fn scratch(name: &str) -> PathBuf {
    let d = match std::env::var_os("RNIC_KEEP_FIGURES") {
        Some(keep) => PathBuf::from(keep).join(name),
        None => std::env::temp_dir().join(format!("rnic-figures-{}-{name}", std::process::id())),
    };
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn clean(dir: &Path) {
    if std::env::var_os("RNIC_KEEP_FIGURES").is_none() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

const SHORT: &str = r#"
name = "short"
title = "fake WRITE over sizes"
x = "perf.size"
series = "nic.qpc_cache_entries"
metrics = ["goodput_gbps", "latency_us.p99", "pcie_rd_bytes", "caches.qpc.misses"]
[perf]
test = "write-bw"
iters = 100
qp = 400
[[axis]]
key = "nic.qpc_cache_entries"
values = [100, 300, 1000]
[[axis]]
key = "perf.size"
values = [64, 4096, 65536, 1048576]
"#;

#[test]
fn every_figure_of_a_short_sweep_names_its_axes_and_keeps_the_legend_outside() {
    let sw = parse_sweep(SHORT, "short.toml").unwrap();
    let dir = scratch("sweep");
    let opts = SweepOptions {
        jobs: 1,
        out_dir: dir.clone(),
        progress: false,
        quiet: true,
        allow_large: false,
        shard: None,
    };
    let out = run_sweep(
        &sw,
        &CliOverrides::default(),
        &FakeRunner::default(),
        &opts,
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(out.plots.len(), 8, "{:?}", out.plots);
    let want = [
        ("goodput_gbps", "Goodput vs message size", "goodput (Gb/s)"),
        (
            "latency_us_p99",
            "p99 latency vs message size",
            "p99 latency (µs)",
        ),
        (
            "pcie_rd_bytes",
            "PCIe bytes host to NIC vs message size",
            "PCIe bytes host to NIC (",
        ),
        (
            "caches_qpc_misses",
            "QPC cache misses vs message size",
            "QPC cache misses",
        ),
    ];
    for (file, title, y_title) in want {
        let name = format!("short-{file}.svg");
        let c = check_svg(&name, &read(&dir, &name));
        assert!(
            c.texts.iter().any(|t| t == title),
            "{name}: title {title:?} in {:?}",
            c.texts
        );
        assert!(
            c.texts.iter().any(|t| t.starts_with(y_title)),
            "{name}: {y_title:?}"
        );
        // 64 B .. 1 MB spans 16384x: a log axis by the data, ticks in 1024-based units.
        assert!(
            c.texts
                .iter()
                .any(|t| t == "message size (bytes, 1 KB = 1024 B)"),
            "{name}: x title in {:?}",
            c.texts
        );
        assert!(
            c.x_ticks.contains(&"1 KB".to_string()),
            "{name}: {:?}",
            c.x_ticks
        );
        assert!(c.has_legend, "{name}: three series need a legend");
        assert!(
            c.texts.iter().any(|t| t == "QPC cache = 300 entries"),
            "{name}"
        );
    }
    clean(&dir);
}

/// ORNIC Fig. 11's x axis (WQEs of 1, 4 and 16 MB, declared log) and wan-standard's y
/// (97 Gb/s down to 0.28 Gb/s, log by its range).
fn canned_figures() -> Vec<Figure> {
    let mb = 1024.0 * 1024.0;
    let gbn = |scale: f64| {
        vec![
            (mb, 94.0 * scale),
            (4.0 * mb, 97.0 * scale),
            (16.0 * mb, 97.5 * scale),
        ]
    };
    let wan: Vec<(f64, f64)> = [
        (0.0, 97.92),
        (5.0, 52.11),
        (10.0, 26.97),
        (100.0, 2.77),
        (1000.0, 0.277),
    ]
    .to_vec();
    vec![
        Figure::line(
            "fig11",
            "Go-back-N and ORNIC RDMA WRITE throughput (Fig. 11)",
            "WQE size (bytes)",
            "throughput (Gb/s)",
            (0..6)
                .map(|i| (format!("series {i}"), gbn(1.0 - 0.1 * i as f64)))
                .collect(),
            true,
        ),
        Figure::line(
            "wan",
            "Standard RDMA WRITE throughput vs distance",
            "distance (km)",
            "throughput (Gb/s)",
            vec![("standard".into(), wan)],
            false,
        ),
        Figure::categories(
            "bars",
            "Table: cycles",
            "bitmap",
            "cycles per packet",
            vec!["a".into(), "b".into()],
            vec![
                ("no loss".into(), vec![3.0, 5.0]),
                ("with loss".into(), vec![4.0, 9.0]),
            ],
        ),
    ]
}

#[test]
fn reproduction_figures_from_canned_curves_read_well() {
    let dir = scratch("repro");
    std::fs::create_dir_all(&dir).unwrap();
    let files = write_figures(&dir, &canned_figures()).unwrap();
    assert_eq!(files.len(), 6);
    let fig11 = check_svg("fig11", &read(&dir, "fig11.svg"));
    assert_eq!(fig11.x_ticks, ["1 MB", "2 MB", "4 MB", "8 MB", "16 MB"]);
    assert!(fig11.has_legend);
    let wan = check_svg("wan", &read(&dir, "wan.svg"));
    assert!(wan.texts.iter().any(|t| t == "distance (km)"));
    // A log y: 0.5 and 50 are ticks, as no linear axis over 0..98 would label both.
    assert!(wan.texts.iter().any(|t| t == "0.5") && wan.texts.iter().any(|t| t == "50"));
    assert!(!wan.has_legend, "one series needs no legend");
    let bars = check_svg("bars", &read(&dir, "bars.svg"));
    assert!(
        bars.has_legend && bars.x_ticks == ["a", "b"],
        "{:?}",
        bars.x_ticks
    );
    clean(&dir);
}

#[test]
fn a_computed_experiment_draws_its_table() {
    let dir = scratch("table");
    std::fs::create_dir_all(&dir).unwrap();
    let ev = crate::repro::ornic::eval_sizing().unwrap();
    let files = write_figures(&dir, &ev.figures).unwrap();
    assert_eq!(files.len(), 2, "ornic-sizing draws one table");
    let svg = read(&dir, "ornic-sizing.svg");
    let texts: Vec<String> = parse_svg(&svg)
        .into_iter()
        .filter(|e| e.tag == "text")
        .map(|e| e.text)
        .collect();
    for cell in ["quantity", "paper", "bitmap width (bits per QP)", "320"] {
        assert!(texts.iter().any(|t| t == cell), "{cell} in {texts:?}");
    }
    clean(&dir);
}
