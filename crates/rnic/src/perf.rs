//! perftest-style tests: who runs them ([`PerfRunner`]) and the options shared by `rnic
//! perf`, scenario files (`[perf]`) and sweeps (`perf.*` axes). The tests themselves and the
//! resolved spec are the model's ([`rnic_model::workload`]), re-exported here.

pub use rnic_model::workload::*;

use crate::config::schema::{check_tree, FieldDoc, HintStyle, Kind, PMTUS};
use crate::config::{same_value, Config, ConfigError, Override};
use crate::model::Progress;
use crate::report::PerfResult;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Runs one perftest-style test on the model. The real implementation is
/// `crate::model::run_perf`, wired in [`ModelRunner`]; tests use a fake.
///
/// Contract: return one [`PerfResult`]. For one size, fill the top-level fields and leave
/// `per_size` empty; for several sizes (`-a`), run them in order (on the same simulated
/// hosts, as perftest does) and combine them with [`PerfResult::from_sizes`]. Fields the
/// caller stamps afterwards (`test`, `qps`, `clients`, `seed`, `profile`, `wall_seconds`)
/// may be left at their defaults. A run whose data fails verification returns
/// `bytes_verified = false` (the CLI prints the results, then fails with exit status 1) or an
/// error.
pub trait PerfRunner: Sync {
    fn run(&self, cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult>;

    /// [`PerfRunner::run`], telling `progress` how far the run has come now and then (the
    /// model: about every 100 ms of wall time). Progress only observes: the result is that
    /// of `run`. Runners without progress just run.
    fn run_with_progress(
        &self,
        cfg: &Config,
        spec: &PerfSpec,
        progress: &mut dyn FnMut(&Progress),
    ) -> anyhow::Result<PerfResult> {
        let _ = progress;
        self.run(cfg, spec)
    }

    /// Refuses a run the runner cannot do (e.g. beyond its memory budget) without running
    /// it, so commands can check every run (every point of a sweep) before the first starts.
    fn check(&self, _cfg: &Config, _spec: &PerfSpec) -> Result<(), crate::UsageError> {
        Ok(())
    }

    /// Runs concurrent flows in one simulation (`[[flow]]` scenarios). Runners that cannot
    /// say so.
    fn run_flows(
        &self,
        _cfg: &Config,
        _spec: &rnic_model::flow::FlowsSpec,
    ) -> anyhow::Result<rnic_model::flow_result::FlowsResult> {
        anyhow::bail!("this runner cannot run concurrent flows")
    }

    /// [`PerfRunner::run_flows`], telling `progress` how far the run has come now and then.
    /// Runners without progress just run.
    fn run_flows_with_progress(
        &self,
        cfg: &Config,
        spec: &rnic_model::flow::FlowsSpec,
        progress: &mut dyn FnMut(&Progress),
    ) -> anyhow::Result<rnic_model::flow_result::FlowsResult> {
        let _ = progress;
        self.run_flows(cfg, spec)
    }

    /// Refuses a run of flows the runner cannot do, without running it.
    fn check_flows(
        &self,
        _cfg: &Config,
        _spec: &rnic_model::flow::FlowsSpec,
    ) -> Result<(), crate::UsageError> {
        Ok(())
    }
}

/// The simulator: the timing model's `run_perf`. This is the only place the CLI names the
/// model.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelRunner;

impl PerfRunner for ModelRunner {
    fn run(&self, cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult> {
        crate::model::run_perf(cfg, spec)
    }

    fn run_with_progress(
        &self,
        cfg: &Config,
        spec: &PerfSpec,
        progress: &mut dyn FnMut(&Progress),
    ) -> anyhow::Result<PerfResult> {
        crate::model::run_perf_with_progress(cfg, spec, progress)
    }

    fn check(&self, cfg: &Config, spec: &PerfSpec) -> Result<(), crate::UsageError> {
        crate::model::limits::check_run(cfg, spec)
    }

    fn run_flows(
        &self,
        cfg: &Config,
        spec: &rnic_model::flow::FlowsSpec,
    ) -> anyhow::Result<rnic_model::flow_result::FlowsResult> {
        Ok(crate::model::run_flows(cfg, spec, &Default::default())?.result)
    }

    fn run_flows_with_progress(
        &self,
        cfg: &Config,
        spec: &rnic_model::flow::FlowsSpec,
        progress: &mut dyn FnMut(&Progress),
    ) -> anyhow::Result<rnic_model::flow_result::FlowsResult> {
        let opts = Default::default();
        Ok(crate::model::run::run_flows_observed(cfg, spec, &opts, Some(progress))?.result)
    }

    fn check_flows(
        &self,
        cfg: &Config,
        spec: &rnic_model::flow::FlowsSpec,
    ) -> Result<(), crate::UsageError> {
        crate::model::run::check_flows(cfg, spec)
    }
}

/// Runs `spec` and stamps the fields the caller knows best: test, QPs, clients, seed,
/// profile and wall time.
pub fn execute(
    runner: &dyn PerfRunner,
    cfg: &Config,
    spec: &PerfSpec,
    profile: &str,
) -> anyhow::Result<PerfResult> {
    execute_observed(runner, cfg, spec, profile, None)
}

/// [`execute`], with the run's progress going to `progress` when given.
pub fn execute_observed(
    runner: &dyn PerfRunner,
    cfg: &Config,
    spec: &PerfSpec,
    profile: &str,
    progress: Option<&mut dyn FnMut(&Progress)>,
) -> anyhow::Result<PerfResult> {
    let start = std::time::Instant::now();
    let mut r = match progress {
        Some(p) => runner.run_with_progress(cfg, spec, p)?,
        None => runner.run(cfg, spec)?,
    };
    r.test = spec.test.name().to_string();
    r.qps = spec.qps;
    r.clients = spec.clients;
    r.seed = cfg.sim.seed;
    r.profile = profile.to_string();
    r.wall_seconds = start.elapsed().as_secs_f64();
    Ok(r)
}

/// The options of a perftest-style run, as given on the command line or in a `[perf]` table.
/// `None` means "perftest's default for this test".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PerfOptions {
    pub test: Option<PerfTest>,
    pub size: Option<u64>,
    pub iters: Option<u64>,
    pub qp: Option<u32>,
    pub tx_depth: Option<u32>,
    pub all: bool,
    pub mtu: Option<u32>,
    /// Seconds of simulated time (`-D`).
    pub duration: Option<f64>,
    pub clients: Option<u32>,
    pub report_gbits: bool,
    /// Print the statistics registry after the table (`--stats`).
    pub stats: bool,
    pub qp_timeout: Option<u8>,
    pub atomic_type: Option<AtomicOp>,
    /// Server processes of a latency test (`--procs`).
    pub procs: Option<u32>,
    /// Memory regions per node (`--mrs`).
    pub mrs: Option<u32>,
    /// Memory regions per client node, instead of `mrs` (`--client-mrs`).
    pub client_mrs: Option<u32>,
    /// One memory region per QP (`--mr_per_qp`): `mrs` = the server's QPs.
    pub mr_per_qp: bool,
    /// Bandwidth tests: both directions at once (`-b`).
    pub bidirectional: bool,
    /// Bandwidth tests: the clients initiate, towards the server (`--reversed`).
    pub reversed: bool,
    /// `-b`: also print each direction's row (`--report-both`).
    pub report_both: bool,
    /// Latency tests: print the samples the summary keeps, sorted (`-H/--report-histogram`).
    pub report_histogram: bool,
    /// Latency tests: print every sample in measurement order, then the kept ones sorted
    /// (`-U/--report-unsorted`, which implies -H).
    pub report_unsorted: bool,
}

/// The config field -D sets: the measurement window of a duration-mode run, read by nothing
/// else.
pub const WINDOW_FIELD: &str = "sim.duration_us";

const TEST_NAMES: &[&str] = &[
    "write-bw",
    "write-lat",
    "read-bw",
    "read-lat",
    "send-bw",
    "send-lat",
    "atomic-bw",
    "atomic-lat",
];

const fn pf(path: &'static str, unit: &'static str, kind: Kind, doc: &'static str) -> FieldDoc {
    FieldDoc {
        path,
        unit,
        kind,
        optional: false,
        doc,
    }
}

/// The keys of a `[perf]` table (and `perf.*` sweep axes), with their flags. Ranges match
/// the CLI's.
pub const PERF_FIELDS: &[FieldDoc] = &[
    pf(
        "perf.test",
        "test",
        Kind::Str(TEST_NAMES),
        "The test (required)",
    ),
    pf(
        "perf.size",
        "bytes",
        Kind::UInt {
            min: 1,
            max: MAX_MSG_BYTES,
        },
        "Message size (-s)",
    ),
    pf(
        "perf.iters",
        "iterations",
        Kind::UInt {
            min: MIN_ITERS,
            max: MAX_ITERS,
        },
        "Iterations (-n)",
    ),
    pf(
        "perf.qp",
        "QPs",
        Kind::UInt {
            min: 1,
            max: MAX_QPS,
        },
        "QPs on the server, spread round robin over the clients (-q)",
    ),
    pf(
        "perf.tx_depth",
        "WQEs",
        Kind::UInt {
            min: 1,
            max: MAX_TX_DEPTH,
        },
        "Send queue depth (-t)",
    ),
    pf("perf.all", "switch", Kind::Bool, "All sizes 2..2^23 (-a)"),
    pf("perf.mtu", "bytes", Kind::IntSet(PMTUS), "Path MTU (-m)"),
    pf(
        "perf.duration",
        "s",
        Kind::Float {
            min: 0.0,
            max: MAX_DURATION_S,
            min_exclusive: true,
        },
        "Simulated seconds (-D)",
    ),
    pf(
        "perf.clients",
        "hosts",
        Kind::UInt {
            min: 1,
            max: MAX_CLIENTS,
        },
        "Client hosts (--clients)",
    ),
    pf(
        "perf.report_gbits",
        "switch",
        Kind::Bool,
        "Report Gb/s (--report_gbits)",
    ),
    pf(
        "perf.stats",
        "switch",
        Kind::Bool,
        "Print every component's counters after the table (--stats)",
    ),
    pf(
        "perf.qp_timeout",
        "exponent",
        Kind::UInt { min: 0, max: 31 },
        "QP timeout (-u)",
    ),
    pf(
        "perf.atomic_type",
        "op",
        Kind::Str(&["fetch_and_add", "cmp_and_swap"]),
        "Atomic operation (-A)",
    ),
    pf(
        "perf.procs",
        "processes",
        Kind::UInt {
            min: 1,
            max: MAX_PROCS,
        },
        "Server processes of write-lat/read-lat/atomic-lat, each cycling over its own QPs (--procs)",
    ),
    pf(
        "perf.mrs",
        "MRs",
        Kind::UInt {
            min: 1,
            max: MAX_MRS,
        },
        "Memory regions each node registers, over N contiguous groups of QP buffers (--mrs)",
    ),
    pf(
        "perf.client_mrs",
        "MRs",
        Kind::UInt {
            min: 1,
            max: MAX_MRS,
        },
        "Memory regions each client node registers instead of perf.mrs (--client-mrs)",
    ),
    pf(
        "perf.mr_per_qp",
        "switch",
        Kind::Bool,
        "One memory region per QP: mrs = the server's QPs, -q (--mr_per_qp)",
    ),
    pf(
        "perf.bidirectional",
        "switch",
        Kind::Bool,
        "Bandwidth tests: the server and the clients initiate at once, the rates summed (-b)",
    ),
    pf(
        "perf.reversed",
        "switch",
        Kind::Bool,
        "Bandwidth tests: the clients initiate, towards the server (--reversed)",
    ),
    pf(
        "perf.report_both",
        "switch",
        Kind::Bool,
        "With -b, also print each direction's row (--report-both)",
    ),
    pf(
        "perf.report_histogram",
        "switch",
        Kind::Bool,
        "Latency tests: print the samples the summary keeps, sorted (-H)",
    ),
    pf(
        "perf.report_unsorted",
        "switch",
        Kind::Bool,
        "Latency tests: print every sample in measurement order, then the kept ones sorted (-U)",
    ),
];

impl PerfOptions {
    /// Reads a `[perf]` table: unknown keys, types and ranges are reported as `perf.<key>`.
    pub fn from_table(table: &toml::Table) -> Result<PerfOptions, ConfigError> {
        let mut t = table.clone();
        check_tree(&mut t, "perf.", PERF_FIELDS, HintStyle::None)?;
        toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Internal(e.message().to_string()))
    }

