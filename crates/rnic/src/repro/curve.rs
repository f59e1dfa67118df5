//! Curves from sweep results: the (x, y) points a claim or a figure reads, with the lookups
//! the evaluators share. Evaluators take curves rather than sweep results so that the suite
//! can check them on synthetic data as well as on reduced runs of the model.

use super::Outputs;
use crate::report::PerfResult;
use crate::sweep::{value_text, Point, Sweep};

/// (x, y) points sorted by x.
pub type Curve = Vec<(f64, f64)>;

fn num(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// The curve of `metric` over the sweep's x axis, for the points whose axes match `filter`
/// (`(key, value)` pairs compared as text). Points without the metric, or with a value that
/// is not finite, are left out.
pub fn curve(
    sw: &Sweep,
    results: &[(Point, PerfResult)],
    filter: &[(&str, &str)],
    metric: &str,
) -> Curve {
    let mut c: Curve = results
        .iter()
        .filter(|(p, _)| {
            filter.iter().all(|(k, v)| {
                sw.axis_index(k)
                    .is_some_and(|i| value_text(&p.values[i]) == *v)
            })
        })
        .filter_map(|(p, r)| {
            let x = num(&p.values[sw.x])?;
            let y = r.metric(metric)?.as_f64();
            y.is_finite().then_some((x, y))
        })
        .collect();
    c.sort_by(|a, b| a.0.total_cmp(&b.0));
    c
}

impl Outputs {
    /// The `i`-th sweep (in the experiment's sweep order) and its results.
    pub fn sweep(&self, i: usize) -> anyhow::Result<(&Sweep, &[(Point, PerfResult)])> {
        let (sw, r) = self
            .sweeps
            .get(i)
            .ok_or_else(|| anyhow::anyhow!("sweep {i} has no results"))?;
        Ok((sw, r.as_slice()))
    }

    /// [`curve`] of the `i`-th sweep.
    pub fn curve(&self, i: usize, filter: &[(&str, &str)], metric: &str) -> anyhow::Result<Curve> {
        let (sw, r) = self.sweep(i)?;
        Ok(curve(sw, r, filter, metric))
    }
}

/// The y value at exactly `x`.
pub fn at(c: &Curve, x: f64) -> Option<f64> {
    c.iter().find(|p| p.0 == x).map(|p| p.1)
}

/// The point with the largest y.
pub fn max_point(c: &Curve) -> Option<(f64, f64)> {
    c.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The point with the smallest y.
pub fn min_point(c: &Curve) -> Option<(f64, f64)> {
    c.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))
}

/// `c` divided by its largest y (the paper's "normalized message rate").
pub fn normalized(c: &Curve) -> Curve {
    let m = max_point(c).map_or(1.0, |p| p.1).max(f64::MIN_POSITIVE);
    c.iter().map(|&(x, y)| (x, y / m)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let c: Curve = vec![(1.0, 4.0), (2.0, 8.0), (3.0, 2.0)];
        assert_eq!(at(&c, 2.0), Some(8.0));
        assert_eq!(at(&c, 5.0), None);
        assert_eq!(max_point(&c), Some((2.0, 8.0)));
        assert_eq!(min_point(&c), Some((3.0, 2.0)));
        assert_eq!(normalized(&c)[0], (1.0, 0.5));
        assert!(max_point(&Curve::new()).is_none());
    }
}
