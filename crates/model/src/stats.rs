//! One statistics registry, gem5-style: every component reports its own counters under its
//! name ([`Report`]), a node's NIC under `nic.<unit>.<counter>`, the network under `net.`;
//! the registry feeds the JSON results (`stats`) and `rnic perf --stats`. A component's
//! counters are its statistics struct, flattened by name, so a new counter needs no list to
//! be kept by hand.

use std::collections::BTreeMap;

use serde::Serialize;

/// Counters by dotted name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    values: BTreeMap<String, u64>,
}

/// A component that reports its statistics.
pub trait Report {
    /// Records this component's counters under `prefix` (`"nic.sched"`, ...).
    fn report(&self, prefix: &str, reg: &mut Registry);
}

impl Registry {
    /// Records every numeric field of `stats` (nested structs by dotted name) under
    /// `prefix`.
    pub fn record<T: Serialize>(&mut self, prefix: &str, stats: &T) {
        if let Ok(v) = serde_json::to_value(stats) {
            self.flatten(prefix, &v);
        }
    }

    /// Records one counter.
    pub fn set(&mut self, name: &str, v: u64) {
        self.values.insert(name.to_string(), v);
    }

    fn flatten(&mut self, prefix: &str, v: &serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    self.flatten(&join(prefix, k), x);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.flatten(&join(prefix, &i.to_string()), x);
                }
            }
            serde_json::Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    self.values.insert(prefix.to_string(), u);
                }
            }
            serde_json::Value::Bool(b) => {
                self.values.insert(prefix.to_string(), u64::from(*b));
            }
            _ => {}
        }
    }

    /// One counter, if recorded.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.get(name).copied()
    }

    /// Adds every counter of `other` (sums nodes): counts add up, while a maximum or a
    /// peak ([`is_extreme`]) takes the larger of the two, since ten clients' largest DMA
    /// waits or buffer peaks added up were never reached by any of them, and so does a
    /// percentile or a mean ([`is_summary`]), the whole's bound.
    pub fn add(&mut self, other: &Registry) {
        for (k, v) in &other.values {
            let e = self.values.entry(k.clone()).or_default();
            *e = if is_extreme(k) || is_summary(k) {
                (*e).max(*v)
            } else {
                e.saturating_add(*v)
            };
        }
    }

    /// Every counter with `prefix.` in front of its name.
    pub fn prefixed(&self, prefix: &str) -> BTreeMap<String, u64> {
        self.values
            .iter()
            .map(|(k, v)| (join(prefix, k), *v))
            .collect()
    }

    /// The counters, by name.
    pub fn values(&self) -> &BTreeMap<String, u64> {
        &self.values
    }
}

/// Serde's test for a counter left out of the JSON when nothing was counted (for counters
/// reported only when used).
pub fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether counter `name` is an extreme (a maximum or a peak) rather than a count: its last
/// dotted part starts with `max_` or contains `_max` or `peak` (`dma.max_tags_in_use`,
/// `dma.wqe_latency_max_ps`, `tx.buffer_peak_bytes`, `pfc.max_ingress_bytes`). Extremes of
/// several nodes or runs combine by the largest, counts by their sum.
pub fn is_extreme(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    last.starts_with("max_") || last.contains("_max") || last.contains("peak")
}

/// Whether counter `name` summarises a distribution: a percentile (its last dotted part
/// starts with `p` and digits and `_`: `p50_cycles`, `p99_bytes`) or a mean (`avg_`,
/// `mean_`). Neither adds up over nodes or runs (until 2026-12-02 they did: ten clients'
/// p99 of 97 cycles read 788, above their max of 197); the largest of several is a bound
/// of the whole's, since no part has more than its share above its own.
pub fn is_summary(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    let percentile = last.strip_prefix('p').is_some_and(|r| {
        let digits = r.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && r[digits..].starts_with('_')
    });
    percentile || last.starts_with("avg_") || last.starts_with("mean_")
}

