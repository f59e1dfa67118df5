//! `rnic live write-bw` and `read-bw`: ib_write_bw's and ib_read_bw's tests. The client
//! keeps `tx_depth` WRITEs (READs) of `size` bytes in flight to (from) the server's buffer
//! until `iters` completed; the server only answers (its engine ACKs the WRITEs, sends the
//! READ responses) until the client's closing handshake.
//!
//! Verification, when the peer is rnic (its version string says so), against rnic's
//! pattern: write-bw's client fills its source buffer with it and READs the server's buffer
//! back after the run, and the server checks its buffer too; read-bw's server fills its
//! buffer with it and the client checks the buffer its READs landed in. perftest peers get
//! their bytes unchecked (`status: unverified`): perftest's buffers hold random bytes and its
//! WRITE MRs refuse READs.

use std::time::Instant;

use anyhow::bail;
use rnic_model::host::bw_peak::{BwPeak, PeakSpan};
use rnic_transport::{Completion, RemoteAddr, SendWr, ServiceType, Sge, WcStatus};

use super::endpoint::Endpoint;
use super::oob::{BwReport, Verdict, CYCLE_BUFFER_BYTES};
use super::report::{LiveResult, Verification};
use super::session::{linger, Layout, Session, IDLE_TURN, STALL};
use super::{DurationMode, LiveOptions, PATTERN_SEED};

/// The client's source buffer, and where its READ-back lands.
const SRC_ADDR: u64 = 0x1000_0000;
const CHECK_ADDR: u64 = 0x4000_0000;
/// The server's destination buffer.
const DST_ADDR: u64 = 0x2000_0000;
/// Bytes of the 2^20-byte MB perftest reports in.
const MB: f64 = 1_048_576.0;

/// The operation a bandwidth test measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Write,
    Read,
    /// FETCH&ADD (see [`super::atomic_bw`]).
    Atomic,
}

impl Verb {
    fn test_name(self) -> &'static str {
        match self {
            Verb::Write => "write-bw",
            Verb::Read => "read-bw",
            Verb::Atomic => "atomic-bw",
        }
    }
}

pub fn run(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    if o.host.is_some() {
        client(o, verb)
    } else {
        server(o, verb)
    }
}

fn client(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: CHECK_ADDR - SRC_ADDR + o.size.max(u64::from(o.tx_depth) * 8),
        advertised: SRC_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    if verb == Verb::Write {
        s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    }
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me.rkey,
    };
    let remote = RemoteAddr {
        va: s.peer.vaddr,
        rkey: s.peer.rkey,
    };
    let write_retransmissions;
    let mut per_size = Vec::new();
    let (measured, verification) = match verb {
        Verb::Atomic => {
            let done = super::atomic_bw::fetch_adds(&mut s, o, SRC_ADDR)?;
            write_retransmissions = s.ep.dev.stats().retransmitted_packets;
            done
        }
        Verb::Write | Verb::Read => {
            let mut measured = BwMeasured::default();
            for size in o.sizes() {
                let sge = Sge {
                    len: size as u32,
                    ..sge
                };
                measured = keep_in_flight(
                    &mut s,
                    o,
                    |i| match verb {
                        Verb::Read => SendWr::read(i, sge, remote),
                        _ => SendWr::write(i, sge, remote),
                    },
                    |_, _| Ok(()),
                )?;
                if o.all_sizes {
                    per_size.push(size_row(verb.test_name(), size, &measured).row);
                }
            }
            // Before the READ-back: a WAN accelerator answers WRITEs, never READs, so a
            // READ-back resent over a long lossy link is not a WRITE the client had to send
            // again.
            write_retransmissions = s.ep.dev.stats().retransmitted_packets;
            let verification = match (s.pre.peer_is_rnic, verb) {
                (false, _) => Verification::PeerIsPerftest,
                (true, Verb::Read) => Verification::of(s.ep.mem.first_pattern_mismatch(
                    SRC_ADDR,
                    o.size,
                    PATTERN_SEED,
                )),
                // UC has no READ: the server checks its buffer and says so at the close.
                (true, _) if o.service == ServiceType::Uc => Verification::PeerIsPerftest,
                (true, _) => read_back(&mut s, o, remote)?,
            };
            (measured, verification)
        }
    };
    let mut r = size_row(verb.test_name(), o.size, &measured);
    r.per_size = per_size;
    let mine = BwReport {
        size: o.size,
        iters: measured.ops,
        bw_peak: r.row.bw_peak_mb_s,
        bw_avg: r.row.bw_avg_mb_s,
        msg_rate: r.row.msg_rate_mops,
    };
    let me = s.me;
    s.oob.keys(&me, &mut || s.ep.turn(IDLE_TURN))?;
    s.oob.bw_reports(&mine, &mut || s.ep.turn(IDLE_TURN))?;
    let server_checks = server_tells_verdict(o, &s, verb);
    let verdict = server_checks.then_some(Verdict::NothingChecked);
    let theirs = s.oob.close(&me, &mut || s.ep.turn(IDLE_TURN), verdict)?;
    let verification = if server_checks {
        Verification::from_peer(theirs)
    } else {
        verification
    };
    r.finish(&mut s, verification);
    r.write_retransmissions = Some(write_retransmissions);
    s.ep.finish()?;
    Ok(r)
}

