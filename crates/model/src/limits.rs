//! What a run may ask for, checked before it starts: the message size, a `-D` window long
//! enough to measure, and a memory footprint within `sim.max_memory_gb`. Each refusal is a
//! [`UsageError`] (exit status 2) that names the flag or field and the fix.
//!
//! Also the wire's bound on a result ([`op_wire_ps`]): the least time one operation's
//! frames occupy the server's port, which every measured rate must respect.

use rnic_sim::{bytes_time_ps_mbps, TimePs};

use super::params::ModelParams;
use crate::config::schema::MAX_SIM_US;
use crate::config::Config;
use crate::words::{counted, short_num};
use crate::workload::{PerfSpec, PerfTest, Verb, MAX_MSG_BYTES};
use crate::UsageError;

/// A `-D` window must hold at least this many messages' wire time, so that counting whole
/// completions measures the rate within 1 %.
pub const MIN_WINDOW_MESSAGES: u64 = 100;

/// Footprint of one connected QP pair besides its rings and buffers: transport state on
/// both nodes, the NIC's per-QP records, the application's. Measured: 3.07 KB per pair at
/// 100,000 and 200,000 QPs (`rnic perf write-bw -s 64 -q 100000 --clients 10 -t 1 -n 5`:
/// 335 MB peak RSS); rounded up.
pub const BYTES_PER_QP_PAIR: u64 = 4096;

/// Fixed footprint of a run (binary, event queue, frame pool, caches), bytes.
pub const BASE_BYTES: u64 = 64 << 20;

/// Ethernet + IPv4 + UDP + BTH + ICRC: the headers of every RoCEv2 packet.
const PACKET_HEADER_BYTES: u64 = 14 + 20 + 8 + 12 + 4;
const RETH_BYTES: u64 = 16;
const AETH_BYTES: u64 = 4;
const ATOMIC_ETH_BYTES: u64 = 28;
const ATOMIC_ACK_ETH_BYTES: u64 = 8;
/// The Datagram Extended Transport Header every UD packet carries (Q_Key, source QP).
const DETH_BYTES: u64 = rnic_wire::deth::HEADER_LEN as u64;

/// Bytes on the wire (frame, padding to the minimum, FCS, preamble and gap) of the packets
/// of a `size`-byte message cut at `pmtu`, with `first_ext` extra header bytes on the first
/// packet (or only), `last_ext` on the last and `middle_ext` on the others.
fn message_wire_bytes(
    p: &ModelParams,
    size: u64,
    pmtu: u64,
    first_ext: u64,
    middle_ext: u64,
    last_ext: u64,
) -> u64 {
    let packets = size.div_ceil(pmtu).max(1);
    let mut total = 0;
    for k in 0..packets {
        let payload = if k + 1 == packets {
            size - k * pmtu
        } else {
            pmtu
        };
        let ext = if k == 0 {
            first_ext.max(if packets == 1 { last_ext } else { 0 })
        } else if k + 1 == packets {
            last_ext
        } else {
            middle_ext
        };
        let frame = PACKET_HEADER_BYTES + ext + payload.div_ceil(4) * 4;
        total += p.wire_bytes(frame as usize);
    }
    total
}

/// The least time one operation of `verb` with `size`-byte messages occupies the busier
/// direction of the server's port (every operation's data crosses it), ps, over the QP
/// service `transport` (UD packets carry a DETH each). A measured rate above
/// `1 / op_wire_ps` would have carried more than the wire can.
pub fn op_wire_ps(
    p: &ModelParams,
    verb: Verb,
    size: u64,
    pmtu: u32,
    transport: crate::config::Transport,
) -> TimePs {
    op_wire_ps_at(p.eth.mbps, p, verb, size, pmtu, transport)
}

/// [`op_wire_ps`] on a port of `mbps` (a server whose link runs at another rate than
/// `eth.gbps`: a topology file's `gbps`, a fabric's `net.fabric.host_link_gbps`).
pub fn op_wire_ps_at(
    mbps: u64,
    p: &ModelParams,
    verb: Verb,
    size: u64,
    pmtu: u32,
    transport: crate::config::Transport,
) -> TimePs {
    let pmtu = u64::from(pmtu.max(1));
    let deth = if transport == crate::config::Transport::Ud {
        DETH_BYTES
    } else {
        0
    };
    let bytes = match verb {
        Verb::Write => message_wire_bytes(p, size, pmtu, RETH_BYTES, 0, 0),
        // UD carries only SENDs, each packet with its DETH.
        Verb::Send => message_wire_bytes(p, size, pmtu, deth, deth, deth),
        // The responses carry the data; AETH on the first and last (or only) response.
        Verb::Read => message_wire_bytes(p, size, pmtu, AETH_BYTES, 0, AETH_BYTES),
        Verb::Atomic => {
            let request = message_wire_bytes(p, 0, pmtu, ATOMIC_ETH_BYTES, 0, 0);
            let response = message_wire_bytes(p, 0, pmtu, AETH_BYTES + ATOMIC_ACK_ETH_BYTES, 0, 0);
            request.max(response)
        }
    };
    bytes_time_ps_mbps(bytes, mbps)
}

/// How far a sender's completions may run ahead of its frames on the server's port, ps: a
/// UC or UD message completes as its last packet is built ("at transmission"), and the TX
/// engine hands frames to the port while at most `nic.tx_port_slack_bytes` wait there, so
/// the slack and the frame handed over may still be ahead of the wire when the CQE is
/// written. RC completes on the answer, after its frames: 0.
pub fn unreliable_lead_ps(p: &ModelParams, cfg: &Config, pmtu: u32) -> TimePs {
    use crate::config::Transport;
    // The longest frame: every RoCEv2 header, a RETH (a UC WRITE's first) or a DETH (every
    // UD packet's), and the path MTU's payload.
    let ext = match cfg.qp.transport {
        Transport::Rc => return 0,
        Transport::Uc => RETH_BYTES,
        Transport::Ud => DETH_BYTES,
    };
    let frame = PACKET_HEADER_BYTES + ext + u64::from(pmtu);
    let bytes = p.nic.tx_port_slack_bytes + p.wire_bytes(frame as usize);
    bytes_time_ps_mbps(bytes, p.eth.mbps)
}

/// The memory budget in bytes: `sim.max_memory_gb`, or half of this machine's memory when
/// it is 0 (8 GB when the machine's memory cannot be read).
pub fn memory_budget_bytes(cfg: &Config) -> u64 {
    if cfg.sim.max_memory_gb > 0.0 {
        return (cfg.sim.max_memory_gb * 1e9) as u64;
    }
    machine_memory_bytes().map_or(8_000_000_000, |m| m / 2)
}

fn machine_memory_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The estimated peak footprint of a run with `size`-byte messages, bytes: the source
/// buffers every node fills and the destination buffers the data lands in (real bytes in
/// sparse 4 KiB pages, 3 % page overhead), the SQ/RQ/CQ rings, per-QP state and a fixed
/// base. Measured against it: a 1 GiB WRITE on one QP peaks at 3.41 GB
/// (`rnic perf write-bw -s 1073741824 -t 1 -n 5`), estimated 3.4 GB.
pub fn memory_estimate_bytes(cfg: &Config, spec: &PerfSpec, size: u64) -> u64 {
    let q = u64::from(spec.qps.max(1));
    let clients = u64::from(spec.clients.max(1));
    let stride = crate::buffers::buffer_stride(size);
    let server_slots = u64::from(crate::buffers::buffer_slots(size, spec.qps));
    // Pair i uses slot i mod slots on the server and on its client.
    let client_slots = clients * server_slots.min(q.div_ceil(clients));
    let lands_on_server = spec.test.is_latency() || spec.test.verb() == Verb::Read;
    let lands_on_clients = spec.test.is_latency() || spec.test.verb() != Verb::Read;
    let dst_slots = if lands_on_server { server_slots } else { 0 }
        + if lands_on_clients { client_slots } else { 0 };
    let buffers = stride * (server_slots + client_slots + dst_slots) / 100 * 103;
    let depth = u64::from(spec.tx_depth.max(2).next_power_of_two());
    // SEND bandwidth tests keep host.rx_depth receives posted.
    let rq_depth = if spec.test.verb() == Verb::Send && !spec.test.is_latency() {
        u64::from(cfg.host.rx_depth.max(2).next_power_of_two())
    } else {
        depth
    };
    let wqe = u64::from(cfg.nic.wqe_bytes.max(64));
    let rings = 2 * q * (depth + rq_depth) * wqe; // SQ and RQ, both ends
    BASE_BYTES
        .saturating_add(buffers)
        .saturating_add(rings)
        .saturating_add(q.saturating_mul(BYTES_PER_QP_PAIR))
        .saturating_add(bw_peak_stamp_bytes(cfg, spec))
}

