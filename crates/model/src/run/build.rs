//! Building a run: the nodes (host memory, the transport with its PD, MRs and CQs, the NIC),
//! the QP pairs connected through verbs with each pair's attributes, the source buffers'
//! pattern bytes, the application, the network from config and the observers.

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use rnic_host::SparseMemory;
use rnic_sim::{Rng, TimePs};
use rnic_transport::{Access, AddressVector, Device, DeviceConfig, QpAttr, QpInit};
use rnic_wire::PcapWriter;

use super::options::RunOptions;
use crate::buffers::{align_up, buffer_slots, buffer_stride, grh_bytes};
use crate::config::{Config, Connect, WanAccelLearn};
use crate::flow::{FlowSpec, FlowsSpec};
use crate::host::cm::modify::{to_init, to_rtr, to_rts};
use crate::host::cm::ConnectionManager;
use crate::host::core_set::CoreSet;
use crate::host::driver::{CQ_BASE, CQ_DB_BASE, CQ_SPACING, RQ_BASE, SQ_BASE, SRC_BASE};
use crate::host::pattern;
use crate::host::perftest::{
    BwStart, Core, CqRing, ErrorLog, HostCosts, HostQp, Measurement, MrKeys, NodeApp, Pair,
    Perftest, PingPong, Proc, Procs, TestSpec, Window, WindowOpened,
};
use crate::host::routes::FlowRoutes;
use crate::host::steady::Steady;
use crate::net::addr::{node_ip, node_mac};
use crate::net::topology;
use crate::nic::cq::CqCtx;
use crate::nic::Nic;
use crate::oracle::{Delivery, MsgSizes, PayloadOracle};
use crate::params::ModelParams;
use crate::workload::{Direction, PerfSpec, PerfTest, QpProfile, Verb};
use crate::world::World;

fn log2_ceil(x: u64) -> u32 {
    x.max(1).next_power_of_two().trailing_zeros()
}

/// Registers `mrs` memory regions over a flow's buffers on one node. One region covers both
/// buffer areas whole (perftest's single MR). With more, the slots are split into `mrs`
/// contiguous groups and each group registers its own source and destination buffers, as an
/// application registering a buffer per group of QPs does: a region then spans only the
/// pages its QPs use, so its translation entries are its own (an MPT entry and one MTT entry
/// per page) and the MRs in use grow with `mrs`, which the memory-scalability experiment of
/// the resource-prefetching paper sweeps. Each registration's bounds go to `regions` as
/// (key, va, len) for the NIC's translation unit.
fn register_mrs(
    dev: &mut Device,
    pd: rnic_transport::PdId,
    pl: &FlowPlan,
    mrs: u32,
    regions: &mut Vec<(u32, u64, u64)>,
) -> Result<MrKeys, rnic_transport::VerbsError> {
    let l = &pl.layout;
    if mrs <= 1 {
        let k = dev.reg_mr(pd, pl.buf_base, 2 * l.region, Access::all())?;
        let one = vec![(k.lkey, k.rkey)];
        return Ok(MrKeys {
            src: one.clone(),
            dst: one,
        });
    }
    let mut keys = MrKeys::default();
    for g in 0..mrs {
        let (first, end) = l.group_slots(g, mrs);
        let len = u64::from(end.max(first + 1) - first) * l.stride;
        for (base, out) in [
            (pl.buf_base, &mut keys.src),
            (pl.buf_base + l.region, &mut keys.dst),
        ] {
            let va = base + u64::from(first) * l.stride;
            let k = dev.reg_mr(pd, va, len, Access::all())?;
            regions.push((k.lkey, va, len));
            if k.rkey != k.lkey {
                regions.push((k.rkey, va, len));
            }
            out.push((k.lkey, k.rkey));
        }
    }
    Ok(keys)
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

    /// The slots [first, end) of group `g` of `groups` contiguous groups (empty when there
    /// are more groups than slots; see [`crate::host::mr_groups`]).
    pub(crate) fn group_slots(&self, g: u32, groups: u32) -> (u32, u32) {
        use crate::host::mr_groups::first_slot;
        (
            first_slot(g, self.slots, groups),
            first_slot(g + 1, self.slots, groups),
        )
    }
}

/// A run built and ready to simulate, with what judging and reporting it needs.
pub(crate) struct Built {
    /// The world.
    pub world: World,
    /// The model's parameters.
    pub p: ModelParams,
    /// The flows (`rnic perf`: one).
    pub flows: Vec<FlowSpec>,
    /// Buffer layout of each flow.
    pub layouts: Vec<Layout>,
    /// Clients.
    pub clients: usize,
    /// The event limit.
    pub max_events: u64,
    /// When building started.
    pub wall: Instant,
}

/// Builds the run of `spec` with `size`-byte messages: one flow with every core and client
/// from the server, and with `--reversed` or `-b` one from each client to the server
/// (its share of the QPs), on QPs and buffers of their own.
pub(crate) fn build(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    opts: &RunOptions,
) -> anyhow::Result<Built> {
    let cores = ModelParams::from_config(cfg).host.cores.max(1);
    let n = spec.clients.max(1);
    // Node 0 runs the server's flow and an end of every client's: they split its cores, half
    // to the server's direction under -b.
    let forward_cores = match spec.direction {
        Direction::Forward => cores,
        Direction::Reverse => 0,
        Direction::Both => cores.div_ceil(2),
    };
    let reverse_cores = (cores - forward_cores) / n;
    if spec.direction.reverse() && reverse_cores == 0 {
        // One core per client's flow, out of the half -b leaves them.
        let (flag, need) = match spec.direction {
            Direction::Both => ("-b", 2 * n),
            _ => ("--reversed", n),
        };
        anyhow::bail!(crate::error::UsageError(format!(
            "{flag} with {n} client(s) runs a flow from each client, and node 0 serves them \
             all: it needs host.cores >= {need} (has {cores}); raise it (--set host.cores={need})"
        )));
    }
    let forward = FlowSpec::from_perf(spec, size, forward_cores.max(1));
    let mut flows = Vec::new();
    if spec.direction.reverse() {
        for c in 1..=n {
            // Client c's share of the QPs: pairs c-1, c-1+n, ... of the forward flow.
            let qps = spec.qps / n + u32::from(c - 1 < spec.qps % n);
            if qps == 0 {
                continue;
            }
            flows.push(FlowSpec {
                name: format!("{}-reverse{c}", forward.name),
                server: c,
                clients: vec![0],
                qps,
                cores: reverse_cores,
                ..forward.clone()
            });
        }
    }
    if spec.direction.forward() {
        flows.insert(0, forward);
    }
    let flows = FlowsSpec {
        flows,
        clients: spec.clients.max(1),
        pcap: spec.pcap.clone(),
    };
    let mut built = build_flows(cfg, &flows, opts)?;
    if built.world.apps.len() > 1 {
        for a in &mut built.world.apps {
            a.window.joint = true;
        }
    }
    Ok(built)
}

