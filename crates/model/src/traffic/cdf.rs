//! An empirical flow-size distribution read from a text file: one point per line, a size in
//! bytes and the fraction of flows of at most that size, `#` comments and blank lines
//! skipped. The fractions rise from the first point to exactly 1 at the last, the sizes do
//! not fall, and a draw picks a fraction uniformly and interpolates the size linearly
//! between the two points around it (as the HPCC paper's traffic generator does). A file
//! that breaks a rule is refused naming its line.

use rnic_sim::Rng;

/// A flow-size distribution: its points, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeCdf {
    /// (size in bytes, cumulative fraction), sizes non-decreasing, fractions rising to 1.
    points: Vec<(f64, f64)>,
}

/// Why a distribution file was refused: the line (1-based) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}, line {line}: {what}")]
pub struct CdfError {
    pub file: String,
    pub line: usize,
    pub what: String,
}

impl SizeCdf {
    /// Parses the text of `file` (named in errors).
    pub fn parse(file: &str, text: &str) -> Result<SizeCdf, CdfError> {
        let err = |line: usize, what: String| CdfError {
            file: file.to_string(),
            line,
            what,
        };
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let n = i + 1;
            last_line = n;
            let (size, frac) = point(line).map_err(|w| err(n, w))?;
            check_point(&points, size, frac).map_err(|w| err(n, w))?;
            points.push((size, frac));
        }
        match points.last() {
            None => Err(err(
                1,
                "no points: give lines of `size_bytes fraction`".into(),
            )),
            Some(&(_, f)) if f != 1.0 => Err(err(
                last_line,
                format!("the last fraction is {f}, and a distribution ends at 1"),
            )),
            Some(_) => Ok(SizeCdf { points }),
        }
    }

    /// Reads and parses the file at `path` (under rnic's input-file cap).
    pub fn read(path: &std::path::Path) -> Result<SizeCdf, String> {
        let text = crate::input_file::read_text(path, "a flow-size distribution")
            .map_err(|e| e.to_string())?;
        SizeCdf::parse(&path.display().to_string(), &text).map_err(|e| e.to_string())
    }

    /// The size at cumulative fraction `u` (0 to 1), interpolated, at least 1 byte.
    pub fn size_at(&self, u: f64) -> u64 {
        let p = &self.points;
        let i = p.partition_point(|&(_, f)| f < u);
        let size = match i {
            0 => p[0].0,
            i if i >= p.len() => p[p.len() - 1].0,
            i => {
                let ((s0, f0), (s1, f1)) = (p[i - 1], p[i]);
                s0 + (s1 - s0) * (u - f0) / (f1 - f0)
            }
        };
        (size.round() as u64).max(1)
    }

    /// Draws a flow size.
    pub fn draw(&self, rng: &mut Rng) -> u64 {
        self.size_at(rng.gen_f64())
    }

    /// The mean flow size, bytes (each segment's midpoint weighted by its probability).
    pub fn mean_bytes(&self) -> f64 {
        let start = (self.points[0].0 * self.points[0].1).max(0.0);
        start
            + self
                .points
                .windows(2)
                .map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1))
                .sum::<f64>()
    }
}

/// A line's two numbers.
fn point(line: &str) -> Result<(f64, f64), String> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [size, frac] = fields[..] else {
        return Err(format!(
            "`{line}` is not `size_bytes fraction` (two numbers, e.g. `10000 0.15`)"
        ));
    };
    let size: f64 = size
        .parse()
        .map_err(|_| format!("size `{size}` is not a number of bytes"))?;
    let frac: f64 = frac
        .parse()
        .map_err(|_| format!("fraction `{frac}` is not a number"))?;
    Ok((size, frac))
}

