//! The `[workload]` table of a scenario: open-loop datacenter traffic, expanded before the
//! model is built into ordinary flows, one finite flow per arrival.
//!
//! ```toml
//! [workload]
//! cdf = "workloads/websearch.cdf"  # flow sizes (path from the working directory)
//! load = 0.4                       # offered load per host, fraction of its link (0 < load <= 1)
//! duration_us = 2000               # arrivals from start_us to start_us + duration_us
//! start_us = 0                     # default 0
//! pattern = "all_to_all"           # random distinct (src, dst) pairs; or "matrix" with
//! # matrix = [[0, 1], [1, 0]]      # row i: node i's weight for each destination
//! test = "write-bw"                # or "send-bw": each flow one message of its drawn size
//! seed = 7                         # default: the scenario's seed
//! incast = { senders = 8, bytes = 65536, every_us = 500, receiver = 0 }  # optional N:1 bursts
//! ```
//!
//! Every host (node 0 ..= net.clients) starts flows as a Poisson process at `load` of its
//! link ([`rnic_model::traffic::arrivals`]); each flow is one WRITE (or SEND) of the drawn
//! size on a QP of its own, on a host core of its own on each of its two nodes (so
//! `host.cores` is raised to the busiest node's flows when it is lower), posted at its
//! arrival time. The flows' bytes are checked end to end as every flow's are.

use std::collections::HashMap;
use std::path::PathBuf;

use rnic_model::config::{Config, ConfigError};
use rnic_model::flow::pack_cores;
use rnic_model::flow_result::FlowsResult;
use rnic_model::net::path::idle_path;
use rnic_model::traffic::arrivals::{poisson_all_to_all, Arrival};
use rnic_model::traffic::cdf::SizeCdf;
use rnic_model::traffic::fct::{self, FlowFct, WorkloadResult};
use rnic_model::traffic::ideal::FctEnd;
use rnic_model::UsageError;
use rnic_sim::{Rng, TimePs};
use toml::{Table, Value};

use crate::flows::FlowOptions;
use crate::input::{check_keys, opt_str, opt_table, opt_u64};
use crate::perf::PerfTest;

/// The keys `[workload]` accepts.
pub const WORKLOAD_KEYS: &[&str] = &[
    "cdf",
    "load",
    "duration_us",
    "start_us",
    "pattern",
    "matrix",
    "test",
    "seed",
    "incast",
];

/// Where flows go.
#[derive(Debug, Clone, PartialEq)]
pub enum Pattern {
    /// Each flow to a destination drawn uniformly among the other hosts.
    AllToAll,
    /// Row i: host i's weight for each destination (0: never); a host whose row is all 0
    /// sends nothing.
    Matrix(Vec<Vec<u64>>),
}

/// N:1 bursts on top of the arrivals: every `every_us`, `senders` hosts each start a flow of
/// `bytes` to one receiver at the same instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Incast {
    pub senders: u32,
    pub bytes: u64,
    pub every_us: f64,
    /// `None`: drawn per burst.
    pub receiver: Option<u64>,
}

/// A `[workload]` table, read and range-checked.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadOptions {
    pub cdf: PathBuf,
    pub load: f64,
    pub duration_us: f64,
    pub start_us: f64,
    pub pattern: Pattern,
    pub test: PerfTest,
    pub seed: Option<u64>,
    pub incast: Option<Incast>,
}

fn range(path: &str, v: impl ToString, accepted: &str) -> ConfigError {
    ConfigError::OutOfRange {
        path: path.to_string(),
        value: v.to_string(),
        accepted: accepted.to_string(),
        hint: String::new(),
    }
}

/// A number (integer or float) at `sec.key`, if given.
fn opt_num(t: &Table, sec: &str, key: &str) -> Result<Option<f64>, ConfigError> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(Value::Float(f)) => Ok(Some(*f)),
        Some(v) => Err(ConfigError::WrongType {
            path: format!("{sec}.{key}"),
            value: v.to_string(),
            expected: "a number".into(),
            hint: String::new(),
        }),
    }
}

/// A number in `lo..=hi` (`lo` excluded when `open_lo`), required.
fn number(
    t: &Table,
    sec: &str,
    key: &str,
    lo: f64,
    hi: f64,
    accepted: &str,
) -> Result<f64, ConfigError> {
    let path = format!("{sec}.{key}");
    let Some(x) = opt_num(t, sec, key)? else {
        return Err(ConfigError::Inconsistent(format!(
            "`{path}` is missing: give {accepted}"
        )));
    };
    if !(x.is_finite() && x > lo && x <= hi) {
        return Err(range(
            &path,
            rnic_model::config::schema::shown_number(x),
            accepted,
        ));
    }
    Ok(x)
}

