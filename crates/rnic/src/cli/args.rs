//! The command line, as clap derive structs. Flag names and defaults follow perftest.

use crate::config::{parse_set, Override};
use crate::perf::{
    AtomicOp, PerfOptions, PerfTest, MAX_CLIENTS, MAX_DURATION_S, MAX_ITERS, MAX_MRS,
    MAX_MSG_BYTES, MAX_PROCS, MAX_QPS, MAX_TX_DEPTH, MIN_ITERS,
};
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// rnic: a deterministic, cycle-approximate RDMA NIC simulator.
///
/// Runs perftest-style benchmarks (ib_write_bw, ib_read_lat, ...) against a simulated RoCEv2
/// NIC, its host and its network. `perf`, `run` and `sweep` take --profile, --seed and
/// repeatable --set section.field=value (see `rnic config show` for every field); `repro`
/// runs each experiment's own settings, and `demo` takes --seed only.
#[derive(Debug, Parser)]
#[command(
    name = "rnic",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_help = EXIT_STATUS_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Draw no progress bar and print no progress lines (results, summaries and errors are
    /// still printed); for scripts that capture standard error from a terminal.
    #[arg(long, global = true)]
    pub quiet: bool,
}

/// The exit statuses (the values of [`crate::exit`]), shown by `rnic --help`.
pub const EXIT_STATUS_HELP: &str = "\
Exit status:
  0  everything asked completed and every byte verified
  1  data did not verify, or the model contradicted physics (a simulator bug); for
     `pcap check`: a RoCEv2 frame failed to parse or failed its ICRC, or the file is damaged
  2  bad input or usage: flags, config fields, scenario, sweep or capture files
  3  a run (or a sweep point) ended without completing what was asked; the reason is printed;
     for `pcap check`: the capture holds no RoCEv2 frame, or none it could check; for
     `live`: the peer could not be reached, stopped answering or closed the exchange
  4  an output (JSON, CSV, pcap, plot, directory) cannot be written";

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a perftest-style test: write-bw, write-lat, read-bw, read-lat, send-bw, send-lat,
    /// atomic-bw, atomic-lat (like ib_write_bw and friends, client side).
    Perf(Box<PerfCmd>),
    /// Show the configuration and profiles.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// Run one scenario file (profile, [set] overrides, [perf] test, [output]).
    Run(RunCmd),
    /// Run a parameter sweep file in parallel; write CSV, JSON and plots.
    Sweep(SweepCmd),
    /// Run the loopback demo: two simulated hosts exchange verified RDMA traffic.
    Demo(DemoCmd),
    /// Reproduce published papers' claims (`rnic repro list` lists the experiments, `all`
    /// runs every one and writes REPORT.md).
    Repro(ReproCmd),
    /// Work with capture files (`rnic pcap check FILE`: decode and verify every RoCEv2 frame
    /// of a pcap or pcapng from a real NIC, and analyse each QP).
    #[command(subcommand)]
    Pcap(PcapCmd),
    /// Compute sizing numbers in closed form (`rnic calc` lists them): the queue depth that
    /// keeps a long link busy, a RoCEv2 frame's bytes on the wire.
    Calc(CalcCmd),
    /// Run the long-distance paper's pseudo-ACK accelerator as a bump in the wire between
    /// two interfaces (raw Ethernet frames; needs root), optionally emulating the long link.
    Accel(AccelCmd),
    /// Run a perftest test against a real peer: a software RoCEv2 endpoint on this host's
    /// network (`rnic live write-bw --server`, `rnic live write-bw HOST`).
    Live(Box<crate::live::LiveCmd>),
}

/// `rnic accel --local IFACE --remote IFACE`.
#[derive(Debug, Args)]
pub struct AccelCmd {
    /// Interface toward Local, the requesters' side (pseudo-ACKs go out of it).
    #[arg(long)]
    pub local: String,
    /// Interface toward Remote, across the long link (resends go out of it).
    #[arg(long)]
    pub remote: String,
    /// Emulate the long link on the Remote port: one-way delay and loss each way, e.g.
    /// `5ms,1%` (the host kernel has no netem).
    #[arg(long, value_name = "DELAY,LOSS")]
    pub emulate_link: Option<String>,
    /// Seed of the emulated link's losses.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Learn connections from the RDMA CM exchange (`setup`) or from the traffic (`traffic`).
    #[arg(long, default_value = "setup")]
    pub learn: String,
    /// Go-back-N timeout, ms (default: two round trips of the emulated link and 1 ms, else 100).
    #[arg(long)]
    pub timeout_ms: Option<f64>,
    /// Most bytes of unacknowledged WRITEs held.
    #[arg(long, default_value_t = 64 << 20)]
    pub buffer_bytes: u64,
    /// Pass frames only (with the emulated link, if any): the arm without the accelerator.
    #[arg(long)]
    pub off: bool,
    /// Exit after this long without a frame and print the counters as JSON.
    #[arg(long)]
    pub idle_exit_ms: Option<u64>,
}

