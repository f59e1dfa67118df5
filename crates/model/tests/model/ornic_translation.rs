//! What the receive side translates (MPT + MTT lookups) for each data packet it places.
//!
//! * A RoCEv2 WRITE's RETH names the whole message on its first packet: translated once,
//!   the later packets ride on it.
//! * An ORNIC out-of-order data packet is placed on its own, at
//!   `start + (PSN − start PSN) × PMTU`: it translates the pages its own payload touches, an
//!   FSpot from its RETH address, a Spot (no RETH) from the responder's learnt start, an
//!   OOO READ response from the requester's READ buffer. Translating the span an FSpot's
//!   RETH names (its own address, the whole WQE's length) re-translated the WQE for every
//!   FSpot and thrashed the MTT with 4 KiB pages; Spots and READ responses were not
//!   translated at all.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::stats::Registry;
use rnic_model::workload::PerfTest;

/// 2 MiB messages: 512 packets and 512 pages of 4 KiB each.
const MSG_BYTES: u64 = 2 << 20;
const ITERS: u64 = 3;
const PAGE_BYTES: u64 = 4096;

fn config(profile: &str) -> Config {
    let sets: Vec<_> = [
        "nic.page_bytes=4096",
        "sim.warmup_us=0",
        "net.impair.loss=0",
    ]
    .iter()
    .map(|s| parse_set(s).unwrap())
    .collect();
    Config::resolve(profile, &sets).unwrap()
}

/// Runs `test` one QP, `ITERS` messages of `MSG_BYTES`, and returns the nodes' counters
/// (bytes verified).
fn nodes(profile: &str, test: PerfTest) -> Vec<Registry> {
    let mut s = spec(test, MSG_BYTES, 1, 1);
    s.iters = ITERS;
    let r = run(&config(profile), &s);
    assert!(
        r.result.bytes_verified,
        "{test:?} {profile}: {:?}",
        r.failures
    );
    assert_eq!(r.result.retransmissions, 0, "{test:?} {profile}");
    r.nodes
}

/// The node whose transport received counter `name` (the WRITE responder, the READ requester).
fn receiver<'a>(nodes: &'a [Registry], name: &str) -> &'a Registry {
    let got: Vec<_> = nodes.iter().filter(|n| counter(n, name) > 0).collect();
    assert_eq!(got.len(), 1, "one node receives {name}");
    got[0]
}

#[test]
fn ornic_write_translates_each_packets_own_pages_once() {
    let nodes = nodes("ornic", PerfTest::WriteBw);
    let resp = receiver(&nodes, "transport.rx_requests");
    let packets = counter(resp, "transport.rx_requests");
    let pages = ITERS * MSG_BYTES / PAGE_BYTES;
    assert_eq!(
        packets,
        ITERS * MSG_BYTES / 4096,
        "every data packet arrives once"
    );
    // Every data packet, FSpot or Spot, is translated: one MPT lookup each.
    assert_eq!(mpt_lookups(resp), packets, "one MPT lookup per data packet");
    // Each payload (4 KiB) touches one page, two if the buffer is not page-aligned: the
    // message's pages, not (FSpot packets × the WQE's pages).
    let mtt = mtt_lookups(resp);
    assert!(
        (pages..=2 * pages).contains(&mtt),
        "{mtt} MTT lookups for {pages} pages written"
    );
}

#[test]
fn ornic_read_translates_each_response_where_it_lands() {
    let nodes = nodes("ornic", PerfTest::ReadBw);
    let req = receiver(&nodes, "transport.rx_read_responses");
    let responses = counter(req, "transport.rx_read_responses");
    let pages = ITERS * MSG_BYTES / PAGE_BYTES;
    assert_eq!(responses, ITERS * MSG_BYTES / 4096);
    // The requester issues no payload read for a READ: its lookups are the responses'.
    assert_eq!(mpt_lookups(req), responses, "one MPT lookup per response");
    let mtt = mtt_lookups(req);
    assert!(
        (pages..=2 * pages).contains(&mtt),
        "{mtt} MTT lookups for {pages} pages written"
    );
}

#[test]
fn rocev2_write_translates_the_message_on_its_first_packet_only() {
    let nodes = nodes("baseline", PerfTest::WriteBw);
    let resp = receiver(&nodes, "transport.rx_requests");
    let pages = ITERS * MSG_BYTES / PAGE_BYTES;
    // One job per WRITE FIRST (the whole message), none for the later packets.
    assert_eq!(mpt_lookups(resp), ITERS);
    let mtt = mtt_lookups(resp);
    assert!((pages..=pages + ITERS).contains(&mtt), "{mtt} for {pages}");
}

/// A RoCEv2 READ's responses are written into the requester's local buffer, which the
/// requester's NIC translates once, on the READ's first response, as a responder does a
/// WRITE's on its RETH. It translated nothing: no lookup at all on the requester.
#[test]
fn rocev2_read_translates_the_local_buffer_on_its_first_response_only() {
    let nodes = nodes("baseline", PerfTest::ReadBw);
    let req = receiver(&nodes, "transport.rx_read_responses");
    let pages = ITERS * MSG_BYTES / PAGE_BYTES;
    assert_eq!(mpt_lookups(req), ITERS, "one job per READ");
    let mtt = mtt_lookups(req);
    assert!((pages..=pages + ITERS).contains(&mtt), "{mtt} for {pages}");
}
