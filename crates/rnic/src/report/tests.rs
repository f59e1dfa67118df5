use super::text::*;
use super::*;
use crate::config::Config;
use crate::perf::{PerfSpec, PerfTest};

fn row(size: u64, iters: u64, peak: f64, avg: f64, mops: f64) -> SizeResult {
    SizeResult {
        size_bytes: size,
        iterations: iters,
        bw_peak_mb_s: peak,
        bw_avg_mb_s: avg,
        msg_rate_mops: mops,
        ..Default::default()
    }
}

fn spec(test: PerfTest) -> PerfSpec {
    PerfSpec::perftest(test)
}

// Expected strings below were produced by glibc printf with perftest's format macros.
#[test]
fn bw_rows_match_perftest_printf() {
    assert_eq!(
        bw_row(&row(65536, 5000, 11030.624, 11027.651, 0.1764421), false),
        " 65536      5000             11030.62            11027.65\t\t   0.176442\n"
    );
    assert_eq!(
        bw_row(&row(2, 123456789012, 1.0, 0.5, 66.4), false),
        " 2          123456789012       1.00               0.50   \t\t   66.400000\n"
    );
}

#[test]
fn small_gbits_rows_use_the_extended_format() {
    let to_mb = 1e9 / 8.0 / MB;
    let r = row(2, 5000, 0.0123 * to_mb, 0.01234567 * to_mb, 0.7712345);
    assert_eq!(
        bw_row(&r, true),
        " 2          5000           0.012300            0.012346            0.771235\n"
    );
}

#[test]
fn lat_rows_match_perftest_printf() {
    let mut r = row(2, 1000, 0.0, 0.0, 0.0);
    r.latency_us = LatencyStats {
        min: 1.03,
        max: 3.05,
        p50: 1.05,
        avg: 1.0612,
        stdev: 0.054,
        p99: 1.16,
        p999: 3.05,
    };
    assert_eq!(
        lat_row(&r),
        " 2       1000          1.03           3.05         1.05     \t       1.06        \t0.05   \t\t1.16    \t\t3.05   \n"
    );
    let mut r = row(8388608, 1000, 0.0, 0.0, 0.0);
    r.latency_us = LatencyStats {
        min: 1234.5,
        max: 12345.678,
        p50: 1.0,
        avg: 1.0,
        stdev: 0.0,
        p99: 1.0,
        p999: 1.0,
    };
    assert_eq!(
        lat_row(&r),
        " 8388608 1000          1234.50        12345.68      1.00     \t       1.00        \t0.00   \t\t1.00    \t\t1.00   \n"
    );
    let r = row(2, 123456, 0.0, 0.0, 0.666666666);
    assert_eq!(
        lat_dur_row(&r, 1.5),
        " 2             123456            1.50           666666.67\n"
    );
}

#[test]
fn duration_average_is_the_window_over_the_iterations_as_perftest_computes_it() {
    // 183 round trips of 5.44 us in a 1,000 us window: the samples' mean is 2.72 us, but
    // the window also holds 4.5 us of the 184th round trip.
    let mut r = row(64, 183, 0.0, 0.0, 0.183);
    r.simulated_time_us = 1000.0;
    r.latency_us.avg = 2.72;
    let ping_pong = duration_t_avg_us(&r, &spec(PerfTest::WriteLat));
    assert!(
        (ping_pong - 1000.0 / 2.0 / 183.0).abs() < 1e-12,
        "{ping_pong}"
    );
    assert!((duration_t_avg_us(&r, &spec(PerfTest::SendLat)) - ping_pong).abs() < 1e-12);
    // READ and atomic iterations are one operation each, not a round trip of two.
    let one_way = duration_t_avg_us(&r, &spec(PerfTest::ReadLat));
    assert!((one_way - 1000.0 / 183.0).abs() < 1e-12, "{one_way}");
    assert!((duration_t_avg_us(&r, &spec(PerfTest::AtomicLat)) - one_way).abs() < 1e-12);
    // csRNA's many-process test keeps the samples' mean.
    let mut procs = spec(PerfTest::WriteLat);
    procs.procs = Some(10);
    assert_eq!(duration_t_avg_us(&r, &procs), 2.72);
    // Nothing completed: no division by zero.
    let mut none = row(64, 0, 0.0, 0.0, 0.0);
    none.simulated_time_us = 1000.0;
    assert_eq!(duration_t_avg_us(&none, &spec(PerfTest::WriteLat)), 0.0);
}