/// Reads the `[workload]` table, if the scenario has one.
pub fn parse_workload(t: &Table) -> Result<Option<WorkloadOptions>, ConfigError> {
    let Some(w) = opt_table(t, "", "workload")? else {
        return Ok(None);
    };
    let sec = "workload";
    check_keys(&w, sec, WORKLOAD_KEYS)?;
    let Some(cdf) = opt_str(&w, sec, "cdf")? else {
        return Err(ConfigError::Inconsistent(
            "`workload.cdf` is missing: name a flow-size distribution file, e.g. \
             cdf = \"workloads/websearch.cdf\""
                .into(),
        ));
    };
    if cdf.chars().any(char::is_control) {
        return Err(ConfigError::Inconsistent(format!(
            "workload.cdf: {} holds a control character; name a file without one",
            cdf.escape_debug()
        )));
    }
    let max_us = rnic_model::config::schema::MAX_SIM_US;
    let load = number(
        &w,
        sec,
        "load",
        0.0,
        1.0,
        "a fraction of the hosts' link rate, above 0 and at most 1",
    )?;
    let duration_us = number(
        &w,
        sec,
        "duration_us",
        0.0,
        max_us,
        "a number of µs above 0, at most an hour",
    )?;
    let start_us = match opt_num(&w, sec, "start_us")? {
        None => 0.0,
        Some(x) if x.is_finite() && (0.0..=max_us - duration_us).contains(&x) => x,
        Some(x) => {
            return Err(range(
                "workload.start_us",
                x,
                "a number of µs from 0 that with duration_us stays within an hour",
            ))
        }
    };
    let pattern = match (opt_str(&w, sec, "pattern")?.as_deref(), w.get("matrix")) {
        (None | Some("all_to_all"), None) => Pattern::AllToAll,
        (Some("matrix"), Some(m)) => Pattern::Matrix(parse_matrix(m)?),
        (Some("matrix"), None) => {
            return Err(ConfigError::Inconsistent(
                "`workload.pattern` = \"matrix\" needs `workload.matrix`: row i gives node \
                 i's weight for each destination, e.g. [[0, 1], [1, 0]]"
                    .into(),
            ))
        }
        (None | Some("all_to_all"), Some(_)) => {
            return Err(ConfigError::Inconsistent(
                "`workload.matrix` is given, but `workload.pattern` is not \"matrix\": set \
                 pattern = \"matrix\" or leave the matrix out"
                    .into(),
            ))
        }
        (Some(p), _) => return Err(range("workload.pattern", p, "\"all_to_all\" or \"matrix\"")),
    };
    let test = match opt_str(&w, sec, "test")?.as_deref() {
        None | Some("write-bw") => PerfTest::WriteBw,
        Some("send-bw") => PerfTest::SendBw,
        Some(s) => return Err(range("workload.test", s, "write-bw or send-bw")),
    };
    let incast = match opt_table(&w, sec, "incast")? {
        None => None,
        Some(i) => Some(parse_incast(&i)?),
    };
    Ok(Some(WorkloadOptions {
        cdf: PathBuf::from(cdf),
        load,
        duration_us,
        start_us,
        pattern,
        test,
        seed: opt_u64(&w, sec, "seed")?,
        incast,
    }))
}

fn parse_matrix(m: &Value) -> Result<Vec<Vec<u64>>, ConfigError> {
    let bad = |path: String, v: &Value| ConfigError::WrongType {
        path,
        value: v.to_string(),
        expected: "an array of rows, each an array of weights (integers from 0)".into(),
        hint: String::new(),
    };
    let Value::Array(rows) = m else {
        return Err(bad("workload.matrix".into(), m));
    };
    rows.iter()
        .enumerate()
        .map(|(i, r)| match r {
            Value::Array(ws) => ws
                .iter()
                .enumerate()
                .map(|(j, w)| match w {
                    Value::Integer(x) if *x >= 0 => Ok(*x as u64),
                    w => Err(bad(format!("workload.matrix[{i}][{j}]"), w)),
                })
                .collect(),
            r => Err(bad(format!("workload.matrix[{i}]"), r)),
        })
        .collect()
}

fn parse_incast(t: &Table) -> Result<Incast, ConfigError> {
    let sec = "workload.incast";
    check_keys(t, sec, &["senders", "bytes", "every_us", "receiver"])?;
    let need = |key: &str, what: &str| {
        ConfigError::Inconsistent(format!("`{sec}.{key}` is missing: give {what}"))
    };
    let senders = opt_u64(t, sec, "senders")?.ok_or_else(|| need("senders", "the N of N:1"))?;
    if !(1..=4096).contains(&senders) {
        return Err(range(
            "workload.incast.senders",
            senders,
            "an integer from 1 to 4096",
        ));
    }
    let bytes =
        opt_u64(t, sec, "bytes")?.ok_or_else(|| need("bytes", "each sender's flow size"))?;
    if !(1..=crate::perf::MAX_MSG_BYTES).contains(&bytes) {
        return Err(range(
            "workload.incast.bytes",
            bytes,
            "a size in bytes from 1 to 2147483648",
        ));
    }
    let every_us = number(
        t,
        sec,
        "every_us",
        0.0,
        rnic_model::config::schema::MAX_SIM_US,
        "a number of µs above 0",
    )?;
    let receiver = opt_u64(t, sec, "receiver")?;
    Ok(Incast {
        senders: senders as u32,
        bytes,
        every_us,
        receiver,
    })
}

