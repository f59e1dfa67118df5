//! `rnic live read-lat`: ib_read_lat's test. Only the client works: it READs `size` bytes
//! from the server's buffer, waits for the completion, and READs again, `iters` times;
//! latency is the time between two posts (perftest's `rtt_factor` 1 for READ). The server
//! goes straight to the closing handshake and answers the READs while it waits there.
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
use super::session::{Layout, Session};
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
    // perftest's READ server measures nothing.
    let mut r = LiveResult::latency("read-lat", o.size, o.iters, &[], 1.0);
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
    let mut posts = Vec::with_capacity(o.iters as usize);
    for i in 0..o.iters {
        clear(&mut s.ep.mem, LANDING_ADDR, o.size);
        posts.push(Instant::now());
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
    let mut r = LiveResult::latency("read-lat", o.size, o.iters, &posts, 1.0);
    s.close(verification)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}