/// What one flow needs while it is built.
struct FlowPlan {
    size32: u32,
    tx_depth: u32,
    sq_depth: u32,
    /// Receive queue ring slots (SEND bandwidth tests: room for `host.rx_depth`).
    rq_depth: u32,
    /// Receives a SEND bandwidth test's target keeps posted per QP.
    rx_depth: u32,
    procs: usize,
    core_base: usize,
    layout: Layout,
    /// First byte of the flow's buffers (sources, then destinations) on every node.
    buf_base: u64,
    /// The run-wide number of the flow's slot 0.
    slot_base: u32,
    start_ps: TimePs,
    /// UC or UD QPs (`qp.transport`).
    unreliable: bool,
    /// Bytes before the payload in a receive buffer (UD: 40).
    grh_bytes: u64,
    /// UC/UD ping-pong: when a client gives an iteration up (the local ACK timeout).
    give_up_ps: Option<TimePs>,
}

impl FlowPlan {
    /// QPs of the flow on `node` (clients: the most any of its clients gets).
    fn node_qps(f: &FlowSpec, node: usize) -> usize {
        if node == f.server as usize {
            f.qps as usize
        } else if f.clients.contains(&(node as u32)) {
            (f.qps as usize).div_ceil(f.clients.len())
        } else {
            0
        }
    }

    /// The plan of flow `f` on the cores from `core_base`, its buffers from `buf_base` and
    /// its buffer slots numbered from `slot_base` run-wide; checks first what the model
    /// cannot run (`--procs` against the test, the test against `qp.transport` and the PMTU).
    fn new(
        cfg: &Config,
        p: &ModelParams,
        f: &FlowSpec,
        core_base: usize,
        (buf_base, slot_base): (u64, u32),
    ) -> anyhow::Result<FlowPlan> {
        let size32 = if f.test.verb() == Verb::Atomic {
            8
        } else {
            f.size.max(1) as u32
        };
        let q = f.qps.max(1);
        let tx_depth = f.tx_depth.max(1);
        // `--procs`: the server's processes, one per core of the flow (csRNA's latency test).
        let procs = match f.procs {
            Some(n) => {
                crate::workload::check_procs(f.test, n, f.cores, q).map_err(anyhow::Error::msg)?;
                n.max(1) as usize
            }
            None => 0,
        };
        let send_bw = f.test.verb() == Verb::Send && !f.test.is_latency();
        let rx_depth = p.host.rx_depth;
        crate::workload::check_transport(
            f.test,
            cfg.qp.transport,
            u64::from(size32),
            f.max_pmtu(cfg),
        )
        .map_err(crate::UsageError)?;
        // A UD receive holds the 40-byte GRH area before the payload.
        let buf_bytes = u64::from(size32) + grh_bytes(cfg);
        let stride = buffer_stride(buf_bytes);
        let slots = buffer_slots(buf_bytes, q);
        let layout = Layout {
            stride,
            slots,
            region: align_up(u64::from(slots) * stride, 1 << 21),
        };
        Ok(FlowPlan {
            size32,
            tx_depth,
            sq_depth: tx_depth.max(2).next_power_of_two(),
            rq_depth: if send_bw { rx_depth } else { tx_depth }
                .max(2)
                .next_power_of_two(),
            rx_depth,
            procs,
            core_base,
            buf_base,
            slot_base,
            start_ps: rnic_sim::us(f.start_us),
            layout,
            unreliable: cfg.qp.transport != crate::config::Transport::Rc,
            grh_bytes: grh_bytes(cfg),
            give_up_ps: cfg.qp.ack_timeout_ps(),
        })
    }
}

/// Each flow's resources: its cores, its buffer region (sources, then destinations) after
/// the previous flow's, and its buffer slots numbered after the previous flow's, so that no
/// two flows share a byte or a pattern.
fn plan_flows(cfg: &Config, p: &ModelParams, spec: &FlowsSpec) -> anyhow::Result<Vec<FlowPlan>> {
    let mut plans = Vec::with_capacity(spec.flows.len());
    let (core_bases, _) = spec.core_bases();
    let (mut buf_next, mut slot_next) = (SRC_BASE, 0u32);
    for (f, &core_base) in spec.flows.iter().zip(&core_bases) {
        let plan = FlowPlan::new(cfg, p, f, core_base, (buf_next, slot_next))?;
        buf_next += 2 * plan.layout.region;
        slot_next += plan.layout.slots;
        plans.push(plan);
    }
    Ok(plans)
}

/// Refuses `net.wan_accel_learn = "setup"` without the RDMA CM: the accelerator would wait
/// for connection set-up MADs that never cross it.
fn check_wan_accel_learn(cfg: &Config) -> anyhow::Result<()> {
    if cfg.net.wan_accel
        && cfg.net.wan_accel_learn == WanAccelLearn::Setup
        && cfg.host.connect == Connect::Direct
    {
        anyhow::bail!(crate::error::UsageError(
            "net.wan_accel_learn = \"setup\" learns connections from the RDMA CM MADs that \
             cross the accelerator, and host.connect = \"direct\" sends none: set \
             host.connect = \"cm\" or net.wan_accel_learn = \"traffic\""
                .to_string()
        ));
    }
    Ok(())
}

