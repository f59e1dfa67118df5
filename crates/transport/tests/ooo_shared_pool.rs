//! The bitmap block pool one device shares among its out-of-order QPs: several ORNIC QPs
//! write at once over sprayed paths through one small pool; when it runs dry a packet is
//! dropped (and resent), never misplaced, every byte lands, and every block comes back.

mod common;

use common::{next_now, splitmix, PageMem, TimedWire};
use rnic_transport::*;

const BASE: u64 = 0x10_0000;
const MR_LEN: u64 = 64 << 20;
const SLOT_PS: u64 = 330_000;
const QPS: usize = 6;
const WQE_BYTES: u32 = 256 << 10;

struct Side {
    dev: Device,
    mem: PageMem,
    cq: CqId,
    qpns: Vec<u32>,
    keys: MrKeys,
}

fn side(ip: [u8; 4], mac: [u8; 6], mode: ReliabilityMode) -> Side {
    let (mut dev, pd, cq, keys) = common::device(ip, mac, 1 << 16, (BASE, MR_LEN));
    let init = QpInit {
        pd,
        send_cq: cq,
        recv_cq: cq,
        max_send_wr: 64,
        max_recv_wr: 64,
    };
    let qpns = (0..QPS)
        .map(|_| dev.create_qp_with(init, mode).unwrap())
        .collect();
    Side {
        dev,
        mem: PageMem::default(),
        cq,
        qpns,
        keys,
    }
}

struct Outcome {
    successes: usize,
    bytes_ok: bool,
    not_placed: u64,
    /// Blocks held when the run stopped, and after every QP was destroyed.
    held_after: (u32, u32),
    held_destroyed: (u32, u32),
}

/// `QPS` QP pairs, each writing two WQEs from A to B at once, every frame sprayed over 4
/// paths 20 slots apart; the pool of `pool_blocks` blocks is each device's. Stops after
/// `slots` packet times at most.
fn run(pool_blocks: u32, slots: u32) -> Outcome {
    let mode = ReliabilityMode::Ornic(OooParams {
        pool_blocks,
        ..OooParams::default()
    });
    let (mac_a, ip_a) = ([2, 0, 0, 0, 0, 0xA], [10, 0, 0, 1]);
    let (mac_b, ip_b) = ([2, 0, 0, 0, 0, 0xB], [10, 0, 0, 2]);
    let mut a = side(ip_a, mac_a, mode);
    let mut b = side(ip_b, mac_b, mode);
    for i in 0..QPS {
        let (qa, qb) = (a.qpns[i], b.qpns[i]);
        for (s, mac, ip, peer) in [(&mut a, mac_b, ip_b, qb), (&mut b, mac_a, ip_a, qa)] {
            let q = if peer == qb { qa } else { qb };
            s.dev
                .modify_qp(q, &QpAttr::to_init(Access::REMOTE_WRITE))
                .unwrap();
            s.dev
                .modify_qp(
                    q,
                    &QpAttr::to_rtr(AddressVector::new(mac, ip), 4096, peer, 500),
                )
                .unwrap();
            s.dev.modify_qp(q, &QpAttr::to_rts(500)).unwrap();
        }
    }
    let mut expect = Vec::new();
    for i in 0..QPS {
        for k in 0..2u64 {
            let off = (i as u64 * 2 + k) * u64::from(WQE_BYTES);
            let (src, dst) = (BASE + off, BASE + (32 << 20) + off);
            let data = a
                .mem
                .fill(src, WQE_BYTES as usize, (i * 2) as u8 + k as u8 + 1);
            let wr = SendWr {
                wr_id: off,
                opcode: WrOpcode::Write,
                sgl: [Sge {
                    addr: src,
                    len: WQE_BYTES,
                    lkey: a.keys.lkey,
                }]
                .into(),
                remote: Some(RemoteAddr {
                    va: dst,
                    rkey: b.keys.rkey,
                }),
                signaled: true,
                ..SendWr::default()
            };
            a.dev.post_send(a.qpns[i], wr).unwrap();
            expect.push((dst, data));
        }
    }
    let mut rng = 0x5eed_u64;
    let mut wire = TimedWire::default();
    let (mut now, mut not_placed) = (0u64, 0u64);
    let mut buf = Vec::new();
    for _ in 0..slots {
        for to_b in [true, false] {
            let src = if to_b { &mut a } else { &mut b };
            if src.dev.poll_transmit(now, &src.mem, &mut buf).is_some() {
                let path = splitmix(&mut rng) % 4;
                wire.send(now + SLOT_PS + path * 20 * SLOT_PS / 3, to_b, &buf);
            }
        }
        now += SLOT_PS;
        while let Some((to_b, f)) = wire.pop_due(now) {
            let dst = if to_b { &mut b } else { &mut a };
            if let Err(RxDrop::OooNotPlaced(_)) = dst.dev.handle_packet(now, &f, &mut dst.mem) {
                not_placed += 1;
            }
        }
        a.dev.handle_timeout(now);
        b.dev.handle_timeout(now);
        let busy = a.qpns.iter().any(|&q| a.dev.qp_wants_transmit(q))
            || b.qpns.iter().any(|&q| b.dev.qp_wants_transmit(q));
        match next_now(now, SLOT_PS, busy, &wire, [&a.dev, &b.dev]) {
            Some(t) => now = t,
            None => break,
        }
    }
    let successes = std::iter::from_fn(|| a.dev.poll_cq(a.cq))
        .filter(|c| c.status == WcStatus::Success)
        .count();
    let bytes_ok = expect
        .iter()
        .all(|(at, data)| b.mem.get(*at, data.len()) == *data);
    let held_after = (
        a.dev.ooo_pool_blocks_in_use(),
        b.dev.ooo_pool_blocks_in_use(),
    );
    for s in [&mut a, &mut b] {
        for &q in &s.qpns {
            s.dev.destroy_qp(q).unwrap();
        }
    }
    let held_destroyed = (
        a.dev.ooo_pool_blocks_in_use(),
        b.dev.ooo_pool_blocks_in_use(),
    );
    Outcome {
        successes,
        bytes_ok,
        not_placed,
        held_after,
        held_destroyed,
    }
}

#[test]
fn the_papers_pool_serves_every_qp_without_a_drop() {
    let o = run(4096, 2_000_000);
    assert_eq!(o.successes, 2 * QPS);
    assert!(o.bytes_ok);
    assert_eq!(o.not_placed, 0);
    assert_eq!(o.held_after, (0, 0));
}

#[test]
fn a_pool_too_small_for_the_qps_drops_and_resends_but_never_corrupts() {
    // Three blocks for six QPs whose reordering keeps about four blocks each in use.
    let o = run(3, 2_000_000);
    assert!(o.not_placed > 0, "the pool never ran dry");
    assert_eq!(o.successes, 2 * QPS);
    assert!(o.bytes_ok);
    assert_eq!(o.held_after, (0, 0));
}

#[test]
fn a_qp_destroyed_mid_wqe_gives_its_blocks_back() {
    let o = run(4096, 100);
    assert!(
        o.held_after.1 > 0,
        "no block held mid-WQE: {:?}",
        o.held_after
    );
    assert_eq!(o.held_destroyed, (0, 0));
}