/// The flows a workload expands into, and what its results need.
#[derive(Debug, Clone)]
pub struct Expanded {
    pub opts: WorkloadOptions,
    pub host_link_gbps: f64,
    /// One per flow, in the order of `flows`.
    pub arrivals: Vec<Arrival>,
    pub flows: Vec<FlowOptions>,
}

/// The rate a host's link runs at: its NIC's, or its cable's as the topology plans it (a
/// generated fabric's host tier, a topology file's host links), whichever is slower. Hosts
/// whose links differ are refused: the load is one share of a host's link, the same for
/// every host.
fn host_link_gbps(cfg: &Config, hosts: u32) -> Result<f64, UsageError> {
    let links = rnic_model::net::topology::node_link_gbps(cfg, hosts as usize)
        .map_err(|e| UsageError(e.to_string()))?;
    one_host_link_rate(&cfg.net.topology, &links).map(|g| g.min(cfg.eth.gbps))
}

/// The one rate of the hosts' `links` in topology `topology` (a generated one has one;
/// a file may give several), or a refusal naming two hosts whose links differ.
fn one_host_link_rate(topology: &str, links: &[f64]) -> Result<f64, UsageError> {
    let first = links.first().copied().unwrap_or_default();
    match links.iter().position(|&g| g != first) {
        None => Ok(first),
        Some(n) => Err(UsageError(format!(
            "workload.load is a share of each host's link, but net.topology = \"{topology}\" \
             gives node0 a link of {first} Gb/s and node{n} one of {} Gb/s: give every \
             host's link one rate (gbps) for a workload",
            links[n]
        ))),
    }
}

/// Expands the workload under `cfg` (hosts: nodes 0..=net.clients) into flows named
/// `wl0`, `wl1`, ... (arrivals) and `incastB-S` (burst B, sender S), in start order.
pub fn expand(w: &WorkloadOptions, cfg: &Config) -> anyhow::Result<Expanded> {
    let cdf = SizeCdf::read(&w.cdf).map_err(|e| UsageError(format!("workload.cdf: {e}")))?;
    expand_with_cdf(w, &cdf, cfg)
}

/// [`expand`] with the flow sizes already read (`w.cdf` only names them in the results), so
/// a caller may compile a distribution in instead of reading a file.
pub fn expand_with_cdf(
    w: &WorkloadOptions,
    cdf: &SizeCdf,
    cfg: &Config,
) -> anyhow::Result<Expanded> {
    let hosts = cfg.net.clients + 1;
    if hosts < 2 {
        anyhow::bail!(UsageError(
            "a workload needs at least two hosts: set net.clients >= 1".into()
        ));
    }
    let gbps = host_link_gbps(cfg, hosts)?;
    let rng = Rng::new(w.seed.unwrap_or(cfg.sim.seed)).fork(0x3043_6b6c);
    let span_ps = rnic_sim::us(w.duration_us);
    let limit = flow_limit(hosts);
    let mut arrivals = match &w.pattern {
        Pattern::AllToAll => poisson_all_to_all(cdf, hosts, w.load, gbps, span_ps, &rng, limit),
        Pattern::Matrix(m) => {
            check_matrix(m, hosts)?;
            poisson_matrix(cdf, m, (w.load, gbps), span_ps, &rng, limit)
        }
    };
    refuse_beyond(arrivals.len(), limit, "arrivals")?;
    let mut names: Vec<String> = (0..arrivals.len()).map(|k| format!("wl{k}")).collect();
    if let Some(i) = &w.incast {
        let bursts = incast_bursts(i, hosts, span_ps, &rng, limit - arrivals.len())?;
        let incast_flows = bursts.iter().map(Vec::len).sum::<usize>();
        refuse_beyond(
            arrivals.len() + incast_flows,
            limit,
            "arrivals and incast bursts",
        )?;
        for (b, burst) in bursts.into_iter().enumerate() {
            for (s, a) in burst.into_iter().enumerate() {
                names.push(format!("incast{b}-{s}"));
                arrivals.push(a);
            }
        }
    }
    let mut order: Vec<usize> = (0..arrivals.len()).collect();
    order.sort_by_key(|&k| (arrivals[k].at_ps, k));
    let arrivals: Vec<Arrival> = order.iter().map(|&k| arrivals[k]).collect();
    let flows = order
        .iter()
        .zip(&arrivals)
        .map(|(&k, a)| FlowOptions {
            name: Some(names[k].clone()),
            test: Some(w.test),
            sizes: vec![a.bytes],
            iters: Some(1),
            start_us: w.start_us + a.at_ps as f64 / 1e6,
            qp: 1,
            tx_depth: Some(WORKLOAD_TX_DEPTH),
            mrs: 1,
            cores: 1,
            server: a.src,
            clients: Some(vec![a.dst]),
            ..FlowOptions::default()
        })
        .collect();
    Ok(Expanded {
        opts: w.clone(),
        host_link_gbps: gbps,
        arrivals,
        flows,
    })
}

