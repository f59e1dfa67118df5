//! The transport's own counters in `--stats` and the JSON (`server.transport.*`,
//! `clients.transport.*`): NAKs by code, drops by reason, timeouts and RNR waits, per side,
//! adding up to the run's totals and matching between the side that sends a NAK and the
//! side that receives it.

use crate::common::rnic;

use rnic::report::PerfResult;

/// `rnic perf ARGS --json -`, which must succeed.
pub(crate) fn perf_json(args: &[&str]) -> PerfResult {
    let mut a = vec!["perf"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "-"]);
    let (code, out, err) = rnic(&a);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}); {err}"))
}

fn stat(r: &PerfResult, key: &str) -> u64 {
    *r.stats
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in the stats"))
}

const NAK_CODES: [&str; 6] = [
    "psn_sequence_error",
    "invalid_request",
    "remote_access_error",
    "remote_operational_error",
    "invalid_rd_request",
    "rnr",
];

/// Every NAK one side sends, the other receives, code by code; the sides' sums are the
/// run's NAK total.
fn assert_naks_match(r: &PerfResult) {
    let mut total = 0;
    for code in NAK_CODES {
        for (from, to) in [("server", "clients"), ("clients", "server")] {
            let sent = stat(r, &format!("{from}.transport.naks_sent.{code}"));
            let got = stat(r, &format!("{to}.transport.naks_received.{code}"));
            assert_eq!(sent, got, "{code} NAKs sent by the {from} and received");
            total += sent;
        }
    }
    assert_eq!(total, r.naks, "the sides' NAKs add up to the run's");
}

/// A lossy link: the responder (the clients, in a `write-bw` without `--reversed`) drops
/// what follows each gap as out of sequence and sends sequence-error NAKs; the requester
/// goes back N. The counters say so, by side and by reason.
#[test]
fn loss_shows_sequence_naks_and_out_of_sequence_drops() {
    let r = perf_json(&[
        "write-bw",
        "-s",
        "4096",
        "-n",
        "300",
        "--set",
        "net.impair.loss=0.01",
    ]);
    assert_naks_match(&r);
    assert!(stat(&r, "clients.transport.naks_sent.psn_sequence_error") > 0);
    assert!(stat(&r, "clients.transport.drops.out_of_sequence") > 0);
    assert_eq!(stat(&r, "server.transport.naks_sent.rnr"), 0);
    assert!(stat(&r, "server.transport.go_back_n") > 0);
    assert_eq!(
        stat(&r, "server.transport.ack_timeouts") + stat(&r, "clients.transport.ack_timeouts"),
        r.timeouts
    );
    assert_eq!(
        stat(&r, "server.transport.retransmitted_packets")
            + stat(&r, "clients.transport.retransmitted_packets"),
        r.retransmissions
    );
}

/// SENDs into a server that keeps 16 receives posted per QP behind a slow PCIe link, and
/// lags in posting them: the server's responder answers RNR NAKs (no receive posted), not
/// sequence errors, and the clients wait them out. (With perftest's 512 receives it no
/// longer lags: until the receive WQEs being read counted as posted, 74 NAKs came of
/// SENDs that arrived while their WQE was on its way.)
#[test]
fn a_receiver_without_receives_shows_rnr_naks() {
    let r = perf_json(&[
        "send-bw",
        "-s",
        "256",
        "-q",
        "16",
        "--clients",
        "4",
        "--reversed",
        "-n",
        "2000",
        "--set",
        "pcie.gbps=16",
        "--set",
        "net.pfc=true",
        "-r",
        "16",
    ]);
    assert_naks_match(&r);
    let rnr = stat(&r, "server.transport.naks_sent.rnr");
    assert!(rnr > 0, "no RNR NAK");
    assert_eq!(stat(&r, "server.transport.naks_sent.psn_sequence_error"), 0);
    assert_eq!(stat(&r, "clients.transport.rnr_waits"), rnr);
}

#[test]
fn duplicates_reach_no_host_memory() {
    // The responder re-ACKs a duplicated WRITE and answers a duplicated atomic from its
    // replay table: it writes host memory once per operation, however many copies come.
    for (test, bytes_each) in [("write-bw", 4096u64), ("atomic-bw", 8)] {
        let size = bytes_each.to_string();
        let mut args = vec![test, "-n", "300", "-q", "2", "--set", "net.impair.dup=0.2"];
        if test == "write-bw" {
            args.extend(["-s", &size]);
        }
        let r = perf_json(&args);
        assert!(
            stat(&r, "clients.transport.duplicate_requests") > 0,
            "{test}"
        );
        assert_eq!(
            stat(&r, "clients.nic.pcie.up_payload_bytes"),
            600 * bytes_each,
            "{test}: payload written to the responder's host memory"
        );
    }
}
