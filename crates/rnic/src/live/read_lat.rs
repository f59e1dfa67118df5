//! `rnic live read-lat`: ib_read_lat's test. Only the client works: it READs `size` bytes
//! from the server's buffer, waits for the completion, and READs again, `iters` times;
//! latency is the time between two posts (perftest's `rtt_factor` 1 for READ). The server
//! goes straight to the closing handshake and answers the READs while it waits there.
//!
//! With `-D` the client READs until its clock ends and reports the READs completed in the
//! window (perftest's `run_iter_lat` in duration mode); with `-a` it runs every size in
//! turn up to the largest whose responses fit its window (see
//! [`LiveOptions::sizes_at`]). The server is passive in both, as perftest's: it only holds
//! a buffer as large as any size.
//!
//! Verification, when the peer is rnic: the server's buffer holds rnic's pattern, and the
//! client clears its landing buffer before every READ and checks every READ's bytes; the
//! server reports the client's verdict.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{RemoteAddr, SendWr, Sge, WcOpcode, WcStatus};

use super::oob::CYCLE_BUFFER_BYTES;
use super::recv_ring::clear;
use super::report::{LiveResult, Verification};
use super::session::{ended, sampling, Layout, RunClock, Session};
use super::{LiveOptions, PATTERN_SEED};

/// The client's landing buffer.
const LANDING_ADDR: u64 = 0x1000_0000;
/// The server's buffer the client READs.
const SERVED_ADDR: u64 = 0x2000_0000;

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    if o.host.is_some() {
        client(o)
    } else {
        server(o)
    }
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: SERVED_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: SERVED_ADDR,
        qp_stride: 0,
    };
    let mut s = Session::open(o, &layout, true)?;
    s.ep.mem
        .fill_pattern(SERVED_ADDR, layout.mr_len, PATTERN_SEED);
    let verification = s.close_waiting(Verification::PeerIsPerftest)?;
    // perftest's READ server measures nothing and prints no table, only its result line.
    let mut r = match o.duration {
        Some(d) => LiveResult::latency_for_duration("read-lat", o.size, 0, d.window_s(), 1.0),
        None => LiveResult::latency("read-lat", o.size, o.iters, &[], 1.0),
    };
    r.measured = false;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

fn client(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: LANDING_ADDR,
        mr_len: o.size.max(u64::from(CYCLE_BUFFER_BYTES)),
        advertised: LANDING_ADDR,
        qp_stride: 0,
    };
    let mut s = Session::open(o, &layout, true)?;
    let mut verification = if s.pre.peer_is_rnic {
        Verification::Verified
    } else {
        Verification::PeerIsPerftest
    };
    let (sizes, note) = o.sizes_at(s.pre.mtu_bytes);
    let mut per_size = Vec::new();
    for &size in &sizes {
        let (row, v) = reads(&mut s, &o.at_size(size))?;
        if verification == Verification::Verified {
            verification = v;
        }
        per_size.push(row);
    }
    let mut r = LiveResult::of_sizes(per_size, o.all_sizes);
    r.notes.extend(note);
    s.close(verification)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

/// One size's READs, one at a time: `o.iters`, or with `-D` until the clock ends. Returns
/// the size's figures and the verdict on its bytes.
fn reads(s: &mut Session, o: &LiveOptions) -> anyhow::Result<(LiveResult, Verification)> {
    let check = s.pre.peer_is_rnic;
    let mut verification = if check {
        Verification::Verified
    } else {
        Verification::PeerIsPerftest
    };
    let sge = Sge {
        addr: LANDING_ADDR,
        len: o.size as u32,
        lkey: s.me().rkey,
    };
    let remote = RemoteAddr {
        va: s.peer().vaddr,
        rkey: s.peer().rkey,
    };
    let clock = RunClock::of(o);
    let iters = if clock.is_some() { u64::MAX } else { o.iters };
    let mut posts = Vec::with_capacity(o.iters.min(iters) as usize);
    let mut window = 0;
    for i in 0..iters {
        if ended(clock.as_ref()) {
            break;
        }
        clear(&mut s.ep.mem, LANDING_ADDR, o.size);
        if clock.is_none() {
            posts.push(Instant::now());
        }
        s.ep.dev.post_send(s.ep.qpn, SendWr::read(i, sge, remote))?;
        let mut done = None;
        s.spin_until(
            |ep| {
                done = ep.poll_cq();
                Ok(done.is_some())
            },
            "waiting for a READ to complete",
        )?;
        let c = done.expect("turn_until returned on a completion");
        if c.status != WcStatus::Success || c.opcode != WcOpcode::RdmaRead || c.wr_id != i {
            bail!(
                "READ {i} completed as {:?} {:?} (wr_id {})",
                c.opcode,
                c.status,
                c.wr_id
            );
        }
        window += u64::from(sampling(clock.as_ref()));
        if check && verification == Verification::Verified {
            if let Some(at) =
                s.ep.mem
                    .first_pattern_mismatch(LANDING_ADDR, o.size, PATTERN_SEED)
            {
                verification = Verification::Mismatch {
                    offset: i * o.size + at,
                };
            }
        }
    }
    posts.push(Instant::now());
    let r = match clock {
        Some(c) => LiveResult::latency_for_duration("read-lat", o.size, window, c.window_s(), 1.0),
        None => LiveResult::latency("read-lat", o.size, o.iters, &posts, 1.0),
    };
    Ok((r, verification))
}
