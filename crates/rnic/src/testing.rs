//! Test helpers: a fake runner whose figures are a simple deterministic function of the
//! config and spec, so CLI, sweep and report code can be tested without the model.

use crate::config::Config;
use crate::perf::{PerfRunner, PerfSpec};
use crate::report::{CacheStats, LatencyStats, PerfResult, RunStatus};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Pretends a message costs `tx_msg_cycles` plus its bytes at line rate, and a QPC miss
/// (QPs beyond the cache) costs one PCIe read round trip.
#[derive(Debug, Default)]
pub struct FakeRunner {
    /// Fail on this size, to test error paths.
    pub fail_on_size: Option<u64>,
    /// Report this size as failing payload verification.
    pub corrupt_size: Option<u64>,
    /// Report this size as incomplete (as a run stopped at a limit).
    pub incomplete_size: Option<u64>,
    /// Refuse this size in [`PerfRunner::check`] (as the model refuses a run above its
    /// memory budget).
    pub refuse_size: Option<u64>,
    /// Refuse this size as the run is built (bad input [`PerfRunner::check`] cannot see,
    /// as the model refuses some combinations when it builds them).
    pub refuse_at_build_size: Option<u64>,
    /// Panic on this size, as if the process were killed while the point ran.
    pub panic_on_size: Option<u64>,
    /// Runs started, to check that a command refused before simulating.
    pub calls: AtomicUsize,
}

impl PerfRunner for FakeRunner {
    fn check(&self, _cfg: &Config, spec: &PerfSpec) -> Result<(), crate::UsageError> {
        match self.refuse_size {
            Some(s) if spec.sizes.contains(&s) => Err(crate::UsageError(format!(
                "fake refusal of size {s}: lower -s"
            ))),
            _ => Ok(()),
        }
    }

    fn run(&self, cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut per = Vec::new();
        for &size in &spec.sizes {
            if Some(size) == self.fail_on_size {
                anyhow::bail!("fake failure at size {size}");
            }
            if Some(size) == self.refuse_at_build_size {
                anyhow::bail!(crate::UsageError(format!(
                    "fake build refusal of size {size}"
                )));
            }
            if Some(size) == self.panic_on_size {
                panic!("fake crash at size {size}");
            }
            let ops = spec.iters * u64::from(spec.qps) * u64::from(spec.clients);
            let msg_ns = f64::from(cfg.nic.tx_msg_cycles) / cfg.nic.clock_ghz
                + size as f64 * 8.0 / cfg.eth.gbps;
            let misses = u64::from(spec.qps.saturating_sub(cfg.nic.qpc_cache_entries));
            let miss_ns = if misses > 0 {
                cfg.pcie.read_rtt_ns
            } else {
                0.0
            };
            let time_us = ops as f64 * (msg_ns + miss_ns) / 1000.0;
            let lat = cfg.net.effective_link_delay_ns() / 1000.0 * 2.0 + msg_ns / 1000.0;
            let samples: Vec<f64> = (0..100).map(|i| lat + f64::from(i) * 0.001).collect();
            let mut r = PerfResult {
                size_bytes: size,
                iterations: ops,
                simulated_time_us: time_us,
                ops_completed: ops,
                latency_us: LatencyStats::from_samples_us(&samples),
                events: ops * 10,
                pcie_rd_bytes: ops * (size + u64::from(cfg.nic.wqe_bytes)),
                pcie_wr_bytes: ops * 64,
                bytes_verified: Some(size) != self.corrupt_size,
                verified_bytes: ops * size,
                status: if Some(size) == self.corrupt_size {
                    RunStatus::Corrupt
                } else if Some(size) == self.incomplete_size {
                    RunStatus::Incomplete
                } else {
                    RunStatus::Ok
                },
                reason: if Some(size) == self.corrupt_size {
                    format!("fake corruption at size {size}")
                } else if Some(size) == self.incomplete_size {
                    format!("fake stop at size {size}, at a limit")
                } else {
                    String::new()
                },
                ..Default::default()
            };
            r.caches.insert(
                "qpc".into(),
                CacheStats {
                    hits: ops - misses.min(ops),
                    misses: misses.min(ops),
                },
            );
            r.onchip_bytes.insert(
                "qpc_cache".into(),
                u64::from(cfg.nic.qpc_cache_entries) * u64::from(cfg.nic.qpc_entry_bytes),
            );
            r.fill_rates();
            per.push(r);
        }
        Ok(PerfResult::from_sizes(per))
    }
}
