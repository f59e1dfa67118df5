//! Output files and directories: checked before the work, written with errors that say which.
//!
//! Every command that writes files (`--json`, `--pcap`, a sweep's `--out`, a reproduction's
//! `--out`) calls [`check_file`] or [`check_dir`] for each output *before* it simulates
//! anything, so an unwritable location fails in a moment rather than after an hour of
//! simulation. A file's directory must exist: rnic creates only the file, as `tcpdump -w`
//! does, so a mistyped directory is refused rather than created (a scenario file's `[output]`
//! paths are the exception: [`create_parent`] makes their directories, which ship with the
//! scenario's layout). A directory output (`--out`) is created with its parents. A check
//! creates and removes a probe file; it leaves no empty output behind. An output that already
//! exists is opened for writing without truncation, so its contents survive a failed check. Later writes go through [`write_file`]. Every failure is an [`OutputError`] (exit
//! status 4) naming the path and the operating system's error.

use crate::OutputError;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Name of the probe file [`check_dir`] creates (and removes) in a directory.
const PROBE_NAME: &str = ".rnic-write-probe";

fn fail(what: &str, path: &Path, doing: &str, e: &std::io::Error) -> OutputError {
    OutputError(format!(
        "cannot write the {what} {}: {doing}: {e}; choose a writable location",
        path.display()
    ))
}

fn parent_of(path: &Path) -> Option<&Path> {
    path.parent().filter(|d| !d.as_os_str().is_empty())
}

/// Creates `dir` and its parents; `what` and `path` name the output in the error.
fn create_dirs(what: &str, path: &Path, dir: &Path) -> Result<(), OutputError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        fail(
            what,
            path,
            &format!("creating directory {}", dir.display()),
            &e,
        )
    })
}

/// Refuses two outputs of one command that name the same file (`--json x --pcap x`): the
/// later write would replace the earlier one in silence. `outputs` pairs each flag with its
/// path, if given; `-` (standard output) is no file. Paths are compared where they land
/// ([`Destination`]), so `out/../out/x` and a symlinked directory name `out/x` too.
pub fn check_distinct(outputs: &[(&str, Option<&Path>)]) -> Result<(), crate::UsageError> {
    let given: Vec<(&str, Destination)> = outputs
        .iter()
        .filter_map(|(flag, p)| {
            let p = (*p)?;
            (p != Path::new("-")).then(|| (*flag, Destination::of(p)))
        })
        .collect();
    for (i, (flag, dest)) in given.iter().enumerate() {
        if let Some((first, _)) = given[..i].iter().find(|(_, d)| d.is_same_as(dest)) {
            return Err(crate::UsageError(format!(
                "{first} and {flag} both name {}: one would overwrite the other; give each \
                 output a file of its own",
                dest.path().display()
            )));
        }
    }
    Ok(())
}

/// Refuses an output that would land on one of the command's input files (`rnic pcap check
/// x.pcap --json x.pcap`, `rnic run s.toml --json s.toml`): the write would replace the
/// input (perhaps a capture nobody can take again) with the report. `outputs` pairs each
/// flag with its path, as for [`check_distinct`]; `inputs` pairs what each input is (e.g.
/// "the scenario file") with its path. Called before anything is run or written.
pub fn check_not_inputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(String, PathBuf)],
) -> Result<(), crate::UsageError> {
    let inputs: Vec<(&str, &Path, Destination)> = inputs
        .iter()
        .map(|(what, p)| (what.as_str(), p.as_path(), Destination::of(p)))
        .collect();
    for (flag, path) in outputs {
        let Some(path) = path.filter(|p| *p != Path::new("-")) else {
            continue;
        };
        let dest = Destination::of(path);
        if let Some((what, input, _)) = inputs.iter().find(|(_, _, d)| d.is_same_as(&dest)) {
            return Err(crate::UsageError(format!(
                "{flag} {} is {what} {}: writing it would replace the input; name another \
                 file for the output",
                path.display(),
                input.display()
            )));
        }
    }
    Ok(())
}

/// Where an output's bytes land: the path as the operating system resolves it when the
/// file is written, so two spellings of one file compare equal. Made absolute, its longest
/// existing ancestor is canonicalised (symlinks and `..` resolved as the system resolves
/// them) and the rest, which does not exist yet and so holds no symlink, is appended with
/// `.` and `..` taken lexically. A file that exists is also known by its device and inode,
/// so a hard link to it is the same file (a write truncates and refills it in place).
#[derive(Debug, Clone)]
pub struct Destination {
    path: PathBuf,
    /// Device and inode, when the file exists (Unix).
    file_id: Option<(u64, u64)>,
}

