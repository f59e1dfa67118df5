//! `[[flow]]` tables of a scenario file: concurrent flows in one simulation.
//!
//! ```toml
//! [set]
//! net.clients = 3            # nodes 0..=3; a flow's server is node 0 unless it names one
//! host.cores = 10            # each flow takes `cores` (default 1) of them on every node
//!
//! [[flow]]
//! name = "ls"                # default flowN
//! test = "write-lat"         # required: write-bw, write-lat, read-bw, ..., atomic-lat
//! size = 64                  # bytes; a list ([64, 4096]) runs one flow per size;
//!                            # {values = [64, 65536], weights = [9, 1]}: each message's
//!                            # size drawn from the values (bandwidth tests; weights
//!                            # default to equal)
//! iters = 1000               # or duration_us (a window after start_us + sim.warmup_us)
//! qp = 1                     # QPs; QP i connects to clients[i % len]
//! server = 0                 # the node that initiates bw tests and answers lat tests
//! clients = [1]              # the other ends of its QPs (default: every other node)
//! tx_depth = 1, mtu = 4096, mrs = 1, cores = 1, start_us = 0.0, procs, atomic_type,
//! window_psns, ack_req_every # QP attributes of the flow (default: the config's qp.*)
//! tenant = 0                 # tenant id, 0..=127 (the tenant field of the flow's QPNs in the NIC)
//! class = "ls"               # "ls" or "bs" (default: ls for latency tests, bs otherwise)
//! ```
//!
//! A size mix draws the k-th message of each QP by a hash of the seed, the QP and k
//! (`rnic_model::size_mix`), so the payload oracle knows every message's size and still
//! checks every byte.

use crate::config::schema::PMTUS;
use crate::config::{Config, ConfigError};
use crate::input::{check_keys, check_misplaced, opt_array, opt_str, opt_u64};
use crate::perf::{AtomicOp, PerfTest, QpProfile, MAX_ITERS, MAX_MRS, MAX_QPS, MAX_TX_DEPTH};
use rnic_model::flow::{FlowClass, FlowSpec, FlowsSpec};
// A flow's `start_us` and `duration_us` are bounded by MAX_SIM_US: a start of 10^15 µs
// overflowed the picosecond clock and the run ended as a model error.
use rnic_model::config::schema::MAX_SIM_US;
use rnic_model::limits::read_beyond_window;
use rnic_model::size_mix::SizeMix;
use toml::{Table, Value};

/// The keys a `[[flow]]` table accepts.
pub const FLOW_KEYS: &[&str] = &[
    "name",
    "test",
    "size",
    "iters",
    "duration_us",
    "start_us",
    "qp",
    "tx_depth",
    "mtu",
    "mrs",
    "cores",
    "procs",
    "server",
    "clients",
    "tenant",
    "class",
    "atomic_type",
    "window_psns",
    "ack_req_every",
];

/// One `[[flow]]` table, read and range-checked; defaults applied by [`resolve`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowOptions {
    pub name: Option<String>,
    pub test: Option<PerfTest>,
    /// Empty: the test's default size.
    pub sizes: Vec<u64>,
    /// `size = {values, weights}`: each message's size drawn from the mix.
    pub size_mix: Option<SizeMix>,
    pub iters: Option<u64>,
    pub duration_us: Option<f64>,
    pub start_us: f64,
    pub qp: u32,
    pub tx_depth: Option<u32>,
    pub mtu: Option<u32>,
    pub mrs: u32,
    pub cores: u32,
    pub procs: Option<u32>,
    pub server: u32,
    pub clients: Option<Vec<u32>>,
    pub tenant: u16,
    pub class: Option<FlowClass>,
    pub atomic: Option<AtomicOp>,
    pub window_psns: Option<u32>,
    pub ack_req_every: Option<u32>,
}

fn range(path: String, v: impl ToString, accepted: &str) -> ConfigError {
    ConfigError::OutOfRange {
        path,
        value: v.to_string(),
        accepted: accepted.to_string(),
        hint: String::new(),
    }
}

fn wrong(path: String, v: &Value, expected: &str) -> ConfigError {
    ConfigError::WrongType {
        path,
        value: v.to_string(),
        expected: expected.to_string(),
        hint: String::new(),
    }
}