/// The most flows a workload over `hosts` hosts can start: each flow takes a host core
/// on both its nodes, so beyond 2,048 per host some node would need more than the 4,096
/// cores a host may have ([`fit_cores`] refuses that). The drawing stops there, so a tiny
/// flow size or incast interval is refused at once instead of drawing without bound.
fn flow_limit(hosts: u32) -> usize {
    max_host_cores() / 2 * hosts as usize
}

/// The most cores a host may have: the upper end of `host.cores`'s range, read from its
/// declaration so the two cannot drift apart.
fn max_host_cores() -> usize {
    let (_, max) = rnic_model::config::schema::declared_range("host.cores")
        .expect("host.cores is declared with a range");
    max as usize
}

/// Refuses a workload whose `what` drew more than `limit` flows.
fn refuse_beyond(flows: usize, limit: usize, what: &str) -> Result<(), UsageError> {
    if flows <= limit {
        return Ok(());
    }
    Err(UsageError(format!(
        "the workload's {what} start more than {limit} flows, so some node would need more \
         than the {} cores a host may have (one per flow on each node it uses): \
         lower workload.load or workload.duration_us, raise workload.incast.every_us, or use \
         a distribution of larger flows",
        max_host_cores()
    )))
}

fn check_matrix(m: &[Vec<u64>], hosts: u32) -> Result<(), UsageError> {
    let n = hosts as usize;
    if m.len() != n || m.iter().any(|r| r.len() != n) {
        return Err(UsageError(format!(
            "workload.matrix must be {n} x {n} (one row and one column per host, nodes 0..={}), \
             but it has {} rows",
            n - 1,
            m.len()
        )));
    }
    if let Some(i) = (0..n).find(|&i| m[i][i] != 0) {
        return Err(UsageError(format!(
            "workload.matrix[{i}][{i}] = {}: a host does not send to itself; make it 0",
            m[i][i]
        )));
    }
    if m.iter().all(|r| r.iter().all(|&w| w == 0)) {
        return Err(UsageError(
            "workload.matrix is all 0: no host would send".into(),
        ));
    }
    Ok(())
}

/// Arrivals as [`poisson_all_to_all`] draws them, each host's destinations drawn by its row
/// of weights; a host with an all-0 row sends nothing.
fn poisson_matrix(
    cdf: &SizeCdf,
    m: &[Vec<u64>],
    (load, gbps): (f64, f64),
    span_ps: TimePs,
    rng: &Rng,
    limit: usize,
) -> Vec<Arrival> {
    let mean_gap_ps = cdf.mean_bytes() * 8.0 / (load * gbps * 1e-3);
    let mut flows = Vec::new();
    for (src, row) in m.iter().enumerate() {
        let total: u64 = row.iter().sum();
        if total == 0 {
            continue;
        }
        let mut r = rng.fork(0x6000 + src as u64);
        let mut t = 0.0f64;
        loop {
            t += -(1.0 - r.gen_f64()).ln() * mean_gap_ps;
            if t >= span_ps as f64 || flows.len() > limit {
                break;
            }
            let mut pick = r.gen_below(total);
            let dst = row
                .iter()
                .position(|&w| {
                    let hit = pick < w;
                    pick = pick.saturating_sub(w);
                    hit
                })
                .expect("pick < total");
            flows.push(Arrival {
                at_ps: t as TimePs,
                src: src as u32,
                dst: dst as u32,
                bytes: cdf.draw(&mut r),
            });
        }
    }
    flows.sort_by_key(|f| (f.at_ps, f.src));
    flows
}

/// The incast bursts within `span_ps`: at every_us, 2·every_us, ..., `senders` distinct
/// hosts other than the receiver each start a flow of `bytes` to it. The drawing stops
/// once the bursts hold more than `limit` flows.
fn incast_bursts(
    i: &Incast,
    hosts: u32,
    span_ps: TimePs,
    rng: &Rng,
    limit: usize,
) -> Result<Vec<Vec<Arrival>>, UsageError> {
    if i.senders >= hosts {
        return Err(UsageError(format!(
            "workload.incast.senders = {} needs that many hosts besides the receiver, but \
             there are {hosts} hosts (nodes 0..={}): lower it or raise net.clients",
            i.senders,
            hosts - 1
        )));
    }
    if let Some(r) = i.receiver.filter(|&r| r >= u64::from(hosts)) {
        return Err(UsageError(format!(
            "workload.incast.receiver = {r}, but the hosts are nodes 0..={}",
            hosts - 1
        )));
    }
    let every_ps = rnic_sim::us(i.every_us).max(1);
    let mut r = rng.fork(0x7000);
    let mut bursts = Vec::new();
    let mut at = every_ps;
    let mut flows = 0;
    while at < span_ps && flows <= limit {
        flows += i.senders as usize;
        // Below `hosts` (checked above), so it fits a node number.
        let receiver = i.receiver.unwrap_or_else(|| r.gen_below(u64::from(hosts))) as u32;
        // A partial Fisher-Yates shuffle of the other hosts picks the senders.
        let mut others: Vec<u32> = (0..hosts).filter(|&h| h != receiver).collect();
        for k in 0..i.senders as usize {
            let j = k + r.gen_below((others.len() - k) as u64) as usize;
            others.swap(k, j);
        }
        bursts.push(
            others[..i.senders as usize]
                .iter()
                .map(|&src| Arrival {
                    at_ps: at,
                    src,
                    dst: receiver,
                    bytes: i.bytes,
                })
                .collect(),
        );
        at += every_ps;
    }
    Ok(bursts)
}