/// The BW peak's stamps (perftest's `tposted` and `tcompleted`), reserved before the run
/// starts: 8 bytes per post list and per CQE of every pair's `-n` operations
/// (`host::bw_peak`), for a bandwidth test in iteration mode that measures its peak (not
/// `-N`, `-D` or `--procs`); `-b` runs a pair each way. Left out of the estimate, 100,000
/// QPs of 10^8 operations asked for 80 TB at once and the process aborted.
pub fn bw_peak_stamp_bytes(cfg: &Config, spec: &PerfSpec) -> u64 {
    if !cfg.host.bw_peak
        || spec.test.is_latency()
        || spec.procs.is_some()
        || spec.duration_us.is_some()
    {
        return 0;
    }
    let ways = if spec.direction == crate::workload::Direction::Both {
        2
    } else {
        1
    };
    let pairs = u64::from(spec.qps.max(1)) * ways;
    let (posts, cqes) =
        crate::host::bw_peak::stamps_per_pair(spec.iters, cfg.host.post_list, cfg.host.cq_mod);
    pairs
        .saturating_mul(posts.saturating_add(cqes))
        .saturating_mul(8)
}

fn gb(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
}

/// Refuses a run the model cannot measure or hold: a message above the IB limit, a `-D`
/// window shorter than [`MIN_WINDOW_MESSAGES`] messages on the wire, a footprint above
/// the memory budget.
pub fn check_run(cfg: &Config, spec: &PerfSpec) -> Result<(), UsageError> {
    let nodes = spec.clients.max(1) as usize + 1;
    let switches =
        crate::net::topology::switch_buffers(cfg, nodes).map_err(|e| UsageError(e.to_string()))?;
    check_run_on(cfg, spec, &switches)
}

/// [`check_run`] on a topology planned once for every flow of a run (planning a fabric of a
/// thousand hosts for each of its thousands of flows took longer than the run): `switches`
/// are its switches' buffers.
pub fn check_run_on(
    cfg: &Config,
    spec: &PerfSpec,
    switches: &[crate::net::topology::SwitchBuffer],
) -> Result<(), UsageError> {
    let p = ModelParams::from_config(cfg);
    crate::workload::check_ud_duplicates(cfg).map_err(UsageError)?;
    crate::workload::check_reliability_transport(cfg).map_err(UsageError)?;
    // One test, not a named flow of a scenario: "so it cannot run write-lat" (the mode).
    if let Some(why) = crate::workload::reliability_refuses(cfg.qp.reliability, spec.test, "it") {
        return Err(UsageError(why));
    }
    let inline = u64::from(cfg.host.inline_bytes);
    if inline > 0 && u64::from(cfg.nic.wqe_bytes) < 64 + inline {
        return Err(UsageError(format!(
            "host.inline_bytes = {inline} (-I) needs WQE slots of at least {} bytes (the WQE's \
             64 plus the inline data), but nic.wqe_bytes = {}: raise nic.wqe_bytes (-I sets \
             it unless --set gives it)",
            64 + inline,
            cfg.nic.wqe_bytes
        )));
    }
    if spec.direction != crate::workload::Direction::Forward
        && (spec.test.is_latency() || spec.procs.is_some())
    {
        return Err(UsageError(format!(
            "-b/--bidirectional and --reversed apply to bandwidth tests, not {}: a latency \
             test already goes both ways",
            spec.test.name()
        )));
    }
    let lists = !spec.test.is_latency() && spec.procs.is_none();
    if lists && cfg.host.post_list > spec.tx_depth {
        return Err(UsageError(format!(
            "-l/--post_list {} (host.post_list) exceeds the tx depth {} (-t, a [[flow]]'s \
             tx_depth): a list of WQEs must fit in the send queue; raise -t or lower -l",
            cfg.host.post_list, spec.tx_depth
        )));
    }
    if lists && cfg.host.cq_mod > spec.tx_depth {
        return Err(UsageError(format!(
            "-Q/--cq-mod {} (host.cq_mod) exceeds the tx depth {} (-t, a [[flow]]'s tx_depth): \
             the send queue would fill with unsignaled WQEs before one asks for a completion; \
             raise -t or lower -Q",
            cfg.host.cq_mod, spec.tx_depth
        )));
    }
    check_latency_gaps(cfg, spec)?;
    check_fixed_warm_up(cfg, spec)?;
    let rate = cfg.qp.rate_limit_gbps;
    if rate > 0.0 && rate < MIN_RATE_LIMIT_GBPS {
        return Err(UsageError(format!(
            "qp.rate_limit_gbps = {rate} (--rate_limit) is below 0.000001 Gb/s (1 kb/s), the \
             slowest limit rnic models: one frame's tokens would take longer than the \
             simulated clock can count; give 0 (no limit) or 0.000001 or more"
        )));
    }
    for &size in &spec.sizes {
        if size > MAX_MSG_BYTES {
            return Err(UsageError(format!(
                "-s/--size (perf.size) {size}: the largest RDMA message is {MAX_MSG_BYTES} bytes (2 GiB, the InfiniBand limit)"
            )));
        }
        if spec.test.verb() == Verb::Read {
            check_read_window(cfg, spec, size)?;
        }
        check_perf_mrs(cfg, spec, size)?;
        check_switch_buffer(cfg, spec, size, switches)?;
        check_rx_buffer(cfg, spec, size)?;
        check_clock_range(cfg, spec, size, &p)?;
        check_give_up(cfg, spec, size, &p)?;
        if let Some(short) = short_window(cfg, spec, size) {
            // The suggestion in whole µs, rounded up, so that it is itself long enough.
            let need_s = short.need_ps.div_ceil(1_000_000) as f64 / 1e6;
            return Err(UsageError(format!(
                "-D/--duration (perf.duration) {} s is too short to measure {}; use -D \
                 {need_s} or more, or -n",
                short_num(short.window_us / 1e6),
                short.why,
            )));
        }
        check_memory(cfg, spec, size)?;
    }
    Ok(())
}

/// A READ's response packets all fall inside its QP's packet window (`qp.window_psns`), so
/// the transport refuses to post a longer one: without this check the run posted nothing
/// and stalled.
fn check_read_window(cfg: &Config, spec: &PerfSpec, size: u64) -> Result<(), UsageError> {
    let profiles = spec.qp_profiles.len().max(1) as u32;
    for i in 0..profiles {
        let prof = spec.profile(cfg, i);
        if let Some((packets, pmtu)) = read_beyond_window(size, &prof) {
            return Err(UsageError(format!(
                "-s/--size (perf.size) {size}: a READ of it takes {packets} response packets at a path MTU \
                 of {pmtu} B, more than the packet window qp.window_psns = {} lets a QP have \
                 outstanding, so it could never be posted; raise qp.window_psns to {packets} \
                 or more, or use -s {} or less",
                prof.window_psns,
                u64::from(prof.window_psns) * pmtu
            )));
        }
    }
    Ok(())
}

/// The response packets of a `size`-byte READ and the path MTU they are cut at, if they are
/// more than the packet window of a QP of `prof` lets it have outstanding (such a READ can
/// never be posted).
pub fn read_beyond_window(size: u64, prof: &crate::workload::QpProfile) -> Option<(u64, u64)> {
    let pmtu = u64::from(prof.pmtu.max(1));
    let packets = rnic_transport::packets_for(size, prof.pmtu);
    (packets > u64::from(prof.window_psns)).then_some((packets, pmtu))
}

/// The most memory regions a flow of `qps` QPs with `size`-byte messages can register
/// without leaving one over no QP's buffer: its distinct buffer slots (`--mrs` splits the
/// slots into contiguous groups, one region per group; past 256 MiB of buffers per node,
/// QPs share slots).
pub fn max_mrs(cfg: &Config, size: u64, qps: u32) -> u32 {
    let size = if size == 0 { 1 } else { size };
    crate::buffers::buffer_slots(size + crate::buffers::grh_bytes(cfg), qps)
}

/// `--mrs` and `--client-mrs` against the buffer slots of the run's flows: the server's flow
/// of `-q` QPs and, with `-b` or `--reversed`, each client's flow of its share of them (its
/// own buffers; node 0 registers `--client-mrs` regions over them, and with `--mr_per_qp`
/// the client one per QP of its share). Without this, `--mrs 1000000` on one QP registered a
/// million empty regions in silence.
fn check_perf_mrs(cfg: &Config, spec: &PerfSpec, size: u64) -> Result<(), UsageError> {
    let size = spec.test.op_bytes(size);
    let clients = spec.clients.max(1);
    let all = spec.qps.max(1);
    let share = (spec.qps / clients).max(1);
    // Each kind of flow: its QPs and the regions its server registers.
    let mut flows = Vec::new();
    if spec.direction.forward() {
        flows.push((all, spec.mrs));
    }
    if spec.direction.reverse() {
        flows.push((share, if spec.mr_per_qp { share } else { spec.mrs }));
    }
    for (qps, server_mrs) in flows {
        let most = max_mrs(cfg, size, qps);
        let asked = [
            (server_mrs, "--mrs (perf.mrs; --mr_per_qp sets it to -q)"),
            (
                spec.client_mrs.unwrap_or(1),
                "--client-mrs (perf.client_mrs)",
            ),
        ];
        if let Some((mrs, flag)) = asked.into_iter().find(|&(mrs, _)| mrs > most) {
            let share = if qps < all {
                format!(" (each client's flow of -b/--reversed has {qps} of the -q QPs)")
            } else {
                String::new()
            };
            return Err(UsageError(format!(
                "{flag} = {mrs}: the QPs' buffers of {size}-byte messages form {most} \
                 distinct buffer slot(s){share}, split into contiguous groups of one region \
                 each, so {} region(s) would cover no QP's buffer; give at most {most}, or \
                 raise -q",
                mrs - most
            )));
        }
    }
    Ok(())
}

