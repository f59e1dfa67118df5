//! The documentation and accepted range of every configuration field, in one table.
//!
//! [`FIELDS`] drives validation ([`check_and_normalize_config_table`]), `--set` checking,
//! unknown-key errors (which list a section's keys) and `rnic config show`. A test asserts that
//! every leaf of the serialized default config has an entry here and vice versa, so adding a
//! field to [`super::Config`] without documenting it fails the build's tests.

use super::ConfigError;
use toml::{Table, Value};

/// What values a field accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// An integer in `min..=max`.
    UInt { min: u64, max: u64 },
    /// A power of two in `min..=max`.
    Pow2 { min: u64, max: u64 },
    /// One of the listed integers.
    IntSet(&'static [u64]),
    /// A finite number in `min..=max` (`min` itself excluded when `min_exclusive`).
    Float {
        min: f64,
        max: f64,
        min_exclusive: bool,
    },
    /// `true` or `false`.
    Bool,
    /// One of the listed (lowercase) strings.
    Str(&'static [&'static str]),
}

impl Kind {
    /// Human description of the accepted values, e.g. `an integer from 0 to 31`.
    pub fn accepted(&self) -> String {
        match *self {
            Kind::UInt { min, max } => format!("an integer from {min} to {max}"),
            Kind::Pow2 { min, max } => format!("a power of two from {min} to {max}"),
            Kind::IntSet(set) => format!("one of {}", join(set.iter().map(|v| v.to_string()))),
            Kind::Float {
                min,
                max,
                min_exclusive,
            } => {
                if min_exclusive {
                    format!("a number greater than {min} and at most {max}")
                } else {
                    format!("a number from {min} to {max}")
                }
            }
            Kind::Bool => "true or false".to_string(),
            Kind::Str(set) => format!("one of {}", join(set.iter().map(|v| format!("\"{v}\"")))),
        }
    }

    /// Short form for `config show` comments, e.g. `0..=31`.
    pub fn range_short(&self) -> String {
        match *self {
            Kind::UInt { min, max } => format!("{min}..={max}"),
            Kind::Pow2 { min, max } => format!("power of two, {min}..={max}"),
            Kind::IntSet(set) => join_with(set.iter().map(|v| v.to_string()), " | "),
            Kind::Float {
                min,
                max,
                min_exclusive,
            } => {
                if min_exclusive {
                    format!("> {min}, <= {max}")
                } else {
                    format!("{min}..={max}")
                }
            }
            Kind::Bool => "true | false".to_string(),
            Kind::Str(set) => join_with(set.iter().map(|v| format!("\"{v}\"")), " | "),
        }
    }

    fn expected_type(&self) -> &'static str {
        match self {
            Kind::UInt { .. } | Kind::Pow2 { .. } | Kind::IntSet(_) => "an integer",
            Kind::Float { .. } => "a number",
            Kind::Bool => "true or false",
            Kind::Str(_) => "a string",
        }
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    join_with(items, ", ")
}

fn join_with(items: impl Iterator<Item = String>, sep: &str) -> String {
    items.collect::<Vec<_>>().join(sep)
}

/// Documentation of one field.
#[derive(Debug, Clone, Copy)]
pub struct FieldDoc {
    /// Dotted path, e.g. `qp.pmtu`.
    pub path: &'static str,
    /// Unit of the value (`ns`, `bytes`, `cycles`, ...).
    pub unit: &'static str,
    /// Accepted values.
    pub kind: Kind,
    /// May be absent (an `Option` field); `--set path=none` unsets it.
    pub optional: bool,
    /// One-line description.
    pub doc: &'static str,
}

const fn f(path: &'static str, unit: &'static str, kind: Kind, doc: &'static str) -> FieldDoc {
    FieldDoc {
        path,
        unit,
        kind,
        optional: false,
        doc,
    }
}

const fn uint(min: u64, max: u64) -> Kind {
    Kind::UInt { min, max }
}

const fn float(min: f64, max: f64) -> Kind {
    Kind::Float {
        min,
        max,
        min_exclusive: false,
    }
}

const fn positive(max: f64) -> Kind {
    Kind::Float {
        min: 0.0,
        max,
        min_exclusive: true,
    }
}

/// Largest integer TOML can hold (i64::MAX).
pub const TOML_INT_MAX: u64 = i64::MAX as u64;
const CYCLES: Kind = uint(0, 1_000_000);
const NS: Kind = float(0.0, 1e10);
const ENTRIES: Kind = uint(0, 1 << 24);
/// Accepted path MTUs (IB MTU enumeration).
pub const PMTUS: &[u64] = &[256, 512, 1024, 2048, 4096];

