//! `rnic live send-bw`: ib_send_bw's test. The server posts receive WQEs (perftest's 512, or
//! fewer for a short run) and says so with one more handshake; the client keeps `tx_depth`
//! SENDs of `size` bytes in flight until `iters` completed; the server reposts each receive as
//! it completes, until it has received `iters` messages, and measures from its first receive
//! to its last (perftest's server reports its own figures for SEND).
//!
//! With `-q N`, as perftest's `ib_send_bw -q N`: the client keeps `tx_depth` SENDs in flight
//! on each QP until each QP's `iters` completed; the server posts its receives on each QP
//! and reposts on the QP whose receive completed, until every QP has received `iters`
//! (the figures over all `N * iters` messages).
//!
//! Verification, when the peer is rnic: each QP's source buffer at the client holds that
//! QP's pattern, and the server checks every message that lands on a QP against it (its
//! length too) and clears the buffer before it reposts the receive, so a receive that
//! completes without its bytes cannot pass on a previous message's. The server's verdict
//! goes to the client at the close.
//!
//! Over UC and UD (`-c UC|UD`) nothing is resent and a sender never learns what arrived: the
//! server posts a receive for every message (up to perftest's 16000, as perftest does over
//! these services), takes what arrives until it has all or the client, done sending (its next
//! exchange message is waiting), has had nothing arrive for [`DRAIN`], and counts the rest
//! as lost. Its figures are over the messages that arrived; between rnic endpoints the two
//! sides exchange the messages sent and received before the close, so both JSONs carry the
//! count (`unreliable`). perftest's own server waits for every message instead and gives up
//! after a minute or two without one.

use std::time::{Duration, Instant};

use anyhow::bail;
use rnic_model::result::{SizeResult, UnreliableResult};
use rnic_transport::{Completion, SendWr, ServiceType, Sge, WcOpcode};

use super::bw::{keep_in_flight, size_row, BwMeasured};
use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::{RecvLayout, RecvRings};
use super::report::{LiveResult, Verification};
use super::session::{Layout, Session, IDLE_TURN, STALL};
use super::{qp_pattern_seed, DurationMode, LiveOptions};

/// The client's source buffers, one per QP.
const SRC_ADDR: u64 = 0x1000_0000;
/// The server's receive buffers, each QP's ring after the previous QP's.
const DST_ADDR: u64 = 0x2000_0000;
/// UC/UD: how long the server waits for more messages once the client is done sending.
/// The client's exchange message follows its last send completion, which over UC and UD
/// comes when the packet is on the wire, so only datagrams in flight or in a queue remain.
const DRAIN: Duration = Duration::from_millis(300);

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    if o.bidirectional {
        super::send_duplex::run(o)
    } else if o.runs_traffic() {
        client(o)
    } else {
        server(o)
    }
}