/// `rnic calc [WHAT]`.
#[derive(Debug, Args)]
pub struct CalcCmd {
    #[command(subcommand)]
    pub what: Option<CalcWhat>,
}

/// What `rnic calc` computes.
#[derive(Debug, Subcommand)]
pub enum CalcWhat {
    /// Queue depth (outstanding packets per QP) that keeps a link busy over a round trip:
    /// QD = bandwidth × RTT / frame size, as the long-distance RDMA paper sizes it.
    Qd(CalcQdCmd),
    /// Bytes one RoCEv2 packet occupies on an Ethernet link, header by header.
    Frame(CalcFrameCmd),
}

/// `rnic calc qd`.
#[derive(Debug, Args)]
// One of --km and --rtt-us gives the round trip: the usage line and the error for neither
// name both (a `required_unless_present` on --km named --km alone).
#[command(group(clap::ArgGroup::new("round_trip").required(true).args(["km", "rtt_us"])))]
pub struct CalcQdCmd {
    // Negative values are taken as values (not as flags), so the range checks of
    // `crate::calc` name the flag and what it takes.
    /// Line rate, Gbit/s.
    #[arg(long, value_name = "GBPS", allow_negative_numbers = true)]
    pub gbps: f64,
    /// Fibre distance, km (the round trip is 2 × km × --us-per-km).
    #[arg(long, value_name = "KM", allow_negative_numbers = true)]
    pub km: Option<f64>,
    /// One-way fibre delay per km, µs (5: light in glass, the paper's 100 µs RTT per 10 km);
    /// with --km only [default: 5]
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub us_per_km: Option<f64>,
    /// The round trip itself, µs, instead of --km.
    #[arg(long, value_name = "US", allow_negative_numbers = true)]
    pub rtt_us: Option<f64>,
    /// Bytes of one frame on the wire (`rnic calc frame` computes it; the paper: 4178).
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub frame_bytes: u64,
    /// Write the answer as JSON to FILE (`-` for stdout instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `rnic calc frame`.
#[derive(Debug, Args)]
pub struct CalcFrameCmd {
    /// Payload bytes in the packet (at most one PMTU on a real link).
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub payload_bytes: u64,
    /// The packet's opcode.
    #[arg(
        long,
        value_name = "OPCODE",
        default_value = "write-first",
        value_parser = PossibleValuesParser::new(crate::calc::FRAME_OPCODES.map(|(n, _)| n))
    )]
    pub opcode: String,
    /// Count an 802.1Q VLAN tag (RoCE links usually carry one for PFC priority).
    #[arg(long)]
    pub vlan: bool,
    /// Write the answer as JSON to FILE (`-` for stdout instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `rnic pcap ...`.
#[derive(Debug, Subcommand)]
pub enum PcapCmd {
    /// Decode every RoCEv2 frame of a pcap or pcapng file, verify each ICRC and report each
    /// QP: opcodes, messages, payload bytes, PSN gaps, retransmissions, NAKs by syndrome and
    /// ACK round-trip times.
    #[command(after_help = PCAP_CHECK_EXIT_HELP)]
    Check(PcapCheckCmd),
}

/// The exit statuses of `rnic pcap check`.
pub const PCAP_CHECK_EXIT_HELP: &str = "\
Exit status:
  0  every RoCEv2 frame parsed and passed its ICRC
  1  a RoCEv2 frame failed to parse or failed its ICRC, or the file is damaged (cut short);
     the last line says which frames
  2  the file cannot be read or is not a pcap or pcapng file
  3  the file holds no RoCEv2 frame, or none that could be checked (every one cut by the snap
     length before its ICRC, or over IPv6), so nothing was checked (the last line says what
     it holds, or why)
  4  the --json output cannot be written";

/// `rnic pcap check FILE`.
#[derive(Debug, Args)]
pub struct PcapCheckCmd {
    /// The capture: pcap (either byte order, microsecond or nanosecond timestamps) or pcapng.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Also write the report as JSON to FILE (`-` for stdout instead of the text).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

fn set_parser(s: &str) -> Result<Override, String> {
    parse_set(s).map_err(|e| e.to_string())
}

fn limit_parser(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number >= 0")),
    }
}

/// What `--rate_limit` takes, for its two refusals (a value that is not a positive number,
/// and one too small to survive the unit's conversion).
const RATE_LIMIT_WANTED: &str =
    "give a number above 0 in --rate_units (Gb/s by default, M for MiB/s), e.g. --rate_limit 10";

fn rate_limit_parser(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a rate above 0: {RATE_LIMIT_WANTED}")),
    }
}

