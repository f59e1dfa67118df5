//! Flow-completion times of a workload and their slowdowns by flow-size bucket, the figures
//! of the HPCC paper's FCT plots: each flow's FCT (from its first post: over RC to its last
//! completion, the acknowledgement's return; over UC and UD and behind the WAN accelerator,
//! whose senders complete before the receiver has the bytes, to its receiver's placement of
//! its last byte: [`super::ideal::FctEnd`]) over its ideal FCT to the same moment
//! ([`super::ideal`]), then per bucket of flow sizes the 50th, 95th and 99th
//! percentile slowdowns. Buckets are fixed decades of bytes (1 B–10 KB, 10–100 KB, 100 KB–1 MB,
//! 1–10 MB, ...; a bucket holds sizes above its low edge up to its high edge), so two
//! workloads or two runs are compared bucket by bucket; empty buckets are left out.

use serde::{Deserialize, Serialize};

/// One flow of a workload.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowFct {
    /// The flow's name (its row in `flows`).
    pub name: String,
    /// Sending node.
    pub src: u32,
    /// Receiving node.
    pub dst: u32,
    /// Bytes moved.
    pub size_bytes: u64,
    /// When it was to start, µs.
    pub start_us: f64,
    /// From its first post, µs (0 if it never completed): over RC to its last completion
    /// (the acknowledgement's return, as its sender's core polls the CQE); over UC and UD,
    /// and behind the WAN accelerator, to its receiver's placement of its last byte
    /// ([`super::ideal::FctEnd`]).
    pub fct_us: f64,
    /// The same flow alone on the idle fabric, to the same moment as `fct_us`, µs.
    pub ideal_fct_us: f64,
    /// `fct_us / ideal_fct_us`.
    pub slowdown: f64,
    /// Whether it completed with every byte verified.
    pub completed: bool,
}

/// The slowdowns of the flows in one size bucket.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeBucket {
    /// Sizes above this, bytes.
    pub above_bytes: u64,
    /// Sizes up to this, bytes.
    pub up_to_bytes: u64,
    /// Completed flows in the bucket.
    pub flows: u64,
    pub slowdown_p50: f64,
    pub slowdown_p95: f64,
    pub slowdown_p99: f64,
    /// The bucket's longest FCT, µs.
    pub fct_max_us: f64,
}

/// A workload's flows and their summary, as `--json` writes it under `workload`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadResult {
    /// The flow-size distribution file.
    pub cdf: String,
    /// Offered load, fraction of each host's link.
    pub load: f64,
    /// `all_to_all` or `matrix`.
    pub pattern: String,
    /// The link rate the load is a fraction of, Gb/s.
    pub host_link_gbps: f64,
    /// Flows the workload started (incast bursts included).
    pub flows_started: u64,
    /// Flows that completed with every byte verified.
    pub flows_completed: u64,
    /// What the ideal FCT counts, and so what the FCT runs to.
    pub ideal_fct: String,
    /// How flows are put in buckets.
    pub buckets_by: String,
    /// Slowdown percentiles by flow size.
    pub buckets: Vec<SizeBucket>,
    /// Every flow.
    pub flows: Vec<FlowFct>,
}

/// How [`super::ideal`] counts to the last acknowledgement's return (RC), in words for the
/// results.
pub const IDEAL_FCT_WORDS: &str = "2 x one-way propagation and switch latency + the \
    message's wire time (headers, FCS, preamble, IFG per packet) at the path's bottleneck \
    rate + one packet per extra link (store and forward); NIC and host time not counted";

/// How [`super::ideal`] counts to the last byte's arrival (UC, UD, behind the WAN
/// accelerator), in words for the results.
pub const IDEAL_FCT_TO_LAST_BYTE_WORDS: &str = "to the receiver's last byte, as the FCT \
    over UC, UD and behind the WAN accelerator: 1 x one-way propagation and switch latency \
    + the message's wire time (headers, FCS, preamble, IFG per packet) at the path's \
    bottleneck rate + one packet per extra link (store and forward); NIC and host time not \
    counted";

/// What the ideal FCT (and the FCT) of a run that ends its flows at `end` counts, in words.
pub fn ideal_fct_words(end: super::ideal::FctEnd) -> &'static str {
    match end {
        super::ideal::FctEnd::Ack => IDEAL_FCT_WORDS,
        super::ideal::FctEnd::LastByte => IDEAL_FCT_TO_LAST_BYTE_WORDS,
    }
}

/// How [`buckets`] groups, in words for the results.
pub const BUCKET_WORDS: &str = "fixed decades of bytes: (0, 10 KB], (10 KB, 100 KB], \
    (100 KB, 1 MB], ...";

/// The nearest-rank `q` quantile (0..1) of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// "Short" flows: up to this size, bytes (the left of the HPCC paper's WebSearch
/// FCT-slowdown figure, where a congestion control's tail is highest; its text speaks of
/// flows below 200 KB).
pub const SHORT_MAX_BYTES: u64 = 100_000;
/// "Long" flows: above this size, bytes (the figure's right).
pub const LONG_MIN_BYTES: u64 = 1_000_000;

/// The nearest-rank slowdown percentiles of one class of completed flows (all zero when the
/// class has none).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowdownTail {
    /// Completed flows in the class.
    pub flows: u64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// The slowdown percentiles of the completed flows whose size `keep` accepts.
