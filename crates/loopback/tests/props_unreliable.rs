//! The UC and UD counterpart of `props_rc.rs`: random SEND/WRITE mixes (UD: SENDs up to the
//! PMTU) over a seeded fabric with loss, reordering, corruption and (UC) duplication. The
//! services resend nothing, so the promises are: nothing outside an MR is read or written
//! (`GuardedMemory` checks every access); every WRITE byte is checked as it lands (a WRITE
//! abandoned after a lost packet may leave part of its target written, but only with the
//! right bytes); every receive that completes holds exactly a message's bytes (after the
//! 40-byte GRH area on UD); the receivers never take more messages than were sent, and
//! what they did not take is what the counters say was lost; every send completes, the run
//! ends by itself (no timer is ever armed), the QPs stay in RTS; on a clean fabric
//! everything arrives.

use proptest::prelude::*;
use rnic_loopback::pair::{Pair, QpParams, A, B};
use rnic_loopback::Impairments;
use rnic_transport::{
    Access, Memory, QpState, RecvWr, RemoteAddr, SendWr, ServiceType, Sge, WcOpcode, WcStatus,
};

const BASE: u64 = 0x1000_0000;
const LEN: u64 = 1 << 20;
const PMTU: u32 = 1024;
/// WRITE i: source on A and target on B at `WRITES + i * SLOT`.
const WRITES: u64 = BASE + 0x1_0000;
/// RECV j on B at `RECVS + j * SLOT`.
const RECVS: u64 = BASE + 0x8_0000;
const SLOT: u64 = 0x1000;
/// Every SEND sends a prefix of A's bytes at `BASE`, so any SEND may land in any RECV.
const SEND_SRC: u64 = BASE;

#[derive(Debug, Clone)]
struct Outcome {
    sent: u64,
    received_sends: u64,
    received_total: u64,
    clean: bool,
}

fn run(
    seed: u64,
    service: ServiceType,
    ops: &[(bool, u32)],
    impair: Impairments,
) -> Result<Outcome, String> {
    let clean = impair.loss == 0.0 && impair.corrupt == 0.0 && impair.reorder == 0.0;
    let mut pair = Pair::new(seed, impair);
    let ud = service == ServiceType::Ud;
    let e = |e: rnic_transport::VerbsError| e.to_string();
    let ka = pair.reg_mr(A, BASE, LEN, Access::all()).map_err(e)?;
    let kb = pair.reg_mr(B, BASE, LEN, Access::all()).map_err(e)?;
    pair.nodes[A].mem.bytes.fill_pattern(BASE, LEN, seed | 1);
    let (qa, qb) = pair
        .connect_service(
            QpParams {
                pmtu: PMTU,
                ..QpParams::default()
            },
            service,
            0x1111_1111,
        )
        .map_err(e)?;
    let n_sends = ops.iter().filter(|o| !o.0).count() as u64;
    let mut src = vec![0u8; SLOT as usize];
    pair.nodes[A].mem.bytes.read(SEND_SRC, &mut src);
    for j in 0..n_sends {
        if !ud {
            // UC: any SEND may land in any RECV, always a prefix of the same bytes, so
            // every byte placed in a RECV is checked as it lands too. (UD's GRH area
            // differs per packet; its receives are checked when they complete.)
            pair.nodes[B]
                .mem
                .expect_landing(RECVS + j * SLOT, src.clone());
        }
        let r = RecvWr::new(
            j,
            vec![Sge {
                addr: RECVS + j * SLOT,
                len: SLOT as u32,
                lkey: kb.lkey,
            }],
        );
        pair.post_recv(B, qb, r).map_err(e)?;
    }
    for (i, &(write, len)) in ops.iter().enumerate() {
        let at = WRITES + i as u64 * SLOT;
        let wr = if write {
            let mut want = vec![0; len as usize];
            pair.nodes[A].mem.bytes.read(at, &mut want);
            pair.nodes[B].mem.expect_landing(at, want);
            SendWr::write(
                i as u64,
                vec![Sge {
                    addr: at,
                    len,
                    lkey: ka.lkey,
                }],
                RemoteAddr {
                    va: at,
                    rkey: kb.rkey,
                },
            )
        } else {
            SendWr::send(
                i as u64,
                vec![Sge {
                    addr: SEND_SRC,
                    len,
                    lkey: ka.lkey,
                }],
            )
        };
        pair.post_send(A, qa, wr).map_err(e)?;
    }
    // No retransmission timer exists: the run ends when the fabric is empty.
    if !pair.run(u64::MAX) {
        return Err("the run did not end".into());
    }
    for n in [A, B] {
        if pair.nodes[n].dev.poll_timeout().is_some() {
            return Err(format!("node {n} armed a timer"));
        }
        let v = pair.nodes[n].mem.violations();
        if !v.is_empty() {
            return Err(format!("node {n}: accesses outside every MR: {v:?}"));
        }
    }
    if let Some(b) = pair.nodes[B].mem.bad_landings().first() {
        return Err(format!("a WRITE byte landed wrong: {b:?}"));
    }
    let sender = pair.completions(A);
    if sender.len() != ops.len() || sender.iter().any(|c| c.status != WcStatus::Success) {
        return Err(format!("every send completes at transmission: {sender:?}"));
    }
    let grh = if ud { 40 } else { 0 };
    let mut received_sends = 0;
    for c in pair.completions(B) {
        if c.status != WcStatus::Success || c.opcode != WcOpcode::Recv {
            return Err(format!("unexpected receive completion {c:?}"));
        }
        received_sends += 1;
        let len = c.byte_len as usize - grh;
        let mut got = vec![0u8; len];
        pair.nodes[B]
            .mem
            .bytes
            .read(RECVS + c.wr_id * SLOT + grh as u64, &mut got);
        if got != src[..len] {
            return Err(format!(
                "receive {} holds bytes no message carried",
                c.wr_id
            ));
        }
        if ud && c.src_qp != Some(qa) {
            return Err(format!("UD receive without the source QP: {c:?}"));
        }
    }
    for (n, q) in [(A, qa), (B, qb)] {
        if pair.nodes[n].dev.qp_state(q) != Some(QpState::Rts) {
            return Err(format!("node {n} left RTS"));
        }
    }
    let received_total = pair.nodes[B].dev.qp_messages_received(qb);
    Ok(Outcome {
        sent: ops.len() as u64,
        received_sends,
        received_total,
        clean,
    })
}

