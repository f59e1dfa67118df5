//! perftest's `-R` (perftest 4.5, version string 6.06) as it really goes on the wire: there
//! is no TCP connection. RDMA CM first connects a second RC QP, the control QP, on the same
//! port as the test's; perftest's whole exchange (version strings, page size and cache line,
//! path MTU, the QP keys as a binary `struct pingpong_dest`, the bandwidth reports) travels
//! over it as SENDs, one message per SEND, each side posting one receive at a time. Between
//! two key exchanges RDMA CM connects the test's QP; at the end both connections are torn
//! down with DREQ and DREP ([`super::cm::disconnect`], from [`Endpoint::finish`]).
//!
//! perftest's `-z` keeps the control connection and its exchange, and connects the test's
//! QPs as it does over TCP: modify_qp with the keys the exchange carried, no CM MADs for
//! them (its `use_rdma_cm` without `work_rdma_cm`).
//!
//! The control QP lives on the endpoint beside the test's QP: [`ControlQp::serve`], called
//! every turn, posts the messages the exchange queued, takes the SENDs that arrived off its
//! completion queue and posts their receives again. The exchange ([`super::oob::Oob`]) sees
//! only the two queues ([`ControlQueues`]), so it runs the same sequence over either path.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::rc::Rc;

use anyhow::bail;
use rnic_transport::{
    CqId, Device, Memory, QpInit, RecvWr, SendWr, ServiceType, Sge, WcOpcode, WcStatus,
};

use super::cm::{self, CmQp, LiveCm};
use super::endpoint::{Endpoint, QpTuning};
use super::oob::{Dest, Oob};
use super::session::{
    after_connection, check_cm_matches_keys, connect_by_keys, keys_of_every_qp, my_dest, tuning,
    Layout, Session, IDLE_TURN,
};
use super::LiveOptions;

/// The RDMA CM connections of a run: the control QP's first, then the test's.
pub const CONTROL_CONN: usize = 0;
pub const TEST_CONN: usize = 1;
/// Where the control QP's buffers lie in the endpoint's memory, far from any test's.
const CONTROL_ADDR: u64 = 0x7000_0000_0000;
/// Bytes of each control buffer: perftest's messages are at most one `pingpong_dest`.
const CONTROL_BUF_BYTES: u32 = 256;
/// Receives the control QP keeps posted (perftest posts one; more cost nothing).
const CONTROL_RECVS: u64 = 4;
/// The receive buffers come first, then one send buffer.
const CONTROL_SEND_ADDR: u64 = CONTROL_ADDR + CONTROL_RECVS * CONTROL_BUF_BYTES as u64;
/// `wr_id` of the control QP's SENDs (receives use their slot number).
const SEND_WR_ID: u64 = 1 << 32;
/// Bytes of perftest's `struct pingpong_dest` as its `-R` exchange sends it.
pub const DEST_RECORD_BYTES: usize = 56;

/// What the exchange and the control QP pass each other.
#[derive(Debug, Default)]
pub struct ControlQueues {
    /// Messages the exchange wrote, not yet posted.
    pub outbox: VecDeque<Vec<u8>>,
    /// Messages that arrived, in order.
    pub inbox: VecDeque<Vec<u8>>,
    /// Why the control QP stopped, when it did (a SEND or receive completed in error).
    pub failure: Option<String>,
}

/// The control QP of `-R`.
pub struct ControlQp {
    qpn: u32,
    cq: CqId,
    lkey: u32,
    /// A SEND is posted and not yet completed (perftest waits for each one the same way).
    sending: bool,
    queues: Rc<RefCell<ControlQueues>>,
}

impl ControlQp {
    /// An RC QP with its own completion queue and buffers, in RESET.
    fn open(ep: &mut Endpoint) -> anyhow::Result<ControlQp> {
        let cq = ep.dev.create_cq(64)?;
        let init = QpInit {
            pd: ep.pd,
            send_cq: cq,
            recv_cq: cq,
            max_send_wr: 16,
            max_recv_wr: 16,
        };
        let reliability = rnic_transport::DeviceConfig::default().reliability;
        let qpn = ep
            .dev
            .create_qp_service(init, reliability, ServiceType::Rc)?;
        let bytes = (CONTROL_RECVS + 1) * u64::from(CONTROL_BUF_BYTES);
        let keys = ep.reg_mr(CONTROL_ADDR, bytes)?;
        Ok(ControlQp {
            qpn,
            cq,
            lkey: keys.lkey,
            sending: false,
            queues: Rc::default(),
        })
    }