    /// As a `[perf]` table (only the options that are set).
    pub fn to_table(&self) -> toml::Table {
        toml::Table::try_from(self).unwrap_or_default()
    }

    /// The config fields these options set, each with its flag: `-m` → `qp.pmtu`,
    /// `--clients` → `net.clients`, `-u` → `qp.timeout`, `-D` → `sim.duration_us`.
    pub fn config_overrides(&self) -> Vec<(&'static str, Override)> {
        let mut v = Vec::new();
        if let Some(m) = self.mtu {
            v.push((
                "-m/--mtu (perf.mtu)",
                Override::new("qp.pmtu", i64::from(m)),
            ));
        }
        if let Some(c) = self.clients {
            v.push((
                "--clients (perf.clients)",
                Override::new("net.clients", i64::from(c)),
            ));
        }
        if let Some(t) = self.qp_timeout {
            v.push((
                "-u/--qp-timeout (perf.qp_timeout)",
                Override::new("qp.timeout", i64::from(t)),
            ));
        }
        if let Some(d) = self.duration {
            v.push((
                "-D/--duration (perf.duration)",
                Override::new(WINDOW_FIELD, d * 1e6),
            ));
        }
        v
    }

    /// Applies perftest's defaults and checks combinations. `cfg` must already include
    /// [`PerfOptions::config_overrides`].
    pub fn resolve(&self, cfg: &Config, pcap: Option<PcapOut>) -> Result<PerfSpec, ConfigError> {
        let test = self.test.ok_or_else(|| {
            ConfigError::Inconsistent(format!(
                "`perf.test` is missing: name one of {}",
                TEST_NAMES.join(", ")
            ))
        })?;
        let bad = |m: String| Err(ConfigError::Inconsistent(m));
        if self.all && self.size.is_some() {
            return bad(
                "-a/--all (perf.all) runs every size: leave out -s/--size (perf.size)".into(),
            );
        }
        if self.iters.is_some() && self.duration.is_some() {
            return bad(
                "-n/--iters (perf.iters) and -D/--duration (perf.duration) exclude each other (perftest drops -n under -D without a word): -D runs \
                 for a time and counts the iterations that complete in it; leave out one"
                    .into(),
            );
        }
        if self.all && self.duration.is_some() {
            return bad("-a/--all (perf.all) cannot be combined with -D/--duration (perf.duration) (as perftest)".into());
        }
        if self.all && pcap.is_some() {
            // Each size is a run of its own, connected anew on the same QP numbers and PSNs:
            // one file cannot hold them as one wire (it held the last size's frames alone).
            return bad(
                "--pcap (output.pcap) with -a/--all (perf.all): every size is a run of its \
                 own, connected anew on the same QP numbers and PSNs, so one capture cannot \
                 hold them; capture one size with -s SIZE instead of -a"
                    .into(),
            );
        }
        if test.verb() == Verb::Atomic {
            if self.all {
                return bad(format!(
                    "{test}: atomic operations are 8 bytes; -a/--all (perf.all) does not apply"
                ));
            }
            if let Some(s) = self.size.filter(|&s| s != ATOMIC_SIZE) {
                return bad(format!(
                    "{test}: -s/--size (perf.size) = {s}, but atomic operations are always {ATOMIC_SIZE} bytes"
                ));
            }
        } else if self.atomic_type.is_some() {
            return bad(format!(
                "-A/--atomic_type applies to atomic tests only, not {test}"
            ));
        }
        if let Some(n) = self.procs {
            check_procs(test, n, cfg.host.cores, self.qp.unwrap_or(1))
                .map_err(ConfigError::Inconsistent)?;
        }
        let qps = self.qp.unwrap_or(1);
        let mrs = match (self.mr_per_qp, self.mrs) {
            (true, Some(n)) => {
                return bad(format!(
                    "--mr_per_qp registers one MR per QP, but --mrs {n} also asks for {n}: \
                     give one of them"
                ))
            }
            // -q counts the server's QPs (the clients share them), so one region per QP
            // is -q regions; QPs x clients left regions over no QP's buffer.
            (true, None) => qps,
            (false, n) => n.unwrap_or(1),
        };
        if cfg.host.inline_recv_bytes > cfg.nic.cqe_bytes / 2 {
            return bad(format!(
                "--inline_recv (host.inline_recv_bytes) = {} B: a {} B CQE carries at most {} B \
                 of payload; lower it or raise nic.cqe_bytes",
                cfg.host.inline_recv_bytes,
                cfg.nic.cqe_bytes,
                cfg.nic.cqe_bytes / 2
            ));
        }
        if cfg.host.recv_post_list > cfg.host.rx_depth {
            return bad(format!(
                "--recv_post_list (host.recv_post_list) = {} is more than -r/--rx-depth \
                 (host.rx_depth) = {}: the target could never repost a whole list; raise -r \
                 or lower --recv_post_list",
                cfg.host.recv_post_list, cfg.host.rx_depth
            ));
        }
        if cfg.host.cq_events && test.verb() == Verb::Write {
            return bad(format!(
                "-e/--events (host.cq_events): perftest's ib_write_bw and ib_write_lat poll \
                 and have no -e; {test} cannot sleep on CQ events: leave it out"
            ));
        }
        if (self.report_histogram || self.report_unsorted) && !test.is_latency() {
            return bad(format!(
                "-H/--report-histogram and -U/--report-unsorted print a latency test's \
                 samples; {test} is a bandwidth test: use a *-lat test or leave them out"
            ));
        }
        if self.report_both && !self.bidirectional {
            return bad(
                "--report-both reports the two directions of -b/--bidirectional: add -b".into(),
            );
        }
        if self.bidirectional && self.reversed {
            return bad(
                "-b/--bidirectional and --reversed (perf.bidirectional, perf.reversed) together: \
                 -b already has both sides initiate, so --reversed would change nothing; give \
                 -b for both directions or --reversed for the clients' only"
                    .into(),
            );
        }
        let direction = match (self.bidirectional, self.reversed) {
            (true, _) => Direction::Both,
            (false, true) => Direction::Reverse,
            (false, false) => Direction::Forward,
        };
        let ud = cfg.qp.transport == rnic_model::config::Transport::Ud;
        let sizes = if self.all {
            // perftest -a on UD stops at the MTU: a UD message is one packet.
            all_sizes()
                .into_iter()
                .filter(|&s| !ud || s <= u64::from(cfg.qp.pmtu))
                .collect()
        } else {
            vec![self.size.unwrap_or(test.default_size())]
        };
        for &s in &sizes {
            rnic_model::workload::check_transport(test, cfg.qp.transport, s, cfg.qp.pmtu)
                .map_err(ConfigError::Inconsistent)?;
        }
        Ok(PerfSpec {
            test,
            atomic: self.atomic_type.unwrap_or_default(),
            sizes,
            iters: self.iters.unwrap_or(test.default_iters()),
            qps,
            tx_depth: self.tx_depth.unwrap_or(test.default_tx_depth()),
            duration_us: self.duration.map(|_| cfg.sim.duration_us),
            clients: cfg.net.clients,
            pcap,
            procs: self.procs,
            qp_profiles: Vec::new(),
            mrs,
            client_mrs: self.client_mrs,
            mr_per_qp: self.mr_per_qp,
            direction,
        })
    }
}

