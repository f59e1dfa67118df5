//! One axis of a plot: linear or log (declared, or chosen from the data's range), its range,
//! its ticks and their labels, and its title with the unit.
//!
//! Rules (the figure conventions of the book's Sweeps chapter, `docs/book/src/sweeps.md`):
//! - A log axis is used when declared (`x_log`/`y_log` in a sweep, the paper's log axis in a
//!   reproduction), or, left to the data, when every value is positive and the largest is
//!   more than [`AUTO_LOG_RATIO`] times the smallest.
//! - A log axis needs a range it can draw: normal (not subnormal) positive finite ends at
//!   most [`MAX_LOG_DECADES`] decades apart. Data outside that gets a linear axis instead,
//!   and a declared log axis says so in [`Axis::note`] (a sweep prints it as a note); the
//!   decade and tick loops never see an infinite or zero end.
//! - Log ticks fall on powers of 2 for byte quantities (64 B, 1 KB, 16 MB) and on 1, 2, 5
//!   times powers of ten otherwise (1 M, 10 M; only powers of ten over many decades): at most
//!   [`MAX_TICKS`] labels, the other powers as unlabelled grid lines.
//! - Byte quantities print 1024-based (1 KB = 1024 B): on a log axis every tick carries its
//!   unit; on a linear axis the values are scaled to the one unit (B, KB, MB, GB) of the
//!   largest, named in the title.
//! - Large numbers print with k (10^5 and up), M, G or T (powers of 1000), never as
//!   "5000000" or "1.0e7".

use rnic_model::quantity::{Quantity, Unit};

/// How an axis is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scale {
    /// Log when the data spans more than [`AUTO_LOG_RATIO`] on positive values, else linear.
    #[default]
    Auto,
    Linear,
    Log,
}

/// Largest / smallest value above which positive data gets a log axis by itself.
pub const AUTO_LOG_RATIO: f64 = 30.0;

/// Most labelled ticks on an axis.
pub const MAX_TICKS: usize = 8;

/// Most decades a log axis spans. Wider data (1e-300 to 1: a subnormal or near-zero value
/// beside ordinary ones) has no readable log axis, and its padded range would reach 0 or
/// infinity, whose decade count no loop can walk.
pub const MAX_LOG_DECADES: f64 = 100.0;

/// Most tick positions a linear axis computes (labelled and light): far above the few dozen
/// a sane range gives, so only a degenerate step (zero, subnormal, infinite) reaches it.
const MAX_LINEAR_POSITIONS: f64 = 1000.0;

const KIB: f64 = 1024.0;

/// An axis resolved for drawing.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub log: bool,
    /// (low, high) in data units.
    pub range: (f64, f64),
    /// Labelled ticks.
    pub ticks: Vec<f64>,
    /// Unlabelled grid lines.
    pub light: Vec<f64>,
    pub title: String,
    /// Why a declared log axis is drawn linear (its data has no drawable log range).
    pub note: Option<String>,
    labels: Labels,
}

#[derive(Debug, Clone, PartialEq)]
enum Labels {
    /// Byte counts with their unit on every tick.
    Bytes,
    /// Values divided by this before printing (a byte axis in one unit).
    Scaled(f64),
    Categories(Vec<String>),
}

impl Scale {
    /// Log or linear for these values.
    pub fn is_log(self, values: &[f64]) -> bool {
        match self {
            Scale::Log => true,
            Scale::Linear => false,
            Scale::Auto => wide_positive(values),
        }
    }
}

/// Every value positive, the largest more than [`AUTO_LOG_RATIO`] times the smallest, and
/// a log axis able to show them ([`log_range`]).
fn wide_positive(values: &[f64]) -> bool {
    let Some((lo, hi)) = bounds(values) else {
        return false;
    };
    lo > 0.0 && hi / lo > AUTO_LOG_RATIO && log_range(values).is_some()
}

