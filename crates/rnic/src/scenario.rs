//! `rnic run SCENARIO.toml`: one run described in TOML.
//!
//! ```toml
//! name = "write-bw-64B"              # optional; defaults to the file name
//! description = "..."                # optional
//! profile = "baseline"               # optional (default baseline); --profile overrides
//! seed = 7                           # optional; --seed overrides
//!
//! [perf]                             # the perftest command line, as keys
//! test = "write-bw"                  # required: write-bw, write-lat, read-bw, ...
//! size = 64                          # -s;  also iters (-n), qp (-q), tx_depth (-t),
//! qp = 16                            # all (-a), mtu (-m), duration (-D, seconds),
//!                                    # clients, report_gbits, qp_timeout (-u),
//!                                    # atomic_type (-A), procs (--procs)
//! [set]                              # config overrides, as --set (dotted keys)
//! nic.qpc_cache_entries = 3000
//! nic.qpc_manager = "nonblocking"
//!
//! [[flow]]                           # instead of [perf]: concurrent flows, see
//! test = "write-lat"                 # `crate::flows` for their keys
//!
//! [output]                           # optional; --json / --pcap override
//! json = "out/write-bw-64B.json"
//! pcap = "out/write-bw-64B.pcap"
//! pcap_node = 3                      # optional: capture node 3's port, not node 0's
//! ```

use crate::config::overrides::overrides_from_table;
use crate::config::{parse_toml_table, ConfigError, Override};
use crate::input::{check_keys, check_misplaced, opt_str, opt_table, opt_u64};
use crate::perf::{PerfOptions, RunInputs, PERF_FIELDS};
use crate::UsageError;
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use toml::Table;

/// What scenario and sweep files share: where the config comes from and the perf options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Base {
    pub profile: Option<String>,
    pub seed: Option<u64>,
    /// The `[perf]` table, checked.
    pub perf: Table,
    /// The `[set]` table as overrides.
    pub set: Vec<Override>,
}

/// Keys of a file that [`parse_base`] reads.
pub const BASE_KEYS: &[&str] = &["name", "description", "profile", "seed", "perf", "set"];

/// Reads `profile`, `seed`, `[perf]` and `[set]`.
pub fn parse_base(t: &Table) -> Result<Base, ConfigError> {
    let perf = opt_table(t, "", "perf")?.unwrap_or_default();
    let perf_keys: Vec<&str> = PERF_FIELDS
        .iter()
        .filter_map(|d| d.path.strip_prefix("perf."))
        .collect();
    check_misplaced(&perf, "perf", &perf_keys)?;
    PerfOptions::from_table(&perf)?;
    let set_table = opt_table(t, "", "set")?.unwrap_or_default();
    check_misplaced(&set_table, "set", &[])?;
    let set = overrides_from_table(&set_table);
    // `nic.x = 1` and `"nic.x" = 2` are two TOML keys but one field.
    crate::config::check_repeated(&set, "the [set] table")?;
    let seed = opt_u64(t, "", "seed")?;
    if let Some(s) = seed.filter(|&s| s > i64::MAX as u64) {
        return Err(ConfigError::OutOfRange {
            path: "seed".into(),
            value: s.to_string(),
            accepted: format!("an integer from 0 to {}", i64::MAX),
            hint: String::new(),
        });
    }
    Ok(Base {
        profile: opt_str(t, "", "profile")?,
        seed,
        perf,
        set,
    })
}

/// Command-line flags that override a file's base: `--profile`, `--seed`, `--set`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CliOverrides {
    pub profile: Option<String>,
    pub seed: Option<u64>,
    pub set: Vec<Override>,
}

impl Base {
    /// The run inputs: the command line's profile and seed win over the file's; the file's
    /// `[set]` is applied before `--set` (which overrides it); a field `--set` gives twice
    /// with different values is refused.
    pub fn inputs(&self, cli: &CliOverrides) -> Result<RunInputs, ConfigError> {
        crate::config::check_repeated(&cli.set, "--set")?;
        let mut sets = self.set.clone();
        sets.extend(cli.set.iter().cloned());
        Ok(RunInputs {
            profile: cli
                .profile
                .clone()
                .or_else(|| self.profile.clone())
                .unwrap_or_else(|| "baseline".to_string()),
            sets,
            seed: cli.seed.or(self.seed),
            seed_from: if cli.seed.is_some() {
                "--seed"
            } else {
                "the file's `seed`"
            },
            perf: PerfOptions::from_table(&self.perf)?,
            pcap: None,
            pcap_node: None,
        })
    }
}

/// A parsed scenario file.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: Option<String>,
    pub base: Base,
    pub json: Option<PathBuf>,
    pub pcap: Option<PathBuf>,
    /// `[output] pcap_node`: the node whose port `pcap` records (node 0's when `None`).
    pub pcap_node: Option<u64>,
    /// `[[flow]]` tables (instead of `[perf]`): concurrent flows.
    pub flows: Option<Vec<crate::flows::FlowOptions>>,
    /// `[workload]`: open-loop flows, expanded into more flows before the run.
    pub workload: Option<crate::traffic::WorkloadOptions>,
}

