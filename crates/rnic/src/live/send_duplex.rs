//! `-b` of `rnic live send-bw`: ib_send_bw's bidirectional run (perftest's `run_iter_bi`).
//! Each side posts its receives, and after perftest's handshake keeps `tx_depth` SENDs in
//! flight on each QP while it takes the peer's SENDs into its rings and reposts them, until
//! its own SENDs completed and the peer's all arrived; then the bandwidth reports (each
//! side's own SENDs), a row with the sum of both directions, and with `-a` one more
//! handshake, as perftest's. Over UC and UD, which resend nothing, a side stops waiting for
//! the peer's SENDs once its own are done and none arrived for a while ([`Drain::QUIET`]); between rnic
//! endpoints the sides then exchange how many they sent, and each reports what it lost of
//! the peer's (against perftest, of `-n` per QP).
//!
//! With `-D` each side keeps its SENDs in flight for the run's seconds and counts, as
//! `run_iter_bi` does, both its own SENDs and the peer's that complete in the measured
//! window: the row is this side's two directions, and no reports cross (perftest's send-bw
//! prints its own side only under `-b -D`). The receives are reposted for as long as the
//! peer sends; once its own SENDs are done and none of the peer's came for a while, a side
//! is done. Between rnic endpoints the sides then exchange how many each sent: over RC
//! every one must have arrived (a side waits for the rest), over UC and UD the difference
//! is the loss.
//!
//! Between two rnic endpoints each side checks every message that lands against the peer's
//! pattern for its QP, and the verdicts cross at the close; a perftest peer's messages go
//! unchecked.

use std::time::Duration;

use anyhow::bail;
use rnic_transport::{SendWr, ServiceType, Sge, WcOpcode};

use super::bw::{in_flight_while, keep_in_flight};
use super::duplex::exchange_reports;
use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::{RecvLayout, RecvRings};
use super::report::{LiveResult, Verification};
use super::send_bw::{end_of_size, expect_opcode, loss, receive, Drain};
use super::session::{Layout, RunClock, Session};
use super::{qp_pattern_seed, DurationMode, LiveOptions};

/// Where the QPs' source buffers start; the receive rings follow them.
const SRC_ADDR: u64 = 0x1000_0000;

/// A side's buffers: each QP's source (the largest size's, at least a page), then the
/// receive rings, each QP's after the previous QP's.
struct Buffers {
    stride: u64,
    rings_addr: u64,
}

impl Buffers {
    fn of(o: &LiveOptions) -> Buffers {
        let stride = o
            .size
            .max(u64::from(CYCLE_BUFFER_BYTES))
            .next_multiple_of(4096);
        Buffers {
            stride,
            rings_addr: SRC_ADDR + u64::from(o.qps) * stride,
        }
    }

    fn source(&self, qp: usize) -> u64 {
        SRC_ADDR + qp as u64 * self.stride
    }

    /// One MR from the sources to the end of the rings of the size that needs the most.
    fn layout(&self, o: &LiveOptions) -> Layout {
        let rings_of = |size| RecvRings::bytes(RecvLayout::of(&o.at_size(size)), per_qp(o));
        let rings = o.sizes().into_iter().map(rings_of).max().unwrap_or(0);
        Layout {
            mr_addr: SRC_ADDR,
            mr_len: self.rings_addr - SRC_ADDR + rings,
            advertised: SRC_ADDR,
            qp_stride: self.stride,
            served_pattern_bytes: 0,
        }
    }
}

/// The peer's SENDs each QP takes: `-n`, or with `-D` as many as come (each receive is
/// posted again until the run ends).
fn per_qp(o: &LiveOptions) -> u64 {
    match o.duration {
        Some(_) => u64::MAX,
        None => o.iters,
    }
}

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let b = Buffers::of(o);
    let mut s = Session::open(o, &b.layout(o), false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    for qp in 0..s.mine.len() {
        s.ep.mem
            .fill_pattern(b.source(qp), o.size, qp_pattern_seed(qp));
    }
    let check = s.pre.peer_is_rnic;
    let (mut per_size, mut mine) = (Vec::new(), Verification::at_start(check));
    let mut last = None;
    for size in o.sizes() {
        let (row, verdict) = one_size(&mut s, o, (&b, size), check)?;
        mine = mine.or_first_mismatch(verdict);
        end_of_size(&mut s, o, &mut per_size, &row)?;
        last = Some(row);
    }
    let mut r = last.expect("at least one size");
    r.per_size = per_size;
    s.finish_both_ways(r, mine)
}

