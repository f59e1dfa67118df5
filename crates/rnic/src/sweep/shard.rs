//! Sweeps split over machines: `rnic sweep FILE --shard I/N` runs the grid points I-1,
//! I-1+N, I-1+2N, ... (0-based; shard I of N, 1 ≤ I ≤ N) and writes
//! `<name>.shard-I-of-N.csv` and `.json`, no plots; `rnic sweep merge` ([`super::merge`])
//! puts the shards back together.
//!
//! A shard's CSV has a leading `point` column (the 1-based grid position, as in the partial
//! file), then the columns of the sweep's CSV that its own points report (a metric only
//! other shards' points have is not among them; the merge, from the JSON, has them all).
//! Its JSON ([`ShardFile`]) carries what the merge needs and checks: the sweep file's text
//! and path (the merge parses it again for the plots), the shard number and count, the
//! grid's size and a hash of every resolved point ([`grid_hash`]: profile, configuration
//! and test of each point, so shards run with different `--set`, `--seed` or `--profile`
//! or from another version of the file are told apart), and each point's position, axis
//! values and result.

use super::{Job, ResolvedPoint, Sweep, MAX_POINTS};
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// Marks a shard's JSON file.
pub const FORMAT: &str = "rnic-sweep-shard/1";

/// Shard `index` of `count` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `I/N`; the error says what to give instead.
    pub fn parse(s: &str) -> Result<Shard, String> {
        let example = "e.g. --shard 2/8 runs the second of 8 shards";
        let (i, n) = s.trim().split_once('/').ok_or_else(|| {
            format!("`{s}` is not I/N: give the shard number and the number of shards, {example}")
        })?;
        let num = |v: &str, what: &str| {
            v.trim().parse::<usize>().map_err(|_| {
                format!("`{v}` is not a {what} in `{s}`: give I/N with whole numbers, {example}")
            })
        };
        let (index, count) = (num(i, "shard number")?, num(n, "number of shards")?);
        if count == 0 || count > MAX_POINTS {
            return Err(format!(
                "the number of shards must be from 1 to {MAX_POINTS}, not {count}; {example}"
            ));
        }
        if index == 0 || index > count {
            return Err(format!(
                "there is no shard {index} of {count}: shards are numbered from 1, so use \
                 --shard 1/{count} to --shard {count}/{count}"
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether grid point `i` (0-based) is this shard's.
    pub fn owns(self, i: usize) -> bool {
        i % self.count == self.index - 1
    }

    /// The shard that runs grid point `i` (0-based).
    pub fn of_point(i: usize, count: usize) -> Shard {
        Shard {
            index: i % count + 1,
            count,
        }
    }

    /// How many of `total` grid points this shard runs.
    pub fn points_of(self, total: usize) -> usize {
        (total + self.count - self.index) / self.count
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shard {} of {}", self.index, self.count)
    }
}

/// The stem of a sweep's output files: `<name>`, or `<name>.shard-I-of-N` for a shard.
pub fn stem(name: &str, shard: Option<Shard>) -> String {
    match shard {
        None => name.to_string(),
        Some(s) => format!("{name}.shard-{}-of-{}", s.index, s.count),
    }
}

/// The shard a file name `<name>.shard-I-of-N.json` names, with `<name>`.
pub fn parse_file_name(file: &str) -> Option<(String, Shard)> {
    let rest = file.strip_suffix(".json")?;
    let (name, tail) = rest.rsplit_once(".shard-")?;
    let (i, n) = tail.split_once("-of-")?;
    let shard = Shard::parse(&format!("{i}/{n}")).ok()?;
    (!name.is_empty()).then(|| (name.to_string(), shard))
}

/// FNV-1a, 64 bits: a stable hash (the same on every machine and build).
fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A hash of the resolved grid: every point's position, axis values, profile,
/// configuration and test, in grid order, as 16 hex digits.
pub fn grid_hash(points: &[ResolvedPoint]) -> anyhow::Result<String> {
    let mut h = 0xcbf2_9ce4_8422_2325;
    for p in points {
        let values: Vec<String> = p.point.values.iter().map(|v| v.to_string()).collect();
        let head = (p.point.index, values, &p.profile, &p.config);
        let text = match &p.job {
            Job::Perf(spec) => serde_json::to_string(&(head.0, head.1, head.2, head.3, spec)),
            Job::Workload(run) => serde_json::to_string(&(head, &run.spec)),
        }
        .context("hashing the sweep's grid")?;
        h = fnv1a(text.as_bytes(), h);
        h = fnv1a(b"\n", h);
    }
    Ok(format!("{h:016x}"))
}

/// Which shard a file is, of which grid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardInfo {
    /// Shard number, 1-based.
    pub index: usize,
    /// Number of shards.
    pub count: usize,
    /// Points of the whole grid.
    pub grid_points: usize,
    /// [`grid_hash`] of the whole grid.
    pub grid_hash: String,
}

/// The sweep file a shard ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSource {
    /// The path it was given as.
    pub file: String,
    /// Its text.
    pub source: String,
}

/// One point of a shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardPoint {
    /// 1-based grid position.
    pub position: usize,
    /// Axis values by axis key.
    pub point: serde_json::Value,
    /// The result, as in the sweep's JSON.
    pub result: serde_json::Value,
}

