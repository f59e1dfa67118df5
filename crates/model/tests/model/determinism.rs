//! Identical seed and config give identical results (wall time aside) and identical pcaps;
//! another seed changes a randomized run.

use crate::common::*;
use rnic_model::workload::PerfTest;

fn lossy() -> rnic_model::config::Config {
    let mut cfg = baseline(10.0);
    cfg.net.impair.loss = 0.002;
    cfg.net.impair.reorder_depth = 2;
    cfg.net.impair.dup = 0.001;
    cfg.qp.timeout = 8;
    cfg
}

#[test]
fn model_same_seed_same_results_and_pcap() {
    let cfg = lossy();
    let dir = std::env::temp_dir().join(format!("rnic-model-det-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut outs = Vec::new();
    for k in 0..2 {
        let mut s = spec(PerfTest::WriteBw, 4096, 8, 3);
        s.iters = 200;
        s.tx_depth = 16;
        s.pcap = Some(rnic_model::workload::PcapOut::of_server(
            dir.join(format!("run{k}.pcap")),
        ));
        let mut r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        r.result.wall_seconds = 0.0;
        outs.push((
            r.result,
            r.nodes,
            std::fs::read(&s.pcap.as_ref().unwrap().path).unwrap(),
        ));
    }
    assert!(
        outs[0].0.retransmissions > 0,
        "the impairments should cause retransmissions"
    );
    assert_eq!(outs[0].0, outs[1].0);
    assert_eq!(outs[0].1, outs[1].1);
    assert!(outs[0].2.len() > 24 + 16 * 100);
    assert!(outs[0].2 == outs[1].2, "pcaps differ");
    // The capture is a valid pcap of RoCEv2 frames.
    let mut reader = pcap_parser::LegacyPcapReader::new(65536, &outs[0].2[..]).unwrap();
    let mut frames = 0u64;
    loop {
        use pcap_parser::traits::PcapReaderIterator;
        match reader.next() {
            Ok((offset, block)) => {
                if let pcap_parser::PcapBlockOwned::Legacy(b) = block {
                    rnic_wire::FrameRepr::parse(b.data).expect("a valid RoCEv2 frame");
                    frames += 1;
                }
                reader.consume(offset);
            }
            Err(pcap_parser::PcapError::Eof) => break,
            Err(pcap_parser::PcapError::Incomplete(_)) => reader.refill().unwrap(),
            Err(e) => panic!("pcap: {e:?}"),
        }
    }
    assert!(frames > 1600, "{frames} frames captured");
    let mut other = cfg.clone();
    other.sim.seed = 2;
    let mut s = spec(PerfTest::WriteBw, 4096, 8, 3);
    s.iters = 200;
    s.tx_depth = 16;
    let mut r = run(&other, &s);
    r.result.wall_seconds = 0.0;
    assert_ne!(
        r.result, outs[0].0,
        "a different seed should change a lossy run"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A progress observer only watches: the events run in the same order, so every figure is
/// the same with and without one, for iteration runs, duration runs, runs of several sizes
/// and runs stopped by the event limit (not a multiple of the loop's chunk of events).
#[test]
fn model_progress_observer_changes_nothing() {
    use rnic_model::{run_perf, run_perf_with_progress};
    let cfg = lossy();
    let mut iters = spec(PerfTest::WriteBw, 4096, 8, 3);
    iters.iters = 100;
    iters.tx_depth = 16;
    let mut window = spec(PerfTest::WriteBw, 64, 64, 3);
    window.duration_us = Some(100.0);
    let mut sizes = spec(PerfTest::ReadBw, 64, 2, 1);
    sizes.sizes = vec![64, 1024, 8192];
    sizes.iters = 20;
    let mut limited_cfg = baseline(10.0);
    limited_cfg.sim.max_events = 10_000;
    let mut limited = spec(PerfTest::WriteBw, 64, 4, 1);
    limited.iters = 5000;
    for (cfg, s) in [
        (&cfg, &iters),
        (&cfg, &window),
        (&cfg, &sizes),
        (&limited_cfg, &limited),
    ] {
        let mut plain = run_perf(cfg, s).unwrap();
        let mut reports = Vec::new();
        let mut watched = run_perf_with_progress(cfg, s, &mut |p| reports.push(*p)).unwrap();
        plain.wall_seconds = 0.0;
        watched.wall_seconds = 0.0;
        assert_eq!(plain, watched, "{:?}", s.test);
        assert!(plain.events > 0);
        for p in &reports {
            assert!(p.events <= plain.events && p.sizes == s.sizes.len());
            assert_eq!(p.ops_asked.is_some(), s.duration_us.is_none());
        }
    }
    assert_eq!(
        run_perf(&limited_cfg, &limited).unwrap().events,
        10_000,
        "the event limit stops the run"
    );
}