/// Builds a run of concurrent flows (checked with [`FlowsSpec::check`] first): the flows'
/// plans, the nodes, the QP pairs connected, the source buffers, the payload oracle, the
/// applications and the network, in that order (each step draws on the ones before).
pub(crate) fn build_flows(
    cfg: &Config,
    spec: &FlowsSpec,
    opts: &RunOptions,
) -> anyhow::Result<Built> {
    let wall = Instant::now();
    let mut p = ModelParams::from_config(cfg);
    p.net.clients = spec.clients.max(1);
    let clients = p.net.clients as usize;
    let n_nodes = clients + 1;
    let cores = p.host.cores.max(1) as usize;
    spec.check(cores as u32).map_err(crate::UsageError)?;
    let root = Rng::new(p.seed);
    check_wan_accel_learn(cfg)?;
    let plans = plan_flows(cfg, &p, spec)?;
    let mut routes = FlowRoutes::new(n_nodes, cores);
    for (fi, (f, pl)) in spec.flows.iter().zip(&plans).enumerate() {
        for &node in f.clients.iter().chain([&f.server]) {
            routes.assign_cores(node as usize, pl.core_base, f.cores as usize, fi);
        }
    }
    let mut mems = node_memories(n_nodes);
    let mut nodes = Nodes::build(&p, spec, &plans)?;

    // RDMA CM connects RC QPs (REQ, REP, RTU); UC and UD pairs are brought up directly.
    let mut cm = (cfg.host.connect == Connect::Cm
        && cfg.qp.transport == crate::config::Transport::Rc)
        .then(|| ConnectionManager::new(cfg, n_nodes));
    let mut flow_pairs = Vec::with_capacity(spec.flows.len());
    for (index, (f, pl)) in spec.flows.iter().zip(&plans).enumerate() {
        let flow = FlowAt { index, f, pl };
        let pairs = nodes.create_pairs(cfg, flow, &mut routes)?;
        connect_pairs(cfg, p.seed, f, &pairs, &mut nodes.nics, cm.as_mut())?;
        fill_sources(&mut mems, &pairs, f.server as usize, pl, p.seed);
        flow_pairs.push(pairs);
    }
    let Nodes { nics, apps, .. } = nodes;
    let nics: Vec<Nic> = nics.into_iter().map(|(_, n)| n).collect();

    let mut oracle = payload_oracle(cfg, p.seed, spec, &plans, &flow_pairs, n_nodes);
    let (perftests, window_events) =
        applications(&p, spec, &plans, flow_pairs, apps, &mems, &mut oracle);
    let net = network(cfg, &p, &root, n_nodes, opts, spec.pcap.as_deref())?;
    let max_events = p.max_events;
    let world = World {
        q: rnic_sim::EventQueue::with_geometry(crate::world::QUEUE_GEOMETRY),
        nics,
        mems,
        net,
        frames: Default::default(),
        apps: perftests,
        routes,
        unrouted: 0,
        oracle,
        events: 0,
        cm,
        at_start: window_events,
        origin_ps: 0,
        started: false,
        drain_rx: cfg.qp.transport != crate::config::Transport::Rc,
        owed_step: None,
        finished_apps: Default::default(),
    };
    Ok(Built {
        world,
        p,
        flows: spec.flows.clone(),
        layouts: plans.into_iter().map(|pl| pl.layout).collect(),
        clients,
        max_events,
        wall,
    })
}

/// Every node's host memory. The SQ rings are stored as interned lines: the WQEs of one QP
/// repeat their last 48 bytes (SGE, remote address, operands), so 64 bytes become 20 (see
/// `rnic_host::interned`). The CQ rings are written CQE after CQE, filling every page they
/// pass: stored whole.
fn node_memories(n_nodes: usize) -> Vec<SparseMemory> {
    (0..n_nodes)
        .map(|_| {
            let mut m = SparseMemory::new();
            m.intern_lines(SQ_BASE, RQ_BASE);
            m.whole_pages(CQ_BASE, CQ_DB_BASE);
            m
        })
        .collect()
}

/// One flow while its QPs are created: its number in the run, its spec and its plan.
#[derive(Clone, Copy)]
struct FlowAt<'a> {
    index: usize,
    f: &'a FlowSpec,
    pl: &'a FlowPlan,
}

/// The nodes while the flows' QPs are created on them: each node's protection domain and
/// NIC, where its next SQ and RQ rings go in host memory, and per flow, per node, the
/// application's view of the node (its cores, QPs, keys and buffers).
struct Nodes {
    nics: Vec<(rnic_transport::PdId, Nic)>,
    ring_next: Vec<(u64, u64)>,
    apps: Vec<Vec<NodeApp>>,
    /// Bytes of one WQE in a ring.
    wqe_bytes: u64,
}

/// One node's transport before its NIC holds it: the device, its protection domain, per
/// flow the keys of the memory regions registered on the node, and every region's bounds
/// as (key, va, len) for the NIC's translation unit.
struct NodeDevice {
    dev: Device,
    pd: rnic_transport::PdId,
    keys: Vec<MrKeys>,
    regions: Vec<(u32, u64, u64)>,
}

