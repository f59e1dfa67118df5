//! A SEND's receive buffer is translated on the receiving NIC before the payload is written:
//! the first packet of each SEND looks up the MPT entry of its receive WQE's L_Key and the
//! MTT entry of every page the message lands in (lane `Rx`); the later packets ride on it.
//! Before, a SEND wrote its receive buffer without any lookup, so a receive buffer outside
//! the translation caches cost nothing.
//!
//! In SEND bandwidth tests the receiving node sends nothing but ACKs, which need no
//! translation, so every lookup it counts is a receive-side one.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::stats::Registry;
use rnic_model::workload::PerfTest;

const PAGE_BYTES: u64 = 4096;

fn config(sets: &[&str]) -> Config {
    let base = [
        "sim.warmup_us=0",
        "net.impair.loss=0",
        "nic.page_bytes=4096",
    ];
    let sets: Vec<_> = base
        .iter()
        .chain(sets)
        .map(|s| parse_set(s).unwrap())
        .collect();
    Config::resolve("baseline", &sets).unwrap()
}

/// Runs `test` (`qps` QPs, `mrs` regions, `iters` messages of `size`), checks that it ended
/// well with every byte verified, and returns the receiving node's counters.
fn receiver(cfg: &Config, test: PerfTest, size: u64, qps: u32, mrs: u32, iters: u64) -> Registry {
    let mut s = spec(test, size, qps, 1);
    s.iters = iters;
    s.mrs = mrs;
    let r = run_verified(cfg, &s, &format!("{test:?}"));
    the_requests_receiver(r.nodes)
}

#[test]
fn each_send_translates_its_receive_buffer_on_the_receiver() {
    // One-packet SENDs of one page into four regions through one-entry caches: every
    // message looks up its receive buffer's MPT entry and page, and the regions evict each
    // other's entries.
    let cfg = config(&["nic.mpt_cache_entries=1", "nic.mtt_cache_entries=1"]);
    let rx = receiver(&cfg, PerfTest::SendBw, PAGE_BYTES, 4, 4, 200);
    let messages = counter(&rx, "transport.rx_requests");
    assert_eq!(counter(&rx, "transport.retransmitted_packets"), 0);
    assert!(messages >= 4 * 200, "{messages}");
    assert_eq!(mpt_lookups(&rx), messages);
    assert_eq!(mtt_lookups(&rx), messages, "one page a buffer");
    assert!(counter(&rx, "nic.translation.mpt.misses") > 0);
    assert!(counter(&rx, "nic.translation.mtt.misses") > 0);
    assert!(counter(&rx, "nic.translation.blocked_ps") > 0);
}

/// `nic.translation.jobs` counts every job through the lanes, translations and
/// pass-throughs alike; `pass_throughs` the ones that translated nothing (received ACKs
/// here), so that `jobs - pass_throughs` is the translations, one MPT lookup each. Before,
/// `jobs` alone counted the sender's ACKs as if they had been translated.
#[test]
fn translation_jobs_split_translations_from_pass_throughs() {
    let cfg = config(&[]);
    let mut s = spec(PerfTest::SendBw, PAGE_BYTES, 2, 1);
    s.iters = 100;
    let r = run_verified(&cfg, &s, "send-bw");
    for (i, n) in r.nodes.iter().enumerate() {
        let jobs = counter(n, "nic.translation.jobs");
        let pass = counter(n, "nic.translation.pass_throughs");
        assert_eq!(
            jobs - pass,
            mpt_lookups(n),
            "node {i}: {jobs} jobs, {pass} passed"
        );
        if counter(n, "transport.rx_requests") == 0 {
            // The sender receives ACKs only: each passes through, none is translated.
            let acks = counter(n, "transport.rx_acks");
            assert!(acks > 0, "node {i}");
            assert_eq!(pass, acks, "node {i}: every received ACK passes through");
        }
    }
}

