//! Acceptance 1 of the transport: random operation mixes under random impairments (up to 10 %
//! loss, reordering, duplication, corruption). The oracle in `workload::run` checks every byte
//! the transport writes as it lands (at an address some operation targets, with the value that
//! operation must leave there), bytes at the target after the run, per-QP completion order,
//! single completion, untouched memory outside MRs, and termination with success or the spec's
//! error completions.

use proptest::prelude::*;
use rnic_loopback::workload::{random_workload, run};
use rnic_loopback::Impairments;

fn impairments() -> impl Strategy<Value = Impairments> {
    (
        0.0..=0.10f64,
        0.0..=0.05f64,
        0.0..=0.20f64,
        0u64..=5_000_000,
        0.0..=0.02f64,
        100_000u64..=2_000_000,
    )
        .prop_map(
            |(loss, duplicate, reorder, window, corrupt, delay)| Impairments {
                delay_ps: delay,
                loss,
                duplicate,
                reorder,
                reorder_window_ps: window,
                corrupt,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_ops_under_impairments_keep_every_promise(
        seed in any::<u64>(),
        n_ops in 1usize..40,
        impair in impairments(),
    ) {
        let w = random_workload(seed, n_ops, impair);
        let out = run(&w).map_err(|e| TestCaseError::fail(format!("{e}\nworkload: {w:?}")))?;
        prop_assert_eq!(out.succeeded + out.errors.values().sum::<usize>(), n_ops);
        // Everything verified after the run was also checked as it landed (a compare-and-swap
        // that does not swap writes nothing at its target).
        prop_assert!(out.landed_bytes >= out.verified_bytes.saturating_sub(16 * n_ops as u64));
    }
}

#[test]
fn ten_percent_loss_still_delivers_every_byte() {
    let impair = Impairments {
        delay_ps: 1_000_000,
        loss: 0.10,
        duplicate: 0.02,
        reorder: 0.1,
        reorder_window_ps: 3_000_000,
        corrupt: 0.01,
    };
    let (mut total, mut retransmitted, mut naks, mut timeouts, mut landed) = (0, 0, 0, 0, 0);
    for seed in 0..10 {
        let w = random_workload(seed, 40, impair.clone());
        let out = run(&w).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(out.errors.is_empty(), "seed {seed}: {out:?}");
        total += out.verified_bytes;
        retransmitted += out.retransmitted;
        naks += out.naks;
        timeouts += out.timeouts;
        landed += out.landed_bytes;
    }
    assert!(total > 1_000_000);
    // Retransmitted payloads land again: more bytes were checked landing than verified.
    assert!(
        landed > total,
        "{landed} bytes checked landing, {total} verified"
    );
    // The impairments must really have exercised recovery, or this test proves nothing.
    assert!(
        retransmitted > 100 && naks > 10 && timeouts > 10,
        "{retransmitted} {naks} {timeouts}"
    );
}

#[test]
fn the_oracle_catches_one_wrong_byte() {
    use rnic_loopback::workload::{run_with, OpKind, OpSpec, Workload, MR_BASE};
    use rnic_transport::Memory;
    let w = Workload {
        seed: 9,
        impair: Impairments::clean(1000),
        params: Default::default(),
        qp_pairs: 1,
        ops: vec![OpSpec {
            kind: OpKind::Write,
            len: 100,
            from: 0,
            qp: 0,
        }],
    };
    assert!(run(&w).is_ok());
    // The first WRITE lands at the start of node B's region; flip its 50th byte.
    let err = run_with(&w, |pair| {
        let mut b = [0u8];
        pair.nodes[1].mem.bytes.read(MR_BASE + 49, &mut b);
        pair.nodes[1].mem.bytes.write(MR_BASE + 49, &[b[0] ^ 0xff]);
    })
    .unwrap_err();
    assert!(err.contains("byte 49"), "{err}");
}

/// A payload that differs from what its operation must leave is caught as it lands, even when
/// the final buffers agree: here the WRITE's source changes after the oracle learned it, so
/// source and target match at the end, but the landed bytes are not the operation's.
#[test]
fn the_landing_oracle_catches_a_wrong_payload_as_it_lands() {
    use rnic_loopback::workload::{run_with_hooks, OpKind, OpSpec, Workload, MR_BASE};
    use rnic_transport::Memory;
    let w = Workload {
        seed: 3,
        impair: Impairments::clean(1000),
        params: Default::default(),
        qp_pairs: 1,
        ops: vec![OpSpec {
            kind: OpKind::Write,
            len: 3000,
            from: 0,
            qp: 0,
        }],
    };
    let clean = run(&w).unwrap();
    assert_eq!(clean.landed_bytes, 3000);
    // Node A's source of the first WRITE starts at its region's base; change byte 2100.
    let err = run_with_hooks(
        &w,
        |pair| {
            let mut b = [0u8];
            pair.nodes[0].mem.bytes.read(MR_BASE + 2100, &mut b);
            pair.nodes[0]
                .mem
                .bytes
                .write(MR_BASE + 2100, &[b[0] ^ 0x5a]);
        },
        |_| {},
    )
    .unwrap_err();
    assert!(
        err.contains(&format!("{:#x}", MR_BASE + 2100)) && err.contains("must leave"),
        "{err}"
    );
}