fn bounds(values: &[f64]) -> Option<(f64, f64)> {
    values.iter().fold(None, |acc, &v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

impl Axis {
    /// An axis over named positions 0, 1, ...
    pub fn categories(q: &Quantity, names: &[String]) -> Axis {
        Axis {
            log: false,
            range: (-0.5, names.len() as f64 - 0.5),
            ticks: (0..names.len()).map(|i| i as f64).collect(),
            light: Vec::new(),
            title: title(q, None),
            note: None,
            labels: Labels::Categories(names.to_vec()),
        }
    }

    /// A numeric axis for `values`; `from_zero` makes a linear axis start at 0 (y axes).
    pub fn numeric(q: &Quantity, values: &[f64], scale: Scale, from_zero: bool) -> Axis {
        let log = scale.is_log(values);
        let shown: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let bytes = q.unit == Unit::Bytes;
        let note = match log.then(|| log_range(&shown)) {
            Some(Some(range)) => return Axis::log(q, range, bytes),
            Some(None) => Some(linear_instead_of_log(&shown)),
            None => None,
        };
        let mut axis = Axis::linear(q, &shown, bytes, from_zero);
        axis.note = note;
        axis
    }

    /// A log axis over `range` (drawable: [`log_range`]).
    fn log(q: &Quantity, range: (f64, f64), bytes: bool) -> Axis {
        let (ticks, light) = if bytes {
            log_ticks_base2(range)
        } else {
            log_ticks_base10(range)
        };
        let byte_ticks = bytes && ticks.iter().all(|t| t.fract() == 0.0);
        let (ticks, light, labels) = if ticks.len() >= 2 {
            let labels = if byte_ticks {
                Labels::Bytes
            } else {
                Labels::Scaled(1.0)
            };
            (ticks, light, labels)
        } else {
            // Less than a factor of two: linear ticks on the log axis.
            let (t, l) = linear_ticks(range, 1.0);
            (t, l, Labels::Scaled(1.0))
        };
        let unit = match labels {
            Labels::Bytes => Some(byte_log_unit(&ticks)),
            _ => None,
        };
        Axis {
            log: true,
            range,
            title: title(q, unit.as_deref()),
            ticks,
            light,
            note: None,
            labels,
        }
    }

    /// A linear axis for `shown` (finite values).
    fn linear(q: &Quantity, shown: &[f64], bytes: bool, from_zero: bool) -> Axis {
        let range = linear_range(shown, from_zero);
        let div = if bytes {
            byte_unit(range.0.abs().max(range.1.abs())).1
        } else {
            1.0
        };
        let (ticks, light) = linear_ticks(range, div);
        let unit = bytes.then(|| byte_linear_unit(div));
        Axis {
            log: false,
            range,
            title: title(q, unit.as_deref()),
            ticks,
            light,
            note: None,
            labels: Labels::Scaled(div),
        }
    }

    /// The label of tick `v`.
    pub fn label(&self, v: f64) -> String {
        match &self.labels {
            Labels::Bytes => bytes_text(v),
            Labels::Scaled(div) => number_text(v / div),
            Labels::Categories(names) => {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 {
                    names.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        }
    }
}

/// "name (unit)", the unit given (a byte axis's) or the quantity's own.
fn title(q: &Quantity, unit: Option<&str>) -> String {
    let unit = match (unit, &q.unit) {
        (Some(u), _) => u.to_string(),
        (None, Unit::Named(u)) => u.clone(),
        (None, Unit::Bytes) => "bytes".to_string(),
        (None, Unit::None) => return q.name.clone(),
    };
    format!("{} ({unit})", q.name)
}

/// The unit note of a log byte axis: the 1024 base once ticks reach a KB.
fn byte_log_unit(ticks: &[f64]) -> String {
    if ticks.iter().any(|t| *t >= KIB) {
        "bytes, 1 KB = 1024 B".to_string()
    } else {
        "bytes".to_string()
    }
}

fn byte_linear_unit(div: f64) -> String {
    match byte_unit(div).0 {
        "B" => "bytes".to_string(),
        "KB" => "KB, 1 KB = 1024 B".to_string(),
        "MB" => "MB, 1 MB = 1024² B".to_string(),
        _ => "GB, 1 GB = 1024³ B".to_string(),
    }
}

/// The 1024-based unit of a byte count and its size.
fn byte_unit(v: f64) -> (&'static str, f64) {
    let a = v.abs();
    if a >= KIB.powi(3) {
        ("GB", KIB.powi(3))
    } else if a >= KIB.powi(2) {
        ("MB", KIB.powi(2))
    } else if a >= KIB {
        ("KB", KIB)
    } else {
        ("B", 1.0)
    }
}

/// A byte count with its 1024-based unit: "64 B", "4 KB", "1.5 MB".
pub fn bytes_text(v: f64) -> String {
    let (unit, size) = byte_unit(v);
    format!("{} {unit}", plain_number(v / size))
}

/// A tick value: up to 3 decimals, k from 10^5, M, G, T from 10^6 (powers of 1000).
pub fn number_text(v: f64) -> String {
    let a = v.abs();
    for (from, size, suffix) in [
        (1e12, 1e12, "T"),
        (1e9, 1e9, "G"),
        (1e6, 1e6, "M"),
        (1e5, 1e3, "k"),
    ] {
        if a >= from {
            return format!("{} {suffix}", plain_number(v / size));
        }
    }
    if a != 0.0 && a < 1e-3 {
        return format!("{v:.1e}");
    }
    plain_number(v)
}

fn plain_number(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        return format!("{}", v.round() as i64);
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Why values got a linear axis though a log one was asked for.
fn linear_instead_of_log(values: &[f64]) -> String {
    let span = bounds(values)
        .map(|(lo, hi)| format!(" ({} to {})", number_text(lo), number_text(hi)))
        .unwrap_or_default();
    format!(
        "drawn linear, not log: its values{span} have no log range a plot can show (positive \
         numbers from {} up, at most {MAX_LOG_DECADES} decades apart)",
        number_text(f64::MIN_POSITIVE)
    )
}

/// The padded range of a log axis over `values` (positive), or `None` when it cannot be
/// drawn: an end below the smallest normal number (subnormal or 0), infinite, or more than
/// [`MAX_LOG_DECADES`] decades apart; such ends made the decade loops run from i32::MIN.
fn log_range(values: &[f64]) -> Option<(f64, f64)> {
    let range = match bounds(values) {
        None => (1.0, 10.0),
        Some((lo, hi)) if !(lo >= f64::MIN_POSITIVE && hi.is_finite()) => return None,
        Some((lo, hi)) if hi.log10() - lo.log10() > MAX_LOG_DECADES => return None,
        Some((lo, hi)) if lo == hi => (lo / 2.0, hi * 2.0),
        Some((lo, hi)) => {
            let pad = (hi / lo).powf(0.04).max(1.05);
            (lo / pad, hi * pad)
        }
    };
    (range.0 >= f64::MIN_POSITIVE && range.1.is_finite()).then_some(range)
}

fn linear_range(values: &[f64], from_zero: bool) -> (f64, f64) {
    let Some((lo, hi)) = bounds(values) else {
        return (0.0, 1.0);
    };
    let (lo, hi) = if from_zero {
        (lo.min(0.0), hi.max(0.0))
    } else {
        (lo, hi)
    };
    // A zero or subnormal span (5e-324 beside 0) pads to nothing and has no tick step.
    if !(hi - lo).is_normal() && (hi - lo).is_finite() {
        return (lo - 1.0, hi + 1.0);
    }
    let pad = (hi - lo) * 0.05;
    let lo = if from_zero && lo == 0.0 {
        0.0
    } else {
        lo - pad
    };
    (lo, hi + pad)
}

fn within(range: (f64, f64), v: f64) -> bool {
    v >= range.0 * (1.0 - 1e-12) && v <= range.1 * (1.0 + 1e-12)
}

/// Powers of two, every `step`-th one labelled, the step a divisor of 10 (or a multiple), so
/// that 1 KB and 1 MB are labelled (1 KB, 4 KB, 16 KB; 32 B, 1 KB, 32 KB, 1 MB).
fn log_ticks_base2(range: (f64, f64)) -> (Vec<f64>, Vec<f64>) {
    let (k0, k1) = (range.0.log2().ceil() as i32, range.1.log2().floor() as i32);
    let powers: Vec<i32> = (k0..=k1).collect();
    let step = [1, 2, 5, 10, 20, 30, 40, 50, 100]
        .into_iter()
        .find(|s| powers.iter().filter(|k| *k % s == 0).count() <= MAX_TICKS)
        .unwrap_or(100);
    let (ticks, light): (Vec<i32>, Vec<i32>) = powers.iter().partition(|k| *k % step == 0);
    let pow2 = |k: Vec<i32>| k.into_iter().map(|k| 2f64.powi(k)).collect();
    (pow2(ticks), pow2(light))
}

/// 1, 2, 5 x 10^k over a few decades, 10^k (every step-th) over many; the rest light.
fn log_ticks_base10(range: (f64, f64)) -> (Vec<f64>, Vec<f64>) {
    let (d0, d1) = (
        range.0.log10().floor() as i32,
        range.1.log10().ceil() as i32,
    );
    let candidates = |mantissas: &[f64]| -> Vec<f64> {
        (d0..=d1)
            .flat_map(|d| mantissas.iter().map(move |m| m * 10f64.powi(d)))
            .filter(|v| within(range, *v))
            .collect()
    };
    let all = candidates(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let mut ticks = candidates(&[1.0, 2.0, 5.0]);
    if ticks.len() < 3 {
        ticks = all.clone();
    }
    if ticks.len() > MAX_TICKS {
        let decades: Vec<i32> = (d0..=d1)
            .filter(|d| within(range, 10f64.powi(*d)))
            .collect();
        let step = (1..)
            .find(|s| decades.iter().filter(|d| *d % s == 0).count() <= MAX_TICKS)
            .unwrap_or(1);
        ticks = decades
            .iter()
            .filter(|d| *d % step == 0)
            .map(|d| 10f64.powi(*d))
            .collect();
    }
    let light = if d1 - d0 <= 8 {
        all.into_iter().filter(|v| !ticks.contains(v)).collect()
    } else {
        Vec::new()
    };
    (ticks, light)
}

/// Multiples of a 1, 2 or 5 step (in units of `div`), about six over the range; light lines
/// at fifths of the step.
fn linear_ticks(range: (f64, f64), div: f64) -> (Vec<f64>, Vec<f64>) {
    let span = (range.1 - range.0) / div;
    let raw = span / 6.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= MAX_TICKS as f64)
        .unwrap_or(10.0 * mag)
        * div;
    let ticks = multiples(range, step);
    let light = multiples(range, step / 5.0)
        .into_iter()
        .filter(|v| !ticks.iter().any(|t| (t - v).abs() < step * 1e-6))
        .collect();
    (ticks, light)
}

/// The multiples of `step` within `range`; none when the step is degenerate (zero,
/// subnormal, infinite, NaN) and would give more than [`MAX_LINEAR_POSITIONS`] of them: an
/// axis without ticks rather than a loop over 2^63 positions.
fn multiples(range: (f64, f64), step: f64) -> Vec<f64> {
    let first = (range.0 / step).ceil();
    let last = (range.1 / step).floor();
    let count = last - first;
    if !(count.is_finite() && count <= MAX_LINEAR_POSITIONS) {
        return Vec::new();
    }
    (first as i64..=last as i64)
        .map(|i| i as f64 * step)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(unit: &str) -> Quantity {
        Quantity::new("size", unit)
    }

    #[test]
    fn the_data_decides_log_when_its_range_is_wide() {
        // wan-standard: 97 Gb/s at 0 km down to 0.28 Gb/s at 1000 km.
        assert!(Scale::Auto.is_log(&[97.9, 52.1, 2.77, 0.277]));
        assert!(!Scale::Auto.is_log(&[66.7, 14.4]));
        assert!(!Scale::Auto.is_log(&[0.0, 10.0, 1000.0]), "0 has no log");
        assert!(Scale::Log.is_log(&[1.0, 2.0]));
        assert!(!Scale::Linear.is_log(&[1.0, 1e6]));
    }

    #[test]
    fn byte_log_ticks_are_powers_of_two_with_units() {
        // ORNIC Fig. 11: WQEs of 1, 4 and 16 MB.
        let mb = 1024.0 * 1024.0;
        let a = Axis::numeric(&q("bytes"), &[mb, 4.0 * mb, 16.0 * mb], Scale::Log, false);
        let labels: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(labels, ["1 MB", "2 MB", "4 MB", "8 MB", "16 MB"]);
        assert_eq!(a.title, "size (bytes, 1 KB = 1024 B)");
        // 64 B to 8 MB: every other power of two would be 18 labels; at most MAX_TICKS.
        let a = Axis::numeric(&q("bytes"), &[64.0, 8.0 * mb], Scale::Log, false);
        assert!(a.ticks.len() <= MAX_TICKS, "{:?}", a.ticks);
        assert!(a.ticks.iter().map(|t| a.label(*t)).any(|l| l == "1 MB"));
    }

    #[test]
    fn decimal_log_ticks_never_collide() {
        let a = Axis::numeric(&q(""), &[1e6, 1.6e7], Scale::Log, false);
        let labels: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(labels, ["1 M", "2 M", "5 M", "10 M"]);
        let a = Axis::numeric(&q(""), &[1.0, 1e12], Scale::Log, false);
        assert!(a.ticks.len() <= MAX_TICKS && a.light.is_empty());
    }

    #[test]
    fn linear_byte_axes_use_one_unit_named_in_the_title() {
        let a = Axis::numeric(&q("bytes"), &[5e6, 4.5e7], Scale::Linear, true);
        assert_eq!(a.title, "size (MB, 1 MB = 1024² B)");
        let labels: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(labels.first().map(String::as_str), Some("0"));
        assert!(labels.contains(&"40".to_string()), "{labels:?}");
    }

    /// Data a log axis cannot show (a subnormal beside 1; a ratio past f64's range) gets a
    /// linear axis, with a note when log was asked for; these padded the log range to 0 or
    /// infinity and the decade loops ran from i32::MIN to i32::MAX (abort or hang).
    #[test]
    fn data_without_a_log_range_gets_a_linear_axis_with_a_note() {
        for values in [[5e-324, 1.0], [1e-310, 1.0], [1e-200, 1e200], [1e-5, 1e100]] {
            for unit in ["", "bytes"] {
                let asked = Axis::numeric(&q(unit), &values, Scale::Log, false);
                assert!(!asked.log, "{values:?} {unit}: {asked:?}");
                let note = asked.note.as_deref().unwrap_or_default();
                assert!(note.contains("drawn linear, not log"), "{values:?}: {note}");
                assert!(!asked.ticks.is_empty(), "{values:?}: {asked:?}");
                let auto = Axis::numeric(&q(unit), &values, Scale::Auto, false);
                assert!(!auto.log && auto.note.is_none(), "{values:?}: {auto:?}");
            }
        }
        let wide = Axis::numeric(&q(""), &[1e-40, 1e50], Scale::Log, false);
        assert!(wide.log && wide.note.is_none() && wide.ticks.len() <= MAX_TICKS);
    }

    /// A linear range of zero or subnormal width (0 and 5e-324 on a y axis from zero) had a
    /// tick step of 0 and a loop over every i64.
    #[test]
    fn linear_axes_over_a_subnormal_span_end() {
        for values in [[0.0, 5e-324], [5e-324, 5e-324], [1e-320, 2e-320]] {
            let a = Axis::numeric(&q(""), &values, Scale::Linear, true);
            assert!(a.ticks.len() <= 2 * MAX_TICKS, "{values:?}: {a:?}");
        }
        let (ticks, light) = linear_ticks((0.0, 5e-324), 1.0);
        assert!(ticks.is_empty() && light.is_empty(), "{ticks:?}");
        assert!(multiples((-1e308, 1e308), 0.0).is_empty());
    }

    #[test]
    fn numbers_print_short() {
        assert_eq!(number_text(1000.0), "1000");
        assert_eq!(number_text(0.25), "0.25");
        assert_eq!(number_text(1.0 / 3.0), "0.333");
        assert_eq!(number_text(1e9), "1 G");
        assert_eq!(number_text(5e6), "5 M");
        assert_eq!(number_text(2.5e5), "250 k");
        assert_eq!(bytes_text(1536.0), "1.5 KB");
    }
}
