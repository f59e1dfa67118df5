//! UC and UD ping-pongs (write-lat, send-lat), which give an iteration up when no answer
//! came within the local ACK timeout (`-u`): a lost message is never resent. Found by a
//! hunt over loss and transports: a 1-byte UC write-lat, nothing lost, ended "nothing was
//! transferred" (its one byte is the poll byte, which the buffer check leaves out); and a
//! give-up shorter than the round trip gave every iteration up while its messages were on
//! their way, so late answers ended the next iterations (2.6 µs half round trips where the
//! wire needs 12.8) or landed over the next ping's poll byte (a correct run reported
//! corrupt), under a note that `-u` had no effect.

use crate::common::rnic;

/// `rnic CMD --json -` (CMD split at spaces): its exit status, JSON and standard error.
fn json_run(cmd: &str) -> (i32, serde_json::Value, String) {
    let mut args: Vec<&str> = cmd.split(' ').collect();
    args.extend(["--json", "-"]);
    let (code, out, err) = rnic(&args);
    let v = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    (code, v, err)
}

/// A 1-byte UC ping-pong is verified: its bytes arrived, though the check compares none.
#[test]
fn a_one_byte_uc_ping_pong_is_verified() {
    let (code, v, err) = json_run("perf write-lat -c UC -s 1 -n 20");
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["bytes_verified"], true, "{v}");
    assert_eq!(v["unreliable"]["messages_received"], 40, "{v}");
}

/// A give-up shorter than the least round trip is refused, naming the least `-u` that
/// waits one; that `-u` runs, nothing given up, and the latency is the round trip's half.
#[test]
fn a_give_up_shorter_than_the_round_trip_is_refused() {
    let run = "perf send-lat -c UD -s 64 -n 50 --set net.impair.extra_delay_ns=10000";
    let (code, _, err) = json_run(&format!("{run} -u 1"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-u/--qp-timeout (qp.timeout) 1:"), "{err}");
    assert!(err.contains("use -u 3 or more"), "{err}");
    let (code, v, err) = json_run(&format!("{run} -u 3"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(v["unreliable"]["iterations_given_up"], 0, "{v}");
    let p50 = v["latency_us"]["p50"].as_f64().unwrap();
    // 10 µs of extra delay each way: the half round trip is above 10 µs.
    assert!(p50 > 10.0 && p50 < 15.0, "{p50}");
    // Over UC and UD the timeout is the give-up time: no note says it has no effect.
    assert!(!err.contains("has no effect"), "{err}");
    let (_, _, err) = json_run("perf write-bw -c UC -u 10 -n 10");
    assert!(
        err.contains("-u/--qp-timeout (perf.qp_timeout) has no effect on write-bw over UC"),
        "{err}"
    );
}

/// Above the least round trip but below the real one (the NIC's and host's own time come on
/// top): the iterations are given up though nothing was lost, and a note says the answers
/// came late and to raise `-u`; no latency is made up from a late answer.
#[test]
fn late_answers_are_named_not_measured() {
    let (code, v, err) = json_run("perf write-lat -c UC -s 65536 -m 256 -u 2 -n 5");
    assert_eq!(code, 0, "{err}");
    let u = &v["unreliable"];
    assert_eq!(u["messages_lost"], 0, "{v}");
    assert_eq!(u["iterations_given_up"], 5, "{v}");
    assert_eq!(v["bytes_verified"], true, "{v}");
    assert!(err.contains("given up though no message was lost"), "{err}");
}

/// Late answers beside lost messages: the note counts the iterations given up beyond the
/// messages lost, as send-lat's verdict does (it used to say nothing once one message was
/// lost, however many more iterations were given up).
#[test]
fn late_answers_beside_losses_are_named() {
    let (code, v, err) = json_run(
        "perf write-lat -c UC -s 65536 -m 256 -u 2 -n 100 --seed 2 --set net.impair.loss=0.001",
    );
    assert_eq!(code, 0, "{err}");
    let u = &v["unreliable"];
    let (lost, given_up) = (&u["messages_lost"], &u["iterations_given_up"]);
    assert_eq!(
        (lost.as_u64(), given_up.as_u64()),
        (Some(44), Some(100)),
        "{v}"
    );
    assert!(
        err.contains("100 ping-pong iteration(s) given up though only 44 message(s) were lost: the answers of at least 56"),
        "{err}"
    );
}

/// A write-lat answer late for a reason no refusal sees (a host that takes a second to
/// prepare each post, a fabric's long links, whose delay the `-u` check does not plan) lands
/// after its source has moved to the next iteration's poll byte: its data is right, its poll
/// byte an earlier one. Both runs were reported corrupt (exit 1; found by a composition
/// hunt); the iterations are given up, named in the note, and the bytes verified.
#[test]
fn a_late_write_lat_answer_is_not_corrupt() {
    for cmd in [
        "perf write-lat -c UC -n 5 --set host.wqe_prep_ns=1e9",
        "perf write-lat -c UC -n 5 --set net.topology=leaf_spine --set net.link_delay_ns=1e9",
    ] {
        let (code, v, err) = json_run(cmd);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert_eq!(v["bytes_verified"], true, "{cmd}");
        assert_eq!(v["unreliable"]["iterations_given_up"], 5, "{cmd}");
        assert!(
            err.contains("given up though no message was lost"),
            "{cmd}: {err}"
        );
    }
}

/// send-lat's answers carry no iteration: a late one is the next receive the client
/// completes, so it would end a later iteration early. A run whose given-up iterations
/// outnumber its lost messages is incomplete (exit 3), with the reason, not measured.
#[test]
fn a_late_send_lat_answer_makes_the_run_incomplete() {
    let (code, v, err) =
        json_run("perf send-lat -c UC -s 64 -n 50 -u 2 --set net.impair.extra_delay_ns=6500");
    assert_eq!(code, 3, "{err}");
    assert_eq!(v["status"], "incomplete", "{v}");
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("given up though their messages arrived, late"),
        "{v}"
    );
}

/// Over RC the same short timeout resends every packet before its ACK can come, as a real
/// NIC would: the run goes on, with a note naming the least `-u` that waits a round trip;
/// none at the default.
#[test]
fn an_rc_timeout_shorter_than_the_round_trip_is_noted() {
    let (code, v, err) = json_run("perf send-lat -s 64 -n 50 -u 1 --set net.link_km=1");
    assert_eq!(code, 0, "{err}");
    assert!(v["timeouts"].as_u64().unwrap_or(0) > 0, "{v}");
    assert!(
        err.contains("is shorter than the least round trip"),
        "{err}"
    );
    assert!(err.contains("(-u 3 or more waits one)"), "{err}");
    let (code, _, err) = json_run("perf send-lat -s 64 -n 50 --set net.link_km=1");
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("least round trip"), "{err}");
    // Behind the WAN accelerator a WRITE is acknowledged on the near side of the long link.
    let accel = "perf write-bw --profile wan -s 4096 -n 50 -u 1 --set net.wan_accel=true";
    let (code, _, err) = json_run(accel);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("least round trip"), "{err}");
}
