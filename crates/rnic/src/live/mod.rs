//! `rnic live`: a software RoCEv2 endpoint on a real network. The same sans-IO transport
//! engine the simulator runs (`rnic_transport::Device`) is driven by the real clock and real
//! sockets ([`endpoint`], [`net`]), with perftest's out-of-band exchange ([`oob`]) so that
//! perftest on a real or soft-RoCE NIC can be the other end.

mod atomic_bw;
mod bw;
mod cm;
mod cm_perftest;
mod duplex;
mod endpoint;
mod forever;
#[cfg(test)]
mod fuzz;
mod limits;
pub mod net;
pub mod oob;
mod pacer;
pub mod perftest_flags;
mod perftest_json;
mod rc_pingpong;
mod read_lat;
mod recv_ring;
mod report;
mod send_bw;
mod send_duplex;
mod send_lat;
mod session;
mod write_lat;

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use rnic_transport::ServiceType;

use crate::report::text::Samples;
use crate::UsageError;

/// Seed of rnic's payload pattern in live runs (both sides know it).
pub const PATTERN_SEED: u64 = 0x726e_6963_6c69_7665;

/// The seed of QP `qp`'s pattern (`-q`): a different one for each QP, so that bytes that
/// reached another QP's buffer do not pass; the first QP's is [`PATTERN_SEED`].
pub fn qp_pattern_seed(qp: usize) -> u64 {
    PATTERN_SEED.wrapping_add(qp as u64)
}

/// `rnic live TEST [HOST] ...`: perftest's command line.
#[derive(Debug, clap::Args)]
pub struct LiveCmd {
    /// Test: write-bw, write-lat, send-bw, send-lat, read-bw, read-lat, atomic-bw, atomic-lat
    /// (FETCH&ADD of 8 bytes) or rc-pingpong (ibv_rc_pingpong's)
    pub test: String,
    /// The server to connect to (client mode); omit with --server
    pub host: Option<String>,
    /// Wait for a client (perftest's server side)
    #[arg(long)]
    pub server: bool,
    /// TCP port of perftest's exchange (1..=65535: a server on port 0 would wait on a port
    /// the kernel picks and no client knows)
    #[arg(short = 'p', long = "port", default_value_t = 18515,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// Local IPv4 address to use (default: the one the route to the peer uses)
    #[arg(long, value_name = "IPV4")]
    pub bind: Option<String>,
    /// The same as --bind, as perftest's --source_ip names RDMA CM's source address (rnic
    /// live uses it for every exchange); both given must agree
    #[arg(long = "source_ip", value_name = "IPV4")]
    pub source_ip: Option<String>,
    /// Message size, bytes [default: 65536 for bandwidth tests (UD: the MTU), 2 for latency
    /// tests]
    #[arg(short = 's', long = "size")]
    pub size: Option<u64>,
    /// Iterations [default: 5000 for bandwidth tests, 1000 for latency tests]
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u64>,
    /// QPs, as perftest's `-q`: each QP runs `-n` operations to its own part of the peer's
    /// buffer, or SENDs to its own receives (the bandwidth tests; with -R each QP is connected
    /// by RDMA CM in turn, a UD QP resolved by its own SIDR)
    #[arg(short = 'q', long = "qp", default_value_t = 1)]
    pub qps: u32,
    /// Connection type, as perftest's `-c`: RC; UC for write-bw, write-lat, send-bw and
    /// send-lat; UD for send-bw and send-lat
    #[arg(short = 'c', long = "connection", default_value = "RC")]
    pub connection: String,
    /// Path MTU, bytes: 256, 512, 1024, 2048 or 4096 (the smaller of the two sides' is used)
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// WRITEs in flight (bandwidth tests) [default: 128]
    #[arg(short = 't', long = "tx-depth")]
    pub tx_depth: Option<u32>,
    /// QP timeout exponent, as perftest's `-u`: an unanswered request is sent again after
    /// 4.096 µs × 2^TIMEOUT (14: 67 ms; 0: never), at most 7 times
    #[arg(short = 'u', long = "qp-timeout", value_name = "TIMEOUT", default_value_t = 14,
          value_parser = clap::value_parser!(u8).range(0..=31))]
    pub qp_timeout: u8,
    /// Write the results as JSON
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write perftest's JSON report (its keys and order, strings quoted) to
    /// --out_json_file, or perftest_out.json in the working directory
    #[arg(long = "out_json")]
    pub out_json: bool,
    /// File for perftest's JSON report (implies --out_json)
    #[arg(long = "out_json_file", value_name = "FILE")]
    pub out_json_file: Option<PathBuf>,
    /// Write every RoCEv2 datagram sent and received (with Ethernet/IPv4/UDP headers)
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Connect the QP by RDMA CM over the wire (REQ, REP and RTU MADs to QP1; a UD QP is
    /// resolved by SIDR_REQ and SIDR_REP), as perftest's -R; RC, and UD (send-bw, send-lat)
    #[arg(short = 'R', long = "rdma_cm")]
    pub rdma_cm: bool,
    /// Run the exchange over an RDMA CM connection (a control QP on the -p port, no TCP) and
    /// connect the test's QPs with modify_qp from the exchanged keys, as perftest's -z
    /// (whose option table spells it --comm_rdma_cm, its help --com_rdma_cm; both work);
    /// -R implies it. A server needs --bind
    #[arg(short = 'z', long = "com_rdma_cm", alias = "comm_rdma_cm")]
    pub com_rdma_cm: bool,
    /// Run for this many seconds instead of -n iterations, as perftest's -D: the completions
    /// between --margin seconds after the start and --margin before the end are measured
    /// (every test but rc-pingpong; give it to both sides, as perftest's: a send-bw server
    /// runs its own clock from its first arrival, the latency tests' sides each their own)
    #[arg(
        short = 'D',
        long = "duration",
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub duration: Option<f64>,
    /// With -D: seconds left out at each end of the run, as perftest's -f/--margin
    /// [default: a quarter of -D in whole seconds, as perftest computes it]
    #[arg(
        short = 'f',
        long,
        value_name = "SECONDS",
        allow_negative_numbers = true
    )]
    pub margin: Option<f64>,
    /// Run every size from 2 B to 8 MiB (2^1 to 2^23, -n iterations each), as perftest's -a;
    /// write-bw, read-bw, send-bw (UD: up to the path MTU), write-lat, read-lat and send-lat
    /// (UD: up to the MTU), and both sides take it. A READ test's sizes stop at the largest
    /// whose responses fit the requester's window (256 packets, 256 KiB at MTU 1024), saying so
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Report bandwidth in Gb/s instead of MB/s, as perftest's --report_gbits (bandwidth
    /// tests; a latency test's table has no bandwidth)
    #[arg(long = "report_gbits", alias = "report-gbits")]
    pub report_gbits: bool,
    /// With -b: after the summed table, each direction's row under its own header (this
    /// side's, then the peer's), as perftest's --report-both
    #[arg(long = "report-both")]
    pub report_both: bool,
    /// Latency tests: list every sample (µs) the summary keeps, sorted, before its row, as
    /// perftest's -H
    #[arg(short = 'H', long = "report-histogram")]
    pub report_histogram: bool,
    /// Latency tests: list every sample in measurement order first (implies -H), as
    /// perftest's -U
    #[arg(short = 'U', long = "report-unsorted")]
    pub report_unsorted: bool,
    /// Print only this figure instead of the table, one line per size, as perftest's
    /// --output: bandwidth (the BW average in the table's unit) or message_rate (Mpps) for a
    /// bandwidth test, latency (the average, µs) for a latency test; the summary line goes to
    /// stderr
    #[arg(long = "output", value_name = "UNITS",
          value_parser = clap::builder::PossibleValuesParser::new(
              ["bandwidth", "message_rate", "latency"]))]
    pub output: Option<String>,
    /// Run until interrupted (Ctrl-C, or SIGTERM), printing the bandwidth of every -D
    /// seconds (default 5) as it ends, as perftest's --run_infinitely; write-bw and read-bw.
    /// The client then verifies and closes as any run does; a server takes the flag and
    /// waits for the client's close
    #[arg(long = "run_infinitely", alias = "run-infinitely")]
    pub run_infinitely: bool,
    /// The atomic of atomic-bw and atomic-lat, as perftest's -A: FETCH_AND_ADD (add 1,
    /// the default) or CMP_AND_SWAP (compare 0, swap 0, as perftest posts it); give it to
    /// both sides (an rnic server checks what its cells gained)
    #[arg(short = 'A', long = "atomic_type", value_name = "TYPE")]
    pub atomic_type: Option<String>,
    /// The server sends and the client receives, as perftest's --reversed: the side that
    /// connects (HOST) answers and prints the other's figures, the side with --server runs
    /// the test; write-bw, read-bw, send-bw and atomic-bw, and both sides take it
    #[arg(long = "reversed")]
    pub reversed: bool,
    /// Receives posted on each QP at most, as perftest's -r: send-bw and send-lat, 1 to
    /// 16384 [default: 512; over UC and UD one per message up to 16000, as perftest]
    #[arg(short = 'r', long = "rx-depth", value_name = "NUM")]
    pub rx_depth: Option<u32>,
    /// READs and atomics outstanding at once, as perftest's -o: this side's QP answers at
    /// most this many from the peer and tells the peer so, and the peer's tells this side's
    /// how many it may post (give it to both sides); read-bw, read-lat, atomic-bw and
    /// atomic-lat, 1 to 16 [default: 16, this device's maximum]
    #[arg(short = 'o', long = "outs", value_name = "NUM")]
    pub outs: Option<u32>,
    /// Traffic both ways at once, as perftest's -b: each side runs the test against the
    /// other's buffers and prints the sum of both directions; write-bw (RC, UC) and read-bw,
    /// and both sides take it
    #[arg(short = 'b', long = "bidirectional")]
    pub bidirectional: bool,
    /// The QPs take their receives from one shared receive queue of -r's depth, as
    /// perftest's --use-srq, each QP's share of it posted for it; send-bw and send-lat
    #[arg(long = "use-srq", alias = "use_srq")]
    pub use_srq: bool,
    /// The traffic class of the test's packets, their IPv4 TOS byte (DSCP and ECN), as
    /// perftest's --tclass sets the GRH's; each side sets its own; not with -R, where -T
    /// does it [default: 2, ECT(0)]
    #[arg(long = "tclass", value_name = "N")]
    pub tclass: Option<u8>,
    /// With -R, the connection's TOS, as perftest's -T sets the RDMA CM ID's: the REQ
    /// carries it as the path's traffic class and both sides' packets take it, the
    /// listening side's from the REQ [default: 2, ECT(0)]
    #[arg(short = 'T', long = "tos", value_name = "N")]
    pub tos: Option<u8>,
    /// Caps this side's posting at RATE, as perftest's software rate limiter: work requests
    /// go in bursts of --burst_size, a burst starting a burst's time at RATE after the last;
    /// write-bw, read-bw and send-bw (not send-bw -b)
    #[arg(long = "rate_limit", value_name = "RATE")]
    pub rate_limit: Option<f64>,
    /// The units of --rate_limit, as perftest's: M (MiB/s), g (Gb/s) or p (messages per
    /// second) [default: g]
    #[arg(long = "rate_units", value_name = "UNITS")]
    pub rate_units: Option<String>,
    /// The rate limiter, as perftest's --rate_limit_type: SW, rnic live's (and perftest's
    /// on RoCE, where it falls back to SW); HW and PP need a NIC's limiter and are refused
    #[arg(long = "rate_limit_type", value_name = "TYPE")]
    pub rate_limit_type: Option<String>,
    /// Work requests in a burst of the rate limiter [default: -t]
    #[arg(long = "burst_size", value_name = "N")]
    pub burst_size: Option<u32>,
    /// Microseconds each side waits before each post of a latency test, as perftest's
    /// --latency_gap (its engine still working meanwhile, as a NIC does while perftest
    /// spins); the figures include it, as perftest's, up to 1 s
    #[arg(long = "latency_gap", value_name = "USEC")]
    pub latency_gap: Option<u64>,
    /// Fails the run (exit 1, after the report) when no size's average bandwidth, in the
    /// table's units (MB/s, or Gb/s with --report_gbits), reaches VALUE, as perftest's
    /// verifier; the bandwidth tests
    #[arg(short = 'w', long = "limit_bw", value_name = "VALUE")]
    pub limit_bw: Option<f64>,
    /// The same for the message rate (Mpps), as perftest's -y
    #[arg(short = 'y', long = "limit_msgrate", value_name = "VALUE")]
    pub limit_msgrate: Option<f64>,
    /// The RC retry count the REQ carries, as perftest's --retry_count (with -R only, as
    /// perftest sets it through RDMA CM): this side's QP resends an unacknowledged packet
    /// that many times, and a listening peer's QP takes the REQ's; 0 to 7 [default: 7]
    #[arg(long = "retry_count", value_name = "N")]
    pub retry_count: Option<u8>,
    /// perftest's other flags: ignored with a note, or refused naming the flag.
    #[command(flatten)]
    pub perftest: crate::cli::perftest_compat::Compat<perftest_flags::LiveFlags>,
}

