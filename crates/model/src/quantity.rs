//! What a figure's axis shows, as a reader names it: a human name and a unit for every metric
//! of a result ([`crate::result::PerfResult::metrics`]) and every sweep axis key (`perf.*`,
//! `profile`, config fields), declared once here so that sweeps and reproductions label
//! their axes alike ("message size (bytes)", "p99 latency (µs)"), never with raw keys.
//!
//! Metrics and the axes that sweeps vary are listed in [`METRICS`] and [`AXES`]; a config
//! field not listed takes the first clause of its documentation as its name and its declared
//! unit ([`crate::config::schema::FieldDoc`]), none for a choice or a switch.

use crate::config::schema::{self, Kind};

/// How a quantity's values are measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unit {
    /// A byte count: printed 1024-based (B, KB = 1024 B, MB = 1024² B, GB = 1024³ B).
    Bytes,
    /// Any other unit, printed as written ("µs", "Gb/s", "Mops").
    Named(String),
    /// A count, a ratio or a choice: the name says what it counts.
    None,
}

/// A named quantity with its unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    pub name: String,
    pub unit: Unit,
}

impl Quantity {
    /// `name` measured in `unit` ("" for none, "bytes" for a byte count).
    pub fn new(name: &str, unit: &str) -> Quantity {
        Quantity {
            name: name.to_string(),
            unit: unit_of(unit),
        }
    }

    /// The quantity of a metric key (`latency_us.p99`); an unknown key names itself.
    pub fn of_metric(key: &str) -> Quantity {
        lookup(METRICS, key)
            .or_else(|| per_structure_metric(key))
            .unwrap_or_else(|| Quantity::new(key, ""))
    }

    /// The quantity of a sweep axis key (`perf.size`, `nic.qpc_cache_entries`, `profile`).
    pub fn of_axis(key: &str) -> Quantity {
        lookup(AXES, key)
            .or_else(|| schema::field(key).map(|d| from_field_doc(d.doc, d.unit, &d.kind)))
            .unwrap_or_else(|| Quantity::new(key, ""))
    }
}

/// Parses a label written as "name (unit)": the last parenthesis is the unit ("bytes" or "B"
/// a byte count); a label without one is a name without a unit.
impl From<&str> for Quantity {
    fn from(label: &str) -> Quantity {
        match label
            .trim_end()
            .strip_suffix(')')
            .and_then(|l| l.rsplit_once(" ("))
        {
            Some((name, unit)) => Quantity::new(name, unit),
            None => Quantity::new(label, ""),
        }
    }
}

fn unit_of(unit: &str) -> Unit {
    match unit {
        "" => Unit::None,
        "bytes" | "B" => Unit::Bytes,
        u => Unit::Named(u.to_string()),
    }
}

fn lookup(table: &[(&str, &str, &str)], key: &str) -> Option<Quantity> {
    table
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, name, unit)| Quantity::new(name, unit))
}

/// Metrics of map-valued and optional parts: `caches.<name>.hits`, `onchip_bytes.<name>`,
/// `unreliable.<count>`.
fn per_structure_metric(key: &str) -> Option<Quantity> {
    if let Some(rest) = key.strip_prefix("caches.") {
        let (cache, what) = rest.rsplit_once('.')?;
        return Some(Quantity::new(
            &format!("{} cache {what}", cache.to_uppercase()),
            "",
        ));
    }
    if let Some(structure) = key.strip_prefix("onchip_bytes.") {
        return Some(Quantity::new(
            &format!("on-chip memory of {}", structure.replace('_', " ")),
            "bytes",
        ));
    }
    if let Some(rest) = key.strip_prefix("slowdown.") {
        return slowdown_metric(rest);
    }
    let count = key.strip_prefix("unreliable.")?;
    Some(Quantity::new(&count.replace('_', " "), ""))
}

