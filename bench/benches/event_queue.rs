//! Event-queue throughput: the hold model.
//!
//! A queue is filled with `pending` events, then each step pops the earliest
//! event and pushes one at `now + delay`, so the pending count stays constant
//! (the classic benchmark for simulation event sets). Events carry a 24-byte
//! payload, like the simulator's. Throughput is in steps (one pop plus one
//! push) per second. [`EventQueue`] (timing wheel) is compared with
//! [`HeapQueue`] (`std` binary heap) at 1 K, 64 K and 1 M pending, with
//! delays uniform over 0..10 µs in picoseconds, the same with far (1 s)
//! timeouts armed on 0.1 % of the steps, and two skewed mixes.
//!
//! Run: `cargo bench -p rnic-bench --bench event_queue` (add e.g.
//! `-- hold_uniform` to filter). `crates/sim/examples/hold.rs` runs the same
//! model without criterion and reports on-CPU rates, which are steadier on
//! a shared machine.
//!
//! Measured on the project's 2-core reference machine (shared with other
//! sessions' builds at the time, so expect ±15 %), M steps/s:
//!
//! | mix                    | pending | EventQueue | HeapQueue |
//! |------------------------|--------:|-----------:|----------:|
//! | uniform 0..10 µs       |     1 K |       41.7 |      20.7 |
//! | uniform 0..10 µs       |    64 K |       39.6 |       7.5 |
//! | uniform 0..10 µs       |     1 M |       25.1 |      0.96 |
//! | + 0.1 % 1 s timeouts   |    64 K |       31.3 |       5.2 |
//! | + 0.1 % 1 s timeouts   |     1 M |       21.6 |      1.1  |
//! | 1 ns cycles, 0..64     |    64 K |       34.3 |       7.6 |
//! | 1 ns cycles, 0..64     |     1 M |       26.0 |      0.93 |
//! | half zero delays       |    64 K |       25.9 |       7.4 |
//! | half zero delays       |     1 M |       22.8 |      1.4  |

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rnic_sim::{EventQueue, HeapQueue, Rng, TimeQueue};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// 24 bytes, the size of a typical simulator event.
type Payload = [u64; 3];

/// How the delay of each new event is drawn.
#[derive(Clone, Copy)]
enum Mix {
    /// Uniform over 0..10 µs, in picoseconds.
    Uniform,
    /// Uniform, and 0.1 % of the steps also arm a 1 s timeout. Timeouts
    /// rarely fire (they are cancelled in real runs, and 1 s is never reached
    /// here), so the pending set grows by 0.1 % per step, in the overflow heap.
    FarTimeouts,
    /// Whole 1 ns cycles, 0..64 of them (many equal times).
    Cycles,
    /// Half of the delays zero, the rest uniform (same-time bursts).
    HalfZero,
}

impl Mix {
    fn delay(self, r: &mut Rng) -> u64 {
        match self {
            Mix::Cycles => r.gen_below(64) * 1_000,
            Mix::HalfZero if r.gen_bool(0.5) => 0,
            _ => r.gen_below(10_000_000),
        }
    }
}

/// A queue in hold-model steady state.
struct Hold<Q> {
    q: Q,
    rng: Rng,
    mix: Mix,
    next_id: u64,
}

impl<Q: TimeQueue<Payload>> Hold<Q> {
    fn new(mut q: Q, pending: usize, mix: Mix) -> Self {
        let mut rng = Rng::new(42);
        for i in 0..pending as u64 {
            q.push(mix.delay(&mut rng), [i; 3]);
        }
        let mut h = Hold {
            q,
            rng,
            mix,
            next_id: pending as u64,
        };
        // Run once through the pending set so the queue reaches its
        // steady-state shape before anything is timed.
        h.run(pending as u64 * 2);
        h
    }

    #[inline]
    fn run(&mut self, steps: u64) {
        for _ in 0..steps {
            let (t, ev) = self.q.pop().unwrap_or((0, [0; 3]));
            black_box(ev);
            let d = self.mix.delay(&mut self.rng);
            self.q.push(t + d, [self.next_id; 3]);
            if matches!(self.mix, Mix::FarTimeouts) && self.rng.gen_bool(0.001) {
                self.q.push(t + 1_000_000_000_000, [self.next_id; 3]);
            }
            self.next_id += 1;
        }
    }
}

fn bench_hold(c: &mut Criterion, group: &str, mix: Mix, sizes: &[usize]) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(1));
    g.sample_size(20);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for &pending in sizes {
        let mut wheel = Hold::new(EventQueue::new(), pending, mix);
        g.bench_function(BenchmarkId::new("EventQueue", pending), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                wheel.run(iters);
                start.elapsed()
            })
        });
        drop(wheel);
        let mut heap = Hold::new(HeapQueue::new(), pending, mix);
        g.bench_function(BenchmarkId::new("HeapQueue", pending), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                heap.run(iters);
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn event_queue(c: &mut Criterion) {
    let sizes = [1_000, 65_536, 1_000_000];
    bench_hold(c, "hold_uniform_10us", Mix::Uniform, &sizes);
    bench_hold(c, "hold_far_timeouts", Mix::FarTimeouts, &sizes[1..]);
    bench_hold(c, "hold_cycles", Mix::Cycles, &sizes[1..]);
    bench_hold(c, "hold_half_zero", Mix::HalfZero, &sizes[1..]);
}

criterion_group!(benches, event_queue);
criterion_main!(benches);
