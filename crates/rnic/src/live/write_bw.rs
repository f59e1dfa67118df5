//! `rnic live write-bw`: ib_write_bw's test. The client keeps `tx_depth` WRITEs of `size`
//! bytes in flight to the server's buffer until `iters` completed; the server only answers
//! (its engine ACKs) until the client's closing handshake.
//!
//! Verification: the client's source buffer holds rnic's pattern; when the peer is rnic
//! (its version string says so), the client READs the server's buffer back after the run and
//! checks it against the pattern, and the server checks its buffer too. perftest peers get
//! their bytes unchecked (`status: unverified`): perftest's buffers hold random bytes and its
//! WRITE MRs refuse READs.

use std::time::Instant;

use anyhow::bail;
use rnic_transport::{RemoteAddr, SendWr, Sge, WcStatus};

use super::oob::BwReport;
use super::report::{LiveResult, Verification};
use super::session::{Layout, Session};
use super::{LiveOptions, PATTERN_SEED};

/// The client's source buffer, and where its READ-back lands.
const SRC_ADDR: u64 = 0x1000_0000;
const CHECK_ADDR: u64 = 0x4000_0000;
/// The server's destination buffer.
const DST_ADDR: u64 = 0x2000_0000;
/// Bytes of the 2^20-byte MB perftest reports in.
const MB: f64 = 1_048_576.0;

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
        mr_len: CHECK_ADDR - SRC_ADDR + o.size,
        advertised: SRC_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    s.ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: s.me.rkey,
    };
    let remote = RemoteAddr {
        va: s.peer.vaddr,
        rkey: s.peer.rkey,
    };
    let (mut posted, mut completed) = (0u64, 0u64);
    let start = Instant::now();
    let mut last_progress = Instant::now();
    while completed < o.iters {
        while posted < o.iters && posted - completed < u64::from(o.tx_depth) {
            s.ep.dev
                .post_send(s.ep.qpn, SendWr::write(posted, sge, remote))?;
            posted += 1;
        }
        s.ep.turn(super::session::IDLE_TURN)?;
        while let Some(c) = s.ep.poll_cq() {
            if c.status != WcStatus::Success {
                bail!("WRITE {} completed with {:?}", c.wr_id, c.status);
            }
            completed += 1;
            last_progress = Instant::now();
        }
        if last_progress.elapsed() > super::session::STALL {
            bail!(
                "no WRITE completed for {} s ({completed} of {} done)",
                super::session::STALL.as_secs(),
                o.iters
            );
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    let verification = if s.pre.peer_is_rnic {
        read_back(&mut s, o.size, remote)?
    } else {
        Verification::PeerIsPerftest
    };
    let mut r = LiveResult::bandwidth("write-bw", o.size, o.iters, elapsed_s);
    let mine = BwReport {
        size: o.size,
        iters: o.iters,
        bw_peak: 0.0,
        bw_avg: r.bw_avg_mb_s,
        msg_rate: r.msg_rate_mops,
    };
    let me = s.me;
    s.oob
        .keys(&me, &mut || s.ep.turn(super::session::IDLE_TURN))?;
    s.oob.bw_reports(&mine)?;
    s.oob.close(&me)?;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}

/// READs the server's buffer into `CHECK_ADDR` and compares it with the pattern.
fn read_back(s: &mut Session, size: u64, remote: RemoteAddr) -> anyhow::Result<Verification> {
    let sge = Sge {
        addr: CHECK_ADDR,
        len: size as u32,
        lkey: s.me.rkey,
    };
    s.ep.dev
        .post_send(s.ep.qpn, SendWr::read(u64::MAX, sge, remote))?;
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
    Ok(Verification::of(s.ep.mem.first_pattern_mismatch(
        CHECK_ADDR,
        size,
        PATTERN_SEED,
    )))
}

fn server(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let layout = Layout {
        mr_addr: DST_ADDR,
        mr_len: o.size,
        advertised: DST_ADDR,
    };
    let mut s = Session::open(o, &layout, false)?;
    let me = s.me;
    // The client's closing handshake comes when its WRITEs are done; until then the engine
    // answers them (and the READ-back).
    s.oob
        .keys_waiting(&me, &mut || s.ep.turn(super::session::IDLE_TURN))?;
    let theirs = s.oob.bw_reports(&BwReport::default())?;
    s.oob.close(&me)?;
    let verification = if s.pre.peer_is_rnic {
        Verification::of(
            s.ep.mem
                .first_pattern_mismatch(DST_ADDR, o.size, PATTERN_SEED),
        )
    } else {
        Verification::PeerIsPerftest
    };
    // perftest's server prints the client's report.
    let mut r = LiveResult::bandwidth("write-bw", theirs.size, theirs.iters, 0.0);
    r.bw_avg_mb_s = theirs.bw_avg;
    r.bw_peak_mb_s = theirs.bw_peak;
    r.msg_rate_mops = theirs.msg_rate;
    r.goodput_gbps = theirs.bw_avg * MB * 8.0 / 1e9;
    r.finish(&mut s, verification);
    s.ep.finish()?;
    Ok(r)
}
