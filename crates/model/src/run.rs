//! `run_perf`: builds the star of simulated hosts, connects QPs through the transport's
//! verbs, runs the perftest application on the event loop, verifies every transferred byte,
//! and reports.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use anyhow::bail;
use rnic_host::SparseMemory;
use rnic_sim::{Histogram, Rng, TimePs};
use rnic_transport::{Access, AddressVector, Device, DeviceConfig, Memory, QpAttr, QpInit};
use rnic_wire::PcapWriter;

use super::host::driver::{CQ_BASE, CQ_DB_BASE, CQ_SPACING, RQ_BASE, SQ_BASE, SRC_BASE};
use super::host::pattern;
use super::host::perftest::{Core, CqRing, HostQp, NodeApp, Pair, Perftest, Proc};
use super::limits;
use super::net::graph::NetStats;
use super::net::topology::{self, node_ip, node_mac};
use super::nic::cq::CqCtx;
use super::nic::Nic;
use super::oracle::PayloadOracle;
use super::params::ModelParams;
use super::stats::{Registry, Report, TransportTotals};
use super::verdict::{self, Verdict};
use super::world::{Hooks, World};
use crate::config::Config;
use crate::result::RunStatus;
use crate::result::{CacheStats as ReportCache, LatencyStats, PerfResult};
use crate::workload::{PerfSpec, PerfTest, QpProfile, Verb};

/// Bytes of distinct buffers per node; pairs beyond share buffer slots (same pattern).
const BUFFER_BUDGET: u64 = 256 << 20;

/// Bytes between two pairs' buffers of `size`-byte messages.
pub(crate) fn buffer_stride(size: u64) -> u64 {
    align_up(size.max(8), 64)
}

/// Distinct buffer slots per node for `size`-byte messages on `qps` pairs (pair i uses slot
/// i mod slots).
pub(crate) fn buffer_slots(size: u64, qps: u32) -> u32 {
    (BUFFER_BUDGET / buffer_stride(size)).clamp(1, u64::from(qps.max(1))) as u32
}

/// Options of a model run beyond the config and the perf spec.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Test hooks.
    pub hooks: Hooks,
}

/// A run with everything the model measured.
#[derive(Debug, Clone)]
pub struct ModelRun {
    /// The perftest-style result.
    pub result: PerfResult,
    /// Why verification failed (empty when `result.bytes_verified`).
    pub failures: Vec<String>,
    /// Every node's NIC counters, by dotted name (`nic.qpc.cache.hits`; node 0 = server).
    pub nodes: Vec<Registry>,
    /// Network statistics.
    pub net: NetStats,
    /// Transport statistics summed over nodes.
    pub transport: TransportTotals,
    /// Simulated time at the end of the run, ps.
    pub end_ps: TimePs,
}

/// Runs a perftest-style benchmark on the timed model (every size of `spec.sizes` in
/// turn). Setup problems are errors; a run whose bytes do not verify returns a result with
/// `bytes_verified = false` (see [`run_perf_detailed`] for the reasons).
pub fn run_perf(cfg: &Config, spec: &PerfSpec) -> anyhow::Result<PerfResult> {
    let runs = run_perf_detailed(cfg, spec, &RunOptions::default())?;
    Ok(PerfResult::from_sizes(
        runs.into_iter().map(|r| r.result).collect(),
    ))
}

