//! ORNIC's out-of-order WRITE through the whole timed model (`--profile ornic`, whose
//! `qp.reliability` is "ornic"): sprayed, reordered, lossy and per-packet-ACK (MP-RDMA) runs
//! land every byte (the payload oracle checks each placed payload), and a verb the
//! out-of-order QP cannot run is refused with an error naming the field.

use crate::common::rnic;

fn write_bw(extra: &[&str]) -> serde_json::Value {
    let base = [
        "perf",
        "write-bw",
        "--profile",
        "ornic",
        "-s",
        "1048576",
        "-n",
        "5",
        "-t",
        "1",
        "--json",
        "-",
    ];
    let (code, out, err) = rnic(&[&base[..], extra].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes_verified"], true, "{v}");
    assert_eq!(v["verified_bytes"].as_u64(), Some(5 << 20), "{v}");
    v
}

const SPRAY: [&str; 6] = [
    "--set",
    "net.spray.paths=4",
    "--set",
    "net.spray.mdd_ns=20000",
    "--set",
    "net.spray.policy=random",
];

#[test]
fn ooo_write_in_order_sprayed_reordered_and_lossy() {
    let plain = write_bw(&[]);
    assert_eq!(plain["retransmissions"].as_u64(), Some(0));
    assert!(plain["goodput_gbps"].as_f64().unwrap() > 90.0, "{plain}");
    let sprayed = write_bw(&SPRAY);
    assert_eq!(sprayed["retransmissions"].as_u64(), Some(0), "{sprayed}");
    assert!(
        sprayed["goodput_gbps"].as_f64().unwrap() > 50.0,
        "{sprayed}"
    );
    let window = write_bw(&["--set", "net.impair.reorder_window=64"]);
    assert_eq!(window["retransmissions"].as_u64(), Some(0), "{window}");
    let lossy = write_bw(&[&SPRAY[..], &["--set", "net.impair.loss=0.01"]].concat());
    assert!(lossy["retransmissions"].as_u64().unwrap() > 0, "{lossy}");
    assert!(lossy["naks"].as_u64().unwrap() > 0, "bitmap NAKs: {lossy}");
    // Deterministic: the same config and seed give the same run.
    let again = write_bw(&[&SPRAY[..], &["--set", "net.impair.loss=0.01"]].concat());
    assert_eq!(lossy["simulated_time_us"], again["simulated_time_us"]);
    let mp = write_bw(
        &[
            &SPRAY[..],
            &[
                "--set",
                "qp.reliability=mp_rdma",
                "--set",
                "net.impair.loss=0.005",
            ],
        ]
        .concat(),
    );
    assert!(mp["retransmissions"].as_u64().unwrap() > 0, "{mp}");
}

#[test]
fn ooo_read_sprayed_and_lossy_lands_every_byte() {
    let base = [
        "perf",
        "read-bw",
        "--profile",
        "ornic",
        "-s",
        "1048576",
        "-n",
        "5",
        "-t",
        "1",
        "--json",
        "-",
    ];
    let lossy = [&SPRAY[..], &["--set", "net.impair.loss=0.01"]].concat();
    let (code, out, err) = rnic(&[&base[..], &lossy[..]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes_verified"], true, "{v}");
    assert_eq!(v["verified_bytes"].as_u64(), Some(5 << 20), "{v}");
    assert!(
        v["retransmissions"].as_u64().unwrap() > 0,
        "ranges asked again: {v}"
    );
}

#[test]
fn many_qps_with_deep_queues_complete() {
    // Each QP sends one OOO WQE at a time; the NIC's TX backlog must see every WQE start
    // (from the transport's `starts_ooo_wqe`), or fetched WQEs pile up until it stalls.
    let (code, out, err) = rnic(&[
        "perf",
        "write-bw",
        "--profile",
        "ornic",
        "-s",
        "65536",
        "-n",
        "200",
        "-t",
        "16",
        "-q",
        "4",
        "--json",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes_verified"], true, "{v}");
    assert_eq!(v["ops_completed"].as_u64(), Some(800), "{v}");
}

#[test]
fn other_tests_on_an_ooo_qp_are_refused_with_the_field_named() {
    let (code, _, err) = rnic(&[
        "perf",
        "send-bw",
        "--profile",
        "ornic",
        "-s",
        "4096",
        "-n",
        "5",
    ]);
    assert_eq!(code, 2, "a bad request exits 2: {err}");
    assert!(
        err.contains("qp.reliability") && err.contains("gbn"),
        "{err}"
    );
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "4096",
        "-n",
        "5",
        "--set",
        "qp.reliability=tcp",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("qp.reliability"), "{err}");
}

#[test]
fn more_ooo_qps_than_the_nic_supports_are_refused_naming_ooo_qps() {
    // 16 QPs on a NIC that supports 4 (a pool of 8 blocks): refused, not starved into
    // RETRY_EXC_ERR; 4 QPs through the same pool under loss complete.
    let run = |qps: &str| {
        rnic(&[
            "perf",
            "write-bw",
            "-n",
            "17",
            "-q",
            qps,
            "--set",
            "qp.reliability=ornic",
            "--set",
            "ooo.qps=4",
            "--set",
            "net.impair.loss=0.01",
        ])
    };
    let (code, _, err) = run("16");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ooo.qps = 4") && err.contains("node 0"),
        "{err}"
    );
    let (code, _, err) = run("4");
    assert_eq!(code, 0, "{err}");
}

/// A counter of `rnic perf ... --stats`.
fn stat(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(name)).then(|| it.next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

#[test]
fn ooo_read_responses_wait_for_the_responders_host_read() {
    // The READ's target (the perftest client side) reads each range from host memory before
    // its responses leave: 5 MB in reads of at most one MRRS (512 B), the TX engine waiting
    // on them; several QPs at once must all finish.
    for (qps, threads) in [("1", "1"), ("4", "16")] {
        let (code, out, err) = rnic(&[
            "perf",
            "read-bw",
            "--profile",
            "ornic",
            "-s",
            "1048576",
            "-n",
            "5",
            "-t",
            threads,
            "-q",
            qps,
            "--stats",
        ]);
        assert_eq!(code, 0, "{err}");
        let text = format!("{out}{err}");
        assert!(text.contains("payload bytes verified"), "{text}");
        let reads = stat(&text, "clients.nic.pcie.read_requests");
        let qps: u64 = qps.parse().unwrap();
        assert!(reads >= qps * (5 << 20) / 512, "{reads} host reads");
        assert!(stat(&text, "clients.nic.tx.payload_stalls") > 0);
    }
}