/// An optional integer in `min..=max`.
fn int(t: &Table, sec: &str, key: &str, min: u64, max: u64) -> Result<Option<u64>, ConfigError> {
    let v = opt_u64(t, sec, key)?;
    match v {
        Some(x) if x < min || x > max => Err(range(
            format!("{sec}.{key}"),
            x,
            &format!("an integer from {min} to {max}"),
        )),
        _ => Ok(v),
    }
}

/// An optional non-negative number (integer or float).
fn num(t: &Table, sec: &str, key: &str) -> Result<Option<f64>, ConfigError> {
    let path = format!("{sec}.{key}");
    let x = match t.get(key) {
        None => return Ok(None),
        Some(Value::Integer(i)) => *i as f64,
        Some(Value::Float(f)) => *f,
        Some(v) => return Err(wrong(path, v, "a number")),
    };
    if !(x.is_finite() && (0.0..=MAX_SIM_US).contains(&x)) {
        return Err(range(
            path,
            rnic_model::config::schema::shown_number(x),
            "a number of µs from 0 to 3600000000 (an hour of simulated time, as -D)",
        ));
    }
    Ok(Some(x))
}

/// Reads `[[flow]]` table `i`.
pub fn parse_flow(t: &Table, i: usize) -> Result<FlowOptions, ConfigError> {
    let sec = format!("flow[{i}]");
    check_misplaced(t, &sec, FLOW_KEYS)?;
    check_keys(t, &sec, FLOW_KEYS)?;
    let test = flow_test(t, &sec)?;
    let sizes = flow_sizes(t, &sec)?;
    let size_mix = match t.get("size") {
        Some(Value::Table(m)) => Some(parse_mix(m, &format!("{sec}.size"))?),
        _ => None,
    };
    let (iters, duration_us) = flow_length(t, &sec)?;
    let mtu = int(t, &sec, "mtu", 0, u64::MAX)?;
    if let Some(m) = mtu.filter(|m| !PMTUS.contains(m)) {
        return Err(range(
            format!("{sec}.mtu"),
            m,
            "256, 512, 1024, 2048 or 4096",
        ));
    }
    let clients = flow_clients(t, &sec)?;
    let class = match opt_str(t, &sec, "class")?.as_deref() {
        None => None,
        Some("ls") => Some(FlowClass::Ls),
        Some("bs") => Some(FlowClass::Bs),
        Some(s) => return Err(range(format!("{sec}.class"), s, "\"ls\" or \"bs\"")),
    };
    let atomic = match opt_str(t, &sec, "atomic_type")? {
        None => None,
        Some(s) => Some(AtomicOp::from_name(&s).ok_or_else(|| {
            range(
                format!("{sec}.atomic_type"),
                &s,
                "fetch_and_add or cmp_and_swap",
            )
        })?),
    };
    Ok(FlowOptions {
        name: flow_name(t, &sec, i)?,
        test: Some(test),
        sizes,
        size_mix,
        iters,
        duration_us,
        start_us: num(t, &sec, "start_us")?.unwrap_or(0.0),
        qp: int(t, &sec, "qp", 1, MAX_QPS)?.unwrap_or(1) as u32,
        tx_depth: int(t, &sec, "tx_depth", 1, MAX_TX_DEPTH)?.map(|x| x as u32),
        mtu: mtu.map(|m| m as u32),
        mrs: int(t, &sec, "mrs", 1, MAX_MRS)?.unwrap_or(1) as u32,
        cores: int(t, &sec, "cores", 1, 4096)?.unwrap_or(1) as u32,
        procs: int(t, &sec, "procs", 1, crate::perf::MAX_PROCS)?.map(|x| x as u32),
        server: int(t, &sec, "server", 0, u64::from(u32::MAX))?.unwrap_or(0) as u32,
        clients,
        // The tenant field of the tagged QPN (nic/mech/isolation/tenant.rs) has 7 bits.
        tenant: int(
            t,
            &sec,
            "tenant",
            0,
            u64::from(crate::model::nic::mech::isolation::tenant::MAX_TENANT),
        )?
        .unwrap_or(0) as u16,
        class,
        atomic,
        window_psns: int(t, &sec, "window_psns", 1, 1 << 23)?.map(|x| x as u32),
        ack_req_every: int(t, &sec, "ack_req_every", 1, 1 << 23)?.map(|x| x as u32),
    })
}