    fn post_recv(&self, dev: &mut Device, slot: u64) -> anyhow::Result<()> {
        let sge = Sge {
            addr: CONTROL_ADDR + slot * u64::from(CONTROL_BUF_BYTES),
            len: CONTROL_BUF_BYTES,
            lkey: self.lkey,
        };
        dev.post_recv(self.qpn, RecvWr::new(slot, vec![sge]))?;
        Ok(())
    }

    /// Posts the next queued message, takes completed SENDs and arrived messages.
    pub fn serve(&mut self, dev: &mut Device, mem: &mut impl Memory) -> anyhow::Result<()> {
        while let Some(c) = dev.poll_cq(self.cq) {
            if c.status != WcStatus::Success {
                let why = format!(
                    "the control QP's {:?} completed with {:?} (the peer left, or its QP failed)",
                    c.opcode, c.status
                );
                self.queues.borrow_mut().failure = Some(why);
                continue;
            }
            match c.opcode {
                WcOpcode::Send => self.sending = false,
                _ => {
                    let addr = CONTROL_ADDR + c.wr_id * u64::from(CONTROL_BUF_BYTES);
                    let mut msg = vec![0u8; c.byte_len as usize];
                    mem.read(addr, &mut msg);
                    self.queues.borrow_mut().inbox.push_back(msg);
                    self.post_recv(dev, c.wr_id)?;
                }
            }
        }
        if self.sending {
            return Ok(());
        }
        let Some(msg) = self.queues.borrow_mut().outbox.pop_front() else {
            return Ok(());
        };
        mem.write(CONTROL_SEND_ADDR, &msg);
        let sge = Sge {
            addr: CONTROL_SEND_ADDR,
            len: msg.len() as u32,
            lkey: self.lkey,
        };
        dev.post_send(self.qpn, SendWr::send(SEND_WR_ID, sge))?;
        self.sending = true;
        Ok(())
    }

    /// Nothing is queued or on its way.
    pub fn idle(&self) -> bool {
        !self.sending && self.queues.borrow().outbox.is_empty()
    }
}

/// perftest's `struct pingpong_dest` as `-R` sends it: lid, out_reads, qpn, psn and rkey as
/// big-endian 32-bit words, 4 bytes of padding, the address as a big-endian 64-bit word, the
/// GID, srqn and gid_index (56 bytes).
pub fn encode_dest(d: &Dest) -> [u8; DEST_RECORD_BYTES] {
    let mut b = [0u8; DEST_RECORD_BYTES];
    let words = [u32::from(d.lid), d.out_reads, d.qpn, d.psn, d.rkey];
    for (k, w) in words.iter().enumerate() {
        b[4 * k..4 * k + 4].copy_from_slice(&w.to_be_bytes());
    }
    b[24..32].copy_from_slice(&d.vaddr.to_be_bytes());
    b[32..48].copy_from_slice(&d.gid);
    b[48..52].copy_from_slice(&d.srqn.to_be_bytes());
    b
}

/// Parses the peer's `pingpong_dest` record; the QPN and PSN must fit their 24 bits.
pub fn decode_dest(b: &[u8]) -> anyhow::Result<Dest> {
    if b.len() != DEST_RECORD_BYTES {
        bail!(
            "the peer's QP keys over the control QP have {} bytes, want {DEST_RECORD_BYTES}",
            b.len()
        );
    }
    let word = |k: usize| u32::from_be_bytes(b[4 * k..4 * k + 4].try_into().expect("4 bytes"));
    let (lid, qpn, psn) = (word(0), word(2), word(3));
    for (what, v, max) in [
        ("LID", lid, 0xFFFF),
        ("QPN", qpn, 0xFF_FFFF),
        ("PSN", psn, 0xFF_FFFF),
    ] {
        if v > max {
            bail!("the peer's {what} {v:#x} is out of range (max {max:#x})");
        }
    }
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&b[32..48]);
    Ok(Dest {
        lid: lid as u16,
        out_reads: word(1),
        qpn,
        psn,
        rkey: word(4),
        vaddr: u64::from_be_bytes(b[24..32].try_into().expect("8 bytes")),
        gid,
        srqn: word(12),
    })
}

