//! `rnic calc` on the command line: the list, the long-distance paper's queue depth, the
//! frame size it divides by, JSON, and errors that name the flag.

use crate::common::rnic;

#[test]
fn calc_alone_lists_what_it_computes() {
    let (code, out, _) = rnic(&["calc"]);
    assert_eq!(code, 0);
    assert!(out.contains("qd ") && out.contains("frame "), "{out}");
}

#[test]
fn queue_depth_for_100_km_is_the_papers_2991() {
    let (code, out, err) = rnic(&[
        "calc",
        "qd",
        "--gbps",
        "100",
        "--km",
        "100",
        "--frame-bytes",
        "4178",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("queue depth      2991 frames"), "{out}");
    assert!(out.contains("round trip       1000 µs"), "{out}");
    let (code, json, _) = rnic(&[
        "calc",
        "qd",
        "--gbps",
        "100",
        "--rtt-us",
        "1000",
        "--frame-bytes",
        "4178",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["queue_depth"], 2991);
    assert_eq!(v["input"]["rtt_us"], 1000.0);
}

#[test]
fn the_4178_byte_frame_is_a_4096_byte_write_first_with_a_vlan_tag() {
    let (code, out, _) = rnic(&["calc", "frame", "--payload-bytes", "4096", "--vlan"]);
    assert_eq!(code, 0);
    assert!(out.contains("frame                  4178 B"), "{out}");
}

/// `--opcode` takes every RC SEND and WRITE packet with immediate or invalidate: a SEND's
/// LAST packet with immediate, and SEND with invalidate, were refused while the others were
/// taken.
#[test]
fn sends_with_immediate_or_invalidate_are_frame_opcodes() {
    for (opcode, frame) in [
        (
            "send-last-imm",
            "frame                   166 B  (send-last-imm)",
        ),
        (
            "send-only-imm",
            "frame                   166 B  (send-only-imm)",
        ),
        (
            "send-last-inv",
            "frame                   166 B  (send-last-inv)",
        ),
        (
            "send-only-inv",
            "frame                   166 B  (send-only-inv)",
        ),
        (
            "write-last-imm",
            "frame                   166 B  (write-last-imm)",
        ),
    ] {
        let (code, out, err) = rnic(&[
            "calc",
            "frame",
            "--payload-bytes",
            "100",
            "--opcode",
            opcode,
        ]);
        assert_eq!(code, 0, "{opcode}: {err}");
        assert!(
            out.contains("extension headers         4 B"),
            "{opcode}: {out}"
        );
        assert!(out.contains(frame), "{opcode}: {out}");
    }
}

#[test]
fn bad_input_exits_2_naming_the_flag() {
    for (args, flag) in [
        (
            &[
                "calc",
                "qd",
                "--gbps",
                "-1",
                "--km",
                "1",
                "--frame-bytes",
                "9",
            ][..],
            "--gbps",
        ),
        (
            &[
                "calc",
                "qd",
                "--gbps",
                "1",
                "--km",
                "0",
                "--frame-bytes",
                "9",
            ][..],
            "--km",
        ),
        (
            &[
                "calc",
                "qd",
                "--gbps",
                "1",
                "--km",
                "1",
                "--frame-bytes",
                "0",
            ][..],
            "--frame-bytes",
        ),
        (
            &["calc", "qd", "--gbps", "1", "--frame-bytes", "9"][..],
            "--km",
        ),
        (
            &["calc", "frame", "--payload-bytes", "8", "--opcode", "ack"][..],
            "--payload-bytes",
        ),
        (
            &["calc", "frame", "--payload-bytes", "8", "--opcode", "nope"][..],
            "--opcode",
        ),
        (
            &[
                "calc",
                "frame",
                "--payload-bytes",
                "5000",
                "--opcode",
                "write-only",
            ][..],
            "--payload-bytes",
        ),
        (&["calc", "frame", "--payload-bytes", "100"][..], "path MTU"),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
    }
}

/// A round trip that holds less than one frame still needs one outstanding frame: the
/// paper's rounding down would answer 0, a queue no QP can have.
#[test]
fn a_round_trip_under_one_frame_needs_a_queue_of_one() {
    let args = [
        "calc",
        "qd",
        "--gbps",
        "100",
        "--rtt-us",
        "0.2",
        "--frame-bytes",
        "4178",
    ];
    let (code, out, err) = rnic(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("queue depth      1 frame\n"), "{out}");
    assert!(out.contains("0.598, under one frame: at least 1"), "{out}");
    let mut json_args = args.to_vec();
    json_args.extend(["--json", "-"]);
    let (code, json, _) = rnic(&json_args);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["queue_depth"], 1, "{json}");
}

/// A frame shorter than Ethernet's 64 B minimum (FCS included) is no frame a link carries:
/// `calc frame` pads such a packet to 64 B, so `calc qd` refuses it, naming the flag and the
/// minimum (it answered 12,500 frames for --frame-bytes 10 over a 10 µs round trip).
#[test]
fn a_frame_under_ethernets_minimum_is_refused() {
    let qd_over_10us = |frame_bytes: &str| {
        rnic(&[
            "calc",
            "qd",
            "--gbps",
            "100",
            "--rtt-us",
            "10",
            "--frame-bytes",
            frame_bytes,
        ])
    };
    let (code, out, err) = qd_over_10us("10");
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("--frame-bytes 10") && err.contains("64 B"),
        "{err}"
    );
    // 64 B, the smallest frame, is an answer.
    let (code, out, err) = qd_over_10us("64");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("queue depth      1953 frames"), "{out}");
}

