//! Building a run: the nodes (host memory, the transport with its PD, MRs and CQs, the NIC),
//! the QP pairs connected through verbs with each pair's attributes, the source buffers'
//! pattern bytes, the application, the network from config and the observers.

use std::fs::File;
use std::io::BufWriter;
use std::time::Instant;

use rnic_sim::{Rng, TimePs};
use rnic_wire::PcapWriter;

use super::options::RunOptions;
use crate::buffers::{align_up, buffer_slots, buffer_stride, grh_bytes};
use crate::config::{Config, Connect, WanAccelLearn};
use crate::flow::{FlowSpec, FlowsSpec};
use crate::host::cm::ConnectionManager;
use crate::host::driver::SRC_BASE;
use crate::host::routes::FlowRoutes;
use crate::net::topology;
use crate::nic::Nic;
use crate::params::ModelParams;
use crate::workload::{Direction, PcapOut, PerfSpec, Verb};
use crate::world::World;

use app::{applications, fill_sources, payload_oracle};
use connect::connect_pairs;
use nodes::{node_memories, FlowAt, Nodes};
mod app;
mod connect;
mod nodes;

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
                mrs: if spec.mr_per_qp { qps } else { forward.mrs },
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

/// The receives of a node's shared receive queue under `host.use_srq` (perftest's
/// `--use-srq`), 0 without one: SEND tests only; send-bw's `host.rx_depth` in all (at least
/// one per QP, as perftest requires), send-lat's 2 per QP. Not over UC, where a message
/// that lost a packet leaves part of itself in a buffer another QP's message may own, nor
/// with more than one memory region per node, whose keys cover buffers by pair.
fn srq_wqes(cfg: &Config, f: &FlowSpec, rx_depth: u32) -> anyhow::Result<u32> {
    if !cfg.host.use_srq || f.test.verb() != Verb::Send {
        return Ok(0);
    }
    let q = f.qps.max(1);
    let refuse = |why: &str| -> anyhow::Result<u32> {
        Err(crate::UsageError(format!("host.use_srq (--use-srq): {why}")).into())
    };
    if cfg.qp.transport == crate::config::Transport::Uc {
        return refuse(
            "not over UC, where a message that lost a packet leaves part of itself in a \
             buffer another QP's message may own",
        );
    }
    if f.mrs > 1 || f.client_mrs.is_some_and(|m| m > 1) {
        return refuse("with one memory region per node only");
    }
    if f.size_mix.is_some() {
        return refuse("not with a size mix (a buffer's last SEND would have any of its sizes)");
    }
    if f.test.is_latency() {
        return Ok(2 * q);
    }
    if rx_depth < q {
        return refuse(&format!(
            "host.rx_depth (-r) {rx_depth} is below the {q} QPs that share it, as perftest refuses"
        ));
    }
    Ok(rx_depth)
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
    /// `host.use_srq`: the receives (and their buffers) of each node's shared receive queue;
    /// 0 without one.
    srq_wqes: u32,
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
        let srq_wqes = srq_wqes(cfg, f, rx_depth)?;
        let slots = buffer_slots(buf_bytes, q.max(srq_wqes));
        if slots < srq_wqes {
            anyhow::bail!(crate::UsageError(format!(
                "host.use_srq (--use-srq): {srq_wqes} receives of {buf_bytes} bytes, each with a \
                 buffer of its own, pass the {} MiB of buffers a node has: lower host.rx_depth \
                 (-r) or the size",
                crate::buffers::BUFFER_BUDGET >> 20
            )));
        }
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
                .max(srq_wqes)
                .max(2)
                .next_power_of_two(),
            rx_depth,
            srq_wqes,
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
    let n_nodes = spec.nodes();
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
    // The plan's errors are the network's to report, as it is built below.
    let port_mbps = crate::net::topology::node_link_mbps(cfg, n_nodes).unwrap_or_default();
    let mut nodes = Nodes::build(&p, spec, &plans, &port_mbps)?;

    // RDMA CM connects RC QPs (REQ, REP, RTU) and, with host.cm_ud, resolves UD pairs
    // (SIDR_REQ, SIDR_REP); UC pairs are brought up directly.
    let mut cm = crate::host::cm::connects(cfg).then(|| ConnectionManager::new(cfg, n_nodes));
    let mut flow_pairs = Vec::with_capacity(spec.flows.len());
    for (index, (f, pl)) in spec.flows.iter().zip(&plans).enumerate() {
        let flow = FlowAt { index, f, pl };
        let pairs = nodes.create_pairs(cfg, flow, &mut routes)?;
        connect_pairs(cfg, p.seed, f, &pairs, &mut nodes.nics, cm.as_mut())?;
        fill_sources(&mut mems, &pairs, f.server as usize, pl, p.seed);
        flow_pairs.push(pairs);
    }
    let Nodes { nics, apps, .. } = nodes;
    let mut nics: Vec<Nic> = nics.into_iter().map(|(_, n)| n).collect();
    let rate_rows = crate::params::trace::samples_per_series(nics.len());
    for nic in &mut nics {
        nic.cc.cap_trace_rows(rate_rows);
    }

    let mut oracle = payload_oracle(cfg, p.seed, spec, &plans, &flow_pairs, n_nodes);
    let (perftests, window_events) =
        applications(&p, spec, &plans, flow_pairs, apps, &mems, &mut oracle);
    let net = network(cfg, &p, &root, n_nodes, opts, spec.pcap.as_ref())?;
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
        watch_finish: false,
        just_finished: Vec::new(),
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

/// The network of `n_nodes` from the config, with the run's hooks and, when asked for, the
/// capture of one node's port written to a file.
fn network(
    cfg: &Config,
    p: &ModelParams,
    root: &Rng,
    n_nodes: usize,
    opts: &RunOptions,
    pcap: Option<&PcapOut>,
) -> anyhow::Result<crate::net::graph::Network> {
    let mut net = topology::build(cfg, p, root, n_nodes)?;
    net.hooks = opts.hooks;
    if let Some(PcapOut { path, node }) = pcap {
        let node = PcapOut::node_in(*node, n_nodes)?;
        let f = File::create(path).map_err(|e| {
            crate::OutputError(format!("cannot create the pcap {}: {e}", path.display()))
        })?;
        let writer = PcapWriter::new(BufWriter::new(f)).map_err(|e| {
            crate::OutputError(format!("cannot write the pcap {}: {e}", path.display()))
        })?;
        net.pcap = Some(crate::net::capture::Capture::new(node, writer));
    }
    Ok(net)
}
