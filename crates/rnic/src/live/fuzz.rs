//! Hostile datagrams into the live endpoint's receive path: the socket filter
//! ([`is_roce_to`]), the Ethernet header the endpoint puts before each datagram, and the
//! engine with a QP connected as a live run connects it ([`connect_qp`]). Nothing may panic,
//! and nothing outside the registered region may be read or written ([`GuardedMemory`]
//! checks every access). Only the system calls are left out, so the test needs no privileges.
//!
//! `RNIC_LIVE_FUZZ_DATAGRAMS` sets the count (default 20 000; the long run takes 1 000 000).

use std::net::Ipv4Addr;

use rnic_loopback::corpus::random_roce;
use rnic_loopback::GuardedMemory;
use rnic_sim::Rng;
use rnic_transport::{Access, Device, DeviceConfig, QpInit, QpState};
use rnic_wire::{FrameAddr, FrameRepr, Opcode};

use super::endpoint::{connect_qp, QpTuning};
use super::net::{is_roce_to, put_ethernet_header, ETH_BYTES};
use super::oob::{gid_of, Dest};

const ME: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const PEER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
const BASE: u64 = 0x2000_0000;
const LEN: u64 = 64 << 10;
const PEER_QPN: u32 = 0x22;
const PEER_PSN: u32 = 0x100;

struct Target {
    dev: Device,
    mem: GuardedMemory,
    pd: rnic_transport::PdId,
    cq: rnic_transport::CqId,
    qpn: u32,
    rkey: u32,
}

fn tuning() -> QpTuning {
    QpTuning {
        service: rnic_transport::ServiceType::Rc,
        mtu_bytes: 1024,
        timeout: 1,
        retry_cnt: 2,
        rnr_retry: 1,
        window_psns: 256,
        sq_depth: 64,
        rq_depth: super::endpoint::RECV_DEPTH,
        out_reads: 16,
        srq_depth: None,
        traffic_class: None,
    }
}

fn peer() -> Dest {
    Dest {
        out_reads: 16,
        qpn: PEER_QPN,
        psn: PEER_PSN,
        gid: gid_of(PEER),
        ..Dest::default()
    }
}

fn target() -> Target {
    let mut dev = Device::new(DeviceConfig {
        ip: ME.octets(),
        ..DeviceConfig::default()
    });
    let pd = dev.alloc_pd();
    let cq = dev.create_cq(1 << 16).unwrap();
    let keys = dev.reg_mr(pd, BASE, LEN, Access::all()).unwrap();
    let mut mem = GuardedMemory::new();
    mem.allow(BASE, LEN);
    mem.bytes.fill_pattern(BASE, LEN, super::PATTERN_SEED);
    let qpn = new_qp(&mut dev, pd, cq);
    Target {
        dev,
        mem,
        pd,
        cq,
        qpn,
        rkey: keys.rkey,
    }
}

fn new_qp(dev: &mut Device, pd: rnic_transport::PdId, cq: rnic_transport::CqId) -> u32 {
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: 64,
        max_recv_wr: 64,
    };
    let qpn = dev.create_qp(init).unwrap();
    connect_qp(dev, qpn, 0, &peer(), &tuning()).unwrap();
    qpn
}

