//! Helpers shared by the model tests.

use rnic_model::config::Config;
use rnic_model::result::RunStatus;
use rnic_model::stats::Registry;
use rnic_model::workload::{PerfSpec, PerfTest};
use rnic_model::{run_perf_detailed, ModelRun, RunOptions};

/// A perf spec with perftest's defaults for `test`.
pub fn spec(test: PerfTest, size: u64, qps: u32, clients: u32) -> PerfSpec {
    PerfSpec {
        sizes: vec![size],
        qps,
        clients,
        ..PerfSpec::perftest(test)
    }
}

/// The baseline config with the warm-up set.
pub fn baseline(warmup_us: f64) -> Config {
    let mut c = Config::default();
    c.sim.warmup_us = Some(warmup_us);
    c
}

/// Runs one size and returns its detailed run.
pub fn run(cfg: &Config, spec: &PerfSpec) -> ModelRun {
    run_with(cfg, spec, &RunOptions::default())
}

/// Runs one size with options.
pub fn run_with(cfg: &Config, spec: &PerfSpec, opts: &RunOptions) -> ModelRun {
    let mut v = run_perf_detailed(cfg, spec, opts).expect("model run");
    v.remove(0)
}

/// Runs one size and checks that it ended well with every byte verified (the test fails
/// naming `label`, the run's reason and its failures otherwise).
pub fn run_verified(cfg: &Config, spec: &PerfSpec, label: &str) -> ModelRun {
    let r = run(cfg, spec);
    assert_eq!(
        r.result.status,
        RunStatus::Ok,
        "{label}: {}",
        r.result.reason
    );
    assert!(r.result.bytes_verified, "{label}: {:?}", r.failures);
    r
}

/// Counter `name` of a node's registry (the test fails naming it if it is missing).
pub fn counter(node: &Registry, name: &str) -> u64 {
    node.get(name)
        .unwrap_or_else(|| panic!("no counter {name}"))
}

/// MPT lookups of a node (one per translation job that needs one).
pub fn mpt_lookups(node: &Registry) -> u64 {
    counter(node, "nic.translation.mpt.hits") + counter(node, "nic.translation.mpt.misses")
}

/// MTT lookups of a node (one per page a job spans).
pub fn mtt_lookups(node: &Registry) -> u64 {
    counter(node, "nic.translation.mtt.hits") + counter(node, "nic.translation.mtt.misses")
}

/// The one node of `nodes` whose counter `name` is above 0 (the test fails naming it
/// otherwise): the side of a run that sent or received a kind of packet.
pub fn the_node_counting<'a>(nodes: &'a [Registry], name: &str) -> &'a Registry {
    let mut got = nodes.iter().filter(|n| counter(n, name) > 0);
    let one = got
        .next()
        .unwrap_or_else(|| panic!("no node counts {name}"));
    assert!(got.next().is_none(), "more than one node counts {name}");
    one
}

/// The one node of `nodes` whose transport received requests (the test fails otherwise).
pub fn the_requests_receiver(nodes: Vec<Registry>) -> Registry {
    the_node_counting(&nodes, "transport.rx_requests").clone()
}