#[test]
fn full_bw_report_layout() {
    let mut r = PerfResult {
        size_bytes: 65536,
        iterations: 5000,
        ..Default::default()
    };
    r.bw_peak_mb_s = 11030.624;
    r.bw_avg_mb_s = 11027.651;
    r.msg_rate_mops = 0.1764421;
    let text = render(
        &r,
        &spec(PerfTest::WriteBw),
        &Config::default(),
        false,
        Samples::Off,
    );
    let expected = "\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rnic0
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: OFF
 ibv_wr* API     : OFF
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 4096[B]
 Link type       : Ethernet
 Max inline data : 0[B]
 rdma_cm QPs\t : ON
 Data ex. method : rdma_cm
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      5000             11030.62            11027.65\t\t   0.176442
---------------------------------------------------------------------------------------
";
    assert_eq!(text, expected);
    let g = render(
        &r,
        &spec(PerfTest::WriteBw),
        &Config::default(),
        true,
        Samples::Off,
    );
    assert!(g.contains(RESULT_FMT_G));
    // 11027.651 MiB/s = 92.51 Gb/s
    assert!(g.contains("92.51"), "{g}");
}

#[test]
fn the_information_block_says_how_the_qps_were_connected() {
    // perftest prints ON and rdma_cm with -R; rnic connects by RDMA CM unless
    // host.connect = "direct", which is perftest's out-of-band exchange.
    let cm = test_info(&spec(PerfTest::WriteBw), &Config::default());
    assert!(cm.contains(" rdma_cm QPs\t : ON\n"), "{cm}");
    assert!(cm.contains(" Data ex. method : rdma_cm\n"), "{cm}");
    let mut direct = Config::default();
    direct.host.connect = crate::config::Connect::Direct;
    let d = test_info(&spec(PerfTest::WriteBw), &direct);
    assert!(d.contains(" rdma_cm QPs\t : OFF\n"), "{d}");
    assert!(d.contains(" Data ex. method : Ethernet\n"), "{d}");
    // UC and UD pairs are brought up without MADs whatever host.connect says.
    let mut ud = Config::default();
    ud.qp.transport = crate::config::Transport::Ud;
    let u = test_info(&spec(PerfTest::SendBw), &ud);
    assert!(u.contains(" rdma_cm QPs\t : OFF\n"), "{u}");
}

/// perftest's JSON (`--out_json`) describes the run as the information block does: the
/// QP service of `-c`, and RDMA CM when the QPs were connected by it.
#[test]
fn perftest_json_test_info_follows_the_run() {
    let info = |test: PerfTest, cfg: &Config| {
        let r = PerfResult::default();
        let rep = perftest_json::report(&r, &spec(test), cfg, false);
        serde_json::to_value(&rep).unwrap()["test_info"].clone()
    };
    let rc = info(PerfTest::WriteBw, &Config::default());
    assert_eq!(rc["Connection_type"], "RC");
    assert_eq!(rc["rdma_cm_QPs"], "ON");
    assert_eq!(rc["Data_ex_method"], "rdma_cm");
    let mut direct = Config::default();
    direct.host.connect = crate::config::Connect::Direct;
    let d = info(PerfTest::WriteBw, &direct);
    assert_eq!(d["rdma_cm_QPs"], "OFF");
    assert_eq!(d["Data_ex_method"], "Ethernet");
    for (transport, name) in [
        (crate::config::Transport::Uc, "UC"),
        (crate::config::Transport::Ud, "UD"),
    ] {
        let mut cfg = Config::default();
        cfg.qp.transport = transport;
        let u = info(PerfTest::SendBw, &cfg);
        assert_eq!(u["Connection_type"], name);
        assert_eq!(u["rdma_cm_QPs"], "OFF");
        assert_eq!(u["Data_ex_method"], "Ethernet");
    }
}

