//! `rnic sweep merge DIR... [--out DIR]`: puts the shards of a sweep
//! ([`super::shard`]) back together and writes `<name>.csv`, `<name>.json` and the plots,
//! the same bytes as the whole sweep run on one machine (`rnic sweep FILE --out DIR`).
//!
//! Before writing anything it checks that the shard files (`<name>.shard-I-of-N.json` in the
//! directories given) are one sweep's: the same name, sweep file text, number of shards and
//! grid (size and hash of the resolved points), each shard once, each point once and in the
//! shard that owns it, and no point missing. A failed check is a usage error (exit 2) that
//! names the files, and for missing points their positions and shards. The results are read
//! back exactly (JSON numbers round-trip), so the CSV, JSON and plots are those the whole
//! sweep writes.

use super::run::{output_files, write_outputs, SweepOutcome, WALL_SECONDS};
use super::shard::{self, Shard, ShardFile, FORMAT};
use super::workload::WorkloadPoint;
use super::PointResult;
use super::{parse_sweep, Point, Sweep, MAX_POINTS};
use crate::report::PerfResult;
use crate::{output, UsageError};
use rnic_model::words::counted;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Positions listed in a message before the rest are counted.
const LISTED: usize = 20;

/// The most bytes of one shard file read back: 1 GiB. Shards are rnic's own output, a few
/// kilobytes per point, so a shard of a million-point sweep split in a few fits; a file past
/// it is not a shard (the text input cap, [`rnic_model::input_file::MAX_INPUT_BYTES`], is
/// for files people write).
const MAX_SHARD_BYTES: u64 = 1 << 30;

/// A shard file read from disk.
struct Found {
    path: PathBuf,
    file: ShardFile,
}

fn usage(msg: String) -> anyhow::Error {
    UsageError(msg).into()
}

/// `a, b, c` of at most [`LISTED`] numbers, then how many more.
fn list(positions: &[usize]) -> String {
    let mut s: Vec<String> = positions
        .iter()
        .take(LISTED)
        .map(|p| p.to_string())
        .collect();
    if positions.len() > LISTED {
        s.push(format!("and {} more", positions.len() - LISTED));
    }
    s.join(", ")
}

