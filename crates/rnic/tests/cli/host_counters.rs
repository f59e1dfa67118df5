//! The applications' counters in `--stats`: receive WQEs posted by SEND tests
//! (`host.receives_posted`) and write-lat's polls that saw an older value
//! (`host.write_lat_stale_polls`: late UC answers), each present only where the test has it.

use crate::transport_counters::perf_json;

#[test]
fn a_send_test_counts_the_receives_it_posted_and_a_write_test_has_none() {
    let send = perf_json(&["send-bw", "-n", "200", "-q", "2", "--clients", "1"]);
    let posted = send.stats["host.receives_posted"];
    // Every SEND consumed a receive, and the receive queues were filled before the test.
    assert!(posted >= 2 * 200, "{posted} receives posted for 400 SENDs");
    let write = perf_json(&["write-bw", "-n", "200"]);
    assert!(!write.stats.contains_key("host.receives_posted"));
    assert!(!write.stats.contains_key("host.write_lat_stale_polls"));
}

#[test]
fn write_lat_counts_the_polls_that_saw_an_older_write() {
    let clean = perf_json(&["write-lat", "-n", "300"]);
    assert_eq!(clean.stats["host.write_lat_stale_polls"], 0);
    // An RC responder re-ACKs a duplicated WRITE and places nothing: no poll sees it (until
    // 2026-12-02 the NIC wrote each duplicate to host memory again, and about 120 polls
    // woke for it).
    let dup = perf_json(&["write-lat", "-n", "300", "--set", "net.impair.dup=0.2"]);
    assert!(dup.stats["clients.transport.duplicate_requests"] > 0);
    assert_eq!(dup.stats["host.write_lat_stale_polls"], 0);
    // UC answers that come after their iteration was given up (a give-up shorter than the
    // slow host's round trip) land over a later iteration's poll byte.
    let late = perf_json(&[
        "write-lat",
        "-c",
        "UC",
        "-n",
        "300",
        "-u",
        "1",
        "--set",
        "host.mem_latency_ns=3000",
    ]);
    assert!(late.stats["host.write_lat_stale_polls"] > 0);
}