/// A flow's `mrs` against its buffer slots (see `check_perf_mrs`), naming `flow[i].mrs`.
pub fn check_flow_mrs(cfg: &Config, i: usize, f: &crate::flow::FlowSpec) -> Result<(), UsageError> {
    let size = f.test.op_bytes(f.size);
    let most = max_mrs(cfg, size, f.qps.max(1));
    if f.mrs > most {
        return Err(UsageError(format!(
            "flow[{i}].mrs = {}: the flow's {} QP(s) with {size}-byte messages have {most} \
             distinct buffer slot(s), split into contiguous groups of one region each, so {} \
             region(s) would cover no QP's buffer; give mrs at most {most}, or raise the \
             flow's qp",
            f.mrs,
            f.qps,
            f.mrs - most
        )));
    }
    Ok(())
}

/// Bytes of an RDMA CM MAD's frame (UD SEND to QP1: headers, DETH, the 256-byte MAD).
const CM_MAD_FRAME_BYTES: u64 = PACKET_HEADER_BYTES + 8 + 256;

/// The longest frame of a run: its bytes, what it is, and how to make it shorter.
struct LongestFrame {
    bytes: u64,
    what: String,
    or: &'static str,
}

/// The longest frame a run of `size`-byte messages sends: a data packet with its headers,
/// or an RDMA CM MAD when those are longer.
fn longest_frame(cfg: &Config, spec: &PerfSpec, size: u64) -> LongestFrame {
    use crate::config::Transport;
    let payload = size.min(u64::from(spec.max_pmtu(cfg).max(1))).div_ceil(4) * 4;
    let data = PACKET_HEADER_BYTES
        + match spec.test.verb() {
            Verb::Write => RETH_BYTES + payload,
            Verb::Send if cfg.qp.transport == Transport::Ud => 8 + payload,
            Verb::Send => payload,
            Verb::Read => RETH_BYTES.max(AETH_BYTES + payload),
            Verb::Atomic => ATOMIC_ETH_BYTES,
        };
    let cm = crate::host::cm::connects(cfg);
    if cm && CM_MAD_FRAME_BYTES > data {
        LongestFrame {
            bytes: CM_MAD_FRAME_BYTES,
            what: "an RDMA CM MAD".to_string(),
            or: "connect without MADs (--set host.connect=direct)",
        }
    } else {
        LongestFrame {
            bytes: data,
            what: format!(
                "a data packet with its headers, path MTU {} B",
                spec.max_pmtu(cfg)
            ),
            or: "send shorter packets (-m/--mtu (perf.mtu), -s)",
        }
    }
}

/// A switch stores a whole frame before it forwards it, so a buffer smaller than the run's
/// longest frame drops every such frame: the run used to fail with the RDMA CM blaming the
/// impairments, or its WQEs with RETRY_EXC_ERR. Every switch of the topology is held to it:
/// the star's and the wan topology's (`net.switch_buffer_bytes`) and each of a topology
/// file's (its own `buffer_bytes`, else `net.switch_buffer_bytes`); back to back has none.
fn check_switch_buffer(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    switches: &[crate::net::topology::SwitchBuffer],
) -> Result<(), UsageError> {
    let Some(smallest) = switches.iter().min_by_key(|s| s.bytes) else {
        return Ok(());
    };
    let LongestFrame { bytes, what, or } = longest_frame(cfg, spec, size);
    if smallest.bytes < bytes {
        return Err(UsageError(format!(
            "{} = {} cannot hold one frame of this run ({bytes} bytes: {what}): the \
             store-and-forward switch would drop every such frame; raise it to {bytes} or \
             more, or {or}",
            smallest.field, smallest.bytes
        )));
    }
    Ok(())
}

/// A NIC's receive buffer holds every received frame whole until the NIC is done with it,
/// so one smaller than the run's longest frame would drop every such frame.
fn check_rx_buffer(cfg: &Config, spec: &PerfSpec, size: u64) -> Result<(), UsageError> {
    let LongestFrame { bytes, what, or } = longest_frame(cfg, spec, size);
    let have = cfg.nic.rx_buffer_bytes;
    if have < bytes {
        return Err(UsageError(format!(
            "nic.rx_buffer_bytes = {have} cannot hold one frame of this run ({bytes} bytes: \
             {what}): the NIC's receive buffer would drop every such frame; raise it to \
             {bytes} or more (--set nic.rx_buffer_bytes={bytes}), or {or}"
        )));
    }
    Ok(())
}

/// The slowest per-QP rate limit, Gb/s (1 kb/s: a 4 KiB frame's tokens take 34 s). Far
/// slower, they overflowed the clock (10^-12 Gb/s: 3 x 10^19 ps for 4 KiB).
pub const MIN_RATE_LIMIT_GBPS: f64 = 1e-6;

/// A UC or UD ping-pong (write-lat, send-lat) gives an iteration up when no answer has come
/// a local ACK timeout after its post (`-u`, `qp.timeout`; `lat_give_up.rs`), since a lost
/// message is never resent. A timeout shorter than the least round trip gives up every
/// iteration while its messages are still on their way; the late answer then ended the
/// next iteration (a half round trip of 2.6 µs where the wire needs 12.8) or its ping
/// landed over the next one's poll byte (a correct run reported corrupt). Refused, naming
/// the least `-u` that waits a round trip: the messages' wire time both ways and the
/// least propagation and extra delay (`net.impair.extra_delay_ns`) each way.
fn check_give_up(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    p: &ModelParams,
) -> Result<(), UsageError> {
    let ping_pong = matches!(spec.test, PerfTest::WriteLat | PerfTest::SendLat);
    let unreliable = cfg.qp.transport != crate::config::Transport::Rc;
    let Some(give_up_ps) = cfg.qp.ack_timeout_ps().filter(|_| ping_pong && unreliable) else {
        return Ok(());
    };
    if spec.procs.is_some() {
        return Ok(());
    }
    let op_wire = op_wire_ps(
        p,
        spec.test.verb(),
        size,
        spec.max_pmtu(cfg),
        cfg.qp.transport,
    );
    let round_trip = 2 * op_wire + 2 * delayed_one_way_ps(cfg);
    if give_up_ps > round_trip {
        return Ok(());
    }
    let fix = match least_timeout_above(round_trip) {
        Some(t) => format!("use -u {t} or more"),
        None => "shorten the path or the messages".to_string(),
    };
    Err(UsageError(format!(
        "-u/--qp-timeout (qp.timeout) {}: a {} ping-pong over {} gives an iteration up after \
         {:.3} µs without an answer, but one round trip of {size}-byte messages takes at least \
         {:.3} µs (the messages on the wire both ways and the propagation each way): every \
         iteration would be given up while its messages were still on their way, and a late \
         answer taken for the next one's; {fix}",
        cfg.qp.timeout,
        spec.test.name(),
        if cfg.qp.transport == crate::config::Transport::Uc {
            "UC"
        } else {
            "UD"
        },
        give_up_ps as f64 / 1e6,
        round_trip as f64 / 1e6,
    )))
}

/// The least `qp.timeout` exponent whose local ACK timeout is longer than `ps`.
fn least_timeout_above(ps: TimePs) -> Option<u8> {
    (1..=31u8).find(|&t| {
        crate::config::QpConfig::ack_timeout_ns_of(t).is_some_and(|ns| ns * 1e3 > ps as f64)
    })
}