fn impairments(dup: bool) -> impl Strategy<Value = Impairments> {
    (
        prop_oneof![Just(0.0), 0.0..=0.2f64],
        0.0..=0.05f64,
        0.0..=0.2f64,
        0u64..=3_000_000,
        0.0..=0.02f64,
    )
        .prop_map(
            move |(loss, duplicate, reorder, window, corrupt)| Impairments {
                delay_ps: 1_000_000,
                loss,
                duplicate: if dup { duplicate } else { 0.0 },
                reorder,
                reorder_window_ps: window,
                corrupt,
            },
        )
}

fn check(o: &Outcome, writes: u64) -> Result<(), TestCaseError> {
    prop_assert!(o.received_sends <= o.sent - writes, "{o:?}");
    prop_assert!(o.received_total <= o.sent, "{o:?}");
    if o.clean {
        prop_assert_eq!(o.received_total, o.sent, "{:?}", o);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn uc_keeps_its_promises_under_impairments(
        seed in any::<u64>(),
        ops in prop::collection::vec((any::<bool>(), 0u32..=3 * PMTU), 1..30),
        impair in impairments(true),
    ) {
        let o = run(seed, ServiceType::Uc, &ops, impair).map_err(TestCaseError::fail)?;
        check(&o, ops.iter().filter(|x| x.0).count() as u64)?;
    }

    #[test]
    fn ud_keeps_its_promises_under_impairments(
        seed in any::<u64>(),
        lens in prop::collection::vec(0u32..=PMTU, 1..30),
        impair in impairments(false),
    ) {
        let ops: Vec<(bool, u32)> = lens.iter().map(|&l| (false, l)).collect();
        let o = run(seed, ServiceType::Ud, &ops, impair).map_err(TestCaseError::fail)?;
        check(&o, 0)?;
    }
}

#[test]
fn loss_really_loses_and_the_receiver_counts_it() {
    let impair = Impairments {
        delay_ps: 1_000_000,
        loss: 0.1,
        duplicate: 0.0,
        reorder: 0.0,
        reorder_window_ps: 0,
        corrupt: 0.0,
    };
    let ops: Vec<(bool, u32)> = (0..40).map(|i| (i % 2 == 0, 3 * PMTU)).collect();
    let (mut sent, mut got) = (0, 0);
    for seed in 0..10 {
        let o = run(seed, ServiceType::Uc, &ops, impair.clone()).unwrap();
        sent += o.sent;
        got += o.received_total;
    }
    // Three packets a message at 10 % loss: about 0.9^3 = 73 % arrive.
    let p = got as f64 / sent as f64;
    assert!((0.6..0.85).contains(&p), "{got} of {sent}");
}
