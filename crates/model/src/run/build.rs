//! Building a run: the nodes (host memory, the transport with its PD, MRs and CQs, the NIC),
//! the QP pairs connected through verbs with each pair's attributes, the source buffers'
//! pattern bytes, the application, the network from config and the observers.

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use rnic_host::SparseMemory;
use rnic_sim::{Histogram, Rng, TimePs};
use rnic_transport::{Access, AddressVector, Device, DeviceConfig, Memory, QpAttr, QpInit};
use rnic_wire::PcapWriter;

use super::RunOptions;
use crate::config::Config;
use crate::host::driver::{CQ_BASE, CQ_DB_BASE, CQ_SPACING, RQ_BASE, SQ_BASE, SRC_BASE};
use crate::host::pattern;
use crate::host::perftest::{Core, CqRing, HostQp, NodeApp, Pair, Perftest, Proc, WindowOpened};
use crate::host::steady::Steady;
use crate::net::topology::{self, node_ip, node_mac};
use crate::nic::cq::CqCtx;
use crate::nic::Nic;
use crate::oracle::PayloadOracle;
use crate::params::ModelParams;
use crate::workload::{PerfSpec, PerfTest, QpProfile, Verb};
use crate::world::World;

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

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

fn log2_ceil(x: u64) -> u32 {
    x.max(1).next_power_of_two().trailing_zeros()
}

/// Where the pairs' buffers are.
pub(crate) struct Layout {
    /// Bytes between two pairs' buffers.
    pub(crate) stride: u64,
    /// Distinct buffer slots per node.
    pub(crate) slots: u32,
    /// Bytes of one node's source (or destination) buffers, 2 MiB aligned.
    pub(crate) region: u64,
}

impl Layout {
    /// The slot of pair `pair`.
    pub(crate) fn slot(&self, pair: u32) -> u32 {
        pair % self.slots
    }
}

/// A run built and ready to simulate, with what judging and reporting it needs.
pub(crate) struct Built {
    /// The world.
    pub world: World,
    /// The model's parameters.
    pub p: ModelParams,
    /// Buffer layout.
    pub layout: Layout,
    /// Clients.
    pub clients: usize,
    /// QPs on the server.
    pub qps: u32,
    /// A `-D` run.
    pub duration_mode: bool,
    /// The event limit.
    pub max_events: u64,
    /// When building started.
    pub wall: Instant,
}

/// Builds the run of `spec` with `size`-byte messages.
pub(crate) fn build(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    opts: &RunOptions,
) -> anyhow::Result<Built> {
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
        let app_cores = create_cqs(&mut nic, i, cores, log_depth)?;
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

    fill_sources(&mut mems, &pairs, &layout, p.seed, size32);

    // ---- application and world -----------------------------------------------------------
    let duration_mode = spec.duration_us.is_some();
    let fixed_warmup = p.warmup_ps.unwrap_or(0);
    let window = match spec.duration_us {
        Some(d) => (fixed_warmup, fixed_warmup + rnic_sim::us(d)),
        None => (0, TimePs::MAX),
    };
    // Without sim.warmup_us, -D runs find their steady state (host/steady.rs).
    let detect = duration_mode && p.warmup_ps.is_none();
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
        steady: detect.then(|| Steady::new(p.settle, q as usize, if lat { 1 } else { tx_depth })),
        opened: None,
    };
    if let Some(s) = app.steady.as_mut() {
        if lat {
            // Latency tests have no initial posting: every completion counts.
            s.arm(0);
        }
    }
    let waits = duration_mode && (p.warmup_rounds > 0 || detect);
    if waits {
        // The window opens when the warm-up rounds are done and the rate has settled (or
        // sim.warmup_us has passed): `Perftest::maybe_open`; bandwidth tests then schedule
        // their end.
        app.window = (TimePs::MAX, TimePs::MAX);
        if p.warmup_rounds > 0 && lat {
            app.warming_procs = procs;
        } else if p.warmup_rounds > 0 {
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
    if duration_mode && !waits {
        // A fixed warm-up alone: the window is known now. Latency tests stop at the first
        // iteration boundary after it instead of at an end event.
        if !lat {
            world.q.push(window.1, crate::event::Ev::End);
        }
        world.q.push(window.0, crate::event::Ev::WindowOpen);
        world.app.opened = Some(WindowOpened {
            at_ps: window.0,
            settled: true,
            reason: format!("sim.warmup_us = {} µs set", window.0 as f64 / 1e6),
        });
    }
    Ok(Built {
        world,
        p,
        layout,
        clients,
        qps: q,
        duration_mode,
        max_events,
        wall,
    })
}

/// Creates each core's send and receive CQ on node `node`: the transport's CQ, the NIC's
/// CQ context and the application's ring, `2^log_depth` CQEs each, with the doorbell record
/// of its consumer index.
fn create_cqs(
    nic: &mut Nic,
    node: usize,
    cores: usize,
    log_depth: u32,
) -> anyhow::Result<Vec<Core>> {
    let mut app_cores = Vec::with_capacity(cores);
    for c in 0..cores {
        let mut core = Core::default();
        for k in 0..2 {
            let id = nic
                .dev
                .create_cq(1 << 16)
                .map_err(|e| anyhow::anyhow!("create_cq on node {node}: {e:?}"))?;
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
    Ok(app_cores)
}

/// Writes the pattern bytes (`host/pattern.rs`) of every source buffer slot the pairs use,
/// in 64 KiB pieces, so a large message needs no second copy.
fn fill_sources(mems: &mut [SparseMemory], pairs: &[Pair], layout: &Layout, seed: u64, size: u32) {
    let mut used_slots: Vec<Vec<bool>> = vec![vec![false; layout.slots as usize]; mems.len()];
    for (i, pr) in pairs.iter().enumerate() {
        let s = layout.slot(i as u32) as usize;
        used_slots[0][s] = true;
        used_slots[pr.c_node as usize][s] = true;
    }
    let mut buf = vec![0u8; 64 << 10];
    for (ni, mem) in mems.iter_mut().enumerate() {
        for (s, used) in used_slots[ni].iter().enumerate() {
            if !used {
                continue;
            }
            let slot_seed = pattern::buffer_seed(seed, ni, s as u32);
            let base = SRC_BASE + s as u64 * layout.stride;
            let mut done = 0u64;
            while done < u64::from(size) {
                let n = (u64::from(size) - done).min(buf.len() as u64) as usize;
                pattern::fill(slot_seed, done, &mut buf[..n]);
                mem.write(base + done, &buf[..n]);
                done += n as u64;
            }
        }
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