/// The tests perftest has, and whether rnic live runs them yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveTest {
    WriteBw,
    WriteLat,
    SendBw,
    SendLat,
    ReadBw,
    ReadLat,
    AtomicBw,
    AtomicLat,
    /// rdma-core's `ibv_rc_pingpong` (its own exchange, not perftest's).
    RcPingpong,
}

impl LiveTest {
    /// The test's name on the command line.
    fn name(self) -> &'static str {
        match self {
            LiveTest::WriteBw => "write-bw",
            LiveTest::WriteLat => "write-lat",
            LiveTest::SendBw => "send-bw",
            LiveTest::SendLat => "send-lat",
            LiveTest::ReadBw => "read-bw",
            LiveTest::ReadLat => "read-lat",
            LiveTest::AtomicBw => "atomic-bw",
            LiveTest::AtomicLat => "atomic-lat",
            LiveTest::RcPingpong => "rc-pingpong",
        }
    }

    /// perftest's bandwidth tests: write-bw, read-bw, send-bw, atomic-bw.
    fn is_bandwidth(self) -> bool {
        matches!(
            self,
            LiveTest::WriteBw | LiveTest::ReadBw | LiveTest::SendBw | LiveTest::AtomicBw
        )
    }

    fn is_atomic(self) -> bool {
        matches!(self, LiveTest::AtomicBw | LiveTest::AtomicLat)
    }

    fn is_latency(self) -> bool {
        matches!(
            self,
            LiveTest::WriteLat
                | LiveTest::SendLat
                | LiveTest::ReadLat
                | LiveTest::AtomicLat
                | LiveTest::RcPingpong
        )
    }
}

/// The tests `rnic live` runs, as its messages list them.
const RUNS: &str =
    "write-bw, write-lat, send-bw, send-lat, read-bw, read-lat, atomic-bw, atomic-lat and \
     rc-pingpong";
/// Checked options of a run.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub test: LiveTest,
    /// RC, UC or UD.
    pub service: ServiceType,
    pub host: Option<String>,
    pub port: u16,
    pub bind: Option<Ipv4Addr>,
    pub size: u64,
    /// `-s` was given (a UD message too long for the path MTU is then refused, as perftest
    /// does, instead of cut to it).
    pub size_given: bool,
    /// Operations per QP (perftest's `-n`).
    pub iters: u64,
    /// QPs (perftest's `-q`), each with its own buffers and `tx_depth` in flight.
    pub qps: u32,
    pub mtu_bytes: u32,
    pub tx_depth: u32,
    /// PSNs a requester may have unacknowledged (see `endpoint::QpTuning::window_psns`).
    pub window_psns: u32,
    /// Local ACK timeout code (`-u`).
    pub qp_timeout: u8,
    pub json: Option<PathBuf>,
    /// `--out_json`/`--out_json_file`: where perftest's JSON report goes.
    pub out_json: Option<PathBuf>,
    pub pcap: Option<PathBuf>,
    /// `-R`: the QP is connected by RDMA CM MADs on the wire instead of modify_qp with the
    /// peer's keys from the exchange.
    pub rdma_cm: bool,
    /// `-z` (or `-R`): the exchange runs over an RDMA CM control connection instead of TCP.
    pub exchange_by_cm: bool,
    /// `--report_gbits`: the bandwidth table in Gb/s.
    pub report_gbits: bool,
    /// `--output`: the one figure printed instead of the table (`bandwidth`,
    /// `message_rate` or `latency`).
    pub output: Option<String>,
    /// `-H`, `-U`: the samples a latency test lists before its row.
    pub samples: Samples,
    /// `-b --report-both`: each direction's row after the summed table.
    pub report_both: bool,
    /// `-a`: the client measures every power of two from 2 bytes to `size` (8 MiB), and
    /// both sides' buffers hold `size`.
    pub all_sizes: bool,
    /// `-D` and `--margin`: a run of fixed length instead of `iters` operations.
    pub duration: Option<DurationMode>,
    /// `--run_infinitely`: the seconds of each interval of an endless run (`-D`, default
    /// 5), `duration` then being `None`.
    pub run_infinitely_s: Option<f64>,
    /// One line for each perftest flag given that `rnic live` ignores, saying why.
    pub ignored_flags: Vec<String>,
    /// `-A`: the atomic of atomic-bw and atomic-lat.
    pub atomic: atomic_bw::AtomicOp,
    /// `-b`: both sides run the test against each other's buffers.
    pub bidirectional: bool,
    /// `-r`: receives a QP of a SEND test keeps posted at most (perftest's `rx_depth`).
    pub rx_depth: u32,
    /// `--reversed`: the side with `--server` runs the test, the connecting side answers.
    pub reversed: bool,
    /// `-o`: READs and atomics this side answers at once, told to the peer as perftest's
    /// `out_reads` (the peer's bounds what this side posts).
    pub out_reads: u32,
    /// `--use-srq`: the test's QPs take their receives from one shared receive queue of
    /// `rx_depth` WQEs.
    pub use_srq: bool,
    /// `--tclass`, or `-T` with `-R`: the traffic class (IPv4 TOS byte) of this side's
    /// packets; `None`: the engine's default.
    pub traffic_class: Option<u8>,
    /// `--rate_limit`: perftest's software rate limiter, if given.
    pub rate_limit: Option<pacer::RateLimit>,
    /// `--latency_gap`: the wait before each post of a latency test (zero: none).
    pub latency_gap: std::time::Duration,
    /// `-w` and `-y`: the average bandwidth (the table's units) and message rate (Mpps)
    /// some size must reach, else the run fails after its report.
    pub floors: limits::Floors,
    /// `--retry_count`: the RC transport retry count (perftest's 7 by default).
    pub retry_count: u8,
}

/// perftest's duration mode: the run's length and the margin at each end that is not
/// measured, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DurationMode {
    pub total_s: f64,
    pub margin_s: f64,
}

impl DurationMode {
    /// Seconds measured: the run less a margin at each end.
    pub fn window_s(&self) -> f64 {
        self.total_s - 2.0 * self.margin_s
    }

    /// Whether `t` seconds into the run fall in the measured window (perftest's
    /// SAMPLE_STATE).
    pub fn samples_at(&self, t: f64) -> bool {
        self.margin_s <= t && t < self.total_s - self.margin_s
    }
}

impl LiveOptions {
    /// The sizes a run measures in turn: `-s`, or with `-a` every power of two from 2 bytes
    /// to `size` (8 MiB), as perftest's `-a` runs them, `-n` operations each.
    pub fn sizes(&self) -> Vec<u64> {
        if self.all_sizes {
            (1..=self.size.trailing_zeros())
                .map(|k| 1u64 << k)
                .collect()
        } else {
            vec![self.size]
        }
    }

    /// The sizes a run measures over the path MTU agreed with the peer (`mtu_bytes`): those
    /// of [`LiveOptions::sizes`], except that a READ client's `-a` stops at the largest
    /// size whose responses fit its window (see [`LiveOptions::check_read_fits`]) and says
    /// so: an expert asking for every size wants all that can run, not a refusal, and the
    /// note makes the missing rows no surprise.
    pub fn sizes_at(&self, mtu_bytes: u32) -> (Vec<u64>, Option<String>) {
        let mut sizes = self.sizes();
        let max = self.read_window_bytes(mtu_bytes);
        if !(self.all_sizes && self.reads() && sizes.last().is_some_and(|&s| s > max)) {
            return (sizes, None);
        }
        sizes.retain(|&s| s <= max);
        let largest = sizes.last().copied().unwrap_or(0);
        let note = format!(
            "-a/--all: the sizes stop at {largest} bytes: a READ's responses must fit the \
             requester's window of {} packets, {max} bytes at a path MTU of {mtu_bytes}",
            self.window_psns
        );
        (sizes, Some(note))
    }

    /// Whether this side runs the test's traffic, as perftest's CLIENT: the side that
    /// connects, or with `--reversed` the one that listens.
    pub fn runs_traffic(&self) -> bool {
        self.host.is_some() != self.reversed
    }

    /// Whether this side posts READs: the side that runs a READ test's traffic, and both
    /// sides of a bidirectional one.
    fn reads(&self) -> bool {
        let posts = self.runs_traffic() || self.bidirectional;
        posts && matches!(self.test, LiveTest::ReadBw | LiveTest::ReadLat)
    }

    /// The most bytes one READ's responses can carry: the requester's window of packets at
    /// path MTU `mtu_bytes`.
    fn read_window_bytes(&self, mtu_bytes: u32) -> u64 {
        u64::from(self.window_psns) * u64::from(mtu_bytes)
    }

    /// What the peer must run too, told to an rnic peer in the exchange.
    pub fn shape(&self) -> oob::RunShape {
        oob::RunShape {
            qps: self.qps,
            bidirectional: self.bidirectional,
            reversed: self.reversed,
            atomic: self.test.is_atomic().then_some(self.atomic),
        }
    }

    /// These options at one of the sizes of `-a`.
    pub fn at_size(&self, size: u64) -> LiveOptions {
        LiveOptions {
            size,
            ..self.clone()
        }
    }

    /// A READ's responses all fall inside the requester's window (`window_psns` packets), so
    /// the message of a READ test must fit it at the path MTU (`mtu_bytes`, `-m` or the MTU
    /// agreed with the peer). The READ-back that verifies other tests reads in pieces.
    /// Checked on the client, which posts the READs (the server only answers them: a peer's
    /// window is the peer's); with `-a` the sizes stop at the window instead
    /// ([`LiveOptions::sizes_at`]).
    pub fn check_read_fits(&self, mtu_bytes: u32) -> Result<(), UsageError> {
        let max = self.read_window_bytes(mtu_bytes);
        if self.reads() && !self.all_sizes && self.size > max {
            let shared = match self.qps {
                1 => String::new(),
                n => format!(" (the QPs of -q/--qp {n} share {WINDOW_PSNS})"),
            };
            return Err(UsageError(format!(
                "-s/--size {}: a READ's responses must fit the requester's window of {} \
                 packets{shared}, {max} bytes at a path MTU of {mtu_bytes} (-m/--mtu, or the \
                 smaller MTU the peer offered)",
                self.size, self.window_psns
            )));
        }
        Ok(())
    }

