//! Topologies, built from config into a [`Network`]: `star` (node 0 the server, nodes
//! 1..=N the clients, each on one link to one output-queued switch), `back_to_back` (the
//! server and one client on one cable), or a topology file (switches and links, each link
//! with its own length or delay, rate and impairment). Addresses are
//! [`super::addr`]'s.

use rnic_sim::{Rng, TimePs};

use super::ecmp::EcmpTable;
use super::element::LinkElement;
use super::graph::{End, LinkDir, Network, SwitchNode};
use super::impair::Impair;
use super::plan::{mbps, LinkPlan, Plan, SwitchPlan};
use super::port::Port;
use super::shared_buffer::{derive_pfc_levels, IngressLink, PfcLevels, SharedPool};
use super::switch::OutPort;
use crate::config::schema::MAX_DELAY_NS;
use crate::config::{Config, ConfigError, FabricRouting, SwitchBufferMode};
use crate::params::{EthParams, ModelParams};

/// Builds the network `cfg.net.topology` names for `nodes` nodes.
pub fn build(
    cfg: &Config,
    p: &ModelParams,
    rng: &Rng,
    nodes: usize,
) -> Result<Network, ConfigError> {
    let plan = plan(cfg, nodes)?;
    Ok(plan.build(cfg, p, rng))
}

/// Checks the topology `cfg` names for `nodes` nodes without building it (a topology file
/// is read and checked).
pub fn check(cfg: &Config, nodes: usize) -> Result<(), ConfigError> {
    plan(cfg, nodes).map(|_| ())
}

/// One switch's shared buffer, with the switch and the field it comes from named (e.g.
/// `net.switch_buffer_bytes`, or a topology file's `switch[1] ("tor1").buffer_bytes`).
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchBuffer {
    pub bytes: u64,
    pub field: String,
}

/// The buffer of every switch of the topology `cfg` names for `nodes` nodes (none for
/// back to back).
pub fn switch_buffers(cfg: &Config, nodes: usize) -> Result<Vec<SwitchBuffer>, ConfigError> {
    Ok(plan(cfg, nodes)?
        .switches
        .into_iter()
        .map(|s| SwitchBuffer {
            bytes: s.buffer_bytes,
            field: s.buffer_field,
        })
        .collect())
}

/// The rate of each node's own link (its NIC's cable to the network), Gb/s, in the
/// topology `cfg` names for `nodes` nodes: what a workload's load is a share of.
pub fn node_link_gbps(cfg: &Config, nodes: usize) -> Result<Vec<f64>, ConfigError> {
    let mbps = node_link_mbps(cfg, nodes)?;
    let gbps = |m: Option<u64>| m.map_or(cfg.eth.gbps, |m| m as f64 / 1e3);
    Ok(mbps.into_iter().map(gbps).collect())
}

/// [`node_link_gbps`] in Mb/s, as the links carry it (`None` for a node without a link,
/// whose port runs at `eth.gbps`): the rate of each node's NIC port.
pub fn node_link_mbps(cfg: &Config, nodes: usize) -> Result<Vec<Option<u64>>, ConfigError> {
    let plan = plan(cfg, nodes)?;
    Ok((0..nodes)
        .map(|n| {
            let on_node = |l: &&LinkPlan| l.a == End::Node(n) || l.b == End::Node(n);
            plan.links.iter().find(on_node).map(|l| l.mbps)
        })
        .collect())
}

/// A routing mode that chooses among equal-cost paths (`"ecmp"`, `"spray"`, `"adaptive"`)
/// on a built-in topology with one path between any two nodes would choose nothing, and the
/// run would quietly be the lowest-link one.
fn check_routing_has_paths(net: &crate::config::NetConfig) -> Result<(), ConfigError> {
    let mode = match net.fabric.routing {
        FabricRouting::Ecmp => "ecmp",
        FabricRouting::Spray => "spray",
        FabricRouting::Adaptive => "adaptive",
        FabricRouting::Auto | FabricRouting::LowestLink => return Ok(()),
    };
    if !matches!(net.topology.as_str(), "star" | "back_to_back" | "wan") {
        return Ok(());
    }
    Err(bad(format!(
        "net.fabric.routing = \"{mode}\" chooses among equal-cost paths, but net.topology = \
         \"{}\" has one path between any two nodes; use a generated fabric (--set \
         net.topology=leaf_spine or fat_tree) or a topology file with parallel paths, or \
         net.spray.paths for parallel paths on a node's uplink",
        net.topology
    )))
}

/// The rates and delays of `[net.fabric]`'s tiers (`host_link_*`, `fabric_link_*`) are
/// read by the generated fabrics alone: on another topology they changed nothing, in
/// silence, so they are refused naming the fields that set that topology's links.
fn check_fabric_links_have_a_fabric(net: &crate::config::NetConfig) -> Result<(), ConfigError> {
    if matches!(net.topology.as_str(), "fat_tree" | "leaf_spine") {
        return Ok(());
    }
    let f = &net.fabric;
    let set: Vec<String> = [
        ("host_link_gbps", f.host_link_gbps),
        ("fabric_link_gbps", f.fabric_link_gbps),
        ("host_link_delay_ns", f.host_link_delay_ns),
        ("fabric_link_delay_ns", f.fabric_link_delay_ns),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| format!("net.fabric.{k} = {v}")))
    .collect();
    if set.is_empty() {
        return Ok(());
    }
    let own = match net.topology.as_str() {
        "star" | "back_to_back" | "wan" => "eth.gbps and net.link_delay_ns (or net.link_km)",
        _ => "the file's own gbps and km or delay_ns per [[link]] (eth.gbps and net.link_delay_ns where it gives none)",
    };
    Err(bad(format!(
        "{} sets the links of a generated fabric (net.topology = \"fat_tree\" or \
         \"leaf_spine\"), but net.topology = \"{}\", whose links take {own}: set those, \
         or use a generated fabric",
        set.join(", "),
        net.topology
    )))
}