/// A frame longer than 9,216 B, the largest Ethernet jumbo frame rnic takes (its config has
/// no Ethernet MTU), is refused, naming the flag and the limit: `--frame-bytes
/// 18446744073709551615` answered a queue of 1 frame.
#[test]
fn a_frame_beyond_the_largest_jumbo_frame_is_refused() {
    let qd = |frame_bytes: &str| {
        rnic(&[
            "calc",
            "qd",
            "--gbps",
            "100",
            "--km",
            "10",
            "--frame-bytes",
            frame_bytes,
        ])
    };
    for big in ["18446744073709551615", "9217"] {
        let (code, out, err) = qd(big);
        assert_eq!(code, 2, "{big}: {out}{err}");
        assert!(
            err.contains(&format!("--frame-bytes {big}")) && err.contains("9,216 B"),
            "{err}"
        );
    }
    // 9,216 B itself is an answer.
    let (code, out, err) = qd("9216");
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("queue depth      135 frames"), "{out}");
}

/// `--us-per-km` turns `--km` into a round trip; with `--rtt-us` the round trip is given, so
/// a delay per km would change nothing: it is refused, naming both flags (it was ignored in
/// silence: `--rtt-us 5 --us-per-km 7` answered as if it were not there).
#[test]
fn a_delay_per_km_with_a_given_round_trip_is_refused() {
    let (code, out, err) = rnic(&[
        "calc",
        "qd",
        "--gbps",
        "100",
        "--rtt-us",
        "5",
        "--us-per-km",
        "7",
        "--frame-bytes",
        "4178",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("--us-per-km") && err.contains("--rtt-us"),
        "{err}"
    );
    // With --km it is the fibre's delay: 2 × 100 km × 7 µs/km.
    let (code, out, err) = rnic(&[
        "calc",
        "qd",
        "--gbps",
        "100",
        "--km",
        "100",
        "--us-per-km",
        "7",
        "--frame-bytes",
        "4178",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("round trip       1400 µs"), "{out}");
}

/// `calc qd --gbps 1e-308` exited 0 echoing a 300-digit decimal, `--gbps 1e12 --km 1e6`
/// printed 1.25e21 bytes in flight, and a missing round trip said "required: --km" alone.
#[test]
fn implausible_inputs_and_a_missing_round_trip_exit_2_briefly() {
    for (extra, flag) in [
        (
            &["--gbps", "1e-308", "--km", "1"][..],
            "--gbps 1e-308: give a value from",
        ),
        (
            &["--gbps", "1e12", "--km", "1e6"][..],
            "--gbps 1e12: give a value from",
        ),
        (
            &["--gbps", "100", "--km=1e-308"][..],
            "--km 1e-308: give a value from",
        ),
        (
            &["--gbps", "100", "--rtt-us=1e-308"][..],
            "--rtt-us 1e-308: give a value from",
        ),
        (&["--gbps", "100"][..], "<--km <KM>|--rtt-us <US>>"),
    ] {
        let mut args = vec!["calc", "qd", "--frame-bytes", "4178"];
        args.extend(extra);
        let (code, _, err) = rnic(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag) && err.len() < 400, "{args:?}: {err}");
    }
}
