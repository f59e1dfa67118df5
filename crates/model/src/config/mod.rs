//! The simulator's configuration: one serde struct tree, its documentation and validation,
//! named profiles and `--set key=value` overrides.
//!
//! * [`Config`]: the tree. `Config::default()` is the `baseline` profile.
//! * [`schema`]: one table documenting every field (path, unit, range, description); it
//!   drives validation, `--set` checking and `rnic config show`.
//! * [`profiles`]: named configurations, each a TOML overlay over baseline.
//! * [`overrides`]: `--set key=value` parsing and merging.
//! * [`show`]: the commented TOML printed by `rnic config show`.
//!
//! Resolution order: baseline → profile overlay → scenario `[set]` → `--set` flags →
//! dedicated flags (`--seed`, `--clients`, `-m`, `-D`, `-u`). Every step is checked against
//! the schema, so an error names the full field path, the value and what is accepted.

mod error;
pub mod overrides;
pub mod profiles;
pub mod schema;
pub mod show;

pub use error::ConfigError;
pub use overrides::{parse_set, Override};
pub use profiles::{profile, profile_names, PROFILES};

use serde::{Deserialize, Serialize};

/// Everything the simulator needs to know about the NIC, the host and the network.
/// Field documentation (units, ranges) lives in [`schema::FIELDS`]; the units are also in the
/// field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub sim: SimConfig,
    pub nic: NicConfig,
    pub pcie: PcieConfig,
    pub ddr: DdrConfig,
    pub eth: EthConfig,
    pub net: NetConfig,
    pub host: HostConfig,
    pub qp: QpConfig,
}

/// Simulation control.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Seed of every random choice; the same config and seed give identical results.
    pub seed: u64,
    /// Simulated measurement window of duration-mode runs (`perf -D` sets it), µs.
    pub duration_us: f64,
    /// Simulated time before the measurement window opens; rates and latencies count only in
    /// the window (cache, PCIe and wire counters cover the whole run), µs.
    pub warmup_us: f64,
    /// Duration mode: the window opens only once every QP has completed this many
    /// operations (bandwidth tests: and the initial `-t` posts are all made), and not
    /// before `warmup_us`; 0 uses `warmup_us` alone.
    pub warmup_rounds: u32,
    /// Safety limit on processed events: a run that needs more stops with an error.
    pub max_events: u64,
    /// Memory a run may use, GB (10^9 bytes); a run estimated to need more is refused before
    /// it starts. 0 = half of this machine's memory.
    pub max_memory_gb: f64,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            duration_us: 100.0,
            warmup_us: 10.0,
            warmup_rounds: 1,
            max_events: 2_000_000_000,
            max_memory_gb: 0.0,
        }
    }
}

/// Replacement policy of an on-chip cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CachePolicy {
    /// Least recently used.
    Lru,
}

/// How the QPC manager handles QPC cache misses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QpcManager {
    /// First come, first served: a miss blocks every later request (head-of-line blocking).
    Fcfs,
    /// csRNA non-blocking manager: misses wait in a pending structure while hits proceed.
    Nonblocking,
}

/// Where QP contexts live when they are not in the on-chip cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QpcPlacement {
    /// Host memory, reached over PCIe.
    Host,
    /// On-board DDR attached to the NIC.
    Ddr,
}