/// Parses scenario text; `origin` names it in errors and gives the default name.
pub fn parse_scenario(src: &str, origin: &str) -> Result<Scenario, ConfigError> {
    let t = parse_toml_table(src, origin)?;
    if t.contains_key("axis") {
        return Err(ConfigError::Inconsistent(
            "this is a sweep file ([[axis]] tables): `rnic run` runs one scenario; run it with \
             `rnic sweep FILE --out DIR`"
                .into(),
        ));
    }
    let mut known: Vec<&str> = BASE_KEYS.to_vec();
    known.push("output");
    known.push("flow");
    known.push("workload");
    check_keys(&t, "", &known)?;
    let base = parse_base(&t)?;
    let workload = crate::traffic::parse_workload(&t)?;
    // A workload is flows too: with or without [[flow]] tables beside it.
    let flows = match crate::flows::parse_flows(&t)? {
        None if workload.is_some() => Some(Vec::new()),
        flows => flows,
    };
    if flows.is_some() && t.contains_key("perf") {
        return Err(ConfigError::Inconsistent(
            "a scenario has either a [perf] table (one run) or [[flow]] tables (concurrent \
             flows), not both: write the [perf] test as a [[flow]]"
                .into(),
        ));
    }
    let output = opt_table(&t, "", "output")?.unwrap_or_default();
    check_misplaced(&output, "output", &["json", "pcap", "pcap_node"])?;
    check_keys(&output, "output", &["json", "pcap", "pcap_node"])?;
    Ok(Scenario {
        name: opt_str(&t, "", "name")?.unwrap_or_else(|| file_stem(origin)),
        description: opt_str(&t, "", "description")?,
        base,
        json: output_path(&output, "json")?,
        pcap: output_path(&output, "pcap")?,
        pcap_node: opt_u64(&output, "output", "pcap_node")?,
        flows,
        workload,
    })
}

/// `[output]`'s `key`: a file's path, which an empty string is not (it failed later as an
/// output that cannot be written, exit 4).
fn output_path(output: &Table, key: &str) -> Result<Option<PathBuf>, ConfigError> {
    match opt_str(output, "output", key)? {
        Some(p) if p.is_empty() => Err(ConfigError::Inconsistent(format!(
            "`output.{key}` is empty: give the path of the {} file to write, or leave \
             `{key}` out",
            if key == "json" { "JSON" } else { "pcap" }
        ))),
        p => Ok(p.map(PathBuf::from)),
    }
}

/// The stem of a path, for default names.
pub fn file_stem(origin: &str) -> String {
    Path::new(origin)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".to_string())
}

/// Reads a user-named input file (`what`: "a scenario file", ...) under the input cap
/// ([`rnic_model::input_file::MAX_INPUT_BYTES`]); a missing, unreadable or too large file is
/// a usage error that names it.
pub fn read_input(path: &Path, what: &str) -> anyhow::Result<String> {
    rnic_model::input_file::read_text(path, what).map_err(|e| UsageError(e.to_string()).into())
}

/// Reads and parses a scenario file.
pub fn load_scenario(path: &Path) -> anyhow::Result<Scenario> {
    let src = read_input(path, "a scenario file")?;
    let origin = path.display().to_string();
    parse_scenario(&src, &origin).with_context(|| format!("in scenario file {origin}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_scenario() {
        let s = parse_scenario(
            r#"
profile = "baseline"
seed = 3
[perf]
test = "write-bw"
size = 64
qp = 16
[set]
nic.qpc_cache_entries = 3000
"net.impair.loss" = 0.001
[output]
json = "x.json"
"#,
            "dir/my-run.toml",
        )
        .unwrap();
        assert_eq!(s.name, "my-run");
        assert_eq!(s.base.seed, Some(3));
        assert_eq!(s.json, Some(PathBuf::from("x.json")));
        let keys: Vec<&str> = s.base.set.iter().map(|o| o.key.as_str()).collect();
        // A TOML table is ordered by key; distinct keys commute anyway.
        assert_eq!(keys, ["net.impair.loss", "nic.qpc_cache_entries"]);
    }

    /// The file's `seed` and its `[set] sim.seed` disagreeing were refused as set "by
    /// --seed", a flag nobody gave; the message names the key, and --seed when given.
    #[test]
    fn a_seed_set_twice_names_where_each_came_from() {
        let src = "seed = 3\n[perf]\ntest = \"write-lat\"\n[set]\nsim.seed = 1\n";
        let s = parse_scenario(src, "s.toml").unwrap();
        let from_file = s.base.inputs(&CliOverrides::default()).unwrap().overrides();
        let e = from_file.unwrap_err().to_string();
        assert!(
            e.contains("to 3 by the file's `seed` and to 1 by --set"),
            "{e}"
        );
        let cli = CliOverrides {
            seed: Some(4),
            ..CliOverrides::default()
        };
        let e = s
            .base
            .inputs(&cli)
            .unwrap()
            .overrides()
            .unwrap_err()
            .to_string();
        assert!(e.contains("to 4 by --seed and to 1"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        for (src, want) in [
            ("profil = \"x\"", "did you mean `profile`"),
            ("[perf]\ntest = \"write-bw\"\nqp = 0", "perf.qp"),
            ("[output]\njsn = \"a\"", "output.jsn"),
            ("seed = \"x\"", "`seed`"),
            ("[perf\n", "line 1"),
            (
                "[perf]\ntest = \"write-bw\"\n[[axis]]\nkey = \"perf.qp\"\nvalues = [1]",
                "rnic sweep",
            ),
            // An empty path names no file: it failed as an unwritable output (exit 4,
            // "cannot write the JSON output : creating the file").
            ("[output]\njson = \"\"", "`output.json`"),
            ("[output]\npcap = \"\"", "`output.pcap`"),
        ] {
            let e = parse_scenario(src, "s.toml").unwrap_err().to_string();
            assert!(e.contains(want), "{src:?}: {e}");
        }
    }
}
