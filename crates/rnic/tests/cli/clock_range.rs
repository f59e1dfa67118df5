//! Hostile time and rate settings never panic, hang or wrap the picosecond clock (u64 ps,
//! about 213 days): a value outside its field's range, or a run that needs more simulated
//! time than the clock can count, is refused with exit 2 naming the field; a run that
//! reaches the clock's horizon anyway stops there and says so (exit 3).

use crate::common::rnic;

use rnic_model::config::schema::{Kind, FIELDS};

/// Every field counted in time or rate units.
fn time_and_rate_fields() -> Vec<(&'static str, Kind)> {
    let units = ["ns", "us", "µs", "ps", "GHz", "Gb/s", "km"];
    FIELDS
        .iter()
        .filter(|f| units.contains(&f.unit))
        .map(|f| (f.path, f.kind))
        .collect()
}

/// Whether `x` lies in a float field's range.
fn in_range(kind: Kind, x: f64) -> bool {
    match kind {
        Kind::Float {
            min,
            max,
            min_exclusive,
        } => x.is_finite() && (if min_exclusive { x > min } else { x >= min }) && x <= max,
        Kind::UInt { min, max } => x.fract() == 0.0 && x >= min as f64 && x <= max as f64,
        _ => false,
    }
}

#[test]
fn every_time_and_rate_field_at_its_extremes_exits_cleanly() {
    let fields = time_and_rate_fields();
    assert!(fields.len() >= 25, "{} time and rate fields", fields.len());
    for (path, kind) in fields {
        let (lo, hi) = match kind {
            Kind::Float { min, max, .. } => (min, max),
            Kind::UInt { min, max } => (min as f64, max as f64),
            other => panic!("{path}: {other:?}"),
        };
        for x in [0.0, 1e-300, -1.0, lo, hi, hi * 10.0, 1e300] {
            let set = format!("{path}={x:e}");
            let (code, _, err) = rnic(&["perf", "write-bw", "-s", "64", "-n", "5", "--set", &set]);
            assert!(!err.contains("panicked"), "{set}: {err}");
            if in_range(kind, x) {
                // In range: the run itself decides (done, refused by a run check, or
                // ended incomplete by its timeouts), never a crash.
                assert!(matches!(code, 0 | 2 | 3), "{set}: exit {code}: {err}");
            } else {
                assert_eq!(code, 2, "{set}: {err}");
                assert!(err.contains(path), "{set}: {err}");
            }
        }
    }
}