/// A workload sweep's `slowdown.<class>.<statistic>` (`slowdown.short.p95`): the classes
/// of [`crate::traffic::fct`], sizes in decimal kB and MB as the workload's buckets count them.
fn slowdown_metric(rest: &str) -> Option<Quantity> {
    use crate::traffic::fct::{LONG_MIN_BYTES, SHORT_MAX_BYTES};
    let (class, stat) = rest.split_once('.')?;
    let flows = match class {
        "short" => format!("flows up to {} kB", SHORT_MAX_BYTES / 1000),
        "long" => format!("flows above {} MB", LONG_MIN_BYTES / 1_000_000),
        "all" => "all flows".to_string(),
        _ => return None,
    };
    if stat == "flows" {
        return Some(Quantity::new(&format!("completed {flows}"), ""));
    }
    Some(Quantity::new(
        &format!("{stat} FCT slowdown, {flows}"),
        "FCT / ideal FCT",
    ))
}

/// A config field's name from its documentation: the first clause, without a trailing flag
/// (`(-s)`); its unit is the declared one, none for a choice or a switch.
fn from_field_doc(doc: &str, unit: &str, kind: &Kind) -> Quantity {
    let cut = [";", ":", ",", " (", ". "]
        .iter()
        .filter_map(|sep| doc.find(sep))
        .min()
        .unwrap_or(doc.len());
    let mut name = doc[..cut].trim().to_string();
    let acronym = name.chars().nth(1).is_some_and(|c| c.is_uppercase());
    if !acronym {
        name = lowercase_first(&name);
    }
    let unit = match kind {
        Kind::Bool | Kind::Str(_) | Kind::NameOrFile(..) => "",
        _ => unit,
    };
    Quantity::new(&name, unit)
}

fn lowercase_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Every fixed metric: (key, name, unit; "bytes" a byte count, "" none).
pub const METRICS: &[(&str, &str, &str)] = &[
    ("size_bytes", "message size", "bytes"),
    ("iterations", "iterations", ""),
    ("qps", "server QPs", ""),
    ("clients", "client hosts", ""),
    ("simulated_time_us", "simulated time", "µs"),
    ("ops_completed", "operations completed", ""),
    ("msg_rate_mops", "message rate", "Mops"),
    ("goodput_gbps", "goodput", "Gb/s"),
    ("bw_avg_mb_s", "average bandwidth", "MB/s, 1 MB = 1024² B"),
    ("bw_peak_mb_s", "peak bandwidth", "MB/s, 1 MB = 1024² B"),
    ("latency_us.min", "minimum latency", "µs"),
    ("latency_us.avg", "average latency", "µs"),
    ("latency_us.p50", "median latency", "µs"),
    ("latency_us.p99", "p99 latency", "µs"),
    ("latency_us.p999", "p99.9 latency", "µs"),
    ("latency_us.max", "maximum latency", "µs"),
    ("latency_us.stdev", "latency standard deviation", "µs"),
    ("retransmissions", "retransmitted packets", ""),
    ("naks", "NAKs", ""),
    ("timeouts", "retransmission timeouts", ""),
    ("pcie_rd_bytes", "PCIe bytes host to NIC", "bytes"),
    ("pcie_wr_bytes", "PCIe bytes NIC to host", "bytes"),
    (
        "pcie_rd_util",
        "PCIe utilisation host to NIC",
        "fraction busy",
    ),
    (
        "pcie_wr_util",
        "PCIe utilisation NIC to host",
        "fraction busy",
    ),
    ("events", "simulation events", ""),
    ("bytes_verified", "every byte verified", "1 = yes"),
    ("verified_bytes", "bytes verified", "bytes"),
    ("window_open_us", "measurement window opened at", "µs"),
    ("window_settled", "window settled", "1 = yes"),
    ("seed", "seed", ""),
    // A workload sweep's (`rnic sweep` with `[workload]`).
    ("load", "offered load", "fraction of a host's link"),
    ("flows_started", "flows started", ""),
    ("flows_completed", "flows completed", ""),
];