impl NodeDevice {
    /// Node `i`'s device, sized for the QPs every flow puts on it, with per flow `mrs`
    /// memory regions over the flow's buffers (`client_mrs` on the client nodes), each with
    /// its own keys and translation entries: see [`register_mrs`].
    fn new(spec: &FlowsSpec, plans: &[FlowPlan], i: usize) -> anyhow::Result<NodeDevice> {
        let node_qps: usize = spec.flows.iter().map(|f| FlowPlan::node_qps(f, i)).sum();
        let mut dev = Device::new(DeviceConfig {
            mac: node_mac(i),
            ip: node_ip(i),
            max_qps: (node_qps as u32).saturating_add(16),
            ..DeviceConfig::default()
        });
        dev.reserve_qps(node_qps as u32);
        let pd = dev.alloc_pd();
        let mut keys = Vec::with_capacity(spec.flows.len());
        let mut regions = Vec::new();
        for (f, pl) in spec.flows.iter().zip(plans) {
            if FlowPlan::node_qps(f, i) == 0 {
                keys.push(MrKeys::default());
                continue;
            }
            let mrs = if i == f.server as usize {
                f.mrs
            } else {
                f.client_mrs.unwrap_or(f.mrs)
            };
            keys.push(
                register_mrs(&mut dev, pd, pl, mrs, &mut regions)
                    .map_err(|e| anyhow::anyhow!("reg_mr on node {i}: {e:?}"))?,
            );
        }
        Ok(NodeDevice {
            dev,
            pd,
            keys,
            regions,
        })
    }
}

impl Nodes {
    /// Every node of the run: its device, MRs and NIC, each core's CQs, and each flow's
    /// view of it.
    fn build(p: &ModelParams, spec: &FlowsSpec, plans: &[FlowPlan]) -> anyhow::Result<Nodes> {
        let n_nodes = p.net.clients as usize + 1;
        let mut nics = Vec::with_capacity(n_nodes);
        let cores = p.host.cores.max(1) as usize;
        let mut apps: Vec<Vec<NodeApp>> = vec![Vec::with_capacity(n_nodes); spec.flows.len()];
        for i in 0..n_nodes {
            let NodeDevice {
                dev,
                pd,
                mut keys,
                regions,
            } = NodeDevice::new(spec, plans, i)?;
            let node_qps: usize = spec.flows.iter().map(|f| FlowPlan::node_qps(f, i)).sum();
            let mut nic = Nic::new(&p.for_node(i), dev);
            for &(key, va, len) in &regions {
                nic.mem.trans.note_region(key, va, len);
            }
            nic.qps
                .reserve_exact(rnic_transport::FIRST_QPN as usize + node_qps);
            nic.host.watch_writes = spec
                .flows
                .iter()
                .any(|f| f.test == PerfTest::WriteLat && f.procs.is_none());
            let log_depth = log2_ceil(cq_ring_entries(spec, plans, i));
            let app_cores = create_cqs(&mut nic, i, cores, log_depth)?;
            for (fi, (f, pl)) in spec.flows.iter().zip(plans).enumerate() {
                apps[fi].push(node_app(f, pl, &app_cores, std::mem::take(&mut keys[fi])));
            }
            nics.push((pd, nic));
        }
        Ok(Nodes {
            nics,
            ring_next: vec![(SQ_BASE, RQ_BASE); n_nodes],
            apps,
            wqe_bytes: p.nic.wqe_bytes,
        })
    }

    /// Flow `flow`'s QP pairs: per pair one QP on the server and its peer on a client,
    /// round robin over the flow's clients.
    fn create_pairs(
        &mut self,
        cfg: &Config,
        flow: FlowAt,
        routes: &mut FlowRoutes,
    ) -> anyhow::Result<Vec<Pair>> {
        let f = flow.f;
        let q = f.qps.max(1);
        let mut pairs = Vec::with_capacity(q as usize);
        let mut local_count = vec![0u32; self.nics.len()];
        let mut next_local = |node: usize| {
            local_count[node] += 1;
            local_count[node] - 1
        };
        for i in 0..q {
            let c_node = f.clients[i as usize % f.clients.len()] as usize;
            let s = f.server as usize;
            let s_qpn = self.create_qp(cfg, flow, (s, next_local(s)), i, routes)?;
            let c_qpn = self.create_qp(cfg, flow, (c_node, next_local(c_node)), i, routes)?;
            pairs.push(Pair {
                s_qpn,
                c_node: c_node as u32,
                c_qpn,
                posted: 0,
                completed: 0,
                failed: 0,
            });
        }
        Ok(pairs)
    }

    /// Creates the QP of pair `pair` of `flow` on node `node`, the flow's `local`-th QP
    /// there: on the core its turn gives it, with its rings in the node's memory, in the
    /// NIC's tables and in the application's view; the run routes its completions to the
    /// flow.
    fn create_qp(
        &mut self,
        cfg: &Config,
        flow: FlowAt,
        (node, local): (usize, u32),
        pair: u32,
        routes: &mut FlowRoutes,
    ) -> anyhow::Result<u32> {
        let FlowAt { index: fi, f, pl } = flow;
        let prof = f.profile(cfg, pair);
        check_reliability(f, &prof)?;
        let core = qp_core(f, pl, node, local);
        let (pd, nic) = &mut self.nics[node];
        let send_cq = nic.host.cq.ctxs[2 * core].id;
        let recv_cq = nic.host.cq.ctxs[2 * core + 1].id;
        let (sq_depth, rq_depth) = (pl.sq_depth, pl.rq_depth);
        let qpn = nic
            .dev
            .create_qp_service(
                QpInit {
                    pd: *pd,
                    send_cq,
                    recv_cq,
                    max_send_wr: sq_depth,
                    max_recv_wr: rq_depth,
                },
                reliability(prof.reliability, cfg),
                service(cfg.qp.transport),
            )
            .map_err(|e| anyhow::anyhow!("create_qp on node {node}: {e:?}"))?;
        let (sq_base, rq_base) = self.ring_next[node];
        self.ring_next[node].0 += u64::from(sq_depth) * self.wqe_bytes;
        self.ring_next[node].1 += u64::from(rq_depth) * self.wqe_bytes;
        nic.add_qp(
            qpn,
            sq_base,
            sq_depth,
            rq_base,
            rq_depth,
            core as u16,
            &prof,
        );
        nic.set_class(qpn, f.class == crate::flow::FlowClass::Ls);
        let a = &mut self.apps[fi][node];
        if a.qps.len() <= qpn as usize {
            crate::per_qp::grow_for(&mut a.qps, qpn as usize, HostQp::default);
        }
        a.qps[qpn as usize] = HostQp {
            pair,
            sq_base,
            rq_base,
            sq_mask: sq_depth - 1,
            rq_mask: rq_depth - 1,
            sq_pi: 0,
            rq_pi: 0,
            rq_owed: 0,
            core: core as u16,
        };
        routes.assign_qp(node, qpn, fi);
        Ok(qpn)
    }
}