/// Everything that determines one run before it starts: where the config comes from and the
/// perftest options. Shared by `rnic perf`, `rnic run` and each point of `rnic sweep`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInputs {
    /// Profile name.
    pub profile: String,
    /// Config overrides in order (scenario `[set]`, then `--set`).
    pub sets: Vec<Override>,
    /// `--seed` (applied after `sets`).
    pub seed: Option<u64>,
    /// Where `seed` came from, for messages: `--seed`, or a scenario file's `seed` key.
    pub seed_from: &'static str,
    /// perftest options (their config-setting flags are applied after `sets`).
    pub perf: PerfOptions,
    /// `--pcap`.
    pub pcap: Option<PathBuf>,
    /// `--pcap-node`: the node whose port `pcap` records (node 0's when `None`).
    pub pcap_node: Option<u64>,
}

impl RunInputs {
    /// The run's capture: `pcap` recording `pcap_node`'s port. A node without a file is
    /// refused: it would capture nothing, silently.
    pub fn capture(&self) -> Result<Option<PcapOut>, ConfigError> {
        match (&self.pcap, self.pcap_node) {
            (Some(path), node) => Ok(Some(PcapOut {
                path: path.clone(),
                node: node.unwrap_or(0),
            })),
            (None, Some(node)) => Err(ConfigError::Inconsistent(format!(
                "--pcap-node (output.pcap_node) = {node} without a capture: give the file \
                 with --pcap FILE (or [output] pcap)"
            ))),
            (None, None) => Ok(None),
        }
    }