/// The local address toward `peer`: `--bind`'s, else the one the route to it uses (asked of
/// the kernel by connecting a UDP socket, which sends nothing).
fn local_ip_toward(o: &LiveOptions, peer: Option<Ipv4Addr>) -> anyhow::Result<Ipv4Addr> {
    if let Some(ip) = o.bind {
        return Ok(ip);
    }
    let Some(peer) = peer else {
        bail!(
            "--server with -R or -z needs --bind IPV4: no TCP connection tells rnic its own address"
        );
    };
    let probe = UdpSocket::bind("0.0.0.0:0")?;
    probe.connect((peer, rnic_wire::ROCE_PORT))?;
    match probe.local_addr()? {
        SocketAddr::V4(a) => Ok(*a.ip()),
        SocketAddr::V6(a) => bail!("the route to {peer} leaves from {a}, not IPv4"),
    }
}

/// perftest's `-R` setup up to the last handshake before the measurement: RDMA CM connects
/// the control QP, the exchange runs over it, RDMA CM connects the test's QP between two key
/// exchanges, and the keys go three more times as without `-R` (four with
/// `extra_first_handshake`). With `-z` alone the test's QPs connect by their keys instead
/// ([`connect_by_keys`]).
pub fn open_session(
    o: &LiveOptions,
    layout: &Layout,
    extra_first_handshake: bool,
) -> anyhow::Result<Session> {
    let active = o.host.is_some();
    let peer_ip = match &o.host {
        Some(h) => Some(*super::oob::resolve_ipv4(h, o.port)?.ip()),
        None => None,
    };
    let local_ip = local_ip_toward(o, peer_ip)?;
    let test_tuning = tuning(o, o.mtu_bytes);
    let mut ep = Endpoint::open(local_ip, &test_tuning, o.pcap.as_deref())?;
    let mut qpns = vec![ep.qpn];
    for _ in 1..o.qps {
        qpns.push(ep.create_qp(&test_tuning)?);
    }
    let keys = ep.reg_mr(layout.mr_addr, layout.mr_len)?;
    layout.fill_served(&mut ep.mem, qpns.len());
    let mine: Vec<Dest> = (qpns.iter().enumerate())
        .map(|(i, &qpn)| my_dest(qpn, keys.rkey, layout.advertised_for(i), (local_ip, o)))
        .collect();
    let control = ControlQp::open(&mut ep)?;
    let control_qp = CmQp {
        qpn: control.qpn,
        rq_psn: super::session::random_psn(),
        tuning: QpTuning {
            service: ServiceType::Rc,
            ..test_tuning
        },
    };
    // Connection 0 is the control QP's, then with -R one per test QP, in order
    // (`TEST_CONN + i`).
    let test_qps_by_cm = mine.iter().filter(|_| o.rdma_cm).map(|d| CmQp {
        qpn: d.qpn,
        rq_psn: d.psn,
        tuning: test_tuning,
    });
    let qps: Vec<CmQp> = std::iter::once(control_qp).chain(test_qps_by_cm).collect();
    ep.cm = Some(LiveCm::new(&mut ep, &qps, o.port, peer_ip, active)?);
    for slot in 0..CONTROL_RECVS {
        control.post_recv(&mut ep.dev, slot)?;
    }
    let queues = Rc::clone(&control.queues);
    ep.control = Some(control);
    cm::connect(&mut ep, CONTROL_CONN)?;
    let mut oob = Oob::over_control(queues, active);
    let pump = |ep: &mut Endpoint| ep.turn(IDLE_TURN);
    let mut pre = oob.preamble((o.mtu_bytes, o.shape()), &mut || pump(&mut ep))?;
    let handshakes = (&mine[..], extra_first_handshake);
    let peers = if o.rdma_cm {
        let buf = (layout.mr_addr, keys.lkey);
        let peers = connect_by_cm(
            &mut ep,
            &mut oob,
            (o, &test_tuning, active),
            handshakes,
            buf,
        )?;
        // RDMA CM gave the test's QP its path MTU (the REQ's): that is the run's.
        pre.mtu_bytes = ep
            .cm
            .as_ref()
            .map_or(pre.mtu_bytes, |c| c.mtu_bytes(TEST_CONN));
        peers
    } else {
        connect_by_keys(&mut ep, &mut oob, (o, pre.mtu_bytes), handshakes)?
    };
    // "An additional handshake is required after moving qp to RTR."
    after_connection(&mut oob, (o.test, &mine, &peers), &mut || pump(&mut ep))?;
    o.check_read_fits(pre.mtu_bytes)?;
    Ok(Session {
        ep,
        oob,
        pre,
        mine,
        peers,
        is_client: active,
    })
}

