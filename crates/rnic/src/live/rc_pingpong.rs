//! `rnic live rc-pingpong`: rdma-core's `ibv_rc_pingpong` example. Its own exchange on the
//! TCP port: one 52-byte line each way, `LID:QPN:PSN:GID` (`%04x:%06x:%06x:` then the GID's
//! 16 bytes as 32 hexadecimal digits, NUL-terminated; the client writes first), then the
//! client writes `done\0`. No MTU negotiation: each side uses its own `-m`. Both sides post
//! their receives first; the client SENDs first, and each side SENDs again once its last SEND
//! completed and the peer's next message arrived, `iters` times each way.
//!
//! Verification: the line has no room for a version mark, so rnic sets the LID (unused on
//! RoCE, where the GID addresses the peer; rxe sends 0) to [`RNIC_LID`]; when both sides see
//! it, every message is checked against rnic's pattern (length and bytes, the buffer cleared
//! before each receive is posted again). The example's buffer holds no pattern, so against it
//! the bytes are not verified.
//!
//! The end: the example has no closing handshake; each side destroys its QP once its loop
//! ends. The server's n-th SEND answers the client's n-th, so a client whose last message
//! from the server arrived knows its own last SEND arrived, and stops without waiting for its
//! ACK (which a server that already left would never send). The server's last SEND has no
//! such answer: if the example client's ACK of it is lost, the client has left before the
//! resend, and the SEND ends with its retries exhausted, as the example's own server's would.
//! rnic then reports the run `incomplete`, saying so (every message from the client arrived;
//! whether the last one back did, only the client knows). Between two rnic endpoints the
//! server writes [`FINISHED`] once its last SEND is acknowledged, and the client keeps its QP
//! answering until it comes.

use std::time::Instant;

use anyhow::{bail, Context};
use rnic_transport::{SendWr, Sge, WcOpcode, WcStatus};

use super::endpoint::{Endpoint, QpTuning};
use super::oob::{gid_of, Dest, Oob};
use super::recv_ring::{RecvLayout, RecvRing};
use super::report::LiveResult;
use super::session::{linger, IDLE_TURN, STALL};
use super::{LiveOptions, PATTERN_SEED};

/// The LID rnic announces, so that another rnic knows its messages carry rnic's pattern.
const RNIC_LID: u16 = 0x726e;
/// Bytes of the exchange line: `sizeof "0000:000000:000000:" + 32 digits`, NUL included.
const LINE_BYTES: usize = 52;
/// The client's closing word, NUL included.
const DONE: &[u8; 5] = b"done\0";
/// An rnic server's word to an rnic client after the ping-pong: its last SEND is
/// acknowledged, so the client may close its QP.
const FINISHED: &[u8; 4] = b"fin\0";
const SRC_ADDR: u64 = 0x1000_0000;
const DST_ADDR: u64 = 0x2000_0000;

/// One side's line.
fn encode(lid: u16, qpn: u32, psn: u32, gid: [u8; 16]) -> [u8; LINE_BYTES] {
    let mut text = format!("{lid:04x}:{qpn:06x}:{psn:06x}:");
    for b in gid {
        text.push_str(&format!("{b:02x}"));
    }
    let mut out = [0u8; LINE_BYTES];
    out[..text.len()].copy_from_slice(text.as_bytes());
    out
}

/// The peer's line: LID, QPN, PSN, GID; each field checked, errors name it.
fn decode(line: &[u8]) -> anyhow::Result<(u16, Dest)> {
    let end = line.iter().position(|&b| b == 0).unwrap_or(line.len());
    let text = std::str::from_utf8(&line[..end]).context("the peer's address line is not text")?;
    let f: Vec<&str> = text.split(':').collect();
    if f.len() != 4 || f[3].len() != 32 {
        bail!("the peer's address line {text:?} is not LID:QPN:PSN:GID (32 hex digits)");
    }
    let hex = |s: &str, what: &str, max: u32| -> anyhow::Result<u32> {
        let v = u32::from_str_radix(s, 16)
            .with_context(|| format!("the peer's {what} {s:?} is not hexadecimal"))?;
        if v > max {
            bail!("the peer's {what} {v:#x} is out of range (max {max:#x})");
        }
        Ok(v)
    };
    let mut gid = [0u8; 16];
    for (k, g) in gid.iter_mut().enumerate() {
        *g = hex(&f[3][2 * k..2 * k + 2], "GID byte", 0xFF)? as u8;
    }
    let lid = hex(f[0], "LID", 0xFFFF)? as u16;
    let dest = Dest {
        lid,
        out_reads: 1,
        qpn: hex(f[1], "QPN", 0xFF_FFFF)?,
        psn: hex(f[2], "PSN", 0xFF_FFFF)?,
        gid,
        ..Dest::default()
    };
    Ok((lid, dest))
}

