//! The nodes of a run: host memory, the transport with its PD, MRs and CQs, the NIC, and
//! the QPs each pair of a flow needs on them.

use rnic_host::SparseMemory;
use rnic_transport::{Access, Device, DeviceConfig, QpInit};

use crate::config::Config;
use crate::flow::{FlowSpec, FlowsSpec};
use crate::host::driver::{CQ_BASE, CQ_DB_BASE, CQ_SPACING, RQ_BASE, SQ_BASE};
use crate::host::perftest::{Core, CqRing, HostQp, MrKeys, NodeApp, NodeApps, Pair, SrqRing};
use crate::host::routes::FlowRoutes;
use crate::net::addr::{node_ip, node_mac};
use crate::nic::cq::CqCtx;
use crate::nic::Nic;
use crate::params::ModelParams;
use crate::workload::{PerfTest, QpProfile};

use super::app::node_app;
use super::connect::{reliability, service};
use super::FlowPlan;

pub(super) fn log2_ceil(x: u64) -> u32 {
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
pub(super) fn register_mrs(
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

/// Every node's host memory. The SQ rings are stored as interned lines: the WQEs of one QP
/// repeat their last 48 bytes (SGE, remote address, operands), so 64 bytes become 20 (see
/// `rnic_host::interned`). The CQ rings are written CQE after CQE, filling every page they
/// pass: stored whole.
pub(super) fn node_memories(n_nodes: usize) -> Vec<SparseMemory> {
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
pub(super) struct FlowAt<'a> {
    pub(super) index: usize,
    pub(super) f: &'a FlowSpec,
    pub(super) pl: &'a FlowPlan,
}

/// The nodes while the flows' QPs are created on them: each node's protection domain and
/// NIC, where its next SQ and RQ rings go in host memory, and per flow, per node, the
/// application's view of the node (its cores, QPs, keys and buffers).
pub(super) struct Nodes {
    pub(super) nics: Vec<(rnic_transport::PdId, Nic)>,
    pub(super) ring_next: Vec<(u64, u64)>,
    /// Out-of-order QPs created on each node so far, held to `ooo.qps`.
    pub(super) ooo_qps: Vec<u32>,
    pub(super) apps: Vec<NodeApps>,
    /// Bytes of one WQE in a ring.
    pub(super) wqe_bytes: u64,
}

/// One node's transport before its NIC holds it: the device, its protection domain, per
/// flow the keys of the memory regions registered on the node, and every region's bounds
/// as (key, va, len) for the NIC's translation unit.
pub(super) struct NodeDevice {
    pub(super) dev: Device,
    pub(super) pd: rnic_transport::PdId,
    pub(super) keys: Vec<MrKeys>,
    pub(super) regions: Vec<(u32, u64, u64)>,
}

impl NodeDevice {
    /// Node `i`'s device, sized for the QPs every flow puts on it, with per flow `mrs`
    /// memory regions over the flow's buffers (`client_mrs` on the client nodes), each with
    /// its own keys and translation entries: see [`register_mrs`].
    pub(super) fn new(
        spec: &FlowsSpec,
        plans: &[FlowPlan],
        i: usize,
    ) -> anyhow::Result<NodeDevice> {
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
    /// view of it. `port_mbps`: each node's link rate, where its link sets one (a topology
    /// file's `gbps`, a fabric's host tier): its NIC's port runs at it, not at `eth.gbps`.
    pub(super) fn build(
        p: &ModelParams,
        spec: &FlowsSpec,
        plans: &[FlowPlan],
        port_mbps: &[Option<u64>],
    ) -> anyhow::Result<Nodes> {
        let n_nodes = p.net.clients as usize + 1;
        let mut nics = Vec::with_capacity(n_nodes);
        let cores = p.host.cores.max(1) as usize;
        let mut apps = vec![NodeApps::new(n_nodes); spec.flows.len()];
        for i in 0..n_nodes {
            let NodeDevice {
                dev,
                pd,
                mut keys,
                regions,
            } = NodeDevice::new(spec, plans, i)?;
            let node_qps: usize = spec.flows.iter().map(|f| FlowPlan::node_qps(f, i)).sum();
            let mut own = p.for_node(i);
            if let Some(mbps) = port_mbps.get(i).copied().flatten() {
                own.eth.mbps = mbps;
            }
            let mut nic = Nic::new(&own, dev);
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
                // A flow holds a state only on the nodes it has QPs on.
                if FlowPlan::node_qps(f, i) > 0 {
                    let keys = std::mem::take(&mut keys[fi]);
                    apps[fi].insert(i, node_app(f, pl, &app_cores, keys));
                }
            }
            nics.push((pd, nic));
        }
        Ok(Nodes {
            nics,
            ring_next: vec![(SQ_BASE, RQ_BASE); n_nodes],
            ooo_qps: vec![0; n_nodes],
            apps,
            wqe_bytes: p.nic.wqe_bytes,
        })
    }

    /// Flow `flow`'s QP pairs: per pair one QP on the server and its peer on a client,
    /// round robin over the flow's clients.
    pub(super) fn create_pairs(
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

    /// Counts an out-of-order QP on `node` against `ooo.qps`, the out-of-order QPs a NIC
    /// supports: its shared bitmap-block pool is sized for that many, and a run with more
    /// would starve QPs of blocks until they fail (2 blocks for 16 QPs under 1 % loss ended
    /// in RETRY_EXC_ERR), where a real NIC refuses the QP it has no room for.
    fn count_ooo_qp(&mut self, cfg: &Config, node: usize, prof: &QpProfile) -> anyhow::Result<()> {
        let Some(scheme) = crate::workload::ooo_scheme(prof.reliability) else {
            return Ok(());
        };
        self.ooo_qps[node] += 1;
        if self.ooo_qps[node] > cfg.ooo.qps {
            anyhow::bail!(crate::UsageError(format!(
                "node {node} needs more out-of-order QPs (qp.reliability = \"{scheme}\") than \
                 ooo.qps = {}, the QPs its NIC supports and sizes its bitmap-block pool for: \
                 raise ooo.qps or run fewer QPs",
                cfg.ooo.qps
            )));
        }
        Ok(())
    }

    /// Creates the QP of pair `pair` of `flow` on node `node`, the flow's `local`-th QP
    /// there: on the core its turn gives it, with its rings in the node's memory, in the
    /// NIC's tables and in the application's view; the run routes its completions to the
    /// flow.
    pub(super) fn create_qp(
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
        self.count_ooo_qp(cfg, node, &prof)?;
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
        if pl.srq_wqes > 0 {
            attach_srq(nic, a, qpn, pl.srq_wqes)
                .map_err(|e| anyhow::anyhow!("the shared receive queue on node {node}: {e:?}"))?;
        }
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

/// `host.use_srq`: QP `qpn` (in RESET) takes its receives from the node's shared receive
/// queue for the flow, made with `wqes` receives when its first QP comes, whose RQ ring
/// then holds the SRQ's WQEs (the NIC fetches them from there into the SRQ).
fn attach_srq(
    nic: &mut Nic,
    a: &mut NodeApp,
    qpn: u32,
    wqes: u32,
) -> Result<(), rnic_transport::VerbsError> {
    let id = match &a.srq {
        Some(srq) => (nic.host.srq_of_ring(srq.ring_qpn)).expect("the ring's SRQ was made with it"),
        None => {
            let id = nic.dev.create_srq(wqes)?;
            nic.host.srq_rings.push((qpn, id));
            a.srq = Some(SrqRing::new(qpn, wqes));
            id
        }
    };
    nic.dev.set_qp_srq(qpn, id)
}

/// CQEs of each of node `i`'s CQ rings. The cores consume CQEs faster than the NIC writes
/// them, so a ring needs room for a burst, not for every outstanding WQE; the NIC checks
/// for overrun anyway.
pub(super) fn cq_ring_entries(spec: &FlowsSpec, plans: &[FlowPlan], i: usize) -> u64 {
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

/// Refuses an out-of-order reliability mode for a test other than WRITE or READ bandwidth
/// (a request the model cannot run: bad input, exit 2, not a model failure).
pub(super) fn check_reliability(f: &FlowSpec, prof: &QpProfile) -> anyhow::Result<()> {
    let who = format!("flow \"{}\"", f.name);
    match crate::workload::reliability_refuses(prof.reliability, f.test, &who) {
        Some(why) => Err(crate::error::UsageError(why).into()),
        None => Ok(()),
    }
}

/// The core of the flow's `local`-th QP on `node`: round robin over the flow's cores; with
/// `--procs`, server QP p + kN belongs to process p on the flow's core p.
pub(super) fn qp_core(f: &FlowSpec, pl: &FlowPlan, node: usize, local: u32) -> usize {
    pl.core_base
        + if node == f.server as usize && pl.procs > 0 {
            (local as usize) % pl.procs
        } else {
            (local as usize) % f.cores as usize
        }
}

/// Creates each core's send and receive CQ on node `node`: the transport's CQ, the NIC's
/// CQ context and the application's ring, `2^log_depth` CQEs each, with the doorbell record
/// of its consumer index.
pub(super) fn create_cqs(
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