fn bad(msg: String) -> ConfigError {
    ConfigError::Inconsistent(msg)
}

pub(super) fn plan(cfg: &Config, nodes: usize) -> Result<Plan, ConfigError> {
    let net = &cfg.net;
    let delay_ps = rnic_sim::ns(net.effective_link_delay_ns());
    let mbps = mbps(cfg.eth.gbps);
    if net.wan_accel && net.topology != "wan" {
        return Err(bad(format!(
            "net.wan_accel = true needs net.topology = \"wan\" (the accelerator sits on \
             Local's side of the long link), but net.topology = \"{}\"; use --profile wan \
             or --set net.topology=wan",
            net.topology
        )));
    }
    check_routing_has_paths(net)?;
    check_fabric_links_have_a_fabric(net)?;
    if net.pfc && net.pfc_xon_bytes >= net.pfc_xoff_bytes {
        return Err(bad(format!(
            "net.pfc_xon_bytes = {} must be below net.pfc_xoff_bytes = {} (a paused port \
             resumes once drained below the level that paused it); e.g. --set \
             net.pfc_xon_bytes={}",
            net.pfc_xon_bytes,
            net.pfc_xoff_bytes,
            net.pfc_xoff_bytes / 2
        )));
    }
    if net.pfc {
        check_rx_pfc_levels(&cfg.nic)?;
    }
    check_pinned_path(&net.spray)?;
    let plan = plan_of(cfg, nodes, delay_ps, mbps)?;
    check_ecn(&net.ecn, &plan)?;
    crate::config::check_cc(cfg)?;
    if net.switch_buffer == SwitchBufferMode::Shared {
        check_shared_buffer(cfg, &plan)?;
    } else if net.pfc {
        for s in &plan.switches {
            if net.pfc_xoff_bytes >= s.buffer_bytes {
                return Err(bad(format!(
                    "net.pfc_xoff_bytes = {} is not below the buffer of {} = {}: the buffer \
                     would overflow before any PAUSE is sent; lower net.pfc_xoff_bytes (e.g. \
                     --set net.pfc_xoff_bytes={}) or raise the buffer",
                    net.pfc_xoff_bytes,
                    s.buffer_field,
                    s.buffer_bytes,
                    s.buffer_bytes / 4
                )));
            }
        }
    }
    Ok(plan)
}

/// Under PFC, every switch's shared pool must hold its ingresses' headroom and leave a
/// shared part to pause on, and with ECN marking on, an ingress must mark before it pauses:
/// its pause level above net.ecn.kmin_bytes (so a queue fed by one ingress passes kmin
/// before that ingress pauses).
fn check_shared_buffer(cfg: &Config, plan: &Plan) -> Result<(), ConfigError> {
    if !cfg.net.pfc {
        return Ok(());
    }
    let kmin = cfg.net.ecn.enabled.then_some(cfg.net.ecn.kmin_bytes);
    for (sw, levels) in plan.switches.iter().zip(plan.shared_pfc_levels(cfg)) {
        let levels = levels.map_err(|why| {
            bad(format!(
                "net.switch_buffer = \"shared\": the pool of {} = {} cannot hold PFC's \
                 headroom: {why}",
                sw.buffer_field, sw.buffer_bytes
            ))
        })?;
        if let Some(kmin) = kmin.filter(|&k| levels.xoff_bytes <= k) {
            return Err(bad(format!(
                "net.switch_buffer = \"shared\" with net.pfc: the pool of {} = {} gives its \
                 ingresses a pause level of {} bytes, not above net.ecn.kmin_bytes = {kmin}, \
                 so PFC would pause before ECN marks; raise the buffer or lower \
                 net.ecn.kmin_bytes (e.g. --set net.ecn.kmin_bytes={})",
                sw.buffer_field,
                sw.buffer_bytes,
                levels.xoff_bytes,
                levels.xoff_bytes / 2
            )));
        }
    }
    Ok(())
}

/// ECN marking needs its thresholds in order and a switch to mark in. The order is checked
/// with marking off too: thresholds out of order are a mistake whether or not this run
/// marks, and a later `--set net.ecn.enabled=true` should not be the first to say so.
fn check_ecn(ecn: &crate::config::EcnConfig, plan: &Plan) -> Result<(), ConfigError> {
    if ecn.kmin_bytes >= ecn.kmax_bytes {
        return Err(bad(format!(
            "net.ecn.kmin_bytes = {} must be below net.ecn.kmax_bytes = {} (marking rises \
             from 0 at kmin to net.ecn.pmax at kmax); e.g. --set net.ecn.kmax_bytes={}",
            ecn.kmin_bytes,
            ecn.kmax_bytes,
            ecn.kmin_bytes.saturating_mul(4).max(1)
        )));
    }
    if !ecn.enabled {
        return Ok(());
    }
    if plan.switches.is_empty() {
        return Err(bad(
            "net.ecn.enabled = true marks frames in switches, and this topology has none \
             (back to back): use a topology with a switch, or leave net.ecn.enabled off"
                .into(),
        ));
    }
    Ok(())
}

/// A pinned sprayer's path must be one of its paths (a path beyond them would silently
/// become another).
fn check_pinned_path(spray: &crate::config::SprayConfig) -> Result<(), ConfigError> {
    if spray.policy == crate::config::SprayPolicy::Pinned && spray.path >= spray.paths {
        return Err(bad(format!(
            "net.spray.path = {} is not one of the net.spray.paths = {} paths (0 to {}) that \
             net.spray.policy = \"pinned\" puts every frame on; e.g. --set net.spray.path={}",
            spray.path,
            spray.paths,
            spray.paths - 1,
            spray.paths - 1
        )));
    }
    Ok(())
}

