//! Property tests: the timing wheel pops exactly what the reference heap pops.
//!
//! Any interleaving of pushes and pops, with delays drawn from skewed mixes
//! (zero, tiny, within a bucket, around bucket and window boundaries, microseconds,
//! 10^12 ps, and times near `u64::MAX`), must give the same `(time, payload)`
//! sequence from [`EventQueue`] and [`HeapQueue`]. The payload is the push
//! index, i.e. the insertion sequence, so equal-time FIFO order is checked
//! too. Small wheel geometries are included so wrap-around, window advance and
//! overflow refill happen constantly.

use proptest::prelude::*;
use rnic_sim::{EventQueue, Geometry, HeapQueue, TimeQueue};

#[derive(Clone, Debug)]
enum Op {
    /// Push `count` events at `now + delay` (count > 1: a same-time burst).
    Push { delay: u64, count: u8 },
    /// Push again at the time of the `back`-th most recent push (if it is
    /// not in the past): equal times arriving by different paths (overflow
    /// refill, coarse bucket, open bucket) must still come out FIFO.
    PushAgain { back: u16 },
    /// Pop `n` events in a row.
    Pop { n: u8 },
    /// `pop_at_or_before(now + limit)`.
    PopUntil { limit: u64 },
}

fn delay() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => Just(0u64),
        3 => 0u64..4,
        3 => 0u64..1_024,
        2 => (1u64..8).prop_map(|k| (1u64 << (k * 2)) - 1), // just below 2^k boundaries
        2 => (1u64..8).prop_map(|k| 1u64 << (k * 2)),       // exactly on them
        4 => 0u64..10_000_000,                              // 0..10 µs
        1 => Just(1_000_000_000_000u64),                    // 1 s
        1 => 1_000_000_000_000u64..10_000_000_000_000,
        1 => any::<u64>(),                                  // anything, saturating
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (delay(), 1u8..2).prop_map(|(delay, count)| Op::Push { delay, count }),
        1 => (delay(), 2u8..20).prop_map(|(delay, count)| Op::Push { delay, count }),
        3 => any::<u16>().prop_map(|back| Op::PushAgain { back }),
        5 => (1u8..4).prop_map(|n| Op::Pop { n }),
        1 => delay().prop_map(|limit| Op::PopUntil { limit }),
    ]
}

fn geometry() -> impl Strategy<Value = Option<Geometry>> {
    prop_oneof![
        1 => Just(None),
        3 => (0u32..13, 6u32..9, 6u32..9).prop_map(|(f, w, c)| Some(Geometry {
            fine_width_log2: f,
            fine_buckets_log2: w,
            coarse_buckets_log2: c,
        })),
    ]
}

