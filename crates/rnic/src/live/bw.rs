//! `rnic live write-bw` and `read-bw`: ib_write_bw's and ib_read_bw's tests. The client
//! keeps `tx_depth` WRITEs (READs) of `size` bytes in flight on each of its `-q` QPs to
//! (from) that QP's buffer at the server until each QP's `iters` completed, as perftest's
//! `run_iter_bw`; the server only answers (its engine ACKs the WRITEs, sends the READ
//! responses) until the client's closing handshake. With several QPs the figures are
//! perftest's: `iters` times the QPs operations, from the first post on any QP to the last
//! completion, the peak over the posts and completions of all of them in order.
//!
//! Verification, when the peer is rnic (its version string says so), against rnic's
//! pattern, a pattern of its own for each QP (so bytes that reached another QP's buffer do
//! not pass): write-bw's client fills each QP's source buffer with it and READs each of the
//! server's QP buffers back after the run, and the server checks its buffers too; read-bw's
//! server fills its buffers with it and the client checks the buffers its READs landed in.
//! perftest peers get their bytes unchecked (`status: unverified`): perftest's buffers hold
//! random bytes and its WRITE MRs refuse READs.

use std::time::Instant;

use anyhow::bail;
use rnic_host::SparseMemory;
use rnic_model::host::bw_peak::{BwPeak, PeakSpan};
use rnic_transport::{Completion, RemoteAddr, SendWr, ServiceType, Sge, WcOpcode, WcStatus};

use super::endpoint::Endpoint;
use super::forever::keep_in_flight_forever;
use super::oob::{BwReport, Verdict, CYCLE_BUFFER_BYTES};
use super::pacer::Pacer;
use super::report::{LiveResult, Verification};
use super::session::{linger, Layout, RunClock, Session, IDLE_TURN, STALL};
use super::{qp_pattern_seed, DurationMode, LiveOptions};

/// Where a side's own buffers start (see [`HalvedBuffers`]).
const SRC_ADDR: u64 = 0x1000_0000;
/// The server's buffers, one per QP.
const DST_ADDR: u64 = 0x2000_0000;
/// What a QP's buffer is rounded up to, bytes.
const PAGE_BYTES: u64 = 4096;
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
    pub(super) fn test_name(self) -> &'static str {
        match self {
            Verb::Write => "write-bw",
            Verb::Read => "read-bw",
            Verb::Atomic => "atomic-bw",
        }
    }
}

pub fn run(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    if o.bidirectional {
        super::duplex::run(o, verb)
    } else if o.runs_traffic() {
        client(o, verb)
    } else {
        server(o, verb)
    }
}

/// A side's buffers in one region from `SRC_ADDR`, as perftest halves its buffer into its
/// QPs' send and receive parts: QP `i`'s source (where its READs land) at
/// `SRC_ADDR + i * stride`, then QP `i`'s second buffer at `SRC_ADDR + (qps + i) * stride`.
/// A client's second buffers take the READ-back of the server's buffers, and a QP's source
/// also holds atomic-bw's fetched values, 8 bytes for each atomic in flight; a
/// bidirectional side's second buffers are the ones the peer is told about.
pub(super) struct HalvedBuffers {
    qps: u64,
    pub(super) stride: u64,
}

impl HalvedBuffers {
    /// A client's buffers (see [`HalvedBuffers`]).
    fn for_client(o: &LiveOptions) -> HalvedBuffers {
        let results_bytes = u64::from(o.tx_depth) * super::atomic_bw::ATOMIC_BYTES;
        HalvedBuffers::new(o.qps, o.size.max(results_bytes))
    }

    /// `qps` QPs' buffers of at least `bytes` each, rounded up to pages.
    pub(super) fn new(qps: u32, bytes: u64) -> HalvedBuffers {
        HalvedBuffers {
            qps: u64::from(qps),
            stride: bytes.next_multiple_of(PAGE_BYTES),
        }
    }

    pub(super) fn source(&self, qp: usize) -> u64 {
        SRC_ADDR + qp as u64 * self.stride
    }

    /// Each QP's first `size` bytes of its source hold that QP's pattern.
    pub(super) fn fill_sources(&self, mem: &mut SparseMemory, size: u64) {
        for qp in 0..self.qps as usize {
            mem.fill_pattern(self.source(qp), size, qp_pattern_seed(qp));
        }
    }

