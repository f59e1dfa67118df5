//! A capture's records are in time order, as a sniffer on the port writes them: Wireshark
//! and tshark number frames in file order and compute deltas, RTTs and throughput graphs
//! from consecutive timestamps. rnic's port hands a frame to the capture when it is queued,
//! possibly before frames that arrive in the meantime; the capture still has to be written
//! in the order the frames were on the wire.

use crate::common::rnic;

/// Every record's timestamp (ns) of a classic little-endian nanosecond pcap.
fn timestamps_ns(path: &std::path::Path) -> Vec<u64> {
    let b = std::fs::read(path).expect("read the capture");
    assert_eq!(&b[..4], &[0x4d, 0x3c, 0xb2, 0xa1], "a nanosecond pcap");
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let mut at = 24;
    let mut ts = Vec::new();
    while at + 16 <= b.len() {
        ts.push(u64::from(u32_at(at)) * 1_000_000_000 + u64::from(u32_at(at + 4)));
        at += 16 + u32_at(at + 8) as usize;
    }
    assert_eq!(at, b.len(), "records end at the file's end");
    ts
}

#[test]
fn the_captures_records_are_in_time_order() {
    let dir = std::env::temp_dir().join(format!("rnic-pcap-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Multi-packet WRITEs queue several frames at the server's port at once, while the
    // client's ACKs arrive between them; with loss, NAKs and resends too.
    for (name, extra) in [
        ("clean", &[][..]),
        ("lossy", &["--set", "net.impair.loss=0.02"][..]),
    ] {
        let pcap = dir.join(format!("{name}.pcap"));
        let mut args = vec![
            "perf", "write-bw", "-s", "8192", "-m", "2048", "-n", "100", "--seed", "3",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--pcap", pcap.to_str().unwrap()]);
        let (code, _, err) = rnic(&args);
        assert_eq!(code, 0, "{err}");
        let ts = timestamps_ns(&pcap);
        assert!(ts.len() > 400, "{name}: {} frames", ts.len());
        let back: Vec<usize> = (1..ts.len()).filter(|&i| ts[i] < ts[i - 1]).collect();
        assert!(
            back.is_empty(),
            "{name}: {} of {} records go back in time, the first is frame {} ({} ns after {} ns)",
            back.len(),
            ts.len(),
            back.first().map_or(0, |i| i + 1),
            back.first().map_or(0, |&i| ts[i]),
            back.first().map_or(0, |&i| ts[i - 1]),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