    /// The options of a UD run over the path MTU both sides agreed on (`mtu_bytes`, which
    /// may be below `-m`): as perftest, a size chosen by default shrinks to the MTU, one
    /// given with `-s` that exceeds it is refused. Other services are unchanged.
    pub fn fit_to_mtu(&self, mtu_bytes: u32) -> anyhow::Result<LiveOptions> {
        let mtu = u64::from(mtu_bytes);
        if self.service != ServiceType::Ud || self.size <= mtu {
            return Ok(self.clone());
        }
        if self.size_given {
            anyhow::bail!(
                "-s/--size {}: the path MTU agreed with the peer is {mtu_bytes} bytes, and a UD \
                 message is one packet of at most that",
                self.size
            );
        }
        Ok(LiveOptions {
            size: mtu,
            ..self.clone()
        })
    }
}

/// PSNs a requester may have unacknowledged: the receive buffers of the two sockets hold
/// about this many full frames.
const WINDOW_PSNS: u32 = 256;

/// Most QPs of a run (`-q`): each keeps at least 16 packets of the shared window.
const MAX_QPS: u32 = WINDOW_PSNS / 16;

/// Work requests in flight per QP of a bandwidth test without `-t`: perftest's 128.
const DEFAULT_TX_DEPTH: u32 = 128;

/// The largest size of `-a`, bytes: perftest's 2^23.
const ALL_SIZES_MAX: u64 = 1 << 23;

/// The deepest receive queue `-r` asks for: perftest's `MAX_RX`.
const MAX_RX_DEPTH: u32 = 16_384;

/// The longest `--latency_gap`, µs: a second (a longer wait would look like a stalled peer).
const MAX_LATENCY_GAP_US: u64 = 1_000_000;

/// Largest message: what one buffer of process memory holds here.
const MAX_SIZE: u64 = 1 << 30;

impl LiveCmd {
    /// Checks the flags; every refusal names its flag.
    pub fn options(&self) -> Result<LiveOptions, UsageError> {
        let test = match self.test.as_str() {
            "write-bw" => LiveTest::WriteBw,
            "write-lat" => LiveTest::WriteLat,
            "send-bw" => LiveTest::SendBw,
            "send-lat" => LiveTest::SendLat,
            "read-bw" => LiveTest::ReadBw,
            "read-lat" => LiveTest::ReadLat,
            "atomic-bw" => LiveTest::AtomicBw,
            "atomic-lat" => LiveTest::AtomicLat,
            "rc-pingpong" => LiveTest::RcPingpong,
            t => {
                return Err(UsageError(format!(
                    "unknown test {t:?}: rnic live runs {RUNS}"
                )))
            }
        };
        if self.server == self.host.is_some() {
            return Err(UsageError(
                "give either --server or HOST (the server to connect to)".into(),
            ));
        }
        let bind = self.bind_address()?;
        if let Some(h) = &self.host {
            if h.parse::<std::net::Ipv6Addr>().is_ok() {
                return Err(UsageError(format!(
                    "HOST {h}: IPv6 is not supported (rnic live speaks RoCEv2 over IPv4)"
                )));
            }
        }
        let service = connection(&self.connection, test)?;
        if ![256, 512, 1024, 2048, 4096].contains(&self.mtu) {
            return Err(UsageError(format!(
                "-m/--mtu {}: must be 256, 512, 1024, 2048 or 4096",
                self.mtu
            )));
        }
        let latency = test.is_latency();
        let atomic = matches!(test, LiveTest::AtomicBw | LiveTest::AtomicLat);
        self.check_all(test)?;
        let size = self.size.unwrap_or(match (latency, atomic) {
            // perftest's UD `-a` runs up to the path MTU.
            _ if self.all && service == ServiceType::Ud => u64::from(self.mtu),
            _ if self.all => ALL_SIZES_MAX,
            _ if test == LiveTest::RcPingpong => 4096,
            (false, _) if service == ServiceType::Ud => u64::from(self.mtu),
            (_, true) => atomic_bw::ATOMIC_BYTES,
            (true, false) => 2,
            (false, false) => 65536,
        });
        if atomic && size != atomic_bw::ATOMIC_BYTES {
            return Err(UsageError(format!(
                "-s/--size {size}: {}'s operands are {} bytes",
                test.name(),
                atomic_bw::ATOMIC_BYTES
            )));
        }
        if size == 0 || size > MAX_SIZE {
            return Err(UsageError(format!(
                "-s/--size {size}: must be 1..={MAX_SIZE} bytes"
            )));
        }
        if service == ServiceType::Ud && size > u64::from(self.mtu) {
            return Err(UsageError(format!(
                "-s/--size {size}: a UD message is one packet of at most the path MTU (-m/--mtu {})",
                self.mtu
            )));
        }
        let iters = self.iters.unwrap_or(if latency { 1000 } else { 5000 });
        if iters < 2 {
            return Err(UsageError(format!(
                "-n/--iters {iters}: must be at least 2"
            )));
        }
        let tx_depth = self.tx_depth_for(test)?;
        let mut options = LiveOptions {
            test,
            service,
            host: self.host.clone(),
            port: self.port,
            bind,
            size,
            size_given: self.size.is_some(),
            iters,
            qps: self.qps_for(test, size)?,
            mtu_bytes: self.mtu,
            tx_depth,
            // The QPs share the sockets' buffers, so they share the window too.
            window_psns: WINDOW_PSNS / self.qps.max(1),
            qp_timeout: self.qp_timeout,
            json: self.json.clone(),
            out_json: self.out_json_for(test)?,
            pcap: self.pcap.clone(),
            rdma_cm: self.rdma_cm_for(test, service)?,
            exchange_by_cm: self.exchange_by_cm_for(test)?,
            report_gbits: self.report_gbits_for(test)?,
            output: self.output_for(test)?,
            samples: self.samples_for(test)?,
            report_both: self.report_both_for(test)?,
            all_sizes: self.all,
            duration: if self.run_infinitely {
                None
            } else {
                self.duration_for(test)?
            },
            run_infinitely_s: self.run_infinitely_for(test)?,
            ignored_flags: self.perftest.check()?,
            atomic: self.atomic_for(test)?,
            bidirectional: self.bidirectional_for(test, service)?,
            out_reads: self.out_reads_for(test)?,
            rx_depth: self.rx_depth_for(test, service)?,
            reversed: self.reversed_for(test)?,
            use_srq: self.use_srq_for(test, service)?,
            traffic_class: self.traffic_class_for()?,
            rate_limit: self.rate_limit_for(test)?,
            latency_gap: self.latency_gap_for(test)?,
            floors: limits::Floors::of(self.limit_bw, self.limit_msgrate, test)?,
            retry_count: self.retry_count_for()?,
        };
        options.check_read_fits(self.mtu)?;
        if options.samples != Samples::Off && options.duration.is_some() {
            options.ignored_flags.push(format!(
                "rnic: -H/-U list nothing on {}: under -D perftest keeps no samples (run \
                 iterations, -n, for them)",
                test.name()
            ));
        }
        Ok(options)
    }

    /// `-q`: the bandwidth tests, write-bw, read-bw, atomic-bw (whose servers only answer,
    /// so the QPs differ only in their buffers) and send-bw (whose server keeps receives
    /// posted on every QP), up to [`MAX_QPS`] (they share the sockets' window of
    /// [`WINDOW_PSNS`] packets), with `-R` too (each test QP connected by RDMA CM in turn,
    /// or over UD resolved by its own SIDR), and all
    /// the QPs' buffers of `size` bytes together in [`MAX_SIZE`].
    fn qps_for(&self, test: LiveTest, size: u64) -> Result<u32, UsageError> {
        let qps = self.qps;
        if qps == 1 {
            return Ok(qps);
        }
        if qps == 0 || qps > MAX_QPS {
            return Err(UsageError(format!(
                "-q/--qp {qps}: must be 1..={MAX_QPS} (the QPs share the sockets' window of \
                 {WINDOW_PSNS} packets)"
            )));
        }
        if test.is_latency() {
            return Err(UsageError(format!(
                "-q/--qp {qps}: perftest's latency tests run one QP, not {}",
                test.name()
            )));
        }
        if u64::from(qps) * size > MAX_SIZE {
            return Err(UsageError(format!(
                "-q/--qp {qps} with -s/--size {size}: the QPs' buffers together must fit \
                 {MAX_SIZE} bytes"
            )));
        }
        Ok(qps)
    }

    /// `-b`: write-bw (RC and UC), read-bw, atomic-bw and send-bw over RC, whose sides then
    /// both run the client's loop (perftest has it for every bandwidth test; rnic live does
    /// not run send-bw's over UC or UD or for a duration, where perftest exchanges no
    /// reports), not with `--run_infinitely`.
    fn bidirectional_for(&self, test: LiveTest, service: ServiceType) -> Result<bool, UsageError> {
        if !self.bidirectional {
            return Ok(false);
        }
        let refuse = |why: String| Err(UsageError(format!("-b/--bidirectional: {why}")));
        if !test.is_bandwidth() {
            return refuse(format!(
                "rnic live runs it for write-bw, read-bw, send-bw and atomic-bw, not {}",
                test.name()
            ));
        }
        if test == LiveTest::SendBw && service != ServiceType::Rc && self.all {
            return refuse(format!(
                "rnic live runs send-bw -b -a over RC only: over {} a lost SEND leaves its \
                 receive posted, too small for the next size",
                service.name().to_ascii_uppercase()
            ));
        }
        if self.run_infinitely {
            return refuse("rnic live does not run it with --run_infinitely".into());
        }
        Ok(true)
    }

    /// `--reversed`: perftest's bandwidth tests that have it (write-bw, read-bw, send-bw,
    /// atomic-bw).
    fn reversed_for(&self, test: LiveTest) -> Result<bool, UsageError> {
        if self.reversed && !test.is_bandwidth() {
            return Err(UsageError(format!(
                "--reversed: write-bw, read-bw, send-bw and atomic-bw have it, not {}",
                test.name()
            )));
        }
        Ok(self.reversed)
    }

    /// `-r`: the SEND tests, the only ones whose receives rnic live posts (perftest's WRITE
    /// tests ignore it, its READ and atomic tests take only 1), 1 to perftest's 16384; by
    /// default the service's depth ([`endpoint::recv_depth`]).
    fn rx_depth_for(&self, test: LiveTest, service: ServiceType) -> Result<u32, UsageError> {
        let Some(n) = self.rx_depth else {
            return Ok(endpoint::recv_depth(service));
        };
        if !matches!(test, LiveTest::SendBw | LiveTest::SendLat) {
            return Err(UsageError(format!(
                "-r/--rx-depth {n}: rnic live posts receives in send-bw and send-lat only, not \
                 {}",
                test.name()
            )));
        }
        if !(1..=MAX_RX_DEPTH).contains(&n) {
            return Err(UsageError(format!(
                "-r/--rx-depth {n}: must be 1..={MAX_RX_DEPTH}, as perftest's"
            )));
        }
        Ok(n)
    }