/// The figures of `test`'s operations of `size` bytes that `m` measured.
pub fn size_row(test: &'static str, size: u64, m: &BwMeasured) -> LiveResult {
    let mut r = LiveResult::bandwidth(test, size, m.ops, m.elapsed_s);
    r.row.bw_peak_mb_s = m.peak_mb_s(size);
    r
}

/// What a bandwidth loop measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct BwMeasured {
    /// Operations measured: every one, or with `-D` those completed in the sampled window.
    pub ops: u64,
    /// Seconds from the first post to the last completion (with `-D`: the sampled window).
    pub elapsed_s: f64,
    /// perftest's BW peak: the run of consecutive operations, from one's post to a later
    /// one's completion, with the least time per operation (`None`: nothing measured).
    pub peak: Option<PeakSpan>,
}

impl BwMeasured {
    /// The BW peak of operations of `size` bytes, MB/s (MB = 2^20 bytes, as perftest's).
    pub fn peak_mb_s(&self, size: u64) -> f64 {
        self.peak.map_or(0.0, |p| {
            (size * p.ops) as f64 / (p.span_ps as f64 * 1e-12) / MB
        })
    }
}

/// Post and completion stamps reserved before a run (see [`keep_in_flight`]).
const PEAK_STAMPS_RESERVED: u64 = 1 << 20;

/// Picoseconds from `start` to now: the unit of [`BwPeak`]'s stamps.
fn ps_since(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos() * 1000).unwrap_or(u64::MAX)
}