/// A point must have a size of 0 or from 1 byte to the largest RDMA message (2 GiB: each
/// flow is one message), a fraction in 0..=1, and follow the points before it (sizes never
/// fall; fractions rise). Size 0 only at fraction 0, the origin the shipped files start
/// from: with a larger fraction that share of the flows would have no bytes at all, which a
/// flow cannot (a draw is at least 1 byte, so such a file would silently be another
/// distribution); for the same reason no size lies between 0 and 1.
fn check_point(points: &[(f64, f64)], size: f64, frac: f64) -> Result<(), String> {
    let most = crate::workload::MAX_MSG_BYTES as f64;
    if !(size == 0.0 || (1.0..=most).contains(&size)) {
        return Err(format!(
            "size {size} is not a byte count from 1 to {most} (2 GiB, the largest RDMA \
             message, and each flow is one), or 0 at fraction 0"
        ));
    }
    if !(0.0..=1.0).contains(&frac) {
        return Err(format!(
            "fraction {frac} is outside 0..1 (write 0.15, not 15 %)"
        ));
    }
    if size == 0.0 && frac > 0.0 {
        return Err(format!(
            "size 0 with fraction {frac}: that share of the flows would have no bytes; a \
             flow has at least one, and size 0 may only start the distribution, at fraction 0"
        ));
    }
    if let Some(&(s0, f0)) = points.last() {
        if size < s0 {
            return Err(format!(
                "size {size} is below the line before's {s0}: sort by size"
            ));
        }
        if frac <= f0 {
            return Err(format!(
                "fraction {frac} does not rise above the line before's {f0}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str) -> SizeCdf {
        let path = format!("{}/../../workloads/{name}", env!("CARGO_MANIFEST_DIR"));
        SizeCdf::read(std::path::Path::new(&path)).unwrap()
    }

    #[test]
    fn the_shipped_distributions_parse_and_have_their_known_means() {
        // The means by hand: each segment's midpoint times its probability, summed
        // (WebSearch: 750 + 750 + 2,500 + ... + 600,000 = 1,711,250 B).
        let web = shipped("websearch.cdf").mean_bytes();
        assert!((web - 1_711_250.0).abs() < 0.01, "{web}");
        let hdp = shipped("hadoop.cdf").mean_bytes();
        assert!((hdp - 120_420.75).abs() < 0.01, "{hdp}");
    }

    #[test]
    fn draws_follow_the_distribution() {
        let cdf = shipped("websearch.cdf");
        let mut rng = Rng::new(3);
        let n = 100_000;
        let draws: Vec<u64> = (0..n).map(|_| cdf.draw(&mut rng)).collect();
        let at_most = |s: u64| draws.iter().filter(|&&d| d <= s).count() as f64 / n as f64;
        assert!((at_most(10_000) - 0.15).abs() < 0.01);
        assert!((at_most(1_000_000) - 0.70).abs() < 0.01);
        assert!(draws.iter().all(|&d| (1..=30_000_000).contains(&d)));
        let mean = draws.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / cdf.mean_bytes() - 1.0).abs() < 0.05, "{mean}");
    }

    #[test]
    fn a_malformed_file_is_refused_naming_the_line() {
        let bad = [
            ("0 0\n10 0.5\n5 1\n", 3, "sort by size"),
            ("0 0\n10 15\n", 2, "outside 0..1"),
            ("0 0\n10 0.5\n", 2, "ends at 1"),
            ("0 0\n0 1\n", 2, "size 0 with fraction 1"),
            ("0 0.5\n10 1\n", 1, "size 0 may only start the distribution"),
            ("# only a comment\n", 1, "no points"),
            ("0 0\nten 1\n", 2, "not a number"),
            ("0 0\n10 0.5 7\n", 2, "not `size_bytes fraction`"),
            ("5 0.5\n10 0.5\n20 1\n", 2, "does not rise"),
            // Beyond one RDMA message: refused later, naming neither file nor line.
            (
                "0 0\n1000 0.5\n3e9 1\n",
                3,
                "size 3000000000 is not a byte count",
            ),
            // Below a byte: every draw became 1 byte, offering another load.
            ("0 0\n0.4 1\n", 2, "size 0.4 is not a byte count from 1"),
        ];
        for (text, line, what) in bad {
            let e = SizeCdf::parse("t.cdf", text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.to_string().contains(what), "{text:?}: {e}");
        }
    }
}