pub fn tail(flows: &[FlowFct], keep: impl Fn(u64) -> bool) -> SlowdownTail {
    let mut s: Vec<f64> = flows
        .iter()
        .filter(|f| f.completed && keep(f.size_bytes))
        .map(|f| f.slowdown)
        .collect();
    s.sort_by(f64::total_cmp);
    SlowdownTail {
        flows: s.len() as u64,
        p50: quantile(&s, 0.50),
        p95: quantile(&s, 0.95),
        p99: quantile(&s, 0.99),
    }
}

/// Short flows' tail ([`SHORT_MAX_BYTES`] and below).
pub fn short_tail(flows: &[FlowFct]) -> SlowdownTail {
    tail(flows, |b| b <= SHORT_MAX_BYTES)
}

/// Long flows' tail (above [`LONG_MIN_BYTES`]).
pub fn long_tail(flows: &[FlowFct]) -> SlowdownTail {
    tail(flows, |b| b > LONG_MIN_BYTES)
}

/// The decade bucket of a size: its (above, up to] edges, the first one from 0 to 10 KB.
fn decade(size: u64) -> (u64, u64) {
    let mut hi = 10_000u64;
    while size > hi {
        hi *= 10;
    }
    (if hi == 10_000 { 0 } else { hi / 10 }, hi)
}

/// The completed flows' slowdowns by decade of size, smallest first.
pub fn buckets(flows: &[FlowFct]) -> Vec<SizeBucket> {
    let mut by: std::collections::BTreeMap<(u64, u64), Vec<&FlowFct>> = Default::default();
    for f in flows.iter().filter(|f| f.completed) {
        by.entry(decade(f.size_bytes)).or_default().push(f);
    }
    by.into_iter()
        .map(|((above, up_to), fs)| {
            let mut s: Vec<f64> = fs.iter().map(|f| f.slowdown).collect();
            s.sort_by(f64::total_cmp);
            SizeBucket {
                above_bytes: above,
                up_to_bytes: up_to,
                flows: fs.len() as u64,
                slowdown_p50: quantile(&s, 0.50),
                slowdown_p95: quantile(&s, 0.95),
                slowdown_p99: quantile(&s, 0.99),
                fct_max_us: fs.iter().map(|f| f.fct_us).fold(0.0, f64::max),
            }
        })
        .collect()
}

/// The per-flow CSV: one line per flow.
pub fn flows_csv(flows: &[FlowFct]) -> String {
    let mut s =
        String::from("name,src,dst,size_bytes,start_us,fct_us,ideal_fct_us,slowdown,completed\n");
    for f in flows {
        s.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            f.name,
            f.src,
            f.dst,
            f.size_bytes,
            f.start_us,
            f.fct_us,
            f.ideal_fct_us,
            f.slowdown,
            f.completed
        ));
    }
    s
}

/// The bucket CSV: one line per non-empty bucket.
pub fn buckets_csv(buckets: &[SizeBucket]) -> String {
    let mut s = String::from(
        "above_bytes,up_to_bytes,flows,slowdown_p50,slowdown_p95,slowdown_p99,fct_max_us\n",
    );
    for b in buckets {
        s.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            b.above_bytes,
            b.up_to_bytes,
            b.flows,
            b.slowdown_p50,
            b.slowdown_p95,
            b.slowdown_p99,
            b.fct_max_us
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(size: u64, slowdown: f64) -> FlowFct {
        FlowFct {
            size_bytes: size,
            slowdown,
            fct_us: slowdown,
            completed: true,
            ..FlowFct::default()
        }
    }

    #[test]
    fn decades_hold_their_upper_edge() {
        assert_eq!(decade(1), (0, 10_000));
        assert_eq!(decade(10_000), (0, 10_000));
        assert_eq!(decade(10_001), (10_000, 100_000));
        assert_eq!(decade(30_000_000), (10_000_000, 100_000_000));
    }

    #[test]
    fn percentiles_are_nearest_rank_per_bucket() {
        // 100 small flows with slowdowns 1..=100, two large ones; one unfinished flow.
        let mut flows: Vec<FlowFct> = (1..=100).map(|k| flow(5_000, k as f64)).collect();
        flows.push(flow(2_000_000, 3.0));
        flows.push(flow(2_000_000, 5.0));
        flows.push(FlowFct {
            completed: false,
            ..flow(2_000_000, 0.0)
        });
        let b = buckets(&flows);
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].above_bytes, b[0].up_to_bytes, b[0].flows),
            (0, 10_000, 100)
        );
        assert_eq!(
            (b[0].slowdown_p50, b[0].slowdown_p95, b[0].slowdown_p99),
            (50.0, 95.0, 99.0)
        );
        assert_eq!((b[1].above_bytes, b[1].flows), (1_000_000, 2));
        assert_eq!((b[1].slowdown_p50, b[1].slowdown_p99), (3.0, 5.0));
        assert_eq!(b[1].fct_max_us, 5.0);
        let csv = buckets_csv(&b);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv.contains("\n0,10000,100,50,95,99,100\n"), "{csv}");
        assert_eq!(flows_csv(&flows).lines().count(), 104);
    }
}