pub fn run(o: &LiveOptions) -> anyhow::Result<LiveResult> {
    let is_client = o.host.is_some();
    let (mut oob, local_ip) = super::session::open_exchange(o)?;
    let tuning = QpTuning {
        service: o.service,
        mtu_bytes: o.mtu_bytes,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        window_psns: o.window_psns,
        sq_depth: 16,
        rq_depth: super::endpoint::RECV_DEPTH,
        // The example's RTR and RTS take one READ at a time.
        out_reads: 1,
        srq_depth: None,
        traffic_class: None,
    };
    let mut ep = Endpoint::open(local_ip, &tuning, o.pcap.as_deref())?;
    let ring_bytes = RecvLayout::rc(o.size).bytes(o.iters);
    let keys = ep.reg_mr(SRC_ADDR, DST_ADDR - SRC_ADDR + ring_bytes)?;
    ep.mem.fill_pattern(SRC_ADDR, o.size, PATTERN_SEED);
    let my_psn = super::session::random_psn();
    let mine = encode(RNIC_LID, ep.qpn, my_psn, gid_of(local_ip));
    // As the example: the server connects its QP and posts its receives before it answers,
    // so the client's first SEND finds them.
    if is_client {
        oob.write_raw(&mine)?;
    }
    let (peer_lid, peer) = decode(&oob.read_raw(LINE_BYTES)?)?;
    let peer_is_rnic = peer_lid == RNIC_LID;
    ep.connect(my_psn, &peer, &tuning)?;
    let mut ring = RecvRing::new(
        DST_ADDR,
        RecvLayout::rc(o.size),
        keys.lkey,
        o.iters,
        peer_is_rnic,
    );
    ring.post_all(&mut ep)?;
    if is_client {
        oob.write_raw(DONE)?;
    } else {
        oob.write_raw(&mine)?;
        if oob.read_raw(DONE.len())? != DONE {
            bail!("the client did not close the exchange with \"done\"");
        }
    }
    let sge = Sge {
        addr: SRC_ADDR,
        len: o.size as u32,
        lkey: keys.lkey,
    };
    let side = Side {
        is_client,
        peer_is_rnic,
    };
    let end = ping_pong(&mut ep, &mut ring, o, sge, side)?;
    if peer_is_rnic {
        close_between_rnics(&mut ep, &mut oob, is_client)?;
    }
    linger(&mut ep)?;
    let mut r = LiveResult::latency("rc-pingpong", o.size, o.iters, &end.posts, 2.0);
    if end.last_send_unacknowledged {
        r.incomplete = Some(format!(
            "SEND {} (the last) was not acknowledged before its retries ran out, though all \
             {} messages from the client arrived: ibv_rc_pingpong destroys its QP when its \
             loop ends, with no closing handshake, so if its ACK of the last message was \
             lost it was never resent; whether that message arrived, only the client knows",
            o.iters - 1,
            o.iters
        ));
    }
    let st = ep.dev.stats();
    r.verification = ring.verification;
    r.mtu_bytes = o.mtu_bytes;
    r.connection = ep.service().name().to_ascii_uppercase();
    r.peer_is_rnic = peer_is_rnic;
    r.local_ip = local_ip.to_string();
    r.peer_ip = peer.ipv4().map(|ip| ip.to_string()).unwrap_or_default();
    r.retransmissions = st.retransmitted_packets;
    r.naks = st.naks_sent.total();
    r.timeouts = st.ack_timeouts;
    r.rx_refused = ep.rx_refused;
    ep.finish()?;
    Ok(r)
}

/// Which side this is, and whether the peer is rnic.
#[derive(Debug, Clone, Copy)]
struct Side {
    is_client: bool,
    peer_is_rnic: bool,
}