/// An RC run whose local ACK timeout (`-u`, `qp.timeout`) is shorter than the least round
/// trip of one of its packets (`None` otherwise): every packet times out and is resent
/// before its acknowledgement can come (a hunt saw 199 timeouts in a lossless 50-iteration
/// `send-lat -u 1` over 1 km, the latency right). A real NIC does the same, so a note, not
/// a refusal: the packet's wire time (its answer's, for READ and atomics) and the least
/// propagation and extra delay each way.
pub fn short_timeout_note(cfg: &Config, spec: &PerfSpec) -> Option<String> {
    let timeout_ps = cfg.qp.ack_timeout_ps()?;
    // Go-back-N RC only: ORNIC and MP-RDMA time out by `ooo.rtt_ns`, and behind the WAN
    // accelerator a WRITE is acknowledged on the near side of the long link.
    let gbn = cfg.qp.reliability == crate::config::Reliability::Gbn;
    if cfg.qp.transport != crate::config::Transport::Rc || !gbn || cfg.net.wan_accel {
        return None;
    }
    let p = ModelParams::from_config(cfg);
    let pmtu = spec.max_pmtu(cfg);
    let size = spec
        .sizes
        .iter()
        .copied()
        .min()
        .unwrap_or(0)
        .min(u64::from(pmtu));
    let wire = op_wire_ps(&p, spec.test.verb(), size, pmtu, cfg.qp.transport);
    let round_trip = wire + 2 * delayed_one_way_ps(cfg);
    if timeout_ps > round_trip {
        return None;
    }
    let fix = least_timeout_above(round_trip)
        .map_or(String::new(), |t| format!(" (-u {t} or more waits one)"));
    Some(format!(
        "rnic: note: -u/--qp-timeout (qp.timeout) {}: the local ACK timeout, {:.3} µs, is \
         shorter than the least round trip of this run's packets, {:.3} µs: packets time out \
         and are resent before their acknowledgement can come{fix}",
        cfg.qp.timeout,
        timeout_ps as f64 / 1e6,
        round_trip as f64 / 1e6
    ))
}

/// A latency test in iteration mode idles `host.latency_gap_us` after each of its `-n`
/// iterations; the gaps alone must fit in an hour of simulated time (2000 gaps of 10^10
/// µs passed the picosecond clock's range and the run ended as a model error).
fn check_latency_gaps(cfg: &Config, spec: &PerfSpec) -> Result<(), UsageError> {
    let gap_us = cfg.host.latency_gap_us;
    if !spec.test.is_latency() || spec.duration_us.is_some() || gap_us <= 0.0 {
        return Ok(());
    }
    let total_us = gap_us * spec.iters as f64;
    if total_us > MAX_SIM_US {
        return Err(UsageError(format!(
            "host.latency_gap_us = {gap_us} (--latency_gap) after each of -n {} iterations \
             idles {:.0} s of simulated time, more than an hour (-D's limit too): lower the \
             gap or -n (at most {} iterations with this gap)",
            spec.iters,
            total_us / 1e6,
            (MAX_SIM_US / gap_us).floor() as u64
        )));
    }
    Ok(())
}

/// A `-D` run with a fixed warm-up (`sim.warmup_us`) simulates the warm-up and then the
/// window; together they must fit in an hour of simulated time, the limit of each alone and
/// of an iteration-mode run's gaps (an hour of warm-up before a 0.6 ms window passed, and
/// the run simulated the hour, for hours of wall time).
fn check_fixed_warm_up(cfg: &Config, spec: &PerfSpec) -> Result<(), UsageError> {
    let (Some(window_us), Some(warmup_us)) = (spec.duration_us, cfg.sim.warmup_us) else {
        return Ok(());
    };
    let total_us = warmup_us + window_us;
    if total_us > MAX_SIM_US {
        return Err(UsageError(format!(
            "sim.warmup_us = {warmup_us} of fixed warm-up before the -D/--duration \
             (perf.duration) window of {} s comes to {:.6} s of simulated time, more than an \
             hour (the longest a run may simulate): lower sim.warmup_us or -D so that together \
             they stay within 3600 s (with this -D, sim.warmup_us at most {}), or leave \
             sim.warmup_us unset for the run to find its steady state",
            window_us / 1e6,
            total_us / 1e6,
            MAX_SIM_US - window_us
        )));
    }
    Ok(())
}

/// The simulated time a run may reach, ps: half of what the u64 picosecond clock counts
/// (2^63 ps, 106.75 days of its 213.5). A run stops there (`run::progress`), so no step an
/// event takes beyond it can wrap the clock: with every field in its range the longest are
/// hours to days (a 2 GiB message at 1 Mb/s: 4.8 h; a 2^31 ACK timeout: 2.4 h; a 1 GiB
/// message's 262,144 page translations at 10^6 cycles of 1 MHz: 3 days), not 106.
pub const CLOCK_HORIZON_PS: TimePs = 1 << 63;

/// Days of simulated time, for messages.
fn days(ps: u128) -> f64 {
    ps as f64 / 86_400e12
}

/// An iteration-mode run whose least simulated time is beyond [`CLOCK_HORIZON_PS`] is
/// refused: its operations one after another on the server's wire (bandwidth tests: every
/// operation crosses its port; latency tests: every iteration is a round trip with the
/// links' propagation), through the initiating NIC's TX pipeline (`nic.tx_msg_cycles` at
/// `nic.clock_ghz` per message, `nic.tx_pkt_cycles` per packet, the nodes' pipelines side
/// by side) and through the posting cores (`host.post_send_ns` per
/// WQE). These are lower bounds, so a refused run would certainly have overrun the clock
/// (`nic.clock_ghz = 0.001` with `nic.tx_msg_cycles = 1000000` and `-n 100000000`: 10^8 s,
/// where the clock counts 1.8 x 10^7 s; the addition overflowed). `-D` runs are bounded by
/// their hour-long window and warm-up.
fn check_clock_range(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    p: &ModelParams,
) -> Result<(), UsageError> {
    if spec.duration_us.is_some() {
        return Ok(());
    }
    let verb = spec.test.verb();
    let iters = u128::from(spec.iters);
    let op_wire = u128::from(op_wire_ps(
        p,
        verb,
        size,
        spec.max_pmtu(cfg),
        cfg.qp.transport,
    ));
    let tx_msg = u128::from(rnic_sim::cycles(
        u64::from(cfg.nic.tx_msg_cycles),
        cfg.nic.clock_ghz,
    ));
    let post = u128::from(rnic_sim::ns(cfg.host.post_send_ns));
    // Data packets per operation, each through a TX pipeline (`nic.tx_pkt_cycles`) of one
    // of the nodes.
    let packets = if verb == Verb::Atomic {
        1
    } else {
        u128::from(rnic_transport::packets_for(size, spec.max_pmtu(cfg)))
    };
    let tx_pkt = u128::from(rnic_sim::cycles(
        u64::from(cfg.nic.tx_pkt_cycles),
        cfg.nic.clock_ghz,
    ));
    let nodes = u128::from(spec.clients.max(1)) + 1;
    let wire_what = format!("-s {size} on the {} Gb/s port (eth.gbps)", cfg.eth.gbps);
    let (per_op, ops, wire_bound, tx_parallel, post_parallel) = if spec.test.is_latency() {
        let ping_pong = matches!(verb, Verb::Write | Verb::Send);
        let wire = if ping_pong { 2 * op_wire } else { op_wire };
        let round_trip = wire + 2 * u128::from(min_one_way_ps(cfg));
        let parallel = u128::from(spec.procs.unwrap_or(1).max(1));
        let what = format!(
            "a round trip of {wire_what} and the links' propagation (net.link_delay_ns, \
             net.link_km, net.wan_km)"
        );
        (
            "iterations",
            iters,
            (iters * round_trip / parallel, what),
            parallel,
            parallel,
        )
    } else {
        let ops = iters * u128::from(spec.qps.max(1));
        let initiators = if spec.direction.forward() {
            1
        } else {
            u128::from(spec.clients.max(1))
        };
        let cores = (u128::from(cfg.host.cores.max(1)) * nodes).min(u128::from(spec.qps.max(1)));
        (
            "operations",
            ops,
            (ops * op_wire, wire_what),
            initiators,
            cores,
        )
    };
    let bounds = [
        wire_bound,
        (
            ops * tx_msg / tx_parallel,
            format!(
                "nic.tx_msg_cycles = {} at nic.clock_ghz = {} per message",
                cfg.nic.tx_msg_cycles, cfg.nic.clock_ghz
            ),
        ),
        (
            ops * packets * tx_pkt / nodes,
            format!(
                "nic.tx_pkt_cycles = {} at nic.clock_ghz = {} for each of {packets} packet(s)",
                cfg.nic.tx_pkt_cycles, cfg.nic.clock_ghz
            ),
        ),
        (
            ops * post / post_parallel,
            format!(
                "host.post_send_ns = {} per WQE on the posting cores",
                cfg.host.post_send_ns
            ),
        ),
    ];
    let (least, what) = bounds
        .into_iter()
        .max_by_key(|b| b.0)
        .expect("the bounds are a non-empty array");
    if least > u128::from(CLOCK_HORIZON_PS) {
        return Err(UsageError(format!(
            "this run needs at least {:.0} days of simulated time ({ops} {per_op}, bound \
             by {what}), beyond the {:.2} days the picosecond clock lets a run reach: lower \
             -n or -q, or bring that setting nearer to real hardware",
            days(least),
            days(u128::from(CLOCK_HORIZON_PS))
        )));
    }
    Ok(())
}

