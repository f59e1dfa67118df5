//! Out-of-order WRITE between two devices on real frames: ORNIC (aggregated ACKs) and
//! MP-RDMA (per-packet ACKs) QPs over a wire that sprays every frame on one of several paths
//! (random delay), drops and duplicates frames; every byte is checked at the end.

#![allow(dead_code)]

mod common;

use common::{next_now, splitmix, PageMem, TimedWire};
use proptest::prelude::*;
use rnic_transport::*;

const BASE: u64 = 0x10_0000;
const MR_LEN: u64 = 64 << 20;
/// One packet time on the wire (4 KB at 100 Gb/s, rounded).
const SLOT_PS: u64 = 330_000;

struct End {
    dev: Device,
    mem: PageMem,
    cq: CqId,
    qpn: u32,
    keys: MrKeys,
}

fn end(ip: [u8; 4], mac: [u8; 6], mode: ReliabilityMode) -> End {
    let (mut dev, pd, cq, keys) = common::device(ip, mac, 1 << 16, (BASE, MR_LEN));
    let qpn = dev
        .create_qp_with(
            QpInit {
                pd,
                send_cq: cq,
                recv_cq: cq,
                max_send_wr: 4096,
                max_recv_wr: 4096,
            },
            mode,
        )
        .unwrap();
    End {
        dev,
        mem: PageMem::default(),
        cq,
        qpn,
        keys,
    }
}

fn connect(e: &mut End, mac: [u8; 6], ip: [u8; 4], qpn: u32, psns: (u32, u32)) {
    e.dev
        .modify_qp(e.qpn, &QpAttr::to_init(Access::REMOTE_WRITE))
        .unwrap();
    e.dev
        .modify_qp(
            e.qpn,
            &QpAttr::to_rtr(AddressVector::new(mac, ip), 4096, qpn, psns.0),
        )
        .unwrap();
    e.dev.modify_qp(e.qpn, &QpAttr::to_rts(psns.1)).unwrap();
}

/// What the wire does to frames.
#[derive(Debug, Clone, Copy)]
struct Net {
    /// Paths, one-way delays spread evenly over `spread_ps`.
    paths: u64,
    spread_ps: u64,
    /// Per mille of frames lost / duplicated.
    loss_pm: u64,
    dup_pm: u64,
    seed: u64,
    /// One-way delay every frame takes on top of its path's.
    extra_ps: u64,
}

struct Outcome {
    wire_frames: Vec<(bool, rnic_wire::Opcode)>,
    a: TransportStats,
    b: TransportStats,
    completions: Vec<Completion>,
    bytes_ok: bool,
    end_ps: u64,
}

fn run(mode: ReliabilityMode, sizes: &[u32], net: Net, sq_psn: u32) -> Outcome {
    let ops: Vec<(bool, u32)> = sizes.iter().map(|&s| (false, s)).collect();
    run_ops(mode, &ops, net, sq_psn)
}