/// CQEs of each of node `i`'s CQ rings. The cores consume CQEs faster than the NIC writes
/// them, so a ring needs room for a burst, not for every outstanding WQE; the NIC checks
/// for overrun anyway.
fn cq_ring_entries(spec: &FlowsSpec, plans: &[FlowPlan], i: usize) -> u64 {
    spec.flows
        .iter()
        .zip(plans)
        .map(|(f, pl)| {
            let per_core = FlowPlan::node_qps(f, i).div_ceil(f.cores as usize).max(1);
            per_core as u64 * u64::from(pl.sq_depth.max(pl.rq_depth)) * 2
        })
        .max()
        .unwrap_or(0)
        .clamp(64, 1 << 16)
}

/// The application's view of one node for flow `f`: the flow's cores of `app_cores` (busy
/// until the flow starts, if it starts later), its MR `keys` and its buffers.
fn node_app(f: &FlowSpec, pl: &FlowPlan, app_cores: &[Core], keys: MrKeys) -> NodeApp {
    let own = pl.core_base..pl.core_base + f.cores as usize;
    let mut c = CoreSet::new(pl.core_base, app_cores[own].to_vec());
    for core in c.iter_mut() {
        core.busy = pl.start_ps;
    }
    NodeApp {
        cores: c,
        qps: Vec::new(),
        keys,
        src: pl.buf_base,
        dst: pl.buf_base + pl.layout.region,
        cpu_busy_ps: 0,
    }
}

/// Refuses an out-of-order reliability mode for a test other than WRITE or READ bandwidth
/// (a request the model cannot run: bad input, exit 2, not a model failure).
fn check_reliability(f: &FlowSpec, prof: &QpProfile) -> anyhow::Result<()> {
    if prof.reliability != crate::config::Reliability::Gbn
        && !matches!(
            f.test,
            crate::workload::PerfTest::WriteBw | crate::workload::PerfTest::ReadBw
        )
    {
        anyhow::bail!(crate::error::UsageError(format!(
            "qp.reliability = \"{}\" sends out-of-order WRITE and READ WQEs only, so \
             flow \"{}\" cannot run {}: use write-bw or read-bw, or set \
             qp.reliability = \"gbn\" (--set qp.reliability=gbn)",
            if prof.reliability == crate::config::Reliability::Ornic {
                "ornic"
            } else {
                "mp_rdma"
            },
            f.name,
            f.test.name()
        )));
    }
    Ok(())
}

/// The core of the flow's `local`-th QP on `node`: round robin over the flow's cores; with
/// `--procs`, server QP p + kN belongs to process p on the flow's core p.
fn qp_core(f: &FlowSpec, pl: &FlowPlan, node: usize, local: u32) -> usize {
    pl.core_base
        + if node == f.server as usize && pl.procs > 0 {
            (local as usize) % pl.procs
        } else {
            (local as usize) % f.cores as usize
        }
}

/// Brings flow `f`'s `pairs` up: through the RDMA CM when there is one (both QPs to INIT
/// now; the pair's client sends the REQ, as perftest's client calls rdma_connect), else
/// directly, each QP to RTS at build time.
fn connect_pairs(
    cfg: &Config,
    seed: u64,
    f: &FlowSpec,
    pairs: &[Pair],
    nodes: &mut [(rnic_transport::PdId, Nic)],
    mut cm: Option<&mut ConnectionManager>,
) -> anyhow::Result<()> {
    for (i, pr) in pairs.iter().enumerate() {
        let prof = f.profile(cfg, i as u32);
        let c = pr.c_node as usize;
        let s = f.server as usize;
        match cm.as_deref_mut() {
            Some(cm) => {
                to_init(&mut nodes[s].1.dev, s, pr.s_qpn)?;
                to_init(&mut nodes[c].1.dev, c, pr.c_qpn)?;
                cm.add_pair(
                    (c, pr.c_qpn, start_psn(cfg, seed, c, pr.c_qpn)),
                    (s, pr.s_qpn, start_psn(cfg, seed, s, pr.s_qpn)),
                    prof,
                );
            }
            None => {
                let (sq, cq) = ((s, pr.s_qpn), (c, pr.c_qpn));
                connect(nodes, cfg, &prof, seed, sq, cq)?;
                connect(nodes, cfg, &prof, seed, cq, sq)?;
            }
        }
    }
    Ok(())
}