/// Runs whose least simulated time is beyond the clock: refused before they start, naming
/// what makes them long.
#[test]
fn runs_longer_than_the_clock_can_count_exit_2() {
    for (args, want) in [
        // 1 s per message in the TX pipeline (10^6 cycles at 1 MHz), 10^8 messages.
        (
            &[
                "perf",
                "write-bw",
                "-s",
                "64",
                "-n",
                "100000000",
                "--set",
                "nic.clock_ghz=0.001",
                "--set",
                "nic.tx_msg_cycles=1000000",
            ][..],
            "nic.tx_msg_cycles",
        ),
        // 10 s links: a 40 s round trip, 10^8 times.
        (
            &[
                "perf",
                "write-lat",
                "-n",
                "100000000",
                "--set",
                "net.link_delay_ns=1e10",
            ],
            "net.link_delay_ns",
        ),
        // 1 MiB at 1 Mb/s: 8.4 s on the wire, 10^8 times.
        (
            &[
                "perf",
                "write-bw",
                "-s",
                "1048576",
                "-n",
                "100000000",
                "--set",
                "eth.gbps=0.001",
            ],
            "eth.gbps",
        ),
        // 1 s per packet in the TX pipeline, 4 Mi packets of 256 B per 1 GiB WRITE.
        (
            &[
                "perf",
                "write-bw",
                "-s",
                "1073741824",
                "-m",
                "256",
                "-n",
                "5",
                "--set",
                "nic.clock_ghz=0.001",
                "--set",
                "nic.tx_pkt_cycles=1000000",
            ],
            "nic.tx_pkt_cycles",
        ),
        // 10 s of CPU per post.
        (
            &[
                "perf",
                "send-bw",
                "-s",
                "64",
                "-n",
                "100000000",
                "--set",
                "host.post_send_ns=1e10",
            ],
            "host.post_send_ns",
        ),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(want) && err.contains("days") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A `-D` run simulates its fixed warm-up (`sim.warmup_us`) and then its window: beyond an
/// hour together (the limit of each, and of an iteration-mode run's gaps) it is refused
/// before it starts, naming both, where it ran for hours.
#[test]
fn a_fixed_warm_up_and_window_past_an_hour_exit_2() {
    for (d, warmup) in [("0.0006", "3600000000"), ("1800", "1800000001")] {
        let set = format!("sim.warmup_us={warmup}");
        let (code, _, err) = rnic(&["perf", "write-bw", "-D", d, "--set", &set]);
        assert_eq!(code, 2, "-D {d} {set}: {err}");
        assert!(
            err.contains("sim.warmup_us") && err.contains("-D/--duration") && err.contains("hour"),
            "-D {d} {set}: {err}"
        );
    }
}

/// With the automatic warm-up, the detection gives up no later than an hour less the `-D`
/// window, so that warm-up and window stay within the hour: with sim.max_warmup_us at
/// an hour and a window of 3599.999 s it gave up after the hour and the run simulated two
/// (latency gaps of 1 s keep the events few; the window opens at the first completion
/// after the give-up, at most a gap later).
#[test]
fn the_automatic_warm_up_leaves_the_window_room_within_an_hour() {
    let (code, out, err) = rnic(&[
        "perf",
        "write-lat",
        "-D",
        "3599.999",
        "--latency_gap",
        "1000000",
        "--set",
        "sim.max_warmup_us=3600000000",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let r = &v;
    let open_us = r["window_open_us"].as_f64().expect("window_open_us");
    assert!(
        open_us + 3_599_999_000.0 <= 3.6e9 + 1e6,
        "window opened at {open_us} µs: {r}"
    );
    let why = r["window_reason"].as_str().unwrap_or_default();
    assert!(
        why.starts_with("never settled by 1000 µs, an hour (the longest a run may simulate) less the 3599999000 µs window"),
        "{why}"
    );
}

/// A topology file's lengths, delays and rates have the config's ranges: 10^30 ns used to
/// overflow the clock (a panic in debug builds).
#[test]
fn topology_file_delays_beyond_range_exit_2() {
    let dir = std::env::temp_dir().join(format!("rnic-clock-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (switch, link, want) in [
        ("latency_ns = 1e30", "", "switch[0].latency_ns"),
        ("", "delay_ns = 1e25", "link[1].delay_ns"),
        ("", "km = 1e12", "link[1].km"),
        ("", "gbps = 1e9", "link[1].gbps"),
    ] {
        let file = dir.join("far.toml");
        std::fs::write(
            &file,
            format!(
                "[[switch]]\nname = \"s\"\n{switch}\n[[link]]\nends = [\"node0\", \"s\"]\n\
                 [[link]]\nends = [\"node1\", \"s\"]\n{link}\n"
            ),
        )
        .unwrap();
        let topology = format!("net.topology={}", file.display());
        let (code, _, err) = rnic(&[
            "perf", "write-bw", "-s", "64", "-n", "5", "--set", &topology,
        ]);
        assert_eq!(code, 2, "{want}: {err}");
        assert!(
            err.contains(want) && !err.contains("panicked"),
            "{want}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run the pre-check cannot foresee (10 s CPU polls are not in its least time) stops at
/// the clock's horizon with its reason, instead of wrapping or panicking.
#[test]
fn a_run_reaching_the_clock_horizon_stops_and_says_so() {
    let (code, _, err) = rnic(&[
        "perf",
        "write-lat",
        "-n",
        "100000000",
        "--set",
        "host.poll_cq_ns=1e10",
        "--set",
        "host.mem_latency_ns=1e10",
    ]);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("picosecond clock"), "{err}");
}

/// A field in microseconds is bounded in microseconds: at most an hour (3.6e9 µs), the
/// bound of every `*_us` setting, not the nanosecond fields' 10^10 read as µs (2.8 hours).
#[test]
fn microsecond_fields_are_bounded_in_microseconds() {
    for (path, kind) in time_and_rate_fields() {
        if !path.ends_with("_us") {
            continue;
        }
        let max = match kind {
            Kind::Float { max, .. } => max,
            Kind::UInt { max, .. } => max as f64,
            _ => continue,
        };
        assert!(max <= 3.6e9, "{path}: at most {max} µs");
    }
}
