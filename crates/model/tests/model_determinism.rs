//! Identical seed and config give identical results (wall time aside) and identical pcaps;
//! another seed changes a randomized run.

mod model_common;

use model_common::*;
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
        s.pcap = Some(dir.join(format!("run{k}.pcap")));
        let mut r = run(&cfg, &s);
        assert!(r.result.bytes_verified, "{:?}", r.failures);
        r.result.wall_seconds = 0.0;
        outs.push((
            r.result,
            r.nodes,
            std::fs::read(s.pcap.as_ref().unwrap()).unwrap(),
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