/// The payload oracle: each QP receives the bytes of its peer's source buffer slot, the
/// messages of the flow's size (or its size mix), numbered from the PSNs they carry.
fn payload_oracle(
    cfg: &Config,
    seed: u64,
    spec: &FlowsSpec,
    plans: &[FlowPlan],
    flow_pairs: &[Vec<Pair>],
    n_nodes: usize,
) -> PayloadOracle {
    let mut oracle = PayloadOracle::new(seed, n_nodes);
    let delivery = if cfg.qp.transport == crate::config::Transport::Ud {
        Delivery::Datagram
    } else {
        Delivery::InOrder
    };
    for ((f, pl), pairs) in spec.flows.iter().zip(plans).zip(flow_pairs) {
        for (i, pr) in pairs.iter().enumerate() {
            let slot = pl.slot_base + pl.layout.slot(i as u32);
            let pmtu = f.profile(cfg, i as u32).pmtu;
            let mut sz = MsgSizes::Fixed(u64::from(pl.size32));
            if let Some(m) = &f.size_mix {
                let key = (u64::from(pl.slot_base) << 32) | i as u64;
                sz = MsgSizes::Mix(std::sync::Arc::new(m.clone()), key);
            }
            let (s, c) = (f.server as usize, pr.c_node as usize);
            // The payloads a QP receives carry its peer's PSNs (WRITE, SEND), or its own
            // for the responses to its READs.
            let (s_psn, c_psn) = (
                start_psn(cfg, seed, s, pr.s_qpn),
                start_psn(cfg, seed, c, pr.c_qpn),
            );
            let read = f.test.verb() == Verb::Read;
            let first = |own: u32, peer: u32| if read { own } else { peer };
            let sz2 = sz.clone();
            let d = delivery;
            oracle.connect((s, pr.s_qpn), (c, slot), pmtu, sz2, first(s_psn, c_psn), d);
            oracle.connect((c, pr.c_qpn), (s, slot), pmtu, sz, first(c_psn, s_psn), d);
        }
    }
    oracle
}

/// Every flow's application over its pairs and its view of the nodes, with the window
/// events their builds schedule; an atomic test's targets go to the oracle's atomics.
fn applications(
    p: &ModelParams,
    spec: &FlowsSpec,
    plans: &[FlowPlan],
    flow_pairs: Vec<Vec<Pair>>,
    apps: Vec<Vec<NodeApp>>,
    mems: &[SparseMemory],
    oracle: &mut PayloadOracle,
) -> (Vec<Perftest>, Vec<(TimePs, crate::event::Ev)>) {
    let mut perftests = Vec::with_capacity(spec.flows.len());
    let mut window_events = Vec::new();
    for (((f, pl), pairs), nodes_app) in spec.flows.iter().zip(plans).zip(flow_pairs).zip(apps) {
        let (app, events) = application(p, f, pl, pairs, nodes_app);
        if f.test.verb() == Verb::Atomic {
            connect_atomics(&app, mems, oracle);
        }
        perftests.push(app);
        window_events.extend(events);
    }
    (perftests, window_events)
}

/// The initiator's QP of each pair of atomic test `app` (the client in ping-pong latency
/// tests, the server otherwise) works on its peer's destination, whose initial value the
/// oracle takes from `mems`, and the values its atomics return land in its own.
fn connect_atomics(app: &Perftest, mems: &[SparseMemory], oracle: &mut PayloadOracle) {
    let client_posts = app.spec.is_lat() && app.procs.list.is_empty();
    for (i, pr) in app.pairs.iter().enumerate() {
        let (s, c, i) = (app.server, pr.c_node as usize, i as u32);
        let ((node, qpn), peer) = if client_posts {
            ((c, pr.c_qpn), s)
        } else {
            ((s, pr.s_qpn), c)
        };
        let target = app.dst(peer, i);
        let mut b = [0u8; 8];
        rnic_transport::Memory::read(&mems[peer], target, &mut b);
        let initial = u64::from_le_bytes(b);
        oracle
            .atomics
            .connect((node, qpn), app.dst(node, i), (peer, target), initial);
    }
}

/// The network of `n_nodes` from the config, with the run's hooks and, when asked for, the
/// capture of node 0's port written to `pcap`.
fn network(
    cfg: &Config,
    p: &ModelParams,
    root: &Rng,
    n_nodes: usize,
    opts: &RunOptions,
    pcap: Option<&std::path::Path>,
) -> anyhow::Result<crate::net::graph::Network> {
    let mut net = topology::build(cfg, p, root, n_nodes)?;
    net.hooks = opts.hooks;
    if let Some(path) = pcap {
        let f = File::create(path).map_err(|e| {
            crate::OutputError(format!("cannot create the pcap {}: {e}", path.display()))
        })?;
        let writer = PcapWriter::new(BufWriter::new(f)).map_err(|e| {
            crate::OutputError(format!("cannot write the pcap {}: {e}", path.display()))
        })?;
        net.pcap = Some(crate::net::capture::Capture::new(writer));
    }
    Ok(net)
}