/// `ops`: (a READ, bytes), posted on A in order; a WRITE goes from A to B, a READ brings
/// B's bytes to A.
fn run_ops(mode: ReliabilityMode, ops: &[(bool, u32)], net: Net, sq_psn: u32) -> Outcome {
    let (mac_a, ip_a) = ([2, 0, 0, 0, 0, 0xA], [10, 0, 0, 1]);
    let (mac_b, ip_b) = ([2, 0, 0, 0, 0, 0xB], [10, 0, 0, 2]);
    let mut a = end(ip_a, mac_a, mode);
    let mut b = end(ip_b, mac_b, mode);
    let (qa, qb) = (a.qpn, b.qpn);
    connect(&mut a, mac_b, ip_b, qb, (77, sq_psn));
    connect(&mut b, mac_a, ip_a, qa, (sq_psn, 77));
    // (on B?, address, bytes)
    let mut expect = Vec::new();
    let mut off = 0u64;
    for (i, &(read, len)) in ops.iter().enumerate() {
        let src = BASE + off;
        let dst = BASE + (32 << 20) + off;
        let seed = i as u8 ^ 0x5A;
        let (opcode, data) = if read {
            (WrOpcode::Read, b.mem.fill(dst, len as usize, seed))
        } else {
            (WrOpcode::Write, a.mem.fill(src, len as usize, seed))
        };
        let wr = SendWr {
            wr_id: i as u64,
            opcode,
            sgl: [Sge {
                addr: src,
                len,
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
        a.dev.post_send(qa, wr).unwrap();
        expect.push(if read {
            (false, src, data)
        } else {
            (true, dst, data)
        });
        off += u64::from(len).div_ceil(4096) * 4096 + 4096;
    }
    let mut rng = net.seed | 1;
    let mut wire = TimedWire::default();
    let mut now = 0u64;
    let mut log = Vec::new();
    let mut buf = Vec::new();
    for _ in 0..5_000_000 {
        // Each end sends at most one frame per slot.
        for to_b in [true, false] {
            let src = if to_b { &mut a } else { &mut b };
            if let Some(m) = src.dev.poll_transmit(now, &src.mem, &mut buf) {
                log.push((to_b, m.opcode));
                let copies = if splitmix(&mut rng) % 1000 < net.dup_pm {
                    2
                } else {
                    1
                };
                for _ in 0..copies {
                    if splitmix(&mut rng) % 1000 < net.loss_pm {
                        continue;
                    }
                    let path = splitmix(&mut rng) % net.paths.max(1);
                    let delay = SLOT_PS
                        + net.extra_ps
                        + path * net.spread_ps / net.paths.max(2).saturating_sub(1);
                    wire.send(now + delay, to_b, &buf);
                }
            }
        }
        now += SLOT_PS;
        while let Some((to_b, f)) = wire.pop_due(now) {
            let dst = if to_b { &mut b } else { &mut a };
            let _ = dst.dev.handle_packet(now, &f, &mut dst.mem);
        }
        a.dev.handle_timeout(now);
        b.dev.handle_timeout(now);
        let busy = a.dev.qp_wants_transmit(qa) || b.dev.qp_wants_transmit(qb);
        match next_now(now, SLOT_PS, busy, &wire, [&a.dev, &b.dev]) {
            Some(t) => now = t,
            None => break,
        }
    }
    let completions: Vec<Completion> = std::iter::from_fn(|| a.dev.poll_cq(a.cq)).collect();
    let bytes_ok = expect.iter().all(|(on_b, at, data)| {
        let m = if *on_b { &b.mem } else { &a.mem };
        m.get(*at, data.len()) == *data
    });
    Outcome {
        wire_frames: log,
        a: a.dev.stats().clone(),
        b: b.dev.stats().clone(),
        completions,
        bytes_ok,
        end_ps: now,
    }
}

fn ornic() -> ReliabilityMode {
    ReliabilityMode::Ornic(OooParams::default())
}

fn mp_rdma() -> ReliabilityMode {
    ReliabilityMode::MpRdma(OooParams::default())
}

const SPRAY: Net = Net {
    paths: 4,
    spread_ps: 20_000_000,
    loss_pm: 0,
    dup_pm: 0,
    seed: 7,
    extra_ps: 0,
};

#[test]
fn ornic_write_over_sprayed_paths_lands_every_byte_with_few_acks() {
    let sizes = [1 << 20, 5000, 1, 4096, 3 << 20];
    // A 10 µs scheduler turn: about 30 packet times per ACK.
    let mode = ReliabilityMode::Ornic(OooParams {
        ack_turn_ps: 10_000_000,
        ..OooParams::default()
    });
    let o = run(mode, &sizes, SPRAY, 0xFF_FF00);
    assert!(o.bytes_ok);
    assert_eq!(o.completions.len(), sizes.len());
    assert!(o
        .completions
        .iter()
        .enumerate()
        .all(|(i, c)| c.wr_id == i as u64 && c.status == WcStatus::Success));
    assert_eq!(o.a.retransmitted_packets, 0, "no loss, no resend");
    // Every opcode on the wire is an out-of-order one; the address rides only until the
    // responder learnt the start.
    assert!(o.wire_frames.iter().all(|(_, op)| op.is_ooo()));
    let data = o.wire_frames.iter().filter(|(to_b, _)| *to_b).count();
    let fspot = o.wire_frames.iter().filter(|(_, op)| op.has_reth()).count();
    assert!(fspot < data / 4, "{fspot} of {data} carried the address");
    let acks = o.wire_frames.len() - data;
    assert!(acks < data / 4, "{acks} ACKs for {data} data packets");
}

#[test]
fn mp_rdma_acks_every_data_packet() {
    let sizes = [1 << 20, 64 << 10];
    let o = run(mp_rdma(), &sizes, SPRAY, 0);
    assert!(o.bytes_ok);
    assert_eq!(o.completions.len(), 2);
    let data = o.wire_frames.iter().filter(|(to_b, _)| *to_b).count() as u64;
    let acks = o.wire_frames.len() as u64 - data;
    assert_eq!(acks, o.b.rx_requests, "one ACK per data packet received");
}

#[test]
fn a_lost_packet_is_naked_by_bitmap_and_resent_alone() {
    let sizes = [2 << 20];
    let net = Net {
        loss_pm: 5,
        seed: 11,
        ..SPRAY
    };
    let o = run(ornic(), &sizes, net, 1000);
    assert!(o.bytes_ok);
    assert_eq!(o.completions.len(), 1);
    assert!(o.b.naks_sent.total() > 0, "OTD detected a loss");
    // Selective repair: far fewer resends than go-back-N's tail.
    assert!(
        o.a.retransmitted_packets < 64,
        "{} resent",
        o.a.retransmitted_packets
    );
}

#[test]
fn other_verbs_are_refused_on_an_ooo_qp() {
    let mut a = end([10, 0, 0, 1], [2, 0, 0, 0, 0, 1], ornic());
    connect(&mut a, [2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 0x11, (0, 0));
    let wr = SendWr {
        opcode: WrOpcode::Read,
        sgl: [Sge {
            addr: BASE,
            len: 8,
            lkey: a.keys.lkey,
        }]
        .into(),
        remote: Some(RemoteAddr { va: BASE, rkey: 1 }),
        ..SendWr::default()
    };
    let wr = SendWr {
        opcode: WrOpcode::FetchAdd,
        atomic: Some(AtomicArgs::default()),
        ..wr
    };
    let e = a.dev.post_send(a.qpn, wr).unwrap_err();
    assert!(e.to_string().contains("WRITE and READ only"), "{e}");
}

#[test]
fn ooo_read_over_sprayed_paths_places_every_byte_by_psn() {
    let ops = [
        (true, 1 << 20),
        (false, 5000),
        (true, 1),
        (true, 3 << 20),
        (false, 4096),
    ];
    for mode in [ornic(), mp_rdma()] {
        let o = run_ops(mode, &ops, SPRAY, 0xFF_FF80);
        assert!(o.bytes_ok);
        assert_eq!(o.completions.len(), ops.len());
        for (i, c) in o.completions.iter().enumerate() {
            assert_eq!((c.wr_id, c.status), (i as u64, WcStatus::Success));
            let want = if ops[i].0 {
                WcOpcode::RdmaRead
            } else {
                WcOpcode::RdmaWrite
            };
            assert_eq!(c.opcode, want);
        }
        assert!(o.wire_frames.iter().all(|(_, op)| op.is_ooo()));
        assert_eq!(o.a.retransmitted_packets, 0, "no loss, no request again");
    }
}

#[test]
fn a_lost_read_response_is_asked_for_again() {
    let net = Net {
        loss_pm: 5,
        seed: 3,
        ..SPRAY
    };
    let o = run_ops(ornic(), &[(true, 2 << 20), (true, 100_000)], net, 9);
    assert!(o.bytes_ok);
    assert_eq!(o.completions.len(), 2);
    assert!(o.a.retransmitted_packets > 0, "ranges asked again");
}

/// A peer that answers nothing (every frame lost): after `retry_cnt` (7) timeouts in a row
/// and one more, the WRITE or READ fails with RETRY_EXC_ERR and the rest are flushed, as on a
/// go-back-N QP, instead of being resent for ever; the backed-off timers keep that under a
/// second.
#[test]
fn a_peer_that_never_answers_fails_the_wqe_after_retry_cnt_timeouts() {
    let dead = Net {
        loss_pm: 1000,
        ..SPRAY
    };
    for read in [false, true] {
        for mode in [ornic(), mp_rdma()] {
            let o = run_ops(mode, &[(read, 100_000), (read, 5000)], dead, 40);
            let statuses: Vec<_> = o.completions.iter().map(|c| c.status).collect();
            assert_eq!(
                statuses,
                [WcStatus::RetryExcErr, WcStatus::WrFlushErr],
                "read {read}"
            );
            assert_eq!(
                o.a.ack_timeouts, 8,
                "read {read}: 7 retries, then the error"
            );
            assert!(
                o.end_ps < 1_000_000_000_000,
                "read {read}: ended at {} ps",
                o.end_ps
            );
        }
    }
}

/// A round trip 50 times the configured timeout (5.6 ms against 111 µs): the timers back off
/// past it within the retry count and learn it, so WRITEs and READs complete, every byte
/// with them, where a timer stuck at the configured value would time every WQE out.
#[test]
fn a_round_trip_far_beyond_the_timeout_is_learnt_before_the_retries_run_out() {
    let far = Net {
        extra_ps: 25 * OooParams::default().timeout_ps,
        ..SPRAY
    };
    let ops = [
        (false, 200_000),
        (true, 200_000),
        (false, 5000),
        (true, 5000),
    ];
    for mode in [ornic(), mp_rdma()] {
        let o = run_ops(mode, &ops, far, 3);
        assert!(o.bytes_ok);
        let statuses: Vec<_> = o.completions.iter().map(|c| c.status).collect();
        assert_eq!(statuses, [WcStatus::Success; 4]);
        assert!(
            o.a.ack_timeouts > 0,
            "the first WQEs timed out before a sample"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn random_spraying_loss_and_duplication_never_corrupt(
        per_packet in any::<bool>(),
        ops in prop::collection::vec((any::<bool>(), 1u32..300_000), 1..5),
        paths in 1u64..6,
        spread_us in 0u64..30,
        loss_pm in 0u64..30,
        dup_pm in 0u64..30,
        seed in any::<u64>(),
        sq_psn in prop_oneof![Just(0xFF_FFF0u32), 0u32..0x100_0000],
    ) {
        let mode = if per_packet { mp_rdma() } else { ornic() };
        let net = Net { paths, spread_ps: spread_us * 1_000_000, loss_pm, dup_pm, seed, extra_ps: 0 };
        let o = run_ops(mode, &ops, net, sq_psn);
        prop_assert!(o.bytes_ok, "bytes differ");
        prop_assert_eq!(o.completions.len(), ops.len());
        for (i, c) in o.completions.iter().enumerate() {
            prop_assert_eq!(c.wr_id, i as u64);
            prop_assert_eq!(c.status, WcStatus::Success);
            prop_assert_eq!(c.byte_len, ops[i].1);
        }
        prop_assert_eq!(o.a.drops.malformed + o.b.drops.malformed, 0);
    }
}