    /// All config overrides in application order.
    /// A field set both by a flag and by `--set` (or a scenario's `[set]`) to different
    /// values is refused naming both, rather than one silently winning.
    pub fn overrides(&self) -> Result<Vec<Override>, ConfigError> {
        let mut flags = self.perf.config_overrides();
        if let Some(seed) = self.seed {
            let s = i64::try_from(seed).map_err(|_| ConfigError::OutOfRange {
                path: "sim.seed".into(),
                value: seed.to_string(),
                accepted: format!("an integer from 0 to {}", i64::MAX),
                hint: String::new(),
            })?;
            flags.push((self.seed_from, Override::new("sim.seed", s)));
        }
        if let Some(m) = conflicting_set(&flags, &self.sets) {
            return Err(ConfigError::Inconsistent(m));
        }
        let mut ov = self.sets.clone();
        ov.extend(flags.into_iter().map(|(_, o)| o));
        Ok(ov)
    }

    /// Refuses a `--set` or `[set]` of `sim.duration_us` on a run that does not read it,
    /// saying `why`: -D's window is the field's only reader, and the run went on silently
    /// without it.
    pub fn refuse_unread_window(&self, why: &str) -> Result<(), ConfigError> {
        match self.sets.iter().rev().find(|s| s.key == WINDOW_FIELD) {
            Some(set) => Err(ConfigError::Inconsistent(format!(
                "`{WINDOW_FIELD}` = {} would have no effect: {why}",
                set.value
            ))),
            None => Ok(()),
        }
    }