/// The least one-way propagation between the server and a client, ps: a star's two links,
/// back to back's one, the WAN topology's long link; 0 for a topology file (its paths are
/// known only once it is built).
fn min_one_way_ps(cfg: &Config) -> TimePs {
    let link_ps = (cfg.net.effective_link_delay_ns() * 1e3) as TimePs;
    match cfg.net.topology.as_str() {
        "star" => 2 * link_ps,
        "back_to_back" => link_ps,
        "wan" => (cfg.net.wan_km * crate::config::NS_PER_KM * 1e3) as TimePs,
        _ => 0,
    }
}

/// [`min_one_way_ps`] with the impairment's extra delay (`net.impair.extra_delay_ns`): the
/// least one-way time a timeout must outlast (the `-D` bounds leave that delay out).
fn delayed_one_way_ps(cfg: &Config) -> TimePs {
    min_one_way_ps(cfg) + (cfg.net.impair.extra_delay_ns * 1e3) as TimePs
}

/// A `-D` window (a flow's `duration_us`) too short to measure: its length, the least that
/// measures, and why, in words that fit after "too short to measure", so that `rnic perf`
/// and a flows scenario can each name their own field.
pub struct ShortWindow {
    pub window_us: f64,
    pub need_ps: TimePs,
    pub why: String,
}

/// Whether `spec`'s `-D` window is too short to measure `size`-byte messages: a bandwidth
/// test's must hold [`MIN_WINDOW_MESSAGES`] messages on the wire, a latency test's as many
/// iterations, each a round trip: at least both messages' wire time (WRITE/SEND ping-pong;
/// READ and atomics: the longer direction once) and the propagation each way. `--procs`
/// processes run theirs side by side.
pub fn short_window(cfg: &Config, spec: &PerfSpec, size: u64) -> Option<ShortWindow> {
    let window_us = spec.duration_us?;
    let p = ModelParams::from_config(cfg);
    let port_mbps = server_port_mbps(cfg, spec, &p);
    let port_gbps = port_mbps as f64 / 1000.0;
    let op_wire = op_wire_ps_at(
        port_mbps,
        &p,
        spec.test.verb(),
        size,
        spec.max_pmtu(cfg),
        cfg.qp.transport,
    );
    if !spec.test.is_latency() {
        return short_bandwidth_window(cfg, spec, size, window_us, (op_wire, port_gbps));
    }
    let ping_pong = matches!(spec.test.verb(), Verb::Write | Verb::Send);
    let wire = if ping_pong { 2 * op_wire } else { op_wire };
    let round_trip = wire + 2 * min_one_way_ps(cfg);
    let parallel = u64::from(spec.procs.unwrap_or(1).max(1));
    let need_ps = round_trip.saturating_mul(MIN_WINDOW_MESSAGES) / parallel;
    let side_by_side = if parallel > 1 {
        format!(" (--procs {parallel} run theirs side by side)")
    } else {
        String::new()
    };
    (rnic_sim::us(window_us) < need_ps).then(|| ShortWindow {
        window_us,
        need_ps,
        why: format!(
            "{} with {size}-byte messages: one iteration is a round trip of at least {:.3} µs \
             (the messages on the {} Gb/s wire and the propagation each way), and a window \
             must hold at least {MIN_WINDOW_MESSAGES} of them{side_by_side} for whole \
             iterations to give the rate within 1 %",
            spec.test.name(),
            round_trip as f64 / 1e6,
            port_gbps
        ),
    })
}

/// The rate of the server's port (node 0's), Mb/s: its link's where the link sets one (a
/// topology file's `gbps`, a fabric's host tier), as the run judges the wire by it; else
/// `eth.gbps` (until 2026-12-02 always `eth.gbps`, so a fabric of 0.5 Gb/s host links was
/// told a 100 Gb/s port's message time).
fn server_port_mbps(cfg: &Config, spec: &PerfSpec, p: &ModelParams) -> u64 {
    crate::net::topology::node_link_mbps(cfg, spec.clients.max(1) as usize + 1)
        .ok()
        .and_then(|links| links.first().copied().flatten())
        .unwrap_or(p.eth.mbps)
}

/// A bandwidth test's `-D` window must hold [`MIN_WINDOW_MESSAGES`] completions: their
/// wire time, and as many round trips' worth of the operations in flight (each QP keeps at
/// most `-t` of them, READs and atomics at most `-o`, each completing a round trip after its
/// post, over RC), and of the packets the packet window lets be unacknowledged (see
/// [`window_bound_ps`]; an out-of-order QP, ORNIC's or MP-RDMA's, one WQE): on a long path
/// with a shallow queue the round trip, not the wire, bounds the rate, and a window shorter
/// than it can hold no completion at all.
fn short_bandwidth_window(
    cfg: &Config,
    spec: &PerfSpec,
    size: u64,
    window_us: f64,
    (op_wire, port_gbps): (TimePs, f64),
) -> Option<ShortWindow> {
    let on_wire = op_wire.saturating_mul(MIN_WINDOW_MESSAGES);
    // The WAN accelerator answers go-back-N WRITE packets itself, on the near side of the
    // long link (`net/wan_accel`; an out-of-order QP's WRITEs pass it unanswered): their
    // ACKs come back after a round trip of at least nothing.
    let accelerated = cfg.net.wan_accel
        && spec.test.verb() == Verb::Write
        && cfg.qp.reliability == crate::config::Reliability::Gbn;
    let one_way = if accelerated { 0 } else { min_one_way_ps(cfg) };
    let round_trip = op_wire + 2 * one_way;
    // An out-of-order QP (ORNIC, MP-RDMA) sends one WQE at a time.
    let out_of_order = cfg.qp.reliability != crate::config::Reliability::Gbn;
    let per_qp = match spec.test.verb() {
        _ if out_of_order => 1,
        Verb::Read | Verb::Atomic => spec.tx_depth.min(u32::from(cfg.qp.max_rd_atomic)),
        Verb::Write | Verb::Send => spec.tx_depth,
    };
    let in_flight = u64::from(spec.qps) * u64::from(per_qp);
    // UC and UD complete a SEND or WRITE when it leaves: no round trip.
    let acknowledged = cfg.qp.transport == crate::config::Transport::Rc;
    let (by_round_trips, by_window) = if acknowledged {
        (
            round_trip.saturating_mul(MIN_WINDOW_MESSAGES) / in_flight.max(1),
            window_bound_ps(cfg, spec, size, one_way),
        )
    } else {
        (0, 0)
    };
    let need_ps = on_wire.max(by_round_trips).max(by_window);
    if rnic_sim::us(window_us) >= need_ps {
        return None;
    }
    let why = if need_ps == on_wire {
        format!(
            "{size}-byte messages: one takes {:.3} µs on the {} Gb/s port, and a window \
             must hold at least {MIN_WINDOW_MESSAGES} of them for whole completions to give \
             the rate within 1 %",
            op_wire as f64 / 1e6,
            port_gbps
        )
    } else if need_ps == by_round_trips {
        format!(
            "{size}-byte messages on this path: an operation completes a round trip of at \
             least {:.3} µs after its post, {in_flight} are in flight at most ({} QPs of {} \
             each{}), and a window must hold at least {MIN_WINDOW_MESSAGES} completions for \
             the rate to be within 1 %",
            round_trip as f64 / 1e6,
            spec.qps,
            per_qp,
            if out_of_order {
                ": an out-of-order QP sends one WQE at a time"
            } else {
                ""
            }
        )
    } else {
        let window = max_window_psns(cfg, spec);
        format!(
            "{size}-byte messages on this path: each QP may have {} unacknowledged \
             (qp.window_psns) and an ACK comes back at least {:.3} µs after its packet left, so \
             a round trip carries at most {} ({}), and a window must hold at least \
             {MIN_WINDOW_MESSAGES} completions of {} each for the rate to be within 1 %",
            counted(u64::from(window), "packet"),
            2.0 * one_way as f64 / 1e6,
            counted(u64::from(spec.qps) * u64::from(window), "packet"),
            counted(u64::from(spec.qps), "QP"),
            counted(message_packets(cfg, spec, size), "packet")
        )
    };
    Some(ShortWindow {
        window_us,
        need_ps,
        why,
    })
}

/// The least time [`MIN_WINDOW_MESSAGES`] `size`-byte messages take on `-q` QPs under the
/// packet window (`qp.window_psns`), ps: a QP may have that many packets sent and not
/// acknowledged, and a packet's ACK comes back a round trip of propagation (`one_way` each
/// way) after it left at the earliest, so each QP sends at most one window per round trip,
/// however its messages split into packets. 0 without propagation (the wire bounds then).
fn window_bound_ps(cfg: &Config, spec: &PerfSpec, size: u64, one_way: TimePs) -> TimePs {
    let packets = u128::from(message_packets(cfg, spec, size));
    let per_round_trip = u128::from(spec.qps) * u128::from(max_window_psns(cfg, spec));
    let need =
        u128::from(2 * one_way) * u128::from(MIN_WINDOW_MESSAGES) * packets / per_round_trip.max(1);
    TimePs::try_from(need).unwrap_or(TimePs::MAX)
}