fn dirs_text(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads every shard file in `dirs` (in name order); partial shard files are returned
/// apart, to say which shards did not finish.
fn read_shards(dirs: &[PathBuf]) -> anyhow::Result<(Vec<Found>, Vec<PathBuf>)> {
    let mut found = Vec::new();
    let mut partials = Vec::new();
    // A directory given twice (or by two spellings) is read once.
    let mut seen = std::collections::BTreeSet::new();
    for dir in dirs {
        if !seen.insert(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone())) {
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| {
            usage(format!(
                "cannot read the shard directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let path = dir.join(&name);
            if name.ends_with(".partial.csv") && name.contains(".shard-") {
                partials.push(path);
                continue;
            }
            let Some((_, named)) = shard::parse_file_name(&name) else {
                continue;
            };
            let text =
                rnic_model::input_file::read_text_capped(&path, "a shard file", MAX_SHARD_BYTES)
                    .map_err(|e| usage(e.to_string()))?;
            let file: ShardFile = serde_json::from_str(&text).map_err(|e| {
                usage(format!(
                    "{} is not a shard file of `rnic sweep FILE --shard I/N` ({e}); move it \
                     out of the directory",
                    path.display()
                ))
            })?;
            if file.format != FORMAT {
                return Err(usage(format!(
                    "{} is a shard file of format `{}`, this rnic reads `{FORMAT}`: run the \
                     shard again with this rnic",
                    path.display(),
                    file.format
                )));
            }
            check_grid_size(&path, &file)?;
            if file.shard() != named {
                return Err(usage(format!(
                    "{} holds {} but its name says {named}: was it renamed? Give each shard \
                     its own file name as `rnic sweep --shard` writes it",
                    path.display(),
                    file.shard()
                )));
            }
            found.push(Found { path, file });
        }
    }
    Ok((found, partials))
}

/// Refuses a shard whose `shard.grid_points` is more than any sweep may have
/// ([`MAX_POINTS`]): the merge makes a slot per grid point, so an edited count would
/// allocate without bound before any other check could refuse it.
fn check_grid_size(path: &Path, file: &ShardFile) -> anyhow::Result<()> {
    let points = file.shard.grid_points;
    if points > MAX_POINTS {
        return Err(usage(format!(
            "{}: `shard.grid_points` is {points}, but a sweep has at most {MAX_POINTS} \
             points, so no `rnic sweep --shard` wrote it: was the file edited? Run the shard \
             again",
            path.display()
        )));
    }
    Ok(())
}

/// What identifies a sweep's shards: name, sweep file text, shards, grid size and hash.
fn identity(f: &ShardFile) -> (&str, &str, usize, usize, &str) {
    (
        &f.name,
        &f.sweep.source,
        f.shard.count,
        f.shard.grid_points,
        &f.shard.grid_hash,
    )
}

/// Refuses shard files of different sweeps, naming each group of files.
fn check_one_sweep(found: &[Found]) -> anyhow::Result<()> {
    let mut groups: Vec<(&Found, Vec<String>)> = Vec::new();
    for f in found {
        let file = f.path.display().to_string();
        match groups
            .iter_mut()
            .find(|(g, _)| identity(&g.file) == identity(&f.file))
        {
            Some((_, files)) => files.push(file),
            None => groups.push((f, vec![file])),
        }
    }
    if groups.len() == 1 {
        return Ok(());
    }
    let described: Vec<String> = groups
        .iter()
        .map(|(g, files)| {
            let s = &g.file.shard;
            format!(
                "sweep `{}` from {} in {} shards, grid of {} points with hash {}: {}",
                g.file.name,
                g.file.sweep.file,
                s.count,
                s.grid_points,
                s.grid_hash,
                files.join(", ")
            )
        })
        .collect();
    Err(usage(format!(
        "the shard files come from {} different runs of a sweep (they differ in {}); merge \
         the shards of one run, `rnic sweep FILE --shard I/N` for every I with the same FILE, \
         N, --set, --seed and --profile: {}",
        groups.len(),
        differences(&groups.iter().map(|(g, _)| &g.file).collect::<Vec<_>>()),
        described.join("; ")
    )))
}

/// What differs between shard files of different runs, for the error that refuses them.
fn differences(files: &[&ShardFile]) -> String {
    let differ = |key: &dyn Fn(&ShardFile) -> String| files.iter().any(|f| key(f) != key(files[0]));
    let mut what = Vec::new();
    if differ(&|f| f.name.clone()) {
        what.push("the sweep's name");
    }
    if differ(&|f| f.sweep.source.clone()) {
        what.push("the sweep file's text");
    }
    if differ(&|f| f.shard.count.to_string()) {
        what.push("the number of shards N of --shard I/N");
    }
    if differ(&|f| format!("{} {}", f.shard.grid_points, f.shard.grid_hash)) {
        what.push("the grid's points (their configuration: --set, --seed, --profile)");
    }
    what.join(", ")
}

/// Merges the shards in `dirs` into `out_dir`; returns the sweep and what was written.
pub fn merge(
    dirs: &[PathBuf],
    out_dir: &Path,
    log: &mut dyn Write,
) -> anyhow::Result<(Sweep, SweepOutcome)> {
    let (found, partials) = read_shards(dirs)?;
    let Some(first) = found.first() else {
        return Err(no_shard_files(dirs, &partials));
    };
    check_one_sweep(&found)?;
    let set = ShardSet {
        dirs,
        found: &found,
        partials: &partials,
        first,
        name: &first.file.name,
        count: first.file.shard.count,
        total: first.file.shard.grid_points,
    };
    let by_shard = set.each_shard_once()?;
    let slots = set.each_point_once()?;
    set.check_no_point_missing(&slots, &by_shard)?;
    let sweep = set.stored_sweep()?;
    let results = read_results(&sweep, &slots)?;

    output::check_dir("merge output directory (--out)", out_dir)?;
    for f in output_files(&sweep, out_dir, None)
        .into_iter()
        .filter(|f| !f.to_string_lossy().ends_with(".partial.csv"))
    {
        output::check_file("merge output", &f)?;
    }
    let (name, total, count) = (set.name, set.total, set.count);
    let _ = writeln!(
        log,
        "rnic: sweep merge {name}: {total} points from {}",
        counted(count as u64, "shard")
    );
    let outcome = write_outputs(&sweep, results, out_dir, None)?;
    Ok((sweep, outcome))
}

/// The usage error for directories without a shard file, naming the partial files of shards
/// that did not finish, if any.
fn no_shard_files(dirs: &[PathBuf], partials: &[PathBuf]) -> anyhow::Error {
    let unfinished = if partials.is_empty() {
        String::new()
    } else {
        format!(
            " (only partial files of shards that did not finish: {})",
            partials
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    usage(format!(
        "no shard files in {}{unfinished}: `rnic sweep FILE --shard I/N --out DIR` writes \
         <name>.shard-I-of-N.json there; give the directories it wrote to",
        dirs_text(dirs)
    ))
}

/// One grid point's place in the merge: the shard file it came from, its axis values and
/// its result (`None` while no shard has given it).
type Slot<'a> = Option<(&'a Found, &'a serde_json::Value, &'a serde_json::Value)>;

/// The shard files of one sweep ([`check_one_sweep`] passed), and what the first says about
/// the sweep: its name, number of shards and grid points.
struct ShardSet<'a> {
    dirs: &'a [PathBuf],
    found: &'a [Found],
    partials: &'a [PathBuf],
    first: &'a Found,
    name: &'a str,
    count: usize,
    total: usize,
}

impl<'a> ShardSet<'a> {
    /// The files by shard index; refuses a shard in more than one file.
    fn each_shard_once(&self) -> anyhow::Result<BTreeMap<usize, Vec<&'a Found>>> {
        let (name, count) = (self.name, self.count);
        let mut by_shard: BTreeMap<usize, Vec<&Found>> = BTreeMap::new();
        for f in self.found {
            by_shard.entry(f.file.shard.index).or_default().push(f);
        }
        if let Some((i, fs)) = by_shard.iter().find(|(_, fs)| fs.len() > 1) {
            return Err(usage(format!(
                "shard {i} of {count} of sweep `{name}` is in more than one file: {}; keep one",
                fs.iter()
                    .map(|f| f.path.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        Ok(by_shard)
    }

    /// Every point in its slot; refuses a point outside the grid, in a shard that does not
    /// own it, or given twice.
    fn each_point_once(&self) -> anyhow::Result<Vec<Slot<'a>>> {
        let total = self.total;
        let mut slots: Vec<Slot<'a>> = vec![None; total];
        for f in self.found {
            let s = f.file.shard();
            for p in &f.file.points {
                let pos = p.position;
                if pos == 0 || pos > total {
                    return Err(usage(format!(
                        "{}: point {pos} is outside the grid of {total} points",
                        f.path.display()
                    )));
                }
                if !s.owns(pos - 1) {
                    return Err(usage(format!(
                        "{}: point {pos} belongs to {}, not to {s}",
                        f.path.display(),
                        Shard::of_point(pos - 1, self.count)
                    )));
                }
                if slots[pos - 1].is_some() {
                    return Err(usage(format!(
                        "{}: point {pos} is there twice",
                        f.path.display()
                    )));
                }
                slots[pos - 1] = Some((f, &p.point, &p.result));
            }
        }
        Ok(slots)
    }

    /// Refuses a merge with points missing, saying for each shard that lacks some whether
    /// its file lacks them or it has no file (and then whether it did not finish).
    fn check_no_point_missing(
        &self,
        slots: &[Slot<'_>],
        by_shard: &BTreeMap<usize, Vec<&Found>>,
    ) -> anyhow::Result<()> {
        let (name, count, total) = (self.name, self.count, self.total);
        let missing: Vec<usize> = (0..total)
            .filter(|&i| slots[i].is_none())
            .map(|i| i + 1)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut per_shard: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &pos in &missing {
            per_shard
                .entry(Shard::of_point(pos - 1, count).index)
                .or_default()
                .push(pos);
        }
        let why: Vec<String> = per_shard
            .iter()
            .map(|(&i, pos)| match by_shard.get(&i) {
                Some(fs) => format!(
                    "{} (points {}): {} lacks them",
                    Shard { index: i, count },
                    list(pos),
                    fs[0].path.display()
                ),
                None => self.shard_without_file(i, pos),
            })
            .collect();
        Err(usage(format!(
            "cannot merge sweep `{name}`: {} of {total} points are missing ({}); {}",
            missing.len(),
            list(&missing),
            why.join("; ")
        )))
    }

    /// Why shard `i`, with no file, lacks the points `pos`: its partial file if it left one,
    /// and the command that runs it.
    fn shard_without_file(&self, i: usize, pos: &[usize]) -> String {
        let s = Shard {
            index: i,
            count: self.count,
        };
        let stem = shard::stem(self.name, Some(s));
        let partial = format!("{stem}.partial.csv");
        let unfinished = self
            .partials
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == partial.as_str()))
            .map(|p| {
                format!(
                    " (only {}: the shard did not finish; run it again)",
                    p.display()
                )
            })
            .unwrap_or_default();
        format!(
            "{s} (points {}): no {stem}.json in {}{unfinished}; run \
             `rnic sweep {} --shard {i}/{}` and give its --out directory \
             too",
            list(pos),
            dirs_text(self.dirs),
            self.first.file.sweep.file,
            self.count
        )
    }

    /// The sweep itself, from the text the shards ran; refuses one that does not parse or
    /// does not match what the shards say of it.
    fn stored_sweep(&self) -> anyhow::Result<Sweep> {
        let first = self.first;
        let sweep = parse_sweep(&first.file.sweep.source, &first.file.sweep.file).map_err(|e| {
            usage(format!(
                "the sweep file stored in {} ({}) does not parse with this rnic: {e}",
                first.path.display(),
                first.file.sweep.file
            ))
        })?;
        let differences = self.stored_sweep_differences(&sweep);
        if !differences.is_empty() {
            return Err(usage(format!(
                "the sweep file stored in {} does not match what its shards say of it: {}; \
                 were the shard files edited?",
                first.path.display(),
                differences.join("; ")
            )));
        }
        Ok(sweep)
    }

    /// What the sweep parsed from the stored text gives otherwise than the shard files say
    /// (name, grid size, each file's axis keys), each as "A, the shards say B", so a
    /// refusal names the field that was edited rather than two equal descriptions.
    fn stored_sweep_differences(&self, sweep: &Sweep) -> Vec<String> {
        let mut differences = Vec::new();
        if sweep.name != self.name {
            differences.push(format!(
                "the name is `{}`, the shards say `{}`",
                sweep.name, self.name
            ));
        }
        if sweep.point_count() != self.total {
            differences.push(format!(
                "the grid has {} points, the shards say {} (`shard.grid_points`)",
                sweep.point_count(),
                self.total
            ));
        }
        let axes: Vec<String> = sweep.axes.iter().map(|a| a.key.clone()).collect();
        if let Some(f) = self.found.iter().find(|f| f.file.axes != axes) {
            differences.push(format!(
                "the axes are [{}], {} says [{}] (`axes`)",
                axes.join(", "),
                f.path.display(),
                f.file.axes.join(", ")
            ));
        }
        differences
    }
}

/// Each point's result read back, in grid order; refuses a point whose axis values are not
/// the grid's there, or whose result does not read back. A shard stores results without
/// their wall time (the sweep's JSON leaves it out), so it reads back as 0.
fn read_results(sweep: &Sweep, slots: &[Slot<'_>]) -> anyhow::Result<Vec<(Point, PointResult)>> {
    let mut results: Vec<(Point, PointResult)> = Vec::with_capacity(slots.len());
    for (p, slot) in sweep.points().into_iter().zip(slots) {
        // Missing points were refused above; an empty slot here is this function's bug.
        let Some((f, at, value)) = slot else {
            anyhow::bail!("internal error: point {} lost while merging", p.index + 1);
        };
        if **at != super::run::point_value(sweep, &p)? {
            return Err(usage(format!(
                "{}: point {} has the axis values {at}, but the sweep's grid has {} there",
                f.path.display(),
                p.index + 1,
                sweep.describe(&p)
            )));
        }
        let mut v = (*value).clone();
        if let Some(o) = v.as_object_mut() {
            o.insert(WALL_SECONDS.to_string(), serde_json::Value::from(0.0));
        }
        let read = if sweep.workload.is_some() {
            serde_json::from_value::<WorkloadPoint>(v).map(PointResult::from)
        } else {
            serde_json::from_value::<PerfResult>(v).map(PointResult::from)
        };
        let r = read.map_err(|e| {
            usage(format!(
                "{}: the result of point {} does not read back ({e}); run that shard again \
                 with this rnic",
                f.path.display(),
                p.index + 1
            ))
        })?;
        results.push((p, r));
    }
    Ok(results)
}