/// The application of flow `f` over its `pairs`, with the window events its build
/// schedules (a duration-mode flow's window opening and, for bandwidth tests, its end).
fn application(
    p: &ModelParams,
    f: &FlowSpec,
    pl: &FlowPlan,
    pairs: Vec<Pair>,
    nodes: Vec<NodeApp>,
) -> (Perftest, Vec<(TimePs, crate::event::Ev)>) {
    let lat = f.test.is_latency();
    let q = f.qps.max(1);
    let duration_mode = f.duration_us.is_some();
    // A flow's window starts no earlier than its start plus a fixed sim.warmup_us, if set;
    // without one, its -D window opens when its own rate has settled (host/steady.rs).
    let warmup_ps = pl.start_ps + p.warmup_ps.unwrap_or(0);
    let window = match f.duration_us {
        Some(d) => (warmup_ps, warmup_ps + rnic_sim::us(d)),
        None => (0, TimePs::MAX),
    };
    let detect = duration_mode && p.warmup_ps.is_none();
    let tx_depth = if lat { 1 } else { pl.tx_depth };
    // perftest measures the peak in iteration mode only (-D turns it off). Its stamps are
    // reserved up front, so millions of them carry no growth slack: one per post list and
    // one per CQE (a signaled WQE every cq_mod, each pair's last, and the warm-up's last).
    let peak = (p.host.bw_peak && !lat && pl.procs == 0 && !duration_mode).then(|| {
        let (n, iters) = (pairs.len() as u64, f.iters.max(1));
        crate::host::bw_peak::BwPeak::with_capacity(
            n * iters.div_ceil(u64::from(p.host.post_list)),
            n * (iters.div_ceil(u64::from(p.host.cq_mod)) + 1),
        )
    });
    let mut app = Perftest {
        spec: test_spec(p, f, pl),
        costs: host_costs(p),
        window: Window {
            span_ps: window,
            duration_ps: window.1 - window.0,
            min_start_ps: window.0,
            // The give-up time leaves room for the window within the hour a run may simulate.
            steady: f.duration_us.filter(|_| detect).map(|d| {
                Steady::new(
                    p.settle.within_hour(d),
                    q as usize,
                    if lat { 1 } else { tx_depth },
                )
            }),
            opened: None,
            joint: false,
            ready: None,
            origin_ps: 0,
        },
        measure: Measurement {
            peak,
            ..Measurement::default()
        },
        errors: ErrorLog::default(),
        ping: PingPong {
            give_up_after_ps: pl.give_up_ps,
            ..PingPong::default()
        },
        procs: Procs::default(),
        bw_start: BwStart::default(),
        server: f.server as usize,
        pairs,
        nodes,
        finished: false,
        pairs_done: 0,
    };
    if let Some(s) = app.window.steady.as_mut() {
        if lat {
            // Latency tests have no initial posting: every completion from the flow's
            // start counts.
            s.arm(pl.start_ps);
        }
    }
    let waits = duration_mode && (p.warmup_rounds > 0 || detect);
    if waits {
        // The window opens when the warm-up rounds are done and the rate has settled (or
        // sim.warmup_us has passed): `Perftest::maybe_open`; bandwidth tests then schedule
        // their end.
        app.window.span_ps = (TimePs::MAX, TimePs::MAX);
        if p.warmup_rounds > 0 && lat {
            // With --procs each process counts its own warm-up rounds; without (pl.procs =
            // 0) a latency test counts its iterations instead (`Perftest::rounds_done`).
            app.procs.warming = pl.procs;
        } else if p.warmup_rounds > 0 {
            app.bw_start.warming_pairs = q as usize;
        }
    }
    if pl.procs > 0 {
        // Process p owns the pairs p, p + N, p + 2N, ...
        app.procs.list = (0..pl.procs)
            .map(|pr| Proc {
                pairs: (pr as u32..q).step_by(pl.procs).collect(),
                next: 0,
                rounds: 0,
            })
            .collect();
    }
    let mut events = Vec::new();
    if duration_mode && !waits {
        // A fixed warm-up alone: the window is known now. Latency tests stop at the first
        // iteration boundary after it instead of at an end event.
        if !lat {
            events.push((window.1, crate::event::Ev::End));
        }
        events.push((window.0, crate::event::Ev::WindowOpen));
        app.window.opened = Some(WindowOpened {
            at_ps: window.0,
            settled: true,
            reason: format!(
                "sim.warmup_us = {} µs set",
                p.warmup_ps.unwrap_or(0) as f64 / 1e6
            ),
        });
    }
    (app, events)
}

/// What flow `f`'s test is, from its spec, its plan and the run's parameters.
fn test_spec(p: &ModelParams, f: &FlowSpec, pl: &FlowPlan) -> TestSpec {
    let lat = f.test.is_latency();
    TestSpec {
        test: f.test,
        atomic: f.atomic,
        size_bytes: pl.size32,
        size_mix: f.size_mix.clone().map(std::sync::Arc::new),
        seed: p.seed,
        iters: f.iters.max(1),
        tx_depth: if lat { 1 } else { pl.tx_depth },
        inline_bytes: p.host.inline_bytes,
        post_list: if lat || pl.procs > 0 {
            1
        } else {
            p.host.post_list
        },
        cq_mod: if lat || pl.procs > 0 {
            1
        } else {
            p.host.cq_mod
        },
        // perftest's warm-up session: a tx depth per QP, or one post list.
        warm_up_ops: match (
            p.host.perform_warm_up && !lat && pl.procs == 0,
            p.host.post_list,
        ) {
            (false, _) => 0,
            (true, 1) => u64::from(pl.tx_depth),
            (true, l) => u64::from(l),
        },
        rx_depth: pl.rx_depth,
        recv_post_list: p.host.recv_post_list,
        stride_bytes: pl.layout.stride,
        wqe_bytes: p.nic.wqe_bytes,
        duration_mode: f.duration_us.is_some(),
        unreliable: pl.unreliable,
        grh_bytes: pl.grh_bytes,
        slots: pl.layout.slots,
        slot_base: pl.slot_base,
        warmup_rounds: p.warmup_rounds,
    }
}

