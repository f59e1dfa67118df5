//! Transport throughput per core: 4 KB RDMA WRITEs between two sans-IO transports over the
//! clean in-memory fabric (no timing model), in payload Gbps of wall-clock time. Both ends run
//! on the one core: requester segmentation, ICRC, responder checks and placement, ACKs.
//!
//! `cargo bench -p rnic-bench --bench transport`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rnic_loopback::pair::{Pair, QpParams, A, B};
use rnic_loopback::Impairments;
use rnic_transport::{Access, RemoteAddr, SendWr, Sge};

const MSG: u32 = 4096;
const BATCH: u64 = 256;
const BASE: u64 = 0x1000_0000;

fn setup() -> (Pair, u32, u32, u32) {
    let mut pair = Pair::new(1, Impairments::clean(1_000_000));
    let len = u64::from(MSG) * BATCH;
    let ka = pair.reg_mr(A, BASE, len, Access::all()).unwrap();
    let kb = pair.reg_mr(B, BASE, len, Access::all()).unwrap();
    pair.nodes[A].mem.bytes.fill_pattern(BASE, len, 7);
    let params = QpParams {
        pmtu: 4096,
        sq_depth: BATCH as u32,
        ..QpParams::default()
    };
    let (qa, _) = pair.connect(params).unwrap();
    (pair, qa, ka.lkey, kb.rkey)
}

fn writes(c: &mut Criterion) {
    let (mut pair, qa, lkey, rkey) = setup();
    let mut group = c.benchmark_group("transport");
    group.throughput(Throughput::Bytes(u64::from(MSG) * BATCH));
    group.bench_function("write_4k_batch_256", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                let addr = BASE + i * u64::from(MSG);
                let sge = Sge {
                    addr,
                    len: MSG,
                    lkey,
                };
                let wr = SendWr::write(i, vec![sge], RemoteAddr { va: addr, rkey });
                pair.post_send(A, qa, wr).unwrap();
            }
            pair.run(u64::MAX);
            let done = pair.completions(A);
            assert_eq!(done.len() as u64, BATCH);
        })
    });
    group.finish();
}

criterion_group!(benches, writes);
criterion_main!(benches);