/// Every configuration field, in the order `rnic config show` prints them. Nested sections
/// (`net.impair`) come after their parent's scalar fields.
pub const FIELDS: &[FieldDoc] = &[
    // sim
    f("sim.seed", "seed", uint(0, TOML_INT_MAX),
      "Seed of every random choice (loss, reordering, tie breaks); the same config and seed give identical results (--seed)"),
    f("sim.duration_us", "µs", positive(3.6e9),
      "Simulated measurement window of duration-mode runs (perf -D sets it from seconds); iteration-mode runs end after -n iterations instead"),
    f("sim.warmup_us", "µs", float(0.0, 3.6e9),
      "Simulated time run before the measurement window of -D runs; operations, rates and latencies count only inside the window (cache, PCIe and wire counters cover the whole run)"),
    f("sim.warmup_rounds", "rounds", uint(0, 1_000_000),
      "Runs with -D: the window opens once every QP has completed this many operations (latency tests: rounds over the QPs; bandwidth tests: counted once the initial -t posts are all made), and not before sim.warmup_us; a floor, since many-QP bandwidth runs settle later; 0: sim.warmup_us alone"),
    f("sim.max_events", "events", uint(1, TOML_INT_MAX),
      "Safety limit: a run that would process more events stops with an error instead of running away"),
    f("sim.max_memory_gb", "GB", float(0.0, 1e6),
      "Memory budget of one run (10^9 bytes): a run whose estimated footprint (buffers, rings, per-QP state) exceeds it is refused before it starts; 0 = half of this machine's memory"),
    // nic
    f("nic.clock_ghz", "GHz", float(0.001, 10.0),
      "NIC core clock; every nic.*_cycles field counts cycles of this clock"),
    f("nic.qpc_entry_bytes", "bytes", uint(16, 4096),
      "Size of one QP context (QPC), on chip and in host memory or DDR (seed 000: 256 B)"),
    f("nic.qpc_cache_entries", "entries", ENTRIES,
      "Capacity of the on-chip QPC cache; 0 means no cache, every access fetches the QPC (seed 000: 300)"),
    f("nic.qpc_cache_policy", "policy", Kind::Str(&["lru"]),
      "Replacement policy of the QPC cache"),
    f("nic.qpc_manager", "manager", Kind::Str(&["fcfs", "nonblocking"]),
      "QPC manager: fcfs = first come first served, a miss blocks every later request (head-of-line); nonblocking = csRNA pending FIFO and pending record table, hits pass misses while per-QP order is kept"),
    f("nic.ooo_cap", "requests", uint(1, 256),
      "Non-blocking QPC requester: requests that may complete out of order per channel (csRNA ooo_cap; 40 B on chip each)"),
    f("nic.latency_hiding", "switch", Kind::Bool,
      "csRNA latency hiding: SQ address table on chip, QPC prefetch overlapped with the WQE read (false = QPC read before WQE read)"),
    f("nic.qpc_placement", "place", Kind::Str(&["host", "ddr"]),
      "Where QPCs live when not cached: host memory over PCIe, or the NIC's on-board DDR"),
    f("nic.wqe_bytes", "bytes", uint(64, 1024),
      "Size of one WQE slot in the send and receive queues (the WQE format takes 64 B; larger slots are read whole)"),
    f("nic.wqes_per_fetch", "WQEs", uint(1, 1024),
      "WQEs the NIC reads from the send queue in one PCIe read"),
    f("nic.chunk_bytes", "bytes", uint(1, 1 << 30),
      "Scheduler chunk: message bytes one scheduler visit takes from a QP before the QP goes back to the end of the round robin (seed 000: KB level; seed 002 chunk_size; at least one WQE, at most nic.wqes_per_fetch)"),
    f("nic.mpt_cache_entries", "entries", ENTRIES,
      "Capacity of the on-chip memory protection table (MPT) cache; 0 = no cache (seed 002: 256)"),
    f("nic.mtt_cache_entries", "entries", ENTRIES,
      "Capacity of the on-chip memory translation table (MTT) cache; 0 = no cache (seed 002: 256)"),
    f("nic.page_bytes", "bytes", Kind::Pow2 { min: 4096, max: 1 << 30 },
      "Page size of MTT translation: one MTT entry per page of a memory region"),
    f("nic.doorbell_cycles", "cycles", CYCLES,
      "Cycles to process one doorbell (MMIO write announcing new WQEs)"),
    f("nic.sched_cycles", "cycles", CYCLES,
      "QP scheduler: cycles per scheduling decision"),
    f("nic.wqe_decode_cycles", "cycles", CYCLES,
      "Cycles to decode one WQE"),
    f("nic.qpc_lookup_cycles", "cycles", CYCLES,
      "Cycles of an on-chip QPC cache lookup (hit or miss detection)"),
    f("nic.tx_msg_cycles", "cycles", CYCLES,
      "TX pipeline initiation interval per message; sets the peak message rate (calibrated in the model's profile)"),
    f("nic.tx_pkt_cycles", "cycles", CYCLES,
      "TX pipeline initiation interval per packet"),
    f("nic.rx_pkt_cycles", "cycles", CYCLES,
      "RX pipeline initiation interval per packet"),
    f("nic.ack_cycles", "cycles", CYCLES,
      "Cycles to generate or consume one ACK/NAK"),
    f("nic.cqe_cycles", "cycles", CYCLES,
      "Cycles to build one CQE before it is written to host memory"),
    f("nic.max_outstanding_wqes_per_qp", "WQEs", uint(1, 1 << 20),
      "Queue depth: WQEs a QP may have in flight (posted to the wire, not yet completed) (seed 003)"),
    f("nic.mpt_lookup_cycles", "cycles", CYCLES,
      "Cycles of an on-chip MPT cache lookup (memory key validation)"),
    f("nic.mtt_lookup_cycles", "cycles", CYCLES,
      "Cycles of an on-chip MTT cache lookup, per page translated"),
    f("nic.mpt_entry_bytes", "bytes", uint(1, 4096),
      "Size of one MPT entry, on chip and in its backing store"),
    f("nic.mtt_entry_bytes", "bytes", uint(1, 4096),
      "Size of one MTT entry (one page translation), on chip and in its backing store"),
    f("nic.cqe_bytes", "bytes", uint(1, 4096),
      "Size of one completion queue entry written to host memory"),
    f("nic.qpc_fifo_depth", "requests", uint(1, 1 << 20),
      "Descriptor requests the scheduler may have queued at the QPC manager before it pauses (FCFS request FIFO depth)"),
    f("nic.max_visits_in_flight", "visits", uint(1, 1 << 20),
      "Scheduler visits (WQE reads) outstanding at once; more pause the scheduler"),
    f("nic.tx_backlog_cap", "messages", uint(1, 1 << 20),
      "Messages fetched and handed to the transport but not yet started by the TX engine, above which the scheduler pauses"),
    f("nic.tx_buffer_bytes", "bytes", uint(1, 1 << 30),
      "TX payload buffer: SEND/WRITE payload read into the NIC and not yet sent on the wire, above which payload reads wait and the scheduler pauses (covers the payload reads' latency at line rate with PCIe 90 % busy)"),
    f("nic.tx_port_slack_bytes", "bytes", uint(0, 1 << 30),
      "Bytes the TX engine may run ahead of the Ethernet port"),
    f("nic.sq_table_entry_bytes", "bytes", uint(1, 256),
      "Latency hiding: bytes per QP of the on-chip SQ address table (SQ address and WQE offset; seed 000: 10)"),
    f("nic.sq_table_cycles", "cycles", CYCLES,
      "Latency hiding: cycles to read a QP's SQ address from the on-chip SQ address table"),
    // pcie
    f("pcie.gbps", "Gb/s", float(0.001, 10_000.0),
      "PCIe bandwidth in each direction, after line encoding (seeds: 128)"),
    f("pcie.read_rtt_ns", "ns", NS,
      "Round trip of a NIC read of host memory, request sent to first completion received (seeds: 500)"),
    f("pcie.posted_write_ns", "ns", NS,
      "Latency of a posted write from the NIC until it is visible in host memory"),
    f("pcie.tlp_header_bytes", "bytes", uint(0, 256),
      "Per-TLP overhead on the link: header, framing, sequence number, LCRC and DLLP share"),
    f("pcie.mps_bytes", "bytes", Kind::Pow2 { min: 128, max: 4096 },
      "Max payload size: largest write (and read completion) TLP payload"),
    f("pcie.mrrs_bytes", "bytes", Kind::Pow2 { min: 128, max: 4096 },
      "Max read request size: larger DMA reads are split into requests of this size"),
    f("pcie.max_read_tags", "tags", uint(1, 65_536),
      "Non-posted read requests the NIC may have outstanding (PCIe tags)"),
    f("pcie.doorbell_bytes", "bytes", uint(1, 4096),
      "Payload of one doorbell MMIO write (producer index and QPN)"),
    // ddr
    f("ddr.latency_ns", "ns", NS,
      "Access latency of the NIC's on-board DDR (used when nic.qpc_placement = \"ddr\")"),
    f("ddr.gbps", "Gb/s", float(0.001, 100_000.0),
      "Bandwidth of the NIC's on-board DDR"),
    // eth
    f("eth.gbps", "Gb/s", float(0.001, 10_000.0),
      "Ethernet port rate (seeds: 100)"),
    f("eth.preamble_ifg_bytes", "bytes", uint(0, 64),
      "Per-frame overhead on the wire besides the frame: preamble and SFD (8) plus minimum inter-frame gap (12)"),
    f("eth.fcs_bytes", "bytes", uint(0, 8),
      "Ethernet frame check sequence per frame"),
    f("eth.min_frame_bytes", "bytes", uint(0, 4096),
      "Minimum Ethernet frame without FCS; shorter frames are padded on the wire"),
    // net
    f("net.clients", "hosts", uint(1, 4096),
      "Client hosts, all sending to one server through the switch (perf --clients; seed 000: 10)"),
    f("net.link_delay_ns", "ns", NS,
      "One-way propagation delay of each host-switch link (seed 000: 1 µs)"),
    FieldDoc {
        path: "net.link_km",
        unit: "km",
        kind: float(0.0, 1e6),
        optional: true,
        doc: "Link length; when set it replaces net.link_delay_ns by 5000 ns per km (fibre, seed 003); unset by default (--set net.link_km=none)",
    },
    f("net.switch_buffer_bytes", "bytes", uint(0, 1 << 40),
      "Shared packet buffer of the switch; packets arriving when it is full are dropped"),
    f("net.switch_latency_ns", "ns", NS,
      "Fixed forwarding latency of the switch, added to store-and-forward serialization (cut-through switching is not modelled)"),
    f("net.impair.loss", "probability", float(0.0, 1.0),
      "Probability that a packet is lost on the wire, independently per packet"),
    f("net.impair.reorder_depth", "packets", uint(0, 1 << 20),
      "Bounded reordering: a packet may be overtaken by at most this many later packets (0 = in order)"),
    f("net.impair.dup", "probability", float(0.0, 1.0),
      "Probability that a packet is duplicated on the wire"),
    f("net.impair.extra_delay_ns", "ns", NS,
      "Extra one-way delay added to every packet"),
    // host
    f("host.post_send_ns", "ns", NS,
      "CPU time of one ibv_post_send: WQE write and doorbell"),
    f("host.poll_cq_ns", "ns", NS,
      "CPU time of one ibv_poll_cq call that returns a completion"),
    f("host.mem_latency_ns", "ns", NS,
      "Host DRAM latency seen by the CPU (reading CQEs and received data)"),
    f("host.cores", "cores", uint(1, 4096),
      "Application cores per host; QP i is served by core i mod cores (seed 000: 10)"),
    // qp
    FieldDoc {
        path: "qp.pmtu",
        unit: "bytes",
        kind: Kind::IntSet(PMTUS),
        optional: false,
        doc: "Path MTU: payload bytes per packet (perf -m)",
    },
    f("qp.timeout", "exponent", uint(0, 31),
      "Local ACK timeout 4.096 µs × 2^timeout, 0 = infinite, as ibv_qp_attr.timeout (perf -u)"),
    f("qp.retry_cnt", "retries", uint(0, 7),
      "Retransmissions after a timeout or NAK before the QP fails with RETRY_EXC_ERR"),
    f("qp.rnr_retry", "retries", uint(0, 7),
      "Retries after an RNR NAK before the QP fails; 7 = infinite"),
    f("qp.min_rnr_timer", "code", uint(0, 31),
      "RNR NAK timer code sent by the responder (IB encoding: 12 = 0.64 ms, 0 = 655.36 ms)"),
    f("qp.max_rd_atomic", "requests", uint(1, 16),
      "Outstanding RDMA READ and atomic requests per QP (initiator depth and responder resources)"),
];