impl Destination {
    /// Where a write to `path` would land.
    pub fn of(path: &Path) -> Destination {
        let path = resolved(path);
        Destination {
            file_id: file_id(&path),
            path,
        }
    }

    /// The resolved absolute path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a write to one replaces the other.
    pub fn is_same_as(&self, other: &Destination) -> bool {
        self.path == other.path || (self.file_id.is_some() && self.file_id == other.file_id)
    }
}

/// Symlinks followed at most this often before a path is taken as it stands (as the
/// system's `ELOOP` limit, which would then refuse the write anyway).
const MAX_SYMLINKS: usize = 40;

/// `path` made absolute and resolved as [`Destination`] describes.
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    resolve_from(absolute, MAX_SYMLINKS)
}

fn resolve_from(absolute: PathBuf, links_left: usize) -> PathBuf {
    for ancestor in absolute.ancestors() {
        let rest = absolute.strip_prefix(ancestor).unwrap_or(Path::new(""));
        if let Ok(canonical) = ancestor.canonicalize() {
            return with_lexical_rest(canonical, rest);
        }
        // A dangling symlink: writing through it creates its target, so it names that.
        if let (Ok(target), Some(dir), true) = (
            std::fs::read_link(ancestor),
            ancestor.parent(),
            links_left > 0,
        ) {
            return resolve_from(with_lexical_rest(dir.join(target), rest), links_left - 1);
        }
    }
    with_lexical_rest(PathBuf::new(), &absolute)
}

/// `base` with the components of `rest` appended, `.` dropped and `..` removing the last.
fn with_lexical_rest(mut base: PathBuf, rest: &Path) -> PathBuf {
    for part in rest.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                base.pop();
            }
            other => base.push(other),
        }
    }
    base
}

#[cfg(unix)]
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// Creates the directories above the file `path` (for a scenario file's `[output]` paths).
pub fn create_parent(what: &str, path: &Path) -> Result<(), OutputError> {
    match parent_of(path) {
        Some(dir) => create_dirs(what, path, dir),
        None => Ok(()),
    }
}

/// Checks that the file `path` can be written: its directory must exist; then it either
/// opens the existing file for writing (without truncating it) or creates it and removes it
/// again. `what` names the output in errors, e.g. "JSON output".
pub fn check_file(what: &str, path: &Path) -> Result<(), OutputError> {
    // Outputs that can go to standard output (`--json -`) take `-` before this check; for
    // the others `-` would be a file of that name, where `tcpdump -w -` means stdout.
    if path == Path::new("-") {
        return Err(OutputError(format!(
            "the {what} cannot go to standard output (\"-\"): name a file (only --json takes \
             - for standard output)"
        )));
    }
    if let Some(dir) = parent_of(path).filter(|d| !d.is_dir()) {
        let is = if dir.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        return Err(OutputError(format!(
            "cannot write the {what} {}: {} {is}; rnic creates only the file (as tcpdump -w \
             does): create the directory first, or name a file in an existing one",
            path.display(),
            dir.display()
        )));
    }
    if path.is_dir() {
        return Err(OutputError(format!(
            "cannot write the {what} {}: it is a directory; name a file",
            path.display()
        )));
    }
    match OpenOptions::new().write(true).create_new(true).open(path) {
        Ok(f) => {
            drop(f);
            std::fs::remove_file(path).map_err(|e| fail(what, path, "removing the probe file", &e))
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => OpenOptions::new()
            .write(true)
            .open(path)
            .map(drop)
            .map_err(|e| fail(what, path, "opening the existing file", &e)),
        Err(e) => Err(fail(what, path, "creating the file", &e)),
    }
}

/// Checks that files can be written in `dir`: creates it (and its parents), then creates,
/// writes and removes a probe file in it.
pub fn check_dir(what: &str, dir: &Path) -> Result<(), OutputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutputError(format!(
            "cannot write the {what} {}: it is a file, not a directory; name a directory (it \
             is created if missing)",
            dir.display()
        )));
    }
    create_dirs(what, dir, dir)?;
    // Unique per process and call, so concurrent checks of one directory do not collide.
    static PROBES: AtomicUsize = AtomicUsize::new(0);
    let n = PROBES.fetch_add(1, Ordering::Relaxed);
    let probe: PathBuf = dir.join(format!("{PROBE_NAME}-{}-{n}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&probe)
        .and_then(|mut f| f.write_all(b"rnic"));
    let removed = std::fs::remove_file(&probe);
    written.map_err(|e| fail(what, dir, "creating a file in it", &e))?;
    removed.map_err(|e| fail(what, dir, "removing the probe file", &e))
}

/// Writes `bytes` to `path`, creating parent directories; failures are [`OutputError`]s
/// that name the file.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    if let Some(dir) = parent_of(path) {
        create_dirs("output", path, dir)?;
    }
    write_named("output", path, bytes)
}