/// Raises `cfg.host.cores` to the cores the busiest node needs (each workload flow has one
/// of its own on its two nodes: [`rnic_model::flow::pack_cores`]), refusing more than a host
/// may have.
pub fn fit_cores(cfg: &mut Config, flows: &[FlowOptions]) -> Result<(), UsageError> {
    let nodes = cfg.net.clients + 1;
    let uses: Vec<(u32, Vec<u32>)> = flows
        .iter()
        .map(|f| {
            let mut on = match &f.clients {
                Some(c) => c.clone(),
                None => (0..nodes).filter(|&n| n != f.server).collect(),
            };
            on.push(f.server);
            on.retain(|&n| n < nodes);
            (f.cores, on)
        })
        .collect();
    let (_, need) = pack_cores(&uses, nodes as usize);
    let max_cores = max_host_cores();
    if need > max_cores {
        return Err(UsageError(format!(
            "the workload expands into flows needing {need} host cores on one node (one per \
             flow on each node it uses), more than the {max_cores} a host may have: \
             lower workload.load or workload.duration_us"
        )));
    }
    cfg.host.cores = cfg.host.cores.max(need as u32);
    Ok(())
}

/// The scenario's `[[flow]]`s followed by its workload's flows (if it has one), with
/// `host.cores` raised to hold them all.
pub fn with_workload(
    flows: &[FlowOptions],
    workload: Option<&WorkloadOptions>,
    cfg: &mut Config,
) -> anyhow::Result<(Vec<FlowOptions>, Option<Expanded>)> {
    let Some(w) = workload else {
        return Ok((flows.to_vec(), None));
    };
    let e = expand(w, cfg)?;
    check_carried(&e, cfg)?;
    if e.flows.is_empty() {
        anyhow::bail!(UsageError(format!(
            "the workload starts no flow in workload.duration_us = {} µs at workload.load = \
             {}: lengthen the duration or raise the load",
            w.duration_us, w.load
        )));
    }
    let all: Vec<FlowOptions> = flows.iter().chain(&e.flows).cloned().collect();
    fit_cores(cfg, &all)?;
    Ok((all, Some(e)))
}

/// The send queue depth of every workload flow: each posts its one message.
const WORKLOAD_TX_DEPTH: u32 = 1;

/// Refuses, naming the workload's own keys, a workload its QPs cannot carry: left to the
/// checks of each flow, the refusal named `flow[0].test` or `flow[0].size` and told to raise
/// `flow[0].mtu`, keys of a `[[flow]]` table the file may not have (or `-t`, for a post
/// list or a CQ moderation longer than the flows' send queues).
fn check_carried(e: &Expanded, cfg: &Config) -> Result<(), UsageError> {
    use rnic_model::config::Transport;
    use rnic_model::workload::{ooo_runs, ooo_scheme};
    let test = e.opts.test;
    let per_queue = [
        (cfg.host.post_list, "host.post_list", "-l", "a list of"),
        (cfg.host.cq_mod, "host.cq_mod", "-Q", "a CQ moderation of"),
    ];
    if let Some((n, field, flag, what)) =
        per_queue.into_iter().find(|&(n, ..)| n > WORKLOAD_TX_DEPTH)
    {
        return Err(UsageError(format!(
            "{field} = {n} ({flag}): a workload's flows each post their one message on a send \
             queue of depth {WORKLOAD_TX_DEPTH}, which {what} {n} does not fit; set {field} = \
             {WORKLOAD_TX_DEPTH}"
        )));
    }
    if let Some(scheme) = ooo_scheme(cfg.qp.reliability).filter(|_| !ooo_runs(test)) {
        return Err(UsageError(format!(
            "`workload.test` = {test}, but qp.reliability = \"{scheme}\" sends out-of-order \
             WRITE and READ WQEs only: set workload.test = \"write-bw\", or qp.reliability = \
             \"gbn\""
        )));
    }
    if cfg.qp.transport != Transport::Ud {
        return Ok(());
    }
    if test != PerfTest::SendBw {
        return Err(UsageError(format!(
            "`workload.test` = {test} needs an RC or UC QP: qp.transport = \"ud\" carries \
             send-bw only; set workload.test = \"send-bw\", or qp.transport = \"rc\""
        )));
    }
    let pmtu = u64::from(cfg.qp.pmtu);
    let Some((f, a)) = e
        .flows
        .iter()
        .zip(&e.arrivals)
        .find(|(_, a)| a.bytes > pmtu)
    else {
        return Ok(());
    };
    let name = f.name.as_deref().unwrap_or_default();
    let from = if name.starts_with("incast") {
        "`workload.incast.bytes`"
    } else {
        "a size `workload.cdf` drew"
    };
    Err(UsageError(format!(
        "the workload's flow {name} is {} B ({from}), but a UD message is one packet, at most \
         the path MTU (qp.pmtu = {pmtu}): use qp.transport = \"rc\" or \"uc\", or flow sizes \
         of {pmtu} B or less",
        a.bytes
    )))
}