    pub(super) fn second(&self, qp: usize) -> u64 {
        self.source(self.qps as usize + qp)
    }

    /// One MR over both halves; the peer is told of the second buffers
    /// (`advertise_second`) or of the first.
    pub(super) fn layout(&self, advertise_second: bool) -> Layout {
        Layout {
            mr_addr: SRC_ADDR,
            mr_len: 2 * self.qps * self.stride,
            advertised: if advertise_second {
                self.second(0)
            } else {
                SRC_ADDR
            },
            qp_stride: self.stride,
            served_pattern_bytes: 0,
        }
    }
}

/// Whether each of `qps` QPs' `size` bytes at `addr_of(qp)` hold that QP's pattern; a
/// mismatch's offset counts the QPs' bytes in order (QP 1's first byte is `size`).
pub(super) fn check_every_qp(
    mem: &SparseMemory,
    qps: usize,
    size: u64,
    addr_of: impl Fn(usize) -> u64,
) -> Verification {
    over_every_qp(qps, size, |qp| {
        let seed = qp_pattern_seed(qp);
        Verification::of(mem.first_pattern_mismatch(addr_of(qp), size, seed))
    })
}

/// The first of `qps` QPs' verdicts (`verdict_of(qp)`) that is a mismatch, its offset
/// counted over the QPs' `per_qp_bytes` in order; `Verified` when there is none.
pub fn over_every_qp(
    qps: usize,
    per_qp_bytes: u64,
    verdict_of: impl FnMut(usize) -> Verification,
) -> Verification {
    let mismatch = (0..qps)
        .map(verdict_of)
        .enumerate()
        .find_map(|(qp, v)| match v {
            Verification::Mismatch { offset } => Some(
                (qp as u64)
                    .saturating_mul(per_qp_bytes)
                    .saturating_add(offset),
            ),
            _ => None,
        });
    Verification::of(mismatch)
}