/// One hostile IPv4 datagram: random bytes, a well-formed RoCEv2 datagram with hostile
/// fields (any opcode, PSNs near and far, addresses inside, at the edge of and outside the
/// region, right and wrong R_Keys, huge lengths), or such a datagram with bits flipped.
fn hostile(rng: &mut Rng, t: &Target, frame: &mut Vec<u8>) -> Vec<u8> {
    let kind = rng.gen_index(10);
    if kind == 0 {
        let len = rng.gen_range(0..1600) as usize;
        return (0..len).map(|_| rng.next_u64() as u8).collect();
    }
    let opcode = Opcode::ALL[rng.gen_index(Opcode::ALL.len())];
    let dest_qp = if rng.gen_bool(0.9) {
        t.qpn
    } else {
        rng.next_u64() as u32
    };
    let psn = PEER_PSN
        .wrapping_add(rng.gen_range(0..64) as u32)
        .wrapping_sub(8);
    let len = rng.gen_range(0..1100) as usize;
    let payload: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
    let mut roce = random_roce(rng, opcode, dest_qp, psn, &payload);
    if let Some(reth) = roce.reth.as_mut() {
        reth.va = hostile_va(rng);
        if rng.gen_bool(0.7) {
            reth.rkey = t.rkey;
        }
    }
    if let Some(a) = roce.atomic_eth.as_mut() {
        a.va = hostile_va(rng) & !7;
        if rng.gen_bool(0.7) {
            a.rkey = t.rkey;
        }
    }
    let src = if rng.gen_bool(0.9) {
        PEER
    } else {
        Ipv4Addr::from(rng.next_u64() as u32)
    };
    FrameRepr {
        addr: FrameAddr {
            src_ip: src.octets(),
            dst_ip: ME.octets(),
            udp_src_port: 0xC000 | rng.next_u64() as u16,
            ttl: 64,
            ..FrameAddr::default()
        },
        ip_ident: rng.next_u64() as u16,
        roce,
    }
    .emit(frame);
    let mut dgram = frame[ETH_BYTES..].to_vec();
    if kind == 1 && !dgram.is_empty() {
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_index(dgram.len());
            dgram[i] ^= 1 << rng.gen_range(0..8);
        }
    }
    dgram
}

fn hostile_va(rng: &mut Rng) -> u64 {
    match rng.gen_index(4) {
        0 => BASE + rng.gen_range(0..LEN),
        1 => BASE + LEN - rng.gen_range(0..2048),
        2 => BASE.wrapping_sub(rng.gen_range(0..4096)),
        _ => rng.next_u64(),
    }
}

#[test]
fn hostile_datagrams_never_panic_nor_touch_memory_outside_the_region() {
    let n: u64 = std::env::var("RNIC_LIVE_FUZZ_DATAGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut rng = Rng::new(0x11fe);
    let mut t = target();
    let (mut frame, mut buf, mut out) = (Vec::new(), vec![0u8; 2048], Vec::new());
    let (mut delivered, mut reconnects) = (0u64, 0u64);
    let mut now_ps = 0u64;
    for _ in 0..n {
        now_ps += 1_000_000;
        let dgram = hostile(&mut rng, &t, &mut frame);
        if dgram.len() + ETH_BYTES > buf.len() || !is_roce_to(ME, &dgram) {
            continue;
        }
        buf[ETH_BYTES..ETH_BYTES + dgram.len()].copy_from_slice(&dgram);
        put_ethernet_header(&mut buf);
        let _ = t
            .dev
            .handle_packet(now_ps, &buf[..ETH_BYTES + dgram.len()], &mut t.mem);
        delivered += 1;
        while t.dev.poll_transmit(now_ps, &t.mem, &mut out).is_some() {}
        if t.dev.poll_timeout().is_some_and(|d| d <= now_ps) {
            t.dev.handle_timeout(now_ps);
        }
        if t.dev.qp_state(t.qpn) == Some(QpState::Err) {
            t.dev.destroy_qp(t.qpn).unwrap();
            t.qpn = new_qp(&mut t.dev, t.pd, t.cq);
            reconnects += 1;
        }
    }
    assert_eq!(
        t.mem.violations(),
        vec![],
        "accesses outside the registered region"
    );
    assert!(
        delivered > n / 2,
        "most datagrams reach the engine ({delivered} of {n})"
    );
    assert!(
        reconnects > 0,
        "the attack drove a QP into ERR at least once"
    );
    assert!(
        t.mem
            .bytes
            .first_pattern_mismatch(BASE, LEN, super::PATTERN_SEED)
            .is_some(),
        "hostile WRITEs with the right R_Key land inside the region (the attack reaches memory)"
    );
}