/// With flow control, a NIC's receive buffer pauses its link peer above
/// `nic.rx_buffer_bytes - nic.rx_pfc_headroom_bytes` and resumes it at
/// `nic.rx_pfc_xon_bytes`: both levels must exist and be in that order.
fn check_rx_pfc_levels(nic: &crate::config::NicConfig) -> Result<(), ConfigError> {
    let (buffer, headroom, xon) = (
        nic.rx_buffer_bytes,
        nic.rx_pfc_headroom_bytes,
        nic.rx_pfc_xon_bytes,
    );
    if headroom >= buffer {
        return Err(bad(format!(
            "nic.rx_pfc_headroom_bytes = {headroom} is not below nic.rx_buffer_bytes = \
             {buffer}: with net.pfc the NIC pauses its link peer once the buffer holds more \
             than their difference, so nothing would be left to fill; lower \
             nic.rx_pfc_headroom_bytes (e.g. --set nic.rx_pfc_headroom_bytes={}) or raise \
             nic.rx_buffer_bytes",
            buffer / 4
        )));
    }
    let xoff = buffer - headroom;
    if xon >= xoff {
        return Err(bad(format!(
            "nic.rx_pfc_xon_bytes = {xon} must be below the receive buffer's XOFF level, \
             nic.rx_buffer_bytes - nic.rx_pfc_headroom_bytes = {xoff} (a paused peer resumes \
             once the buffer drained below the level that paused it); e.g. --set \
             nic.rx_pfc_xon_bytes={}",
            xoff / 2
        )));
    }
    Ok(())
}

/// The plan of the topology `cfg` names for `nodes` nodes, links of `delay_ps` and `mbps`
/// where the topology does not set its own.
fn plan_of(cfg: &Config, nodes: usize, delay_ps: TimePs, mbps: u64) -> Result<Plan, ConfigError> {
    let net = &cfg.net;
    match net.topology.as_str() {
        "star" => Ok(Plan {
            nodes,
            switches: vec![SwitchPlan {
                buffer_bytes: net.switch_buffer_bytes,
                latency_ps: rnic_sim::ns(net.switch_latency_ns),
                buffer_field: "the star's switch: net.switch_buffer_bytes".into(),
            }],
            links: (0..nodes)
                .map(|i| LinkPlan {
                    a: End::Node(i),
                    b: End::Switch(0),
                    delay_ps,
                    mbps,
                    impair: true,
                })
                .collect(),
            impair_uplinks: true,
        }),
        "back_to_back" => {
            if nodes != 2 {
                return Err(bad(format!(
                    "net.topology = \"back_to_back\" joins the server and one client, but \
                     net.clients = {}: set net.clients = 1 (rnic perf's --clients 1)",
                    nodes - 1
                )));
            }
            Ok(Plan {
                nodes,
                switches: Vec::new(),
                links: vec![LinkPlan {
                    a: End::Node(0),
                    b: End::Node(1),
                    delay_ps,
                    mbps,
                    impair: true,
                }],
                impair_uplinks: true,
            })
        }
        "wan" => wan_plan(cfg, nodes, mbps),
        "fat_tree" => super::fabric::fat_tree(cfg, nodes, delay_ps, mbps),
        "leaf_spine" => super::fabric::leaf_spine(cfg, nodes, delay_ps, mbps),
        path => {
            let plan = read_file(path, cfg, nodes, delay_ps, mbps)?;
            check_file_impairments(path, cfg, &plan)?;
            if let Some((a, b)) = plan.unreachable() {
                return Err(bad(format!(
                    "topology file {path}: node{a} cannot reach node{b}: connect them through \
                     switches"
                )));
            }
            Ok(plan)
        }
    }
}

/// A topology file's impairments act only on the links it marks `impair = true`, and the
/// sprayer and the reordering window only where a node sends on such a link: a setting no
/// link takes would change nothing, so it is refused with the field and the fix (it ran
/// clean in silence).
fn check_file_impairments(path: &str, cfg: &Config, plan: &Plan) -> Result<(), ConfigError> {
    let imp = &cfg.net.impair;
    let set: Vec<String> = [
        ("loss", imp.loss > 0.0, imp.loss.to_string()),
        ("dup", imp.dup > 0.0, imp.dup.to_string()),
        ("corrupt", imp.corrupt > 0.0, imp.corrupt.to_string()),
        (
            "reorder_depth",
            imp.reorder_depth > 0,
            imp.reorder_depth.to_string(),
        ),
        (
            "extra_delay_ns",
            imp.extra_delay_ns > 0.0,
            imp.extra_delay_ns.to_string(),
        ),
    ]
    .into_iter()
    .filter(|&(_, on, _)| on)
    .map(|(k, _, v)| format!("net.impair.{k} = {v}"))
    .collect();
    if !set.is_empty() && !plan.links.iter().any(|l| l.impair) {
        return Err(bad(format!(
            "{} acts on the links a topology file marks `impair = true`, and {path} marks \
             none, so no frame would meet it: add `impair = true` to the [[link]] tables to \
             impair, or leave net.impair.* at 0",
            set.join(", ")
        )));
    }
    let node_side: Vec<String> = [
        (
            "net.spray.paths",
            cfg.net.spray.paths > 1,
            cfg.net.spray.paths.to_string(),
        ),
        (
            "net.impair.reorder_window",
            imp.reorder_window > 1,
            imp.reorder_window.to_string(),
        ),
    ]
    .into_iter()
    .filter(|&(_, on, _)| on)
    .map(|(k, _, v)| format!("{k} = {v}"))
    .collect();
    let node_marked = plan
        .links
        .iter()
        .any(|l| l.impair && (matches!(l.a, End::Node(_)) || matches!(l.b, End::Node(_))));
    if !node_side.is_empty() && !node_marked {
        return Err(bad(format!(
            "{} acts on what a node sends on its link when a topology file marks that link \
             `impair = true`, and {path} marks no node's link, so no frame would meet it: \
             add `impair = true` to the [[link]] of each node to act on (e.g. ends = \
             [\"node0\", ...]), or leave it at its default",
            node_side.join(", ")
        )));
    }
    Ok(())
}

