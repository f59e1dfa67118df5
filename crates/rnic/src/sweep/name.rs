//! Checks on the parts of a sweep file that become file names.
//!
//! A sweep's `name` names its outputs (`<out>/<name>.csv`, `<name>-<metric>.png`, ...), so a
//! name with a path separator or `..` would write outside `--out`. Names are checked when the
//! file is parsed, before anything runs or is created. Metric names are made file-safe by
//! [`super::plot::file_safe`]; two metrics that would share a plot file are refused here.

use crate::config::ConfigError;

/// Longest accepted sweep name, in bytes: with `-<metric>.partial.csv` appended it stays well
/// under the usual 255-byte limit of a file name.
pub const MAX_NAME_BYTES: usize = 100;

/// Why `name` cannot name files, or `None` when it can.
fn problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '/' | '\\')) {
        return Some(format!("it contains the path separator `{c}`"));
    }
    if name.contains("..") {
        return Some("it contains `..`".into());
    }
    if name.chars().all(|c| c == '.') {
        return Some("it is only dots".into());
    }
    if name.chars().any(char::is_control) {
        return Some("it contains a control character".into());
    }
    // " " wrote " .csv"; "x " wrote "x .csv" beside the plots "x -msg_rate_mops.png".
    if name.trim() != name {
        return Some(if name.trim().is_empty() {
            "it is only spaces".into()
        } else {
            "it begins or ends with a space".into()
        });
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(format!(
            "it is {} bytes long, more than {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    None
}

/// Checks a sweep name. `explicit` says whether it was the file's `name` key (otherwise it
/// came from the file name), so the error points at what to change.
pub fn check_name(name: &str, explicit: bool, origin: &str) -> Result<(), ConfigError> {
    let Some(why) = problem(name) else {
        return Ok(());
    };
    let fix = "it names the output files in --out: use letters, digits, `-`, `_` and single \
               dots, e.g. name = \"qpc-scaling\"";
    Err(ConfigError::Inconsistent(if explicit {
        format!("`name` = {name:?} cannot be used: {why}; {fix}")
    } else {
        format!(
            "the sweep's default name {name:?} (from the file name {origin}) cannot be used: \
             {why}; set `name`: {fix}"
        )
    }))
}

/// Checks that no two metrics share a plot file (`latency_us.p99` and `latency_us_p99` would).
pub fn check_metric_files(metrics: &[String]) -> Result<(), ConfigError> {
    for (i, m) in metrics.iter().enumerate() {
        let file = super::plot::file_safe(m);
        if let Some(j) = metrics[..i]
            .iter()
            .position(|o| super::plot::file_safe(o) == file)
        {
            let what = if metrics[j] == *m {
                format!("`metrics` lists \"{m}\" twice")
            } else {
                format!(
                    "`metrics[{j}]` = \"{}\" and `metrics[{i}]` = \"{m}\" would share the plot \
                     file <name>-{file}.png",
                    metrics[j]
                )
            };
            return Err(ConfigError::Inconsistent(format!("{what}; keep one")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_output_directory_are_refused() {
        for bad in [
            "../../../tmp/escape",
            "a/b",
            "a\\b",
            "..",
            ".",
            "",
            "x\0y",
            "x\ny",
            "a..b",
            " ",
            " sweep",
            "sweep\u{a0}",
        ] {
            let e = check_name(bad, true, "s.toml").unwrap_err().to_string();
            assert!(
                e.contains("`name`") && e.contains("e.g. name ="),
                "{bad:?}: {e}"
            );
        }
        let long = "x".repeat(MAX_NAME_BYTES + 1);
        assert!(check_name(&long, true, "s.toml").is_err());
        for good in ["qpc-scaling", "cliff", "v1.2_run", "é", "two words"] {
            check_name(good, true, "s.toml").unwrap();
        }
        let e = check_name("..", false, "dir/...toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("set `name`") && e.contains("dir/...toml"), "{e}");
    }

    #[test]
    fn metrics_sharing_a_plot_file_are_refused() {
        let m = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        check_metric_files(&m(&["latency_us.avg", "msg_rate_mops"])).unwrap();
        let e = check_metric_files(&m(&["latency_us.avg", "latency_us.avg"])).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let e = check_metric_files(&m(&["caches.a.b.hits", "caches.a_b.hits"])).unwrap_err();
        assert!(e.to_string().contains("share the plot file"), "{e}");
    }
}