/// Whether counter `name` is a property every run of a sweep shares rather than a count:
/// an identifier (`port`, `switch`: which one a per-port entry is) or a configured size
/// (a shared pool's `size_bytes` and `pfc_xoff_bytes`).
pub fn is_property(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    matches!(last, "port" | "switch" | "size_bytes" | "pfc_xoff_bytes")
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Transport counters summed over nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TransportTotals {
    /// Packets sent.
    pub tx_packets: u64,
    /// Packets retransmitted.
    pub retransmissions: u64,
    /// NAKs sent.
    pub naks: u64,
    /// ACK timeouts.
    pub timeouts: u64,
    /// Duplicate requests seen by responders.
    pub duplicates: u64,
    /// Completions with errors.
    pub completion_errors: u64,
}

impl TransportTotals {
    /// Sums the transport statistics of several devices.
    pub fn of<'a>(it: impl Iterator<Item = &'a rnic_transport::TransportStats>) -> Self {
        let mut t = TransportTotals::default();
        for s in it {
            t.tx_packets += s.tx_packets;
            t.retransmissions += s.retransmitted_packets;
            t.naks += s.naks_sent.total();
            t.timeouts += s.ack_timeouts;
            t.duplicates += s.duplicate_requests;
            t.completion_errors += s.completion_errors;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Inner {
        hits: u64,
    }

    #[derive(Serialize)]
    struct Outer {
        frames: u64,
        cache: Inner,
    }

    #[test]
    fn structs_flatten_by_dotted_name_and_nodes_sum() {
        let mut r = Registry::default();
        r.record(
            "nic.rx",
            &Outer {
                frames: 3,
                cache: Inner { hits: 2 },
            },
        );
        assert_eq!(r.get("nic.rx.frames"), Some(3));
        assert_eq!(r.get("nic.rx.cache.hits"), Some(2));
        let mut sum = r.clone();
        sum.add(&r);
        assert_eq!(sum.get("nic.rx.frames"), Some(6));
        assert_eq!(r.prefixed("server").get("server.nic.rx.frames"), Some(&3));
    }

    /// Percentiles and means of several nodes are bounded by the largest, not summed; a
    /// name that only starts with `p` is a count.
    #[test]
    fn nodes_keep_the_largest_percentile_and_mean() {
        let node = |p99: u64, avg: u64, pauses: u64| {
            let mut r = Registry::default();
            r.set("nic.iso.bs_wait.p99_cycles", p99);
            r.set("nic.iso.bs_wait.avg_cycles", avg);
            r.set("nic.iso.bs_wait.max_cycles", p99 + 20);
            r.set("net.pfc.pauses", pauses);
            r
        };
        let mut sum = node(97, 60, 3);
        sum.add(&node(120, 80, 4));
        assert_eq!(sum.get("nic.iso.bs_wait.p99_cycles"), Some(120));
        assert_eq!(sum.get("nic.iso.bs_wait.avg_cycles"), Some(80));
        assert_eq!(sum.get("nic.iso.bs_wait.max_cycles"), Some(140));
        assert_eq!(sum.get("net.pfc.pauses"), Some(7));
        for (name, summary) in [
            ("a.p50_bytes", true),
            ("a.p999_ps", true),
            ("a.mean_queue_bytes", true),
            ("a.pauses", false),
            ("a.p_bytes", false),
            ("a.pcie_bytes", false),
        ] {
            assert_eq!(is_summary(name), summary, "{name}");
        }
    }

    /// Summing nodes adds their counts, but a maximum or peak of several nodes is the
    /// largest of them: ten clients' DMA tags in use at their busiest added up to 960, past
    /// the 256 tags one PCIe link has, and their 64 KiB TX buffers' peaks to 640 KiB.
    #[test]
    fn nodes_sum_counts_and_keep_the_largest_extreme() {
        let node = |tags: u64, peak: u64, wait: u64, frames: u64| {
            let mut r = Registry::default();
            r.set("nic.dma.max_tags_in_use", tags);
            r.set("nic.tx.buffer_peak_bytes", peak);
            r.set("nic.dma.wqe_wait_max_ps", wait);
            r.set("nic.qpc.max_queued", tags / 2);
            r.set("nic.tx.frames", frames);
            r.set("nic.dma.wqe_wait_sum_ps", wait);
            r
        };
        let mut sum = Registry::default();
        for (tags, peak, wait, frames) in
            [(96, 65536, 700, 10), (200, 4096, 900, 20), (5, 0, 3, 30)]
        {
            sum.add(&node(tags, peak, wait, frames));
        }
        assert_eq!(sum.get("nic.dma.max_tags_in_use"), Some(200));
        assert_eq!(sum.get("nic.tx.buffer_peak_bytes"), Some(65536));
        assert_eq!(sum.get("nic.dma.wqe_wait_max_ps"), Some(900));
        assert_eq!(sum.get("nic.qpc.max_queued"), Some(100));
        assert_eq!(sum.get("nic.tx.frames"), Some(60));
        assert_eq!(sum.get("nic.dma.wqe_wait_sum_ps"), Some(1603));
    }
}