/// The NIC microarchitecture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NicConfig {
    pub clock_ghz: f64,
    pub qpc_entry_bytes: u32,
    pub qpc_cache_entries: u32,
    pub qpc_cache_policy: CachePolicy,
    pub qpc_manager: QpcManager,
    pub ooo_cap: u32,
    pub latency_hiding: bool,
    pub qpc_placement: QpcPlacement,
    pub wqe_bytes: u32,
    pub wqes_per_fetch: u32,
    pub chunk_bytes: u64,
    pub mpt_cache_entries: u32,
    pub mtt_cache_entries: u32,
    pub page_bytes: u64,
    pub doorbell_cycles: u32,
    pub sched_cycles: u32,
    pub wqe_decode_cycles: u32,
    pub qpc_lookup_cycles: u32,
    pub tx_msg_cycles: u32,
    pub tx_pkt_cycles: u32,
    pub rx_pkt_cycles: u32,
    pub ack_cycles: u32,
    pub cqe_cycles: u32,
    pub max_outstanding_wqes_per_qp: u32,
    pub mpt_lookup_cycles: u32,
    pub mtt_lookup_cycles: u32,
    pub mpt_entry_bytes: u32,
    pub mtt_entry_bytes: u32,
    pub cqe_bytes: u32,
    pub qpc_fifo_depth: u32,
    pub max_visits_in_flight: u32,
    pub tx_backlog_cap: u32,
    pub tx_buffer_bytes: u64,
    pub tx_port_slack_bytes: u64,
    pub sq_table_entry_bytes: u32,
    pub sq_table_cycles: u32,
}

impl Default for NicConfig {
    fn default() -> Self {
        NicConfig {
            clock_ghz: 1.0,
            qpc_entry_bytes: 256,
            qpc_cache_entries: 300,
            qpc_cache_policy: CachePolicy::Lru,
            qpc_manager: QpcManager::Fcfs,
            ooo_cap: 16,
            latency_hiding: false,
            qpc_placement: QpcPlacement::Host,
            wqe_bytes: 64,
            wqes_per_fetch: 8,
            chunk_bytes: 1024,
            mpt_cache_entries: 256,
            mtt_cache_entries: 256,
            page_bytes: 4096,
            doorbell_cycles: 4,
            sched_cycles: 4,
            wqe_decode_cycles: 4,
            qpc_lookup_cycles: 2,
            tx_msg_cycles: 15,
            tx_pkt_cycles: 4,
            rx_pkt_cycles: 8,
            ack_cycles: 4,
            cqe_cycles: 4,
            max_outstanding_wqes_per_qp: 128,
            mpt_lookup_cycles: 1,
            mtt_lookup_cycles: 1,
            mpt_entry_bytes: 64,
            mtt_entry_bytes: 8,
            cqe_bytes: 64,
            qpc_fifo_depth: 16,
            max_visits_in_flight: 64,
            tx_backlog_cap: 256,
            tx_buffer_bytes: 65536,
            tx_port_slack_bytes: 8192,
            sq_table_entry_bytes: 10,
            sq_table_cycles: 1,
        }
    }
}

/// The PCIe link between host and NIC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PcieConfig {
    pub gbps: f64,
    pub read_rtt_ns: f64,
    pub posted_write_ns: f64,
    pub tlp_header_bytes: u32,
    pub mps_bytes: u32,
    pub mrrs_bytes: u32,
    pub max_read_tags: u32,
    pub doorbell_bytes: u32,
}

impl Default for PcieConfig {
    fn default() -> Self {
        PcieConfig {
            gbps: 128.0,
            read_rtt_ns: 500.0,
            posted_write_ns: 250.0,
            tlp_header_bytes: 24,
            mps_bytes: 256,
            mrrs_bytes: 512,
            max_read_tags: 256,
            doorbell_bytes: 8,
        }
    }
}

/// On-board DDR memory of the NIC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DdrConfig {
    pub latency_ns: f64,
    pub gbps: f64,
}

impl Default for DdrConfig {
    fn default() -> Self {
        DdrConfig {
            latency_ns: 100.0,
            gbps: 200.0,
        }
    }
}

/// The Ethernet port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EthConfig {
    pub gbps: f64,
    pub preamble_ifg_bytes: u32,
    pub fcs_bytes: u32,
    pub min_frame_bytes: u32,
}

impl Default for EthConfig {
    fn default() -> Self {
        EthConfig {
            gbps: 100.0,
            preamble_ifg_bytes: 20,
            fcs_bytes: 4,
            min_frame_bytes: 60,
        }
    }
}