#[test]
fn lat_and_atomic_headers() {
    let r = PerfResult::default();
    let t = render(
        &r,
        &spec(PerfTest::WriteLat),
        &Config::default(),
        false,
        Samples::Off,
    );
    assert!(t.contains("                    RDMA_Write Latency Test\n"));
    assert!(t.contains(" TX depth        : 1\n"));
    assert!(!t.contains("CQ Moderation"));
    assert!(t.contains(&format!("{RESULT_FMT_LAT}\n")));
    let t = render(
        &r,
        &spec(PerfTest::AtomicBw),
        &Config::default(),
        false,
        Samples::Off,
    );
    assert!(
        t.contains("                    Atomic FETCH_AND_ADD BW Test\n"),
        "{t}"
    );
    assert!(t.contains(" Outstand reads  : 16\n"));
    let t = render(
        &r,
        &spec(PerfTest::ReadLat),
        &Config::default(),
        false,
        Samples::Off,
    );
    assert!(t.contains("RDMA_Read Latency Test"));
    let t = render(
        &r,
        &spec(PerfTest::SendBw),
        &Config::default(),
        false,
        Samples::Off,
    );
    assert!(t.contains("Send BW Test"));
    let mut s = spec(PerfTest::SendLat);
    s.duration_us = Some(1.0);
    let t = render(&r, &s, &Config::default(), false, Samples::Off);
    assert!(t.contains(RESULT_FMT_LAT_DUR));
}

/// `-a` runs each size on its own: the statistics cover them all, as the counters at the
/// top level do (`--stats` printed the last size's counters only, beside a retransmission
/// count of every size): counts and busy times add up, maxima, peaks, percentiles, means
/// and shared properties take the largest, and what the end of a run leaves
/// (`tx.buffer_left_bytes`) is the last size's.
#[test]
fn all_sizes_statistics_cover_every_size() {
    let sizes = [(2u64, 1u64), (4, 10), (8, 100)];
    let per: Vec<PerfResult> = sizes
        .iter()
        .map(|&(s, k)| {
            let mut r = PerfResult {
                size_bytes: s,
                retransmissions: k,
                ..Default::default()
            };
            for (name, v) in [
                ("transport.retransmissions", k),
                ("server.nic.tx.frames", 3 * k),
                ("server.nic.tx.unit.busy_ps", 7 * k),
                (
                    "server.nic.dma.wqe_latency_max_ps",
                    [50, 900, 70][k.ilog10() as usize],
                ),
                (
                    "server.nic.dma.max_tags_in_use",
                    [5, 2, 3][k.ilog10() as usize],
                ),
                (
                    "server.nic.tx.buffer_peak_bytes",
                    [10, 30, 20][k.ilog10() as usize],
                ),
                ("net.pfc.max_ingress_bytes", [1, 9, 4][k.ilog10() as usize]),
                (
                    "server.nic.tx.buffer_left_bytes",
                    [6, 0, 4][k.ilog10() as usize],
                ),
                ("net.queues.3.p99_bytes", [40, 90, 60][k.ilog10() as usize]),
                ("net.queues.3.mean_bytes", [4, 9, 6][k.ilog10() as usize]),
                ("net.queues.3.port", 3),
                ("net.switch_pools.0.size_bytes", 1 << 24),
            ] {
                r.stats.insert(name.into(), v);
            }
            r
        })
        .collect();
    let only_last = per[2].stats.get("server.nic.tx.frames").copied();
    assert_eq!(only_last, Some(300));
    let all = PerfResult::from_sizes(per);
    let stat = |k: &str| all.stats.get(k).copied();
    assert_eq!(stat("transport.retransmissions"), Some(all.retransmissions));
    assert_eq!(stat("transport.retransmissions"), Some(111));
    assert_eq!(stat("server.nic.tx.frames"), Some(333));
    assert_eq!(stat("server.nic.tx.unit.busy_ps"), Some(777));
    assert_eq!(stat("server.nic.dma.wqe_latency_max_ps"), Some(900));
    assert_eq!(stat("server.nic.dma.max_tags_in_use"), Some(5));
    assert_eq!(stat("server.nic.tx.buffer_peak_bytes"), Some(30));
    assert_eq!(stat("net.pfc.max_ingress_bytes"), Some(9));
    assert_eq!(stat("server.nic.tx.buffer_left_bytes"), Some(4));
    // A percentile or mean is bounded by the largest size's; an identifier and a
    // configured size are every size's (until 2026-12-02 all four added up).
    assert_eq!(stat("net.queues.3.p99_bytes"), Some(90));
    assert_eq!(stat("net.queues.3.mean_bytes"), Some(9));
    assert_eq!(stat("net.queues.3.port"), Some(3));
    assert_eq!(stat("net.switch_pools.0.size_bytes"), Some(1 << 24));
}