    /// `--tclass` without `-R` (perftest's modify_qp sets the GRH's; under `-R` RDMA CM
    /// moves the QP and perftest drops it) and `-T` with `-R` only, as perftest ("TOS only
    /// valid for rdma_cm based QP").
    fn traffic_class_for(&self) -> Result<Option<u8>, UsageError> {
        match (self.tclass, self.tos, self.rdma_cm) {
            (Some(n), _, true) => Err(UsageError(format!(
                "--tclass {n}: with -R/--rdma_cm the connection's TOS is -T/--tos, as perftest's"
            ))),
            (_, Some(n), false) => Err(UsageError(format!(
                "-T/--tos {n}: the TOS of an RDMA CM connection, with -R/--rdma_cm only, as \
                 perftest's; without -R, --tclass sets the packets' traffic class"
            ))),
            (tclass, tos, _) => Ok(tclass.or(tos)),
        }
    }

    /// `--rate_limit` and its companions, as perftest's software limiter takes them: the
    /// bandwidth tests but atomic-bw and a bidirectional send-bw, units `M`, `g` or `p`,
    /// type SW (perftest's HW falls back to SW on RoCE; PP is a NIC's), a burst of `-t`
    /// unless `--burst_size` says otherwise; the companions without a limit are refused.
    fn rate_limit_for(&self, test: LiveTest) -> Result<Option<pacer::RateLimit>, UsageError> {
        let refuse = |flag: &str, why: &str| Err(UsageError(format!("{flag}: {why}")));
        let Some(rate) = self.rate_limit else {
            return match (&self.rate_units, &self.rate_limit_type, self.burst_size) {
                (None, None, None) => Ok(None),
                (_, _, Some(n)) => refuse(
                    &format!("--burst_size {n}"),
                    "the rate limiter is off; give --rate_limit, as perftest",
                ),
                _ => refuse(
                    "--rate_units/--rate_limit_type",
                    "give --rate_limit with them",
                ),
            };
        };
        let flag = format!("--rate_limit {rate}");
        if !(rate.is_finite() && rate > 0.0) {
            return refuse(&flag, "must be above 0, as perftest's");
        }
        let units = match self.rate_units.as_deref() {
            None => pacer::RateUnits::GigabitsPerS,
            Some(u) => match pacer::RateUnits::parse(u) {
                Some(units) => units,
                None => return refuse(&format!("--rate_units {u}"), "M, g or p, as perftest's"),
            },
        };
        match self.rate_limit_type.as_deref() {
            None | Some("SW") => {}
            Some("HW") => {
                return refuse(
                    "--rate_limit_type HW",
                    "a RoCE QP takes no static rate (perftest fails it the same way); rnic \
                     live's limiter is SW",
                )
            }
            Some("PP") => {
                return refuse(
                    "--rate_limit_type PP",
                    "packet pacing is a NIC's; rnic live's limiter is SW",
                )
            }
            Some(t) => return refuse(&format!("--rate_limit_type {t}"), "HW, SW or PP"),
        }
        let paced = matches!(
            test,
            LiveTest::WriteBw | LiveTest::ReadBw | LiveTest::SendBw
        );
        if !paced || (test == LiveTest::SendBw && self.bidirectional) {
            return refuse(
                &flag,
                "perftest's SW limiter runs write-bw, read-bw and send-bw (not with -b)",
            );
        }
        let burst = match self.burst_size {
            None | Some(0) => self.tx_depth.unwrap_or(DEFAULT_TX_DEPTH),
            Some(n) => n,
        };
        Ok(Some(pacer::RateLimit { rate, units, burst }))
    }

    /// `--out_json`, or `--out_json_file` (which implies it): perftest's JSON report, at
    /// perftest's default name unless named; refused for rc-pingpong (ibv_rc_pingpong
    /// writes none) and for a file another output names.
    fn out_json_for(&self, test: LiveTest) -> Result<Option<PathBuf>, UsageError> {
        let default = || self.out_json.then(|| PathBuf::from("perftest_out.json"));
        let Some(path) = self.out_json_file.clone().or_else(default) else {
            return Ok(None);
        };
        if test == LiveTest::RcPingpong {
            return Err(UsageError(
                "--out_json: rc-pingpong (ibv_rc_pingpong) writes no JSON report".into(),
            ));
        }
        crate::output::check_distinct(&[
            ("--json", self.json.as_deref()),
            ("--out_json_file", Some(&path)),
            ("--pcap", self.pcap.as_deref()),
        ])?;
        Ok(Some(path))
    }

    /// `--report-both`: `-b`'s directions, so refused without `-b` (perftest prints nothing
    /// then) and with `--output`, which replaces the table. (Whether `-b` itself fits the
    /// test, [`LiveCmd::bidirectional_for`] says.)
    fn report_both_for(&self, test: LiveTest) -> Result<bool, UsageError> {
        if !self.report_both {
            return Ok(false);
        }
        if !self.bidirectional {
            return Err(UsageError(
                "--report-both prints each direction of a bidirectional run: give -b too".into(),
            ));
        }
        if test == LiveTest::SendBw && self.duration.is_some() {
            return Err(UsageError(
                "--report-both: send-bw -b -D exchanges no reports (perftest's neither), so \
                 there is no peer's direction to print: leave out one of them"
                    .into(),
            ));
        }
        if let Some(figure) = &self.output {
            return Err(UsageError(format!(
                "--report-both prints into the table, which --output={figure} replaces by one \
                 figure: leave out one of them"
            )));
        }
        Ok(true)
    }

    /// `-H` and `-U`: a latency test's samples, listed in its table (refused for a bandwidth
    /// test, as `rnic perf` refuses them, for rc-pingpong, whose tool has neither, and with
    /// `--output`, which replaces the table). Under `-D` perftest keeps no samples: a note
    /// says none are listed.
    fn samples_for(&self, test: LiveTest) -> Result<Samples, UsageError> {
        let samples = Samples::from_flags(self.report_histogram, self.report_unsorted);
        if samples == Samples::Off {
            return Ok(samples);
        }
        let flag = match self.report_unsorted {
            true => "-U/--report-unsorted",
            false => "-H/--report-histogram",
        };
        if !test.is_latency() || test == LiveTest::RcPingpong {
            return Err(UsageError(format!(
                "{flag} lists a latency test's samples; {} has none: use write-lat, read-lat or \
                 send-lat, or leave it out",
                test.name()
            )));
        }
        if let Some(figure) = &self.output {
            return Err(UsageError(format!(
                "{flag} lists the samples in the table, which --output={figure} replaces by one \
                 figure: leave out one of them"
            )));
        }
        Ok(samples)
    }

    /// `-t`: the bandwidth tests' work requests in flight per QP, 1 to 4096 (default
    /// [`DEFAULT_TX_DEPTH`], perftest's). rnic's latency tests and rc-pingpong keep one
    /// operation in flight (perftest's latency tests parse `-t`, do not list it and change
    /// nothing for it; ibv_rc_pingpong has none), so there it is refused: it was taken and
    /// changed nothing.
    fn tx_depth_for(&self, test: LiveTest) -> Result<u32, UsageError> {
        let Some(depth) = self.tx_depth else {
            return Ok(DEFAULT_TX_DEPTH);
        };
        if test.is_latency() {
            return Err(UsageError(format!(
                "-t/--tx-depth {depth}: the bandwidth tests have it, not {} (a latency test \
                 keeps one operation in flight; perftest's latency tests do not list -t and \
                 change nothing for it)",
                test.name()
            )));
        }
        if depth == 0 || depth > 4096 {
            return Err(UsageError(format!(
                "-t/--tx-depth {depth}: must be 1..=4096"
            )));
        }
        Ok(depth)
    }

    /// `--report_gbits`: the bandwidth tests' table in Gb/s; a latency test's table (and
    /// ibv_rc_pingpong's lines) have no bandwidth, and perftest's latency tests do not list the
    /// flag, so there it is refused: it was taken and changed nothing.
    fn report_gbits_for(&self, test: LiveTest) -> Result<bool, UsageError> {
        if self.report_gbits && test.is_latency() {
            return Err(UsageError(format!(
                "--report_gbits: the bandwidth tests have it, not {} (its table reports \
                 latency, no bandwidth)",
                test.name()
            )));
        }
        Ok(self.report_gbits)
    }

    /// `--output`, refused for a figure the test does not measure (as perftest: a bandwidth
    /// test's bandwidth or message rate, a latency test's latency) and for rc-pingpong,
    /// whose tool has no such flag.
    fn output_for(&self, test: LiveTest) -> Result<Option<String>, UsageError> {
        let Some(figure) = self.output.as_deref() else {
            return Ok(None);
        };
        let fits = match test {
            LiveTest::RcPingpong => {
                return Err(UsageError(format!(
                    "--output={figure}: rc-pingpong (ibv_rc_pingpong) prints its own lines only"
                )))
            }
            t if t.is_latency() => figure == "latency",
            _ => figure != "latency",
        };
        if !fits {
            let measures = if test.is_latency() {
                "latency"
            } else {
                "bandwidth or message_rate"
            };
            return Err(UsageError(format!(
                "--output={figure}: {} reports {measures} only",
                test.name()
            )));
        }
        Ok(Some(figure.to_string()))
    }

    /// `--retry_count`: with `-R` only, as perftest sets it through RDMA CM, and IBA's three
    /// bits.
    fn retry_count_for(&self) -> Result<u8, UsageError> {
        let Some(n) = self.retry_count else {
            return Ok(7);
        };
        if !self.rdma_cm {
            return Err(UsageError(format!(
                "--retry_count {n}: perftest sets it through RDMA CM; give -R/--rdma_cm"
            )));
        }
        if n > 7 {
            return Err(UsageError(format!(
                "--retry_count {n}: 0 to 7 (the REQ's field is three bits)"
            )));
        }
        Ok(n)
    }

    /// `--latency_gap`: the latency tests only, as perftest ("Latency gap feature is only
    /// for latency tests"), up to [`MAX_LATENCY_GAP_US`].
    fn latency_gap_for(&self, test: LiveTest) -> Result<std::time::Duration, UsageError> {
        let Some(us) = self.latency_gap else {
            return Ok(std::time::Duration::ZERO);
        };
        // perftest's latency tests: rc-pingpong is rdma-core's.
        if !test.is_latency() || test == LiveTest::RcPingpong {
            return Err(UsageError(format!(
                "--latency_gap {us}: the latency tests have it (write-lat, read-lat, send-lat, \
                 atomic-lat), not {}",
                test.name()
            )));
        }
        if us > MAX_LATENCY_GAP_US {
            return Err(UsageError(format!(
                "--latency_gap {us}: at most {MAX_LATENCY_GAP_US} µs"
            )));
        }
        Ok(std::time::Duration::from_micros(us))
    }

    /// `--use-srq`: the SEND tests only, as perftest ("Using SRQ only available in SEND
    /// tests"), with at least one receive of `-r` for each QP of `-q`.
    fn use_srq_for(&self, test: LiveTest, service: ServiceType) -> Result<bool, UsageError> {
        if !self.use_srq {
            return Ok(false);
        }
        if !matches!(test, LiveTest::SendBw | LiveTest::SendLat) {
            return Err(UsageError(format!(
                "--use-srq: send-bw and send-lat have it, not {}",
                test.name()
            )));
        }
        let depth = self.rx_depth.unwrap_or(endpoint::recv_depth(service));
        if self.qps > depth {
            return Err(UsageError(format!(
                "--use-srq: -q {} QPs share -r/--rx-depth {depth} receives; give at least one \
                 each, as perftest",
                self.qps
            )));
        }
        Ok(true)
    }

