//! A table of numbers drawn as a figure, for experiments that compute rather than sweep
//! (a sizing: rnic's value beside the paper's for each quantity).

use super::{plot_err, Drawing, FAMILY};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A titled table: a header row and rows of cells, the first column left-aligned (names),
/// the others right-aligned (numbers).
#[derive(Debug, Clone, PartialEq)]
pub struct TableData {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

const FONT_PX: u32 = 17;
const ROW_PX: i32 = 30;
const PAD_PX: i32 = 14;

impl TableData {
    /// Column widths in pixels: the widest cell of each column plus padding.
    fn widths<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Vec<i32> {
        let font = TextStyle::from((FAMILY, FONT_PX).into_font());
        (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .filter_map(|r| r.get(c))
                    .filter_map(|cell| area.estimate_text_size(cell, &font).ok())
                    .map(|(w, _)| w as i32)
                    .max()
                    .unwrap_or(0)
                    + 2 * PAD_PX
            })
            .collect()
    }
}

impl Drawing for TableData {
    fn draw_on<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        root.fill(&WHITE).map_err(plot_err)?;
        let body = root
            .margin(super::TOP_MARGIN_PX, 0, 0, 0)
            .titled(&self.title, (FAMILY, 24))
            .map_err(plot_err)?;
        let widths = self.widths(&body);
        let (w, _) = body.dim_in_pixel();
        let left = ((w as i32 - widths.iter().sum::<i32>()) / 2).max(PAD_PX);
        let font = TextStyle::from((FAMILY, FONT_PX).into_font());
        let rows = std::iter::once(&self.header).chain(&self.rows);
        for (r, row) in rows.enumerate() {
            let top = PAD_PX + ROW_PX * r as i32;
            if r % 2 == 1 {
                let right = left + widths.iter().sum::<i32>();
                body.draw(&Rectangle::new(
                    [(left, top), (right, top + ROW_PX)],
                    RGBColor(0xEE, 0xF3, 0xF8).filled(),
                ))
                .map_err(plot_err)?;
            }
            let mut x = left;
            for (c, cell) in row.iter().enumerate() {
                let cw = widths.get(c).copied().unwrap_or(0);
                let (anchor, at) = if c == 0 {
                    (HPos::Left, x + PAD_PX)
                } else {
                    (HPos::Right, x + cw - PAD_PX)
                };
                let style = font.clone().pos(Pos::new(anchor, VPos::Center));
                body.draw_text(cell, &style, (at, top + ROW_PX / 2))
                    .map_err(plot_err)?;
                x += cw;
            }
        }
        // The rule under the header, over the first row's band.
        let (y, right) = (PAD_PX + ROW_PX, left + widths.iter().sum::<i32>());
        body.draw(&PathElement::new(
            vec![(left, y), (right, y)],
            BLACK.stroke_width(1),
        ))
        .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
        Ok(())
    }
}