/// A shard's JSON file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardFile {
    /// [`FORMAT`].
    pub format: String,
    /// The sweep's name.
    pub name: String,
    pub shard: ShardInfo,
    pub sweep: SweepSource,
    /// Axis keys, outermost first.
    pub axes: Vec<String>,
    /// This shard's points in grid order.
    pub points: Vec<ShardPoint>,
}

impl ShardFile {
    /// A shard's file: `points` are the shard's (point, result value) in grid order.
    pub fn new(
        sweep: &Sweep,
        shard: Shard,
        grid_points: usize,
        grid_hash: String,
        points: Vec<ShardPoint>,
    ) -> ShardFile {
        ShardFile {
            format: FORMAT.to_string(),
            name: sweep.name.clone(),
            shard: ShardInfo {
                index: shard.index,
                count: shard.count,
                grid_points,
                grid_hash,
            },
            sweep: SweepSource {
                file: sweep.origin.clone(),
                source: sweep.source.clone(),
            },
            axes: sweep.axes.iter().map(|a| a.key.clone()).collect(),
            points,
        }
    }

    /// The shard it is.
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.shard.index,
            count: self.shard.count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_own_every_nth_point() {
        assert_eq!(Shard::parse("2/3"), Ok(Shard { index: 2, count: 3 }));
        assert_eq!(Shard::parse(" 1/1 "), Ok(Shard { index: 1, count: 1 }));
        for (bad, says) in [
            ("0/3", "--shard 1/3 to --shard 3/3"),
            ("4/3", "there is no shard 4 of 3"),
            ("a/b", "`a` is not a shard number"),
            ("2", "is not I/N"),
            ("1/0", "from 1 to"),
            ("-1/3", "is not a shard number"),
        ] {
            let e = Shard::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let s = Shard { index: 2, count: 3 };
        let mine: Vec<usize> = (0..8).filter(|&i| s.owns(i)).collect();
        assert_eq!(mine, [1, 4, 7]);
        assert_eq!(s.points_of(8), 3);
        assert_eq!(Shard { index: 3, count: 3 }.points_of(8), 2);
        assert_eq!(Shard { index: 7, count: 8 }.points_of(6), 0);
        assert_eq!(Shard::of_point(4, 3), s);
        assert_eq!(stem("cliff", Some(s)), "cliff.shard-2-of-3");
        assert_eq!(
            parse_file_name("a.b.shard-2-of-3.json"),
            Some(("a.b".to_string(), s))
        );
        assert_eq!(parse_file_name("a.shard-4-of-3.json"), None);
        assert_eq!(parse_file_name("a.shard-2-of-3.csv"), None);
        assert_eq!(parse_file_name("a.json"), None);
    }
}
