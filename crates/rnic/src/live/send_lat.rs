//! `rnic live send-lat`: ib_send_lat's ping-pong. Both sides post receive WQEs (perftest's
//! receive depth, or fewer for a short run) and say so with one more handshake; the client
//! SENDs `size` bytes first, and each side SENDs its next message once the peer's has
//! arrived, reposting the receive it took. Over UD each message is one datagram of at most
//! the path MTU, landing after the 40-byte GRH area of its receive buffer. Latency is half the time between two of one
//! side's posts (perftest's `rtt_factor` 2).
//!
//! Verification, when the peer is rnic: both sides' source buffers hold rnic's pattern, and
//! each side checks every message that lands (its length too) and clears the buffer before
//! reposting it; at the close each side reports its verdict to the other.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{SendWr, ServiceType, Sge, WcOpcode, WcStatus};

use super::recv_ring::{RecvLayout, RecvRing};
use super::report::{LiveResult, Verification};
use super::session::{linger, Layout, Session};
use super::{LiveOptions, PATTERN_SEED};

/// This side's source buffer, then its receive buffers.
const SRC_ADDR: u64 = 0x1000_0000;
const DST_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: DST_ADDR - SRC_ADDR + RecvLayout::of(o).bytes(o.iters),
        advertised: DST_ADDR,
        qp_stride: 0,
    };
    // ib_send_lat, unlike ib_write_lat and ib_read_lat, has no key exchange before the per-QP
    // one: its fourth handshake is the one after posting the receives, below.
    let mut s = Session::open(o, &layout, false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    let check = s.pre.peer_is_rnic;
    let mut ring = RecvRing::new(DST_ADDR, RecvLayout::of(o), s.me().rkey, o.iters, check)
        .only_from_qp(s.peer().qpn);
    ring.post_all(&mut s.ep)?;
    // perftest's peer has posted its receive WQEs when it answers this handshake.
    s.handshake()?;
    let posts = ping_pong(&mut s, o, &mut ring)?;
    linger(&mut s.ep)?;
    let mut r = LiveResult::latency("send-lat", o.size, o.iters, &posts, 2.0);
    let theirs = s.close(ring.verification)?;
    r.finish(&mut s, worse(ring.verification, theirs));
    s.ep.finish()?;
    Ok(r)
}

/// This side's verdict on what it received, unless the peer's on what this side sent is a
/// mismatch.
fn worse(mine: Verification, theirs: Verification) -> Verification {
    match (mine, theirs) {
        (Verification::Verified, m @ Verification::Mismatch { .. }) => m,
        (mine, _) => mine,
    }
}

/// The post time of every SEND.
fn ping_pong(
    s: &mut Session,
    o: &LiveOptions,
    ring: &mut RecvRing,
) -> anyhow::Result<Vec<Instant>> {
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me().rkey,
    };
    let client = s.is_client;
    let mut posts = Vec::with_capacity(o.iters as usize);
    let mut sends_done = 0u64;
    while (posts.len() as u64) < o.iters || ring.received < o.iters || sends_done < o.iters {
        let sent = posts.len() as u64;
        if ring.received < o.iters && !(sent < 1 && client) {
            let want = ring.received + 1;
            s.spin_until(
                |ep| {
                    while let Some(c) = ep.poll_cq() {
                        if c.opcode == WcOpcode::Send {
                            if c.status != WcStatus::Success {
                                bail!("SEND {} completed with {:?}", c.wr_id, c.status);
                            }
                            sends_done += 1;
                        } else {
                            ring.take(ep, &c)?;
                        }
                    }
                    Ok(ring.received >= want || ring.received >= o.iters)
                },
                if o.service == ServiceType::Rc {
                    "waiting for the peer's SEND"
                } else {
                    "waiting for the peer's SEND (UC and UD do not resend a lost one)"
                },
            )?;
        }
        if sent < o.iters {
            posts.push(Instant::now());
            s.ep.dev.post_send(s.ep.qpn, SendWr::send(sent, sge))?;
            // With the ACK the last spin left: one `sendmmsg` for both.
            s.ep.spin_turn()?;
        } else if ring.received >= o.iters && sends_done < o.iters {
            s.spin_until(
                |ep| {
                    while let Some(c) = ep.poll_cq() {
                        if c.opcode != WcOpcode::Send || c.status != WcStatus::Success {
                            bail!(
                                "SEND {} completed as {:?}, {:?}",
                                c.wr_id,
                                c.opcode,
                                c.status
                            );
                        }
                        sends_done += 1;
                    }
                    Ok(sends_done >= o.iters)
                },
                "waiting for the last SENDs to complete",
            )?;
        }
    }
    Ok(posts)
}
