//! One point of a long-distance experiment: an arm (standard RDMA, the large-queue-depth
//! framework, the WAN accelerator, or a given queue depth), a distance, a message size;
//! run as one perftest write-bw flow under the `wan` profile.

use crate::config::{parse_set, Config};
use crate::model::result::{PerfResult, RunStatus};
use crate::model::workload::{PerfSpec, PerfTest};

use super::PROFILE;

/// perftest's default send queue depth for bandwidth tests.
pub const PERFTEST_TX_DEPTH: u32 = 128;
/// The large-queue-depth framework's settings (the paper's ConnectX-6 Dx run): queue depth
/// 16,384 and perftest's tx depth 2048.
pub const APN_QD: u32 = 16_384;
pub const APN_TX_DEPTH: u32 = 2048;

/// What runs at a point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arm {
    /// A standard NIC: the profile's calibrated queue depth, perftest's defaults.
    Standard,
    /// The large-queue-depth framework: QD 16,384 (packets and WQEs), tx depth 2048.
    Apn,
    /// The WAN accelerator on Local's side, standard NIC and perftest defaults.
    Accel,
    /// A queue depth of this many packets (WQEs unlimited at 16,384), tx depth 2048.
    Qd(u32),
}

impl Arm {
    /// Label in tables and CSV.
    pub fn name(self) -> String {
        match self {
            Arm::Standard => "standard".into(),
            Arm::Apn => "apn".into(),
            Arm::Accel => "accel".into(),
            Arm::Qd(n) => format!("qd{n}"),
        }
    }

    fn sets(self) -> Vec<String> {
        match self {
            Arm::Standard => Vec::new(),
            Arm::Apn => vec![
                format!("qp.window_psns={APN_QD}"),
                format!("nic.max_outstanding_wqes_per_qp={APN_QD}"),
            ],
            Arm::Accel => vec!["net.wan_accel=true".into()],
            Arm::Qd(n) => vec![
                format!("qp.window_psns={n}"),
                format!("nic.max_outstanding_wqes_per_qp={APN_QD}"),
            ],
        }
    }

    fn tx_depth(self) -> u32 {
        match self {
            Arm::Standard | Arm::Accel => PERFTEST_TX_DEPTH,
            Arm::Apn | Arm::Qd(_) => APN_TX_DEPTH,
        }
    }
}

/// One point.
#[derive(Debug, Clone, PartialEq)]
pub struct WanPoint {
    pub arm: Arm,
    /// Long link, km.
    pub km: f64,
    /// WRITE size, bytes.
    pub size: u64,
    /// Messages (iteration mode), or the measurement window when `duration_us` is set.
    pub iters: u64,
    /// `Some`: duration mode, a window of this many µs once the rate has settled.
    pub duration_us: Option<f64>,
    /// Further overrides (loss).
    pub sets: Vec<String>,
}

impl WanPoint {
    /// A point in iteration mode.
    pub fn new(arm: Arm, km: f64, size: u64, iters: u64) -> WanPoint {
        WanPoint {
            arm,
            km,
            size,
            iters,
            duration_us: None,
            sets: Vec::new(),
        }
    }

    /// Label in tables and CSV.
    pub fn label(&self) -> String {
        format!("{} {} km {} B", self.arm.name(), self.km, self.size)
    }

    /// The config and the perftest spec of the point.
    pub fn build(&self) -> anyhow::Result<(Config, PerfSpec)> {
        let mut sets = vec![parse_set(&format!("net.wan_km={}", self.km))?];
        for s in self.arm.sets().iter().chain(&self.sets) {
            sets.push(parse_set(s)?);
        }
        if let Some(d) = self.duration_us {
            sets.push(parse_set(&format!("sim.duration_us={d}"))?);
        }
        let cfg = Config::resolve(PROFILE, &sets)?;
        let spec = PerfSpec {
            sizes: vec![self.size],
            iters: self.iters,
            tx_depth: self.arm.tx_depth(),
            duration_us: self.duration_us,
            clients: cfg.net.clients,
            ..PerfSpec::perftest(PerfTest::WriteBw)
        };
        Ok((cfg, spec))
    }
}