/// Like [`run_perf`], one [`ModelRun`] per size, with options.
pub fn run_perf_detailed(
    cfg: &Config,
    spec: &PerfSpec,
    opts: &RunOptions,
) -> anyhow::Result<Vec<ModelRun>> {
    if spec.sizes.is_empty() {
        bail!("no message size given");
    }
    super::limits::check_run(cfg, spec)?;
    spec.sizes
        .iter()
        .map(|&s| run_one(cfg, spec, s, opts))
        .collect()
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

fn log2_ceil(x: u64) -> u32 {
    x.max(1).next_power_of_two().trailing_zeros()
}

struct Layout {
    stride: u64,
    slots: u32,
    region: u64,
}

impl Layout {
    fn slot(&self, pair: u32) -> u32 {
        pair % self.slots
    }
}

fn run_one(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    opts: &RunOptions,
) -> anyhow::Result<ModelRun> {
    let wall = Instant::now();
    let mut p = ModelParams::from_config(cfg);
    p.net.clients = spec.clients.max(1);
    let clients = p.net.clients as usize;
    let n_nodes = clients + 1;
    let q = spec.qps.max(1);
    let test = spec.test;
    let lat = test.is_latency();
    let size32 = if test.verb() == Verb::Atomic {
        8
    } else {
        size.max(1) as u32
    };
    let tx_depth = spec.tx_depth.max(1);
    let cores = p.host.cores.max(1) as usize;
    // `--procs`: the server's processes, one per core (csRNA's latency test).
    let procs = match spec.procs {
        Some(n) => {
            crate::workload::check_procs(test, n, cores as u32, q).map_err(anyhow::Error::msg)?;
            n.max(1) as usize
        }
        None => 0,
    };
    let stride = buffer_stride(u64::from(size32));
    let slots = buffer_slots(u64::from(size32), q);
    let layout = Layout {
        stride,
        slots,
        region: align_up(u64::from(slots) * stride, 1 << 21),
    };
    let sq_depth = tx_depth.max(2).next_power_of_two();
    let wqe_bytes = p.nic.wqe_bytes;
    let rq_depth = sq_depth;
    let root = Rng::new(p.seed);

    // ---- nodes: memory, device, MR, CQs ------------------------------------------------
    let mut nodes = Vec::with_capacity(n_nodes);
    let mut mems: Vec<SparseMemory> = (0..n_nodes).map(|_| SparseMemory::new()).collect();
    let mut apps = Vec::with_capacity(n_nodes);
    let per_core_qps = |n_qps: usize| n_qps.div_ceil(cores).max(1) as u64;
    for i in 0..n_nodes {
        let node_qps = if i == 0 {
            q as usize
        } else {
            (q as usize).div_ceil(clients)
        };
        let mut dev = Device::new(DeviceConfig {
            mac: node_mac(i),
            ip: node_ip(i),
            max_qps: (node_qps as u32).saturating_add(16),
            ..DeviceConfig::default()
        });
        let pd = dev.alloc_pd();
        let mr_len = 2 * layout.region;
        // `mrs` registrations of the buffers (each a region of its own, with its own keys
        // and translation entries); pair i uses MR i mod mrs.
        let keys = (0..spec.mrs.max(1))
            .map(|_| {
                dev.reg_mr(pd, SRC_BASE, mr_len, Access::all())
                    .map(|k| (k.lkey, k.rkey))
                    .map_err(|e| anyhow::anyhow!("reg_mr on node {i}: {e:?}"))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut nic = Nic::new(&p, dev);
        nic.watch_writes = test == PerfTest::WriteLat && procs == 0;
        // The cores consume CQEs faster than the NIC writes them, so a ring needs room for a
        // burst, not for every outstanding WQE; the NIC checks for overrun anyway.
        let ring_entries = (per_core_qps(node_qps) * u64::from(sq_depth) * 2).clamp(64, 1 << 16);
        let log_depth = log2_ceil(ring_entries);
        let mut app_cores = Vec::with_capacity(cores);
        for c in 0..cores {
            let mut core = Core::default();
            for k in 0..2 {
                let id = nic
                    .dev
                    .create_cq(1 << 16)
                    .map_err(|e| anyhow::anyhow!("create_cq on node {i}: {e:?}"))?;
                let base = CQ_BASE + (2 * c + k) as u64 * CQ_SPACING;
                let ci_record = CQ_DB_BASE + (2 * c + k) as u64 * 8;
                nic.cq.ctxs.push(CqCtx {
                    id,
                    base,
                    log_depth,
                    pi: 0,
                    ci_record,
                    ci_seen: 0,
                });
                core.cq[k] = CqRing {
                    base,
                    log_depth,
                    ci: 0,
                    ci_record,
                };
            }
            app_cores.push(core);
        }
        apps.push(NodeApp {
            cores: app_cores,
            qps: Vec::new(),
            keys,
            src: SRC_BASE,
            dst: SRC_BASE + layout.region,
        });
        nodes.push((pd, nic));
    }

    // ---- QPs: one per -q on the server, round robin over the clients -------------------
    let mut pairs = Vec::with_capacity(q as usize);
    let mut local_count = vec![0u32; n_nodes];
    let mut qp_of = |i: usize,
                     nodes: &mut Vec<(rnic_transport::PdId, Nic)>,
                     apps: &mut Vec<NodeApp>,
                     pair: u32|
     -> anyhow::Result<u32> {
        let prof = spec.profile(cfg, pair);
        let local = local_count[i];
        local_count[i] += 1;
        // With --procs, server QP p + kN belongs to process p on core p.
        let core = if i == 0 && procs > 0 {
            (local as usize) % procs
        } else {
            (local as usize) % cores
        };
        let (pd, nic) = &mut nodes[i];
        let send_cq = nic.cq.ctxs[2 * core].id;
        let recv_cq = nic.cq.ctxs[2 * core + 1].id;
        let qpn = nic
            .dev
            .create_qp_with(
                QpInit {
                    pd: *pd,
                    send_cq,
                    recv_cq,
                    max_send_wr: sq_depth,
                    max_recv_wr: rq_depth,
                },
                reliability(prof.reliability),
            )
            .map_err(|e| anyhow::anyhow!("create_qp on node {i}: {e:?}"))?;
        let sq_base = SQ_BASE + u64::from(local) * u64::from(sq_depth) * wqe_bytes;
        let rq_base = RQ_BASE + u64::from(local) * u64::from(rq_depth) * wqe_bytes;
        nic.add_qp(
            qpn,
            sq_base,
            sq_depth,
            rq_base,
            rq_depth,
            core as u16,
            &prof,
        );
        let a = &mut apps[i];
        if a.qps.len() <= qpn as usize {
            a.qps.resize(qpn as usize + 1, HostQp::default());
        }
        a.qps[qpn as usize] = HostQp {
            pair,
            sq_base,
            rq_base,
            sq_mask: sq_depth - 1,
            rq_mask: rq_depth - 1,
            sq_pi: 0,
            rq_pi: 0,
            core: core as u16,
        };
        Ok(qpn)
    };
    for i in 0..q {
        let c_node = 1 + (i as usize % clients);
        let s_qpn = qp_of(0, &mut nodes, &mut apps, i)?;
        let c_qpn = qp_of(c_node, &mut nodes, &mut apps, i)?;
        pairs.push(Pair {
            s_qpn,
            c_node: c_node as u32,
            c_qpn,
            posted: 0,
            completed: 0,
        });
    }
    for (i, pr) in pairs.iter().enumerate() {
        let prof = spec.profile(cfg, i as u32);
        connect(
            &mut nodes,
            cfg,
            &prof,
            0,
            pr.s_qpn,
            pr.c_node as usize,
            pr.c_qpn,
        )?;
        connect(
            &mut nodes,
            cfg,
            &prof,
            pr.c_node as usize,
            pr.c_qpn,
            0,
            pr.s_qpn,
        )?;
    }
    let nics: Vec<Nic> = nodes.into_iter().map(|(_, n)| n).collect();

    // ---- source patterns -----------------------------------------------------------------
    let mut used_slots: Vec<Vec<bool>> = vec![vec![false; layout.slots as usize]; n_nodes];
    for (i, pr) in pairs.iter().enumerate() {
        let s = layout.slot(i as u32) as usize;
        used_slots[0][s] = true;
        used_slots[pr.c_node as usize][s] = true;
    }
    // Pattern bytes (host/pattern.rs) written in 64 KiB pieces, so a large message needs
    // no second copy.
    let mut buf = vec![0u8; 64 << 10];
    for (ni, mem) in mems.iter_mut().enumerate() {
        for (s, used) in used_slots[ni].iter().enumerate() {
            if !used {
                continue;
            }
            let seed = pattern::buffer_seed(p.seed, ni, s as u32);
            let base = SRC_BASE + s as u64 * layout.stride;
            let mut done = 0u64;
            while done < u64::from(size32) {
                let n = (u64::from(size32) - done).min(buf.len() as u64) as usize;
                pattern::fill(seed, done, &mut buf[..n]);
                mem.write(base + done, &buf[..n]);
                done += n as u64;
            }
        }
    }

    // ---- application and world -----------------------------------------------------------
    let duration_mode = spec.duration_us.is_some();
    let window = match spec.duration_us {
        Some(d) => (p.warmup_ps, p.warmup_ps + rnic_sim::us(d)),
        None => (0, TimePs::MAX),
    };
    let iters = spec.iters.max(1);
    let mut app = Perftest {
        test,
        atomic: spec.atomic,
        size: size32,
        iters,
        tx_depth: if lat { 1 } else { tx_depth },
        stride: layout.stride,
        wqe_bytes,
        pairs,
        nodes: apps,
        duration_mode,
        window,
        post_ps: p.host.post_send_ps,
        poll_ps: p.host.poll_cq_ps,
        mem_ps: p.host.mem_latency_ps,
        finished: false,
        ops_in_window: 0,
        first_post: 0,
        last_completion: 0,
        hist: Histogram::new(),
        samples: Vec::new(),
        errors: 0,
        first_error: None,
        error_statuses: Default::default(),
        bytes_moved: 0,
        pairs_done: 0,
        lat_k: 0,
        lat_post: 0,
        receives_posted: 0,
        lat_sum_us: 0.0,
        lat_sumsq_us: 0.0,
        slots: layout.slots,
        stale_polls: 0,
        lat_ponged: false,
        fill: Vec::new(),
        procs: Vec::new(),
        procs_posted: 0,
        procs_active: 0,
        window_pcie_busy: [None, None],
        warmup_rounds: p.warmup_rounds,
        warming_procs: 0,
        warming_pairs: 0,
        filling_cores: 0,
        duration_ps: window.1 - window.0,
        window_min_start: window.0,
    };
    if duration_mode && p.warmup_rounds > 0 {
        // The window opens when the warm-up rounds are done (`Perftest::warmup_rounds_done`);
        // bandwidth tests then schedule their end.
        app.window = (TimePs::MAX, TimePs::MAX);
        if lat {
            app.warming_procs = procs;
        } else {
            app.warming_pairs = q as usize;
        }
    }
    // Buffers map pairs to slots.
    app.stride = layout.stride;
    let mut net = topology::build(cfg, &p, &root, n_nodes)?;
    net.hooks = opts.hooks;
    if let Some(path) = &spec.pcap {
        let f = File::create(path).map_err(|e| {
            crate::OutputError(format!("cannot create the pcap {}: {e}", path.display()))
        })?;
        net.pcap = Some(PcapWriter::new(BufWriter::new(f)).map_err(|e| {
            crate::OutputError(format!("cannot write the pcap {}: {e}", path.display()))
        })?);
    }
    // The payload oracle: each QP receives the bytes of its peer's source buffer.
    let mut oracle = PayloadOracle::new(p.seed, u64::from(size32), n_nodes);
    for (i, pr) in app.pairs.iter().enumerate() {
        let slot = layout.slot(i as u32);
        let pmtu = spec.profile(cfg, i as u32).pmtu;
        oracle.connect(0, pr.s_qpn, pr.c_node as usize, slot, pmtu);
        oracle.connect(pr.c_node as usize, pr.c_qpn, 0, slot, pmtu);
    }
    let max_events = p.max_events;
    let warmup_rounds = p.warmup_rounds;
    let mut world = World {
        q: rnic_sim::EventQueue::new(),
        nics,
        mems,
        net,
        frames: Default::default(),
        app,
        oracle,
        events: 0,
    };
    if procs > 0 {
        // Process p owns the pairs p, p + N, p + 2N, ...
        world.app.procs = (0..procs)
            .map(|pr| Proc {
                pairs: (pr as u32..q).step_by(procs).collect(),
                next: 0,
                rounds: 0,
            })
            .collect();
    }
    if duration_mode && !lat && warmup_rounds == 0 {
        // Latency tests stop at the first iteration boundary after the window instead;
        // with warm-up rounds the end is scheduled when the window opens.
        world.q.push(window.1, super::event::Ev::End);
    }
    if duration_mode && warmup_rounds == 0 {
        world.q.push(window.0, super::event::Ev::WindowOpen);
    }
    world.start();
    let end = world.run_until(TimePs::MAX, max_events);
    if let Some(w) = world.net.pcap.as_mut() {
        w.flush()
            .map_err(|e| crate::OutputError(format!("cannot write the pcap: {e}")))?;
    }

    // ---- verdict ---------------------------------------------------------------------------
    if let Some(e) = &world.net.pcap_error {
        return Err(crate::OutputError(format!("writing the pcap: {e}")).into());
    }
    let mut verdict = Verdict::default();
    let stopped_at_limit = world.events >= max_events;
    if stopped_at_limit {
        verdict.add(
            RunStatus::Incomplete,
            format!(
                "stopped at the event limit sim.max_events = {max_events} after {:.3} µs \
                 simulated; raise it (--set sim.max_events=N) or ask for less",
                end as f64 / 1e6
            ),
        );
    }
    if world.q.clamped_pushes() > 0 {
        verdict.add(
            RunStatus::ModelError,
            format!(
                "internal: {} events were scheduled in the past",
                world.q.clamped_pushes()
            ),
        );
    }
    let overruns: u64 = world.nics.iter().map(|n| n.cq.stats.overruns).sum();
    if overruns > 0 {
        verdict.add(
            RunStatus::ModelError,
            format!("internal: {overruns} CQE(s) lost to CQ ring overrun"),
        );
    }
    verdict::judge_completion(&world.app, end, stopped_at_limit, &mut verdict);
    if let Some(m) = &world.oracle.first_mismatch {
        verdict.add(
            RunStatus::Corrupt,
            format!(
                "{} placed payload(s) differ from their source; first: {m}",
                world.oracle.mismatches
            ),
        );
    }
    verify(&world, &layout, &mut verdict);
    let measured = verdict::measured(&world.app, end);
    let op_ps = limits::op_wire_ps(&p, test.verb(), size, spec.max_pmtu(cfg));
    verdict::judge_wire_bound(measured, op_ps, duration_mode, &mut verdict);
    let status = verdict.status();
    let verified_bytes = if verdict.has(RunStatus::Corrupt) {
        0
    } else {
        world.app.bytes_moved
    };

    // ---- results -------------------------------------------------------------------------
    let a = &world.app;
    let (sim_time_ps, ops) = (measured.time_ps, measured.ops);
    let latency = if lat {
        LatencyStats::from_samples_us(&a.samples)
    } else {
        hist_stats(&a.hist, a.lat_sum_us, a.lat_sumsq_us)
    };
    // PCIe utilisation over the window (duration mode) or the whole run.
    let pcie_util = {
        let end = a.window_pcie_busy[1].unwrap_or_else(|| world.server_pcie_busy());
        let (start, span) = match a.window_pcie_busy[0] {
            Some(s) if duration_mode => (s, sim_time_ps),
            _ => ((0, 0), world.q.now()),
        };
        let f = |busy: u64| (busy as f64 / span.max(1) as f64).min(1.0);
        (f(end.0 - start.0), f(end.1 - start.1))
    };
    let node_stats: Vec<Registry> = world
        .nics
        .iter()
        .map(|n| {
            let mut r = Registry::default();
            n.report("nic", &mut r);
            r
        })
        .collect();
    let transport = TransportTotals::of(world.nics.iter().map(|n| n.dev.stats()));
    let s = &node_stats[0];
    let mut clients_sum = Registry::default();
    for c in &node_stats[1..] {
        clients_sum.add(c);
    }
    let cache = |r: &Registry, name: &str| ReportCache {
        hits: r.get(&format!("nic.{name}.hits")).unwrap_or(0),
        misses: r.get(&format!("nic.{name}.misses")).unwrap_or(0),
    };
    let mut caches = BTreeMap::new();
    caches.insert("qpc".to_string(), cache(s, "qpc.cache"));
    caches.insert("mpt".to_string(), cache(s, "translation.mpt"));
    caches.insert("mtt".to_string(), cache(s, "translation.mtt"));
    caches.insert("clients.qpc".to_string(), cache(&clients_sum, "qpc.cache"));
    // The registry of the whole run: the server's counters, the clients' summed, the
    // network's and the transport's.
    let mut stats = s.prefixed("server");
    stats.extend(clients_sum.prefixed("clients"));
    let mut net = Registry::default();
    world.net.report("net", &mut net);
    stats.extend(net.prefixed(""));
    let mut tr = Registry::default();
    tr.record("transport", &transport);
    stats.extend(tr.prefixed(""));
    let mut result = PerfResult {
        test: test.name().to_string(),
        size_bytes: if test.verb() == Verb::Atomic { 8 } else { size },
        iterations: ops,
        qps: q,
        clients: clients as u32,
        simulated_time_us: sim_time_ps as f64 / 1e6,
        ops_completed: ops,
        latency,
        retransmissions: transport.retransmissions,
        naks: transport.naks,
        timeouts: transport.timeouts,
        caches,
        pcie_rd_bytes: s.get("nic.pcie.down_payload_bytes").unwrap_or(0),
        pcie_wr_bytes: s.get("nic.pcie.up_payload_bytes").unwrap_or(0),
        pcie_rd_util: pcie_util.0,
        pcie_wr_util: pcie_util.1,
        onchip_bytes: world.nics[0].onchip(&p),
        events: world.events,
        wall_seconds: wall.elapsed().as_secs_f64(),
        stats,
        bytes_verified: !verdict.has(RunStatus::Corrupt) && verified_bytes > 0,
        verified_bytes,
        status,
        reason: verdict.reason(),
        seed: p.seed,
        ..PerfResult::default()
    };
    result.fill_rates();
    Ok(ModelRun {
        result,
        failures: verdict.reasons(),
        net: world.net.stats(),
        nodes: node_stats,
        transport,
        end_ps: end,
    })
}

fn hist_stats(h: &Histogram, sum: f64, sumsq: f64) -> LatencyStats {
    let n = h.count();
    if n == 0 {
        return LatencyStats::default();
    }
    let us = |v: Option<u64>| v.unwrap_or(0) as f64 / 1e6;
    let avg = sum / n as f64;
    LatencyStats {
        min: us(h.min()),
        avg,
        p50: us(h.percentile(50.0)),
        p99: us(h.percentile(99.0)),
        p999: us(h.percentile(99.9)),
        max: us(h.max()),
        stdev: (sumsq / n as f64 - avg * avg).max(0.0).sqrt(),
    }
}

/// The transport's reliability mode for a configured one.
fn reliability(r: crate::config::Reliability) -> rnic_transport::ReliabilityMode {
    match r {
        crate::config::Reliability::Gbn => rnic_transport::ReliabilityMode::GoBackN,
    }
}

/// Takes QP `qpn` of node `a` to RTS with the attributes of `profile`, connected to `rqpn`
/// on node `b`.
#[allow(clippy::too_many_arguments)]
fn connect(
    nodes: &mut [(rnic_transport::PdId, Nic)],
    cfg: &Config,
    profile: &QpProfile,
    a: usize,
    qpn: u32,
    b: usize,
    rqpn: u32,
) -> anyhow::Result<()> {
    let dev = &mut nodes[a].1.dev;
    let qc = &cfg.qp;
    let e = |what: &str, err: rnic_transport::VerbsError| {
        anyhow::anyhow!("modify_qp {what} (node {a}, QP {qpn}): {err:?}")
    };
    dev.modify_qp(qpn, &QpAttr::to_init(Access::all()))
        .map_err(|x| e("INIT", x))?;
    let mut rtr = QpAttr::to_rtr(
        AddressVector::new(node_mac(b), node_ip(b)),
        profile.pmtu,
        rqpn,
        0,
    );
    rtr.max_dest_rd_atomic = Some(qc.max_rd_atomic);
    rtr.min_rnr_timer = Some(qc.min_rnr_timer);
    dev.modify_qp(qpn, &rtr).map_err(|x| e("RTR", x))?;
    let mut rts = QpAttr::to_rts(0);
    rts.timeout = Some(qc.timeout);
    rts.retry_cnt = Some(qc.retry_cnt);
    rts.rnr_retry = Some(qc.rnr_retry);
    rts.max_rd_atomic = Some(qc.max_rd_atomic);
    rts.max_outstanding_psns = Some(profile.window_psns);
    rts.ack_req_every = Some(profile.ack_req_every);
    dev.modify_qp(qpn, &rts).map_err(|x| e("RTS", x))?;
    Ok(())
}

/// The first offset at which `len` bytes at `a` in `ma` and at `b` in `mb` differ, compared
/// in 64 KiB pieces (a large message needs no copy of its own), with both bytes.
fn first_difference(
    ma: &SparseMemory,
    a: u64,
    mb: &SparseMemory,
    b: u64,
    len: u64,
) -> Option<(u64, u8, u8)> {
    let mut x = vec![0u8; (64 << 10).min(len as usize)];
    let mut y = x.clone();
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(x.len() as u64) as usize;
        ma.read(a + done, &mut x[..n]);
        mb.read(b + done, &mut y[..n]);
        if let Some(i) = x[..n].iter().zip(&y[..n]).position(|(p, q)| p != q) {
            return Some((done + i as u64, x[i], y[i]));
        }
        done += n as u64;
    }
    None
}

/// Checks every target: WRITE/SEND destinations equal the sender's source, READ
/// destinations equal the remote source, atomic counters equal the operations executed.
/// Differences are recorded as corrupt; a run that moved nothing as incomplete.
fn verify(w: &World, layout: &Layout, verdict: &mut Verdict) {
    let a = &w.app;
    let size = u64::from(a.size);
    let mut checked = 0u64;
    let mut bad = 0u64;
    let mut first_bad: Option<String> = None;
    let mut note = |msg: String, bad: &mut u64| {
        *bad += 1;
        if first_bad.is_none() {
            first_bad = Some(msg);
        }
    };
    // Ping-pong latency tests are client-initiated; bandwidth and --procs tests server-initiated.
    let lat = a.is_lat() && a.procs.is_empty();
    // A ping-pong that stopped mid-iteration may have set the poll byte (the last) of a
    // message that never arrived: compare the rest.
    let len = if lat && !(a.finished && a.errors == 0) && a.test.verb() == Verb::Write {
        size.saturating_sub(1)
    } else {
        size
    };
    for (i, pr) in a.pairs.iter().enumerate() {
        let s = layout.slot(i as u32);
        let c = pr.c_node as usize;
        let src = |node: usize| a.nodes[node].src + u64::from(s) * layout.stride;
        let dst = |node: usize| a.nodes[node].dst + u64::from(s) * layout.stride;
        // Which (from node, to node) copies must hold.
        let mut copies: Vec<(usize, usize)> = Vec::new();
        match (a.test.verb(), lat) {
            (Verb::Write | Verb::Send, false) if pr.completed > 0 => copies.push((0, c)),
            (Verb::Read, false) if pr.completed > 0 => copies.push((c, 0)),
            // Iterations complete in turn over the pairs: pair i has finished a ping and
            // its pong once more than i iterations are done.
            (Verb::Write | Verb::Send, true) if a.lat_k > i as u64 => {
                copies.push((c, 0));
                copies.push((0, c));
            }
            (Verb::Read, true) if pr.completed > 0 => copies.push((0, c)),
            (Verb::Atomic, _) if pr.posted > 0 => {
                // The initiator is the server in bw tests, the client in latency tests.
                let (init, target) = if lat { (c, 0) } else { (0, c) };
                let mut v = [0u8; 8];
                w.mems[target].read(dst(target), &mut v);
                let le = u64::from_le_bytes(v);
                let be = u64::from_be_bytes(v);
                let ok = |x: u64| x >= pr.completed && x <= pr.posted;
                checked += 8;
                if !(ok(le) || ok(be)) {
                    note(
                        format!(
                            "pair {i}: atomic counter on node {target} is {le} (LE) / {be} (BE), \
                             expected between {} completed and {} posted by node {init}",
                            pr.completed, pr.posted
                        ),
                        &mut bad,
                    );
                }
            }
            _ => {}
        }
        for (from, to) in copies {
            checked += len;
            let diff = first_difference(&w.mems[from], src(from), &w.mems[to], dst(to), len);
            if let Some((at, want, got)) = diff {
                note(
                    format!(
                        "pair {i}: node {to} buffer {:#x} differs from node {from}'s source at byte {at} \
                         ({got:#04x} != {want:#04x})",
                        dst(to),
                    ),
                    &mut bad,
                );
            }
        }
    }
    if bad > 0 {
        verdict.add(
            RunStatus::Corrupt,
            format!(
                "{bad} buffer(s) failed verification; first: {}",
                first_bad.unwrap_or_default()
            ),
        );
    }
    if checked == 0 && verdict.status() == RunStatus::Ok {
        verdict.add(
            RunStatus::Incomplete,
            "nothing was transferred, so nothing could be verified".to_string(),
        );
    }
}
