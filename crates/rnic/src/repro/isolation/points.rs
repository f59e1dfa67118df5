//! One point of an isolation experiment: an architecture, an LS tenant or not, BS tenants;
//! built into concurrent flows under the `isolation` profile and run through the model.

use crate::config::{parse_set, Config};
use crate::model::flow::{FlowClass, FlowSpec, FlowsSpec};
use crate::model::result::RunStatus;
use crate::model::workload::{AtomicOp, PerfTest, QpProfile};

use super::{BS_DEPTH, LS_BYTES, LS_CLIENT, LS_ITERS, LS_START_US, LS_TENANT, PROFILE};

/// The TX architecture of a point (`nic.tx_isolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Baseline,
    V1,
    V2,
}

impl Arch {
    /// The config value and label.
    pub fn name(self) -> &'static str {
        match self {
            Arch::Baseline => "baseline",
            Arch::V1 => "v1",
            Arch::V2 => "v2",
        }
    }
}

/// One BS tenant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bs {
    /// Message size, bytes.
    pub size: u64,
    /// Path MTU, bytes.
    pub pmtu: u32,
    /// Messages per QP.
    pub iters: u64,
    /// Packets in flight at most (`None`: the config's): a small window drains the tenant
    /// slowly (its receiver's acknowledgements pace it). The QP then asks for an ACK on
    /// every packet (`ack_req_every` = 1), or the window would close before any ACK is
    /// requested and only retransmission timeouts would move it.
    pub window_psns: Option<u32>,
    /// `Some`: measure goodput over this window once the flow has settled, µs.
    pub duration_us: Option<f64>,
    /// WQEs the tenant keeps posted (perftest's `tx_depth`).
    pub depth: u32,
}

impl Bs {
    /// A BS tenant of `size`-byte messages at the profile's PMTU keeping [`BS_DEPTH`]
    /// posted, with enough messages to meet the LS flow beside it: twice its posted ones
    /// and `LS_ITERS` × 5 µs at line rate beyond them. An LS round trip blocked behind the
    /// whole BS queue ends when that queue has been sent; the next must still meet a full
    /// queue (the first round trip is perftest's warm-up, outside the latency samples),
    /// while the p99 of 40 round trips is their longest, so the tenant need not outlast
    /// every later round trip.
    pub fn beside_ls(size: u64) -> Bs {
        Bs::posting(size, BS_DEPTH)
    }

    /// [`Bs::beside_ls`] keeping `depth` WQEs posted.
    pub fn posting(size: u64, depth: u32) -> Bs {
        let line_bytes_per_us = 12_500.0;
        let cover = (LS_ITERS as f64 * 5.0 * line_bytes_per_us / size as f64).ceil() as u64;
        Bs {
            size,
            pmtu: 1024,
            iters: cover + 2 * u64::from(depth),
            window_psns: None,
            duration_us: None,
            depth,
        }
    }
}

impl Bs {
    /// The tenant with `extra` messages beyond the ones it keeps posted, when `Some` (the
    /// suite's short runs; a tenant that ends early leaves the LS tenant alone, so the
    /// LS tenant's first round trips must still meet it).
    pub fn with_iters_beyond_depth(self, extra: Option<u64>) -> Bs {
        match extra {
            Some(e) => Bs {
                iters: u64::from(self.depth) + e,
                ..self
            },
            None => self,
        }
    }
}

/// What to run at one point.
#[derive(Debug, Clone, PartialEq)]
pub struct PointSpec {
    /// Label in tables and CSV.
    pub label: String,
    pub arch: Arch,
    /// An LS tenant (tenant 9, client node 9) runs beside the BS tenants.
    pub ls: bool,
    /// BS tenants 1..=len, tenant i to client node i.
    pub bs: Vec<Bs>,
    /// Further `--set` overrides (one part of the architecture switched alone).
    pub sets: Vec<String>,
}

impl PointSpec {
    /// The LS tenant alone under `arch`, labelled `{arch}-alone`: the reference of every
    /// latency increase ratio.
    pub fn ls_alone(arch: Arch) -> PointSpec {
        PointSpec {
            label: alone_label(arch),
            arch,
            ls: true,
            bs: Vec::new(),
            sets: Vec::new(),
        }
    }
}

/// The label of [`PointSpec::ls_alone`].
pub fn alone_label(arch: Arch) -> String {
    format!("{}-alone", arch.name())
}

/// What one point measured.
#[derive(Debug, Clone, Default)]
pub struct PointResult {
    pub label: String,
    /// Every flow ended ok with every byte verified.
    pub ok: bool,
    /// Why not, when not.
    pub reason: String,
    /// LS end-to-end latency (perftest's half round trip), µs: p50, p99.
    pub ls_lat_us: (f64, f64),
    /// LS waiting time from ready to first packet leaving the TX engine, ns: p50, p99, max.
    pub ls_wait_ns: (f64, f64, f64),
    /// The longest of each part of it, ns: in the WQE FIFO (ready until handed to the
    /// transport), at the TX engine (handed over until the first packet left).
    pub ls_wait_parts_max_ns: (f64, f64),
    /// LS WQEs from entering the NIC to their packet leaving the TX engine (the latency
    /// the paper's RTL records), ns: p50, p99.
    pub ls_in_nic_ns: (f64, f64),
    /// Goodput of each BS tenant, Gb/s.
    pub bs_gbps: Vec<f64>,
    /// Server NIC counters.
    pub server: crate::model::stats::Registry,
}