#[test]
fn all_sizes_print_one_row_each() {
    let per: Vec<PerfResult> = [2u64, 4, 8]
        .iter()
        .map(|&s| {
            let mut r = PerfResult {
                size_bytes: s,
                iterations: 5000,
                ops_completed: 5000,
                simulated_time_us: 100.0,
                events: 10,
                bytes_verified: true,
                ..Default::default()
            };
            r.fill_rates();
            r
        })
        .collect();
    let all = PerfResult::from_sizes(per);
    assert_eq!(all.per_size.len(), 3);
    assert_eq!(all.size_bytes, 8);
    assert_eq!(all.events, 30);
    assert!(all.bytes_verified);
    let text = render(
        &all,
        &spec(PerfTest::WriteBw),
        &Config::default(),
        false,
        Samples::Off,
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with(" 2 ") || l.starts_with(" 4 ") || l.starts_with(" 8 "))
            .count(),
        3
    );
}

#[test]
fn rates_are_perftest_units() {
    // 1000 messages of 1 MiB in 1000 us: 1 Mops, 1 MiB per us = 1e6 MiB/s, 8.388608e12 b/s
    let (mops, gbps, mb) = rates(1 << 20, 1000, 1000.0);
    assert_eq!(mops, 1.0);
    assert_eq!(mb, 1e6);
    assert!((gbps - 8388.608).abs() < 1e-9);
    assert_eq!(rates(1, 1, 0.0), (0.0, 0.0, 0.0));
}

#[test]
fn latency_stats_follow_perftest_percentiles() {
    let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
    let l = LatencyStats::from_samples_us(&samples);
    assert_eq!((l.min, l.max, l.p50), (1.0, 1000.0, 500.5));
    assert_eq!(l.p99, 991.0); // index ceil(1000 * 0.99) = 990
    assert_eq!(l.p999, 1000.0);
    assert_eq!(LatencyStats::from_samples_us(&[]), LatencyStats::default());
}

/// perftest's latency summary, by hand: 13 iterations whose first is a cold 100 µs and
/// whose 12th is a 50 µs outlier, the others 1..=10 µs, the last 999 µs. perftest has 12
/// gaps between the 13 posts (the last iteration's sample has none), sorted
/// 1..=10, 50, 100; it keeps 10 (the largest two dropped): t_avg 5.5, t_typical the mean of
/// the 5th and 6th (5.5); t_max the sorted gap at index 10 (50), the percentiles at
/// index ⌈10·0.99⌉ = ⌈10·0.999⌉ = 10 (50); t_stdev from deviations truncated to whole µs
/// (4, 3, 2, 1, 0, 0, 1, 2, 3, 4: squares sum to 60), √(60 / 10).
#[test]
fn perftest_latency_summary_drops_the_tail_as_perftest_does() {
    let mut samples = vec![100.0];
    samples.extend((1..=10).map(f64::from));
    samples.extend([50.0, 999.0]);
    let l = LatencyStats::perftest_lat(&samples);
    assert_eq!((l.min, l.max, l.p50, l.avg), (1.0, 50.0, 5.5, 5.5));
    assert_eq!((l.p99, l.p999), (50.0, 50.0));
    assert_eq!(l.stdev, 6f64.sqrt());
    // The -H list: the kept ten, sorted; the gaps: all but the last sample.
    assert_eq!(
        perftest_sorted_kept(&samples),
        (1..=10).map(f64::from).collect::<Vec<_>>()
    );
    assert_eq!(perftest_gaps(&samples), &samples[..12]);

    // 1000 iterations of 1..=1000 µs: 999 gaps, 997 kept (1..=997), odd, so the median is
    // the middle one (499); t_max the gap at index 997 (998); 99 % at index ⌈987.03⌉ = 988
    // (989), 99.9 % at ⌈996.003⌉ = 997 (998).
    let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
    let l = LatencyStats::perftest_lat(&samples);
    assert_eq!((l.min, l.max, l.p50, l.avg), (1.0, 998.0, 499.0, 499.0));
    assert_eq!((l.p99, l.p999), (989.0, 998.0));

    // Deviations under a microsecond truncate to 0, as in perftest: no spread shown.
    let l = LatencyStats::perftest_lat(&[2.0, 2.9, 2.1, 2.5, 2.2, 2.8, 9.0]);
    assert_eq!(l.stdev, 0.0);
    assert_eq!((l.min, l.max), (2.0, 2.8));

    // The minimum perftest allows (5 iterations, 4 gaps, 2 kept), and fewer (a run that
    // stopped early): every gap, nothing dropped.
    let l = LatencyStats::perftest_lat(&[4.0, 1.0, 3.0, 2.0, 7.0]);
    assert_eq!((l.min, l.max, l.avg, l.p50), (1.0, 3.0, 1.5, 1.5));
    let l = LatencyStats::perftest_lat(&[4.0, 1.0, 7.0]);
    assert_eq!((l.min, l.max, l.avg), (1.0, 4.0, 2.5));
    assert_eq!(LatencyStats::perftest_lat(&[3.0]), LatencyStats::default());
    assert_eq!(LatencyStats::perftest_lat(&[]), LatencyStats::default());
}

