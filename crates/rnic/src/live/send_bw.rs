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
use rnic_model::result::UnreliableResult;
use rnic_transport::{Completion, SendWr, ServiceType, Sge, WcOpcode};

use super::bw::{keep_in_flight, size_row};
use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::{RecvLayout, RecvRings};
use super::report::LiveResult;
use super::session::{Layout, Session, IDLE_TURN, STALL};
use super::{qp_pattern_seed, LiveOptions};

/// The client's source buffers, one per QP.
const SRC_ADDR: u64 = 0x1000_0000;
/// The server's receive buffers, each QP's ring after the previous QP's.
const DST_ADDR: u64 = 0x2000_0000;
/// UC/UD: how long the server waits for more messages once the client is done sending.
/// The client's exchange message follows its last send completion, which over UC and UD
/// comes when the packet is on the wire, so only datagrams in flight or in a queue remain.
const DRAIN: Duration = Duration::from_millis(300);

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    if o.host.is_some() {
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
    };
    let mut s = Session::open(o, &layout, false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    for qp in 0..s.mine.len() {
        let addr = layout.advertised_for(qp);
        s.ep.mem.fill_pattern(addr, o.size, qp_pattern_seed(qp));
    }
    // perftest's server has posted its receive WQEs when it answers this handshake.
    s.handshake()?;
    let lkey = s.me().rkey;
    let sge = |qp: usize| Sge {
        addr: layout.advertised_for(qp),
        len: o.size as u32,
        lkey,
    };
    let measured = keep_in_flight(
        &mut s,
        o,
        |qp, i| SendWr::send(i, sge(qp)),
        |_, _, c| expect_opcode(c, WcOpcode::Send),
    )?;
    let mut r = size_row("send-bw", o.size, &measured);
    if counts_exchanged(o, &s) {
        let sent = measured.ops;
        let received = s.exchange_count(sent)?;
        r.unreliable = Some(loss(o.service, sent, received));
    }
    let verification = s.close(super::report::Verification::PeerIsPerftest)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: DST_ADDR,
        mr_len: RecvRings::bytes(RecvLayout::of(o), o.iters),
        advertised: DST_ADDR,
        qp_stride: RecvLayout::of(o).bytes(o.iters),
    };
    let mut s = Session::open(o, &layout, false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    let check = s.pre.peer_is_rnic;
    let mut rings = RecvRings::new(&s, DST_ADDR, RecvLayout::of(o), o.iters, check);
    rings.post_all(&mut s.ep)?;
    s.handshake()?;
    let lossy = o.service != ServiceType::Rc;
    let elapsed_s = receive(&mut s, &mut rings, lossy)?;
    let received = rings.received();
    let mut r = LiveResult::bandwidth("send-bw", o.size, received, elapsed_s);
    r.row.iterations = rings.total();
    if lossy {
        r.unreliable = Some(server_loss(&mut s, o, rings.total(), received)?);
    }
    let verification = rings.verification();
    s.close(verification)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
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
fn loss(service: ServiceType, sent: u64, received: u64) -> UnreliableResult {
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

/// Takes SENDs into each QP's ring until every QP's arrived; returns the seconds from the
/// first arrival to the last. `lossy` (UC/UD, which resend nothing): also stops once the
/// client is done sending and nothing arrived for [`DRAIN`].
fn receive(s: &mut Session, rings: &mut RecvRings, lossy: bool) -> anyhow::Result<f64> {
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let total = rings.total();
    while rings.received() < total {
        s.ep.turn(IDLE_TURN)?;
        while let Some(c) = s.ep.poll_cq() {
            first.get_or_insert_with(Instant::now);
            rings.take(s, &c)?;
            last = Instant::now();
        }
        let quiet = last.elapsed();
        if lossy && quiet > DRAIN && s.oob.peer_has_written()? {
            break;
        }
        if quiet > STALL {
            bail!(
                "no SEND arrived for {} s ({} of {} received{})",
                STALL.as_secs(),
                rings.received(),
                total,
                if lossy {
                    ", and the client is not done"
                } else {
                    ""
                }
            );
        }
    }
    Ok(first.map_or(0.0, |f| (last - f).as_secs_f64()))
}