/// The documentation entry of a path.
pub fn field(path: &str) -> Option<&'static FieldDoc> {
    FIELDS.iter().find(|d| d.path == path)
}

/// How an error hint is phrased for a family of fields.
#[derive(Clone, Copy)]
pub enum HintStyle {
    /// Config fields: "(baseline: 4096; e.g. --set qp.pmtu=4096)".
    Config,
    /// No hint.
    None,
}

/// Checks a (possibly partial) config table: unknown keys, types, ranges. Integer fields given
/// as whole floats (`2e9`) are converted to integers; optional fields set to `"none"` are
/// removed.
pub fn check_and_normalize_config_table(table: &mut Table) -> Result<(), ConfigError> {
    check_tree(table, "", FIELDS, HintStyle::Config)
}

/// Like [`check_and_normalize_config_table`] on a copy.
pub fn check_config_table(table: &Table) -> Result<(), ConfigError> {
    let mut t = table.clone();
    check_and_normalize_config_table(&mut t)
}

/// Checks `table` (whose keys live under `prefix`, "" for the root, else ending in '.')
/// against `fields`.
pub fn check_tree(
    table: &mut Table,
    prefix: &str,
    fields: &[FieldDoc],
    hints: HintStyle,
) -> Result<(), ConfigError> {
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let full = format!("{prefix}{key}");
        if let Some(doc) = fields.iter().find(|d| d.path == full) {
            let remove = {
                let v = table.get_mut(&key).expect("key listed above");
                if doc.optional && v.as_str().is_some_and(|s| s == "none" || s.is_empty()) {
                    true
                } else {
                    check_value(doc, v, hints)?;
                    false
                }
            };
            if remove {
                table.remove(&key);
            }
            continue;
        }
        let sub_prefix = format!("{full}.");
        if fields.iter().any(|d| d.path.starts_with(&sub_prefix)) {
            match table.get_mut(&key) {
                Some(Value::Table(sub)) => check_tree(sub, &sub_prefix, fields, hints)?,
                Some(other) => {
                    return Err(ConfigError::WrongType {
                        path: full.clone(),
                        value: short_value(other),
                        expected: format!(
                            "a section (table) with keys {}",
                            section_keys(prefix_keys(fields, &sub_prefix))
                        ),
                        hint: String::new(),
                    })
                }
                None => {}
            }
            continue;
        }
        return Err(unknown_key(&full, prefix, fields));
    }
    Ok(())
}