    /// The config: the profile with every override applied.
    pub fn config(&self) -> Result<Config, ConfigError> {
        Config::resolve(&self.profile, &self.overrides()?)
    }

    /// The config and the test to run.
    pub fn resolve(&self) -> Result<(Config, PerfSpec), ConfigError> {
        if self.perf.duration.is_none() {
            self.refuse_unread_window(
                "this run counts iterations (-n/--iters, perf.iters), and only a \
                 duration-mode run reads it: give -D/--duration (perf.duration) in seconds, \
                 which sets it",
            )?;
        }
        let cfg = self.config()?;
        let spec = self.perf.resolve(&cfg, self.capture()?)?;
        Ok((cfg, spec))
    }
}

/// Why a field set by a flag (`flags`: the flag's name and what it sets) and by one of
/// `sets` to a different value cannot run, naming both; `None` when they agree.
pub fn conflicting_set(flags: &[(&str, Override)], sets: &[Override]) -> Option<String> {
    flags.iter().find_map(|(flag, f)| {
        // The last of `sets` naming the field is the one that takes effect.
        let other = sets
            .iter()
            .rev()
            .find(|s| s.key == f.key)
            .filter(|s| !same_value(&s.value, &f.value))?;
        Some(format!(
            "{} is set twice: to {} by {flag} and to {} by --set (or a file's [set]); \
             give it once",
            f.key, f.value, other.value
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_perftest() {
        let cfg = Config::default();
        let o = PerfOptions {
            test: Some(PerfTest::WriteBw),
            ..Default::default()
        };
        let s = o.resolve(&cfg, None).unwrap();
        assert_eq!(
            (s.sizes.clone(), s.iters, s.qps, s.tx_depth),
            (vec![65536], 5000, 1, 128)
        );
        let o = PerfOptions {
            test: Some(PerfTest::WriteLat),
            ..Default::default()
        };
        let s = o.resolve(&cfg, None).unwrap();
        assert_eq!((s.sizes.clone(), s.iters, s.tx_depth), (vec![2], 1000, 1));
        let o = PerfOptions {
            test: Some(PerfTest::AtomicBw),
            ..Default::default()
        };
        assert_eq!(o.resolve(&cfg, None).unwrap().sizes, vec![8]);
        assert_eq!(all_sizes().first(), Some(&2));
        assert_eq!(all_sizes().last(), Some(&(1 << 23)));
    }

    #[test]
    fn perf_table_errors_name_the_key() {
        let t: toml::Table = "test = \"write-bw\"\nsize = 0".parse().unwrap();
        let e = PerfOptions::from_table(&t).unwrap_err().to_string();
        assert!(
            e.contains("perf.size") && e.contains("1 to 2147483648"),
            "{e}"
        );
        let t: toml::Table = "test = \"write-bx\"".parse().unwrap();
        let e = PerfOptions::from_table(&t).unwrap_err().to_string();
        assert!(e.contains("perf.test") && e.contains("write-bw"), "{e}");
        let t: toml::Table = "tests = \"write-bw\"".parse().unwrap();
        let e = PerfOptions::from_table(&t).unwrap_err().to_string();
        assert!(
            e.contains("perf.tests") && e.contains("did you mean `perf.test`"),
            "{e}"
        );
        let t: toml::Table = "test = \"atomic-bw\"\natomic_type = \"CMP_AND_SWAP\""
            .parse()
            .unwrap();
        let o = PerfOptions::from_table(&t).unwrap();
        assert_eq!(o.atomic_type, Some(AtomicOp::CmpAndSwap));
    }

    #[test]
    fn bad_combinations_are_rejected() {
        let cfg = Config::default();
        for o in [
            PerfOptions {
                test: Some(PerfTest::WriteBw),
                all: true,
                size: Some(4),
                ..Default::default()
            },
            PerfOptions {
                test: Some(PerfTest::AtomicLat),
                size: Some(16),
                ..Default::default()
            },
            PerfOptions::default(),
        ] {
            assert!(matches!(
                o.resolve(&cfg, None),
                Err(ConfigError::Inconsistent(_))
            ));
        }
    }

    #[test]
    fn procs_option_is_checked() {
        let t: toml::Table = "test = \"write-lat\"\nqp = 100\nprocs = 10"
            .parse()
            .unwrap();
        let o = PerfOptions::from_table(&t).expect("procs key");
        assert_eq!(o.procs, Some(10));
        let cfg = Config::resolve("csrna", &[]).unwrap();
        assert_eq!(o.resolve(&cfg, None).unwrap().procs, Some(10));
        let t: toml::Table = "test = \"write-lat\"\nprocs = 0".parse().unwrap();
        let e = PerfOptions::from_table(&t).unwrap_err().to_string();
        assert!(e.contains("perf.procs"), "{e}");
        let many = PerfOptions {
            procs: Some(11),
            ..o.clone()
        };
        let e = many.resolve(&cfg, None).unwrap_err().to_string();
        assert!(e.contains("host.cores"), "{e}");
        let bw = PerfOptions {
            test: Some(PerfTest::WriteBw),
            ..o
        };
        assert!(bw.resolve(&cfg, None).is_err());
    }
}
