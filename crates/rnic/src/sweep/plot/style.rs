//! How series are told apart: a colour-blind-safe colour, a marker and a line style each, and
//! the legend that names them, drawn beside the plot area so it never covers a point.
//!
//! Colours are Okabe and Ito's palette without its yellow (unreadable on white); markers and
//! dash patterns cycle with periods 7 and 4, so the first 28 series differ in at least two of
//! the three and any two neighbours in all three.

use super::plot_err;
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;

/// Okabe–Ito colours without yellow: blue, vermillion, bluish green, reddish purple, orange,
/// sky blue, black.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x00, 0x00, 0x00),
];

/// Border of the legend box (the figure test finds the box by it).
pub const LEGEND_BORDER: RGBColor = RGBColor(0x60, 0x60, 0x60);

/// Frame around the plot area (the figure test finds the plot area by it).
pub const FRAME: RGBColor = RGBColor(0x20, 0x20, 0x20);

/// Marker half-size in pixels.
const MARKER_PX: i32 = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    Cross,
    Plus,
}

const MARKERS: [Marker; 7] = [
    Marker::Circle,
    Marker::Square,
    Marker::TriangleUp,
    Marker::Diamond,
    Marker::TriangleDown,
    Marker::Cross,
    Marker::Plus,
];

/// A line pattern: solid, or (dash, gap) in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed(i32, i32),
}

const DASHES: [Dash; 4] = [
    Dash::Solid,
    Dash::Dashed(10, 5),
    Dash::Dashed(3, 4),
    Dash::Dashed(16, 5),
];

/// The look of series `i`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    pub color: RGBColor,
    pub marker: Marker,
    pub dash: Dash,
}

pub fn look(i: usize) -> Look {
    Look {
        color: PALETTE[i % PALETTE.len()],
        marker: MARKERS[i % MARKERS.len()],
        dash: DASHES[i % DASHES.len()],
    }
}

/// Draws `m` centred at `at`.
pub fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    m: Marker,
    color: RGBColor,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let r = MARKER_PX;
    let fill = color.filled();
    let line = color.stroke_width(2);
    let poly = |p: Vec<(i32, i32)>| EmptyElement::at(at.clone()) + Polygon::new(p, fill);
    match m {
        Marker::Circle => area.draw(&(EmptyElement::at(at.clone()) + Circle::new((0, 0), r, fill))),
        Marker::Square => {
            area.draw(&(EmptyElement::at(at.clone()) + Rectangle::new([(-r, -r), (r, r)], fill)))
        }
        Marker::TriangleUp => area.draw(&poly(vec![(0, -r - 1), (r + 1, r), (-r - 1, r)])),
        Marker::TriangleDown => area.draw(&poly(vec![(0, r + 1), (r + 1, -r), (-r - 1, -r)])),
        Marker::Diamond => area.draw(&poly(vec![
            (0, -r - 1),
            (r + 1, 0),
            (0, r + 1),
            (-r - 1, 0),
        ])),
        Marker::Cross => area.draw(&(EmptyElement::at(at.clone()) + Cross::new((0, 0), r, line))),
        Marker::Plus => area.draw(
            &(EmptyElement::at(at.clone())
                + PathElement::new(vec![(-r - 1, 0), (r + 1, 0)], line)
                + PathElement::new(vec![(0, -r - 1), (0, r + 1)], line)),
        ),
    }
    .map_err(plot_err)
}

/// Draws a line through `points` in `look`'s colour and pattern.
pub fn draw_line<DB, CT>(
    area: &DrawingArea<DB, CT>,
    points: Vec<CT::From>,
    look: Look,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
    CT::From: Clone,
{
    let style = look.color.stroke_width(2);
    match look.dash {
        Dash::Solid => area.draw(&PathElement::new(points, style)),
        Dash::Dashed(on, off) => area.draw(&plotters::element::DashedPathElement::new(
            points, on, off, style,
        )),
    }
    .map_err(plot_err)
}

/// Legend text size.
pub const LEGEND_FONT: u32 = 15;
const SAMPLE_PX: i32 = 40;
const ROW_PX: i32 = 24;
const PAD_PX: i32 = 10;

/// The width the legend needs for `labels`.
pub fn legend_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, labels: &[&str]) -> u32 {
    let font = TextStyle::from((super::FAMILY, LEGEND_FONT).into_font());
    let text = labels
        .iter()
        .filter_map(|l| area.estimate_text_size(l, &font).ok())
        .map(|(w, _)| w + w / 10)
        .max()
        .unwrap_or(0);
    // Box and text padding, with room for the estimate falling short of the drawn text.
    text + (SAMPLE_PX + 7 * PAD_PX) as u32
}

/// Draws the legend box in `area` (beside the plot), from `top` pixels down.
pub fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: &[&str],
    top: i32,
) -> anyhow::Result<()> {
    let (w, _) = area.dim_in_pixel();
    let (x0, x1) = (PAD_PX, w as i32 - PAD_PX);
    let y1 = top + ROW_PX * labels.len() as i32 + PAD_PX;
    area.draw(&Rectangle::new([(x0, top), (x1, y1)], WHITE.filled()))
        .map_err(plot_err)?;
    area.draw(&Rectangle::new([(x0, top), (x1, y1)], LEGEND_BORDER))
        .map_err(plot_err)?;
    let font = TextStyle::from((super::FAMILY, LEGEND_FONT).into_font());
    for (i, label) in labels.iter().enumerate() {
        let l = look(i);
        let y = top + PAD_PX / 2 + ROW_PX * i as i32 + ROW_PX / 2;
        let sx = x0 + PAD_PX;
        draw_line(area, vec![(sx, y), (sx + SAMPLE_PX, y)], l)?;
        draw_marker(area, (sx + SAMPLE_PX / 2, y), l.marker, l.color)?;
        let style = font.clone().pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
        area.draw_text(label, &style, (sx + SAMPLE_PX + PAD_PX, y))
            .map_err(plot_err)?;
    }
    Ok(())
}
