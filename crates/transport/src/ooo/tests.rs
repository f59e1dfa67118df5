//! Unit and property tests of the receive bitmaps and the sizing.

use super::sizing::{nearest_pow2, Sizing, SizingInputs};
use super::*;
use proptest::prelude::*;

const DESIGNS: [BitmapDesign; 5] = BitmapDesign::ALL;

fn fresh(d: BitmapDesign) -> (Box<dyn ReceiveBitmap>, BlockPool) {
    (d.build(16, 20, 64, 2), BlockPool::new(64, 16))
}

#[test]
fn in_order_stream_completes_and_returns_every_block() {
    for d in DESIGNS {
        let (mut b, mut pool) = fresh(d);
        for psn in 0..1000 {
            assert!(
                matches!(b.record(psn, &mut pool), Recorded::New { .. }),
                "{d:?}"
            );
        }
        assert_eq!(b.head(), 1000, "{d:?}");
        b.release(&mut pool);
        assert_eq!(pool.in_use(), 0, "{d:?}");
    }
}

#[test]
fn ornic_frees_full_blocks_behind_a_hole() {
    let (mut b, mut pool) = fresh(BitmapDesign::Ornic);
    // PSN 1 lost; 0 and 2..80 arrive: blocks 1..4 fill, block 0 (hole) and 5 (partial) stay.
    for psn in (0..81).filter(|&p| p != 1) {
        b.record(psn, &mut pool);
    }
    assert_eq!(b.head(), 1);
    assert_eq!(b.blocks_held(), 2);
    assert_eq!(pool.in_use(), 2);
    assert_eq!(b.missing_mask(16, &pool), 1);
    assert!(matches!(
        b.record(1, &mut pool),
        Recorded::New { cycles: 1 }
    ));
    assert_eq!(b.head(), 81);
    assert_eq!(b.blocks_held(), 1);
}

#[test]
fn linked_list_keeps_full_blocks_behind_a_hole() {
    let (mut b, mut pool) = fresh(BitmapDesign::MeloPlus);
    for psn in (0..81).filter(|&p| p != 1) {
        b.record(psn, &mut pool);
    }
    assert_eq!(b.blocks_held(), 6);
    // Block 2 of 6 is in the middle: head pointer + two hops.
    assert_eq!(b.record(40, &mut pool), Recorded::Duplicate { cycles: 3 });
}

#[test]
fn left_caches_a_far_block_and_left_plus_walks_from_it() {
    for (d, second) in [(BitmapDesign::Left, 5), (BitmapDesign::LeftPlus, 2)] {
        let (mut b, mut pool) = fresh(d);
        b.record(0, &mut pool);
        b.record(16 * 8, &mut pool); // list of 9 blocks, PSN 1.. missing
        assert_eq!(b.record(16 * 3, &mut pool).cycles(), 4, "{d:?}"); // 3 hops: cached
        assert_eq!(b.record(16 * 3 + 1, &mut pool).cycles(), 1, "{d:?}");
        assert_eq!(b.record(16 * 4, &mut pool).cycles(), second, "{d:?}");
    }
}

#[test]
fn left_plus_walks_from_the_cache_pointer_in_either_direction() {
    // A 9-block list, head stuck at PSN 1; the cache moves to block 6 (a walk of 7 blocks).
    // A packet for block 5, one block before the cache, is walked to from the cache pointer
    // (cache block + one link: 2 cycles) by LEFT+, from the head (6 blocks) by LEFT.
    for (d, before_cache) in [(BitmapDesign::Left, 6), (BitmapDesign::LeftPlus, 2)] {
        let (mut b, mut pool) = fresh(d);
        b.record(0, &mut pool);
        b.record(16 * 8, &mut pool);
        assert_eq!(b.record(16 * 6, &mut pool).cycles(), 7, "{d:?}");
        assert_eq!(b.record(16 * 6 + 1, &mut pool).cycles(), 1, "{d:?}: cached");
        assert_eq!(b.record(16 * 5, &mut pool).cycles(), before_cache, "{d:?}");
    }
}

#[test]
fn left_threshold_counts_the_blocks_a_walk_reads() {
    // Four blocks, head stuck at PSN 1: block 1 is two blocks from the head pointer (head,
    // block 1), block 2 three. With the threshold at 2 blocks only the longer walk moves
    // LEFT's cache; MELO+ never caches.
    for (d, again) in [
        (BitmapDesign::MeloPlus, 3),
        (BitmapDesign::Left, 1),
        (BitmapDesign::LeftPlus, 1),
    ] {
        let (mut b, mut pool) = fresh(d);
        b.record(0, &mut pool);
        b.record(16 * 3, &mut pool);
        assert_eq!(b.record(16, &mut pool).cycles(), 2, "{d:?}");
        assert_eq!(b.record(17, &mut pool).cycles(), 2, "{d:?}: not cached");
        assert_eq!(b.record(32, &mut pool).cycles(), 3, "{d:?}");
        assert_eq!(b.record(33, &mut pool).cycles(), again, "{d:?}");
    }
}