#[test]
fn a_multi_packet_send_translates_once_on_its_first_packet() {
    // 64 KiB SENDs at a 4 KiB PMTU: 16 packets, 16 pages; one MPT lookup and 16 MTT
    // lookups per message, none for the 15 packets after the first.
    let size = 64 << 10;
    let pages = size / PAGE_BYTES;
    let cfg = config(&["qp.pmtu=4096"]);
    let rx = receiver(&cfg, PerfTest::SendBw, size, 1, 1, 50);
    let packets = counter(&rx, "transport.rx_requests");
    assert_eq!(packets % pages, 0, "{packets}");
    let messages = packets / pages;
    assert!(messages >= 50);
    assert_eq!(mpt_lookups(&rx), messages);
    assert_eq!(mtt_lookups(&rx), messages * pages);
}

#[test]
fn a_ud_datagram_translates_its_grh_area_and_payload() {
    // A UD receive buffer starts with the 40-byte GRH area: a 4056-byte datagram fills
    // 4096 bytes of it, one page when the buffer is page-aligned, two otherwise.
    let cfg = config(&["qp.transport=ud", "qp.pmtu=4096"]);
    let rx = receiver(&cfg, PerfTest::SendBw, 4056, 2, 2, 100);
    let datagrams = counter(&rx, "transport.rx_requests");
    assert!(datagrams >= 200, "{datagrams}");
    assert_eq!(mpt_lookups(&rx), datagrams);
    let mtt = mtt_lookups(&rx);
    assert!(
        mtt == datagrams || mtt == 2 * datagrams,
        "{mtt} for {datagrams}"
    );
}

#[test]
fn a_uc_send_translates_its_receive_buffer() {
    let cfg = config(&["qp.transport=uc", "qp.pmtu=1024"]);
    // 3000 bytes: three packets, one page (or two) of the receive buffer, translated once.
    let rx = receiver(&cfg, PerfTest::SendBw, 3000, 1, 1, 100);
    let messages = counter(&rx, "transport.rx_requests") / 3;
    assert!(messages >= 100);
    assert_eq!(mpt_lookups(&rx), messages);
}

#[test]
fn a_send_that_finds_no_receive_translates_nothing_and_is_rnr_naked() {
    // One receive posted per QP and a deep send queue: SENDs arrive before the receiver
    // reposts. A SEND that finds no receive WQE at its translation translates nothing, and
    // every RNR-NAKed SEND is one of those (a receive WQE there at translation is still
    // there when the SEND is handled).
    let cfg = config(&[
        "host.rx_depth=1",
        "nic.mpt_cache_entries=0",
        "nic.mtt_cache_entries=0",
    ]);
    let rx = receiver(&cfg, PerfTest::SendBw, 1024, 1, 1, 100);
    let arrived = counter(&rx, "transport.rx_requests");
    let rnr = counter(&rx, "transport.naks_sent.rnr");
    assert!(rnr > 0, "the receiver never ran out of receives");
    assert!(mpt_lookups(&rx) > 0);
    assert!(
        mpt_lookups(&rx) <= arrived - rnr,
        "{} lookups, {arrived} SENDs arrived, {rnr} RNR NAKs",
        mpt_lookups(&rx)
    );
}

#[test]
fn a_datagram_translates_the_receive_it_will_take_behind_those_in_flight() {
    // One receive posted per QP, every lookup a miss: datagrams queue in the receive lane
    // while the head one waits for its entries, each behind others that will take a
    // receive first. A datagram is translated only when a receive is posted for it behind
    // those; each one that is translated then finds its receive (datagrams that find none
    // are dropped), so there are no more lookups than datagrams placed. Translating the RQ
    // head for every datagram would translate the ones queued behind the head's and
    // dropped.
    let cfg = config(&[
        "qp.transport=ud",
        "host.rx_depth=1",
        "nic.mpt_cache_entries=0",
        "nic.mtt_cache_entries=0",
    ]);
    let mut s = spec(PerfTest::SendBw, 1024, 1, 1);
    s.iters = 200;
    let r = run(&cfg, &s);
    let rx = the_node_counting(&r.nodes, "transport.rx_requests");
    let arrived = counter(rx, "transport.rx_requests");
    let no_recv = counter(rx, "transport.unreliable.no_recv_messages");
    let placed = arrived - no_recv;
    assert!(no_recv > 0, "the receiver never ran out of receives");
    assert!(mpt_lookups(rx) > 0);
    assert!(
        mpt_lookups(rx) <= placed,
        "{} lookups, {placed} datagrams placed",
        mpt_lookups(rx)
    );
}