impl Plan {
    fn build(&self, cfg: &Config, p: &ModelParams, rng: &Rng) -> Network {
        let eth = |mbps: u64| EthParams {
            mbps,
            ..p.eth.clone()
        };
        // The reordering unit: one MTU frame at line rate.
        let slot = Port::new(p.eth.clone()).wire_time(p.pmtu as usize + 78);
        let mut links = Vec::with_capacity(2 * self.links.len());
        let mut uplink = vec![usize::MAX; self.nodes];
        let mut ports: Vec<Option<Port>> = vec![None; self.nodes];
        let mut switches: Vec<SwitchNode> = self
            .switches
            .iter()
            .map(|s| SwitchNode {
                outs: Vec::new(),
                out_link: Vec::new(),
                route: vec![u32::MAX; self.nodes],
                ecmp: Default::default(),
                latency_ps: s.latency_ps,
                pool: None,
            })
            .collect();
        if cfg.net.switch_buffer == SwitchBufferMode::Shared {
            for (i, sw) in switches.iter_mut().enumerate() {
                let size = self.switches[i].buffer_bytes;
                sw.pool = Some(SharedPool::new(i, size, cfg.net.pfc));
            }
        }
        for (k, l) in self.links.iter().enumerate() {
            for (dir, (from, to)) in [(l.a, l.b), (l.b, l.a)].into_iter().enumerate() {
                let id = 2 * k + dir;
                let mut elements: Vec<Box<dyn LinkElement>> = Vec::new();
                let from_node = matches!(from, End::Node(_));
                if l.impair && (!self.impair_uplinks || from_node) {
                    // The stream of the element on node i's uplink is fork 0x1000 + 2i (as
                    // the star always had); other directions follow.
                    let stream = match from {
                        End::Node(i) => 0x1000 + 2 * i as u64,
                        End::Switch(_) => 0x1000 + 2 * (self.nodes + id) as u64 + 1,
                    };
                    let imp = Impair::new(rng.fork(stream), &cfg.net.impair, slot);
                    if imp.is_active() {
                        elements.push(Box::new(imp));
                    }
                }
                if l.impair && from_node && cfg.net.impair.reorder_window > 1 {
                    // The emulator's window shuffle: its own streams (0x3000 + 2i).
                    let stream = 0x3000 + 2 * id as u64;
                    elements.push(Box::new(super::reorder_window::ReorderWindow::new(
                        rng.fork(stream),
                        cfg.net.impair.reorder_window,
                        slot,
                    )));
                }
                if l.impair && from_node {
                    // Spraying on every node's uplink, before the impairment of the next hop;
                    // its own streams (0x2000 + 2i), so the impairment's numbers never shift.
                    let stream = 0x2000 + 2 * id as u64;
                    let sp = super::spray::Spray::new(rng.fork(stream), &cfg.net.spray);
                    if sp.is_active() {
                        elements.push(Box::new(sp));
                    }
                }
                links.push(LinkDir {
                    delay_ps: l.delay_ps,
                    to,
                    reverse: 2 * k + 1 - dir,
                    elements,
                });
                match from {
                    End::Node(i) => {
                        uplink[i] = id;
                        ports[i] = Some(Port::new(eth(l.mbps)));
                    }
                    End::Switch(s) => {
                        let sw = &mut switches[s];
                        sw.outs.push(OutPort::new(
                            Port::new(eth(l.mbps)),
                            self.switches[s].buffer_bytes,
                        ));
                        sw.out_link.push(id);
                    }
                }
            }
        }
        self.route(
            &links,
            &mut switches,
            cfg.net.fabric.ecmp_on(&cfg.net.topology),
        );
        // Per-frame picks draw from each switch's own stream.
        let per_frame: Option<fn(EcmpTable, Rng) -> EcmpTable> = match cfg.net.fabric.routing {
            FabricRouting::Spray => Some(EcmpTable::spraying),
            FabricRouting::Adaptive => Some(EcmpTable::adaptive),
            _ => None,
        };
        if let Some(make) = per_frame {
            let rng = rng.fork(SPRAY_STREAM);
            for (s, sw) in switches.iter_mut().enumerate() {
                sw.ecmp = make(std::mem::take(&mut sw.ecmp), rng.fork(s as u64));
            }
        }
        if cfg.net.topology == "wan" && cfg.net.wan_accel {
            // Both halves of the accelerator on Local's link (link 0): its way out sees
            // Local's requests, its way in Remote's acknowledgements.
            let long_rtt_ps = 2 * self.links[1].delay_ps;
            let long_link = Port::new(eth(self.links[1].mbps));
            let (out, inb) = super::wan_accel::wan_accel(&cfg.net, long_rtt_ps, long_link);
            links[0].elements.push(Box::new(out));
            links[1].elements.push(Box::new(inb));
        }
        // Every node has a link (the plan is checked), so every port is set.
        let ports = ports
            .into_iter()
            .map(|port| port.unwrap_or_else(|| Port::new(p.eth.clone())))
            .collect();
        let mut net = Network::new(ports, uplink, links, switches);
        let outs: Vec<usize> = net.switches.iter().map(|s| s.outs.len()).collect();
        if cfg.net.ecn.enabled {
            let mbps: Vec<Vec<u64>> = net
                .switches
                .iter()
                .map(|s| s.outs.iter().map(|o| o.port.mbps()).collect())
                .collect();
            net.ecn = Some(super::ecn::Ecn::new(&cfg.net.ecn, rng, &mbps));
        }
        let trace_ps = rnic_sim::ns(cfg.net.trace_interval_us * 1000.0);
        let shared = cfg.net.switch_buffer == SwitchBufferMode::Shared;
        if cfg.net.ecn.enabled || cfg.net.pfc || shared || trace_ps > 0 {
            let interval = (trace_ps > 0).then_some(trace_ps);
            let series = outs.iter().sum::<usize>() + net.uplink.len();
            let max_samples = crate::params::trace::samples_per_series(series);
            net.queues = Some(super::queue_stats::Queues::new(
                &outs,
                interval,
                max_samples,
            ));
        }
        if cfg.net.pfc {
            net.pfc = Some(self.pfc(cfg, p, &mut net, trace_ps));
        }
        net
    }