/// Identical samples have that value as their average and no spread: summing 271 of
/// 3.689705 µs in floating point gave an average of 3.689705000000003, above the maximum,
/// and a standard deviation of 3e-15.
#[test]
fn latency_stats_of_equal_samples_are_exact() {
    for (v, n) in [(3.689705, 271), (2.70507, 184), (0.1, 1000)] {
        let l = LatencyStats::from_samples_us(&vec![v; n]);
        assert_eq!(
            (l.min, l.avg, l.p50, l.max, l.stdev),
            (v, v, v, v, 0.0),
            "{v} x {n}"
        );
    }
    // The average always lies between the extremes.
    let l = LatencyStats::from_samples_us(&[0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    assert!(l.min <= l.avg && l.avg <= l.max, "{l:?}");
}

fn sample() -> PerfResult {
    let mut r = PerfResult {
        test: "write-bw".into(),
        size_bytes: 64,
        iterations: 5000,
        simulated_time_us: 75.0,
        ops_completed: 5000,
        bytes_verified: true,
        verified_bytes: 320000,
        seed: 1,
        profile: "baseline".into(),
        ..Default::default()
    };
    r.caches
        .insert("qpc".into(), CacheStats { hits: 9, misses: 1 });
    r.caches
        .insert("mpt".into(), CacheStats { hits: 5, misses: 0 });
    r.onchip_bytes.insert("qpc_cache".into(), 76800);
    r.fill_rates();
    r
}

#[test]
fn json_is_stable_and_exact() {
    let r = sample();
    let j = json::to_json(&r).unwrap();
    let keys: Vec<&str> = j
        .lines()
        .filter(|l| l.starts_with("  \"") && !l.starts_with("   "))
        .map(|l| l.trim().split('"').nth(1).unwrap())
        .collect();
    assert_eq!(
        keys,
        [
            "test",
            "size_bytes",
            "iterations",
            "qps",
            "clients",
            "simulated_time_us",
            "ops_completed",
            "msg_rate_mops",
            "goodput_gbps",
            "bw_avg_mb_s",
            "bw_peak_mb_s",
            "latency_us",
            "retransmissions",
            "naks",
            "timeouts",
            "caches",
            "pcie_rd_bytes",
            "pcie_wr_bytes",
            "pcie_rd_util",
            "pcie_wr_util",
            "onchip_bytes",
            "stats",
            "events",
            "wall_seconds",
            "bytes_verified",
            "verified_bytes",
            "status",
            "reason",
            "seed",
            "profile",
            "per_size"
        ]
    );
    // maps sorted, numbers round-trip exactly
    assert!(j.find("\"mpt\"").unwrap() < j.find("\"qpc\"").unwrap());
    let back: PerfResult = serde_json::from_str(&j).unwrap();
    assert_eq!(back, r);
    assert_eq!(json::to_json(&back).unwrap(), j);
}

#[test]
fn metrics_cover_every_scalar_json_field() {
    fn flatten(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    flatten(&format!("{prefix}{k}."), v, out)
                }
            }
            serde_json::Value::Number(_) | serde_json::Value::Bool(_) => {
                out.push(prefix.trim_end_matches('.').to_string())
            }
            _ => {}
        }
    }
    // A UC/UD run's `unreliable` counts are metrics too (a sweep over UD loss had no
    // column of the messages lost, which its JSON holds); so are a -D run's window fields.
    let unreliable = PerfResult {
        unreliable: Some(rnic_model::result::UnreliableResult {
            transport: "ud".into(),
            messages_sent: 100,
            messages_received: 89,
            messages_lost: 11,
            ..Default::default()
        }),
        window_open_us: Some(12.5),
        window_settled: Some(true),
        ..sample()
    };
    let short_window = PerfResult {
        window_settled: Some(false),
        long_run: Some(rnic_model::result::LongRun {
            ops_completed: 10,
            long_enough_duration_s: Some(0.5),
            ..Default::default()
        }),
        ..unreliable.clone()
    };
    assert!(is_metric_name("long_run.goodput_gbps") && !is_metric_name("long_run.gbps"));
    for r in [sample(), unreliable.clone(), short_window] {
        let mut from_json = Vec::new();
        flatten("", &serde_json::to_value(&r).unwrap(), &mut from_json);
        from_json.retain(|k| k != "wall_seconds");
        from_json.sort();
        let mut ours: Vec<String> = r.metrics().into_iter().map(|(k, _)| k).collect();
        ours.sort();
        assert_eq!(ours, from_json);
    }
    assert_eq!(
        unreliable.metric("unreliable.messages_lost"),
        Some(Metric::Int(11))
    );
    assert!(is_metric_name("unreliable.messages_lost") && !is_metric_name("unreliable.lost"));
    let r = sample();
    assert!(is_metric_name("latency_us.avg") && is_metric_name("caches.qpc.hits"));
    assert!(
        is_metric_name("onchip_bytes.qpc_cache")
            && !is_metric_name("latency_us.mean")
            && !is_metric_name("latency.avg")
    );
    assert_eq!(r.metric("caches.qpc.misses"), Some(Metric::Int(1)));
}

