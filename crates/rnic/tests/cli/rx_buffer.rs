//! The NIC's receive buffer and PCIe backpressure: a NIC that takes in data faster than its
//! PCIe link writes it to the host holds frames in its receive buffer, and when that fills
//! it pauses its link peer (`net.pfc = true`) or drops and lets go-back-N recover. Either
//! way the run ends `ok` with every byte verified and a rate PCIe can carry.

use crate::common::rnic;

use rnic::config::Config;
use rnic::report::{PerfResult, RunStatus};

/// Runs `rnic perf ARGS --json -` and returns the exit code, the result and stderr.
fn perf_json(args: &[&str]) -> (i32, PerfResult, String, String) {
    let mut a = vec!["perf"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "-"]);
    let (code, out, err) = rnic(&a);
    let r: PerfResult = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("{args:?}: no JSON ({e}); stderr: {err}"));
    (code, r, out, err)
}

fn stat(r: &PerfResult, key: &str) -> u64 {
    *r.stats
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in the stats"))
}

/// Four clients writing 64 KiB messages into one server whose PCIe link carries 64 Gb/s,
/// less than its 100 Gb/s port brings in (`model_error` before the receive buffer).
const INCAST_INTO_SLOW_PCIE: &[&str] = &[
    "write-bw",
    "-s",
    "65536",
    "-n",
    "200",
    "-q",
    "4",
    "--clients",
    "4",
    "--reversed",
    "--set",
    "pcie.gbps=64",
];

/// Asserts that the payload `r` delivered fits what a PCIe link of `pcie_gbps` carries
/// into the host: its payload share of the TLPs (MPS-sized writes, each with its TLP
/// header), over the measured time, plus what the receive buffer may still hold when the
/// last ACK leaves (the responder acknowledges placed data before its write is out).
fn assert_under_pcie(r: &PerfResult, pcie_gbps: f64) {
    let cfg = Config::default();
    let mps = cfg.pcie.mps_bytes as f64;
    let payload_gbps = pcie_gbps * mps / (mps + f64::from(cfg.pcie.tlp_header_bytes));
    let t_us = r.simulated_time_us;
    // Gb/s × µs = 1000 bits.
    let delivered = r.goodput_gbps * t_us;
    let allowed = payload_gbps * t_us + cfg.nic.rx_buffer_bytes as f64 * 8.0 / 1e3;
    assert!(
        delivered <= allowed,
        "{} Gb/s over {t_us} µs through {payload_gbps} Gb/s of PCIe payload",
        r.goodput_gbps
    );
    assert!(
        r.goodput_gbps > 0.9 * payload_gbps,
        "PCIe-bound, it should run near PCIe: {} Gb/s of {payload_gbps}",
        r.goodput_gbps
    );
}

#[test]
fn a_pcie_bound_incast_pauses_the_switch_with_pfc_and_loses_nothing() {
    let args = [INCAST_INTO_SLOW_PCIE, &["--set", "net.pfc=true"]].concat();
    let (code, r, _, err) = perf_json(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified, "{err}");
    assert_under_pcie(&r, 64.0);
    assert_eq!(stat(&r, "server.nic.rx_buffer.drops"), 0);
    assert!(
        stat(&r, "server.nic.rx_buffer.pauses") > 0,
        "the server pauses"
    );
    assert!(stat(&r, "server.nic.rx_buffer.pause_ps") > 0);
    let peak = stat(&r, "server.nic.rx_buffer.peak_bytes");
    assert!(peak <= Config::default().nic.rx_buffer_bytes, "{peak}");
    // The switch port feeding the server was held by those pauses.
    assert!(stat(&r, "net.pfc.switch_paused_ps") > 0);
    assert_eq!(stat(&r, "net.switch_drops"), 0);
    assert_eq!(r.retransmissions, 0, "lossless");
}

#[test]
fn a_pcie_bound_incast_without_pfc_drops_and_recovers() {
    let (code, r, _, err) = perf_json(INCAST_INTO_SLOW_PCIE);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified, "{err}");
    let drops = stat(&r, "server.nic.rx_buffer.drops");
    assert!(drops > 0, "a full receive buffer drops");
    assert!(
        stat(&r, "server.nic.rx_buffer.drop_bytes") >= drops * 64,
        "each drop is a whole frame"
    );
    assert!(r.retransmissions > 0, "go-back-N resends what was dropped");
    assert_eq!(stat(&r, "server.nic.rx_buffer.pauses"), 0, "no PFC");
    assert!(
        err.contains("NICs dropped") && err.contains("nic.rx_buffer_bytes"),
        "{err}"
    );
}

/// A host takes received data through its PCIe link (128 Gb/s each way by default): four
/// clients writing into a server whose topology link runs at 400 Gb/s cannot deliver more
/// than that link carries to the server's memory. Received frames wait in the NIC's
/// receive buffer for PCIe, which pauses the switch when it fills (the run used to end as a
/// model error: received frames did not wait).
#[test]
fn a_server_link_faster_than_pcie_runs_at_the_pcie_rate() {
    // The server's link runs at 400 Gb/s, four times its clients' and three times its
    // PCIe link's 128 Gb/s.
    let (dir, topology) = crate::common::fat_server_link_topology("rx-buffer");
    let args = [
        "write-bw",
        "-s",
        "65536",
        "-n",
        "200",
        "-q",
        "4",
        "--clients",
        "4",
        "--reversed",
        "--set",
        "net.pfc=true",
        "--set",
        &topology,
    ];
    let (code, r, first, err) = perf_json(&args);
    let (_, _, second, _) = perf_json(&args);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
    assert!(r.bytes_verified);
    assert!(
        r.goodput_gbps <= 128.0,
        "{} Gb/s into 128 Gb/s of PCIe",
        r.goodput_gbps
    );
    assert_under_pcie(&r, Config::default().pcie.gbps);
    assert_eq!(stat(&r, "server.nic.rx_buffer.drops"), 0);
    assert!(stat(&r, "server.nic.rx_buffer.pauses") > 0);
    // Deterministic: the same run twice gives the same JSON, wall time apart.
    let strip = |s: &str| {
        s.lines()
            .filter(|l| !l.contains("wall_seconds"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&first), strip(&second));
}

#[test]
fn a_receive_buffer_smaller_than_a_frame_is_refused() {
    // With PFC the XOFF and XON levels must also fit inside the buffer, in order.
    for (sets, wanted) in [
        (
            &["nic.rx_buffer_bytes=1000"][..],
            &["nic.rx_buffer_bytes = 1000", "raise it to"][..],
        ),
        (
            &["net.pfc=true", "nic.rx_buffer_bytes=131072"],
            &["nic.rx_pfc_xon_bytes"],
        ),
        (
            &["net.pfc=true", "nic.rx_pfc_headroom_bytes=2000000"],
            &["nic.rx_pfc_headroom_bytes = 2000000"],
        ),
    ] {
        let mut args = vec!["perf", "write-bw", "-n", "10"];
        for set in sets {
            args.extend(["--set", set]);
        }
        let (code, _, err) = rnic(&args);
        assert_eq!(code, 2, "{sets:?}: {err}");
        assert!(wanted.iter().all(|w| err.contains(w)), "{sets:?}: {err}");
    }
}