/// Sweep axis keys: every `perf.*` option, `profile`, and the config fields sweeps vary most
/// (other config fields are named from their documentation).
pub const AXES: &[(&str, &str, &str)] = &[
    ("profile", "profile", ""),
    ("perf.test", "test", ""),
    ("perf.size", "message size", "bytes"),
    ("perf.iters", "iterations per QP", ""),
    ("perf.qp", "server QPs", ""),
    ("perf.tx_depth", "send queue depth", "WQEs"),
    ("perf.all", "all sizes", ""),
    ("perf.mtu", "path MTU", "bytes"),
    ("perf.duration", "measured time", "s"),
    ("perf.clients", "client hosts", ""),
    ("perf.report_gbits", "report Gb/s", ""),
    ("perf.stats", "counters printed", ""),
    ("perf.qp_timeout", "QP timeout exponent", ""),
    ("perf.atomic_type", "atomic operation", ""),
    ("perf.procs", "server processes", ""),
    ("perf.mrs", "memory regions per node", ""),
    ("perf.client_mrs", "memory regions per client", ""),
    ("perf.mr_per_qp", "one memory region per QP", ""),
    ("perf.bidirectional", "bidirectional", ""),
    ("perf.reversed", "reversed", ""),
    ("perf.report_both", "both directions reported", ""),
    ("perf.report_histogram", "histogram printed", ""),
    ("perf.report_unsorted", "unsorted samples printed", ""),
    ("workload.load", "offered load", "fraction of a host's link"),
    ("workload.duration_us", "time of arrivals", "µs"),
    ("workload.start_us", "first arrival after", "µs"),
    ("workload.cdf", "flow-size distribution", ""),
    ("workload.pattern", "traffic pattern", ""),
    ("workload.test", "operation per flow", ""),
    ("workload.seed", "workload seed", ""),
    ("net.clients", "client hosts", ""),
    ("net.impair.loss", "loss probability", ""),
    ("net.spray.policy", "spray policy", ""),
    ("nic.qpc_cache_entries", "QPC cache", "entries"),
    ("nic.qpc_manager", "QPC manager", ""),
    ("nic.qpc_placement", "QPC placement", ""),
    ("nic.ooo_cap", "out-of-order capacity", "requests"),
    ("nic.prefetch", "prefetch trigger", ""),
    ("nic.prefetch_window", "prefetch window", "QPs"),
    ("qp.reliability", "reliability", ""),
    ("qp.pmtu", "path MTU", "bytes"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::fixed_metric_names;

    #[test]
    fn every_fixed_metric_has_a_name() {
        for key in fixed_metric_names() {
            assert!(
                METRICS.iter().any(|(k, _, _)| *k == key),
                "metric `{key}` is missing from quantity::METRICS"
            );
        }
    }

    #[test]
    fn per_structure_metrics_and_config_fields_get_names() {
        assert_eq!(
            Quantity::of_metric("caches.qpc.misses").name,
            "QPC cache misses"
        );
        assert_eq!(
            Quantity::of_metric("onchip_bytes.qpc_cache"),
            Quantity::new("on-chip memory of qpc cache", "bytes")
        );
        let clock = Quantity::of_axis("nic.clock_ghz");
        assert_eq!(clock, Quantity::new("NIC core clock", "GHz"));
        assert_eq!(Quantity::of_axis("perf.size").unit, Unit::Bytes);
        assert_eq!(
            Quantity::of_metric("slowdown.short.p95"),
            Quantity::new("p95 FCT slowdown, flows up to 100 kB", "FCT / ideal FCT")
        );
        assert_eq!(
            Quantity::of_metric("slowdown.long.flows").name,
            "completed flows above 1 MB"
        );
        assert_eq!(
            Quantity::of_metric("slowdown.tiny.p95").name,
            "slowdown.tiny.p95"
        );
        // A choice has no unit.
        assert_eq!(Quantity::of_axis("nic.qpc_cache_policy").unit, Unit::None);
        // `-q` counts the server's QPs, which the clients share round robin; the figures
        // named it "QPs per client" (the cliff at 320 QPs is 32 a client with 10 clients).
        for q in [Quantity::of_axis("perf.qp"), Quantity::of_metric("qps")] {
            assert_eq!(q, Quantity::new("server QPs", ""));
        }
    }

    #[test]
    fn labels_parse_into_name_and_unit() {
        assert_eq!(
            Quantity::from("WQE size (bytes)"),
            Quantity::new("WQE size", "bytes")
        );
        assert_eq!(
            Quantity::from("throughput (Gb/s)"),
            Quantity::new("throughput", "Gb/s")
        );
        assert_eq!(Quantity::from("QPs"), Quantity::new("QPs", ""));
    }
}