    /// PFC on every switch ingress and NIC of `net`: the configured levels, or with a
    /// shared buffer each switch's derived ones; ports that track their frames, so a PAUSE
    /// waits for the frame on the wire.
    fn pfc(
        &self,
        cfg: &Config,
        p: &ModelParams,
        net: &mut Network,
        trace_ps: u64,
    ) -> super::pfc::Pfc {
        let params = super::pfc::PfcParams {
            xoff_bytes: cfg.net.pfc_xoff_bytes,
            xon_bytes: cfg.net.pfc_xon_bytes,
            priority: cfg.net.pfc_priority,
            nic_lead_bytes: p.nic.tx_port_slack_bytes,
        };
        let cycle = super::pfc_deadlock::buffer_dependency_cycle(net);
        let cycle_links = cycle.map_or(0, |c| c.len() as u64);
        let mut pfc =
            super::pfc::Pfc::new(params, &net.pfc_links(), net.switches.len(), cycle_links);
        if trace_ps > 0 {
            pfc.keep_pauses();
        }
        if cfg.net.switch_buffer == SwitchBufferMode::Shared {
            // The plan was checked: every switch's levels derive.
            for (s, levels) in self.shared_pfc_levels(cfg).into_iter().enumerate() {
                if let Ok(levels) = levels {
                    pfc.set_switch_levels(s, &net.switch_ingresses(s), levels);
                }
            }
        }
        // A port that brings frames faster than its NIC's PCIe link writes payload to
        // the host fills the NIC's receive buffer: the switch port feeding it queues its
        // frames where the NIC's pauses hold them from the start.
        let pcie = &p.pcie;
        let pcie_payload_mbps =
            pcie.mbps * pcie.mps_bytes / (pcie.mps_bytes + pcie.tlp_header_bytes).max(1);
        for (n, port) in net.ports.iter().enumerate() {
            if port.mbps() > pcie_payload_mbps {
                pfc.queue_toward_nic(net.links[net.uplink[n]].reverse);
            }
        }
        // A PAUSE waits for the frame on the wire: the ports remember their frames.
        for port in net.ports.iter_mut() {
            port.track_frames();
        }
        for sw in net.switches.iter_mut() {
            for o in sw.outs.iter_mut() {
                o.port.track_frames();
            }
        }
        pfc
    }

    /// The links into switch `s`, with what each sender hands its port ahead of a pause.
    fn switch_ingresses(&self, s: usize, nic_lead_bytes: u64) -> Vec<IngressLink> {
        let me = End::Switch(s);
        let from = |other: End| IngressLink {
            delay_ps: 0,
            mbps: 0,
            sender_lead_bytes: match other {
                End::Node(_) => nic_lead_bytes,
                End::Switch(_) => 0,
            },
        };
        self.links
            .iter()
            .filter_map(|l| {
                match (l.a == me, l.b == me) {
                    (true, false) => Some(from(l.b)),
                    (false, true) => Some(from(l.a)),
                    _ => None,
                }
                .map(|i| IngressLink {
                    delay_ps: l.delay_ps,
                    mbps: l.mbps,
                    ..i
                })
            })
            .collect()
    }

    /// Each switch's PFC levels derived from its shared pool, or why its pool cannot hold
    /// them.
    fn shared_pfc_levels(&self, cfg: &Config) -> Vec<Result<PfcLevels, String>> {
        (0..self.switches.len())
            .map(|s| {
                let ingresses = self.switch_ingresses(s, cfg.nic.tx_port_slack_bytes);
                derive_pfc_levels(self.switches[s].buffer_bytes, &ingresses)
            })
            .collect()
    }

    /// Each end's neighbours, in link order: node `i`'s at `i`, switch `s`'s at
    /// `nodes + s` (what the breadth-first searches of [`Plan::hops_to`] walk).
    fn adjacency(&self) -> Vec<Vec<End>> {
        let mut adj = vec![Vec::new(); self.nodes + self.switches.len()];
        for l in &self.links {
            adj[self.end_index(l.a)].push(l.b);
            adj[self.end_index(l.b)].push(l.a);
        }
        adj
    }

    fn end_index(&self, e: End) -> usize {
        match e {
            End::Node(i) => i,
            End::Switch(s) => self.nodes + s,
        }
    }

    /// Hops from each end to node `d`, found by one breadth-first search from `d` over
    /// `adj` ([`Plan::adjacency`]): linear in the links, so routing every destination of a
    /// fabric of thousands of switches takes moments (repeated relaxation over every link
    /// took minutes). Returns the nodes' hops and the switches'; `u32::MAX`: unreachable.
    fn hops_to(&self, adj: &[Vec<End>], d: usize) -> (Vec<u32>, Vec<u32>) {
        let mut hops = vec![u32::MAX; adj.len()];
        let mut queue = std::collections::VecDeque::from([End::Node(d)]);
        hops[d] = 0;
        while let Some(x) = queue.pop_front() {
            // Only switches forward: a path may pass through a switch, not a node.
            if matches!(x, End::Node(i) if i != d) {
                continue;
            }
            let hx = hops[self.end_index(x)];
            for &y in &adj[self.end_index(x)] {
                let hy = &mut hops[self.end_index(y)];
                if *hy == u32::MAX {
                    *hy = hx + 1;
                    queue.push_back(y);
                }
            }
        }
        let sw_h = hops.split_off(self.nodes);
        (hops, sw_h)
    }