impl PointResult {
    /// A server counter (0 when absent).
    pub fn stat(&self, key: &str) -> u64 {
        self.server.get(key).unwrap_or(0)
    }
}

/// The config and flows of a point.
pub fn build(p: &PointSpec) -> anyhow::Result<(Config, FlowsSpec)> {
    let mut sets = vec![parse_set(&format!("nic.tx_isolation={}", p.arch.name()))?];
    for s in &p.sets {
        sets.push(parse_set(s)?);
    }
    let cfg = Config::resolve(PROFILE, &sets)?;
    let base = QpProfile::from_config(&cfg);
    let mut flows = Vec::new();
    if p.ls {
        flows.push(flow(
            "ls",
            PerfTest::WriteLat,
            LS_BYTES,
            LS_ITERS,
            LS_CLIENT,
            LS_TENANT,
            FlowClass::Ls,
            QpProfile {
                tenant: LS_TENANT,
                ..base
            },
            None,
            LS_START_US,
            1,
        ));
    }
    for (i, b) in p.bs.iter().enumerate() {
        let t = i as u16 + 1;
        let prof = QpProfile {
            tenant: t,
            pmtu: b.pmtu,
            window_psns: b.window_psns.unwrap_or(base.window_psns),
            ack_req_every: if b.window_psns.is_some() {
                1
            } else {
                base.ack_req_every
            },
            ..base
        };
        flows.push(flow(
            &format!("bs{t}"),
            PerfTest::WriteBw,
            b.size,
            b.iters,
            u32::from(t),
            t,
            FlowClass::Bs,
            prof,
            b.duration_us,
            0.0,
            b.depth,
        ));
    }
    let spec = FlowsSpec {
        flows,
        clients: cfg.net.clients,
        pcap: None,
    };
    Ok((cfg, spec))
}

#[allow(clippy::too_many_arguments)]
fn flow(
    name: &str,
    test: PerfTest,
    size: u64,
    iters: u64,
    client: u32,
    tenant: u16,
    class: FlowClass,
    prof: QpProfile,
    duration_us: Option<f64>,
    start_us: f64,
    tx_depth: u32,
) -> FlowSpec {
    FlowSpec {
        name: name.to_string(),
        test,
        atomic: AtomicOp::default(),
        size,
        size_mix: None,
        iters,
        qps: 1,
        tx_depth,
        duration_us,
        start_us,
        server: 0,
        clients: vec![client],
        cores: 1,
        procs: None,
        mrs: 1,
        client_mrs: None,
        qp_profiles: vec![prof],
        tenant,
        class,
    }
}

/// Runs one point.
pub fn run_point(p: &PointSpec) -> anyhow::Result<PointResult> {
    let (cfg, spec) = build(p)?;
    let run = crate::model::run_flows(&cfg, &spec, &Default::default())?;
    let r = &run.result;
    let mut out = PointResult {
        label: p.label.clone(),
        ok: r.status == RunStatus::Ok && r.flows.iter().all(|f| f.bytes_verified),
        reason: r.reason.clone(),
        server: run.nodes.first().cloned().unwrap_or_default(),
        ..PointResult::default()
    };
    for f in &r.flows {
        if f.class == "ls" {
            out.ls_lat_us = (f.latency_us.p50, f.latency_us.p99);
        } else {
            out.bs_gbps.push(f.goodput_gbps);
        }
    }
    let ns = |k: &str| out.stat(&format!("nic.iso.ls_wait.{k}")) as f64 / 1e3;
    out.ls_wait_ns = (ns("p50_ps"), ns("p99_ps"), ns("max_ps"));
    out.ls_in_nic_ns = (
        out.stat("nic.iso.ls_in_nic.p50_ps") as f64 / 1e3,
        out.stat("nic.iso.ls_in_nic.p99_ps") as f64 / 1e3,
    );
    out.ls_wait_parts_max_ns = (
        out.stat("nic.iso.ls_wait_fifo.max_ps") as f64 / 1e3,
        out.stat("nic.iso.ls_wait_engine.max_ps") as f64 / 1e3,
    );
    if !out.ok && out.reason.is_empty() {
        out.reason = "a flow's bytes were not verified".into();
    }
    Ok(out)
}

/// Runs `points` on two worker threads (the machine the reproduction is sized for), in
/// order of the input.
pub fn run_points(points: &[PointSpec]) -> anyhow::Result<Vec<PointResult>> {
    crate::repro::run::on_two_workers(points, |p| p.label.clone(), run_point)
}