/// One size: receives posted, perftest's handshake, this side's SENDs kept in flight while
/// the peer's land, then the reports; returns the row (both directions) and this side's
/// verdict on the peer's messages.
fn one_size(
    s: &mut Session,
    o: &LiveOptions,
    (b, size): (&Buffers, u64),
    check: bool,
) -> anyhow::Result<(LiveResult, Verification)> {
    let o = &o.at_size(size);
    let mut rings = RecvRings::new(s, b.rings_addr, RecvLayout::of(o), per_qp(o), check);
    rings.post_all(&mut s.ep)?;
    s.handshake()?;
    let lkey = s.me().rkey;
    let sge = |qp: usize| Sge {
        addr: b.source(qp),
        len: size as u32,
        lkey,
    };
    if let Some(d) = o.duration {
        let row = for_duration(s, o, (d, &sge), &mut rings)?;
        return Ok((row, rings.verification()));
    }
    let measured = keep_in_flight(
        s,
        o,
        |qp, i| SendWr::send(i, sge(qp)),
        |ep, qp, c| match c.opcode {
            WcOpcode::Recv => rings.take_on(ep, qp, c),
            _ => expect_opcode(c, WcOpcode::Send),
        },
    )?;
    let lossy = o.service != ServiceType::Rc;
    if !lossy && rings.received() == 0 {
        peer_sends_at_all(s, &mut rings)?;
    }
    // The peer's SENDs still on their way.
    let drain = if lossy { Drain::QUIET } else { Drain::Never };
    let due = rings.total();
    receive(s, &mut rings, (due, drain))?;
    let mut row = exchange_reports(s, "send-bw", size, &measured)?;
    if lossy {
        let received = rings.received();
        let peer_sent = match s.pre.peer_is_rnic {
            true => s.exchange_count(measured.completed)?,
            false => rings.total(),
        };
        row.unreliable = Some(loss(o.service, peer_sent, received));
    }
    Ok((row, rings.verification()))
}

/// How long a `-b` side whose own SENDs are done waits for the peer's first before it
/// takes the peer to run without `-b`.
const PEER_SILENT: Duration = Duration::from_secs(2);

/// Over RC a `-b` side whose own SENDs all completed has none of the peer's: they started
/// with this side's, after the same handshake, so if none comes within [`PEER_SILENT`] the
/// peer sends none. perftest sends no word of `-b`: a one-way perftest server only
/// receives.
fn peer_sends_at_all(s: &mut Session, rings: &mut RecvRings) -> anyhow::Result<()> {
    receive(s, rings, (1, Drain::QuietFor(PEER_SILENT)))?;
    if rings.received() == 0 {
        bail!(
            "-b/--bidirectional: none of the peer's SENDs came within {} s of this side's \
             last, so it runs without -b: give -b to both sides, as perftest needs",
            PEER_SILENT.as_secs()
        );
    }
    Ok(())
}

/// `-D`: this side's SENDs kept in flight for `d.total_s` while the peer's land; the row
/// counts both directions' completions in the measured window (`run_iter_bi`'s `iters`,
/// its receives and its SENDs), over the window's seconds. Then the peer's last SENDs are
/// taken, and between rnic endpoints the counts cross (see the module's comment).
fn for_duration(
    s: &mut Session,
    o: &LiveOptions,
    (d, sge): (DurationMode, &dyn Fn(usize) -> Sge),
    rings: &mut RecvRings,
) -> anyhow::Result<LiveResult> {
    let clock = RunClock::start(d);
    let (mut sent_in_window, mut received_in_window) = (0u64, 0u64);
    let counts = in_flight_while(
        s,
        o,
        (
            &mut |qp, i| SendWr::send(i, sge(qp)),
            &mut |ep, qp, c| match c.opcode {
                WcOpcode::Recv => {
                    received_in_window += u64::from(clock.sampling());
                    rings.take_on(ep, qp, c)
                }
                _ => expect_opcode(c, WcOpcode::Send),
            },
        ),
        || !clock.ended(),
        || sent_in_window += u64::from(clock.sampling()),
        |_| Ok(()),
    )?;
    receive(s, rings, (u64::MAX, Drain::QUIET))?;
    let ops = sent_in_window + received_in_window;
    let mut row = LiveResult::bandwidth("send-bw", o.size, ops, d.window_s());
    row.notes.push(format!(
        "-b -D: the row counts this side's SENDs ({sent_in_window}) and the peer's it \
         received ({received_in_window}) in the measured window, as perftest's send-bw does; \
         no reports cross"
    ));
    let received = rings.received();
    let peer_sent = match s.pre.peer_is_rnic {
        true => s.exchange_count(counts.total_completed())?,
        false => received,
    };
    if o.service == ServiceType::Rc {
        // Every SEND of the peer's completed, so each is due here.
        receive(s, rings, (peer_sent, Drain::Never))?;
    } else {
        row.unreliable = Some(loss(o.service, peer_sent, received));
    }
    Ok(row)
}