    /// Fills every switch's routing table: one search per destination node.
    /// Fills every switch's route toward every node: one breadth-first search per node.
    /// With `ecmp`, also the equal-cost output ports where a switch has several.
    fn route(&self, links: &[LinkDir], switches: &mut [SwitchNode], ecmp: bool) {
        let adj = self.adjacency();
        if ecmp {
            for (s, sw) in switches.iter_mut().enumerate() {
                sw.ecmp = EcmpTable::new(self.nodes, s as u64);
            }
        }
        let mut equal = Vec::new();
        for d in 0..self.nodes {
            let (_, sw_h) = self.hops_to(&adj, d);
            for sw in switches.iter_mut() {
                shortest_next_hops(d, &sw_h, links, sw, &mut equal);
                if let Some(&out) = equal.first() {
                    sw.route[d] = out;
                }
                if ecmp {
                    sw.ecmp.set(d, &equal);
                }
            }
        }
    }

    /// A node that cannot reach another: `(from, to)` (for errors).
    fn unreachable(&self) -> Option<(usize, usize)> {
        let adj = self.adjacency();
        for d in 0..self.nodes {
            let (node_h, _) = self.hops_to(&adj, d);
            if let Some(n) = (0..self.nodes).find(|&n| node_h[n] == u32::MAX) {
                return Some((n, d));
            }
        }
        None
    }
}

/// Switch `sw`'s output ports toward node `d` on a shortest path, given every switch's hops
/// to it (`sw_h`), into `equal` in port order (the first: the lowest-numbered link among
/// equals; none: unreachable).
fn shortest_next_hops(
    d: usize,
    sw_h: &[u32],
    links: &[LinkDir],
    sw: &SwitchNode,
    equal: &mut Vec<u32>,
) {
    equal.clear();
    let mut best = u32::MAX;
    for (o, &link) in sw.out_link.iter().enumerate() {
        let h = match links[link].to {
            End::Node(i) if i == d => 0,
            End::Node(_) => continue,
            End::Switch(t) => sw_h[t],
        };
        if h == u32::MAX || h > best {
            continue;
        }
        if h < best {
            best = h;
            equal.clear();
        }
        equal.push(o as u32);
    }
}

/// The `wan` topology: Local (node 0, the sender in rnic's bandwidth tests) on a short link
/// (`net.link_delay_ns`, or `net.link_km` when set) to the site of the optional WAN accelerator (a switch, so frames are
/// stored and forwarded there as by the paper's emulator and accelerator boxes), then one
/// long link of `net.wan_km` km (5 µs per km one way) to Remote (node 1). Impairments act on
/// the long link only, both ways (`net.impair.direction` picks frames).
fn wan_plan(cfg: &Config, nodes: usize, mbps: u64) -> Result<Plan, ConfigError> {
    use crate::config::NS_PER_KM;
    if nodes != 2 {
        return Err(bad(format!(
            "net.topology = \"wan\" joins Local (the server) and one Remote, but \
             net.clients = {}: set net.clients = 1 (rnic perf's --clients 1)",
            nodes - 1
        )));
    }
    let long_rtt_ns = 2.0 * cfg.net.wan_km * NS_PER_KM;
    let timeout_ns = cfg.net.wan_accel_timeout_ns;
    if cfg.net.wan_accel && timeout_ns > 0.0 && timeout_ns < long_rtt_ns {
        return Err(bad(format!(
            "net.wan_accel_timeout_ns = {timeout_ns} is shorter than the long link's round \
             trip ({long_rtt_ns} ns at net.wan_km = {}): the accelerator would resend every \
             frame before Remote's acknowledgement could return; give at least \
             {long_rtt_ns}, or 0 for the default (twice the round trip plus 100 µs)",
            cfg.net.wan_km
        )));
    }
    Ok(Plan {
        nodes,
        switches: vec![SwitchPlan {
            buffer_bytes: cfg.net.switch_buffer_bytes,
            latency_ps: rnic_sim::ns(cfg.net.switch_latency_ns),
            buffer_field: "the wan topology's switch (the accelerator's site): \
                           net.switch_buffer_bytes"
                .into(),
        }],
        links: vec![
            LinkPlan {
                a: End::Node(0),
                b: End::Switch(0),
                // net.link_km replaces net.link_delay_ns here too (it was read on every
                // other topology and ignored on this one, in silence).
                delay_ps: rnic_sim::ns(cfg.net.effective_link_delay_ns()),
                mbps,
                impair: false,
            },
            LinkPlan {
                a: End::Switch(0),
                b: End::Node(1),
                delay_ps: rnic_sim::ns(cfg.net.wan_km * NS_PER_KM),
                mbps,
                impair: true,
            },
        ],
        impair_uplinks: false,
    })
}

/// The stream the spraying or adaptive switches fork theirs from (switch s:
/// `fork(SPRAY_STREAM).fork(s)`), apart from every other user of the run's seed.
const SPRAY_STREAM: u64 = 0x5_9a4e;

/// The longest link, km (as `net.link_km`).
const MAX_KM: f64 = 1e6;
/// The fastest link, Gb/s (as `eth.gbps`).
const MAX_GBPS: f64 = 10_000.0;

