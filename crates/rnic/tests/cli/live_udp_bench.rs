//! `live-udp-bench`, the raw datagram baseline `rnic live`'s speed is measured against: its
//! blast and ping-pong run and print figures that parse, and its bad flags are refused
//! naming the flag. The runs need raw IPv4 sockets (root or CAP_NET_RAW) and skip with the
//! reason otherwise, as the live loopback tests do; each uses two loopback addresses no
//! other live test uses (those take theirs from 127.0.2.0/24), so that they can run at once.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common;

const BENCH: &str = env!("CARGO_BIN_EXE_live-udp-bench");
/// A run that takes longer than this is a hang.
const RUN_LIMIT: Duration = Duration::from_secs(60);

fn bench(args: &[&str]) -> Output {
    let child = Command::new(BENCH)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("live-udp-bench starts");
    common::finish_within(child, RUN_LIMIT, "live-udp-bench")
}

/// `live-udp-bench args --bind BIND --peer PEER`, which must succeed; its stdout, or `None`
/// (skipped, with the reason) where raw sockets on those addresses are not possible.
fn run(args: &[&str], bind: &str, peer: &str) -> Option<String> {
    let ips = [bind.parse().unwrap(), peer.parse().unwrap()];
    if let Some(why) = common::live_skip_reason(&ips) {
        eprintln!("skipped: {why}");
        return None;
    }
    let mut all = args.to_vec();
    all.extend_from_slice(&["--bind", bind, "--peer", peer]);
    let o = bench(&all);
    assert!(o.status.success(), "{all:?}: {}", common::output_text(&o));
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The number in `out` between `before` and the next `after`.
fn number(out: &str, before: &str, after: &str) -> f64 {
    let from = out
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in {out:?}"))
        + before.len();
    let rest = &out[from..];
    let to = rest
        .find(after)
        .unwrap_or_else(|| panic!("{after:?} after {before:?} in {out:?}"));
    rest[..to]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{:?} parses ({e}) in {out:?}", &rest[..to]))
}

#[test]
fn blast_prints_a_positive_goodput_of_what_arrived() {
    let Some(out) = run(&["blast", "--secs", "0.2"], "127.0.0.49", "127.0.0.50") else {
        return;
    };
    let got = number(&out, "1024-byte payloads,", " of ");
    let sent = number(&out, " of ", " arrived");
    let gbps = number(&out, " s: ", " Gbit/s payload");
    assert!(
        0.0 < got && got <= sent,
        "arrived 0 < {got} <= {sent} sent: {out}"
    );
    assert!(gbps > 0.0, "positive goodput: {out}");
}

/// A ping-pong of 50 round trips with `extra` flags prints 0 < min <= median.
fn ping(extra: &[&str], bind: &str, peer: &str) {
    let mut args = vec!["ping", "-n", "50"];
    args.extend_from_slice(extra);
    let Some(out) = run(&args, bind, peer) else {
        return;
    };
    assert!(out.contains(" 50 round trips:"), "{args:?}: {out}");
    let median = number(&out, "half round trip median ", " us");
    let min = number(&out, ", min ", " us");
    assert!(
        0.0 < min && min <= median,
        "{args:?}: 0 < min <= median: {out}"
    );
}

#[test]
fn ping_prints_a_positive_half_round_trip() {
    ping(&[], "127.0.0.51", "127.0.0.52");
}

#[test]
fn ping_with_acks_prints_a_positive_half_round_trip() {
    ping(&["--ack"], "127.0.0.53", "127.0.0.54");
}

#[test]
fn ping_waiting_in_the_socket_prints_a_positive_half_round_trip() {
    ping(&["--block"], "127.0.0.55", "127.0.0.56");
}

#[test]
fn bad_flags_fail_naming_the_flag() {
    // Refused before any socket is opened: these need no privilege.
    for (args, flag) in [
        (&["ping", "-n", "0"][..], "-n "),
        (&["blast", "-m", "big"], "-m "),
        (&["blast", "--secs", "0.2s"], "--secs "),
        (&["blast", "--secs", "0"], "--secs "),
        (&["blast", "--secs"], "--secs "),
        (&["ping", "--bind", "127.0.0"], "--bind "),
        (&["blast", "--peer", "127.0.0.300"], "--peer "),
        (&["ping", "--peer", "::1"], "--peer ::1: IPv6"),
        (&["blast", "--bind", "fe80::1"], "--bind fe80::1: IPv6"),
        (
            &["ping", "--bind", "127.0.0.57", "--peer", "127.0.0.57"],
            "--bind and --peer",
        ),
        (&["ping", "--bind", "127.0.0.2"], "--bind and --peer"),
        (&["blast", "--sec", "0.2"], "does not take \"--sec\""),
        (&["ping", "--secs", "1"], "ping does not take \"--secs\""),
        (&["blast", "--ack"], "blast does not take \"--ack\""),
    ] {
        let o = bench(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success(),
            "{args:?} fails: {}",
            common::output_text(&o)
        );
        assert!(err.contains(flag), "{args:?} names {flag:?}: {err}");
        assert!(
            !err.contains("panicked"),
            "{args:?} is refused, not a panic: {err}"
        );
    }
}
