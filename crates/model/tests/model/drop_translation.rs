//! The receive lane translates only what the transport will place. On an RC responder a
//! request beyond the expected PSN (a sequence error: NAKed once, then dropped) and a
//! duplicate WRITE or SEND (re-ACKed, nothing placed) write nothing, so the NIC looks up no
//! MPT or MTT entry for them; a duplicate READ request is executed again (its responses
//! are re-sent), so it is still translated. Before, every WRITE FIRST/ONLY that arrived
//! was translated, dropped or not, and a miss on one blocked the lane for the good frames
//! behind it.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::stats::Registry;
use rnic_model::workload::PerfTest;

const PAGE_BYTES: u64 = 4096;

fn config(sets: &[&str]) -> Config {
    let base = ["sim.warmup_us=0", "nic.page_bytes=4096", "qp.pmtu=4096"];
    let sets: Vec<_> = base
        .iter()
        .chain(sets)
        .map(|s| parse_set(s).unwrap())
        .collect();
    Config::resolve("baseline", &sets).unwrap()
}

/// Runs `test` (`iters` messages of `size` on one QP), checks that every message completed
/// with every byte verified, and returns the responder's counters (the node that receives
/// requests).
fn responder(cfg: &Config, test: PerfTest, size: u64, iters: u64) -> Registry {
    let mut s = spec(test, size, 1, 1);
    s.iters = iters;
    let r = run_verified(cfg, &s, &format!("{test:?}"));
    assert_eq!(r.result.ops_completed, iters);
    the_requests_receiver(r.nodes)
}

/// Request packets the responder executed in sequence: all it received but the
/// duplicates and those beyond the expected PSN.
fn in_sequence_requests(rx: &Registry) -> u64 {
    counter(rx, "transport.rx_requests")
        - counter(rx, "transport.duplicate_requests")
        - counter(rx, "transport.drops.out_of_sequence")
}

#[test]
fn writes_dropped_by_go_back_n_are_not_translated() {
    // 64 KiB WRITEs (16 packets, 16 pages) under 2 % loss: the requester goes back N, so
    // frames beyond a lost one arrive and are dropped, and frames sent again arrive twice.
    // Each WRITE is placed once: its FIRST packet looks up one MPT entry and its 16 pages
    // once, however often it arrived.
    let size = 64 << 10;
    let pages = size / PAGE_BYTES;
    let iters = 60;
    let cfg = config(&["net.impair.loss=0.02", "sim.seed=3"]);
    let rx = responder(&cfg, PerfTest::WriteBw, size, iters);
    let placed = in_sequence_requests(&rx);
    assert_eq!(placed, iters * pages, "every packet placed once");
    let dropped = counter(&rx, "transport.drops.out_of_sequence")
        + counter(&rx, "transport.duplicate_requests");
    assert!(dropped > 0, "nothing was dropped: the run proves nothing");
    assert_eq!(mpt_lookups(&rx), iters, "{dropped} request packets dropped");
    assert_eq!(mtt_lookups(&rx), iters * pages);
}

#[test]
fn writes_reordered_by_spraying_translate_once_each() {
    // The same WRITEs sprayed over four paths of different delays: frames overtake each
    // other, go-back-N drops every one beyond a gap and sends them again.
    let size = 64 << 10;
    let pages = size / PAGE_BYTES;
    let iters = 40;
    let cfg = config(&[
        "net.spray.paths=4",
        "net.spray.mdd_ns=20000",
        "net.spray.policy=random",
    ]);
    let rx = responder(&cfg, PerfTest::WriteBw, size, iters);
    assert_eq!(in_sequence_requests(&rx), iters * pages);
    let beyond = counter(&rx, "transport.drops.out_of_sequence");
    assert!(
        beyond > 0,
        "nothing arrived out of order: the run proves nothing"
    );
    assert_eq!(
        mpt_lookups(&rx),
        iters,
        "{beyond} packets beyond the expected PSN"
    );
    assert_eq!(mtt_lookups(&rx), iters * pages);
}

#[test]
fn a_duplicate_read_request_is_still_translated() {
    // READs under loss: a lost response makes the requester send the READ request again;
    // the responder executes the duplicate (re-sends the responses from memory), so it
    // translates it, while a request beyond the expected PSN is dropped untranslated.
    let iters = 200;
    let cfg = config(&["net.impair.loss=0.02", "sim.seed=5"]);
    let rx = responder(&cfg, PerfTest::ReadBw, PAGE_BYTES, iters);
    let duplicates = counter(&rx, "transport.duplicate_requests");
    assert!(
        duplicates > 0,
        "no duplicate READ request: the run proves nothing"
    );
    let executed =
        counter(&rx, "transport.rx_requests") - counter(&rx, "transport.drops.out_of_sequence");
    assert_eq!(mpt_lookups(&rx), executed, "{duplicates} duplicates");
}