/// Reads a topology file: `[[switch]]` tables (`name`, optional `buffer_bytes` and
/// `latency_ns`) and `[[link]]` tables (`ends = ["node0", "tor"]`, optional `km` or
/// `delay_ns`, `gbps`, `impair`). Nodes are `node0` (the server) to `nodeN`; each has
/// exactly one link (a NIC has one port).
fn read_file(
    path: &str,
    cfg: &Config,
    nodes: usize,
    default_delay_ps: TimePs,
    default_mbps: u64,
) -> Result<Plan, ConfigError> {
    let file = TopologyFile::open(path)?;
    let switches = FileSwitches::read(&file, cfg)?;
    let reader = LinkReader {
        file: &file,
        switches: &switches,
        nodes,
        default_delay_ps,
        default_mbps,
    };
    let mut links = Vec::new();
    let mut node_links = vec![0u32; nodes];
    let mut switch_links = vec![0u32; switches.plans.len()];
    for (i, l) in file.tables("link")?.iter().enumerate() {
        let link = reader.read(i, l)?;
        for e in [link.a, link.b] {
            match e {
                End::Node(n) => node_links[n] += 1,
                End::Switch(s) => switch_links[s] += 1,
            }
        }
        links.push(link);
    }
    if let Some(n) = node_links.iter().position(|&c| c != 1) {
        return Err(file.err(format!(
            "node{n} has {} links; every node has exactly one (a NIC has one port)",
            node_links[n]
        )));
    }
    if let Some(i) = switch_links.iter().position(|&c| c == 0) {
        let name = &switches.names[i];
        return Err(file.err(format!(
            "switch[{i}] (\"{name}\") has no links: no frame could reach it; connect it with a \
             [[link]] (ends = [\"{name}\", ...]) or remove it"
        )));
    }
    Ok(Plan {
        nodes,
        switches: switches.plans,
        links,
        impair_uplinks: false,
    })
}

/// A topology file's table, with the path every error about it names.
struct TopologyFile<'a> {
    path: &'a str,
    table: toml::Table,
}

impl<'a> TopologyFile<'a> {
    /// Reads and parses `path`; refuses a key other than `switch` and `link`.
    fn open(path: &'a str) -> Result<Self, ConfigError> {
        let src = crate::input_file::read_text(std::path::Path::new(path), "a topology file")
            .map_err(|e| match e {
                crate::input_file::InputFileError::Io { source, hint, .. } => bad(format!(
                    "topology file {path}: cannot read it ({source}){hint}; net.topology names \
                     a .toml file"
                )),
                too_large => bad(format!("net.topology: {too_large}")),
            })?;
        let table = crate::config::parse_toml_table(&src, path)?;
        let file = TopologyFile { path, table };
        if let Some(k) = file
            .table
            .keys()
            .find(|k| !matches!(k.as_str(), "switch" | "link"))
        {
            return Err(file.err(format!(
                "unknown key `{k}`; a topology file has [[switch]] and [[link]] tables"
            )));
        }
        Ok(file)
    }

    /// An error about this file.
    fn err(&self, m: String) -> ConfigError {
        bad(format!("topology file {}: {m}", self.path))
    }

    /// The `[[key]]` tables (none when the key is absent).
    fn tables(&self, key: &str) -> Result<Vec<toml::Table>, ConfigError> {
        match self.table.get(key) {
            None => Ok(Vec::new()),
            Some(toml::Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_table()
                        .cloned()
                        .ok_or_else(|| self.err(format!("{key}[{i}] must be a table ([[{key}]])")))
                })
                .collect(),
            Some(_) => Err(self.err(format!("`{key}` must be an array of tables ([[{key}]])"))),
        }
    }

    /// `tb.key`, a number >= 0 (integer or float), if given; `what` names the table.
    fn num(&self, tb: &toml::Table, what: &str, key: &str) -> Result<Option<f64>, ConfigError> {
        match tb.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Some)
                .ok_or_else(|| self.err(format!("{what}.{key} must be a number >= 0"))),
        }
    }

    /// [`Self::num`] at most `max` `unit`: the config's ranges for the same quantities
    /// (net.link_delay_ns, net.link_km, net.switch_latency_ns, eth.gbps,
    /// net.switch_buffer_bytes); beyond them a delay could pass the picosecond clock's range.
    fn bounded(
        &self,
        tb: &toml::Table,
        what: &str,
        key: &str,
        max: f64,
        unit: &str,
    ) -> Result<Option<f64>, ConfigError> {
        match self.num(tb, what, key)? {
            Some(x) if x > max => Err(self.err(format!(
                "{what}.{key} = {x} is beyond {max} {unit}, the most rnic models (the \
                 config's range for the same quantity); give at most {max}"
            ))),
            x => Ok(x),
        }
    }
}

/// A topology file's switches, in file order.
struct FileSwitches {
    names: Vec<String>,
    /// Each switch's index by name: a fabric of thousands of switches and links looks its
    /// names up in constant time.
    index: std::collections::HashMap<String, usize>,
    plans: Vec<SwitchPlan>,
}

impl FileSwitches {
    /// The `[[switch]]` tables, each name given once and none a node's.
    fn read(file: &TopologyFile<'_>, cfg: &Config) -> Result<Self, ConfigError> {
        let mut switches = FileSwitches {
            names: Vec::new(),
            index: Default::default(),
            plans: Vec::new(),
        };
        for (i, sw) in file.tables("switch")?.iter().enumerate() {
            let what = format!("switch[{i}]");
            let name = switches.new_name(file, &what, sw)?;
            switches
                .index
                .insert(name.to_string(), switches.names.len());
            switches.names.push(name.to_string());
            switches
                .plans
                .push(switch_plan(file, cfg, &what, name, sw)?);
        }
        Ok(switches)
    }