/// The direct children (leaf names and sub-section names) of `prefix`, in table order.
pub fn prefix_keys(fields: &[FieldDoc], prefix: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for d in fields {
        if let Some(rest) = d.path.strip_prefix(prefix) {
            let child = rest.split('.').next().unwrap_or(rest);
            if !out.contains(&child) {
                out.push(child);
            }
        }
    }
    out
}

fn section_keys(keys: Vec<&str>) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds an unknown-key error listing the keys accepted at `prefix`.
pub fn unknown_key(full: &str, prefix: &str, fields: &[FieldDoc]) -> ConfigError {
    let keys = prefix_keys(fields, prefix);
    let key = full.strip_prefix(prefix).unwrap_or(full);
    let suggestion = closest(key, &keys)
        .map(|k| format!(", did you mean `{prefix}{k}`?"))
        .unwrap_or_default();
    let section_desc = if prefix.is_empty() {
        "the top level".to_string()
    } else {
        format!("section `{}`", prefix.trim_end_matches('.'))
    };
    ConfigError::UnknownKey {
        path: full.to_string(),
        suggestion,
        section_desc,
        known: section_keys(keys),
    }
}

/// The candidate closest to `key` by edit distance, if it is close enough to be a typo.
pub fn closest<'a>(key: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let limit = (key.len() / 3).max(2);
    let near = candidates
        .iter()
        .map(|c| (edit_distance(key, c), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c);
    // A truncated name (`nic.qpc_cach`) suggests the shortest key it starts.
    near.or_else(|| {
        (key.len() >= 3)
            .then(|| {
                candidates
                    .iter()
                    .filter(|c| c.starts_with(key))
                    .min_by_key(|c| c.len())
                    .copied()
            })
            .flatten()
    })
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// A value as written in TOML, shortened for error messages.
pub fn short_value(v: &Value) -> String {
    let s = match v {
        Value::Table(_) => "a table".to_string(),
        Value::Array(_) => "an array".to_string(),
        other => other.to_string(),
    };
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn hint_for(doc: &FieldDoc, hints: HintStyle) -> String {
    match hints {
        HintStyle::None => String::new(),
        HintStyle::Config => {
            let example = match super::Config::default().to_table() {
                Ok(t) => get_path(&t, doc.path).map(|v| v.to_string()),
                Err(_) => None,
            };
            match example {
                Some(ex) => format!(" (baseline: {ex}; e.g. --set {}={ex})", doc.path),
                None => format!(" (unset in baseline; e.g. --set {}=VALUE)", doc.path),
            }
        }
    }
}

/// Checks one value against its field, normalizing whole floats for integer fields.
pub fn check_value(doc: &FieldDoc, v: &mut Value, hints: HintStyle) -> Result<(), ConfigError> {
    let wrong_type = |v: &Value| ConfigError::WrongType {
        path: doc.path.to_string(),
        value: short_value(v),
        expected: format!("{} ({})", doc.kind.expected_type(), doc.kind.accepted()),
        hint: hint_for(doc, hints),
    };
    let out_of_range = |shown: String| ConfigError::OutOfRange {
        path: doc.path.to_string(),
        value: shown,
        accepted: doc.kind.accepted(),
        hint: hint_for(doc, hints),
    };
    match doc.kind {
        Kind::UInt { .. } | Kind::Pow2 { .. } | Kind::IntSet(_) => {
            let n: i128 = match *v {
                Value::Integer(i) => i128::from(i),
                Value::Float(x) if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.2e18 => {
                    x as i128
                }
                Value::Float(x) if x.is_finite() => {
                    return Err(out_of_range(x.to_string()).with_note_integer(x))
                }
                _ => return Err(wrong_type(v)),
            };
            let ok = match doc.kind {
                Kind::UInt { min, max } => n >= i128::from(min) && n <= i128::from(max),
                Kind::Pow2 { min, max } => {
                    n >= i128::from(min) && n <= i128::from(max) && (n as u64).is_power_of_two()
                }
                Kind::IntSet(set) => n >= 0 && set.contains(&(n as u64)),
                _ => unreachable!("integer kinds only"),
            };
            if !ok {
                return Err(out_of_range(n.to_string()));
            }
            *v = Value::Integer(n as i64);
        }
        Kind::Float {
            min,
            max,
            min_exclusive,
        } => {
            let x = match v {
                Value::Integer(i) => *i as f64,
                Value::Float(x) => *x,
                _ => return Err(wrong_type(v)),
            };
            let low_ok = if min_exclusive { x > min } else { x >= min };
            if !x.is_finite() || !low_ok || x > max {
                return Err(out_of_range(v.to_string()));
            }
            *v = Value::Float(x);
        }
        Kind::Bool => {
            if !v.is_bool() {
                return Err(wrong_type(v));
            }
        }
        Kind::Str(set) => match v {
            Value::String(s) => {
                let lower = s.to_ascii_lowercase();
                if !set.contains(&lower.as_str()) {
                    let mut e = out_of_range(format!("\"{s}\""));
                    if let (Some(k), ConfigError::OutOfRange { hint, .. }) =
                        (closest(&lower, set), &mut e)
                    {
                        *hint = format!(", did you mean \"{k}\"?{hint}");
                    }
                    return Err(e);
                }
                *v = Value::String(lower);
            }
            _ => return Err(wrong_type(v)),
        },
    }
    Ok(())
}

impl ConfigError {
    fn with_note_integer(self, x: f64) -> ConfigError {
        match self {
            ConfigError::OutOfRange {
                path,
                accepted,
                hint,
                ..
            } => ConfigError::OutOfRange {
                path,
                value: x.to_string(),
                accepted: format!("{accepted} (whole numbers only)"),
                hint,
            },
            other => other,
        }
    }
}

/// The value at a dotted path.
pub fn get_path<'a>(table: &'a Table, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut cur = table.get(first)?;
    for p in parts {
        cur = cur.as_table()?.get(p)?;
    }
    Some(cur)
}

/// Every leaf path of a table (depth first, table order).
pub fn leaf_paths(table: &Table) -> Vec<String> {
    fn walk(t: &Table, prefix: &str, out: &mut Vec<String>) {
        for (k, v) in t {
            let p = format!("{prefix}{k}");
            match v {
                Value::Table(sub) => walk(sub, &format!("{p}."), out),
                _ => out.push(p),
            }
        }
    }
    let mut out = Vec::new();
    walk(table, "", &mut out);
    out
}