/// The host's CPU costs of the application's verbs.
fn host_costs(p: &ModelParams) -> HostCosts {
    HostCosts {
        post_send_ps: p.host.post_send_ps,
        wqe_prep_ps: p.host.wqe_prep_ps,
        poll_cq_ps: p.host.poll_cq_ps,
        cq_event_ps: p.host.cq_event_ps,
        mem_latency_ps: p.host.mem_latency_ps,
        latency_gap_ps: p.host.latency_gap_ps,
        sw_prefetch: p.nic.prefetch.sw,
    }
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
            nic.host.cq.ctxs.push(CqCtx {
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

/// Writes the pattern bytes (`host/pattern.rs`) of every source buffer slot a flow's pairs
/// use, in 64 KiB pieces, so a large message needs no second copy. A slot's pattern is
/// seeded by its run-wide number, so no two flows' buffers look alike.
fn fill_sources(
    mems: &mut [SparseMemory],
    pairs: &[Pair],
    server: usize,
    pl: &FlowPlan,
    seed: u64,
) {
    let layout = &pl.layout;
    let words = (layout.slots as usize).div_ceil(64);
    let mut used: Vec<Vec<u64>> = vec![vec![0u64; words]; mems.len()];
    for (i, pr) in pairs.iter().enumerate() {
        let s = layout.slot(i as u32) as usize;
        used[server][s / 64] |= 1 << (s % 64);
        used[pr.c_node as usize][s / 64] |= 1 << (s % 64);
    }
    // The bytes are generated when read (see `pattern::SourceBuffers`), not written here.
    for (ni, (mem, used)) in mems.iter_mut().zip(used).enumerate() {
        if used.iter().all(|&w| w == 0) {
            continue;
        }
        let src = pattern::SourceBuffers {
            base: pl.buf_base,
            stride: layout.stride,
            size: u64::from(pl.size32),
            run_seed: seed,
            node: ni,
            slot_base: pl.slot_base,
            used,
        };
        let end = pl.buf_base + u64::from(layout.slots) * layout.stride;
        mem.back(pl.buf_base, end, std::sync::Arc::new(src));
    }
}

/// The transport's reliability mode for a configured one; the out-of-order modes are sized
/// from the link, the PMTU and `[ooo]` (OTD, bitmap nodes, the requester's timeout of
/// RTT + OTD / B).
fn reliability(r: crate::config::Reliability, cfg: &Config) -> rnic_transport::ReliabilityMode {
    use rnic_transport::{OooParams, ReliabilityMode};
    let params = || {
        let s = crate::nic::mech::ornic::sizing_of(cfg);
        let packet_ps = f64::from(cfg.qp.pmtu) * 8.0 / cfg.eth.gbps * 1000.0;
        OooParams {
            block_bits: s.block_bits,
            nodes: s.nodes,
            otd: s.otd,
            // One pool for the NIC's out-of-order QPs: `ooo.qps` × `ooo.pool_blocks_per_qp`
            // (the paper: 4096 for 2048 QPs).
            pool_blocks: s.pool_blocks,
            ack_turn_ps: (cfg.ooo.ack_turn_ns * 1000.0).round().max(1.0) as u64,
            timeout_ps: (cfg.ooo.rtt_ns * 1000.0 + f64::from(s.otd) * packet_ps).round() as u64,
            packet_ps: packet_ps.round() as u64,
        }
    };
    match r {
        crate::config::Reliability::Gbn => ReliabilityMode::GoBackN,
        crate::config::Reliability::Ornic => ReliabilityMode::Ornic(params()),
        crate::config::Reliability::MpRdma => ReliabilityMode::MpRdma(params()),
    }
}

/// The transport's service type for the configured `qp.transport`.
fn service(t: crate::config::Transport) -> rnic_transport::ServiceType {
    match t {
        crate::config::Transport::Rc => rnic_transport::ServiceType::Rc,
        crate::config::Transport::Uc => rnic_transport::ServiceType::Uc,
        crate::config::Transport::Ud => rnic_transport::ServiceType::Ud,
    }
}

/// The fork of the run's seed that draws the QPs' first PSNs.
const PSN_STREAM: u64 = 0x5053_4E00;

/// The first PSN QP `qpn` of `node` sends from (`qp.start_psn`): 24 random bits drawn, as
/// rdma_cm and perftest draw them, from a stream of the run's seed of its own, so the
/// other random streams do not move; or a fixed PSN.
pub(crate) fn start_psn(cfg: &Config, seed: u64, node: usize, qpn: u32) -> u32 {
    match cfg.qp.start_psn {
        crate::config::StartPsn::Zero => 0,
        crate::config::StartPsn::NearWrap => 0x00FF_FF00,
        crate::config::StartPsn::Random => {
            let id = ((node as u64) << 32) | u64::from(qpn);
            Rng::new(seed).fork(PSN_STREAM).fork(id).next_u32() & 0x00FF_FFFF
        }
    }
}

/// Takes QP `qpn` of node `a` to RTS with the attributes of `profile`, connected to `rqpn`
/// on node `b` (`host.connect = "direct"`: modify_qp at build time, nothing on the wire);
/// each sends from its [`start_psn`].
fn connect(
    nodes: &mut [(rnic_transport::PdId, Nic)],
    cfg: &Config,
    profile: &QpProfile,
    seed: u64,
    (a, qpn): (usize, u32),
    (b, rqpn): (usize, u32),
) -> anyhow::Result<()> {
    let (sq_psn, rq_psn) = (start_psn(cfg, seed, a, qpn), start_psn(cfg, seed, b, rqpn));
    let dev = &mut nodes[a].1.dev;
    let qc = &cfg.qp;
    if qc.transport != crate::config::Transport::Rc {
        let av = AddressVector {
            dscp_ecn: qc.traffic_class,
            ttl: qc.hop_limit,
            ..AddressVector::new(node_mac(b), node_ip(b))
        };
        return connect_unreliable(dev, qc.transport, profile, qpn, av, rqpn, (sq_psn, rq_psn))
            .map_err(|(what, x)| anyhow::anyhow!("modify_qp {what} (node {a}, QP {qpn}): {x:?}"));
    }
    to_init(dev, a, qpn)?;
    to_rtr(dev, qc, profile, a, qpn, b, rqpn, rq_psn)?;
    to_rts(dev, qc, profile, a, qpn, sq_psn)
}

/// UC and UD QPs to RTS with the attributes their transitions take (no ACK timer,
/// retries or READ resources; UD: the Q_Key, perftest's 0x11111111, and the peer as the
/// QP's one address handle).
fn connect_unreliable(
    dev: &mut rnic_transport::Device,
    transport: crate::config::Transport,
    profile: &QpProfile,
    qpn: u32,
    av: AddressVector,
    rqpn: u32,
    (sq_psn, rq_psn): (u32, u32),
) -> Result<(), (&'static str, rnic_transport::VerbsError)> {
    let service = service(transport);
    let qkey = rnic_transport::service::DEFAULT_QKEY;
    let init = QpAttr::init_for(service, Access::all(), qkey);
    dev.modify_qp(qpn, &init).map_err(|x| ("INIT", x))?;
    let rtr = QpAttr::rtr_for(service, av, profile.pmtu, rqpn, rq_psn);
    dev.modify_qp(qpn, &rtr).map_err(|x| ("RTR", x))?;
    let rts = QpAttr::rts_for(service, sq_psn);
    dev.modify_qp(qpn, &rts).map_err(|x| ("RTS", x))?;
    Ok(())
}