/// The network: hosts, links, one switch, impairments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetConfig {
    pub clients: u32,
    pub link_delay_ns: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_km: Option<f64>,
    pub switch_buffer_bytes: u64,
    pub switch_latency_ns: f64,
    pub impair: ImpairConfig,
}

impl NetConfig {
    /// One-way propagation delay of a link: `link_km` × 5000 ns when set, else `link_delay_ns`.
    pub fn effective_link_delay_ns(&self) -> f64 {
        match self.link_km {
            Some(km) => km * NS_PER_KM,
            None => self.link_delay_ns,
        }
    }
}

/// Propagation delay of light in fibre, ns per km (5 µs/km one way).
pub const NS_PER_KM: f64 = 5000.0;

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            clients: 1,
            link_delay_ns: 1000.0,
            link_km: None,
            switch_buffer_bytes: 16 << 20,
            switch_latency_ns: 0.0,
            impair: ImpairConfig::default(),
        }
    }
}

/// Wire impairments, applied per packet with the seeded RNG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ImpairConfig {
    pub loss: f64,
    pub reorder_depth: u32,
    pub dup: f64,
    pub extra_delay_ns: f64,
}

/// CPU-side costs on the hosts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostConfig {
    pub post_send_ns: f64,
    pub poll_cq_ns: f64,
    pub mem_latency_ns: f64,
    pub cores: u32,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            post_send_ns: 50.0,
            poll_cq_ns: 20.0,
            mem_latency_ns: 80.0,
            cores: 10,
        }
    }
}

/// Attributes every QP is created with (as ibv_modify_qp would set them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QpConfig {
    pub pmtu: u32,
    pub timeout: u8,
    pub retry_cnt: u8,
    pub rnr_retry: u8,
    pub min_rnr_timer: u8,
    pub max_rd_atomic: u8,
}

impl Default for QpConfig {
    fn default() -> Self {
        QpConfig {
            pmtu: 4096,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 16,
        }
    }
}

impl QpConfig {
    /// Local ACK timeout in ns: 4.096 µs × 2^timeout; `None` when `timeout` is 0 (infinite).
    pub fn ack_timeout_ns(&self) -> Option<f64> {
        (self.timeout != 0).then(|| 4096.0 * f64::from(1u32 << self.timeout.min(31)))
    }
}

impl Config {
    /// Checks every field against [`schema::FIELDS`] (ranges, accepted values); the error
    /// names the field path, the value, what is accepted and how to set it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let table = self.to_table()?;
        schema::check_config_table(&table)
    }

    /// The config as a TOML table (unset optional fields are absent).
    pub fn to_table(&self) -> Result<toml::Table, ConfigError> {
        toml::Table::try_from(self).map_err(|e| ConfigError::Internal(e.to_string()))
    }

    /// Builds a config from a TOML table: checks every key, type and range first (so errors
    /// name the field), then deserializes. Missing fields take their baseline default.
    pub fn from_table(table: toml::Table) -> Result<Config, ConfigError> {
        let mut table = table;
        schema::check_and_normalize_config_table(&mut table)?;
        let cfg: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Internal(e.message().to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Parses a (partial) config from TOML text, e.g. the output of `rnic config show`.
    /// `origin` names the text in errors (a file name).
    pub fn from_toml_str(src: &str, origin: &str) -> Result<Config, ConfigError> {
        let table = parse_toml_table(src, origin)?;
        Config::from_table(table)
    }

    /// Resolves a profile and applies overrides in order.
    pub fn resolve(profile_name: &str, overrides: &[Override]) -> Result<Config, ConfigError> {
        let mut table = profiles::profile_table(profile_name)?;
        for o in overrides {
            o.apply(&mut table)?;
        }
        Config::from_table(table)
    }
}

/// Parses TOML text into a table; syntax errors carry line and column.
pub fn parse_toml_table(src: &str, origin: &str) -> Result<toml::Table, ConfigError> {
    src.parse::<toml::Table>()
        .map_err(|e| ConfigError::from_toml_error(origin, src, &e))
}

#[cfg(test)]
mod tests;
