//! Quick hold-model timer for trying [`EventQueue`] geometries and delay
//! mixes without criterion's overhead (the reference numbers come from
//! `bench/benches/event_queue.rs`).
//!
//! ```text
//! cargo run --release -p rnic-sim --example hold -- PENDING MIX [F W C]...
//! ```
//! `MIX` is one of `uniform` (0..10 µs), `far` (uniform, and 0.1 % of the
//! steps also arm a 1 s timeout that never fires during the run),
//! `zero` (half the delays 0, the rest uniform), `same` (all delays 0),
//! `cycles` (whole 1 ns cycles, 0..64), `bimodal` (1 ns or 1 ms).
//! Each `F W C` triple is a geometry (fine width log2 ps, fine buckets log2,
//! coarse buckets log2); with none, the default geometry and `HeapQueue`
//! are timed. Rates use on-CPU time where Linux provides it, since the
//! machine may be shared.

use rnic_sim::{EventQueue, Geometry, HeapQueue, Rng, TimeQueue};
use std::time::Instant;

/// 24-byte payload, the size of a typical simulator event.
type Payload = [u64; 3];

fn delay(mix: &str, r: &mut Rng) -> u64 {
    match mix {
        "zero" if r.gen_bool(0.5) => 0,
        "same" => 0,
        "cycles" => r.gen_below(64) * 1_000,
        "bimodal" if r.gen_bool(0.5) => 1_000,
        "bimodal" => 1_000_000_000,
        _ => r.gen_below(10_000_000),
    }
}

fn hold<Q: TimeQueue<Payload>>(q: &mut Q, pending: usize, mix: &str, ops: u64) -> f64 {
    let mut r = Rng::new(1);
    for i in 0..pending as u64 {
        q.push(delay(mix, &mut r), [i; 3]);
    }
    let mut check = 0u64;
    let mut step = |q: &mut Q, i: u64| {
        let (t, ev) = q.pop().unwrap_or((0, [0; 3]));
        check = check.wrapping_add(ev[0]);
        q.push(t + delay(mix, &mut r), [i; 3]);
        // Timeouts are armed alongside normal events and (within a run)
        // never fire: the pending set grows by 0.1 % per step.
        if mix == "far" && r.gen_bool(0.001) {
            q.push(t + 1_000_000_000_000, [i; 3]);
        }
    };
    // Warm up first so the queue reaches its steady-state shape.
    for i in 0..ops.min(pending as u64 * 2) {
        step(q, i);
    }
    let start = Instant::now();
    let cpu_start = thread_cpu_ns();
    for i in 0..ops {
        step(q, i);
    }
    let elapsed = match (cpu_start, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
        _ => start.elapsed().as_secs_f64(),
    };
    std::hint::black_box(check);
    ops as f64 / elapsed / 1e6
}

/// This thread's on-CPU time in ns (Linux `schedstat`), if available.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pending: usize = args
        .first()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mix = args.get(1).map_or("uniform", String::as_str);
    let ops = 20_000_000u64;
    let geoms: Vec<Geometry> = args[2.min(args.len())..]
        .chunks(3)
        .filter_map(|c| {
            Some(Geometry {
                fine_width_log2: c.first()?.parse().ok()?,
                fine_buckets_log2: c.get(1)?.parse().ok()?,
                coarse_buckets_log2: c.get(2)?.parse().ok()?,
            })
        })
        .collect();
    if geoms.is_empty() {
        let rate = hold(&mut EventQueue::new(), pending, mix, ops);
        println!("pending {pending} {mix}: EventQueue {rate:.1} M events/s");
        let heap_ops = if pending >= 100_000 { 3_000_000 } else { ops };
        let rate = hold(&mut HeapQueue::new(), pending, mix, heap_ops);
        println!("pending {pending} {mix}: HeapQueue {rate:.1} M events/s");
    }
    for g in geoms {
        let mut q = EventQueue::with_geometry(g);
        let rate = hold(&mut q, pending, mix, ops);
        println!(
            "pending {pending} {mix}: 2^{} ps x 2^{} x 2^{}: {rate:.1} M events/s (overflow {})",
            g.fine_width_log2,
            g.fine_buckets_log2,
            g.coarse_buckets_log2,
            q.overflow_len()
        );
    }
}
