//! RDMA READ under random loss on the timed model: `read-bw` and `read-lat` complete and
//! verify every byte at every seed, at 1, 5 and 10 % loss, PMTU 1024 and 4096, 2 B to 64 KB.
//! The payload oracle checks each placed READ response at its offset in the READ, which a
//! READ retried from its middle exercises at nearly every seed.

use crate::common::*;
use rnic_model::workload::PerfTest;
use rnic_model::{run_perf_detailed, RunOptions};

const SEEDS: u64 = 20;
const SIZES: [u64; 4] = [2, 1000, 4096, 65536];

#[test]
fn model_reads_survive_loss_at_every_seed() {
    let mut failed = Vec::new();
    let (mut retransmissions, mut runs) = (0u64, 0u64);
    for test in [PerfTest::ReadBw, PerfTest::ReadLat] {
        for loss in [0.01, 0.05, 0.10] {
            for pmtu in [1024u32, 4096] {
                for seed in 1..=SEEDS {
                    let mut cfg = baseline(0.0);
                    cfg.net.impair.loss = loss;
                    cfg.sim.seed = seed;
                    cfg.qp.pmtu = pmtu;
                    let mut s = spec(test, SIZES[0], 2, 1);
                    s.sizes = SIZES.to_vec();
                    s.iters = if test.is_latency() { 4 } else { 3 };
                    let want = if test.is_latency() { 4 } else { 6 };
                    let per_size =
                        run_perf_detailed(&cfg, &s, &RunOptions::default()).expect("model run");
                    for (r, size) in per_size.iter().zip(SIZES) {
                        runs += 1;
                        retransmissions += r.result.retransmissions;
                        if !r.result.bytes_verified || r.result.ops_completed != want {
                            failed.push(format!(
                                "{test} -s {size} -m {pmtu} loss {loss} seed {seed}: {} ops, {:?}",
                                r.result.ops_completed, r.failures
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {runs} runs failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
    // The loss must really have been repaired, or this test proves nothing.
    assert!(
        retransmissions > 1000,
        "{retransmissions} retransmissions in {runs} runs"
    );
}

/// The requester of `test` at 1 MB × 40 on one QP, 16 READs outstanding, at 0.1 % loss.
fn one_mb_at_loss(test: PerfTest) -> rnic_model::ModelRun {
    let mut cfg = baseline(0.0);
    cfg.net.impair.loss = 0.001;
    let mut s = spec(test, 1 << 20, 1, 1);
    s.iters = 40;
    run_verified(&cfg, &s, &format!("{test} 1 MB at 0.1 % loss"))
}

/// Counter `name` summed over the run's nodes.
fn summed(r: &rnic_model::ModelRun, name: &str) -> u64 {
    r.nodes.iter().map(|n| counter(n, name)).sum()
}

/// READ response frames the run's responder sent.
fn read_responses_sent(r: &rnic_model::ModelRun) -> u64 {
    summed(r, "transport.tx_read_responses")
}

/// A lost READ response costs its own go-back-N, not the responses queued behind it: the
/// duplicate READ's replay goes out next and the stale responses are never sent (they were
/// sent, all of them, before the replay: 52,695 response frames for 10,240, 19 Gb/s against
/// WRITE's 97). READ goodput stays near WRITE's at the same loss, every byte verified.
#[test]
fn a_lost_read_response_costs_its_go_back_n_not_the_queue() {
    let read = one_mb_at_loss(PerfTest::ReadBw);
    let write = one_mb_at_loss(PerfTest::WriteBw);
    let (rg, wg) = (read.result.goodput_gbps, write.result.goodput_gbps);
    let sent = read_responses_sent(&read);
    let needed = 40 * (1 << 20) / 4096;
    eprintln!("read-bw {rg:.2} Gb/s, write-bw {wg:.2} Gb/s, {sent} responses for {needed}");
    assert!(
        read.result.retransmissions > 0,
        "no loss hit a READ response"
    );
    assert!(
        rg >= 0.85 * wg,
        "read-bw {rg} Gb/s against write-bw {wg} Gb/s"
    );
    assert!(
        sent < needed * 13 / 10,
        "{sent} READ responses sent for {needed}"
    );
}

/// Reordering without loss: every response the requester sees out of order makes it go
/// back, and each duplicate READ used to queue its replay behind every stale response
/// (2.4 million response frames for 4,096, 0.15 Gb/s, 8,945 duplicates dropped as
/// responder busy). Now each go-back-N costs the responses from its PSN once (45,111 frames,
/// 7.8 Gb/s): what is left is the requester going back at every out-of-order response.
#[test]
fn reordered_read_responses_do_not_multiply() {
    let mut cfg = baseline(0.0);
    cfg.net.impair.reorder_window = 8;
    cfg.qp.pmtu = 512;
    let mut s = spec(PerfTest::ReadBw, 256 << 10, 1, 1);
    s.iters = 8;
    let r = run_verified(&cfg, &s, "read-bw 256 KB, reorder window 8");
    let sent = read_responses_sent(&r);
    let needed = 8 * (256 << 10) / 512;
    eprintln!(
        "{:.2} Gb/s, {sent} responses for {needed}",
        r.result.goodput_gbps
    );
    assert!(
        sent < needed * 16,
        "{sent} READ responses sent for {needed}"
    );
    let busy = summed(&r, "transport.drops.responder_busy");
    assert_eq!(busy, 0, "duplicates dropped as responder busy");
}

/// A READ the responder refuses (its R_Key changed on the way, so a remote access error)
/// reads nothing from the responder's host memory: its NAK carries no data. The responder's
/// NIC read the refused READ's whole RETH length as if it were to be sent (128 more 512 B
/// payload reads for 64 KB, over PCIe lanes other QPs share), because it took the length
/// from the request rather than from what the responder queued.
#[test]
fn a_refused_read_reads_no_response_data() {
    let cfg = baseline(0.0);
    let mut s = spec(PerfTest::ReadBw, 64 << 10, 1, 1);
    s.iters = 20;
    let opts = RunOptions {
        hooks: rnic_model::world::Hooks {
            bad_read_rkey: Some(10),
            ..Default::default()
        },
    };
    let r = crate::common::run_with(&cfg, &s, &opts);
    let naks = summed(&r, "transport.naks_sent.remote_access_error");
    assert_eq!(naks, 1, "the 10th READ is refused");
    let responder = the_node_counting(&r.nodes, "transport.tx_read_responses");
    let sent = counter(responder, "transport.tx_payload_bytes");
    assert_eq!(
        sent,
        9 * (64 << 10),
        "the nine READs before the refused one"
    );
    // Each 64 KB READ's data is read in 512 B requests (MRRS), nothing for the refused one.
    let reads = counter(responder, "nic.dma.payload_reads");
    assert_eq!(
        reads * 512,
        sent,
        "{reads} payload reads for {sent} bytes sent"
    );
}

/// The transport's counters add up on both sides of reordered and lossy READs: a NAK a
/// duplicate READ abandoned before it left was counted as sent (2 NAKs for 1 ACK frame in
/// this run), and an out-of-order READ response found stale was received but not counted
/// by type (`rx_packets` 935 against 934 READ responses under ORNIC at 1 % loss).
#[test]
fn read_counters_add_up_under_reordering_and_loss() {
    let typed_rx = [
        "rx_requests",
        "rx_read_responses",
        "rx_acks",
        "rx_atomic_acks",
        "rx_cnps",
    ];
    let nak_codes = [
        "invalid_rd_request",
        "invalid_request",
        "psn_sequence_error",
        "remote_access_error",
        "remote_operational_error",
        "rnr",
    ];
    // Each run with the counter that shows it met the case.
    for (sets, iters, witness) in [
        (
            &["net.impair.reorder_window=8"][..],
            5,
            "transport.naks_sent.psn_sequence_error",
        ),
        (
            &["qp.reliability=ornic", "net.impair.loss=0.01"][..],
            50,
            "transport.drops.stale_response",
        ),
    ] {
        let o: Vec<_> = sets
            .iter()
            .map(|s| rnic_model::config::parse_set(s).unwrap())
            .collect();
        let cfg = rnic_model::config::Config::resolve("baseline", &o).unwrap();
        let mut s = spec(PerfTest::ReadBw, 64 << 10, 1, 1);
        s.iters = iters;
        let r = run_verified(&cfg, &s, &format!("{sets:?}"));
        for n in &r.nodes {
            let t = |name: &str| counter(n, &format!("transport.{name}"));
            let rx: u64 = typed_rx.iter().map(|c| t(c)).sum();
            assert_eq!(t("rx_packets"), rx, "{sets:?}: received by type");
            let naks: u64 = nak_codes.iter().map(|c| t(&format!("naks_sent.{c}"))).sum();
            assert!(
                naks <= t("tx_acks"),
                "{sets:?}: {naks} NAKs sent in {} ACK frames",
                t("tx_acks")
            );
        }
        assert!(summed(&r, witness) > 0, "{sets:?}: no {witness}");
    }
}
