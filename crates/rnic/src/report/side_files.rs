//! The files a run writes beside its JSON (`x.json`): the queue trace `x-queues.csv`
//! (`net.trace_interval_us`), the rate trace `x-rates.csv` (the same, with `net.cc =
//! "dcqcn"`), and a workload's `x-fct.csv`, `x-fct-buckets.csv` and `x-slowdown.svg`.
//! Their paths are derived here alone, so the writers and the checks before the run (no
//! other output names one of them; each can be written) agree on which files those are.

use std::path::{Path, PathBuf};

use rnic_model::config::{CcKind, Config};

/// One file a run writes beside its JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideFile {
    /// `FILE-queues.csv`: the queue trace.
    Queues,
    /// `FILE-rates.csv`: DCQCN's rate trace.
    Rates,
    /// `FILE-fct.csv`: a workload's flows, one line each.
    FctFlows,
    /// `FILE-fct-buckets.csv`: a workload's slowdown by flow-size bucket.
    FctBuckets,
    /// `FILE-slowdown.svg`: the slowdown figure.
    Slowdown,
}

impl SideFile {
    /// What follows the JSON's stem in the file's name.
    fn suffix(self) -> &'static str {
        match self {
            SideFile::Queues => "-queues.csv",
            SideFile::Rates => "-rates.csv",
            SideFile::FctFlows => "-fct.csv",
            SideFile::FctBuckets => "-fct-buckets.csv",
            SideFile::Slowdown => "-slowdown.svg",
        }
    }

    /// The file as messages name it, with what makes the run write it.
    pub fn what(self) -> &'static str {
        match self {
            SideFile::Queues => {
                "queue trace (net.trace_interval_us; FILE-queues.csv beside the JSON)"
            }
            SideFile::Rates => {
                "rate trace (net.trace_interval_us with DCQCN; FILE-rates.csv beside the JSON)"
            }
            SideFile::FctFlows => "workload's flow CSV (FILE-fct.csv beside the JSON)",
            SideFile::FctBuckets => "workload's bucket CSV (FILE-fct-buckets.csv beside the JSON)",
            SideFile::Slowdown => "workload's slowdown figure (FILE-slowdown.svg beside the JSON)",
        }
    }

    /// Its path beside `json`, named by the JSON's stem (`out/x.json`: `out/x-fct.csv`).
    pub fn beside(self, json: &Path) -> PathBuf {
        let stem = json
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "run".into());
        let dir = json.parent().unwrap_or(Path::new(""));
        dir.join(format!("{stem}{}", self.suffix()))
    }
}

/// The side files a run of `cfg` writes beside a JSON file; `workload`: the run is a
/// scenario's `[workload]`. (The traces are written when the run returns them, which
/// `net.trace_interval_us` decides as the model does: a positive interval in picoseconds.)
pub fn written(cfg: &Config, workload: bool) -> Vec<SideFile> {
    let traced = rnic_sim::ns(cfg.net.trace_interval_us * 1000.0) > 0;
    let dcqcn = cfg.net.cc == CcKind::Dcqcn;
    [
        (traced, SideFile::Queues),
        (traced && dcqcn, SideFile::Rates),
        (workload, SideFile::FctFlows),
        (workload, SideFile::FctBuckets),
        (workload, SideFile::Slowdown),
    ]
    .into_iter()
    .filter_map(|(writes, file)| writes.then_some(file))
    .collect()
}

/// A run that traces its queues (`net.trace_interval_us` above 0) writes the trace beside
/// its JSON file and nowhere else (the JSON does not hold it): with no `--json FILE` (none,
/// or `-`) the trace was taken and dropped in silence, so such a run is refused.
pub fn check_trace_has_a_file(cfg: &Config, json: Option<&Path>) -> Result<(), crate::UsageError> {
    let to_file = json.is_some_and(|p| p != Path::new("-"));
    if to_file || !written(cfg, false).contains(&SideFile::Queues) {
        return Ok(());
    }
    Err(crate::UsageError(format!(
        "net.trace_interval_us = {} traces the queues into FILE-queues.csv beside the JSON \
         file (FILE-rates.csv too with DCQCN), and this run writes no JSON file, so the trace \
         would go nowhere: give --json FILE (not -) or a scenario's [output] json, or leave \
         net.trace_interval_us at 0",
        cfg.net.trace_interval_us
    )))
}

/// Each side file's message label (`the ...`) and path beside `json`, for
/// [`crate::output::check_distinct`] next to the command's other outputs.
pub fn labelled(json: &Path, cfg: &Config, workload: bool) -> Vec<(String, PathBuf)> {
    written(cfg, workload)
        .into_iter()
        .map(|f| (format!("the {}", f.what()), f.beside(json)))
        .collect()
}

/// Checks before the run that each side file beside `json` can be written, as the JSON
/// itself is checked: a directory in the way fails now (exit 4), not after the simulation.
pub fn check_writable(json: &Path, cfg: &Config, workload: bool) -> Result<(), crate::OutputError> {
    written(cfg, workload)
        .into_iter()
        .try_for_each(|f| crate::output::check_file(f.what(), &f.beside(json)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_files_go_beside_the_json_named_by_its_stem() {
        let p = |f: SideFile, j: &str| f.beside(Path::new(j));
        assert_eq!(
            p(SideFile::Queues, "out/a.json"),
            Path::new("out/a-queues.csv")
        );
        assert_eq!(p(SideFile::Queues, "a.json"), Path::new("a-queues.csv"));
        assert_eq!(
            p(SideFile::Rates, "out/a.json"),
            Path::new("out/a-rates.csv")
        );
        assert_eq!(
            p(SideFile::FctFlows, "out/ws.json"),
            Path::new("out/ws-fct.csv")
        );
        assert_eq!(
            p(SideFile::FctBuckets, "out/ws.json"),
            Path::new("out/ws-fct-buckets.csv")
        );
        assert_eq!(p(SideFile::Slowdown, "ws"), Path::new("ws-slowdown.svg"));
    }

    #[test]
    fn which_side_files_follow_the_config_and_the_workload() {
        let mut cfg = Config::default();
        assert!(written(&cfg, false).is_empty());
        assert_eq!(
            written(&cfg, true),
            [SideFile::FctFlows, SideFile::FctBuckets, SideFile::Slowdown]
        );
        cfg.net.trace_interval_us = 1.0;
        assert_eq!(written(&cfg, false), [SideFile::Queues]);
        cfg.net.cc = CcKind::Dcqcn;
        assert_eq!(written(&cfg, false), [SideFile::Queues, SideFile::Rates]);
    }
}
