//! `rnic live send-lat`: ib_send_lat's ping-pong. Both sides post receive WQEs (perftest's
//! receive depth, or fewer for a short run) and say so with one more handshake; the client
//! SENDs `size` bytes first, and each side SENDs its next message once the peer's has
//! arrived, reposting the receive it took. Over UD each message is one datagram of at most
//! the path MTU, landing after the 40-byte GRH area of its receive buffer. Latency is half the time between two of one
//! side's posts (perftest's `rtt_factor` 2).
//!
//! With `-D` each side ping-pongs on its own clock until it ends (a wait for the peer's SEND
//! gives up then) and reposts every receive meanwhile; the messages received in the window
//! between the margins are the iterations of perftest's duration table. With `-a` both
//! sides run every size in turn (UD: up to the path MTU), each posting the size's receives
//! before a handshake, as ib_send_lat's `-a`.
//!
//! Verification, when the peer is rnic: both sides' source buffers hold rnic's pattern, and
//! each side checks every message that lands (its length too) and clears the buffer before
//! reposting it; at the close each side reports its verdict to the other.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{SendWr, ServiceType, Sge, WcOpcode, WcStatus};

use super::recv_ring::{RecvLayout, RecvRing};
use super::report::{LiveResult, Verification};
use super::session::{ended, linger, sampling, Layout, RunClock, Session};
use super::{LiveOptions, PATTERN_SEED};

/// This side's source buffer, then its receive buffers.
const SRC_ADDR: u64 = 0x1000_0000;
const DST_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    // With -D the receives are reposted for as long as the run lasts.
    let total = if o.duration.is_some() {
        u64::MAX
    } else {
        o.iters
    };
    let recv_bytes = (o.sizes().into_iter())
        .map(|size| RecvLayout::of(&o.at_size(size)).bytes(total))
        .max()
        .unwrap_or(0);
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: DST_ADDR - SRC_ADDR + recv_bytes,
        advertised: DST_ADDR,
        qp_stride: 0,
        served_pattern_bytes: 0,
    };
    // ib_send_lat, unlike ib_write_lat and ib_read_lat, has no key exchange before the per-QP
    // one: its fourth handshake is the one after posting the receives, below.
    let mut s = Session::open(o, &layout, false)?;
    let o = &o.fit_to_mtu(s.pre.mtu_bytes)?;
    // The largest size's pattern: every smaller size sends a prefix of it.
    s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    let check = s.pre.peer_is_rnic;
    let (mut per_size, mut verification) = (Vec::new(), Verification::at_start(check));
    for size in o.sizes() {
        let o = &o.at_size(size);
        let mut ring = RecvRing::new(DST_ADDR, RecvLayout::of(o), s.me().rkey, total, check)
            .only_from_qp(s.peer().qpn);
        ring.post_all(&mut s.ep)?;
        // perftest's peer has posted its receive WQEs when it answers this handshake.
        s.handshake()?;
        let clock = RunClock::of(o);
        let pongs = ping_pong(&mut s, o, &mut ring, clock.as_ref())?;
        per_size.push(match clock {
            Some(c) => {
                LiveResult::latency_for_duration("send-lat", size, pongs.window, c.window_s(), 2.0)
            }
            None => LiveResult::latency("send-lat", size, o.iters, &pongs.at, 2.0),
        });
        verification = verification.or_first_mismatch(ring.verification);
    }
    linger(&mut s.ep)?;
    let mut r = LiveResult::of_sizes(per_size, o.all_sizes);
    let theirs = s.close(verification)?;
    // The peer's verdict on what this side sent counts as much as this side's own.
    r.finish(&mut s, verification.or_first_mismatch(theirs));
    s.ep.finish()?;
    Ok(r)
}

/// The post time of every SEND (not kept with `-D`), and the messages received in a `-D`
/// window.
struct Pongs {
    at: Vec<Instant>,
    window: u64,
}

/// One size's ping-pong: `o.iters` SENDs each way, or with `clock` until it ends.
fn ping_pong(
    s: &mut Session,
    o: &LiveOptions,
    ring: &mut RecvRing,
    clock: Option<&RunClock>,
) -> anyhow::Result<Pongs> {
    let iters = if clock.is_some() { u64::MAX } else { o.iters };
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me().rkey,
    };
    let client = s.is_client;
    let mut pongs = Pongs {
        at: Vec::with_capacity(o.iters.min(iters) as usize),
        window: 0,
    };
    let (mut sent, mut sends_done) = (0u64, 0u64);
    while sent < iters || ring.received < iters || sends_done < iters {
        if ring.received < iters && !(sent < 1 && client) {
            let want = ring.received + 1;
            s.spin_until(
                |ep| {
                    while let Some(c) = ep.poll_cq() {
                        if c.opcode == WcOpcode::Send {
                            if c.status != WcStatus::Success {
                                bail!(
                                    "SEND {} completed with {:?}{}",
                                    c.wr_id,
                                    c.status,
                                    super::session::peer_hint(c.status)
                                );
                            }
                            sends_done += 1;
                        } else {
                            ring.take(ep, &c)?;
                        }
                    }
                    Ok(ring.received >= want || ended(clock))
                },
                if o.service == ServiceType::Rc {
                    "waiting for the peer's SEND"
                } else {
                    "waiting for the peer's SEND (UC and UD do not resend a lost one)"
                },
            )?;
            if ended(clock) {
                break;
            }
            pongs.window += u64::from(sampling(clock));
        }
        if sent < iters {
            s.latency_gap(o.latency_gap)?;
            if clock.is_none() {
                pongs.at.push(Instant::now());
            }
            s.ep.dev.post_send(s.ep.qpn, SendWr::send(sent, sge))?;
            sent += 1;
            // With the ACK the last spin left: one `sendmmsg` for both.
            s.ep.spin_turn()?;
        } else if ring.received >= iters && sends_done < iters {
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
                    Ok(sends_done >= iters)
                },
                "waiting for the last SENDs to complete",
            )?;
        }
    }
    Ok(pongs)
}