/// Keeps `o.tx_depth` work requests (`wr_for(i)` is the `i`-th, its `wr_id` `i`) in flight
/// until `o.iters` completed, or with `-D` for its seconds ([`keep_in_flight_for`]), as
/// perftest's `run_iter_bw`; `check` sees every successful completion in order. Stamps
/// every post and every completion as perftest does (`tposted`, `tcompleted`; every work
/// request is signalled), for its BW peak.
pub fn keep_in_flight(
    s: &mut Session,
    o: &LiveOptions,
    mut wr_for: impl FnMut(u64) -> SendWr,
    mut check: impl FnMut(&mut Endpoint, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<BwMeasured> {
    if let Some(d) = o.duration {
        return keep_in_flight_for(s, o, d, wr_for, check);
    }
    let (mut posted, mut completed) = (0u64, 0u64);
    // Room up front for at most a million stamps of each kind; a longer run grows them
    // (16 bytes per operation, as perftest's own tposted and tcompleted take).
    let room = o.iters.min(PEAK_STAMPS_RESERVED);
    let mut peak = BwPeak::with_capacity(room, room);
    let start = Instant::now();
    let mut last_progress = Instant::now();
    let wait = turn_wait(o);
    while completed < o.iters {
        while posted < o.iters && posted - completed < u64::from(o.tx_depth) {
            let wr = wr_for(posted);
            peak.post(ps_since(start), 1);
            s.ep.dev.post_send(s.ep.qpn, wr)?;
            posted += 1;
        }
        s.ep.turn(wait)?;
        while take_completion(s, &mut check)? {
            peak.complete(ps_since(start), 1);
            completed += 1;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "no work request completed for {} s ({completed} of {} done)",
                STALL.as_secs(),
                o.iters
            );
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    peak.finish();
    Ok(BwMeasured {
        ops: o.iters,
        elapsed_s,
        peak: peak.best(),
    })
}

/// How long a turn of a bandwidth loop may wait for datagrams. Over UC and UD a work request
/// completes when its last packet is on the wire: nothing comes back to wait for, and a
/// blocking wait (a whole kernel tick, often 10 ms, however short it is asked to be) would
/// idle the sender between bursts.
fn turn_wait(o: &LiveOptions) -> std::time::Duration {
    if o.service == ServiceType::Rc {
        IDLE_TURN
    } else {
        std::time::Duration::ZERO
    }
}

/// Takes the next completion, if there is one, and has `check` see it; a failed work
/// request ends the run. Returns whether one was taken.
fn take_completion(
    s: &mut Session,
    check: &mut impl FnMut(&mut Endpoint, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    let Some(c) = s.ep.poll_cq() else {
        return Ok(false);
    };
    if c.status != WcStatus::Success {
        bail!("{:?} {} completed with {:?}", c.opcode, c.wr_id, c.status);
    }
    check(&mut s.ep, &c)?;
    Ok(true)
}

/// perftest's duration mode (`-D`): work requests kept in flight for `d.total_s`; the
/// completions between `d.margin_s` after the start and `d.margin_s` before the end are
/// the measurement (perftest's SAMPLE_STATE), and no peak is measured, as perftest's
/// duration mode has none. What is still in flight at the end is waited for, so the QP is
/// quiet for the handshake and the READ-back.
fn keep_in_flight_for(
    s: &mut Session,
    o: &LiveOptions,
    d: DurationMode,
    mut wr_for: impl FnMut(u64) -> SendWr,
    mut check: impl FnMut(&mut Endpoint, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<BwMeasured> {
    let (mut posted, mut completed) = (0u64, 0u64);
    let start = Instant::now();
    let (open_s, close_s) = (d.margin_s, d.total_s - d.margin_s);
    let (mut window_ops, mut last_progress) = (0u64, Instant::now());
    loop {
        let t = start.elapsed().as_secs_f64();
        let sending = t < d.total_s;
        if !sending && posted == completed {
            break;
        }
        while sending && posted - completed < u64::from(o.tx_depth) {
            s.ep.dev.post_send(s.ep.qpn, wr_for(posted))?;
            posted += 1;
        }
        s.ep.turn(turn_wait(o))?;
        while take_completion(s, &mut check)? {
            completed += 1;
            last_progress = Instant::now();
            let at = start.elapsed().as_secs_f64();
            window_ops += u64::from(open_s <= at && at < close_s);
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "no work request completed for {} s ({completed} of {posted} posted done)",
                STALL.as_secs()
            );
        }
    }
    Ok(BwMeasured {
        ops: window_ops,
        elapsed_s: close_s - open_s,
        peak: None,
    })
}

/// Whether the server's check of its buffer is the run's verification, told to the client at
/// the close: a UC WRITE between two rnic endpoints (the client cannot READ it back).
fn server_tells_verdict(o: &LiveOptions, s: &Session, verb: Verb) -> bool {
    o.service == ServiceType::Uc && s.pre.peer_is_rnic && verb == Verb::Write
}

/// READs the server's buffer into `CHECK_ADDR` and compares it with the pattern. One READ
/// at a time, each at most what the requester's window holds (all of a READ's responses
/// must fit in it), so a buffer of any size can be read back.
fn read_back(s: &mut Session, o: &LiveOptions, remote: RemoteAddr) -> anyhow::Result<Verification> {
    let chunk_bytes = u64::from(o.window_psns) * u64::from(s.pre.mtu_bytes);
    let mut offset = 0;
    while offset < o.size {
        let len = chunk_bytes.min(o.size - offset);
        read_piece(s, offset, len, remote)?;
        offset += len;
    }
    Ok(Verification::of(s.ep.mem.first_pattern_mismatch(
        CHECK_ADDR,
        o.size,
        PATTERN_SEED,
    )))
}

/// READs `len` bytes at `offset` of the server's buffer to the same offset of `CHECK_ADDR`.
fn read_piece(s: &mut Session, offset: u64, len: u64, remote: RemoteAddr) -> anyhow::Result<()> {
    let sge = Sge {
        addr: CHECK_ADDR + offset,
        len: len as u32,
        lkey: s.me.rkey,
    };
    let from = RemoteAddr {
        va: remote.va + offset,
        ..remote
    };
    s.ep.dev
        .post_send(s.ep.qpn, SendWr::read(u64::MAX, sge, from))?;
    let mut status = None;
    s.turn_until(
        |ep| {
            if let Some(c) = ep.poll_cq() {
                status = Some(c.status);
            }
            Ok(status.is_some())
        },
        "reading the server's buffer back",
    )?;
    if status != Some(WcStatus::Success) {
        bail!("the READ-back of the server's buffer completed with {status:?}");
    }
    Ok(())
}

fn server(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    // perftest's clients move the remote address through a page-sized cycle buffer for
    // messages up to half a page, so the region covers at least a page.
    let layout = Layout {
        mr_addr: DST_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: DST_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    if verb != Verb::Write {
        s.ep.mem.fill_pattern(DST_ADDR, layout.mr_len, PATTERN_SEED);
    }
    let me = s.me;
    // The client's closing handshake comes when its WRITEs or READs are done; until then the
    // engine answers them (and the READ-back).
    s.oob.keys_waiting(&me, &mut || s.ep.turn(IDLE_TURN))?;
    let theirs = s
        .oob
        .bw_reports(&BwReport::default(), &mut || s.ep.turn(IDLE_TURN))?;
    if o.service == ServiceType::Uc {
        // No ACK told the client its last WRITEs arrived: take in what is still on its way.
        linger(&mut s.ep)?;
    }
    let verification = if verb == Verb::Atomic {
        // The server knows its buffer's first contents, whoever the client is.
        super::atomic_bw::check_served(&s.ep.mem, DST_ADDR, layout.mr_len, theirs.iters)
    } else if s.pre.peer_is_rnic {
        Verification::of(
            s.ep.mem
                .first_pattern_mismatch(DST_ADDR, o.size, PATTERN_SEED),
        )
    } else {
        Verification::PeerIsPerftest
    };
    let verdict = server_tells_verdict(o, &s, verb).then_some(verification.verdict());
    s.oob.close(&me, &mut || s.ep.turn(IDLE_TURN), verdict)?;
    // perftest's server prints the client's report.
    let mut r = LiveResult::bandwidth(verb.test_name(), theirs.size, theirs.iters, 0.0);
    r.row.bw_avg_mb_s = theirs.bw_avg;
    r.row.bw_peak_mb_s = theirs.bw_peak;
    r.row.msg_rate_mops = theirs.msg_rate;
    r.row.goodput_gbps = theirs.bw_avg * MB * 8.0 / 1e9;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}