fn run(ops: &[Op], geometry: Option<Geometry>) -> Result<(), TestCaseError> {
    let mut wheel: EventQueue<u64> = match geometry {
        Some(g) => EventQueue::with_geometry(g),
        None => EventQueue::new(),
    };
    let mut heap: HeapQueue<u64> = HeapQueue::new();
    let mut next_id = 0u64;
    let mut pushed: Vec<u64> = Vec::new();
    for op in ops {
        match *op {
            Op::Push { delay, count } => {
                let t = heap.now().saturating_add(delay);
                for _ in 0..count {
                    wheel.push(t, next_id);
                    heap.push(t, next_id);
                    next_id += 1;
                }
                pushed.push(t);
            }
            Op::PushAgain { back } => {
                if let Some(&t) = pushed
                    .iter()
                    .rev()
                    .nth(usize::from(back) % pushed.len().max(1))
                {
                    let t = t.max(heap.now());
                    wheel.push(t, next_id);
                    heap.push(t, next_id);
                    next_id += 1;
                    pushed.push(t);
                }
            }
            Op::Pop { n } => {
                for _ in 0..n {
                    prop_assert_eq!(wheel.pop(), heap.pop());
                }
            }
            Op::PopUntil { limit } => {
                let limit = heap.now().saturating_add(limit);
                prop_assert_eq!(wheel.pop_at_or_before(limit), heap.pop_at_or_before(limit));
            }
        }
        prop_assert_eq!(wheel.peek_time(), heap.peek_time());
        prop_assert_eq!(wheel.len(), heap.len());
        prop_assert_eq!(wheel.now(), heap.now());
    }
    while let Some(h) = heap.pop() {
        prop_assert_eq!(wheel.pop(), Some(h));
    }
    prop_assert_eq!(wheel.pop(), None);
    prop_assert!(wheel.is_empty());
    prop_assert_eq!(wheel.clamped_pushes(), 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn wheel_matches_heap(ops in prop::collection::vec(op(), 0..600), g in geometry()) {
        run(&ops, g)?;
    }

    /// Push-heavy runs build up large pending sets before draining.
    #[test]
    fn wheel_matches_heap_push_heavy(
        pushes in prop::collection::vec((delay(), 1u8..4), 0..2_000),
        g in geometry(),
    ) {
        let mut ops: Vec<Op> = Vec::new();
        for (i, (delay, count)) in pushes.into_iter().enumerate() {
            ops.push(Op::Push { delay, count });
            if i % 7 == 0 {
                ops.push(Op::Pop { n: 1 });
            }
        }
        run(&ops, g)?;
    }
}

/// Generic driver used to show both queues satisfy the same trait.
fn hold_model<Q: TimeQueue<u64>>(
    q: &mut Q,
    seed: u64,
    pending: usize,
    ops: usize,
) -> Vec<(u64, u64)> {
    let mut r = rnic_sim::Rng::new(seed);
    let mut id = 0;
    let delay = |r: &mut rnic_sim::Rng| {
        if r.gen_bool(0.001) {
            1_000_000_000_000
        } else if r.gen_bool(0.2) {
            0
        } else {
            r.gen_below(10_000_000)
        }
    };
    for _ in 0..pending {
        q.push(delay(&mut r), id);
        id += 1;
    }
    let mut out = Vec::with_capacity(ops);
    for _ in 0..ops {
        let (t, ev) = q.pop().expect("hold model never drains");
        out.push((t, ev));
        q.push(t + delay(&mut r), id);
        id += 1;
    }
    out
}

#[test]
fn hold_model_with_far_timeouts_matches_heap() {
    for (pending, ops) in [(1, 10_000), (100, 100_000), (20_000, 200_000)] {
        let a = hold_model(&mut EventQueue::new(), 5, pending, ops);
        let b = hold_model(&mut HeapQueue::new(), 5, pending, ops);
        assert!(a == b, "diverged at pending={pending}");
    }
}

/// `retain_far` drops exactly the far events it is told to and leaves every other event
/// popping in its old order (ties included), whether near (in the wheel) or far.
#[test]
fn retain_far_drops_only_the_rejected_far_events_and_keeps_the_order() {
    let window = Geometry::DEFAULT.window_ps();
    let mut q = EventQueue::new();
    let mut expect = Vec::new();
    for i in 0u64..2_000 {
        // Near events, far events (some at equal times), pushed interleaved.
        let t = match i % 4 {
            0 => i * 1_000,
            1 => window * 4 + (i % 7) * 1_000,
            2 => window * 9,
            _ => window / 2 + i,
        };
        q.push(t, i);
        // Odd far events are dropped.
        let far = t >= window;
        if !(far && i % 2 == 1) {
            expect.push((t, i));
        }
    }
    let dropped = q.retain_far(|&i| i % 2 == 0);
    assert_eq!(dropped, 500, "the odd events at window * 4 + ...");
    expect.sort(); // by (time, push index), i.e. (time, insertion sequence)
    let mut got = Vec::new();
    while let Some(e) = q.pop() {
        got.push(e);
    }
    assert_eq!(got, expect);
}