/// The packets of a `size`-byte message at the largest path MTU any pair uses.
fn message_packets(cfg: &Config, spec: &PerfSpec, size: u64) -> u64 {
    size.div_ceil(u64::from(spec.max_pmtu(cfg)).max(1)).max(1)
}

/// The largest packet window any pair uses, PSNs.
fn max_window_psns(cfg: &Config, spec: &PerfSpec) -> u32 {
    spec.qp_profiles
        .iter()
        .map(|p| p.window_psns)
        .max()
        .unwrap_or(cfg.qp.window_psns)
}

/// Refuses a footprint above the memory budget.
fn check_memory(cfg: &Config, spec: &PerfSpec, size: u64) -> Result<(), UsageError> {
    let need = memory_estimate_bytes(cfg, spec, size);
    let budget = memory_budget_bytes(cfg);
    if need > budget {
        let stamps = bw_peak_stamp_bytes(cfg, spec);
        let (stamps, fewer) = if stamps > 0 {
            (
                format!(
                    ", {} of BW peak stamps for -n {} operations per QP",
                    gb(stamps),
                    spec.iters
                ),
                ", a smaller -n, -N/--noPeak (no stamps)",
            )
        } else {
            (String::new(), "")
        };
        return Err(UsageError(format!(
            "this run needs about {} of memory ({size}-byte buffers for {} QPs, rings of \
                 depth {}{stamps}), above the budget of {} (sim.max_memory_gb{}); use fewer QPs \
                 (-q), a smaller -s or -t{fewer}, or raise it with --set sim.max_memory_gb=N",
            gb(need),
            spec.qps,
            spec.tx_depth,
            gb(budget),
            if cfg.sim.max_memory_gb > 0.0 {
                String::new()
            } else {
                " = 0: half of this machine's memory".to_string()
            }
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Transport::{Rc, Uc, Ud};

    #[test]
    fn a_64k_write_takes_its_header_limited_wire_time() {
        let p = ModelParams::baseline();
        // 16 packets of 4096 B: 58 B of headers each, RETH on the first, 24 B FCS +
        // preamble + gap each: 65536 + 16 × 82 + 16 = 66864 B = 5349.12 ns at 100 Gb/s.
        assert_eq!(op_wire_ps(&p, Verb::Write, 65536, 4096, Rc), 5_349_120);
        // A 2-byte SEND: 58 B of headers + 2 B padded to 4: 62 B + 24 B = 86 B.
        assert_eq!(op_wire_ps(&p, Verb::Send, 2, 4096, Rc), 6_880);
        // An 8 B atomic: the 86 B request frame (AtomicETH) is the longer direction.
        assert_eq!(op_wire_ps(&p, Verb::Atomic, 8, 4096, Rc), 8_800);
    }

    /// Every UD packet carries an 8-byte DETH, which the wire bound left out: a UD SEND
    /// took as long as an RC one (86 B for 2 B), a `-D` window of 100 such SENDs was long
    /// enough, and the UD lead allowed a 16-byte RETH (a UC WRITE's) where UD has the DETH.
    #[test]
    fn ud_packets_carry_their_deth_in_the_wire_bound() {
        use crate::workload::PerfTest;
        let p = ModelParams::baseline();
        // 94 B on the wire at 100 Gb/s.
        assert_eq!(op_wire_ps(&p, Verb::Send, 2, 4096, Ud), 7_520);
        let mut cfg = Config::default();
        cfg.qp.transport = Ud;
        // 100 RC-sized SENDs (688 ns) no longer fill a window: it takes 752 ns.
        let spec = PerfSpec {
            sizes: vec![2],
            ..spec_of(PerfTest::SendBw, 0.688)
        };
        let short = short_window(&cfg, &spec, 2).expect("0.688 us is too short for UD");
        assert_eq!(short.need_ps, 752_000);
        // The lead: the longest UD frame has a DETH (8 B), a UC one a RETH (16 B).
        let ud = unreliable_lead_ps(&p, &cfg, 4096);
        cfg.qp.transport = Uc;
        assert_eq!(unreliable_lead_ps(&p, &cfg, 4096), ud + 640);
    }

    #[test]
    fn a_short_window_and_a_huge_footprint_are_refused() {
        let cfg = Config::default();
        let mut spec = PerfSpec {
            sizes: vec![2 << 20],
            tx_depth: 128,
            ..spec_of(crate::workload::PerfTest::WriteBw, 200.0)
        };
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("-D/--duration") && e.contains("use -D 0.017"),
            "{e}"
        );
        spec.duration_us = None;
        check_run(&cfg, &spec).unwrap();
        let mut small = cfg.clone();
        small.sim.max_memory_gb = 0.001;
        let e = check_run(&small, &spec).unwrap_err().0;
        assert!(e.contains("sim.max_memory_gb"), "{e}");
        spec.sizes = vec![MAX_MSG_BYTES + 1];
        assert!(check_run(&cfg, &spec).is_err());
    }

    /// The BW peak's stamps are reserved before the run, 16 bytes per operation of every
    /// QP: they were left out of the estimate, and `-q 100000 -n 100000000` passed the
    /// check and aborted on an allocation of 80 TB. They count where the peak is measured
    /// (not under -N, -D or in a latency test), both ways under -b.
    #[test]
    fn the_bw_peak_stamps_count_in_the_memory_estimate() {
        use crate::workload::{Direction, PerfTest};
        let mut cfg = Config::default();
        cfg.sim.max_memory_gb = 1000.0;
        let spec = PerfSpec {
            sizes: vec![64],
            qps: 100_000,
            iters: 100_000_000,
            duration_us: None,
            ..spec_of(PerfTest::WriteBw, 1.0)
        };
        // One post list and one CQE per operation, and the warm-up's last CQE, 8 B each.
        assert_eq!(
            bw_peak_stamp_bytes(&cfg, &spec),
            100_000 * (2 * 100_000_000 + 1) * 8
        );
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("BW peak stamps for -n 100000000 operations per QP")
                && e.contains("-N/--noPeak")
                && e.contains("sim.max_memory_gb"),
            "{e}"
        );
        let both = PerfSpec {
            direction: Direction::Both,
            ..spec.clone()
        };
        assert_eq!(
            bw_peak_stamp_bytes(&cfg, &both),
            2 * bw_peak_stamp_bytes(&cfg, &spec)
        );
        let mut no_peak = cfg.clone();
        no_peak.host.bw_peak = false;
        assert_eq!(bw_peak_stamp_bytes(&no_peak, &spec), 0);
        check_run(&no_peak, &spec).unwrap();
        let timed = PerfSpec {
            duration_us: Some(1000.0),
            ..spec.clone()
        };
        assert_eq!(bw_peak_stamp_bytes(&cfg, &timed), 0);
        let lat = PerfSpec {
            test: PerfTest::WriteLat,
            ..spec
        };
        assert_eq!(bw_peak_stamp_bytes(&cfg, &lat), 0);
    }

    /// On a long path with few operations in flight the round trip bounds the rate: a
    /// 200 µs window over a 20 km link (200 µs round trip) with 2 QPs of -t 4 held no
    /// completion, and the run ended "incomplete" instead of being refused. The window must
    /// hold 100 round trips' worth of the 8 operations in flight: 2.5 ms.
    #[test]
    fn a_bandwidth_window_counts_the_round_trips_of_what_is_in_flight() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.topology = "wan".into();
        cfg.net.wan_km = 20.0;
        let spec = PerfSpec {
            sizes: vec![64],
            qps: 2,
            tx_depth: 4,
            ..spec_of(PerfTest::WriteBw, 200.0)
        };
        let need_ps =
            refused_up_to_its_need(&cfg, &spec, 64, "8 are in flight at most (2 QPs of 4 each)");
        let round_trip =
            op_wire_ps(&ModelParams::from_config(&cfg), Verb::Write, 64, 4096, Rc) + 200_000_000;
        assert_eq!(need_ps, round_trip * 100 / 8);
        // Deep queues on the same path: the wire bound again (100 × 64 B at 100 Gb/s).
        let deep = PerfSpec {
            tx_depth: 4096,
            qps: 16,
            ..spec
        };
        assert!(short_window(&cfg, &deep, 64).is_none());
    }

    /// The packet window bounds the rate on a long path as the depth does: 1 MiB WRITEs
    /// (256 packets) on one QP with qp.window_psns = 85 over 5 km links (100 µs round trip)
    /// completed one every 312 µs, 32 in a 10 ms window that passed (the depth of 128 let
    /// it), where the rule asks for 100. One window per round trip: 100 × 256 / 85 round
    /// trips, 30.1 ms (97 completions in 30 ms, 100 and more above).
    #[test]
    fn a_bandwidth_window_counts_the_packet_window_per_round_trip() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.link_km = Some(5.0);
        cfg.qp.window_psns = 85;
        let spec = PerfSpec {
            sizes: vec![1 << 20],
            tx_depth: 128,
            ..spec_of(PerfTest::WriteBw, 10_000.0)
        };
        let need_ps = refused_up_to_its_need(
            &cfg,
            &spec,
            1 << 20,
            "85 packets unacknowledged (qp.window_psns)",
        );
        assert_eq!(need_ps, 100_000_000 * 100 * 256 / 85);
        // Without the window (the default, half the PSN space) 10 ms is long enough.
        cfg.qp.window_psns = Config::default().qp.window_psns;
        assert!(short_window(&cfg, &spec, 1 << 20).is_none());
    }

    /// ORNIC runs WRITE and READ bandwidth tests only: the refusal is part of the checks
    /// made before any run, so a sweep refuses the point up front (a `profile` axis over
    /// `ornic` with `write-lat` ran, then reported the point as a model error, exit 1).
    #[test]
    fn an_out_of_order_mode_is_refused_for_a_latency_test_before_the_run() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.qp.reliability = crate::config::Reliability::Ornic;
        let iters = |test| PerfSpec {
            sizes: vec![2],
            iters: 5,
            ..PerfSpec::perftest(test)
        };
        let e = check_run(&cfg, &iters(PerfTest::WriteLat))
            .unwrap_err()
            .to_string();
        assert!(e.contains("WQEs only, so it cannot run write-lat"), "{e}");
        assert!(check_run(&cfg, &iters(PerfTest::WriteBw)).is_ok());
    }

    /// The least window is timed at the server's own port: a fabric's 0.5 Gb/s host links
    /// need 200 times the window 100 Gb/s ones do.
    #[test]
    fn the_least_window_is_timed_at_the_servers_link() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.topology = "fat_tree".into();
        let spec = PerfSpec {
            sizes: vec![65536],
            ..spec_of(PerfTest::WriteBw, 1_000.0)
        };
        assert!(short_window(&cfg, &spec, 65536).is_none());
        cfg.net.fabric.host_link_gbps = Some(0.5);
        let short = short_window(&cfg, &spec, 65536).expect("refused");
        assert!(short.why.contains("on the 0.5 Gb/s port"), "{}", short.why);
    }

    /// The refusal counts in words: one QP with a one-packet window over 1000 km reads
    /// "1 packet unacknowledged" and "a round trip carries at most 1 packet (1 QP)", not
    /// "1 packets".
    #[test]
    fn a_one_packet_window_is_refused_in_the_singular() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.link_km = Some(1000.0);
        cfg.qp.window_psns = 1;
        let spec = PerfSpec {
            sizes: vec![1 << 20],
            ..spec_of(PerfTest::WriteBw, 10_000.0)
        };
        let why = short_window(&cfg, &spec, 1 << 20).expect("refused").why;
        assert!(
            why.contains("each QP may have 1 packet unacknowledged"),
            "{why}"
        );
        assert!(
            why.contains("a round trip carries at most 1 packet (1 QP)"),
            "{why}"
        );
        assert!(why.contains("completions of 256 packets each"), "{why}");
    }

    /// An out-of-order QP sends one WQE at a time: ORNIC's 1 KiB WRITEs over a 20 km link
    /// completed one per 201 µs round trip and QP, and a 200 µs window on two QPs (which
    /// the depth of 128 let pass) held none. 100 completions on 2 QPs take 50 round trips.
    #[test]
    fn an_out_of_order_qp_keeps_one_wqe_in_flight() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.topology = "wan".into();
        cfg.net.wan_km = 20.0;
        cfg.qp.reliability = crate::config::Reliability::Ornic;
        let spec = PerfSpec {
            sizes: vec![1024],
            qps: 2,
            tx_depth: 128,
            ..spec_of(PerfTest::WriteBw, 200.0)
        };
        let need_ps = refused_up_to_its_need(
            &cfg,
            &spec,
            1024,
            "2 QPs of 1 each: an out-of-order QP sends one WQE at a time",
        );
        let round_trip =
            op_wire_ps(&ModelParams::from_config(&cfg), Verb::Write, 1024, 4096, Rc) + 200_000_000;
        assert_eq!(need_ps, round_trip * 100 / 2);
        cfg.qp.reliability = crate::config::Reliability::Gbn;
        assert!(
            short_window(&cfg, &spec, 1024).is_none(),
            "go-back-N: 256 in flight"
        );
    }

    /// Through the WAN accelerator a go-back-N WRITE is acknowledged on the near side of the
    /// long link: the long-distance paper's steady-state point (8 KiB WRITEs over 100 km
    /// with its 85-packet window, a 2 ms window) was refused as if every ACK crossed 1 ms of
    /// fibre each way. An ORNIC QP's WRITEs pass the accelerator unanswered: counted.
    #[test]
    fn accelerated_writes_are_acknowledged_on_the_near_side() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.net.topology = "wan".into();
        cfg.net.wan_km = 100.0;
        cfg.net.wan_accel = true;
        cfg.qp.window_psns = 85;
        let spec = PerfSpec {
            sizes: vec![8192],
            tx_depth: 128,
            ..spec_of(PerfTest::WriteBw, 2_000.0)
        };
        assert!(short_window(&cfg, &spec, 8192).is_none());
        cfg.qp.reliability = crate::config::Reliability::Ornic;
        assert!(short_window(&cfg, &spec, 8192).is_some());
        cfg.qp.reliability = crate::config::Reliability::Gbn;
        cfg.net.wan_accel = false;
        assert!(short_window(&cfg, &spec, 8192).is_some());
    }

    #[test]
    fn a_read_longer_than_the_packet_window_is_refused_naming_the_field() {
        use crate::workload::PerfTest;
        let mut cfg = Config::default();
        cfg.qp.window_psns = 4;
        let mut spec = spec_of(PerfTest::ReadBw, 0.0);
        spec.duration_us = None;
        // 64 KiB at a 4096 B path MTU: 16 response packets, 4 fit the window. The transport
        // refuses such a post, so the run used to stall with nothing completed (exit 3).
        spec.sizes = vec![65536];
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("qp.window_psns") && e.contains("16") && e.contains("-s"),
            "{e}"
        );
        spec.sizes = vec![16384];
        check_run(&cfg, &spec).unwrap();
        spec.test = PerfTest::ReadLat;
        spec.sizes = vec![16385];
        assert!(check_run(&cfg, &spec).is_err());
        // WRITEs move on ACKs: any length goes.
        spec.test = PerfTest::WriteBw;
        spec.sizes = vec![65536];
        check_run(&cfg, &spec).unwrap();
    }

    /// An iteration-mode test of 64 KiB WRITEs: its longest frame is a 4096 B WRITE FIRST,
    /// 58 B of headers, 16 B RETH and 4096 B of payload = 4170 B.
    fn write_64k() -> PerfSpec {
        let mut spec = spec_of(crate::workload::PerfTest::WriteBw, 0.0);
        spec.duration_us = None;
        spec.sizes = vec![65536];
        spec
    }

    /// `net.switch_buffer_bytes` is refused one byte short of that frame, naming the field
    /// and the size needed, and taken at 4170.
    fn holds_exactly_one_write_first(cfg: &mut Config, spec: &PerfSpec) {
        cfg.net.switch_buffer_bytes = 4169;
        let e = check_run(cfg, spec).unwrap_err().0;
        assert!(
            e.contains("net.switch_buffer_bytes") && e.contains("4170"),
            "{e}"
        );
        cfg.net.switch_buffer_bytes = 4170;
        check_run(cfg, spec).unwrap();
    }

    #[test]
    fn a_switch_buffer_smaller_than_one_frame_is_refused() {
        let mut spec = write_64k();
        let mut cfg = Config::default();
        holds_exactly_one_write_first(&mut cfg, &spec);
        // 64 B WRITEs: the RDMA CM's 322 B MADs are the longest frames.
        spec.sizes = vec![64];
        cfg.net.switch_buffer_bytes = 321;
        assert!(check_run(&cfg, &spec).unwrap_err().0.contains("322"));
        cfg.host.connect = crate::config::Connect::Direct;
        check_run(&cfg, &spec).unwrap();
        // Back to back has no switch.
        cfg.net.switch_buffer_bytes = 0;
        cfg.net.topology = "back_to_back".into();
        check_run(&cfg, &spec).unwrap();
    }

    #[test]
    fn every_switch_of_every_topology_must_hold_one_frame() {
        let spec = write_64k();
        let mut cfg = Config::default();
        cfg.host.connect = crate::config::Connect::Direct;
        // The WAN topology stores and forwards at the accelerator's site.
        cfg.net.topology = "wan".into();
        holds_exactly_one_write_first(&mut cfg, &spec);
        // A topology file: the second of two switches has a buffer of its own, too small
        // for a 4170 B WRITE FIRST; the first takes net.switch_buffer_bytes.
        let path =
            std::env::temp_dir().join(format!("rnic-small-switch-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            "[[switch]]\nname = \"tor0\"\n[[switch]]\nname = \"tor1\"\nbuffer_bytes = 4000\n\
             [[link]]\nends = [\"node0\", \"tor0\"]\n[[link]]\nends = [\"tor0\", \"tor1\"]\n\
             [[link]]\nends = [\"tor1\", \"node1\"]\n",
        )
        .unwrap();
        cfg.net.topology = path.to_str().unwrap().into();
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("switch[1]")
                && e.contains("tor1")
                && e.contains("buffer_bytes = 4000")
                && e.contains("4170"),
            "{e}"
        );
        // 2 KiB packets fit.
        cfg.qp.pmtu = 2048;
        check_run(&cfg, &spec).unwrap();
        // The first switch's inherited buffer is named as net.switch_buffer_bytes.
        cfg.net.switch_buffer_bytes = 1000;
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("tor0") && e.contains("net.switch_buffer_bytes = 1000"),
            "{e}"
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn only_runs_whose_least_time_passes_the_clock_horizon_are_refused() {
        use crate::workload::PerfTest;
        let mut spec = spec_of(PerfTest::WriteBw, 0.0);
        spec.duration_us = None;
        spec.sizes = vec![64];
        spec.iters = 100_000_000;
        spec.qps = 1024;
        let mut cfg = Config::default();
        // Without -N the BW peak's stamps of 10^11 operations, 1.6 TB, exceed the memory
        // budget before the clock is reached.
        cfg.host.bw_peak = false;
        // 1.0 x 10^11 operations of 64 B: 8.8 ns each on the 100 Gb/s port, 15 minutes.
        check_run(&cfg, &spec).unwrap();
        // 1 ms per message in the TX pipeline (1000 cycles at 1 MHz): 1.0 x 10^8 s.
        cfg.nic.clock_ghz = 0.001;
        cfg.nic.tx_msg_cycles = 1000;
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("nic.tx_msg_cycles") && e.contains("1185 days"),
            "{e}"
        );
        // The horizon is 2^63 ps, 106.75 days: rounded to whole days it read 107, more
        // than a run may reach and more than the book's and the run's own stop say.
        assert!(
            e.contains("beyond the 106.75 days the picosecond clock"),
            "{e}"
        );
        // -D runs end with their window.
        spec.duration_us = Some(3.6e9);
        check_run(&cfg, &spec).unwrap();
    }

    #[test]
    fn latency_gaps_beyond_an_hour_of_simulated_time_are_refused() {
        use crate::workload::PerfTest;
        let mut spec = spec_of(PerfTest::WriteLat, 0.0);
        spec.duration_us = None;
        spec.iters = 2000;
        let mut cfg = Config::default();
        // 2000 gaps of 10^10 µs: 2 x 10^13 µs = 2 x 10^19 ps, past the picosecond clock
        // (the run ended as a model error: events scheduled in the past).
        cfg.host.latency_gap_us = 1e10;
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(e.contains("host.latency_gap_us") && e.contains("-n"), "{e}");
        cfg.host.latency_gap_us = 1e6; // 2000 s
        check_run(&cfg, &spec).unwrap();
        // Bandwidth tests have no gap.
        cfg.host.latency_gap_us = 1e10;
        spec.test = PerfTest::WriteBw;
        check_run(&cfg, &spec).unwrap();
    }

    #[test]
    fn a_rate_limit_below_one_kbps_is_refused() {
        use crate::workload::PerfTest;
        let mut spec = spec_of(PerfTest::WriteBw, 0.0);
        spec.duration_us = None;
        let mut cfg = Config::default();
        // 10^-12 Gb/s: one 4 KiB frame's tokens take 3 x 10^19 ps, past the clock; the
        // wake-up time wrapped and the run spun forever.
        cfg.qp.rate_limit_gbps = 1e-12;
        let e = check_run(&cfg, &spec).unwrap_err().0;
        assert!(
            e.contains("qp.rate_limit_gbps") && e.contains("0.000001 Gb/s"),
            "{e}"
        );
        cfg.qp.rate_limit_gbps = 1e-6;
        check_run(&cfg, &spec).unwrap();
        cfg.qp.rate_limit_gbps = 0.0; // off
        check_run(&cfg, &spec).unwrap();
    }

    /// Checks that `spec`'s window is refused for `size`-byte messages with a reason
    /// containing `why`, and that a window of the length it asks for passes; returns that
    /// length, ps.
    fn refused_up_to_its_need(cfg: &Config, spec: &PerfSpec, size: u64, why: &str) -> TimePs {
        let short = short_window(cfg, spec, size).expect("the window is too short");
        assert!(short.why.contains(why), "{}", short.why);
        let long_enough = PerfSpec {
            duration_us: Some(short.need_ps as f64 / 1e6),
            ..spec.clone()
        };
        assert!(short_window(cfg, &long_enough, size).is_none());
        short.need_ps
    }

    /// One QP, one client, 2-byte messages, 5 iterations, a `-D` window of `window_us`.
    fn spec_of(test: crate::workload::PerfTest, window_us: f64) -> PerfSpec {
        PerfSpec {
            sizes: vec![2],
            iters: 5,
            tx_depth: 1,
            duration_us: Some(window_us),
            ..PerfSpec::perftest(test)
        }
    }

    /// The -D a refusal suggests is itself long enough (it was rounded to the nearest µs,
    /// so half the time it fell short and was refused in turn), and the window given is
    /// shown as typed (-D 1e-12 read "0.000000 s").
    #[test]
    fn the_window_a_refusal_suggests_is_long_enough() {
        use crate::workload::PerfTest;
        let cfg = Config::default();
        for test in [
            PerfTest::WriteBw,
            PerfTest::ReadBw,
            PerfTest::WriteLat,
            PerfTest::ReadLat,
        ] {
            for size in [2, 64, 1000, 4096, 65_536, 1 << 20] {
                let mut spec = PerfSpec {
                    sizes: vec![size],
                    ..spec_of(test, 1e-6)
                };
                let e = check_run(&cfg, &spec).unwrap_err().0;
                assert!(
                    e.starts_with("-D/--duration (perf.duration) 1e-12 s "),
                    "{e}"
                );
                let suggested: f64 = e
                    .split("use -D ")
                    .nth(1)
                    .and_then(|rest| rest.split(' ').next())
                    .and_then(|d| d.parse().ok())
                    .unwrap_or_else(|| panic!("no -D suggested: {e}"));
                spec.duration_us = Some(suggested * 1e6);
                assert!(
                    short_window(&cfg, &spec, size).is_none(),
                    "{test:?} {size} B: -D {suggested} is refused too"
                );
            }
        }
    }

    #[test]
    fn a_latency_window_must_hold_100_round_trips() {
        use crate::workload::PerfTest;
        let cfg = Config::default();
        // A 2-byte ping-pong through the star: each message 6.88 ns (SEND) or 8.16 ns
        // (WRITE, with its RETH) on the wire and 2 x 500 ns of links each way, so a round
        // trip takes at least 2 x 1006.88 ns and 100 of them 201.4 µs (201.6 µs). A 10 µs
        // window held one iteration: tps 100,000 where the run does 184,000.
        for test in [PerfTest::WriteLat, PerfTest::SendLat] {
            let e = check_run(&cfg, &spec_of(test, 10.0)).unwrap_err().0;
            assert!(
                e.contains("-D/--duration")
                    && e.contains("round trip")
                    && e.contains("use -D 0.0002"),
                "{e}"
            );
            check_run(&cfg, &spec_of(test, 202.0)).unwrap();
        }
        // READ and atomics: the response's wire time once, the propagation both ways.
        for test in [PerfTest::ReadLat, PerfTest::AtomicLat] {
            assert!(check_run(&cfg, &spec_of(test, 150.0)).is_err(), "{test}");
            check_run(&cfg, &spec_of(test, 202.0)).unwrap();
        }
        // --procs 10: ten processes run their ping-pongs side by side.
        let mut procs = spec_of(PerfTest::WriteLat, 25.0);
        procs.procs = Some(10);
        procs.qps = 10;
        check_run(&cfg, &procs).unwrap();
        // Back to back: one link each way.
        let mut b2b = cfg.clone();
        b2b.net.topology = "back_to_back".into();
        check_run(&b2b, &spec_of(PerfTest::WriteLat, 102.0)).unwrap();
        assert!(check_run(&b2b, &spec_of(PerfTest::WriteLat, 90.0)).is_err());
    }
}