fn client(o: &LiveOptions, verb: Verb) -> anyhow::Result<LiveResult> {
    let buffers = HalvedBuffers::for_client(o);
    let mut s = Session::open(o, &buffers.layout(false), false)?;
    let qps = s.mine.len();
    if verb == Verb::Write {
        buffers.fill_sources(&mut s.ep.mem, o.size);
    }
    let remotes: Vec<RemoteAddr> = s.peers.iter().map(remote_of).collect();
    let lkey = s.me().rkey;
    let write_retransmissions;
    let mut per_size = Vec::new();
    let (sizes, note) = o.sizes_at(s.pre.mtu_bytes);
    // What the last size's operations moved: a READ test's `-a` may stop below `o.size`.
    let last_size = sizes.last().copied().unwrap_or(o.size);
    let mut atomics_per_qp = None;
    let mut intervals = Vec::new();
    let (measured, verification) = match verb {
        Verb::Atomic => {
            let done = super::atomic_bw::fetch_adds(&mut s, o, |qp| buffers.source(qp))?;
            write_retransmissions = s.ep.dev.stats().retransmitted_packets;
            atomics_per_qp = Some(done.per_qp);
            (done.measured, done.verification)
        }
        Verb::Write | Verb::Read => {
            let mut measured = BwMeasured::default();
            for &size in &sizes {
                let wr_for = |qp: usize, i| {
                    one_sided_wr(verb, i, (buffers.source(qp), size, lkey), remotes[qp])
                };
                measured = match o.run_infinitely_s {
                    Some(interval_s) => {
                        let test = verb.test_name();
                        let run = keep_in_flight_forever(
                            &mut s,
                            o,
                            test,
                            interval_s,
                            wr_for,
                            |_, _, _| Ok(()),
                        )?;
                        intervals = run.intervals;
                        run.whole
                    }
                    None => keep_in_flight(&mut s, o, wr_for, |_, _, _| Ok(()))?,
                };
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
                (true, Verb::Read) => {
                    check_every_qp(&s.ep.mem, qps, last_size, |qp| buffers.source(qp))
                }
                // UC has no READ: the server checks its buffer and says so at the close.
                (true, _) if o.service == ServiceType::Uc => Verification::PeerIsPerftest,
                (true, _) => read_back(&mut s, o, &buffers)?,
            };
            (measured, verification)
        }
    };
    let mut r = size_row(verb.test_name(), last_size, &measured);
    r.per_size = per_size;
    if let Some(interval_s) = o.run_infinitely_s {
        r.notes.push(format!(
            "--run_infinitely: interrupted after {} intervals of {interval_s} s, each \
             printed as it ended; the row above is the whole run ({:.2} s)",
            intervals.len(),
            measured.elapsed_s
        ));
    }
    r.intervals = intervals;
    r.notes.extend(note);
    let mine = bw_report(last_size, measured.ops, &r);
    let me = s.me();
    s.oob.keys(&me, &mut || s.ep.turn(IDLE_TURN))?;
    s.oob.bw_reports(&mine, &mut || s.ep.turn(IDLE_TURN))?;
    peer_ran_one_way(&s)?;
    if let Some(per_qp) = atomics_per_qp.filter(|_| s.pre.peer_is_rnic) {
        super::atomic_bw::tell_counts(&mut s, &per_qp)?;
    }
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

/// The `i`-th WRITE (or READ) of `size` bytes from (into) this side's `source`, its key
/// `lkey`, to (from) `remote`.
pub(super) fn one_sided_wr(
    verb: Verb,
    i: u64,
    (source, size, lkey): (u64, u64, u32),
    remote: RemoteAddr,
) -> SendWr {
    let sge = Sge {
        addr: source,
        len: size as u32,
        lkey,
    };
    match verb {
        Verb::Read => SendWr::read(i, sge, remote),
        _ => SendWr::write(i, sge, remote),
    }
}

/// Where the WRITEs, READs or atomics of the peer's QP `peer` go.
pub fn remote_of(peer: &super::oob::Dest) -> RemoteAddr {
    RemoteAddr {
        va: peer.vaddr,
        rkey: peer.rkey,
    }
}

/// perftest's bandwidth report of `ops` operations of `size` bytes whose figures are `r`'s.
pub(super) fn bw_report(size: u64, ops: u64, r: &LiveResult) -> BwReport {
    BwReport {
        size,
        iters: ops,
        bw_peak: r.row.bw_peak_mb_s,
        bw_avg: r.row.bw_avg_mb_s,
        msg_rate: r.row.msg_rate_mops,
    }
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
    /// Operations completed in all (with `-D`, more than `ops`: the margins' too).
    pub completed: u64,
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

/// What a bandwidth loop has posted and completed on each QP (perftest's `scnt` and `ccnt`),
/// and its rate limiter.
pub(super) struct QpCounts {
    posted: Vec<u64>,
    completed: Vec<u64>,
    pacer: Pacer,
}

impl QpCounts {
    /// A loop of `qps` QPs under `o`'s rate limit (`--rate_limit`), if any.
    fn new(qps: usize, o: &LiveOptions) -> QpCounts {
        QpCounts {
            posted: vec![0; qps],
            completed: vec![0; qps],
            pacer: Pacer::new(o.rate_limit, o.size),
        }
    }

    fn total_posted(&self) -> u64 {
        self.posted.iter().sum()
    }

    pub(super) fn total_completed(&self) -> u64 {
        self.completed.iter().sum()
    }
}

/// Posts on each QP in turn until it has `o.tx_depth` work requests in flight or has posted
/// `per_qp_limit`, as perftest's `run_iter_bw` goes round its QPs, in the rate limiter's
/// bursts when there is one; `wr_for(qp, i)` is QP `qp`'s `i`-th, and `before_post` runs
/// before each post (the peak's stamp).
fn post_round(
    s: &mut Session,
    o: &LiveOptions,
    counts: &mut QpCounts,
    per_qp_limit: u64,
    wr_for: &mut impl FnMut(usize, u64) -> SendWr,
    before_post: &mut impl FnMut(),
) -> anyhow::Result<()> {
    for (qp, me) in s.mine.iter().enumerate() {
        let pacer = &mut counts.pacer;
        if !pacer.may_post(Instant::now) {
            continue;
        }
        let (posted, completed) = (&mut counts.posted[qp], counts.completed[qp]);
        while *posted < per_qp_limit
            && *posted - completed < u64::from(o.tx_depth)
            && pacer.in_burst()
        {
            let wr = wr_for(qp, *posted);
            before_post();
            s.ep.dev.post_send(me.qpn, wr)?;
            *posted += 1;
            pacer.posted();
        }
    }
    Ok(())
}

/// Keeps `o.tx_depth` work requests in flight on each QP (`wr_for(qp, i)` is QP `qp`'s
/// `i`-th, its `wr_id` `i`) until each QP's `o.iters` completed, or with `-D` for its
/// seconds ([`keep_in_flight_for`]), as perftest's `run_iter_bw`; `check(ep, qp, c)` sees
/// every successful completion in order, with the index of its QP. Stamps every post and
/// every completion, of all the QPs in order, as perftest does (`tposted`, `tcompleted`;
/// every work request is signalled), for its BW peak.
pub fn keep_in_flight(
    s: &mut Session,
    o: &LiveOptions,
    mut wr_for: impl FnMut(usize, u64) -> SendWr,
    mut check: impl FnMut(&mut Endpoint, usize, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<BwMeasured> {
    if let Some(d) = o.duration {
        return keep_in_flight_for(s, o, d, wr_for, check);
    }
    let mut counts = QpCounts::new(s.mine.len(), o);
    let total = o.iters * s.mine.len() as u64;
    // Room up front for at most a million stamps of each kind; a longer run grows them
    // (16 bytes per operation, as perftest's own tposted and tcompleted take).
    let room = total.min(PEAK_STAMPS_RESERVED);
    let mut peak = BwPeak::with_capacity(room, room);
    let start = Instant::now();
    let mut last_progress = Instant::now();
    let wait = turn_wait(o);
    while counts.total_completed() < total {
        let mut stamp_post = || peak.post(ps_since(start), 1);
        post_round(s, o, &mut counts, o.iters, &mut wr_for, &mut stamp_post)?;
        s.ep.turn(wait)?;
        while let Some(qp) = take_completion(s, &mut check)? {
            peak.complete(ps_since(start), 1);
            counts.completed[qp] += 1;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "no work request completed for {} s ({} of {total} done)",
                STALL.as_secs(),
                counts.total_completed()
            );
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    peak.finish();
    Ok(BwMeasured {
        ops: total,
        elapsed_s,
        peak: peak.best(),
        completed: total,
    })
}

/// A one-way client's QPs take no requests: the peer's own operations arriving on them
/// mean it runs `-b`, which perftest tells no one (rnic peers say so in their version
/// message). Checked once the peer's report came, when its operations are done.
fn peer_ran_one_way(s: &Session) -> anyhow::Result<()> {
    let taken: u64 = (s.mine.iter())
        .map(|me| s.ep.dev.qp_requests_taken(me.qpn))
        .sum();
    if taken > 0 {
        bail!(
            "-b/--bidirectional: the peer sent {taken} operations of its own to this side's \
             QPs, so it runs -b (or --reversed differs) and this side does not: give both \
             sides the same -b and --reversed"
        );
    }
    Ok(())
}

/// A one-way server prints its client's report: it must be of a run (any size the client
/// ran). perftest sends no word of `--reversed`, and a perftest client given it alone runs
/// nothing (it waits for the server to), then sends a report it never filled in.
fn peer_ran_the_test(theirs: &BwReport) -> anyhow::Result<()> {
    if !theirs.is_of_a_run() {
        bail!(
            "the peer's report is of no run of this test ({} iterations of {} bytes): it did \
             not run it, so do the sides' --reversed differ? (give it to both or neither)",
            theirs.iters,
            theirs.size
        );
    }
    Ok(())
}

/// An rnic peer's messages are checked here against this side's `-s`: a peer that ran
/// another size would read as a data mismatch at the end of its messages (a perftest
/// client's bytes go unchecked, and its size may differ as its server's may).
fn same_size_as_an_rnic_peer(
    o: &LiveOptions,
    s: &Session,
    theirs: &BwReport,
) -> anyhow::Result<()> {
    if s.pre.peer_is_rnic && !o.all_sizes && theirs.size != o.size {
        bail!(
            "-s/--size {}: the peer ran {}-byte messages; give both sides the same -s",
            o.size,
            theirs.size
        );
    }
    Ok(())
}

/// How long a turn of a bandwidth loop may wait for datagrams. Over UC and UD a work request
/// completes when its last packet is on the wire: nothing comes back to wait for, and a
/// blocking wait (a whole kernel tick, often 10 ms, however short it is asked to be) would
/// idle the sender between bursts.
///
/// A rate-limited loop spins too, as perftest's does: a wait could overshoot the next
/// burst by a scheduler tick.
fn turn_wait(o: &LiveOptions) -> std::time::Duration {
    if o.service == ServiceType::Rc && o.rate_limit.is_none() {
        IDLE_TURN
    } else {
        std::time::Duration::ZERO
    }
}

/// Takes the next completion of a posted work request, if there is one, and has `check`
/// see it; a failed work request ends the run. Returns the index of the QP it completed
/// on, if one was taken. Receive completions on the way (a bidirectional send-bw's) go to
/// `check` too, and are not counted.
fn take_completion(
    s: &mut Session,
    check: &mut impl FnMut(&mut Endpoint, usize, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<Option<usize>> {
    while let Some(c) = s.ep.poll_cq() {
        if c.status != WcStatus::Success {
            bail!(
                "{:?} {} completed with {:?}{}",
                c.opcode,
                c.wr_id,
                c.status,
                super::session::peer_hint(c.status)
            );
        }
        let qp = s.qp_of(&c)?;
        check(&mut s.ep, qp, &c)?;
        if !matches!(c.opcode, WcOpcode::Recv | WcOpcode::RecvRdmaWithImm) {
            return Ok(Some(qp));
        }
    }
    Ok(None)
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
    mut wr_for: impl FnMut(usize, u64) -> SendWr,
    mut check: impl FnMut(&mut Endpoint, usize, &Completion) -> anyhow::Result<()>,
) -> anyhow::Result<BwMeasured> {
    let clock = RunClock::start(d);
    let mut window_ops = 0u64;
    let counts = in_flight_while(
        s,
        o,
        (&mut wr_for, &mut check),
        || !clock.ended(),
        || window_ops += u64::from(clock.sampling()),
        |_| Ok(()),
    )?;
    Ok(BwMeasured {
        ops: window_ops,
        elapsed_s: d.window_s(),
        peak: None,
        completed: counts.total_completed(),
    })
}

/// Keeps `o.tx_depth` work requests in flight on each QP while `sending()` holds, then
/// waits for those still in flight; `on_completion()` runs on each completion and
/// `after_turn(sending)` after each turn of the engine. Returns what each QP posted and
/// completed.
pub(super) fn in_flight_while(
    s: &mut Session,
    o: &LiveOptions,
    (wr_for, check): (
        &mut impl FnMut(usize, u64) -> SendWr,
        &mut impl FnMut(&mut Endpoint, usize, &Completion) -> anyhow::Result<()>,
    ),
    mut sending: impl FnMut() -> bool,
    mut on_completion: impl FnMut(),
    mut after_turn: impl FnMut(bool) -> anyhow::Result<()>,
) -> anyhow::Result<QpCounts> {
    let mut counts = QpCounts::new(s.mine.len(), o);
    let mut last_progress = Instant::now();
    loop {
        let sending = sending();
        if !sending && counts.posted == counts.completed {
            return Ok(counts);
        }
        if sending {
            post_round(s, o, &mut counts, u64::MAX, wr_for, &mut || {})?;
        }
        s.ep.turn(turn_wait(o))?;
        while let Some(qp) = take_completion(s, check)? {
            counts.completed[qp] += 1;
            last_progress = Instant::now();
            on_completion();
        }
        after_turn(sending)?;
        if last_progress.elapsed() > STALL {
            bail!(
                "no work request completed for {} s ({} of {} posted done)",
                STALL.as_secs(),
                counts.total_completed(),
                counts.total_posted()
            );
        }
    }
}

/// Whether the server's check of its buffer is the run's verification, told to the client at
/// the close: a UC WRITE between two rnic endpoints (the client cannot READ it back).
fn server_tells_verdict(o: &LiveOptions, s: &Session, verb: Verb) -> bool {
    o.service == ServiceType::Uc && s.pre.peer_is_rnic && verb == Verb::Write
}

/// READs each of the server's QP buffers back (over that QP) and compares them with their
/// patterns. One READ at a time, each at most what the requester's window holds (all of a
/// READ's responses must fit in it), so a buffer of any size can be read back.
fn read_back(
    s: &mut Session,
    o: &LiveOptions,
    buffers: &HalvedBuffers,
) -> anyhow::Result<Verification> {
    let chunk_bytes = u64::from(o.window_psns) * u64::from(s.pre.mtu_bytes);
    for qp in 0..s.mine.len() {
        let mut offset = 0;
        while offset < o.size {
            let len = chunk_bytes.min(o.size - offset);
            read_piece(s, qp, (offset, len), buffers.second(qp))?;
            offset += len;
        }
    }
    let qps = s.mine.len();
    Ok(check_every_qp(&s.ep.mem, qps, o.size, |qp| {
        buffers.second(qp)
    }))
}

/// READs the `(offset, len)` bytes of the server's buffer of QP `qp` to the same offset of
/// `into`.
fn read_piece(
    s: &mut Session,
    qp: usize,
    (offset, len): (u64, u64),
    into: u64,
) -> anyhow::Result<()> {
    let sge = Sge {
        addr: into + offset,
        len: len as u32,
        lkey: s.me().rkey,
    };
    let remote = remote_of(&s.peers[qp]);
    let from = RemoteAddr {
        va: remote.va.wrapping_add(offset),
        ..remote
    };
    s.ep.dev
        .post_send(s.mine[qp].qpn, SendWr::read(u64::MAX, sge, from))?;
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
    let stride = (o.size.max(u64::from(CYCLE_BUFFER_BYTES))).next_multiple_of(PAGE_BYTES);
    let layout = Layout {
        mr_addr: DST_ADDR,
        mr_len: u64::from(o.qps) * stride,
        advertised: DST_ADDR,
        qp_stride: stride,
        // READs and atomics find the pattern (a WRITE server's buffers take the client's).
        served_pattern_bytes: if verb == Verb::Write { 0 } else { stride },
    };
    let mut s = Session::open(o, &layout, false)?;
    let qps = s.mine.len();
    let me = s.me();
    // The client's closing handshake comes when its WRITEs or READs are done; until then the
    // engine answers them (and the READ-back).
    s.oob.keys_waiting(&me, &mut || s.ep.turn(IDLE_TURN))?;
    let theirs = s
        .oob
        .bw_reports(&BwReport::default(), &mut || s.ep.turn(IDLE_TURN))?;
    peer_ran_the_test(&theirs)?;
    same_size_as_an_rnic_peer(o, &s, &theirs)?;
    if o.service == ServiceType::Uc {
        // No ACK told the client its last WRITEs arrived: take in what is still on its way.
        linger(&mut s.ep)?;
    }
    let verification = if verb == Verb::Atomic {
        // The server knows its buffers' first contents, whoever the client is.
        let served = super::atomic_bw::served_counts(&mut s, o, theirs.iters)?;
        over_every_qp(qps, stride, |qp| {
            let (base, seed) = (layout.advertised_for(qp), qp_pattern_seed(qp));
            let count = (served[qp], o.atomic.step());
            super::atomic_bw::check_served(&s.ep.mem, (base, stride), count, seed)
        })
    } else if s.pre.peer_is_rnic {
        check_every_qp(&s.ep.mem, qps, o.size, |qp| layout.advertised_for(qp))
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

#[cfg(test)]
mod tests {
    use super::*;
    use rnic_transport::Memory;

    /// Three QPs' buffers of 4096 bytes, 8192 apart, each holding its QP's pattern.
    fn three_qps() -> (SparseMemory, impl Fn(usize) -> u64) {
        let addr_of = |qp: usize| SRC_ADDR + qp as u64 * 8192;
        let mut mem = SparseMemory::new();
        for qp in 0..3 {
            mem.fill_pattern(addr_of(qp), 4096, qp_pattern_seed(qp));
        }
        (mem, addr_of)
    }

    #[test]
    fn every_qps_buffer_is_checked_against_its_own_pattern() {
        let (mut mem, addr_of) = three_qps();
        assert_eq!(
            check_every_qp(&mem, 3, 4096, &addr_of),
            Verification::Verified
        );
        // A byte wrong in QP 2's buffer: its offset counts QP 0's and QP 1's bytes first.
        let mut byte = [0u8];
        mem.read(addr_of(2) + 100, &mut byte);
        mem.write(addr_of(2) + 100, &[!byte[0]]);
        assert_eq!(
            check_every_qp(&mem, 3, 4096, &addr_of),
            Verification::Mismatch {
                offset: 2 * 4096 + 100
            }
        );
    }

    #[test]
    fn bytes_that_reached_another_qps_buffer_do_not_pass() {
        let (mut mem, addr_of) = three_qps();
        // QP 1's bytes landed in QP 0's buffer.
        mem.fill_pattern(addr_of(0), 4096, qp_pattern_seed(1));
        assert!(matches!(
            check_every_qp(&mem, 3, 4096, &addr_of),
            Verification::Mismatch { offset } if offset < 4096
        ));
    }
}
