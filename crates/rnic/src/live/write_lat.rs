//! `rnic live write-lat`: ib_write_lat's ping-pong. Each side WRITEs `size` bytes into the
//! other's buffer, the last byte carrying the iteration number (mod 256), and waits for the
//! peer's WRITE of the same number to land in its own buffer before the next; the server
//! sends first. Latency is half the time between two of one side's posts (perftest's
//! `rtt_factor` 2).
//!
//! With `-D`, as perftest's `run_iter_lat_write`: each side ping-pongs on its own clock until
//! it ends (a wait for the peer's WRITE gives up then), and the WRITEs completed in the
//! window between the margins are the iterations of perftest's duration table.
//!
//! Verification: every message that lands is checked, its last byte against the iteration
//! and, when the peer is rnic, the rest against rnic's pattern.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{Memory, RemoteAddr, SendWr, Sge, WcStatus};

use super::report::{LiveResult, Verification};
use super::session::{ended, linger, sampling, Layout, RunClock, Session};
use super::{LiveOptions, PATTERN_SEED};

/// This side's source buffer and, right after it, the buffer the peer writes to.
const SRC_ADDR: u64 = 0x1000_0000;
const DST_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SRC_ADDR,
        mr_len: DST_ADDR - SRC_ADDR + o.size,
        advertised: DST_ADDR,
        qp_stride: 0,
        served_pattern_bytes: 0,
    };
    let mut s = Session::open(o, &layout, true)?;
    s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    // With `-a` both sides run every size in turn, each from iteration 1 (perftest's
    // counters start again), with no exchange between sizes: the last byte a size polls
    // lies beyond every smaller size's message, so no earlier WRITE can satisfy it.
    let mut per_size = Vec::new();
    let mut verified = Verification::Verified;
    for size in o.sizes() {
        let clock = RunClock::of(o);
        let posts = ping_pong(&mut s, &o.at_size(size), clock.as_ref())?;
        if verified == Verification::Verified {
            verified = posts.verified;
        }
        per_size.push(match clock {
            Some(c) => {
                LiveResult::latency_for_duration("write-lat", size, posts.window, c.window_s(), 2.0)
            }
            None => LiveResult::latency("write-lat", size, o.iters, &posts.at, 2.0),
        });
        // The counter went into this size's last byte: the next, larger size sends the
        // pattern there.
        s.ep.mem.fill_pattern(SRC_ADDR, size, PATTERN_SEED);
    }
    linger(&mut s.ep)?;
    let mut r = LiveResult::of_sizes(per_size, o.all_sizes);
    let v = if s.pre.peer_is_rnic {
        verified
    } else {
        Verification::PeerIsPerftest
    };
    r.finish(&mut s, v);
    s.ep.finish()?;
    Ok(r)
}

/// Post times of every iteration (not kept with `-D`), the WRITEs completed in a `-D`
/// window, and whether every landed message verified.
struct Posts {
    at: Vec<Instant>,
    window: u64,
    verified: Verification,
}

/// One size's ping-pong: `o.iters` iterations, or with `clock` until it ends.
fn ping_pong(s: &mut Session, o: &LiveOptions, clock: Option<&RunClock>) -> anyhow::Result<Posts> {
    let iters = if clock.is_some() { u64::MAX } else { o.iters };
    let last = o.size - 1;
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me().rkey,
    };
    let remote = RemoteAddr {
        va: s.peer().vaddr,
        rkey: s.peer().rkey,
    };
    let (mut scnt, mut ccnt, mut rcnt) = (0u64, 0u64, 0u64);
    let mut posts = Posts {
        at: Vec::with_capacity(o.iters.min(iters) as usize),
        window: 0,
        verified: Verification::Verified,
    };
    let server = !s.is_client;
    while scnt < iters || ccnt < iters || rcnt < iters {
        if rcnt < iters && !(scnt < 1 && server) {
            rcnt += 1;
            let want = rcnt as u8;
            s.spin_until(
                |ep| Ok(last_byte(ep, DST_ADDR + last) == want || ended(clock)),
                // perftest's exchange carries no size: a peer running another -s writes its
                // counter byte where this side never looks.
                "waiting for the peer's WRITE to fill the last of -s bytes (both sides must \
                 give the same -s; perftest's exchange does not carry it)",
            )?;
            if ended(clock) {
                break;
            }
            if s.pre.peer_is_rnic && !matches!(posts.verified, Verification::Mismatch { .. }) {
                if let Some(at) =
                    s.ep.mem
                        .first_pattern_mismatch(DST_ADDR, last, PATTERN_SEED)
                {
                    posts.verified = Verification::Mismatch { offset: at };
                }
            }
        }
        if scnt < iters {
            s.latency_gap(o.latency_gap)?;
            if clock.is_none() {
                posts.at.push(Instant::now());
            }
            scnt += 1;
            s.ep.mem.write(SRC_ADDR + last, &[scnt as u8]);
            s.ep.dev
                .post_send(s.ep.qpn, SendWr::write(scnt, sge, remote))?;
            // With the ACK the last spin left: one `sendmmsg` for both.
            s.ep.spin_turn()?;
        }
        if ccnt < iters {
            let mut status = None;
            s.spin_until(
                |ep| {
                    status = ep.poll_cq().map(|c| c.status);
                    Ok(status.is_some() || ended(clock))
                },
                "waiting for a WRITE to complete",
            )?;
            if status.is_none() {
                break;
            }
            if let Some(bad) = status.filter(|s| *s != WcStatus::Success) {
                bail!(
                    "WRITE {} completed with {bad:?}{}",
                    ccnt + 1,
                    super::session::peer_hint(bad)
                );
            }
            ccnt += 1;
            posts.window += u64::from(sampling(clock));
        }
    }
    Ok(posts)
}

fn last_byte(ep: &super::endpoint::Endpoint, addr: u64) -> u8 {
    let mut b = [0u8];
    ep.mem.read(addr, &mut b);
    b[0]
}
