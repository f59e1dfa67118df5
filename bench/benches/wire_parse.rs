//! Frames parsed and ICRC-verified per second, by payload size.
//!
//! `cargo bench -p rnic-bench --bench wire_parse`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rnic_loopback::corpus::{random_roce, CORPUS_ADDR};
use rnic_sim::Rng;
use rnic_wire::{FrameRepr, Opcode};

fn parse_verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_and_verify_icrc");
    for payload_len in [64usize, 1024, 4096] {
        let mut rng = Rng::new(1);
        let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
        let roce = random_roce(&mut rng, Opcode::RcWriteMiddle, 0x11, 7, &payload);
        let mut frame = Vec::new();
        FrameRepr {
            addr: CORPUS_ADDR,
            ip_ident: 1,
            roce,
        }
        .emit(&mut frame);
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(
            BenchmarkId::new("payload_bytes", payload_len),
            &frame,
            |b, f| b.iter(|| FrameRepr::parse(std::hint::black_box(f)).expect("valid frame")),
        );
    }
    group.finish();
}

criterion_group!(benches, parse_verify);
criterion_main!(benches);