    /// `-o`: the READ and atomic tests only, as perftest ("Setting Outstanding reads only
    /// available on READ verb"), 1 to [`endpoint::MAX_OUT_READS`].
    fn out_reads_for(&self, test: LiveTest) -> Result<u32, UsageError> {
        let Some(n) = self.outs else {
            return Ok(endpoint::MAX_OUT_READS);
        };
        let refuse = |why: String| Err(UsageError(format!("-o/--outs {n}: {why}")));
        if !matches!(
            test,
            LiveTest::ReadBw | LiveTest::ReadLat | LiveTest::AtomicBw | LiveTest::AtomicLat
        ) {
            return refuse(format!(
                "outstanding READs and atomics are set for read-bw, read-lat, atomic-bw and \
                 atomic-lat, not {}, as in perftest",
                test.name()
            ));
        }
        if n == 0 || n > endpoint::MAX_OUT_READS {
            return refuse(format!(
                "must be 1..={} (this device's maximum)",
                endpoint::MAX_OUT_READS
            ));
        }
        Ok(n)
    }

    /// `-A`: FETCH_AND_ADD or CMP_AND_SWAP, for the atomic tests only.
    fn atomic_for(&self, test: LiveTest) -> Result<atomic_bw::AtomicOp, UsageError> {
        let Some(name) = &self.atomic_type else {
            return Ok(atomic_bw::AtomicOp::FetchAdd);
        };
        if !matches!(test, LiveTest::AtomicBw | LiveTest::AtomicLat) {
            return Err(UsageError(format!(
                "-A/--atomic_type {name}: atomic-bw and atomic-lat only, not {}",
                test.name()
            )));
        }
        atomic_bw::AtomicOp::parse(name).ok_or_else(|| {
            UsageError(format!(
                "-A/--atomic_type {name}: must be FETCH_AND_ADD or CMP_AND_SWAP"
            ))
        })
    }

    /// `--run_infinitely`: perftest's bandwidth tests that rnic runs it for, write-bw and
    /// read-bw (perftest has it for bandwidth tests only, and not for a SEND server's
    /// receives in turn), with `-D` as the interval (default 5 s, perftest's), not with
    /// `--margin`, `-n` or `-a`, which an endless run has no use for.
    fn run_infinitely_for(&self, test: LiveTest) -> Result<Option<f64>, UsageError> {
        if !self.run_infinitely {
            return Ok(None);
        }
        let refuse = |why: String| Err(UsageError(format!("--run_infinitely: {why}")));
        if !matches!(test, LiveTest::WriteBw | LiveTest::ReadBw) {
            return refuse(format!(
                "rnic live runs it for write-bw and read-bw, not {}",
                test.name()
            ));
        }
        if self.all || self.iters.is_some() || self.margin.is_some() {
            return refuse("an endless run takes no -a/--all, -n/--iters or --margin".into());
        }
        let interval_s = self.duration.unwrap_or(5.0);
        if !(interval_s.is_finite() && interval_s > 0.0 && interval_s <= 86_400.0) {
            return refuse(format!(
                "-D/--duration {interval_s}: the interval must be above 0 and at most a day"
            ));
        }
        Ok(Some(interval_s))
    }

    /// `-D` and `--margin`: every perftest test (ibv_rc_pingpong has no such mode), not with
    /// `-a`, which perftest refuses with it too ("Duration mode currently doesn't support
    /// running on all sizes"). The margin defaults to perftest's, a quarter of `-D` in whole
    /// seconds (its `duration / 4` on integers); the measured part, `-D` less twice the
    /// margin, must be positive. `--margin` without `-D` is refused: it would change nothing.
    fn duration_for(&self, test: LiveTest) -> Result<Option<DurationMode>, UsageError> {
        let Some(total_s) = self.duration else {
            // The margin trims a -D run's ends; a run of -n iterations has none to trim, so
            // it was dropped without a word.
            if let Some(margin) = self.margin {
                return Err(UsageError(format!(
                    "-f/--margin {margin}: it leaves seconds out at each end of a -D/--duration \
                     run, and this run counts -n iterations; give -D too, or leave it out"
                )));
            }
            return Ok(None);
        };
        if test == LiveTest::RcPingpong {
            return Err(UsageError(
                "-D/--duration: rc-pingpong (ibv_rc_pingpong) has no duration mode".into(),
            ));
        }
        if self.all {
            return Err(UsageError(
                "-D/--duration and -a/--all exclude each other, as in perftest".into(),
            ));
        }
        if let Some(n) = self.iters {
            // A run of -D's length counts the operations that complete in it: -n was
            // dropped in silence, as perftest drops it (it sets iters to 0 under -D); the
            // simulator's perf refuses the pair too.
            return Err(UsageError(format!(
                "-n/--iters {n} and -D/--duration {total_s} exclude each other (perftest drops -n \
                 under -D without a word): -D runs for a time and counts the operations that \
                 complete in it; leave out one"
            )));
        }
        let margin_s = self.margin.unwrap_or((total_s / 4.0).floor());
        if !(total_s.is_finite() && margin_s.is_finite() && margin_s >= 0.0) {
            return Err(UsageError(format!(
                "-D/--duration {total_s} and --margin {margin_s}: must be finite, the margin \
                 at least 0"
            )));
        }
        if total_s > 86_400.0 {
            // In scientific notation: 1e308 written out is 309 digits.
            return Err(UsageError(format!(
                "-D/--duration {total_s:e}: at most a day (86400 s)"
            )));
        }
        if total_s - 2.0 * margin_s <= 0.0 {
            return Err(UsageError(format!(
                "-D/--duration {total_s}: must be longer than twice --margin ({margin_s} s)"
            )));
        }
        Ok(Some(DurationMode { total_s, margin_s }))
    }

    /// `-a`: every test but atomic-bw and atomic-lat (whose operand is 8 bytes) and
    /// rc-pingpong, and not
    /// with `-s`, which it replaces. As perftest: the bandwidth tests' size loop is the
    /// client's alone where the server is passive (write-bw, read-bw) and both sides' in
    /// send-bw (the server posts each size's receives, a handshake before and after each
    /// size); both sides loop in write-lat and send-lat, read-lat's server is passive.
    fn check_all(&self, test: LiveTest) -> Result<(), UsageError> {
        if !self.all {
            return Ok(());
        }
        if matches!(
            test,
            LiveTest::AtomicBw | LiveTest::AtomicLat | LiveTest::RcPingpong
        ) {
            return Err(UsageError(format!(
                "-a/--all: {} has one message size{}",
                test.name(),
                if test != LiveTest::RcPingpong {
                    " (8 bytes; perftest refuses -a there too)"
                } else {
                    ""
                }
            )));
        }
        if let Some(size) = self.size {
            return Err(UsageError(format!(
                "-a/--all runs every size from 2 B to {ALL_SIZES_MAX} B: leave out -s/--size ({size})"
            )));
        }
        Ok(())
    }

    /// `--bind`, or perftest's `--source_ip` (the same address; both given must agree): an
    /// IPv4 address.
    fn bind_address(&self) -> Result<Option<Ipv4Addr>, UsageError> {
        let parse = |(flag, b): (&str, &str)| match b.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(ip)) => Ok(ip),
            Ok(std::net::IpAddr::V6(_)) => Err(UsageError(format!(
                "{flag} {b}: IPv6 is not supported (rnic live speaks RoCEv2 over IPv4)"
            ))),
            Err(_) => Err(UsageError(format!("{flag} {b:?} is not an IPv4 address"))),
        };
        let bind = self
            .bind
            .as_deref()
            .map(|b| parse(("--bind", b)))
            .transpose()?;
        let source = (self.source_ip.as_deref())
            .map(|b| parse(("--source_ip", b)))
            .transpose()?;
        match (bind, source) {
            (Some(b), Some(s)) if b != s => Err(UsageError(format!(
                "--source_ip {s}: --bind says {b}; they name the same address, give one"
            ))),
            _ => Ok(bind.or(source)),
        }
    }

    /// `-z`, or `-R`, which implies it (perftest sets its `use_rdma_cm` for either);
    /// refused for rc-pingpong, which exchanges over TCP only.
    fn exchange_by_cm_for(&self, test: LiveTest) -> Result<bool, UsageError> {
        if self.com_rdma_cm && test == LiveTest::RcPingpong {
            return Err(UsageError(
                "-z/--com_rdma_cm: rc-pingpong (ibv_rc_pingpong) exchanges its keys over TCP only"
                    .into(),
            ));
        }
        let by_cm = self.com_rdma_cm || self.rdma_cm;
        if by_cm && self.server && self.bind.is_none() && self.source_ip.is_none() {
            return Err(UsageError(
                "--server with -R or -z needs --bind IPV4: no TCP connection tells rnic its own \
                 address"
                    .into(),
            ));
        }
        Ok(by_cm)
    }

    /// `-R`, refused where perftest's rdma_cm does not connect the QP this way: UC (librdmacm
    /// has none) and rc-pingpong (which has no such flag). A UD QP is resolved by SIDR.
    fn rdma_cm_for(&self, test: LiveTest, service: ServiceType) -> Result<bool, UsageError> {
        if !self.rdma_cm {
            return Ok(false);
        }
        if test == LiveTest::RcPingpong {
            return Err(UsageError(
                "-R/--rdma_cm: rc-pingpong (ibv_rc_pingpong) has no RDMA CM mode".into(),
            ));
        }
        if service == ServiceType::Uc {
            return Err(UsageError(format!(
                "-R/--rdma_cm: rnic live connects RC QPs and resolves UD QPs by RDMA CM, not {} \
                 (librdmacm has no UC)",
                self.connection.to_ascii_uppercase()
            )));
        }
        Ok(true)
    }
}

/// The service `-c` names, refused for a test that cannot run over it. perftest runs UC
/// WRITE and SEND tests and UD SEND tests. Over UC `rnic live` runs write-bw, write-lat,
/// send-lat and send-bw (whose receivers post a receive for every message up to perftest's
/// 16000, since UC drops a SEND that finds none, with no RNR to wait for); over UD
/// send-bw and send-lat, one datagram per message.
fn connection(name: &str, test: LiveTest) -> Result<ServiceType, UsageError> {
    use LiveTest::*;
    match name.to_ascii_uppercase().as_str() {
        "RC" => Ok(ServiceType::Rc),
        "UC" if matches!(test, WriteBw | WriteLat | SendLat | SendBw) => Ok(ServiceType::Uc),
        "UC" => Err(UsageError(format!(
            "-c/--connection UC: rnic live runs UC for write-bw, write-lat, send-bw and \
             send-lat only, not {}",
            test.name()
        ))),
        "UD" if matches!(test, SendBw | SendLat) => Ok(ServiceType::Ud),
        "UD" => Err(UsageError(format!(
            "-c/--connection UD: UD carries SENDs only; rnic live runs it for send-bw and \
             send-lat, not {}",
            test.name()
        ))),
        other => Err(UsageError(format!(
            "-c/--connection {other:?}: must be RC, UC or UD"
        ))),
    }
}

/// A run that the peer or the network kept from completing (no server at the address, no
/// answer, the peer gone): exit status 3 with `reason`, as a simulated run whose RDMA CM
/// could not connect (it was 1, which says the bytes did not verify).
pub(crate) fn peer_failed(reason: impl Into<String>) -> anyhow::Error {
    crate::RunFailed {
        status: crate::report::RunStatus::Incomplete,
        reason: reason.into(),
    }
    .into()
}