/// Writes `bytes` to the file `path`, an output `what` names in the error (e.g.
/// "--out_json_file"); its directory exists, as [`check_file`] found before the run.
pub fn write_named(what: &str, path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    std::fs::write(path, bytes).map_err(|e| fail(what, path, "writing it", &e))
}

/// Removes `path` if it exists (a partial file once the whole one is written).
pub fn remove_file(path: &Path) -> Result<(), OutputError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(fail("output", path, "removing it", &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rnic-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// Two spellings of one file were compared as written (made absolute only), so `..`,
    /// a symlinked directory or a hard link let one output replace the other.
    #[cfg(unix)]
    #[test]
    fn one_file_spelled_two_ways_is_one_destination() {
        let d = tmp("spellings");
        std::fs::create_dir_all(d.join("out")).unwrap();
        std::os::unix::fs::symlink(d.join("out"), d.join("link")).unwrap();
        let same =
            |a: &str, b: &str| Destination::of(&d.join(a)).is_same_as(&Destination::of(&d.join(b)));
        // Not yet written: resolved through the existing directories.
        assert!(same("out/a.json", "out/../out/a.json"));
        assert!(same("out/a.json", "./out/./a.json"));
        assert!(same("out/a.json", "link/a.json"));
        assert!(
            same("new/a.json", "new/../new/a.json"),
            "below a missing directory"
        );
        assert!(!same("out/a.json", "out/b.json"));
        // Written: a hard link, and a dangling symlink whose write creates its target.
        std::fs::write(d.join("out/a.json"), "x").unwrap();
        std::fs::hard_link(d.join("out/a.json"), d.join("hard.json")).unwrap();
        assert!(same("out/a.json", "hard.json"));
        std::os::unix::fs::symlink(d.join("out/c.json"), d.join("dangling")).unwrap();
        assert!(same("out/c.json", "dangling"));
        let e = check_distinct(&[
            ("--json", Some(d.join("out/a.json").as_path())),
            ("--pcap", Some(d.join("link/../out/a.json").as_path())),
        ])
        .unwrap_err();
        assert!(e.0.contains("--json and --pcap both name"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn checks_create_directories_and_leave_no_files() {
        let d = tmp("ok");
        let f = d.join("a/b/r.json");
        // A file's missing directory is refused, not created (as tcpdump -w).
        let e = check_file("pcap", &f).unwrap_err();
        assert!(
            e.0.contains(&format!("{} does not exist", d.join("a/b").display()))
                && e.0.contains("creates only the file"),
            "{e}"
        );
        assert!(!d.exists(), "the check created {}", d.display());
        create_parent("JSON output", &f).unwrap();
        check_file("JSON output", &f).unwrap();
        assert!(d.join("a/b").is_dir() && !f.exists());
        check_dir("sweep output directory", &d.join("c")).unwrap();
        assert_eq!(std::fs::read_dir(d.join("c")).unwrap().count(), 0);
        // An existing file is kept as it is.
        std::fs::write(&f, "old").unwrap();
        check_file("JSON output", &f).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "old");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn unwritable_locations_are_output_errors_naming_the_path() {
        let e = check_file("JSON output", Path::new("/proc/x/y.json")).unwrap_err();
        assert!(
            e.0.contains("JSON output /proc/x/y.json") && e.0.contains("/proc/x does not exist"),
            "{e}"
        );
        let e = check_dir("sweep output directory", Path::new("/proc/x")).unwrap_err();
        assert!(e.0.contains("/proc/x") && e.0.contains("os error"), "{e}");
        let d = tmp("isdir");
        std::fs::create_dir_all(&d).unwrap();
        let e = check_file("pcap", &d).unwrap_err();
        assert!(e.0.contains("is a directory"), "{e}");
        // A file where a directory output should be is named as such (not "File exists").
        let file = d.join("afile");
        std::fs::write(&file, "x").unwrap();
        let e = check_dir("sweep output directory (--out)", &file).unwrap_err();
        assert!(e.0.contains("it is a file, not a directory"), "{e}");
        let e = check_file("pcap", &file.join("x.pcap")).unwrap_err();
        assert!(e.0.contains("afile is not a directory"), "{e}");
        let e = write_file(Path::new("/proc/x/z"), b"1").unwrap_err();
        assert!(e.0.contains("/proc/x"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }
}