/// How this side's ping-pong ended.
struct Ended {
    /// The time of each of this side's posts.
    posts: Vec<Instant>,
    /// A server's last SEND ran out of retries after every message from an
    /// `ibv_rc_pingpong` client had arrived (see the module's doc).
    last_send_unacknowledged: bool,
}

/// The ping-pong, until both sides' last messages are through (a client: until the server's
/// last arrived, which answers its own).
fn ping_pong(
    ep: &mut Endpoint,
    ring: &mut RecvRing,
    o: &LiveOptions,
    sge: Sge,
    side: Side,
) -> anyhow::Result<Ended> {
    let (mut sent, mut completed) = (0u64, 0u64);
    let mut posts = Vec::with_capacity(o.iters as usize);
    let mut last_progress = Instant::now();
    // The server answers: its n-th SEND follows the client's n-th.
    let lead = u64::from(!side.is_client);
    let all_through = |sent: u64, completed: u64, received: u64| {
        received == o.iters && sent == o.iters && (completed == o.iters || side.is_client)
    };
    while !all_through(sent, completed, ring.received) {
        if sent < o.iters && completed == sent && ring.received == sent + lead {
            posts.push(Instant::now());
            ep.dev.post_send(ep.qpn, SendWr::send(sent, sge))?;
            sent += 1;
        }
        ep.turn(IDLE_TURN)?;
        while let Some(c) = ep.poll_cq() {
            last_progress = Instant::now();
            if c.opcode == WcOpcode::Recv {
                ring.take(ep, &c)?;
                continue;
            }
            if c.status != WcStatus::Success || c.opcode != WcOpcode::Send {
                let last_unacknowledged = c.opcode == WcOpcode::Send
                    && c.status == WcStatus::RetryExcErr
                    && c.wr_id + 1 == o.iters
                    && ring.received == o.iters
                    && !side.is_client
                    && !side.peer_is_rnic;
                if last_unacknowledged {
                    return Ok(Ended {
                        posts,
                        last_send_unacknowledged: true,
                    });
                }
                bail!(
                    "SEND {} completed as {:?} {:?}",
                    c.wr_id,
                    c.opcode,
                    c.status
                );
            }
            completed += 1;
        }
        if last_progress.elapsed() > STALL {
            bail!(
                "no progress for {} s ({sent} sent, {} received of {})",
                STALL.as_secs(),
                ring.received,
                o.iters
            );
        }
    }
    Ok(Ended {
        posts,
        last_send_unacknowledged: false,
    })
}

/// Between two rnic endpoints: the server says [`FINISHED`] (its last SEND is
/// acknowledged); the client answers ACKs until it hears it.
fn close_between_rnics(ep: &mut Endpoint, oob: &mut Oob, is_client: bool) -> anyhow::Result<()> {
    if !is_client {
        return oob.write_raw(FINISHED);
    }
    let word = oob.read_raw_pumping(FINISHED.len(), &mut || ep.turn(IDLE_TURN))?;
    if word != FINISHED {
        bail!("the rnic server did not close the ping-pong with \"fin\"");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_has_the_examples_length_and_round_trips() {
        let gid = gid_of(std::net::Ipv4Addr::new(10, 47, 0, 2));
        let line = encode(RNIC_LID, 0x11, 0xABCDEF, gid);
        let text_len = line.iter().position(|&b| b == 0).unwrap();
        assert_eq!(text_len, LINE_BYTES - 1);
        assert_eq!(
            std::str::from_utf8(&line[..text_len]).unwrap(),
            "726e:000011:abcdef:00000000000000000000ffff0a2f0002"
        );
        let (lid, d) = decode(&line).unwrap();
        assert_eq!((lid, d.qpn, d.psn, d.gid), (RNIC_LID, 0x11, 0xABCDEF, gid));
    }

    #[test]
    fn bad_lines_are_errors_naming_the_field() {
        let mut line = encode(0, 1, 2, [0; 16]);
        line[5] = b'z';
        assert!(decode(&line).unwrap_err().to_string().contains("QPN"));
        assert!(decode(b"0000:000001\0").is_err());
        assert!(decode(&[0xFF; LINE_BYTES]).is_err());
    }
}