/// The files a run writes, checked before it waits for its peer (exit 4, as `rnic perf`
/// checks its outputs before it simulates): an unwritable `--json` or `--pcap` failed only
/// once the run had ended, a server's after its client had come and gone (and
/// `--out_json_file`'s check exited 2, as bad input).
fn check_outputs(o: &LiveOptions) -> anyhow::Result<()> {
    if o.json.as_deref() == Some(std::path::Path::new("-")) {
        anyhow::bail!(UsageError(
            "--json -: rnic live writes its JSON to a file (the table goes to standard \
             output); name a file"
                .into()
        ));
    }
    for (what, path) in [
        ("JSON output (--json)", &o.json),
        ("perftest JSON report (--out_json_file)", &o.out_json),
        ("pcap (--pcap)", &o.pcap),
    ] {
        if let Some(path) = path {
            crate::output::check_file(what, path)?;
        }
    }
    Ok(())
}

/// Runs `rnic live`: prints perftest's table, writes `--json`; a run whose bytes did not
/// verify (exit status 1), or that did not complete what it was asked (3), fails after
/// printing.
pub fn run(cmd: &LiveCmd, out: &mut dyn Write) -> anyhow::Result<()> {
    let o = cmd.options()?;
    check_outputs(&o)?;
    for note in &o.ignored_flags {
        eprintln!("{note}");
    }
    let r = match o.test {
        LiveTest::WriteBw => bw::run(&o, bw::Verb::Write)?,
        LiveTest::WriteLat => write_lat::run(&o)?,
        LiveTest::SendBw => send_bw::run(&o)?,
        LiveTest::SendLat => send_lat::run(&o)?,
        LiveTest::ReadBw => bw::run(&o, bw::Verb::Read)?,
        LiveTest::ReadLat | LiveTest::AtomicLat => read_lat::run(&o)?,
        LiveTest::AtomicBw => bw::run(&o, bw::Verb::Atomic)?,
        LiveTest::RcPingpong => rc_pingpong::run(&o)?,
    };
    match &o.output {
        Some(figure) => {
            r.print_figures(out, figure, o.report_gbits)?;
            r.print_summary(&mut std::io::stderr())?;
        }
        None => {
            r.print(out, o.report_gbits, o.samples)?;
            if o.report_both {
                r.print_directions(out, o.report_gbits)?;
            }
        }
    }
    if let Some(p) = &o.json {
        r.write_json(p)?;
    }
    if let Some(p) = &o.out_json {
        write_perftest_json(&r, &o, p)?;
    }
    if let report::Verification::Mismatch { offset } = r.verification {
        anyhow::bail!(crate::RunFailed {
            status: crate::report::RunStatus::Corrupt,
            reason: format!("the data that arrived differs from what was sent (byte {offset})"),
        });
    }
    if let Some(reason) = r.incomplete {
        anyhow::bail!(crate::RunFailed {
            status: crate::report::RunStatus::Incomplete,
            reason,
        });
    }
    o.floors.check(&r, o.report_gbits)
}

