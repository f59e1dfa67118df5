//! Out-of-order WRITEs end to end through a lossy, reordering, duplicating channel: every
//! byte lands where it belongs, nothing is written outside the region, every WQE completes.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// A tiny deterministic generator for the channel (xorshift64*).
struct Dice(u64);
impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p_per_mille: u64) -> bool {
        self.below(1000) < p_per_mille
    }
}

/// What a transfer did.
#[derive(Debug)]
pub(super) struct Transfer {
    pub completed: u32,
    pub acks: u64,
    pub naks: u64,
    pub data_packets: u64,
    pub address_carrying: u64,
    pub slots: u64,
}

/// Sends `sizes` WRITEs back to back through a channel that delays each segment by
/// `base + U[0, spread)` slots (spraying), loses and duplicates segments per mille.
#[allow(clippy::too_many_arguments)]
pub(super) fn transfer(
    design: BitmapDesign,
    policy: AckPolicy,
    sizes: &[u32],
    spread: u64,
    loss_pm: u64,
    dup_pm: u64,
    seed: u64,
) -> Transfer {
    const PMTU: u32 = 256;
    const BASE: u64 = 8;
    let (block_bits, nodes, otd) = (16, 20, 64);
    let total: u64 = sizes.iter().map(|&s| u64::from(s)).sum();
    let mr_base = 0x10_000u64;
    let mut mem = vec![0u8; total as usize];
    let mut pool = BlockPool::new(64, block_bits);
    let mut resp = OooResponder::new(
        design, block_bits, nodes, otd, PMTU, policy, mr_base, total, 100,
    );
    let timeout = 2 * BASE + spread + u64::from(otd);
    let mut req = OooRequester::new(PMTU, block_bits * nodes, (timeout, 0), 100);
    let mut expect = Vec::new();
    let mut at = mr_base;
    for (k, &s) in sizes.iter().enumerate() {
        let data: Vec<u8> = (0..s).map(|i| (i as u8) ^ (k as u8 * 37) ^ 0x5a).collect();
        expect.extend_from_slice(&data);
        req.post_write(data, at);
        at += u64::from(s);
    }
    let mut dice = Dice(seed | 1);
    let mut to_resp: BTreeMap<(u64, u64), OooSegment> = BTreeMap::new();
    let mut to_req: BTreeMap<(u64, u64), OooSegment> = BTreeMap::new();
    let mut seq = 0u64;
    let mut send =
        |q: &mut BTreeMap<(u64, u64), OooSegment>, now: u64, s: OooSegment, d: &mut Dice| {
            let copies = if d.chance(dup_pm) { 2 } else { 1 };
            for _ in 0..copies {
                if !d.chance(loss_pm) {
                    seq += 1;
                    q.insert((now + BASE + d.below(spread.max(1)), seq), s.clone());
                }
            }
        };
    let mut acks = 0;
    let mut now = 0u64;
    while !req.idle() && now < 2_000_000 {
        if let Some(s) = req.poll_transmit(now) {
            send(&mut to_resp, now, s, &mut dice);
        }
        while let Some(e) = to_resp.first_entry() {
            if e.key().0 > now {
                break;
            }
            let seg = e.remove();
            // What the responder says, before the packet, about where it would write it
            // (the NIC translates that page first) must be where it writes it.
            let (predicted, carried, payload) = match &seg {
                OooSegment::Write {
                    psn, addr, payload, ..
                } => (resp.place_addr(*psn), *addr, payload.clone()),
                _ => (None, None, Vec::new()),
            };
            let written = resp.stats.written_packets;
            resp.handle_segment(seg, &mut pool, &mut mem);
            if resp.stats.written_packets > written {
                let at = predicted
                    .or(carried)
                    .expect("a Spot is written at a known start");
                let from = (at - mr_base) as usize;
                assert_eq!(&mem[from..from + payload.len()], &payload[..], "at {at:#x}");
            }
        }
        while let Some(s) = resp.poll_transmit(now) {
            acks += 1;
            send(&mut to_req, now, s, &mut dice);
        }
        while let Some(e) = to_req.first_entry() {
            if e.key().0 > now {
                break;
            }
            req.handle_segment(now, e.remove());
        }
        req.handle_timeout(now);
        now += 1;
    }
    assert!(
        req.idle(),
        "stuck at slot {now}: {:?} {:?}",
        req.stats,
        resp.stats
    );
    assert_eq!(mem, expect, "bytes differ");
    assert_eq!(resp.stats.dropped_invalid, 0);
    let _ = acks;
    Transfer {
        completed: resp.msn(),
        acks: resp.stats.acks,
        naks: resp.stats.naks,
        data_packets: req.stats.data_packets,
        address_carrying: req.stats.address_carrying,
        slots: now,
    }
}

#[test]
fn in_order_transfer_acks_once_per_wqe_when_aggregated() {
    let t = transfer(
        BitmapDesign::Ornic,
        AckPolicy::Aggregated { turn_ps: 1 << 40 },
        &[64 * 256; 4],
        1,
        0,
        0,
        1,
    );
    assert_eq!(t.completed, 4);
    assert_eq!(t.data_packets, 4 * 64);
    // A turn longer than the WQE: the completion ACK is the only one.
    assert_eq!(t.acks, 4, "{t:?}");
    // ... so every packet carried its address.
    assert_eq!(t.address_carrying, 4 * 64, "{t:?}");
    let mp = transfer(
        BitmapDesign::MpRdma,
        AckPolicy::PerPacket,
        &[64 * 256; 4],
        1,
        0,
        0,
        1,
    );
    assert_eq!(mp.acks, 4 * 64, "{mp:?}");
}

