//! The 24-bit PSN wrap: QPs start at a random PSN by default (`qp.start_psn = "random"`, as
//! rdma_cm and perftest draw them), so a run may cross the wrap anywhere. Here every QP
//! starts 256 PSNs before it (`"near_wrap"`) and sends well past it, with 1 % loss so that
//! NAKs, retransmissions and duplicate detection happen around the wrap, for every verb and
//! every reliability mode and service. Each run must verify its bytes and behave exactly as
//! the same run from PSN 0: the PSN numbers no timing.

use crate::common::*;
use rnic_model::config::{parse_set, Config};
use rnic_model::result::{PerfResult, RunStatus};
use rnic_model::workload::PerfTest;

fn config(profile: &str, sets: &[&str], start: &str) -> Config {
    let start = format!("qp.start_psn={start}");
    let sets: Vec<_> = sets
        .iter()
        .copied()
        .chain(["net.impair.loss=0.01", "sim.warmup_us=0", start.as_str()])
        .map(|s| parse_set(s).unwrap())
        .collect();
    Config::resolve(profile, &sets).unwrap()
}

fn result(
    profile: &str,
    sets: &[&str],
    start: &str,
    test: PerfTest,
    size: u64,
    iters: u64,
) -> PerfResult {
    let mut s = spec(test, size, 2, 1);
    s.iters = iters;
    run(&config(profile, sets, start), &s).result
}

#[test]
fn every_mode_crosses_the_psn_wrap_as_it_runs_from_zero() {
    use PerfTest::*;
    // (profile, config, test, bytes, iterations per QP): each QP sends more than 256 PSNs.
    let cases: &[(&str, &[&str], PerfTest, u64, u64)] = &[
        ("baseline", &[], WriteBw, 65536, 40),
        ("baseline", &[], ReadBw, 65536, 40),
        ("baseline", &[], SendBw, 4096, 400),
        ("baseline", &[], AtomicBw, 8, 400),
        ("baseline", &[], WriteLat, 64, 300),
        ("baseline", &["host.connect=direct"], WriteBw, 65536, 40),
        ("baseline", &["qp.transport=uc"], WriteBw, 4096, 400),
        ("baseline", &["qp.transport=ud"], SendBw, 1024, 400),
        ("ornic", &[], WriteBw, 1 << 20, 5),
        ("ornic", &[], ReadBw, 1 << 20, 5),
        ("ornic", &["qp.reliability=mp_rdma"], WriteBw, 1 << 20, 5),
    ];
    for &(profile, sets, test, size, iters) in cases {
        let what = format!("{test:?} {size} B under {profile} {sets:?}");
        let wrap = result(profile, sets, "near_wrap", test, size, iters);
        assert_eq!(wrap.status, RunStatus::Ok, "{what}: {}", wrap.reason);
        assert!(wrap.bytes_verified, "{what}");
        let zero = result(profile, sets, "zero", test, size, iters);
        assert_eq!(
            (wrap.simulated_time_us, wrap.retransmissions, wrap.timeouts),
            (zero.simulated_time_us, zero.retransmissions, zero.timeouts),
            "{what}: the run across the wrap differs from the run from PSN 0"
        );
        assert_eq!(
            wrap.unreliable.as_ref().map(|u| u.messages_received),
            zero.unreliable.as_ref().map(|u| u.messages_received),
            "{what}"
        );
    }
}

#[test]
fn random_start_psns_follow_the_seed() {
    let cfg = config("baseline", &[], "random");
    let mut s = spec(PerfTest::WriteBw, 4096, 4, 1);
    s.iters = 50;
    let dir = std::env::temp_dir().join(format!("rnic-psn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let capture = |seed: u64, name: &str| {
        let mut c = cfg.clone();
        c.sim.seed = seed;
        let mut s = s.clone();
        s.pcap = Some(rnic_model::workload::PcapOut::of_server(dir.join(name)));
        let r = run(&c, &s).result;
        assert_eq!(r.status, RunStatus::Ok, "{}", r.reason);
        std::fs::read(dir.join(name)).unwrap()
    };
    let (a, b, c) = (capture(1, "a"), capture(1, "b"), capture(2, "c"));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(a, b, "the same seed gives the same PSNs (and bytes)");
    assert_ne!(a, c, "another seed draws other PSNs");
}