#[test]
fn fmt_g_prints_as_c_does() {
    for (v, want) in [
        (1.5, "1.5"),
        (2.0, "2"),
        (1.234567, "1.23457"),
        (123456.7, "123457"),
        (1234567.0, "1.23457e+06"),
        (0.00012345, "0.00012345"),
        (0.000012345, "1.2345e-05"),
        (0.0, "0"),
    ] {
        assert_eq!(fmt_g(v), want, "{v}");
    }
}

/// A lossy fabric's drops cost an RC run go-back-N and timeouts; a UC or UD run resends
/// nothing, so the note says the messages were lost instead.
#[test]
fn the_drops_note_names_what_a_drop_costs() {
    let mut r = PerfResult::default();
    assert_eq!(drops_note(&r, Vec::new), None, "no drops");
    r.stats.insert("net.switch_drops".into(), 7);
    let rc = drops_note(&r, Vec::new).expect("drops");
    assert!(
        rc.contains("dropped 7 frames") && rc.contains("go-back-N"),
        "{rc}"
    );
    r.unreliable = Some(UnreliableResult {
        transport: "uc".into(),
        ..Default::default()
    });
    let uc = drops_note(&r, Vec::new).expect("drops");
    assert!(!uc.contains("go-back-N"), "{uc}");
    assert!(uc.contains("UC never resends"), "{uc}");
}

#[test]
fn a_cyclic_buffer_dependency_under_pfc_is_noted() {
    let mut r = PerfResult::default();
    assert_eq!(pfc_cycle_note(&r), None, "no flow control");
    r.stats.insert("net.pfc.buffer_cycle_links".into(), 0);
    assert_eq!(pfc_cycle_note(&r), None, "no cycle");
    r.stats.insert("net.pfc.buffer_cycle_links".into(), 5);
    let note = pfc_cycle_note(&r).expect("a cycle of 5 links");
    assert!(note.contains("(5 link directions"), "{note}");
    assert!(note.contains("net.pfc"), "{note}");
}

#[test]
fn the_unreliable_line_accounts_for_every_lost_message() {
    // 6 lost: 5 UC messages the receiver began and abandoned, and one it never began (its
    // first packet lost on the wire): the causes listed must add up to the lost count.
    let u = rnic_model::result::UnreliableResult {
        transport: "uc".into(),
        messages_sent: 20,
        messages_received: 14,
        messages_lost: 6,
        uc_messages_abandoned: 5,
        ..Default::default()
    };
    let line = unreliable_text(&u);
    assert!(
        line.contains("6 lost (UC messages abandoned after a lost or reordered packet 5"),
        "{line}"
    );
    assert!(
        line.contains(
            "not begun by the receiver (first packet lost or overtaken on the wire) or \
             unfinished at the end 1"
        ),
        "{line}"
    );
}