/// `--latency_gap`: whole microseconds, at most an hour (`host.latency_gap_us`'s range).
fn latency_gap_parser(s: &str) -> Result<u32, String> {
    let max = rnic_model::config::schema::MAX_SIM_US;
    match s.trim().parse::<u32>() {
        Ok(v) if f64::from(v) <= max => Ok(v),
        _ => Err(format!(
            "`{s}` is not a whole number of microseconds from 0 to {max:.0} (an hour), as \
             perftest takes it; give e.g. --latency_gap 10"
        )),
    }
}

fn duration_parser(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if v.is_finite() && v > 0.0 && v <= MAX_DURATION_S {
        Ok(v)
    } else {
        Err(format!(
            "must be greater than 0 and at most {MAX_DURATION_S} seconds of simulated time"
        ))
    }
}

/// Options of `rnic perf` and `rnic run` (`rnic sweep` has the same flags, worded for its points).
#[derive(Debug, Args, Clone, Default)]
pub struct SimArgs {
    /// Configuration profile (`rnic config profiles` lists them; overrides a scenario
    /// file's `profile`) [default: the scenario file's, else baseline].
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Random seed (sets sim.seed; overrides a scenario file's `seed`).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Override a config field, e.g. --set nic.qpc_cache_entries=3000 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = set_parser)]
    pub set: Vec<Override>,
    /// Also write the results as JSON to FILE (`-` for stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `rnic perf TEST [flags]`.
#[derive(Debug, Args)]
pub struct PerfCmd {
    /// The test.
    #[arg(value_parser = TestParser, value_name = "TEST")]
    pub test: PerfTest,
    /// Size of message to exchange, bytes [default: 65536 for bw, 2 for lat, 8 for atomic].
    #[arg(short = 's', long = "size", value_name = "BYTES",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(1..=MAX_MSG_BYTES))]
    pub size: Option<u64>,
    /// Number of exchanges: per QP for bandwidth tests; in all for latency tests, whose QPs
    /// (and --procs processes) share them [default: 5000 for bw, 1000 for lat].
    #[arg(short = 'n', long = "iters", value_name = "ITERS",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u64).range(MIN_ITERS..=MAX_ITERS))]
    pub iters: Option<u64>,
    /// Number of QPs on the server, spread round robin over the --clients client nodes [default: 1].
    #[arg(short = 'q', long = "qp", value_name = "QPS",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_QPS as i64))]
    pub qp: Option<u32>,
    /// Size of the TX queue per QP [default: 128 for bw, 1 for lat].
    #[arg(short = 't', long = "tx-depth", value_name = "DEPTH",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_TX_DEPTH as i64))]
    pub tx_depth: Option<u32>,
    /// Run sizes from 2 till 2^23.
    #[arg(short = 'a', long = "all", conflicts_with_all = ["size", "duration"])]
    pub all: bool,
    /// MTU size: 256 - 4096 (sets qp.pmtu) [default: 4096].
    #[arg(short = 'm', long = "mtu", value_name = "MTU",
          value_parser = PossibleValuesParser::new(["256", "512", "1024", "2048", "4096"])
              .map(|s| s.parse::<u32>().unwrap_or(4096)))]
    pub mtu: Option<u32>,
    /// Run for this many seconds of simulated time instead of -n iterations.
    #[arg(short = 'D', long = "duration", value_name = "SECONDS", allow_negative_numbers = true,
          value_parser = duration_parser)]
    pub duration: Option<f64>,
    /// QP timeout exponent: 4.096 us * 2^timeout (sets qp.timeout) [default: 14].
    #[arg(short = 'u', long = "qp-timeout", value_name = "TIMEOUT",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u8).range(0..=31))]
    pub qp_timeout: Option<u8>,
    /// Atomic operation of atomic tests [default: FETCH_AND_ADD].
    #[arg(short = 'A', long = "atomic_type", value_parser = AtomicParser, value_name = "TYPE")]
    pub atomic_type: Option<AtomicOp>,
    /// Bandwidth tests: post lists of N WQEs, one doorbell per list (sets host.post_list;
    /// without -Q also one CQE per list, as perftest does) [default: 1].
    #[arg(short = 'l', long = "post_list", value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub post_list: Option<u32>,
    /// Bandwidth tests: one signaled WQE, and so one CQE, per N (sets host.cq_mod; at most
    /// the tx depth) [default: 1].
    #[arg(short = 'Q', long = "cq-mod", value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub cq_mod: Option<u32>,
    /// SEND/WRITE payloads of at most SIZE bytes are posted inline in the WQE, so the NIC
    /// reads no payload (sets host.inline_bytes, and nic.wqe_bytes to hold them: 64 + SIZE
    /// rounded up to 64) [default: 0, never].
    #[arg(short = 'I', long = "inline_size", value_name = "SIZE",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=960))]
    pub inline_size: Option<u32>,
    /// Outstanding RDMA READ/atomic requests per QP (sets qp.max_rd_atomic) [default: 16].
    #[arg(short = 'o', long = "outs", value_name = "NUM",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u8).range(1..=16))]
    pub outs: Option<u8>,
    /// Print only this figure instead of the table (perftest's --output): bandwidth (BW
    /// average in the table's unit), message_rate (Mpps) or latency (average, µs).
    #[arg(long = "output", value_name = "UNITS",
          value_parser = PossibleValuesParser::new(["bandwidth", "message_rate", "latency"]))]
    pub output: Option<String>,
    /// Exit with status 1 when the BW average is below VALUE, in the table's unit (MiB/s, or
    /// Gbit/s with --report_gbits), as perftest's verifier does.
    #[arg(short = 'w', long = "limit_bw", value_name = "VALUE", allow_negative_numbers = true,
          value_parser = limit_parser)]
    pub limit_bw: Option<f64>,
    /// Exit with status 1 when the message rate is below VALUE Mpps.
    #[arg(short = 'y', long = "limit_msgrate", value_name = "VALUE", allow_negative_numbers = true,
          value_parser = limit_parser)]
    pub limit_msgrate: Option<f64>,
    /// Also write perftest's JSON report (its key names and order, strings quoted) to
    /// --out_json_file, or perftest_out.json in the working directory.
    #[arg(long = "out_json")]
    pub out_json: bool,
    /// File for perftest's JSON report (implies --out_json).
    #[arg(long = "out_json_file", value_name = "FILE")]
    pub out_json_file: Option<PathBuf>,
    /// Report BW in Gbit/sec (instead of MiB/sec).
    #[arg(long = "report_gbits", alias = "report-gbits")]
    pub report_gbits: bool,
    /// Also print every component's counters (the statistics registry: `name value`
    /// lines after the table; the JSON has them as `stats`).
    #[arg(long)]
    pub stats: bool,
    /// Number of client hosts sending to the server (sets net.clients) [default: 1].
    #[arg(long, value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_CLIENTS as i64))]
    pub clients: Option<u32>,
    /// Latency tests: N server processes (one per core, host.cores >= N), process p cycling
    /// over QPs p, p+N, ...: post one operation, wait for its completion, move on (the csRNA
    /// paper's latency test; full operation latency). Without it: perftest's ping-pong.
    #[arg(long, value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_PROCS as i64))]
    pub procs: Option<u32>,
    /// Memory regions each node registers: the QPs' buffers in N contiguous groups, each
    /// registered on its own, so the NIC's MPT and MTT caches see N regions [default: 1].
    #[arg(long, value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_MRS as i64))]
    pub mrs: Option<u32>,
    /// Memory regions each client node registers instead of --mrs (e.g. 1: the targets keep
    /// one region while the server spreads its buffers over --mrs) [default: --mrs].
    #[arg(long = "client-mrs", value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_MRS as i64))]
    pub client_mrs: Option<u32>,
    /// Bandwidth tests: the server and the clients initiate at once, on QPs and buffers of
    /// their own; the table reports the sum of both directions, as perftest's.
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// SEND tests: each side's QPs take their receives from one shared receive queue, -r
    /// receives in all (sets host.use_srq).
    #[arg(long = "use-srq", alias = "use_srq")]
    pub use_srq: bool,
    /// With -b, also print each direction's row.
    #[arg(long = "report-both")]
    pub report_both: bool,
    /// Sleep on CQ events instead of polling: a CQE that finds its core asleep wakes it
    /// after host.cq_event_ns (sets host.cq_events; not for WRITE tests, as perftest).
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// Latency tests (-n): print the samples the summary keeps (µs; all but the two
    /// largest), sorted, before the summary row.
    #[arg(short = 'H', long = "report-histogram")]
    pub report_histogram: bool,
    /// Latency tests (-n): print every sample in measurement order, then the kept ones
    /// sorted as -H does.
    #[arg(short = 'U', long = "report-unsorted")]
    pub report_unsorted: bool,
    /// Latency tests: idle time between an iteration's end and the next post, µs (sets
    /// host.latency_gap_us; not part of the samples).
    #[arg(long = "latency_gap", value_name = "USEC",
          allow_negative_numbers = true, value_parser = latency_gap_parser)]
    pub latency_gap: Option<u32>,
    /// Bandwidth tests: the clients initiate, towards the server (rnic's server initiates
    /// by default).
    #[arg(long = "reversed")]
    pub reversed: bool,
    /// The QP's traffic class: the IPv4 TOS byte, DSCP << 2 | ECN (sets qp.traffic_class)
    /// [default: 2, ECT(0)].
    #[arg(long = "tclass", value_name = "TCLASS",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u8))]
    pub tclass: Option<u8>,
    /// With -R: the RDMA CM connection's type of service, every frame's IPv4 TOS byte (sets
    /// qp.traffic_class, as --tclass does; perftest takes it with -R only).
    #[arg(short = 'T', long = "tos", value_name = "TOS",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u8))]
    pub tos: Option<u8>,
    /// The QPs' transport retry count, which RDMA CM's REQ carries (rnic connects by RDMA CM
    /// by default; sets qp.retry_cnt) [default: 7].
    #[arg(long = "retry_count", value_name = "COUNT", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u8).range(0..=7))]
    pub retry_count: Option<u8>,
    /// The QP's hop limit: the IPv4 TTL (sets qp.hop_limit) [default: 64].
    #[arg(short = 'L', long = "hop_limit", value_name = "HOPS",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u8).range(1..=255))]
    pub hop_limit: Option<u8>,
    /// The NIC's per-QP rate limit on what each QP sends, in --rate_units (sets
    /// qp.rate_limit_gbps) [default: none].
    #[arg(long = "rate_limit", value_name = "RATE", allow_negative_numbers = true,
          value_parser = rate_limit_parser)]
    pub rate_limit: Option<f64>,
    /// Unit of --rate_limit: M (MiB/s) or g (Gb/s); p (packets/s) is refused, as perftest
    /// refuses it for the NIC's limiter [default: g].
    #[arg(long = "rate_units", value_name = "UNITS",
          value_parser = PossibleValuesParser::new(["M", "g", "p"]))]
    pub rate_units: Option<String>,
    /// Messages a QP may send back to back under --rate_limit (sets
    /// qp.rate_limit_burst_bytes to N messages of -s bytes) [default: 0, paced].
    #[arg(long = "burst_size", value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    pub burst_size: Option<u64>,
    /// Which limiter: HW or PP (the NIC's, modelled alike) or SW (the application's: not
    /// modelled, refused) [default: HW].
    #[arg(long = "rate_limit_type", value_name = "TYPE",
          value_parser = PossibleValuesParser::new(["HW", "SW", "PP"]))]
    pub rate_limit_type: Option<String>,
    /// SEND bandwidth tests: receives the target keeps posted per QP (sets host.rx_depth)
    /// [default: 512].
    #[arg(short = 'r', long = "rx-depth", value_name = "DEPTH",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=MAX_TX_DEPTH as i64))]
    pub rx_depth: Option<u32>,
    /// SEND bandwidth tests: the target reposts consumed receives in lists of N, one
    /// doorbell per list (sets host.recv_post_list; at most -r).
    #[arg(long = "recv_post_list", value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub recv_post_list: Option<u32>,
    /// A received SEND of at most N bytes travels inside its CQE, with no separate payload
    /// write (sets host.inline_recv_bytes; at most half of nic.cqe_bytes).
    #[arg(long = "inline_recv", value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(0..=2048))]
    pub inline_recv: Option<u32>,
    /// Bandwidth tests: before measuring, each QP in turn posts a tx depth of operations and
    /// waits for them, unmeasured (sets host.perform_warm_up).
    #[arg(long = "perform_warm_up")]
    pub perform_warm_up: bool,
    /// Bandwidth tests: measure no BW peak, which then reads 0.00 as in perftest, and keep
    /// no per-operation stamps for it (sets host.bw_peak = false).
    #[arg(short = 'N', long = "noPeak")]
    pub no_peak: bool,
    /// Connect the QPs by RDMA CM (REQ, REP, RTU MADs on the simulated wire; UD pairs by
    /// SIDR_REQ and SIDR_REP; sets host.connect = "cm", which is the default anyway, and
    /// host.cm_ud).
    #[arg(short = 'R', long = "rdma_cm")]
    pub rdma_cm: bool,
    /// One memory region per QP, as perftest's --mr_per_qp: --mrs = the server's QPs (-q).
    #[arg(long = "mr_per_qp")]
    pub mr_per_qp: bool,
    /// Write the frames on the server's (node 0's) port, and the PFC frames switches send,
    /// to a pcap file.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Capture node N's port instead of the server's: client i is node i (needs --pcap).
    #[arg(long, value_name = "N", requires = "pcap")]
    pub pcap_node: Option<u64>,
    #[command(flatten)]
    pub sim: SimArgs,
    /// perftest's other flags: ignored with a note, or refused with the reason.
    #[command(flatten)]
    pub compat: super::perftest_compat::PerftestCompat,
}