/// Each workload flow's FCT and slowdown from the run's rows, and the bucket summary.
pub fn summarise(e: &Expanded, cfg: &Config, r: &FlowsResult) -> anyhow::Result<WorkloadResult> {
    let rows: HashMap<&str, &rnic_model::flow_result::FlowResult> =
        r.flows.iter().map(|f| (f.name.as_str(), f)).collect();
    let nodes = cfg.net.clients as usize + 1;
    let mut paths: HashMap<(usize, usize), rnic_model::net::path::IdlePath> = HashMap::new();
    let unreliable = r.unreliable.is_some();
    let end = FctEnd::of(cfg);
    let mut flows = Vec::with_capacity(e.flows.len());
    for (f, a) in e.flows.iter().zip(&e.arrivals) {
        let name = f.name.clone().unwrap_or_default();
        let key = (a.src as usize, a.dst as usize);
        // Borrowed from the cache: a path holds its links' rates, so a copy per flow was a
        // vector's allocation each.
        let path = match paths.entry(key) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(idle_path(cfg, nodes, key.0, key.1)?)
            }
        };
        let ideal_ps = rnic_model::traffic::ideal::ideal_fct_ps(
            cfg,
            path,
            e.opts.test.verb(),
            a.bytes,
            cfg.qp.pmtu,
        );
        let row = rows.get(name.as_str());
        // Over UC and UD a sender completes at transmission, whether or not its message
        // arrives: such a flow completed once its receiver has every byte (what its QPs
        // received, each payload checked as it landed).
        let arrived =
            |r: &rnic_model::flow_result::FlowResult| !unreliable || r.verified_bytes >= a.bytes;
        // Its FCT runs to the moment its ideal does: over RC to its sender's last completion;
        // over UC and UD, and behind the WAN accelerator, whose senders complete before the
        // receiver has the bytes, to its receiver's placement of its last byte.
        let fct = |r: &rnic_model::flow_result::FlowResult| match end {
            FctEnd::Ack => Some(r.measured_us),
            FctEnd::LastByte => r.last_byte_us,
        };
        let completed = row.is_some_and(|r| {
            r.ops_completed >= 1 && r.bytes_verified && arrived(r) && fct(r).is_some()
        });
        let fct_us = row
            .filter(|_| completed)
            .and_then(|r| fct(r))
            .unwrap_or(0.0);
        let ideal_fct_us = ideal_ps as f64 / 1e6;
        flows.push(FlowFct {
            name,
            src: a.src,
            dst: a.dst,
            size_bytes: a.bytes,
            start_us: f.start_us,
            fct_us,
            ideal_fct_us,
            slowdown: if completed {
                fct_us / ideal_fct_us
            } else {
                0.0
            },
            completed,
        });
    }
    Ok(WorkloadResult {
        cdf: e.opts.cdf.display().to_string(),
        load: e.opts.load,
        pattern: match e.opts.pattern {
            Pattern::AllToAll => "all_to_all",
            Pattern::Matrix(_) => "matrix",
        }
        .into(),
        host_link_gbps: e.host_link_gbps,
        flows_started: flows.len() as u64,
        flows_completed: flows.iter().filter(|f| f.completed).count() as u64,
        ideal_fct: fct::ideal_fct_words(end).into(),
        buckets_by: fct::BUCKET_WORDS.into(),
        buckets: fct::buckets(&flows),
        flows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cdf_path() -> String {
        format!(
            "{}/../../workloads/websearch.cdf",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    fn workload(extra: &str) -> Result<Option<WorkloadOptions>, ConfigError> {
        let src = format!(
            "[workload]\ncdf = \"{}\"\nload = 0.5\nduration_us = 1000\n{extra}",
            cdf_path()
        );
        parse_workload(&src.parse::<Table>().unwrap())
    }

    fn cfg(clients: u32) -> Config {
        Config::resolve(
            "baseline",
            &[crate::config::Override::new("net.clients", clients)],
        )
        .unwrap()
    }

    #[test]
    fn a_workload_expands_into_one_finite_flow_per_arrival_in_start_order() {
        let w = workload("seed = 3\nincast = { senders = 3, bytes = 4096, every_us = 400 }")
            .unwrap()
            .unwrap();
        let e = expand(&w, &cfg(7)).unwrap();
        assert_eq!(e.flows.len(), e.arrivals.len());
        assert!(e.flows.len() > 10, "{}", e.flows.len());
        assert!(e.flows.windows(2).all(|p| p[0].start_us <= p[1].start_us));
        for (f, a) in e.flows.iter().zip(&e.arrivals) {
            assert_eq!((f.server, f.clients.clone()), (a.src, Some(vec![a.dst])));
            assert_eq!(
                (f.iters, f.qp, f.sizes.clone()),
                (Some(1), 1, vec![a.bytes])
            );
            assert!(a.src != a.dst && a.dst < 8);
        }
        // Bursts at 400 and 800 µs, three senders each, to one receiver per burst.
        let incast: Vec<&Arrival> = e
            .flows
            .iter()
            .zip(&e.arrivals)
            .filter(|(f, _)| f.name.as_deref().unwrap().starts_with("incast"))
            .map(|(_, a)| a)
            .collect();
        assert_eq!(incast.len(), 6);
        assert!(incast.iter().all(|a| a.bytes == 4096));
        assert!(incast[..3]
            .iter()
            .all(|a| a.at_ps == 400_000_000 && a.dst == incast[0].dst));
        // The same seed gives the same flows.
        assert_eq!(expand(&w, &cfg(7)).unwrap().arrivals, e.arrivals);
    }

    /// More flows than the hosts' cores can hold are refused as they are drawn: 1-byte
    /// flows at full load for 2 ms (about 10^8 of them), a matrix of them, and an incast
    /// burst every picosecond each drew every flow first, gigabytes of them, before
    /// `fit_cores` could refuse (the run aborted on its memory).
    #[test]
    fn a_workload_too_large_for_the_cores_is_refused_while_it_is_drawn() {
        let tiny = std::env::temp_dir().join(format!("rnic-tiny-{}.cdf", std::process::id()));
        std::fs::write(&tiny, "0 0\n1 1\n").unwrap();
        let cdf = SizeCdf::read(&tiny).unwrap();
        let _ = std::fs::remove_file(&tiny);
        let big = |extra: &str| {
            let src = format!("[workload]\ncdf = \"x\"\nload = 1\nduration_us = 2000\n{extra}");
            parse_workload(&src.parse::<Table>().unwrap())
                .unwrap()
                .unwrap()
        };
        let arrivals = expand_with_cdf(&big(""), &cdf, &cfg(1))
            .unwrap_err()
            .to_string();
        assert!(
            arrivals.contains("arrivals start more than 4096 flows"),
            "{arrivals}"
        );
        let matrix = big("pattern = \"matrix\"\nmatrix = [[0, 1], [1, 0]]");
        let matrix = expand_with_cdf(&matrix, &cdf, &cfg(1))
            .unwrap_err()
            .to_string();
        assert!(
            matrix.contains("arrivals start more than 4096 flows"),
            "{matrix}"
        );
        let incast = workload("incast = { senders = 1, bytes = 100, every_us = 1e-9 }")
            .unwrap()
            .unwrap();
        let incast = expand(&incast, &cfg(1)).unwrap_err().to_string();
        assert!(
            incast.contains("incast bursts start more than 4096 flows"),
            "{incast}"
        );
    }

    /// A topology file's host links set the rate the load is a share of: two hosts on
    /// 1 Gb/s links were offered half of the NIC's 100 Gb/s each, 50 times their links.
    /// Links of two rates are refused, naming both.
    #[test]
    fn the_load_is_a_share_of_a_topology_files_host_links() {
        let file = |name: &str, second_gbps: u32| {
            let path =
                std::env::temp_dir().join(format!("rnic-{name}-{}.toml", std::process::id()));
            let text = format!(
                "[[switch]]\nname = \"s\"\n[[link]]\nends = [\"node0\", \"s\"]\ngbps = 1\n\
                 [[link]]\nends = [\"node1\", \"s\"]\ngbps = {second_gbps}\n"
            );
            std::fs::write(&path, text).unwrap();
            path
        };
        let w = workload("").unwrap().unwrap();
        let (same, mixed) = (file("same", 1), file("mixed", 10));
        let mut c = cfg(1);
        c.net.topology = same.to_str().unwrap().into();
        let e = expand(&w, &c);
        c.net.topology = mixed.to_str().unwrap().into();
        let refused = expand(&w, &c).unwrap_err().to_string();
        for f in [same, mixed] {
            let _ = std::fs::remove_file(f);
        }
        assert_eq!(e.unwrap().host_link_gbps, 1.0);
        assert!(
            refused.contains("node0 a link of 1 Gb/s and node1 one of 10 Gb/s"),
            "{refused}"
        );
        assert_eq!(
            host_link_gbps(&cfg(1), 2).unwrap(),
            100.0,
            "a star: the NIC's rate"
        );
    }

    #[test]
    fn a_matrix_sends_only_where_its_weights_are() {
        let w = workload("pattern = \"matrix\"\nmatrix = [[0, 1, 0], [0, 0, 0], [3, 1, 0]]")
            .unwrap()
            .unwrap();
        let e = expand(&w, &cfg(2)).unwrap();
        assert!(!e.arrivals.is_empty());
        assert!(e
            .arrivals
            .iter()
            .all(|a| matches!((a.src, a.dst), (0, 1) | (2, 0) | (2, 1))));
        let bad = workload("pattern = \"matrix\"\nmatrix = [[1, 1], [1, 0]]")
            .unwrap()
            .unwrap();
        let err = expand(&bad, &cfg(1)).unwrap_err().to_string();
        assert!(err.contains("workload.matrix[0][0]"), "{err}");
        let err = expand(&bad, &cfg(2)).unwrap_err().to_string();
        assert!(err.contains("must be 3 x 3"), "{err}");
    }

    #[test]
    fn bad_tables_name_the_field() {
        for (extra, want) in [
            ("load = 1.5", "workload.load"),
            ("load = 0", "workload.load"),
            ("pattern = \"ring\"", "workload.pattern"),
            ("matrix = [[0]]", "`workload.matrix` is given"),
            ("pattern = \"matrix\"", "needs `workload.matrix`"),
            ("test = \"read-bw\"", "workload.test"),
            (
                "incast = { senders = 0, bytes = 1, every_us = 1 }",
                "workload.incast.senders",
            ),
            (
                "incast = { senders = 2, every_us = 1 }",
                "workload.incast.bytes",
            ),
            ("loda = 1", "workload.loda"),
        ] {
            // `load` given twice is a TOML error: replace the default instead.
            let src = format!(
                "[workload]\ncdf = \"x\"\nduration_us = 10\n{}{extra}",
                if extra.starts_with("load") {
                    ""
                } else {
                    "load = 0.5\n"
                }
            );
            let e = parse_workload(&src.parse::<Table>().unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{extra}: {e}");
        }
        let e = parse_workload(
            &"[workload]\nload = 0.5\nduration_us = 1"
                .parse::<Table>()
                .unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("workload.cdf"), "{e}");
    }

    /// A workload its QPs cannot carry is refused naming the workload's keys: the checks of
    /// each flow named `flow[0].test`, `flow[0].size` and `flow[0].mtu` (keys of a
    /// `[[flow]]` table the file had not), or `flow "send-bw"` for the flow's name.
    #[test]
    fn a_workload_its_qps_cannot_carry_is_refused_naming_the_workload() {
        let refusal = |extra: &str, sets: &[(&str, &str)]| {
            let w = workload(extra).unwrap().unwrap();
            let mut overrides = vec![crate::config::Override::new("net.clients", 3)];
            overrides.extend(
                sets.iter()
                    .map(|&(k, v)| crate::config::Override::new(k, v)),
            );
            let mut cfg = Config::resolve("baseline", &overrides).unwrap();
            let e = with_workload(&[], Some(&w), &mut cfg)
                .unwrap_err()
                .to_string();
            assert!(!e.contains("flow["), "{e}");
            e
        };
        let e = refusal("test = \"send-bw\"", &[("qp.reliability", "ornic")]);
        assert!(
            e.starts_with("`workload.test` = send-bw, but qp.reliability = \"ornic\""),
            "{e}"
        );
        let e = refusal("", &[("qp.transport", "ud")]);
        assert!(
            e.starts_with("`workload.test` = write-bw needs an RC or UC QP"),
            "{e}"
        );
        let e = refusal("test = \"send-bw\"", &[("qp.transport", "ud")]);
        assert!(
            e.contains("(a size `workload.cdf` drew), but a UD message is one packet"),
            "{e}"
        );
        assert!(e.contains("(qp.pmtu = 4096)"), "{e}");
        // Within the MTU, UD carries the workload.
        let tiny = std::env::temp_dir().join(format!("rnic-ud-{}.cdf", std::process::id()));
        std::fs::write(&tiny, "0 0\n4096 1\n").unwrap();
        let mut w = workload("test = \"send-bw\"").unwrap().unwrap();
        w.cdf = tiny.clone();
        w.duration_us = 10.0;
        let mut cfg = Config::resolve(
            "baseline",
            &[
                crate::config::Override::new("net.clients", 3),
                crate::config::Override::new("qp.transport", "ud"),
            ],
        )
        .unwrap();
        let carried = with_workload(&[], Some(&w), &mut cfg);
        let _ = std::fs::remove_file(&tiny);
        assert!(carried.is_ok(), "{:?}", carried.err());
    }

    /// An incast receiver beyond the hosts is refused with the number the file gave: one
    /// above 2^32 - 1 was named as 4294967295.
    #[test]
    fn an_incast_receiver_beyond_the_hosts_is_named_as_given() {
        let w = workload(
            "incast = { senders = 2, bytes = 4096, every_us = 50, receiver = 1099511627776 }",
        )
        .unwrap()
        .unwrap();
        let e = expand(&w, &cfg(3)).unwrap_err().to_string();
        assert!(
            e.contains("workload.incast.receiver = 1099511627776, but the hosts are nodes 0..=3"),
            "{e}"
        );
    }
}