/// perftest's `create_rdma_cm_connection` once the control connection carried the preamble:
/// a handshake, RDMA CM connects (or over UD resolves) each test QP, a handshake, then
/// every QP's keys (after one more of the first QP's for the latency tests that have it).
/// `buf`: a buffer of the test's region for a UD latency test's QPN message. Returns the
/// peer's keys of each of this side's QPs, with the PSNs RDMA CM agreed.
fn connect_by_cm(
    ep: &mut Endpoint,
    oob: &mut Oob,
    (o, t, active): (&LiveOptions, &QpTuning, bool),
    (mine, extra_first_handshake): (&[Dest], bool),
    buf: (u64, u32),
) -> anyhow::Result<Vec<Dest>> {
    let me = mine[0];
    oob.keys(&me, &mut || ep.turn(IDLE_TURN))?;
    let mut by_cm = (0..mine.len())
        .map(|i| cm::connect(ep, TEST_CONN + i))
        .collect::<anyhow::Result<Vec<Dest>>>()?;
    if t.service == ServiceType::Ud && o.test.is_latency() {
        by_cm[0].qpn = ud_qpn_message(ep, (active, t), by_cm[0], buf)?;
    }
    oob.keys(&me, &mut || ep.turn(IDLE_TURN))?;
    if extra_first_handshake {
        oob.keys(&me, &mut || ep.turn(IDLE_TURN))?;
    }
    let by_index = keys_of_every_qp(oob, mine, &mut || ep.turn(IDLE_TURN))?;
    if t.service != ServiceType::Ud {
        return peers_as_cm_paired(&by_index, &by_cm);
    }
    // A SIDR_REQ names no client QPN (rnic's own client adds it after RDMA CM's header): 0
    // is perftest's; a datagram has no PSN to agree on. Each QP sends to the peer's QP of
    // its own index, as without RDMA CM; a QPN that SIDR named must be one of the
    // exchange's (a perftest client's SIDR_REQs may come in any order).
    for cm in by_cm.iter().filter(|cm| cm.qpn != 0) {
        let keys = by_index.iter().find(|k| k.qpn == cm.qpn);
        check_cm_matches_keys(keys.unwrap_or(&by_index[0]), cm)?;
    }
    Ok(by_index)
}

/// The peer's keys of each of this side's QPs as RDMA CM paired them (`by_cm[i]`: the peer
/// QP connection `TEST_CONN + i` reached, with its starting PSN): a perftest client's REQs
/// may reach the server in another order than its QPs' exchange (its QPs connect at once,
/// each on its own `rdma_cm_id`), so the keys are matched by QPN, not by position. A QPN
/// the exchange did not name is refused.
fn peers_as_cm_paired(by_index: &[Dest], by_cm: &[Dest]) -> anyhow::Result<Vec<Dest>> {
    by_cm
        .iter()
        .enumerate()
        .map(|(i, cm)| {
            let keys = by_index.iter().find(|k| k.qpn == cm.qpn);
            let keys = keys.unwrap_or(&by_index[i.min(by_index.len() - 1)]);
            check_cm_matches_keys(keys, cm)?;
            Ok(Dest {
                psn: cm.psn,
                ..*keys
            })
        })
        .collect()
}

/// `wr_id` of the UD QPN message's SEND and receive.
const UD_QPN_WR_ID: u64 = 1 << 33;