#[test]
fn out_of_window_and_pool_exhaustion_degrade() {
    for d in DESIGNS {
        let mut b = d.build(16, 20, 64, 2);
        let mut pool = BlockPool::new(2, 16);
        let lim = b.limit();
        assert_eq!(b.record(lim, &mut pool), Recorded::OutOfWindow, "{d:?}");
        if d != BitmapDesign::MpRdma {
            b.record(0, &mut pool);
            b.record(20, &mut pool);
            assert_eq!(b.record(40, &mut pool), Recorded::PoolExhausted, "{d:?}");
            assert!(!b.contains(40, &pool));
        }
    }
}

#[test]
fn sizing_gives_the_papers_dimensions() {
    let s = Sizing::derive(&SizingInputs {
        link_gbps: 100.0,
        packet_bytes: 4096,
        mdd_ns: 20_000.0,
        rtt_ns: 90_000.0,
        block_bits: 16,
        qps: 2048,
        pool_blocks_per_qp: 2,
    });
    assert!((s.otd_exact - 61.035).abs() < 0.01 && s.otd == 64);
    assert!((s.bdp_exact - 274.66).abs() < 0.01 && s.bdp_window == 256);
    assert_eq!((s.bitmap_width, s.nodes, s.pool_blocks), (320, 20, 4096));
    assert_eq!((s.block_id_bits, s.node_bits), (12, 14));
    assert_eq!((s.pool_bits, s.node_array_bits), (65_536, 573_440));
    assert_eq!(nearest_pow2(0.3), 1);
    assert_eq!(nearest_pow2(3.0), 4);
}

proptest! {
    /// Any arrival order, with duplicates and drops, of any design: the bitmap holds exactly
    /// the PSNs that were accepted, the head is the first missing one, and resending the
    /// missing ones completes it with every block back in the pool.
    #[test]
    fn bitmap_tracks_exactly_what_arrived(
        d in 0usize..5,
        arrivals in proptest::collection::vec(0u32..400, 0..600),
    ) {
        let design = DESIGNS[d];
        let (mut b, mut pool) = (design.build(16, 20, 64, 2), BlockPool::new(40, 16));
        let mut got = std::collections::BTreeSet::new();
        for &p in &arrivals {
            let r = b.record(p, &mut pool);
            if matches!(r, Recorded::New { .. }) {
                prop_assert!(got.insert(p));
            }
            if r.accepted() {
                prop_assert!(b.contains(p, &pool));
            }
        }
        let head = (0..).find(|p| !got.contains(p)).unwrap();
        prop_assert_eq!(b.head(), head);
        for p in head..400 {
            prop_assert_eq!(b.contains(p, &pool), got.contains(&p) , "psn {}", p);
        }
        let mut p = b.head();
        while p < 400 {
            let r = b.record(p, &mut pool);
            prop_assert!(r.accepted(), "{:?} at {}", r, p);
            p = b.head().max(p + 1);
        }
        prop_assert_eq!(b.head(), 400.max(head));
        b.release(&mut pool);
        prop_assert_eq!(pool.in_use(), 0);
    }
}

#[test]
fn sizing_stays_bounded_on_extreme_inputs() {
    let s = Sizing::derive(&SizingInputs {
        link_gbps: 10_000.0,
        packet_bytes: 256,
        mdd_ns: 1e10,
        rtt_ns: 1e10,
        block_bits: 1,
        qps: 65_536,
        pool_blocks_per_qp: 64,
    });
    assert_eq!(s.bitmap_width, 2 * super::sizing::MAX_WINDOW);
    assert_eq!(s.pool_blocks, 1 << 22);
}

/// The address the responder would write a packet at, asked before the packet arrives (the
/// NIC translates a Spot packet's page from it): known once an FSpot taught the start, and
/// only for PSNs of the current WQE.
#[test]
fn place_addr_follows_the_learnt_start_within_the_wqe() {
    let mut pool = BlockPool::new(8, 16);
    let base = 0x4000u64;
    let mut mem = vec![0u8; 16 * 256];
    let mut resp = OooResponder::new(
        BitmapDesign::Ornic,
        16,
        20,
        64,
        256,
        AckPolicy::PerPacket,
        base,
        mem.len() as u64,
        100,
    );
    assert_eq!(resp.place_addr(100), None, "start not learnt yet");
    let write = |psn: u32, addr: Option<u64>, last: bool| OooSegment::Write {
        psn,
        addr,
        last,
        payload: vec![psn as u8; 256],
    };
    resp.handle_segment(write(102, Some(base + 2 * 256), false), &mut pool, &mut mem);
    assert_eq!(resp.place_addr(105), Some(base + 5 * 256));
    assert_eq!(resp.place_addr(99), None, "behind the WQE");
    resp.handle_segment(write(109, None, true), &mut pool, &mut mem);
    assert_eq!(resp.place_addr(109), Some(base + 9 * 256));
    assert_eq!(resp.place_addr(110), None, "beyond the WQE's Last packet");
}