/// What a point measured.
#[derive(Debug, Clone)]
pub struct WanResult {
    pub point: WanPoint,
    /// Ended ok with every byte verified at Remote.
    pub ok: bool,
    pub reason: String,
    /// perftest's goodput, Gb/s.
    pub gbps: f64,
    /// Payload bytes verified end to end.
    pub verified_bytes: u64,
    /// Local's own retransmissions (its NIC's requester).
    pub nic_retransmissions: u64,
    /// Frames the accelerator sent again from its buffer.
    pub accel_retransmitted: u64,
    /// Frames the loss element dropped.
    pub lost_frames: u64,
    /// When the accelerator's buffer last became empty, µs (0 without it).
    pub drained_us: f64,
    /// Simulated time, µs, and events processed.
    pub simulated_us: f64,
    pub events: u64,
}

fn stat(r: &PerfResult, key: &str) -> u64 {
    r.stats.get(key).copied().unwrap_or(0)
}

/// Runs one point.
pub fn run_point(p: &WanPoint) -> anyhow::Result<WanResult> {
    let (cfg, spec) = p.build()?;
    let r = crate::model::run_perf(&cfg, &spec)?;
    let ok = r.status == RunStatus::Ok && r.bytes_verified;
    Ok(WanResult {
        point: p.clone(),
        ok,
        reason: if ok {
            String::new()
        } else if r.reason.is_empty() {
            "bytes not verified".into()
        } else {
            r.reason.clone()
        },
        gbps: r.goodput_gbps,
        verified_bytes: r.verified_bytes,
        nic_retransmissions: r.retransmissions,
        accel_retransmitted: stat(&r, "net.wan_accel.retransmitted"),
        lost_frames: stat(&r, "net.elements.dropped"),
        // From the test's start, after connection setup (cm.done_ps; 0 with direct setup).
        drained_us: stat(&r, "net.wan_accel.drained_ps").saturating_sub(stat(&r, "cm.done_ps"))
            as f64
            / 1e6,
        simulated_us: r.simulated_time_us,
        events: r.events,
    })
}

/// Runs `points` on two worker threads (the machine the reproduction is sized for), in
/// the input's order.
pub fn run_points(points: &[WanPoint]) -> anyhow::Result<Vec<WanResult>> {
    crate::repro::run::on_two_workers(points, |p| p.label(), run_point)
}

/// Messages per point at `size` so the run lasts many round trips of the slowest arm but
/// stays short: 32 MB of payload, at least 100 and at most 20,000 messages.
pub fn iters_for(size: u64) -> u64 {
    ((32u64 << 20) / size.max(1)).clamp(100, 20_000)
}

/// Simulation speed over `res`: events per simulated ms.
pub fn events_per_sim_ms(res: &[WanResult]) -> f64 {
    let ev: u64 = res.iter().map(|r| r.events).sum();
    let us: f64 = res.iter().map(|r| r.simulated_us).sum();
    if us > 0.0 {
        ev as f64 / (us / 1000.0)
    } else {
        0.0
    }
}

/// The goodput of `size`-byte WRITEs at path MTU `pmtu` when the wire is the only limit,
/// Gb/s: payload over the wire bytes of their frames (headers, FCS, preamble, gap).
pub fn header_limited_gbps(cfg: &Config, size: u64, pmtu: u64) -> f64 {
    let p = crate::model::ModelParams::from_config(cfg);
    let packets = size.div_ceil(pmtu).max(1);
    let mut wire = 0u64;
    for i in 0..packets {
        let payload = pmtu.min(size - i * pmtu);
        // Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4, RETH 16 on the first packet.
        let frame = 58 + payload + if i == 0 { 16 } else { 0 };
        wire += p.wire_bytes(frame as usize);
    }
    cfg.eth.gbps * size as f64 / wire as f64
}