/// perftest's `-c UD -R` latency tests, once RDMA CM resolved the UD QP (a SIDR_REQ does not
/// tell the server the client's QPN): the client sends a 4-byte SEND with immediate, its QPN,
/// to the server's UD QP; the server, whose receive for it is posted before the message can
/// come, takes the client's QPN from it and points its UD QP there (RESET and up again: the
/// QP holds no other receive yet). `(addr, lkey)`: a buffer of the test's region, which the
/// test overwrites later. Returns the peer's QPN.
fn ud_qpn_message(
    ep: &mut Endpoint,
    (active, t): (bool, &QpTuning),
    by_cm: Dest,
    (addr, lkey): (u64, u32),
) -> anyhow::Result<u32> {
    let sge = |len| Sge { addr, len, lkey };
    if active {
        let wr = SendWr {
            opcode: rnic_transport::WrOpcode::SendImm,
            imm: Some(ep.qpn),
            ..SendWr::send(UD_QPN_WR_ID, sge(4))
        };
        ep.dev.post_send(ep.qpn, wr)?;
        wait_completion(ep, WcOpcode::Send)?;
        return Ok(by_cm.qpn);
    }
    // The GRH area (40 bytes) and the 4 bytes.
    ep.dev
        .post_recv(ep.qpn, RecvWr::new(UD_QPN_WR_ID, vec![sge(64)]))?;
    let Some(qpn) = wait_completion(ep, WcOpcode::Recv)? else {
        bail!("RDMA CM: the client's UD QPN message came without its immediate (the QPN)");
    };
    if qpn != by_cm.qpn {
        let reset = rnic_transport::QpAttr {
            state: rnic_transport::QpState::Reset,
            ..Default::default()
        };
        ep.dev.modify_qp(ep.qpn, &reset)?;
        let peer = Dest { qpn, ..by_cm };
        let my_psn = super::session::random_psn();
        super::endpoint::qp_to_init_qkey(&mut ep.dev, ep.qpn, t, rnic_wire::cma::UDP_QKEY)?;
        super::endpoint::qp_to_rtr(&mut ep.dev, ep.qpn, &peer, t)?;
        super::endpoint::qp_to_rts(&mut ep.dev, ep.qpn, my_psn, 0, t)?;
    }
    Ok(qpn)
}

/// Turns the endpoint until the test's QP completes the UD QPN message's `opcode`; returns
/// its immediate.
fn wait_completion(ep: &mut Endpoint, opcode: WcOpcode) -> anyhow::Result<Option<u32>> {
    let start = std::time::Instant::now();
    loop {
        ep.turn(IDLE_TURN)?;
        if let Some(c) = ep.dev.poll_cq(ep.cq) {
            if c.wr_id != UD_QPN_WR_ID || c.opcode != opcode {
                bail!(
                    "RDMA CM: the UD QP completed {:?} before its QPN message",
                    c.opcode
                );
            }
            if c.status != WcStatus::Success {
                bail!("RDMA CM: the UD QPN message completed with {:?}", c.status);
            }
            return Ok(c.imm);
        }
        if start.elapsed() > super::session::STALL {
            bail!(
                "RDMA CM: no UD QPN message ({opcode:?}) within {} s: the peer's perftest \
                 sends one after the SIDR exchange of a latency test",
                super::session::STALL.as_secs()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::oob::gid_of;

    #[test]
    fn dest_record_has_perftests_layout_and_round_trips() {
        let d = Dest {
            lid: 0,
            out_reads: 16,
            qpn: 0x11,
            psn: 0xABCDEF,
            rkey: 0x1234,
            vaddr: 0x7f00_0000_1000,
            gid: gid_of(Ipv4Addr::new(10, 47, 0, 1)),
            srqn: 0,
        };
        let b = encode_dest(&d);
        assert_eq!(&b[8..16], &[0, 0, 0, 0x11, 0, 0xAB, 0xCD, 0xEF]);
        assert_eq!(&b[24..32], &[0, 0, 0x7f, 0, 0, 0, 0x10, 0]);
        assert_eq!(&b[44..48], &[10, 47, 0, 1]);
        assert_eq!(decode_dest(&b).unwrap(), d);
    }

    #[test]
    fn bad_dest_records_are_errors_naming_the_field() {
        let mut b = encode_dest(&Dest::default());
        b[8] = 1;
        let e = decode_dest(&b).unwrap_err().to_string();
        assert!(e.contains("QPN"), "{e}");
        let e = decode_dest(&b[..40]).unwrap_err().to_string();
        assert!(e.contains("40 bytes, want 56"), "{e}");
    }
}
