//! Hostile-but-well-formed packets against live out-of-order QPs (ORNIC and MP-RDMA): no
//! panic, nothing outside a registered region touched, real OOO WRITEs still complete. The
//! suite runs 200,000 per mode; the acceptance run of a million per mode is the ignored test
//! (`cargo test -p rnic-loopback --test fuzz_live_ooo -- --ignored`).

use rnic_loopback::fuzz::fuzz_live_ooo_qps;

fn attack(inputs: u64) {
    for mp_rdma in [false, true] {
        let r = fuzz_live_ooo_qps(0x00c0_ffee, inputs, mp_rdma).unwrap_or_else(|e| panic!("{e}"));
        println!("mp_rdma {mp_rdma}: {r:?}");
        assert_eq!(r.inputs, inputs);
        assert!(r.refused > inputs / 10, "{r:?}");
        assert!(r.real_ops_completed > 0, "real WRITEs must complete: {r:?}");
        assert!(
            r.frames_exchanged > inputs / 10,
            "real traffic must flow: {r:?}"
        );
    }
}

#[test]
fn hostile_packets_against_live_ooo_qps() {
    attack(200_000);
}

#[test]
#[ignore = "a million per mode: the acceptance run, about a minute"]
fn a_million_hostile_packets_against_live_ooo_qps() {
    attack(1_000_000);
}
