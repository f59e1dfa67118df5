//! `nic.iso_transport = "qp_round_robin"`: the NIC serves every QP in turn, one packet each,
//! as the NIC of the ns-3 simulator released with the HPCC paper does. A short WRITE posted
//! while the same NIC streams 1 MB WRITEs on another QP then goes out between the long
//! message's packets instead of after its last one; every byte is verified either way.

use crate::common::rnic;

const SCENARIO: &str = r#"
name = "short-beside-long"
profile = "baseline"

[set]
net.clients = 2

[[flow]]
name = "long"
test = "write-bw"
size = 1048576
iters = 5
tx_depth = 1
clients = [1]

[[flow]]
name = "short"
test = "write-bw"
size = 4096
iters = 5
clients = [2]
start_us = 20.0
"#;

/// The short flow's measured time (µs) with `order` as the NIC's transmit order.
fn short_flow_us(order: &str) -> f64 {
    let dir = std::env::temp_dir().join(format!("rnic-qp-rr-{}-{order}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scenario.toml");
    std::fs::write(&file, SCENARIO).unwrap();
    let set = format!("nic.iso_transport={order}");
    let (code, out, err) = rnic(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--set",
        &set,
        "--json",
        "-",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{order}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let flows = v["flows"].as_array().expect("flows");
    assert!(flows.iter().all(|f| f["bytes_verified"] == true), "{order}");
    flows[1]["measured_us"].as_f64().expect("measured_us")
}

#[test]
fn a_short_write_overtakes_a_long_message_only_under_qp_round_robin() {
    let rtc = short_flow_us("run_to_completion");
    let rr = short_flow_us("qp_round_robin");
    // Run to completion: each short WRITE waits for the long 1 MB message in progress
    // (about 85 µs at 100 Gb/s). Round robin: it waits for one packet of it at most.
    assert!(rtc > 50.0, "run to completion: {rtc} µs");
    assert!(rr < 20.0, "qp round robin: {rr} µs");
}