/// `--out_json`: perftest's report at `path`; a passive READ server, which measures nothing,
/// writes none, as perftest's, and says so.
fn write_perftest_json(r: &report::LiveResult, o: &LiveOptions, path: &Path) -> anyhow::Result<()> {
    let Some(report) = perftest_json::report(r, o) else {
        eprintln!(
            "rnic: no --out_json report: this {} server answers READs and measures nothing, \
             as perftest's",
            o.test.name()
        );
        return Ok(());
    };
    crate::output::write_named(
        "perftest JSON report (--out_json_file)",
        path,
        report.to_text().as_bytes(),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        live: LiveCmd,
    }

    /// Each of `cases`' command lines is refused with a message that starts with `flag` and
    /// says its words.
    fn assert_refused(flag: &str, cases: &[(&str, &str)]) {
        for (args, words) in cases {
            let e = options(args).unwrap_err().0;
            assert!(e.starts_with(flag) && e.contains(words), "{args}: {e}");
        }
    }

    pub(super) fn options(args: &str) -> Result<LiveOptions, UsageError> {
        let words = std::iter::once("rnic").chain(args.split_whitespace());
        Cli::try_parse_from(words).unwrap().live.options()
    }

    /// `--out_json_file` implies `--out_json`; perftest's default name otherwise; refused
    /// for rc-pingpong and for a file another output names.
    #[test]
    fn out_json_names_its_file_or_takes_perftests() {
        let named = options("write-bw 10.0.0.1 --out_json_file /tmp/r.json").unwrap();
        assert_eq!(named.out_json.as_deref(), Some(Path::new("/tmp/r.json")));
        let default = options("read-lat 10.0.0.1 --out_json").unwrap();
        assert_eq!(
            default.out_json.as_deref(),
            Some(Path::new("perftest_out.json"))
        );
        assert_eq!(options("write-bw 10.0.0.1").unwrap().out_json, None);
        assert_refused(
            "--out_json",
            &[("rc-pingpong 10.0.0.1 --out_json", "writes no JSON report")],
        );
        let e = options("write-bw 10.0.0.1 --json /tmp/a.json --out_json_file /tmp/a.json");
        assert!(e.unwrap_err().0.contains("both name"));
    }

    #[test]
    fn report_both_needs_the_bidirectional_table() {
        assert!(
            options("write-bw 10.0.0.1 -b --report-both")
                .unwrap()
                .report_both
        );
        assert_refused(
            "--report-both",
            &[
                ("write-bw 10.0.0.1 --report-both", "give -b too"),
                (
                    "write-bw 10.0.0.1 -b --report-both --output bandwidth",
                    "replaces",
                ),
                (
                    "send-bw 10.0.0.1 -b -D 2 --report-both",
                    "exchanges no reports",
                ),
            ],
        );
    }

    #[test]
    fn source_ip_is_bind() {
        let ip = |args: &str| options(args).unwrap().bind;
        let local = Some(Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(ip("write-bw 10.0.0.1 -R --source_ip 10.0.0.2"), local);
        assert_eq!(
            ip("write-bw 10.0.0.1 --bind 10.0.0.2 --source_ip 10.0.0.2"),
            local
        );
        assert_refused(
            "--source_ip",
            &[
                (
                    "write-bw 10.0.0.1 --bind 10.0.0.3 --source_ip 10.0.0.2",
                    "give one",
                ),
                ("write-bw 10.0.0.1 --source_ip ::1", "IPv6"),
            ],
        );
    }

    /// `-H`/`-U`: latency tests only, not with `--output`; under `-D` a note.
    #[test]
    fn sample_lists_are_a_latency_tests_and_say_when_there_are_none() {
        assert_eq!(
            options("write-lat 10.0.0.1 -U").unwrap().samples,
            Samples::Unsorted
        );
        assert_eq!(
            options("read-lat 10.0.0.1 -H").unwrap().samples,
            Samples::Sorted
        );
        assert_refused(
            "-H/--report-histogram",
            &[
                ("write-bw 10.0.0.1 -H", "write-bw has none"),
                ("rc-pingpong 10.0.0.1 -H", "rc-pingpong has none"),
                (
                    "send-lat 10.0.0.1 -H --output latency",
                    "--output=latency replaces",
                ),
            ],
        );
        let o = options("send-lat 10.0.0.1 -U -D 3").unwrap();
        assert!(o
            .ignored_flags
            .iter()
            .any(|n| n.contains("-D perftest keeps no samples")));
    }

    #[test]
    fn output_names_a_figure_the_test_measures() {
        assert_refused(
            "--output=",
            &[
                ("write-lat 10.0.0.1 --output=bandwidth", "latency only"),
                (
                    "read-bw 10.0.0.1 --output=latency",
                    "bandwidth or message_rate",
                ),
                ("rc-pingpong 10.0.0.1 --output=latency", "ibv_rc_pingpong"),
            ],
        );
        let o = options("send-lat 10.0.0.1 --output latency").unwrap();
        assert_eq!(o.output.as_deref(), Some("latency"));
        assert_eq!(options("write-bw 10.0.0.1").unwrap().output, None);
    }

    /// `-z` runs the exchange over RDMA CM; `-R` implies it; rc-pingpong has neither.
    #[test]
    fn com_rdma_cm_moves_the_exchange_and_r_implies_it() {
        let z = options("write-bw 10.0.0.1 -z -c UC").unwrap();
        assert!(z.exchange_by_cm && !z.rdma_cm);
        let long = options("write-bw 10.0.0.1 --comm_rdma_cm").unwrap();
        assert!(long.exchange_by_cm);
        let r = options("write-bw 10.0.0.1 -R").unwrap();
        assert!(r.exchange_by_cm && r.rdma_cm);
        assert!(!options("write-bw 10.0.0.1").unwrap().exchange_by_cm);
        assert_refused(
            "-z/--com_rdma_cm",
            &[("rc-pingpong 10.0.0.1 -z", "TCP only")],
        );
        assert_refused(
            "--server with -R or -z",
            &[
                ("write-bw --server -z", "needs --bind"),
                ("write-bw --server -R", "needs --bind"),
            ],
        );
    }

    #[test]
    fn perftests_hardware_flags_are_noted_and_what_live_does_not_run_refused() {
        let o = options("write-bw 10.0.0.1 -d mlx5_0 -x 3 -F -i 1 -f 1 -D 3").unwrap();
        assert_eq!(o.ignored_flags.len(), 4, "{:?}", o.ignored_flags);
        assert!(o.ignored_flags[0].starts_with("rnic: ignoring -d/--ib-dev mlx5_0: "));
        assert_eq!(o.duration.map(|d| d.margin_s), Some(1.0), "-f is --margin");
        for (args, flag) in [
            ("write-bw --server --ipv6", "--ipv6"),
            (
                "send-bw --server --typical_pkt_size 64",
                "--typical_pkt_size 64",
            ),
            ("write-bw 10.0.0.1 --report-cycles", "-C/--report-cycles"),
        ] {
            let e = options(args).unwrap_err().0;
            assert!(
                e.starts_with(&format!("{flag} is not supported")),
                "{args}: {e}"
            );
        }
    }

    #[test]
    fn atomic_type_is_the_atomic_tests_fetch_and_add_or_compare_and_swap() {
        use atomic_bw::AtomicOp;
        assert_eq!(
            options("atomic-bw --server").unwrap().atomic,
            AtomicOp::FetchAdd
        );
        let o = options("atomic-lat 10.0.0.1 -A CMP_AND_SWAP").unwrap();
        assert_eq!(o.atomic, AtomicOp::CmpSwap);
        let o = options("atomic-bw --server -A FETCH_AND_ADD").unwrap();
        assert_eq!(o.atomic, AtomicOp::FetchAdd);
        assert_refused(
            "-A/--atomic_type",
            &[
                (
                    "atomic-bw --server -A SWAP",
                    "must be FETCH_AND_ADD or CMP_AND_SWAP",
                ),
                ("write-bw --server -A CMP_AND_SWAP", "not write-bw"),
            ],
        );
    }

    #[test]
    fn bidirectional_is_write_and_read_bws_and_a_server_posts_reads_with_it() {
        let o = options("write-bw --server -b -c UC -q 2").unwrap();
        assert_eq!((o.bidirectional, o.shape().qps), (true, 2));
        assert!(
            options("read-bw 10.0.0.1 --bidirectional")
                .unwrap()
                .bidirectional
        );
        assert!(!options("write-bw 10.0.0.1").unwrap().bidirectional);
        assert!(options("send-bw --server -b -q 2").unwrap().bidirectional);
        assert!(options("send-bw --server -b -c UD").unwrap().bidirectional);
        assert!(options("atomic-bw 10.0.0.1 -b").unwrap().bidirectional);
        assert!(options("send-bw --server -b -D 2").unwrap().bidirectional);
        assert_refused(
            "-b/--bidirectional",
            &[
                ("send-bw --server -b -c UC -a", "-a over RC only"),
                ("write-lat --server -b", "not write-lat"),
                ("write-bw --server -b --run_infinitely", "--run_infinitely"),
            ],
        );
        // A bidirectional READ server posts READs: its message must fit the window too, and
        // its -a stops there, as a READ client's does.
        let e = options("read-bw --server -b -s 1048576").unwrap_err().0;
        assert!(e.starts_with("-s/--size 1048576"), "{e}");
        assert!(options("read-bw --server -s 1048576").is_ok());
        let (sizes, note) = options("read-bw --server -b -a").unwrap().sizes_at(1024);
        assert_eq!((sizes.last(), note.is_some()), (Some(&262_144), true));
    }

    #[test]
    fn rx_depth_is_the_send_tests_within_perftests_range() {
        assert_eq!(options("send-bw --server").unwrap().rx_depth, 512);
        assert_eq!(options("send-bw --server -c UD").unwrap().rx_depth, 16_000);
        assert_eq!(options("send-lat 10.0.0.1 -r 1").unwrap().rx_depth, 1);
        assert_eq!(
            options("send-bw --server --rx-depth 16384")
                .unwrap()
                .rx_depth,
            16_384
        );
        assert_refused(
            "-r/--rx-depth",
            &[
                ("write-bw --server -r 4", "not write-bw"),
                ("read-lat --server -r 1", "not read-lat"),
                ("send-bw --server -r 0", "must be 1..=16384"),
                ("send-bw --server -r 16385", "must be 1..=16384"),
            ],
        );
    }

    #[test]
    fn tclass_sets_the_traffic_class_and_tos_that_of_an_rdma_cm_connection() {
        assert_eq!(options("write-bw --server").unwrap().traffic_class, None);
        let tclass = options("send-bw 10.0.0.1 --tclass 96").unwrap();
        assert_eq!(tclass.traffic_class, Some(96));
        assert_eq!(
            options("read-bw --server --bind 10.0.0.2 -R -T 104")
                .unwrap()
                .traffic_class,
            Some(104)
        );
        assert_refused(
            "--tclass",
            &[(
                "write-bw --server --bind 10.0.0.2 -R --tclass 96",
                "-T/--tos, as perftest",
            )],
        );
        assert_refused(
            "-T/--tos",
            &[("write-bw --server -T 96", "with -R/--rdma_cm only")],
        );
        let av = rnic_transport::AddressVector::new([0; 6], [0; 4]);
        assert_eq!(endpoint::DEFAULT_TRAFFIC_CLASS, av.dscp_ecn);
    }

    #[test]
    fn rate_limit_is_perftests_software_limiter_on_the_bandwidth_tests() {
        let o = options("write-bw 10.0.0.1 --rate_limit 2.5 -t 64").unwrap();
        let limit = o.rate_limit.unwrap();
        assert_eq!(limit.units, pacer::RateUnits::GigabitsPerS);
        assert_eq!(
            (limit.rate, limit.burst),
            (2.5, 64),
            "a burst of -t by default"
        );
        let o = options("send-bw 10.0.0.1 --rate_limit 900 --rate_units p --burst_size 4");
        let limit = o.unwrap().rate_limit.unwrap();
        assert_eq!(
            (limit.units, limit.burst),
            (pacer::RateUnits::MessagesPerS, 4)
        );
        let typed = options("read-bw 10.0.0.1 --rate_limit 1 --rate_limit_type SW");
        assert!(typed.unwrap().rate_limit.is_some());
        assert_eq!(options("write-bw 10.0.0.1").unwrap().rate_limit, None);
        assert_refused(
            "--rate_limit",
            &[
                ("write-bw 10.0.0.1 --rate_limit 0", "must be above 0"),
                (
                    "atomic-bw 10.0.0.1 --rate_limit 1",
                    "write-bw, read-bw and send-bw",
                ),
                ("send-bw 10.0.0.1 -b --rate_limit 1", "(not with -b)"),
                ("write-lat 10.0.0.1 --rate_limit 1", "write-bw, read-bw"),
                (
                    "write-bw 10.0.0.1 --rate_limit 1 --rate_limit_type HW",
                    "no static rate",
                ),
                (
                    "write-bw 10.0.0.1 --rate_limit 1 --rate_limit_type PP",
                    "packet pacing",
                ),
            ],
        );
        assert_refused(
            "--burst_size",
            &[(
                "write-bw 10.0.0.1 --burst_size 8",
                "the rate limiter is off",
            )],
        );
        assert_refused(
            "--rate_units",
            &[
                ("write-bw 10.0.0.1 --rate_units M", "give --rate_limit"),
                (
                    "write-bw 10.0.0.1 --rate_limit 1 --rate_units G",
                    "M, g or p",
                ),
            ],
        );
    }

    #[test]
    fn latency_gap_is_the_latency_tests_wait_before_each_post() {
        let gap = |args: &str| options(args).unwrap().latency_gap.as_micros();
        assert_eq!(gap("write-lat 10.0.0.1"), 0);
        assert_eq!(gap("read-lat 10.0.0.1 --latency_gap 250"), 250);
        assert_eq!(gap("atomic-lat --server --latency_gap 1000000"), 1_000_000);
        assert_refused(
            "--latency_gap",
            &[
                ("write-bw 10.0.0.1 --latency_gap 10", "not write-bw"),
                ("send-lat 10.0.0.1 --latency_gap 1000001", "at most 1000000"),
            ],
        );
    }

    #[test]
    fn retry_count_goes_through_rdma_cm_as_perftests() {
        assert_eq!(options("write-bw --server").unwrap().retry_count, 7);
        let o = options("write-bw 10.0.0.1 -R --retry_count 2").unwrap();
        assert_eq!(o.retry_count, 2);
        assert_refused(
            "--retry_count",
            &[
                ("write-bw 10.0.0.1 --retry_count 2", "give -R/--rdma_cm"),
                ("write-bw 10.0.0.1 -R --retry_count 8", "0 to 7"),
            ],
        );
    }

    #[test]
    fn use_srq_is_the_send_tests_with_a_receive_for_each_qp() {
        let o = options("send-bw --server --use-srq -q 4 -r 64").unwrap();
        assert!(o.use_srq);
        let share = recv_ring::RecvLayout::of(&o).slots_for(1000);
        assert_eq!(share, 16, "each QP's share of the SRQ's 64");
        assert!(options("send-lat 10.0.0.1 --use_srq").unwrap().use_srq);
        assert!(!options("send-bw --server -q 4").unwrap().use_srq);
        assert_refused(
            "--use-srq",
            &[
                ("write-bw --server --use-srq", "not write-bw"),
                ("send-bw --server --use-srq -q 8 -r 4", "-q 8 QPs share"),
            ],
        );
    }

    #[test]
    fn reversed_swaps_who_runs_the_traffic_in_the_bandwidth_tests() {
        let runs = |args: &str| options(args).unwrap().runs_traffic();
        assert!(runs("write-bw 10.0.0.1") && !runs("write-bw --server"));
        assert!(!runs("send-bw 10.0.0.1 --reversed") && runs("atomic-bw --server --reversed"));
        // A reversed READ server posts the READs: the window applies to it.
        let e = options("read-bw --server --reversed -s 1048576")
            .unwrap_err()
            .0;
        assert!(e.starts_with("-s/--size 1048576"), "{e}");
        assert!(options("read-bw 10.0.0.1 --reversed -s 1048576").is_ok());
        let e = options("write-lat --server --reversed").unwrap_err().0;
        assert!(
            e.starts_with("--reversed: ") && e.contains("not write-lat"),
            "{e}"
        );
    }

    #[test]
    fn outs_is_the_read_and_atomic_tests_within_the_device_maximum() {
        assert_eq!(options("read-bw --server").unwrap().out_reads, 16);
        assert_eq!(options("read-lat 10.0.0.1 -o 1").unwrap().out_reads, 1);
        assert_eq!(
            options("atomic-bw --server --outs 16").unwrap().out_reads,
            16
        );
        assert_refused(
            "-o/--outs",
            &[
                ("write-bw --server -o 4", "not write-bw"),
                ("send-lat --server -o 4", "not send-lat"),
                ("read-bw --server -o 0", "must be 1..=16"),
                ("read-bw --server -o 17", "must be 1..=16"),
            ],
        );
    }

    #[test]
    fn run_infinitely_is_write_and_read_bws_with_d_as_its_interval() {
        let o = options("write-bw 10.0.0.1 --run_infinitely").unwrap();
        assert_eq!((o.run_infinitely_s, o.duration), (Some(5.0), None));
        let o = options("read-bw --server --run_infinitely -D 0.5 -q 2").unwrap();
        assert_eq!((o.run_infinitely_s, o.duration), (Some(0.5), None));
        assert_eq!(options("write-bw 10.0.0.1").unwrap().run_infinitely_s, None);
        assert_refused(
            "--run_infinitely",
            &[
                ("send-bw --server --run_infinitely", "not send-bw"),
                ("write-lat --server --run_infinitely", "not write-lat"),
                ("atomic-bw --server --run_infinitely", "not atomic-bw"),
                ("write-bw --server --run_infinitely -a", "-a/--all"),
                ("write-bw --server --run_infinitely -n 10", "-n/--iters"),
                ("write-bw --server --run_infinitely --margin 1", "--margin"),
                ("write-bw --server --run_infinitely -D 0", "above 0"),
                ("write-bw --server --run_infinitely -D -1", "above 0"),
            ],
        );
    }

    #[test]
    fn duration_mode_is_every_perftest_tests_with_a_window_left() {
        let o = options("write-bw 10.0.0.1 -D 3 --margin 1").unwrap();
        assert_eq!(
            o.duration,
            Some(DurationMode {
                total_s: 3.0,
                margin_s: 1.0
            })
        );
        for test in [
            "read-bw",
            "send-bw",
            "atomic-bw",
            "write-lat",
            "read-lat",
            "send-lat",
            "atomic-lat",
        ] {
            let o = options(&format!("{test} --server -D 2")).unwrap();
            assert_eq!(o.duration.map(|d| d.total_s), Some(2.0), "{test}");
        }
        assert!(options("send-bw 10.0.0.1 -D 2 -c UD")
            .unwrap()
            .duration
            .is_some());
        assert!(options("send-lat 10.0.0.1 -D 2 -c UC")
            .unwrap()
            .duration
            .is_some());
        for (args, words) in [
            ("rc-pingpong --server -D 5", "rc-pingpong"),
            ("write-bw --server -D 4 --margin 2", "twice --margin"),
            (
                "write-bw --server -D 5 --margin -1",
                "the margin at least 0",
            ),
            ("write-bw --server -D 5 -a", "-a/--all"),
            ("send-lat --server -D 5 -a", "-a/--all"),
            (
                "write-bw --server -D 1e308",
                "--duration 1e308: at most a day",
            ),
        ] {
            let e = options(args).unwrap_err().0;
            assert!(
                e.contains("-D/--duration") && e.contains(words),
                "{args}: {e}"
            );
        }
    }

    /// `-t` and `--report_gbits` are the bandwidth tests': a latency test (or rc-pingpong)
    /// took them and changed nothing, without a word; refused naming the flag. perftest's
    /// latency tests list neither (they parse both and change nothing).
    #[test]
    fn a_latency_test_refuses_the_bandwidth_tests_depth_and_units() {
        for test in [
            "write-lat",
            "read-lat",
            "send-lat",
            "atomic-lat",
            "rc-pingpong",
        ] {
            for (flag, words) in [
                ("-t 3", "-t/--tx-depth 3: "),
                ("--report_gbits", "--report_gbits: "),
            ] {
                let args = format!("{test} 10.0.0.1 {flag}");
                let e = options(&args).unwrap_err().0;
                assert!(
                    e.starts_with(words) && e.contains(&format!("not {test}")),
                    "{args}: {e}"
                );
            }
            assert_eq!(options(&format!("{test} 10.0.0.1")).unwrap().tx_depth, 128);
        }
        let o = options("write-bw 10.0.0.1 -t 3 --report_gbits").unwrap();
        assert_eq!((o.tx_depth, o.report_gbits), (3, true));
        assert_eq!(options("write-bw 10.0.0.1").unwrap().tx_depth, 128);
        assert!(options("write-bw 10.0.0.1 -t 0")
            .unwrap_err()
            .0
            .contains("1..=4096"));
    }

    /// `-f/--margin` trims a `-D` run's ends: without `-D` it was dropped without a word
    /// and the run counted `-n` iterations; refused naming it.
    #[test]
    fn a_margin_without_a_duration_is_refused() {
        for args in [
            "write-bw 10.0.0.1 -f 1",
            "write-lat --server --margin 0",
            "send-bw 10.0.0.1 -n 100 --margin 2",
        ] {
            let e = options(args).unwrap_err().0;
            assert!(
                e.starts_with("-f/--margin ") && e.contains("give -D too"),
                "{args}: {e}"
            );
        }
        assert!(options("write-bw 10.0.0.1 -D 3 -f 1").is_ok());
    }

    /// ib_atomic_lat's test: one 8-byte operand over RC, one QP, one size.
    #[test]
    fn atomic_lat_is_eight_bytes_over_rc_on_one_qp() {
        let o = options("atomic-lat 10.0.0.1").unwrap();
        assert_eq!((o.test, o.size), (LiveTest::AtomicLat, 8));
        assert!(o.test.is_latency());
        for (args, flag) in [
            (
                "atomic-lat 10.0.0.1 -s 64",
                "-s/--size 64: atomic-lat's operands are 8 bytes",
            ),
            (
                "atomic-lat 10.0.0.1 -a",
                "-a/--all: atomic-lat has one message size",
            ),
            ("atomic-lat 10.0.0.1 -c UC", "-c/--connection UC"),
            ("atomic-lat 10.0.0.1 -q 2", "-q/--qp 2"),
        ] {
            let e = options(args).unwrap_err().0;
            assert!(e.contains(flag), "{args}: {e}");
        }
    }

    /// perftest's margin without --margin: a quarter of -D in whole seconds.
    #[test]
    fn the_default_margin_is_perftests_quarter_of_the_duration() {
        for (d, margin) in [("5", 1.0), ("2", 0.0), ("1", 0.0), ("8", 2.0), ("10", 2.0)] {
            let o = options(&format!("write-bw --server -D {d}")).unwrap();
            assert_eq!(o.duration.map(|d| d.margin_s), Some(margin), "-D {d}");
        }
    }

    #[test]
    fn a_duration_window_samples_between_the_margins() {
        let d = DurationMode {
            total_s: 5.0,
            margin_s: 1.0,
        };
        assert_eq!(d.window_s(), 3.0);
        assert!(!d.samples_at(0.5) && d.samples_at(1.0) && d.samples_at(3.9));
        assert!(!d.samples_at(4.0));
    }

    #[test]
    fn several_qps_are_the_bandwidth_tests_and_share_the_window() {
        let o = options("write-bw 10.0.0.1 -q 4").unwrap();
        assert_eq!((o.qps, o.window_psns), (4, WINDOW_PSNS / 4));
        assert_eq!(options("read-bw --server --qp 16").unwrap().qps, 16);
        assert_eq!(options("write-bw --server -q 2 -a").unwrap().qps, 2);
        assert_eq!(options("atomic-bw 10.0.0.1 -q 3").unwrap().qps, 3);
        assert_eq!(options("send-bw --server -q 4").unwrap().qps, 4);
        assert_eq!(options("send-bw 10.0.0.1 -q 2 -c UC").unwrap().qps, 2);
        assert_eq!(options("send-bw --server -q 4 -c UD").unwrap().qps, 4);
        assert_eq!(options("send-lat --server").unwrap().qps, 1);
        assert_eq!(
            options("write-bw --server -q 2 --bind 10.0.0.2 -R")
                .unwrap()
                .qps,
            2
        );
        assert_eq!(options("send-bw 10.0.0.1 -q 4 -R").unwrap().qps, 4);
        assert_eq!(
            options("send-bw --server -q 2 --bind 10.0.0.2 -R -c UD")
                .unwrap()
                .qps,
            2
        );
        for (args, words) in [
            ("write-bw --server -q 0", "must be 1..=16"),
            ("read-bw --server -q 17", "must be 1..=16"),
            ("write-lat --server -q 2", "latency tests run one QP"),
            ("read-lat --server -q 2", "latency tests run one QP"),
            ("rc-pingpong --server -q 2", "latency tests run one QP"),
            ("send-lat --server -q 2", "latency tests run one QP"),
            ("write-bw --server -q 2 -s 1073741824", "must fit"),
        ] {
            let e = options(args).unwrap_err().0;
            assert!(e.contains("-q/--qp") && e.contains(words), "{args}: {e}");
        }
    }

    #[test]
    fn a_read_must_fit_the_window_its_qp_has() {
        assert!(
            options("read-bw 10.0.0.1 -q 4 -s 65536").is_ok(),
            "64 packets"
        );
        let e = options("read-bw 10.0.0.1 -q 8 -s 65536").unwrap_err().0;
        assert!(e.contains("-q/--qp 8") && e.contains("32 packets"), "{e}");
    }

    #[test]
    fn all_sizes_is_every_size_tests_and_replaces_the_size() {
        let o = options("write-bw --server -a").unwrap();
        assert!(o.all_sizes);
        assert_eq!(o.size, 1 << 23, "the buffers hold the largest size");
        for test in ["write-lat", "read-bw", "send-bw", "read-lat", "send-lat"] {
            let o = options(&format!("{test} --server -a")).unwrap();
            assert!(o.all_sizes, "{test}");
            assert_eq!(o.sizes().len(), 23, "{test}");
        }
        for test in ["atomic-bw", "rc-pingpong"] {
            let e = options(&format!("{test} --server -a")).unwrap_err().0;
            assert!(e.contains("-a/--all") && e.contains(test), "{e}");
        }
        let e = options("write-bw --server -a -s 4096").unwrap_err().0;
        assert!(
            e.contains("-a/--all") && e.contains("-s/--size (4096)"),
            "{e}"
        );
    }

    /// UD's `-a` runs up to the path MTU, as perftest's.
    #[test]
    fn all_sizes_over_ud_stop_at_the_mtu() {
        let o = options("send-bw 10.0.0.1 -a -c UD -m 2048").unwrap();
        assert_eq!(o.size, 2048);
        assert_eq!(o.fit_to_mtu(1024).unwrap().sizes().last(), Some(&1024));
        let o = options("send-lat --server -a -c UD").unwrap();
        assert_eq!(o.sizes(), (1..=10).map(|k| 1u64 << k).collect::<Vec<_>>());
    }

    /// A READ client's `-a` stops at the largest size its window holds and says so; the
    /// server, which only answers, keeps every size's buffer.
    #[test]
    fn all_sizes_of_a_read_client_stop_at_the_window() {
        let o = options("read-bw 10.0.0.1 -a").unwrap();
        let (sizes, note) = o.sizes_at(1024);
        assert_eq!(sizes.last(), Some(&(256 * 1024)));
        assert_eq!(sizes.len(), 18);
        let note = note.expect("the stop is told");
        assert!(
            note.contains("-a/--all") && note.contains("262144"),
            "{note}"
        );
        let (sizes, _) = options("read-lat 10.0.0.1 -a -q 1").unwrap().sizes_at(256);
        assert_eq!(sizes.last(), Some(&(64 * 1024)));
        let (sizes, note) = options("read-bw --server -a").unwrap().sizes_at(1024);
        assert_eq!((sizes.len(), note), (23, None));
        let (sizes, note) = options("write-bw 10.0.0.1 -a").unwrap().sizes_at(1024);
        assert_eq!((sizes.len(), note), (23, None));
    }

    #[test]
    fn ud_runs_send_tests_with_messages_of_at_most_the_mtu() {
        let o = options("send-bw --server -c UD -m 2048").unwrap();
        assert_eq!(
            (o.service, o.size, o.size_given),
            (ServiceType::Ud, 2048, false)
        );
        let o = options("send-lat --server -c ud").unwrap();
        assert_eq!((o.service, o.size), (ServiceType::Ud, 2));
        let e = options("send-bw --server -c UD -s 1025").unwrap_err().0;
        assert!(e.contains("--size 1025") && e.contains("--mtu 1024"), "{e}");
        let e = options("write-bw --server -c UD").unwrap_err().0;
        assert!(
            e.contains("--connection UD") && e.contains("write-bw"),
            "{e}"
        );
    }

    #[test]
    fn uc_runs_send_bw_and_other_names_are_refused() {
        let o = options("send-bw --server -c UC").unwrap();
        assert_eq!((o.service, o.size), (ServiceType::Uc, 65536));
        let e = options("read-lat --server -c UC").unwrap_err().0;
        assert!(e.contains("--connection UC"), "{e}");
        let e = options("send-bw --server -c XRC").unwrap_err().0;
        assert!(e.contains("RC, UC or UD"), "{e}");
    }

    #[test]
    fn rdma_cm_connects_rc_and_resolves_ud_qps_only() {
        assert!(
            options("write-bw --server --bind 10.0.0.2 -R")
                .unwrap()
                .rdma_cm
        );
        assert!(
            options("read-lat --server --bind 10.0.0.2 --rdma_cm")
                .unwrap()
                .rdma_cm
        );
        assert!(!options("write-bw --server").unwrap().rdma_cm);
        assert!(
            options("send-bw --server --bind 10.0.0.2 -R -c UD")
                .unwrap()
                .rdma_cm
        );
        assert!(
            options("send-lat --server --bind 10.0.0.2 -R -c UD")
                .unwrap()
                .rdma_cm
        );
        let e = options("send-bw --server -R -c UC").unwrap_err().0;
        assert!(e.contains("-R/--rdma_cm") && e.contains("UC"), "{e}");
        let e = options("rc-pingpong --server -R").unwrap_err().0;
        assert!(e.contains("-R/--rdma_cm"), "{e}");
    }

    #[test]
    fn a_ud_size_fits_the_agreed_mtu_as_perftests_does() {
        let chosen = options("send-bw --server -c UD -m 4096").unwrap();
        assert_eq!(chosen.fit_to_mtu(1024).unwrap().size, 1024, "shrunk");
        let given = options("send-bw --server -c UD -m 4096 -s 4096").unwrap();
        let e = given.fit_to_mtu(1024).unwrap_err().to_string();
        assert!(e.contains("--size 4096") && e.contains("1024"), "{e}");
        assert_eq!(given.fit_to_mtu(4096).unwrap().size, 4096);
        let rc = options("send-bw --server -s 65536").unwrap();
        assert_eq!(
            rc.fit_to_mtu(1024).unwrap().size,
            65536,
            "RC messages span packets"
        );
    }
}