impl PerfCmd {
    /// The CQ moderation a post list sets, as perftest's force_dependecies does: `-l N`
    /// (N > 1) on a bandwidth test without `-Q` signals one WQE per list, N.
    pub fn list_sets_cq_mod(&self) -> Option<u32> {
        self.post_list
            .filter(|&l| l > 1 && self.cq_mod.is_none() && !self.test.is_latency())
    }

    /// The config overrides of perftest's -o, -l and -I (config fields in rnic), then
    /// those of --set. A field a flag sets and --set sets to another value is refused naming
    /// both; what a flag only implies (-l's CQ moderation, -I's WQE slot, -R's SIDR) --set
    /// may change.
    pub fn config_sets(&self) -> anyhow::Result<Vec<Override>> {
        crate::config::check_repeated(&self.sim.set, "--set")?;
        let flags = self.flag_sets();
        if let Some(m) = crate::perf::conflicting_set(&flags, &self.sim.set) {
            anyhow::bail!(crate::UsageError(m));
        }
        let mut sets: Vec<Override> = flags.into_iter().map(|(_, o)| o).collect();
        sets.extend(self.implied_sets());
        sets.extend(self.sim.set.iter().cloned());
        Ok(sets)
    }

    /// The config fields perftest's flags set, each with its flag.
    fn flag_sets(&self) -> Vec<(&'static str, Override)> {
        let n = |v: u32| i64::from(v);
        [
            self.outs
                .map(|o| ("-o/--outs", Override::new("qp.max_rd_atomic", i64::from(o)))),
            self.post_list
                .map(|l| ("-l/--post_list", Override::new("host.post_list", n(l)))),
            self.cq_mod
                .map(|q| ("-Q/--cq-mod", Override::new("host.cq_mod", n(q)))),
            self.rx_depth
                .map(|r| ("-r/--rx-depth", Override::new("host.rx_depth", n(r)))),
            self.recv_post_list.map(|r| {
                let o = Override::new("host.recv_post_list", n(r));
                ("--recv_post_list", o)
            }),
            self.inline_recv.map(|r| {
                let o = Override::new("host.inline_recv_bytes", n(r));
                ("--inline_recv", o)
            }),
            self.perform_warm_up.then(|| {
                let o = Override::new("host.perform_warm_up", true);
                ("--perform_warm_up", o)
            }),
            self.no_peak
                .then(|| ("-N/--noPeak", Override::new("host.bw_peak", false))),
            self.latency_gap.map(|g| {
                let o = Override::new("host.latency_gap_us", f64::from(g));
                ("--latency_gap", o)
            }),
            self.events
                .then(|| ("-e/--events", Override::new("host.cq_events", true))),
            self.use_srq
                .then(|| ("--use-srq", Override::new("host.use_srq", true))),
            self.rdma_cm
                .then(|| ("-R/--rdma_cm", Override::new("host.connect", "cm"))),
            self.tclass
                .map(|t| ("--tclass", Override::new("qp.traffic_class", i64::from(t)))),
            self.tos
                .map(|t| ("-T/--tos", Override::new("qp.traffic_class", i64::from(t)))),
            self.retry_count
                .map(|r| ("--retry_count", Override::new("qp.retry_cnt", i64::from(r)))),
            self.hop_limit.map(|h| {
                (
                    "-L/--hop_limit",
                    Override::new("qp.hop_limit", i64::from(h)),
                )
            }),
            self.inline_size
                .map(|i| ("-I/--inline_size", Override::new("host.inline_bytes", n(i)))),
            // perftest -c/--connection RC|UC|UD (checked by `compat.check`).
            self.compat.connection.as_ref().map(|c| {
                let o = Override::new("qp.transport", c.to_ascii_lowercase());
                ("-c/--connection", o)
            }),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The config fields perftest's flags imply without naming them.
    fn implied_sets(&self) -> Vec<Override> {
        let n = |v: u32| i64::from(v);
        [
            // perftest's force_dependecies: a post list without -Q signals once per list.
            self.list_sets_cq_mod()
                .map(|l| Override::new("host.cq_mod", n(l))),
            // UD pairs too: perftest's -c UD -R resolves them by SIDR.
            self.rdma_cm.then(|| Override::new("host.cm_ud", true)),
            // The WQE slot grows by 64 B blocks to hold the inline data.
            self.inline_size
                .filter(|&i| i > 0)
                .map(|i| Override::new("nic.wqe_bytes", n((64 + i).div_ceil(64) * 64))),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The config overrides of perftest's rate limiter (`--rate_limit` and friends), or
    /// what in them rnic cannot do.
    pub fn rate_limit_sets(&self) -> anyhow::Result<Vec<Override>> {
        let given = self.rate_units.is_some()
            || self.burst_size.is_some()
            || self.rate_limit_type.is_some();
        let Some(rate) = self.rate_limit else {
            if given {
                anyhow::bail!(crate::UsageError(
                    "--rate_units, --burst_size and --rate_limit_type shape --rate_limit: give \
                     --rate_limit RATE"
                        .into()
                ));
            }
            return Ok(Vec::new());
        };
        if self.rate_limit_type.as_deref() == Some("SW") {
            anyhow::bail!(crate::UsageError(
                "--rate_limit_type SW (the application pacing its posts) is not modelled by \
                 rnic; HW and PP select the NIC's limiter, which is"
                    .into()
            ));
        }
        let gbps = match self.rate_units.as_deref() {
            None | Some("g") => rate,
            Some("M") => rate * (1u64 << 20) as f64 * 8.0 / 1e9,
            Some(_) => anyhow::bail!(crate::UsageError(
                "--rate_units p (packets/s) is not supported with the NIC's rate limiter (as in \
                 perftest): give M (MiB/s) or g (Gb/s)"
                    .into()
            )),
        };
        if gbps <= 0.0 {
            anyhow::bail!(crate::UsageError(format!(
                "--rate_limit {rate}: not a rate above 0 in Gb/s ({gbps}) once converted \
                 from --rate_units; {RATE_LIMIT_WANTED}"
            )));
        }
        // The field's own range starts at 0 (no limit), which the flag refuses: its message
        // would say "from 0", so the flag names its own range.
        let max_gbps = rnic_model::config::schema::declared_range("qp.rate_limit_gbps")
            .map_or(f64::INFINITY, |(_, max)| max);
        let min_gbps = rnic_model::limits::MIN_RATE_LIMIT_GBPS;
        if gbps < min_gbps {
            anyhow::bail!(crate::UsageError(format!(
                "--rate_limit {}: {} Gb/s once converted from --rate_units, below the \
                 {min_gbps} Gb/s (1 kb/s) the NIC's limiter (qp.rate_limit_gbps) takes at the \
                 least; give a rate of at least {min_gbps} and at most {max_gbps} Gb/s in \
                 --rate_units (Gb/s by default, M for MiB/s)",
                rnic_model::words::short_num(rate),
                rnic_model::words::short_num(gbps)
            )));
        }
        if gbps > max_gbps {
            anyhow::bail!(crate::UsageError(format!(
                "--rate_limit {}: {} Gb/s is more than the {max_gbps} Gb/s the NIC's limiter \
                 (qp.rate_limit_gbps) takes at the most; give a rate of at least {min_gbps} and \
                 at most {max_gbps} Gb/s in --rate_units (Gb/s by default, M for MiB/s)",
                rnic_model::words::short_num(rate),
                rnic_model::words::short_num(gbps)
            )));
        }
        if self.all && self.burst_size.is_some() {
            // The burst is N messages of -s bytes, set once for the run in bytes; -a runs
            // every size with the same field.
            anyhow::bail!(crate::UsageError(
                "--burst_size counts messages of -s bytes, but -a/--all (perf.all) runs every size \
                 under one burst in bytes (N messages of 64 KiB would let 2-byte messages \
                 burst 32768 times longer); give -s SIZE, or leave out --burst_size"
                    .into()
            ));
        }
        let mut v = vec![Override::new("qp.rate_limit_gbps", gbps)];
        if let Some(n) = self.burst_size {
            let size = self.size.unwrap_or(self.test.default_size());
            v.push(Override::new(
                "qp.rate_limit_burst_bytes",
                i64::try_from(n.saturating_mul(size)).unwrap_or(i64::MAX),
            ));
        }
        Ok(v)
    }

    /// The perftest options these flags give.
    pub fn options(&self) -> PerfOptions {
        PerfOptions {
            test: Some(self.test),
            size: self.size,
            iters: self.iters,
            qp: self.qp,
            tx_depth: self.tx_depth,
            all: self.all,
            mtu: self.mtu,
            duration: self.duration,
            clients: self.clients,
            report_gbits: self.report_gbits,
            stats: self.stats,
            qp_timeout: self.qp_timeout,
            atomic_type: self.atomic_type,
            procs: self.procs,
            mrs: self.mrs,
            client_mrs: self.client_mrs,
            mr_per_qp: self.mr_per_qp,
            bidirectional: self.bidirectional,
            reversed: self.reversed,
            report_both: self.report_both,
            report_histogram: self.report_histogram,
            report_unsorted: self.report_unsorted,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// Print the resolved configuration as TOML, each field with unit, description, default
    /// and accepted range.
    Show {
        /// Profile to resolve [default: baseline].
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        /// Override a field (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = set_parser)]
        set: Vec<Override>,
    },
    /// List the profiles.
    Profiles,
}

/// `rnic run SCENARIO.toml`.
#[derive(Debug, Args)]
pub struct RunCmd {
    /// The scenario file.
    #[arg(value_name = "SCENARIO.toml")]
    pub scenario: PathBuf,
    /// Write the frames on node 0's port (or --pcap-node's), and the PFC frames switches
    /// send, to a pcap file (overrides [output] pcap); a flow that does not cross that port
    /// is not in it (a note says which).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Capture node N's port instead of node 0's (overrides [output] pcap_node); needs a
    /// capture file, --pcap or [output] pcap.
    #[arg(long, value_name = "N")]
    pub pcap_node: Option<u64>,
    /// List every flow of a [workload] in the table; by default those that ended ok are one
    /// `workload` row (each is in the FCT summary, and with --json FILE a line of
    /// FILE-fct.csv). Refused on a scenario without a [workload].
    #[arg(long)]
    pub all_flows: bool,
    #[command(flatten)]
    pub sim: SimArgs,
}

/// `rnic sweep SWEEP.toml`, or `rnic sweep merge DIR...`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepCmd {
    #[command(subcommand)]
    pub merge: Option<SweepSubCmd>,
    /// The sweep file.
    #[arg(value_name = "SWEEP.toml", required = true)]
    pub sweep: Option<PathBuf>,
    /// Run only shard I of N: the grid points I, I+N, I+2N, ... (1-based), written to
    /// <name>.shard-I-of-N.csv and .json in --out, no plots; `rnic sweep merge` puts the
    /// shards together.
    #[arg(long, value_name = "I/N", value_parser = crate::sweep::Shard::parse)]
    pub shard: Option<crate::sweep::Shard>,
    /// Points run in parallel [default: one per CPU].
    #[arg(short = 'j', long, value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Output directory for <name>.csv, <name>.json and <name>-<metric>.png/.svg; while the
    /// sweep runs, <name>.partial.csv gets each point's row as it finishes.
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
    /// Base profile of every point (overrides the file's `profile`).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Random seed of every point (overrides the file's `seed`).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Override a config field in every point, before the axes (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = set_parser)]
    pub set: Vec<Override>,
    /// Also write all points' results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Run a grid of more than 10000 points (at most 1000000); without it such a sweep is
    /// refused before it starts.
    #[arg(long)]
    pub allow_large: bool,
}

/// `rnic sweep merge`.
#[derive(Debug, Subcommand)]
pub enum SweepSubCmd {
    /// Merge the shard files of `rnic sweep FILE --shard I/N` found in the directories into
    /// <name>.csv, <name>.json and the plots, the same bytes as the whole sweep would write.
    Merge(SweepMergeCmd),
}

/// `rnic sweep merge DIR...`.
#[derive(Debug, Args)]
pub struct SweepMergeCmd {
    /// Directories holding the shards' <name>.shard-I-of-N.json files.
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Output directory for <name>.csv, <name>.json and <name>-<metric>.png/.svg.
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
}

/// `rnic demo`.
#[derive(Debug, Args)]
pub struct DemoCmd {
    /// Random seed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
}

/// `rnic repro [ID|PAPER|all|list]`.
#[derive(Debug, Args)]
pub struct ReproCmd {
    /// An experiment id (`csrna-peak`), a paper (`csrna`: its experiments), `all`, or
    /// `list`; without it, list the experiments.
    #[arg(value_name = "ID|PAPER|all|list")]
    pub id: Option<String>,
    /// Points run in parallel [default: one per CPU].
    #[arg(short = 'j', long, value_name = "N",
          allow_negative_numbers = true, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub jobs: Option<u32>,
    /// Output directory: one directory per experiment and REPORT.md [default: out/repro].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Parse every sweep file and resolve every point without simulating.
    #[arg(long)]
    pub check: bool,
    /// Exit 1 when a claim misses (for tests and CI). Without it a miss is a result: a run
    /// in which every experiment ran and every claim was judged exits 0.
    #[arg(long)]
    pub strict: bool,
    /// Rerun each experiment with every parameter its paper does not state at -20 % and
    /// +20 %, and add a column per claim: robust, or the parameter and value at which its
    /// verdict flips (multiplies the run time).
    #[arg(long)]
    pub sensitivity: bool,
}

/// Parses a test name (`write-bw`, ...) and lists the tests in `--help`.
#[derive(Debug, Clone, Copy)]
pub struct TestParser;

impl clap::builder::TypedValueParser for TestParser {
    type Value = PerfTest;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<PerfTest, clap::Error> {
        let names = PerfTest::ALL.map(|t| t.name());
        let s = PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        PerfTest::from_name(&s)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(PerfTest::ALL.into_iter().map(|t| {
            clap::builder::PossibleValue::new(t.name()).help(t.description())
        })))
    }
}

/// Parses perftest's atomic operation names (`FETCH_AND_ADD`, `CMP_AND_SWAP`, either case).
#[derive(Debug, Clone, Copy)]
pub struct AtomicParser;

impl clap::builder::TypedValueParser for AtomicParser {
    type Value = AtomicOp;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<AtomicOp, clap::Error> {
        let names = [
            "FETCH_AND_ADD",
            "CMP_AND_SWAP",
            "fetch_and_add",
            "cmp_and_swap",
        ];
        let s = PossibleValuesParser::new(names).parse_ref(cmd, arg, value)?;
        AtomicOp::from_name(&s)
            .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidValue))
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            [
                ("FETCH_AND_ADD", "fetch_and_add"),
                ("CMP_AND_SWAP", "cmp_and_swap"),
            ]
            .into_iter()
            .map(|(name, alias)| clap::builder::PossibleValue::new(name).alias(alias)),
        ))
    }
}
