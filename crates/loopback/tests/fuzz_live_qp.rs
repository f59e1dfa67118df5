//! Acceptance: a million hostile-but-well-formed packets against live QPs, no panic, nothing
//! outside a registered region touched.

use rnic_loopback::fuzz::fuzz_live_qps;

#[test]
fn a_million_hostile_packets_against_live_qps() {
    let report = fuzz_live_qps(0xbad, 1_000_000).unwrap_or_else(|e| panic!("{e}"));
    println!("{report:?}");
    assert_eq!(report.inputs, 1_000_000);
    assert!(report.reconnects > 1_000, "{report:?}");
    assert!(
        report.frames_exchanged > 100_000,
        "real traffic must flow: {report:?}"
    );
}