/// Reads a size mix table `{values = [...], weights = [...]}` at `sec` (e.g. `flow[0].size`).
fn parse_mix(m: &Table, sec: &str) -> Result<SizeMix, ConfigError> {
    check_keys(m, sec, &["values", "weights"])?;
    let ints = |key: &str, max: u64, what: &str| -> Result<Option<Vec<u64>>, ConfigError> {
        let Some(a) = opt_array(m, sec, key)? else {
            return Ok(None);
        };
        a.iter()
            .enumerate()
            .map(|(k, v)| match v {
                Value::Integer(x) if *x >= 1 && (*x as u64) <= max => Ok(*x as u64),
                v => Err(wrong(format!("{sec}.{key}[{k}]"), v, what)),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    };
    let sizes = "a size in bytes from 1 to 2147483648";
    let Some(values) = ints("values", crate::perf::MAX_MSG_BYTES, sizes)? else {
        return Err(ConfigError::Inconsistent(format!(
            "`{sec}.values` is missing: give the sizes to draw from, e.g. \
             {{values = [64, 65536], weights = [9, 1]}}"
        )));
    };
    let weights = ints(
        "weights",
        u64::from(u32::MAX),
        "a weight from 1 to 4294967295",
    )?
    .unwrap_or_else(|| vec![1; values.len()]);
    let mix = SizeMix {
        values,
        weights: weights.into_iter().map(|w| w as u32).collect(),
    };
    mix.check()
        .map_err(|e| ConfigError::Inconsistent(format!("`{sec}`: {e}")))?;
    Ok(mix)
}

/// `flow[i].test`, which every flow names.
fn flow_test(t: &Table, sec: &str) -> Result<PerfTest, ConfigError> {
    const TESTS: &str =
        "write-bw, write-lat, read-bw, read-lat, send-bw, send-lat, atomic-bw, atomic-lat";
    let Some(s) = opt_str(t, sec, "test")? else {
        return Err(ConfigError::Inconsistent(format!(
            "`{sec}.test` is missing: name one of {TESTS}"
        )));
    };
    PerfTest::from_name(&s).ok_or_else(|| range(format!("{sec}.test"), &s, TESTS))
}

/// `flow[i].size`: one size, a list of distinct sizes (each runs as a flow of its own), or
/// a mix table (read by [`parse_mix`]; no fixed sizes then).
fn flow_sizes(t: &Table, sec: &str) -> Result<Vec<u64>, ConfigError> {
    match t.get("size") {
        None | Some(Value::Table(_)) => Ok(Vec::new()),
        Some(Value::Integer(_)) => Ok(vec![
            int(t, sec, "size", 1, crate::perf::MAX_MSG_BYTES)?.unwrap_or_default()
        ]),
        Some(Value::Array(_)) => flow_size_list(t, sec),
        Some(v) => Err(wrong(format!("{sec}.size"), v, "a size or a list of sizes")),
    }
}

/// `flow[i].size` as a list: non-empty, each a size in range, none listed twice.
fn flow_size_list(t: &Table, sec: &str) -> Result<Vec<u64>, ConfigError> {
    let a = opt_array(t, sec, "size")?.unwrap_or_default();
    if a.is_empty() {
        return Err(range(
            format!("{sec}.size"),
            "[]",
            "a size or a list of sizes",
        ));
    }
    let sizes = a
        .iter()
        .enumerate()
        .map(|(k, v)| match v {
            Value::Integer(x) if (1..=crate::perf::MAX_MSG_BYTES as i64).contains(x) => {
                Ok(*x as u64)
            }
            v => Err(wrong(
                format!("{sec}.size[{k}]"),
                v,
                "a size in bytes from 1 to 2147483648",
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Each size of a list runs as a flow of its own, named by its size.
    if let Some(k) = (1..sizes.len()).find(|&k| sizes[..k].contains(&sizes[k])) {
        return Err(range(
            format!("{sec}.size[{k}]"),
            sizes[k],
            "a size not listed before in the same flow (each size of a list runs \
             as a flow of its own)",
        ));
    }
    Ok(sizes)
}

/// `flow[i].iters` or `flow[i].duration_us` (not both; a duration above 0).
fn flow_length(t: &Table, sec: &str) -> Result<(Option<u64>, Option<f64>), ConfigError> {
    let iters = int(t, sec, "iters", crate::perf::MIN_ITERS, MAX_ITERS)?;
    let duration_us = num(t, sec, "duration_us")?;
    if iters.is_some() && duration_us.is_some() {
        return Err(ConfigError::Inconsistent(format!(
            "`{sec}`: iters and duration_us exclude each other; leave out one"
        )));
    }
    if duration_us == Some(0.0) {
        return Err(range(format!("{sec}.duration_us"), 0, "a number > 0"));
    }
    Ok((iters, duration_us))
}

/// `flow[i].clients`: node numbers, each listed once.
fn flow_clients(t: &Table, sec: &str) -> Result<Option<Vec<u32>>, ConfigError> {
    let Some(a) = opt_array(t, sec, "clients")? else {
        return Ok(None);
    };
    let c = a
        .iter()
        .enumerate()
        .map(|(k, v)| match v {
            Value::Integer(x) if *x >= 0 && *x <= u32::MAX as i64 => Ok(*x as u32),
            v => Err(wrong(format!("{sec}.clients[{k}]"), v, "a node number")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // QP i goes to clients[i % len]: a node named twice takes two shares of the QPs, which
    // is a typo far more often than a wish (give `qp` and list each node once).
    if let Some((k, n)) = c.iter().enumerate().find(|(k, n)| c[..*k].contains(n)) {
        return Err(range(
            format!("{sec}.clients[{k}]"),
            n,
            "a node not listed before in the same flow (each client once)",
        ));
    }
    Ok(Some(c))
}

/// `flow[i].name`, if given: not blank, since it labels the flow's row and its JSON.
fn flow_name(t: &Table, sec: &str, i: usize) -> Result<Option<String>, ConfigError> {
    match opt_str(t, sec, "name")? {
        Some(n) if n.trim().is_empty() => Err(ConfigError::Inconsistent(format!(
            "`{sec}.name` is empty: it labels the flow's row and its JSON; give it a \
             name, or leave `name` out for the default flow{i}"
        ))),
        n => Ok(n),
    }
}

/// Reads the `flow` array of a scenario file (`None`: the file has no `[[flow]]`).
pub fn parse_flows(t: &Table) -> Result<Option<Vec<FlowOptions>>, ConfigError> {
    let Some(v) = t.get("flow") else {
        return Ok(None);
    };
    let Value::Array(a) = v else {
        return Err(wrong("flow".into(), v, "[[flow]] tables"));
    };
    if a.is_empty() {
        return Err(ConfigError::Inconsistent(
            "`flow` is empty: add at least one [[flow]] table".into(),
        ));
    }
    a.iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Table(ft) => parse_flow(ft, i),
            v => Err(wrong(format!("flow[{i}]"), v, "a [[flow]] table")),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The flows with their defaults under `cfg`, checked: a list of sizes becomes one flow per
/// size (named `NAME-SIZEB`), names are unique, clients exist, cores fit in `host.cores`.
pub fn resolve(opts: &[FlowOptions], cfg: &Config) -> Result<FlowsSpec, ConfigError> {
    let bad = |m: String| ConfigError::Inconsistent(m);
    let clients = cfg.net.clients.max(1);
    let mut flows: Vec<FlowSpec> = Vec::new();
    let mut origin: Vec<usize> = Vec::new();
    for (i, o) in opts.iter().enumerate() {
        let test = o.test.unwrap_or(PerfTest::WriteBw);
        let sec = format!("flow[{i}]");
        let sizes = match (&o.size_mix, o.sizes.is_empty()) {
            (Some(m), _) => vec![m.max()],
            (None, true) => vec![test.default_size()],
            (None, false) => o.sizes.clone(),
        };
        if test.verb() == crate::perf::Verb::Atomic {
            if let Some(s) = sizes.iter().find(|&&s| s != crate::perf::ATOMIC_SIZE) {
                return Err(bad(format!(
                    "`{sec}.size` = {s}, but atomic operations are always 8 bytes"
                )));
            }
        } else if o.atomic.is_some() {
            return Err(bad(format!(
                "`{sec}.atomic_type` applies to atomic tests only, not {test}"
            )));
        }
        if test.is_latency() && o.tx_depth.is_some() {
            // perftest's latency tests have no -t: one operation is in flight at a time.
            return Err(bad(format!(
                "`{sec}.tx_depth` has no effect on {test}, a latency test, which keeps one \
                 operation in flight; leave it out"
            )));
        }
        check_flow_time(&sec, o, cfg).map_err(bad)?;
        let name = o.name.clone().unwrap_or_else(|| format!("flow{i}"));
        let profile = QpProfile {
            pmtu: o.mtu.unwrap_or(cfg.qp.pmtu),
            window_psns: o.window_psns.unwrap_or(cfg.qp.window_psns),
            ack_req_every: o.ack_req_every.unwrap_or(cfg.qp.ack_req_every),
            tenant: o.tenant,
            ..QpProfile::from_config(cfg)
        };
        check_service(&sec, test, &sizes, o.mtu, &profile, cfg).map_err(bad)?;
        if test.verb() == crate::perf::Verb::Read {
            // A READ's response packets all fall inside its QP's packet window: a longer
            // one could never be posted and the run would stall.
            let beyond = sizes
                .iter()
                .find_map(|&s| read_beyond_window(s, &profile).map(|b| (s, b)));
            if let Some((s, (packets, pmtu))) = beyond {
                let from = if o.window_psns.is_some() {
                    format!("`{sec}.window_psns`")
                } else {
                    "`qp.window_psns` (the flows' default)".to_string()
                };
                return Err(bad(format!(
                    "`{sec}.size` = {s}: a READ of it takes {packets} response packets at a \
                     path MTU of {pmtu} B, more than the packet window {from} = {} lets a QP \
                     have outstanding, so it could never be posted; set `{sec}.window_psns` \
                     to {packets} or more, or a size of {} or less",
                    profile.window_psns,
                    u64::from(profile.window_psns) * pmtu
                )));
            }
        }
        for &size in &sizes {
            flows.push(FlowSpec {
                name: if sizes.len() > 1 {
                    format!("{name}-{size}B")
                } else {
                    name.clone()
                },
                test,
                atomic: o.atomic.unwrap_or_default(),
                size,
                size_mix: o.size_mix.clone(),
                iters: o.iters.unwrap_or(test.default_iters()),
                qps: o.qp,
                tx_depth: o.tx_depth.unwrap_or(test.default_tx_depth()),
                duration_us: o.duration_us,
                start_us: o.start_us,
                server: o.server,
                clients: o
                    .clients
                    .clone()
                    .unwrap_or_else(|| (0..=clients).filter(|&n| n != o.server).collect()),
                cores: o.cores,
                procs: o.procs,
                mrs: o.mrs,
                client_mrs: None,
                qp_profiles: vec![profile],
                tenant: o.tenant,
                class: o.class.unwrap_or(if test.is_latency() {
                    FlowClass::Ls
                } else {
                    FlowClass::Bs
                }),
            });
            origin.push(i);
        }
    }
    for (k, f) in flows.iter().enumerate() {
        if let Some(j) = flows[..k].iter().position(|g| g.name == f.name) {
            return Err(bad(format!(
                "`flow[{}].name` = \"{}\" is also flow[{}]'s name: give every flow its own name",
                origin[k], f.name, origin[j]
            )));
        }
    }
    let spec = FlowsSpec {
        flows,
        clients,
        pcap: None,
    };
    // The model's checks name the flow by its index after size lists were expanded; say
    // which table it came from.
    spec.check(cfg.host.cores.max(1)).map_err(|e| {
        let e = (0..spec.flows.len()).rev().fold(e, |e, k| {
            e.replace(&format!("flow[{k}]"), &format!("flow[{}]", origin[k]))
        });
        bad(e)
    })?;
    Ok(spec)
}

/// A duration flow simulates up to its `start_us`, then its warm-up (a fixed
/// `sim.warmup_us`, else until its rate settles), then its `duration_us` window: together
/// they must fit in the hour a run may simulate, the limit of each alone (`-D` with
/// `sim.warmup_us` is bounded so too). The automatic warm-up gives up in time
/// (`SettleParams::within_hour`), so only the start and a fixed warm-up are checked.
fn check_flow_time(sec: &str, o: &FlowOptions, cfg: &Config) -> Result<(), String> {
    let Some(window_us) = o.duration_us else {
        return Ok(());
    };
    let warmup_us = cfg.sim.warmup_us.unwrap_or(0.0);
    let total_us = o.start_us + warmup_us + window_us;
    if total_us <= MAX_SIM_US {
        return Ok(());
    }
    let (warm_up, fix) = match cfg.sim.warmup_us {
        Some(w) => (
            format!(", sim.warmup_us = {w} of fixed warm-up"),
            ", sim.warmup_us",
        ),
        None => (String::new(), ""),
    };
    let room_us = MAX_SIM_US - o.start_us - warmup_us;
    let most = if room_us > 0.0 {
        format!("with these, `{sec}.duration_us` at most {room_us}")
    } else {
        format!("with these, no window fits after `{sec}.start_us`{fix}")
    };
    Err(format!(
        "`{sec}.start_us` = {}{warm_up} and `{sec}.duration_us` = {} come to {:.6} s of \
         simulated time, more than an hour (the longest a run may simulate): lower \
         `{sec}.start_us`{fix} or `{sec}.duration_us` so that together they stay within \
         3600 s ({most})",
        o.start_us,
        window_us,
        total_us / 1e6,
    ))
}

/// The QP service's rules (`qp.transport`: UC carries SEND and WRITE, UD only SEND of one
/// path MTU at most, as `rnic_model::workload::check_transport` enforces for `rnic perf`),
/// named by the flow's own keys: a flow has no -c, -s or -m.
fn check_service(
    sec: &str,
    test: PerfTest,
    sizes: &[u64],
    mtu: Option<u32>,
    profile: &QpProfile,
    cfg: &Config,
) -> Result<(), String> {
    use rnic_model::config::Transport;
    let largest = sizes.iter().copied().max().unwrap_or(0);
    if rnic_model::workload::check_transport(test, cfg.qp.transport, largest, profile.pmtu).is_ok()
    {
        return Ok(());
    }
    let (name, carries) = match cfg.qp.transport {
        Transport::Ud => ("ud", "send-bw and send-lat"),
        Transport::Uc => ("uc", "send-bw, send-lat, write-bw and write-lat"),
        Transport::Rc => return Ok(()),
    };
    let verb = test.verb();
    let allowed = match cfg.qp.transport {
        Transport::Ud => verb == crate::perf::Verb::Send,
        _ => matches!(verb, crate::perf::Verb::Send | crate::perf::Verb::Write),
    };
    if !allowed {
        return Err(format!(
            "`{sec}.test` = {test} needs an RC QP: qp.transport = \"{name}\" carries {carries}; \
             use one of them or set qp.transport = \"rc\""
        ));
    }
    let pmtu = profile.pmtu;
    let from = match mtu {
        Some(m) => format!("`{sec}.mtu` = {m}"),
        None => format!("qp.pmtu = {pmtu}, the flows' default"),
    };
    Err(format!(
        "`{sec}.size` = {largest}: a UD message is one packet, at most the path MTU ({from}); \
         give a size of {pmtu} or less, or raise `{sec}.mtu` (up to 4096)"
    ))
}

/// Flows named one by one in [`uncaptured_flow_notes`]; beyond this many (a workload's
/// hundreds) one line counts them.
const UNCAPTURED_LISTED: usize = 8;

/// Notes for a captured run: the capture records one node's port (node 0's, the frames
/// `rnic perf`'s server sends and receives, unless `--pcap-node` names another), so a flow
/// between two other nodes is not in it. One line per such flow, naming it and its nodes, so
/// the capture's silence about it is not read as the flow having sent nothing; past
/// [`UNCAPTURED_LISTED`] of them, one line that counts them and names the first.
pub fn uncaptured_flow_notes(spec: &FlowsSpec) -> Result<Vec<String>, crate::UsageError> {
    let Some(node) = spec.pcap.as_ref().map(|c| c.node) else {
        return Ok(Vec::new());
    };
    rnic_model::workload::PcapOut::node_in(node, spec.nodes())?;
    let crosses = |f: &&FlowSpec| {
        u64::from(f.server) == node || f.clients.iter().any(|&c| u64::from(c) == node)
    };
    let away: Vec<&FlowSpec> = spec.flows.iter().filter(|f| !crosses(f)).collect();
    if away.len() > UNCAPTURED_LISTED {
        let first: Vec<&str> = away.iter().take(3).map(|f| f.name.as_str()).collect();
        return Ok(vec![format!(
            "rnic: note: {} of {} flows ({}, ...) do not cross node {node}'s port, the one \
             the capture records: their frames are not in it (--pcap-node N captures another \
             node's port)",
            away.len(),
            spec.flows.len(),
            first.join(", ")
        )]);
    }
    Ok(away.iter().map(|f| uncaptured_flow(f, node)).collect())
}

/// The note for one flow that does not cross `node`'s port.
fn uncaptured_flow(f: &FlowSpec, node: u64) -> String {
    let mut clients = f.clients.clone();
    clients.sort_unstable();
    clients.dedup();
    let list: Vec<String> = clients.iter().map(u32::to_string).collect();
    format!(
        "rnic: note: flow {} (node {} with {} {}) does not cross node {node}'s port, the one \
         the capture records: its frames are not in it",
        f.name,
        f.server,
        rnic_model::words::agree(clients.len() as u64, "node", "nodes"),
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flows(src: &str) -> Result<FlowsSpec, ConfigError> {
        let t: Table = src.parse().unwrap();
        let o = parse_flows(&t)?.expect("flows");
        let cfg = Config::resolve(
            "baseline",
            &[crate::config::Override::new("net.clients", 3)],
        )
        .unwrap();
        resolve(&o, &cfg)
    }

    #[test]
    fn a_good_file_gets_its_defaults() {
        let s = flows(
            "[[flow]]\nname = \"ls\"\ntest = \"write-lat\"\nsize = 64\nclients = [1]\ntenant = 7\n\
             [[flow]]\ntest = \"write-bw\"\nsize = [4096, 65536]\nqp = 2\nmtu = 1024\n\
             duration_us = 50\nstart_us = 10\ncores = 2",
        )
        .unwrap();
        let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["ls", "flow1-4096B", "flow1-65536B"]);
        let ls = &s.flows[0];
        assert_eq!((ls.iters, ls.tx_depth, ls.tenant), (1000, 1, 7));
        assert_eq!((ls.class, ls.clients.clone()), (FlowClass::Ls, vec![1]));
        let bs = &s.flows[2];
        assert_eq!((bs.size, bs.qps, bs.cores), (65536, 2, 2));
        assert_eq!(bs.qp_profiles[0].pmtu, 1024);
        assert_eq!((bs.duration_us, bs.start_us), (Some(50.0), 10.0));
        assert_eq!(
            (bs.class, bs.clients.clone()),
            (FlowClass::Bs, vec![1, 2, 3])
        );
    }

    /// A duration flow's start, fixed warm-up and window run one after another: beyond an
    /// hour together they are refused naming all three, where the run simulated them all.
    #[test]
    fn a_flow_start_warm_up_and_window_past_an_hour_are_refused() {
        let cfg = Config::resolve(
            "baseline",
            &[crate::config::Override::new("sim.warmup_us", 1.8e9)],
        )
        .unwrap();
        let resolve_src = |src: &str| {
            let t: Table = src.parse().unwrap();
            resolve(&parse_flows(&t).unwrap().unwrap(), &cfg)
        };
        let e = resolve_src("[[flow]]\ntest = \"write-bw\"\nstart_us = 1e9\nduration_us = 1e9")
            .unwrap_err()
            .to_string();
        for want in [
            "`flow[0].start_us` = 1000000000, sim.warmup_us = 1800000000 of fixed warm-up",
            "`flow[0].duration_us` = 1000000000 come to 3800.000000 s",
            "`flow[0].duration_us` at most 800000000",
        ] {
            assert!(e.contains(want), "{e}");
        }
        resolve_src("[[flow]]\ntest = \"write-bw\"\nstart_us = 8e8\nduration_us = 1e9")
            .expect("an hour exactly");
        resolve_src("[[flow]]\ntest = \"write-bw\"\nstart_us = 3e9\niters = 10")
            .expect("an iteration flow has no window");
    }

    #[test]
    fn a_size_mix_is_one_flow_sized_by_its_largest_value() {
        let s = flows(
            "[[flow]]\ntest = \"send-bw\"\nsize = {values = [64, 65536], weights = [9, 1]}\n\
             [[flow]]\ntest = \"read-bw\"\nsize = {values = [512, 4096]}",
        )
        .unwrap();
        assert_eq!(s.flows.len(), 2);
        let m = s.flows[0].size_mix.as_ref().expect("a mix");
        assert_eq!((s.flows[0].size, m.weights.clone()), (65536, vec![9, 1]));
        let m = s.flows[1].size_mix.as_ref().expect("a mix");
        assert_eq!((s.flows[1].size, m.weights.clone()), (4096, vec![1, 1]));
    }

    #[test]
    fn bad_files_name_the_flow_and_field() {
        for (src, want) in [
            ("[[flow]]\ntest = \"write-bw\"\nsise = 4", "flow[0].sise"),
            ("[[flow]]\nsize = 4", "flow[0].test"),
            ("[[flow]]\ntest = \"write-bx\"", "flow[0].test"),
            ("[[flow]]\ntest = \"write-bw\"\nqp = 0", "flow[0].qp"),
            ("[[flow]]\ntest = \"write-bw\"\n[[flow]]\ntest = \"read-bw\"\nclients = [4]", "flow[1].clients names node 4"),
            ("[[flow]]\ntest = \"write-bw\"\nserver = -1", "flow[0].server"),
            ("[[flow]]\ntest = \"write-bw\"\nclients = [0]", "flow[0].clients names node 0, the flow's server"),
            ("[[flow]]\ntest = \"write-bw\"\nserver = 4", "flow[0].server = 4"),
            ("[[flow]]\ntest = \"write-bw\"\nserver = 2\nclients = [2]", "flow[0].clients names node 2, the flow's server"),
            ("[[flow]]\ntest = \"write-bw\"\nsize = {dist = \"uniform\", min = 1, max = 9}", "flow[0].size.dist"),
            ("[[flow]]\ntest = \"write-bw\"\nsize = {weights = [1]}", "flow[0].size.values` is missing"),
            ("[[flow]]\ntest = \"write-bw\"\nsize = {values = [64, 0]}", "flow[0].size.values[1]"),
            ("[[flow]]\ntest = \"write-bw\"\nsize = {values = [64, 128], weights = [1]}", "one weight per value"),
            ("[[flow]]\ntest = \"write-bw\"\nsize = {values = [64], weights = [0]}", "flow[0].size.weights[0]"),
            ("[[flow]]\ntest = \"write-lat\"\nsize = {values = [64, 128]}", "a size mix is for write-bw"),
            ("[[flow]]\ntest = \"write-bw\"\nmtu = 1000", "flow[0].mtu"),
            ("[[flow]]\ntest = \"write-bw\"\nclass = \"gold\"", "flow[0].class"),
            ("[[flow]]\ntest = \"write-bw\"\niters = 10\nduration_us = 5", "exclude"),
            ("[[flow]]\ntest = \"write-bw\"\ncores = 11", "host.cores"),
            ("[[flow]]\nname = \"a\"\ntest = \"write-bw\"\n[[flow]]\nname = \"a\"\ntest = \"write-bw\"", "flow[1].name"),
            ("[[flow]]\ntest = \"atomic-bw\"\nsize = 64", "8 bytes"),
            ("[[flow]]\ntest = \"write-bw\"\nclients = [1, 2, 1]", "`flow[0].clients[2]` = 1"),
            (
                "[[flow]]\ntest = \"write-lat\"\ntx_depth = 4",
                "`flow[0].tx_depth` has no effect on write-lat",
            ),
            ("[[flow]]\ntest = \"write-bw\"\nstart_us = 1e15", "flow[0].start_us"),
            ("[[flow]]\ntest = \"read-bw\"\nsize = 65536\nwindow_psns = 4", "flow[0].window_psns` = 4"),
            ("[[flow]]\ntest = \"write-bw\"\n[[flow]]\ntest = \"read-bw\"\nsize = {values = [64, 65536]}\nwindow_psns = 8", "set `flow[1].window_psns` to 16"),
            ("[[flow]]\ntest = \"write-bw\"\nduration_us = 1e300", "flow[0].duration_us"),
            // A start and a window of an hour each passed; the run simulated both.
            (
                "[[flow]]\ntest = \"write-bw\"\n[[flow]]\ntest = \"write-bw\"\nstart_us = 3.6e9\nduration_us = 1",
                "`flow[1].start_us` = 3600000000 and `flow[1].duration_us` = 1 come to",
            ),
            // An empty name left the flow's table row and JSON `name` blank.
            ("[[flow]]\nname = \"\"\ntest = \"write-bw\"", "`flow[0].name` is empty"),
        ] {
            let e = flows(src).unwrap_err().to_string();
            assert!(e.contains(want), "{src:?}: {e}");
        }
    }
}