#[test]
fn spot_packets_stop_carrying_the_address_after_the_first_ack() {
    let t = transfer(
        BitmapDesign::Ornic,
        AckPolicy::Aggregated { turn_ps: 4 },
        &[200 * 256],
        40,
        0,
        0,
        9,
    );
    assert!(t.address_carrying < t.data_packets / 2, "{t:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random spraying, loss and duplication, every mode: the bytes arrive intact.
    #[test]
    fn bytes_survive_reordering_loss_and_duplication(
        mode in 0usize..3,
        sizes in proptest::collection::vec(1u32..40_000, 1..4),
        spread in 1u64..70,
        loss_pm in 0u64..30,
        dup_pm in 0u64..30,
        seed in any::<u64>(),
    ) {
        let (design, policy) = [
            (BitmapDesign::Ornic, AckPolicy::Aggregated { turn_ps: 16 }),
            (BitmapDesign::Ornic, AckPolicy::PerPacket),
            (BitmapDesign::MpRdma, AckPolicy::PerPacket),
        ][mode];
        let t = transfer(design, policy, &sizes, spread, loss_pm, dup_pm, seed);
        prop_assert_eq!(t.completed as usize, sizes.len());
        let _ = (t.naks, t.slots);
    }
}

/// Hostile segments into a live responder (mid-WQE, start address learnt): random PSNs,
/// addresses, Last flags and payload lengths. The region is exactly `mem`, so a write
/// outside it would panic on the slice; none may happen, and the pool never leaks.
#[test]
fn hostile_segments_never_write_outside_the_region() {
    for design in [
        BitmapDesign::Ornic,
        BitmapDesign::MeloPlus,
        BitmapDesign::MpRdma,
    ] {
        let mut dice = Dice(0x0bad_5eed);
        let mut pool = BlockPool::new(8, 16);
        let mut mem = vec![0u8; 64 * 256];
        let mut resp = OooResponder::new(
            design,
            16,
            20,
            64,
            256,
            AckPolicy::Aggregated { turn_ps: 8 },
            0x4000,
            mem.len() as u64,
            1000,
        );
        resp.handle_segment(
            OooSegment::Write {
                psn: 1000,
                addr: Some(0x4000),
                last: false,
                payload: vec![1; 256],
            },
            &mut pool,
            &mut mem,
        );
        for i in 0..100_000u64 {
            let psn = match dice.below(3) {
                0 => 1000 + dice.below(400) as u32,
                1 => dice.next() as u32,
                _ => 1000u32.wrapping_sub(dice.below(100) as u32),
            };
            let addr = match dice.below(4) {
                0 => Some(dice.next()),
                1 => Some(0x4000 + dice.below(1 << 16)),
                _ => None,
            };
            let len = match dice.below(3) {
                0 => 256,
                1 => dice.below(600) as usize,
                _ => 0,
            };
            let seg = if dice.below(10) == 0 {
                OooSegment::Nak {
                    head: psn,
                    missing: dice.next(),
                }
            } else {
                OooSegment::Write {
                    psn,
                    addr,
                    last: dice.below(20) == 0,
                    payload: vec![(i & 0xff) as u8; len],
                }
            };
            resp.handle_segment(seg, &mut pool, &mut mem);
            while resp.poll_transmit(i).is_some() {}
        }
        assert!(pool.in_use() <= 8);
    }
}

/// Hostile ACKs and bitmap NAKs into a live requester: random PSNs, MSNs, flags and
/// bitmaps, interleaved with its transmissions and timeouts. It never panics, never sends a
/// packet outside the WQE it has in flight, and never resends a packet it has not sent.
#[test]
fn hostile_acks_and_naks_never_derail_the_requester() {
    let mut dice = Dice(0xacc_0bad);
    let pmtu = 256u32;
    let mut req = OooRequester::new(pmtu, 320, (50, 0), 7_000);
    for k in 0..40u64 {
        req.post_write(vec![k as u8; 1 + dice.below(64 * 256) as usize], k << 20);
    }
    let mut now = 0;
    for _ in 0..100_000 {
        now += 1;
        if let Some(OooSegment::Write {
            psn, payload, addr, ..
        }) = req.poll_transmit(now)
        {
            assert!(!payload.is_empty() && payload.len() <= pmtu as usize);
            assert!(psn.wrapping_sub(7_000) < 1 << 23, "psn {psn}");
            if let Some(a) = addr {
                assert!(a >> 20 < 40, "address {a:#x} outside every WQE");
            }
        }
        let base = 7_000u32.wrapping_add(dice.below(40 * 64) as u32);
        let seg = match dice.below(3) {
            0 => OooSegment::Ack {
                psn: if dice.below(2) == 0 {
                    base
                } else {
                    dice.next() as u32
                },
                msn: dice.next() as u32,
                start_learnt: dice.below(2) == 0,
            },
            1 => OooSegment::Nak {
                head: base,
                missing: dice.next(),
            },
            _ => OooSegment::Nak {
                head: dice.next() as u32,
                missing: u64::MAX,
            },
        };
        req.handle_segment(now, seg);
        req.handle_timeout(now);
        while req.poll_completion().is_some() {}
    }
}
