//! Frames parsed and ICRC-verified per second, by payload size; and the cost of the header
//! peeks a timing model or switch makes per frame instead (`-- peek` runs only those).
//!
//! `cargo bench -p rnic-bench --bench wire_parse`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rnic_loopback::corpus::{random_roce, CORPUS_ADDR};
use rnic_sim::Rng;
use rnic_wire::{peek_bth, peek_roce, FrameRepr, Opcode};

/// A frame of `opcode` with `payload_len` bytes of payload (if the opcode carries any) and random
/// header fields, from a fixed seed.
fn frame(opcode: Opcode, payload_len: usize) -> Vec<u8> {
    let mut rng = Rng::new(1);
    let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
    let roce = random_roce(&mut rng, opcode, 0x11, 7, &payload);
    let mut frame = Vec::new();
    FrameRepr {
        addr: CORPUS_ADDR,
        ip_ident: 1,
        roce,
    }
    .emit(&mut frame);
    frame
}

fn parse_verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse_and_verify_icrc");
    for payload_len in [64usize, 1024, 4096] {
        let frame = frame(Opcode::RcWriteMiddle, payload_len);
        group.throughput(Throughput::Elements(1));
        group.bench_with_input(
            BenchmarkId::new("payload_bytes", payload_len),
            &frame,
            |b, f| b.iter(|| FrameRepr::parse(std::hint::black_box(f)).expect("valid frame")),
        );
    }
    group.finish();
}

/// Peeks cost the same whatever the payload size (no ICRC); measured on the opcodes whose
/// extension headers they read.
fn peek(c: &mut Criterion) {
    let mut group = c.benchmark_group("peek");
    group.throughput(Throughput::Elements(1));
    let cases = [
        ("write_first_4096", frame(Opcode::RcWriteFirst, 4096)),
        ("read_request", frame(Opcode::RcReadRequest, 0)),
        ("fetch_add", frame(Opcode::RcFetchAdd, 0)),
        ("ack", frame(Opcode::RcAck, 0)),
    ];
    for (name, f) in &cases {
        group.bench_with_input(BenchmarkId::new("peek_roce", name), f, |b, f| {
            b.iter(|| peek_roce(std::hint::black_box(f)).expect("valid frame"))
        });
    }
    let (name, f) = &cases[0];
    group.bench_with_input(BenchmarkId::new("peek_bth", name), f, |b, f| {
        b.iter(|| peek_bth(std::hint::black_box(f)).expect("valid frame"))
    });
    group.finish();
}

criterion_group!(benches, parse_verify, peek);
criterion_main!(benches);
