//! `rnic live send-bw`: ib_send_bw's test. The server posts receive WQEs (perftest's 512, or
//! fewer for a short run) and says so with one more handshake; the client keeps `tx_depth`
//! SENDs of `size` bytes in flight until `iters` completed; the server reposts each receive as
//! it completes, until it has received `iters` messages, and measures from its first receive
//! to its last (perftest's server reports its own figures for SEND).
//!
//! Verification, when the peer is rnic: the client's source buffer holds rnic's pattern, and
//! the server checks every message that lands against it (its length too) and clears the
//! buffer before it reposts the receive, so a receive that completes without its bytes cannot
//! pass on a previous message's. The server's verdict goes to the client at the close.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{Completion, SendWr, Sge, WcOpcode};

use super::bw::keep_in_flight;
use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::RecvRing;
use super::report::LiveResult;
use super::session::{Layout, Session, IDLE_TURN, STALL};
use super::{LiveOptions, PATTERN_SEED};

/// The client's source buffer.
const SRC_ADDR: u64 = 0x1000_0000;
/// The server's receive buffers.
const DST_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    if o.host.is_some() {
        client(o)
    } else {
        server(o)
    }
}

fn client(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: SRC_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    // perftest's server has posted its receive WQEs when it answers this handshake.
    s.handshake()?;
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me.rkey,
    };
    let elapsed_s = keep_in_flight(
        &mut s,
        o,
        |i| SendWr::send(i, sge),
        |_, c| expect_opcode(c, WcOpcode::Send),
    )?;
    let mut r = LiveResult::bandwidth("send-bw", o.size, o.iters, elapsed_s);
    let verification = s.close(super::report::Verification::PeerIsPerftest)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: DST_ADDR,
        mr_len: RecvRing::bytes(o.iters, o.size),
        advertised: DST_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    let mut ring = RecvRing::new(DST_ADDR, o.size, s.me.rkey, o.iters, s.pre.peer_is_rnic);
    ring.post_all(&mut s.ep)?;
    s.handshake()?;
    let elapsed_s = receive_all(&mut s, o, &mut ring)?;
    let mut r = LiveResult::bandwidth("send-bw", o.size, o.iters, elapsed_s);
    s.close(ring.verification)?;
    r.finish(&mut s, ring.verification);
    s.ep.finish()?;
    Ok(r)
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

/// Takes `o.iters` SENDs into `ring`; returns the seconds from the first to the last.
fn receive_all(s: &mut Session, o: &LiveOptions, ring: &mut RecvRing) -> anyhow::Result<f64> {
    let mut first: Option<Instant> = None;
    let mut last_progress = Instant::now();
    while ring.received < o.iters {
        s.ep.turn(IDLE_TURN)?;
        while let Some(c) = s.ep.poll_cq() {
            first.get_or_insert_with(Instant::now);
            ring.take(&mut s.ep, &c)?;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "no SEND arrived for {} s ({} of {} received)",
                STALL.as_secs(),
                ring.received,
                o.iters
            );
        }
    }
    Ok(first.map_or(0.0, |t| t.elapsed().as_secs_f64()))
}