fn client(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let stride = o.size.max(u64::from(CYCLE_BUFFER_BYTES));
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: u64::from(o.qps) * stride,
        advertised: SRC_ADDR,
        qp_stride: stride,
        served_pattern_bytes: 0,
    };
    let mut s = Session::open(o, &layout, false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    // The largest size's pattern: every smaller size sends a prefix of it.
    for qp in 0..s.mine.len() {
        let addr = layout.advertised_for(qp);
        s.ep.mem.fill_pattern(addr, o.size, qp_pattern_seed(qp));
    }
    let lkey = s.me().rkey;
    let (mut per_size, mut counts) = (Vec::new(), (0, 0));
    let (mut r, mut stop) = (None, None);
    for size in o.sizes() {
        // perftest's server has posted its receive WQEs when it answers this handshake.
        s.handshake()?;
        let sge = |qp: usize| Sge {
            addr: layout.advertised_for(qp),
            len: size as u32,
            lkey,
        };
        let measured = keep_in_flight(
            &mut s,
            &o.at_size(size),
            |qp, i| SendWr::send(i, sge(qp)),
            |_, _, c| expect_opcode(c, WcOpcode::Send),
        )?;
        let row = size_row("send-bw", size, &measured);
        if counts_exchanged(o, &s) {
            let received = s.exchange_count(measured.completed)?;
            counts = (counts.0 + measured.completed, counts.1 + received);
            stop = lost_ends_all_sizes(
                o,
                size,
                measured.completed - received.min(measured.completed),
            );
        }
        end_of_size(&mut s, o, &mut per_size, &row)?;
        r = Some(row);
        if stop.is_some() {
            break;
        }
    }
    let mut r = r.expect("at least one size");
    r.per_size = per_size;
    r.notes.extend(stop);
    if counts_exchanged(o, &s) {
        r.unreliable = Some(loss(o.service, counts.0, counts.1));
    }
    let verification = s.close(Verification::PeerIsPerftest)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

/// After each size of `-a`: its row goes to the table, and perftest's sides have one more
/// handshake (the server's receives of the next size are posted before the one after it).
pub(super) fn end_of_size(
    s: &mut Session,
    o: &LiveOptions,
    per_size: &mut Vec<SizeResult>,
    r: &LiveResult,
) -> anyhow::Result<()> {
    if o.all_sizes {
        per_size.push(r.row.clone());
        s.handshake()?;
    }
    Ok(())
}

/// The server's receive buffers: room for the rings of the size that needs the most.
fn server_layout(o: &LiveOptions, per_qp: u64) -> Layout {
    let bytes_of = |size| RecvRings::bytes(RecvLayout::of(&o.at_size(size)), per_qp);
    let largest = o.sizes().into_iter().map(bytes_of).max().unwrap_or(0);
    Layout {
        mr_addr: DST_ADDR,
        mr_len: largest,
        advertised: DST_ADDR,
        qp_stride: RecvLayout::of(o).bytes(per_qp),
        served_pattern_bytes: 0,
    }
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    // With -D the receives are reposted for as long as the run lasts.
    let per_qp = if o.duration.is_some() {
        u64::MAX
    } else {
        o.iters
    };
    let mut s = Session::open(o, &server_layout(o, per_qp), false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    let check = s.pre.peer_is_rnic;
    let lossy = o.service != ServiceType::Rc;
    let (mut per_size, mut verification) = (Vec::new(), Verification::at_start(check));
    let (mut r, mut stop, mut counts) = (None, None, (0, 0));
    for size in o.sizes() {
        let layout = RecvLayout::of(&o.at_size(size));
        let mut rings = RecvRings::new(&s, DST_ADDR, layout, per_qp, check);
        rings.post_all(&mut s.ep)?;
        s.handshake()?;
        let (m, due) = match o.duration {
            Some(d) => (receive_for(&mut s, &mut rings, d, lossy)?, rings.received()),
            None => {
                let drain = if lossy { Drain::PeerDone } else { Drain::Never };
                let due = rings.total();
                (receive(&mut s, &mut rings, (due, drain))?, due)
            }
        };
        let mut row = LiveResult::bandwidth("send-bw", size, m.ops, m.elapsed_s);
        row.row.iterations = if o.duration.is_some() { m.ops } else { due };
        if lossy {
            let loss = server_loss(&mut s, o, due, rings.received())?;
            stop = lost_ends_all_sizes(o, size, loss.messages_lost);
            counts = (
                counts.0 + loss.messages_sent,
                counts.1 + loss.messages_received,
            );
            row.unreliable = Some(loss);
        }
        verification = verification.or_first_mismatch(rings.verification());
        end_of_size(&mut s, o, &mut per_size, &row)?;
        r = Some(row);
        if stop.is_some() {
            break;
        }
    }
    let mut r = r.expect("at least one size");
    r.per_size = per_size;
    r.notes.extend(stop);
    // The messages of every size, as the client counts them.
    if let Some(u) = &mut r.unreliable {
        let all = loss(o.service, counts.0, counts.1);
        (u.messages_sent, u.messages_received) = (all.messages_sent, all.messages_received);
        u.messages_lost = all.messages_lost;
    }
    s.close(verification)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

/// Whether `-a` over UC or UD stops after a size of which `lost` messages were lost, and why:
/// the receives they did not take stay posted, and the next, larger size's messages would
/// land in those smaller buffers (a local length error). Both sides know the loss (the
/// counts were exchanged), so both stop after the same size. perftest's server would wait
/// for the lost messages instead.
fn lost_ends_all_sizes(o: &LiveOptions, size: u64, lost: u64) -> Option<String> {
    (o.all_sizes && lost > 0).then(|| {
        format!(
            "-a/--all: {lost} messages of {size} bytes were lost over {}, and the receives \
             they left posted are too small for the next size: the sizes stop at {size} bytes",
            o.service.name().to_ascii_uppercase()
        )
    })
}

/// What a UC/UD server lost: the client's count of messages sent (an rnic client's, else
/// `due`, `-n` times the QPs) against those received whole, with the engine's causes.
fn server_loss(
    s: &mut Session,
    o: &LiveOptions,
    due: u64,
    received: u64,
) -> anyhow::Result<UnreliableResult> {
    let sent = if counts_exchanged(o, s) {
        s.exchange_count(received)?
    } else {
        due
    };
    let counts = s.ep.dev.stats().unreliable;
    Ok(UnreliableResult {
        uc_messages_abandoned: counts.uc_messages_abandoned,
        no_recv_messages: counts.no_recv_messages,
        qkey_mismatches: counts.ud_qkey_mismatches,
        recv_errors: counts.recv_errors,
        ..loss(o.service, sent, received)
    })
}

/// Whether the two sides exchange the messages sent and received before the close: UC and
/// UD between rnic endpoints (perftest has no such message).
fn counts_exchanged(o: &LiveOptions, s: &Session) -> bool {
    o.service != ServiceType::Rc && s.pre.peer_is_rnic
}

/// The loss of a UC/UD run: `sent` messages against `received` whole.
pub(super) fn loss(service: ServiceType, sent: u64, received: u64) -> UnreliableResult {
    UnreliableResult {
        transport: service.name().to_string(),
        messages_sent: sent,
        messages_received: received,
        messages_lost: sent.saturating_sub(received),
        ..UnreliableResult::default()
    }
}

/// A send-side completion is the operation posted.
pub fn expect_opcode(c: &Completion, want: WcOpcode) -> anyhow::Result<()> {
    if c.opcode != want {
        bail!(
            "work request {} completed as {:?}, want {want:?}",
            c.wr_id,
            c.opcode
        );
    }
    Ok(())
}

/// Takes every receive completion there is into the rings; returns how many.
fn take_arrivals(s: &mut Session, rings: &mut RecvRings) -> anyhow::Result<u64> {
    let mut n = 0;
    while let Some(c) = s.ep.poll_cq() {
        rings.take(s, &c)?;
        n += 1;
    }
    Ok(n)
}

/// When [`receive`] may stop before every SEND arrived: over UC and UD, which resend
/// nothing, a lost one never comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Drain {
    /// RC: every SEND comes.
    Never,
    /// Once nothing arrived for [`DRAIN`] and the peer has written its next exchange
    /// message, so it is done sending (a server's receiving).
    PeerDone,
    /// Once nothing arrived for this long ([`Drain::QUIET`]: [`DRAIN`]).
    QuietFor(Duration),
}

impl Drain {
    /// Once nothing arrived for [`DRAIN`]: this side's own SENDs are done, and the peer's
    /// started with them, after the same handshake (`-b`).
    pub(super) const QUIET: Drain = Drain::QuietFor(DRAIN);
}

/// Takes SENDs into each QP's ring until `total` arrived in all (every QP's, with
/// [`RecvRings::total`]), or `drain` ends the wait; measures from the first arrival to the
/// last.
pub(super) fn receive(
    s: &mut Session,
    rings: &mut RecvRings,
    (total, drain): (u64, Drain),
) -> anyhow::Result<BwMeasured> {
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    while rings.received() < total {
        s.ep.turn(IDLE_TURN)?;
        if take_arrivals(s, rings)? > 0 {
            last = Instant::now();
            first.get_or_insert(last);
        }
        let quiet = last.elapsed();
        let drained = match drain {
            Drain::Never => false,
            Drain::PeerDone => quiet > DRAIN && s.oob.peer_has_written()?,
            Drain::QuietFor(d) => quiet > d,
        };
        if drained {
            break;
        }
        if quiet > STALL {
            bail!(
                "no SEND arrived for {} s ({} of {} received{})",
                STALL.as_secs(),
                rings.received(),
                total,
                if drain == Drain::PeerDone {
                    ", and the client is not done"
                } else {
                    ""
                }
            );
        }
    }
    let received = rings.received();
    Ok(BwMeasured {
        ops: received,
        elapsed_s: first.map_or(0.0, |f| (last - f).as_secs_f64()),
        peak: None,
        completed: received,
    })
}

/// ib_send_bw's server in duration mode (`-D`): its clock starts at the first arrival, the
/// arrivals between `d.margin_s` after it and `d.margin_s` before `d.total_s` are the
/// measurement, and after `d.total_s` it takes what is still arriving until the client is
/// done (its next exchange message is waiting; over UC and UD, and nothing arrived for
/// [`DRAIN`]), so every message is checked and counted.
fn receive_for(
    s: &mut Session,
    rings: &mut RecvRings,
    d: DurationMode,
    lossy: bool,
) -> anyhow::Result<BwMeasured> {
    let (mut first, mut last) = (None::<Instant>, Instant::now());
    let mut window_ops = 0;
    loop {
        s.ep.turn(IDLE_TURN)?;
        let n = take_arrivals(s, rings)?;
        let now = Instant::now();
        if n > 0 {
            last = now;
            first.get_or_insert(now);
        }
        let t = first.map_or(0.0, |f| (now - f).as_secs_f64());
        if d.samples_at(t) {
            window_ops += n;
        }
        let quiet = last.elapsed();
        let ended = t >= d.total_s;
        if ended && (!lossy || quiet > DRAIN) && s.oob.peer_has_written()? {
            take_arrivals(s, rings)?;
            break;
        }
        if quiet > STALL {
            bail!(
                "no SEND arrived for {} s ({} received)",
                STALL.as_secs(),
                rings.received()
            );
        }
    }
    Ok(BwMeasured {
        ops: window_ops,
        elapsed_s: d.window_s(),
        peak: None,
        completed: rings.received(),
    })
}