    /// The switch's `name`, checked: no unknown key in its table, not empty, not a node's
    /// or an earlier switch's.
    fn new_name<'t>(
        &self,
        file: &TopologyFile<'_>,
        what: &str,
        sw: &'t toml::Table,
    ) -> Result<&'t str, ConfigError> {
        if let Some(k) = sw
            .keys()
            .find(|k| !matches!(k.as_str(), "name" | "buffer_bytes" | "latency_ns"))
        {
            return Err(file.err(format!(
                "{what}: unknown key `{k}` (name, buffer_bytes, latency_ns)"
            )));
        }
        let name = sw
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| file.err(format!("{what} needs a `name`")))?;
        if name.trim().is_empty() {
            return Err(file.err(format!(
                "{what}.name is empty: give the switch a name its links can use in `ends`"
            )));
        }
        if name.starts_with("node") || self.index.contains_key(name) {
            return Err(file.err(format!(
                "{what}: the name \"{name}\" is taken (node names are node0, node1, ...)"
            )));
        }
        Ok(name)
    }
}

/// A switch's buffer and latency: its own, or the config's (`net.switch_buffer_bytes`,
/// `net.switch_latency_ns`); the buffer's field names where its size came from, for the
/// errors about it.
fn switch_plan(
    file: &TopologyFile<'_>,
    cfg: &Config,
    what: &str,
    name: &str,
    sw: &toml::Table,
) -> Result<SwitchPlan, ConfigError> {
    let path = file.path;
    let own_buffer = file.bounded(sw, what, "buffer_bytes", (1u64 << 40) as f64, "bytes")?;
    let buffer_field = match own_buffer {
        Some(_) => format!("topology file {path}: {what} (\"{name}\").buffer_bytes"),
        None => format!(
            "topology file {path}: {what} (\"{name}\", no buffer_bytes of its own): \
             net.switch_buffer_bytes"
        ),
    };
    Ok(SwitchPlan {
        buffer_bytes: own_buffer.map_or(cfg.net.switch_buffer_bytes, |b| b as u64),
        buffer_field,
        latency_ps: rnic_sim::ns(
            file.bounded(sw, what, "latency_ns", MAX_DELAY_NS, "ns")?
                .unwrap_or(cfg.net.switch_latency_ns),
        ),
    })
}

/// What a `[[link]]` table is read against: the file, its switches, the run's nodes, and
/// the delay and rate of a link that gives none (`net.link_*`, `eth.gbps`).
struct LinkReader<'a> {
    file: &'a TopologyFile<'a>,
    switches: &'a FileSwitches,
    nodes: usize,
    default_delay_ps: TimePs,
    default_mbps: u64,
}

impl LinkReader<'_> {
    /// `link[i]`: two different ends, `km` or `delay_ns` (not both), `gbps`, `impair`.
    fn read(&self, i: usize, l: &toml::Table) -> Result<LinkPlan, ConfigError> {
        use crate::config::NS_PER_KM;
        let (file, what) = (self.file, format!("link[{i}]"));
        if let Some(k) = l
            .keys()
            .find(|k| !matches!(k.as_str(), "ends" | "km" | "delay_ns" | "gbps" | "impair"))
        {
            return Err(file.err(format!(
                "{what}: unknown key `{k}` (ends, km, delay_ns, gbps, impair)"
            )));
        }
        // Every entry must be a name: one that is not is refused, not skipped.
        let ends: Option<Vec<&str>> = l
            .get("ends")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let Some([a, b]) = ends.as_deref() else {
            return Err(file.err(format!(
                "{what} needs `ends = [\"A\", \"B\"]`, two node or switch names"
            )));
        };
        let (a_name, (a, b)) = (a, (self.end(&what, a)?, self.end(&what, b)?));
        if a == b {
            return Err(file.err(format!(
                "{what} joins \"{a_name}\" to itself: a link joins two different ends"
            )));
        }
        let km = file.bounded(l, &what, "km", MAX_KM, "km")?;
        let delay_ns = file.bounded(l, &what, "delay_ns", MAX_DELAY_NS, "ns")?;
        let delay_ps = match (km, delay_ns) {
            (Some(_), Some(_)) => {
                return Err(file.err(format!("{what}: give `km` or `delay_ns`, not both")))
            }
            (Some(km), None) => rnic_sim::ns(km * NS_PER_KM),
            (None, Some(ns)) => rnic_sim::ns(ns),
            (None, None) => self.default_delay_ps,
        };
        let gbps = file.bounded(l, &what, "gbps", MAX_GBPS, "Gb/s")?;
        if gbps.is_some_and(|g| g < 0.001) {
            return Err(file.err(format!("{what}.gbps must be at least 0.001")));
        }
        let impair = match l.get("impair") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| file.err(format!("{what}.impair must be true or false")))?,
        };
        Ok(LinkPlan {
            a,
            b,
            delay_ps,
            mbps: gbps.map_or(self.default_mbps, mbps),
            impair,
        })
    }

    /// The end a link names: `nodeI` of this run (written as the node's own name), or a
    /// switch of the file.
    fn end(&self, what: &str, name: &str) -> Result<End, ConfigError> {
        let (file, nodes) = (self.file, self.nodes);
        if let Some((digits, i)) = name
            .strip_prefix("node")
            .and_then(|n| Some((n, n.parse::<usize>().ok()?)))
        {
            // "node00" or "node+1" would be read as node0 or node1: a name that is not the
            // node's own is refused, not taken as another's.
            if digits != i.to_string() {
                return Err(file.err(format!(
                    "{what}.ends: \"{name}\" is not a node name: nodes are node0 (the server), \
                     node1, ..., written without leading zeros or a sign; write \"node{i}\""
                )));
            }
            if i < nodes {
                return Ok(End::Node(i));
            }
            return Err(file.err(format!(
                "{what}: {name} does not exist: this run has node0 (the server) to node{} \
                 (net.clients = {}); raise net.clients (rnic perf's --clients) or use a lower node",
                nodes - 1,
                nodes - 1
            )));
        }
        self.switches
            .index
            .get(name)
            .map(|&s| End::Switch(s))
            .ok_or_else(|| file.err(format!("{what}: no switch or node named \"{name}\"")))
    }
}
