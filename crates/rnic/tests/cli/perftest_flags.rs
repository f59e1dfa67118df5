//! Every flag in perftest's help texts (perftest 4.5's `ib_*_{bw,lat} --help`, kept in
//! `tests/fixtures/perftest/` so the check runs offline) is either one of `rnic perf`'s own
//! arguments or in the documented compatibility list (`cli/perftest_compat.rs`: ignored
//! with a note, or refused with the reason), and none is silently unknown.

use clap::CommandFactory;
use rnic::cli::args::Cli;
use rnic::cli::perftest_compat::{CompatFlag, COMPAT_FLAGS};
use rnic::live::perftest_flags::LIVE_FLAGS;

use crate::truthful_runs::INCOMPLETE_READ_BW;

/// (short, long) of every flag a help text lists.
fn flags(help: &str) -> Vec<(Option<char>, String)> {
    let mut out = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        if !t.starts_with('-') {
            continue;
        }
        let (short, rest) = match t.as_bytes() {
            [b'-', c, b',', b' ', ..] if *c != b'-' => (Some(*c as char), &t[4..]),
            _ => (None, t),
        };
        let Some(rest) = rest.strip_prefix("--") else {
            continue;
        };
        let long: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        out.push((short, long));
    }
    out
}

#[test]
fn every_perftest_flag_is_implemented_or_listed() {
    every_flag_is_own_or_listed("perf", COMPAT_FLAGS);
}

/// The same for `rnic live`: its own flags and `live/perftest_flags.rs`'s table.
#[test]
fn every_perftest_flag_is_live_s_own_or_listed() {
    every_flag_is_own_or_listed("live", LIVE_FLAGS);
}

/// Every flag of the help texts is `command`'s own or in `listed`, each listed flag is
/// one of perftest's (so a table holds no name perftest lacks), and a listed flag is none
/// of `command`'s own.
fn every_flag_is_own_or_listed(command: &str, listed: &[CompatFlag]) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/perftest");
    let cmd = Cli::command();
    let perf = cmd.find_subcommand(command).expect("the subcommand");
    let visible_own = |short: Option<char>, long: &str| {
        perf.get_arguments().any(|a| {
            !a.is_hide_set()
                && a.get_long() == Some(long)
                && (short.is_none() || a.get_short() == short)
        })
    };
    let own = |short: Option<char>, long: &str| {
        visible_own(short, long) || (long == "help" || long == "version")
    };
    for f in listed {
        assert!(
            !visible_own(None, f.long),
            "--{} is {command}'s own and listed",
            f.long
        );
    }
    let mut perftests = Vec::new();
    let mut files = 0;
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let help = std::fs::read_to_string(&path).unwrap();
        files += 1;
        for (short, long) in flags(&help) {
            seen += 1;
            let is_listed = listed.iter().any(|f| f.long == long && f.short == short);
            assert!(
                own(short, &long) || is_listed,
                "{}: {short:?} --{long} is neither rnic {command}'s nor in its table",
                path.display()
            );
            perftests.push(long);
        }
    }
    assert_eq!(files, 8, "the eight ib_* tools");
    assert!(seen > 400, "{seen} flag lines read");
    for f in listed {
        assert!(
            perftests.contains(&f.long.to_string()),
            "--{} is no perftest flag",
            f.long
        );
    }
}

/// A perftest command line pastes unchanged: hardware flags get a note, the run goes on.
#[test]
fn a_pasted_perftest_line_runs_with_notes() {
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-d",
        "mlx5_0",
        "-i",
        "1",
        "-x",
        "3",
        "-F",
        "-c",
        "RC",
        "-s",
        "4096",
        "-n",
        "20",
        "--report_gbits",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("rnic: ignoring -d/--ib-dev mlx5_0"), "{err}");
    assert!(err.contains("rnic: ignoring -F/--CPU-freq"), "{err}");
    let (code, _, err) = rnic(&["perf", "write-bw", "--use-srq"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--use-srq: send-bw and send-lat have it"),
        "{err}"
    );
}

/// A refused perftest flag points to where the accepted ones are listed: a file that
/// exists and names the flag. It pointed to "the README's perftest section" after that
/// section had moved into the book.
#[test]
fn a_refused_flag_points_to_the_chapter_that_lists_it() {
    let (code, _, err) = rnic(&["perf", "write-bw", "--ipv6"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("README"), "{err}");
    let path = "docs/book/src/perftest-flags.md";
    assert!(err.contains(path), "{err}");
    let chapter = std::fs::read_to_string(crate::common::repo_root().join(path))
        .expect("the chapter the refusal names");
    assert!(chapter.contains("`--ipv6`"), "{path} lists no --ipv6");
}

/// A perftest command line pasted into `rnic live` with a flag it does not run: refused
/// naming it (exit 2, before any connection is tried; the notes of ignored flags are
/// checked in `live`'s unit tests).
#[test]
fn a_pasted_perftest_line_into_rnic_live_gets_notes_or_a_refusal() {
    // Loopback, so that a flag accepted by mistake cannot reach another host.
    let line = [
        "live",
        "write-bw",
        "127.0.0.1",
        "-d",
        "mlx5_0",
        "-F",
        "--ipv6",
    ];
    let (code, _, err) = rnic(&line);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--ipv6 is not supported"), "{err}");
    // A flag live runs, on a test that has no use for it (perftest refuses it there too).
    let (code, _, err) = rnic(&["live", "read-bw", "127.0.0.1", "-x", "3", "--use-srq"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--use-srq: send-bw and send-lat have it"),
        "{err}"
    );
}

/// `-o/--outs N` is perftest's outstanding READ/atomic limit (qp.max_rd_atomic): one READ
/// in flight per QP waits a round trip per 4 KB; sixteen fill the wire.
#[test]
fn outs_limits_the_reads_in_flight() {
    let gbps = |outs: &str| {
        let (code, out, err) = rnic(&[
            "perf", "read-bw", "-s", "4096", "-n", "200", "-o", outs, "--json", "-",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["goodput_gbps"].as_f64().unwrap()
    };
    let (one, sixteen) = (gbps("1"), gbps("16"));
    assert!(
        sixteen > 80.0 && one < sixteen / 4.0,
        "-o 1: {one}, -o 16: {sixteen} Gb/s"
    );
}

fn rnic(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The value of counter `key` in `--stats` output (`key` then spaces then the number), or
/// `None` when the run did not report it (counters of unused features are left out).
fn stat(out: &str, key: &str) -> Option<u64> {
    out.lines().find_map(|l| {
        let (k, v) = l.split_once(char::is_whitespace)?;
        (k == key).then(|| v.trim().parse().unwrap())
    })
}

/// `--output` prints the one figure perftest prints; `-w`/`-y` fail the run (exit status 1)
/// below their limit, in the table's unit, and pass it at or above.
#[test]
fn output_and_the_verifier_limits_act_as_in_perftest() {
    let base = [
        "perf",
        "write-bw",
        "-s",
        "4096",
        "-n",
        "100",
        "--report_gbits",
    ];
    let (_, table, _) = rnic(&base);
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("4096"))
        .unwrap();
    let avg: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    // The figure with perftest's six decimals; the table rounds it to two.
    let (code, only, _) = rnic(&[&base[..], &["--output", "bandwidth"]].concat());
    let only: f64 = only.trim().parse().unwrap();
    assert_eq!((code, format!("{only:.2}")), (Some(0), format!("{avg:.2}")));
    let (code, rate, _) = rnic(&[&base[..], &["--output", "message_rate"]].concat());
    assert_eq!(code, Some(0));
    assert!(rate.trim().parse::<f64>().unwrap() > 1.0, "{rate}");
    let below = format!("{}", avg + 1.0);
    let (code, _, err) = rnic(&[&base[..], &["-w", below.as_str()]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("below the -w/--limit_bw"), "{err}");
    let at = format!("{}", avg - 0.01);
    assert_eq!(rnic(&[&base[..], &["-w", at.as_str()]].concat()).0, Some(0));
    let (code, _, err) = rnic(&[&base[..], &["-y", "1000"]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("below the -y/--limit_msgrate"), "{err}");
    // With -a the verdict passes when any size meets the limit, as perftest accumulates
    // it: small WRITEs pass 1 Mpps, 8 MB ones (the last size) do not.
    let all = ["perf", "write-bw", "-a", "-n", "20"];
    let (code, _, err) = rnic(&[&all[..], &["-y", "1"]].concat());
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = rnic(&[&all[..], &["-y", "1000"]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("best of the sizes' message rate"), "{err}");
    // A huge limit is shown as written, not as its hundreds of digits.
    let (code, _, err) = rnic(&[&base[..], &["-w", "1e300"]].concat());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("-w/--limit_bw 1e300 Gbit/s"), "{err}");
}

/// `--output` prints one figure instead of the table, and `--json -` puts the JSON on
/// standard output instead of it: what prints into the table would vanish in silence there
/// (`--output=bandwidth --json -` printed the JSON alone; `--stats`, `--report-both` and
/// `-H` beside `--output` printed the figure alone; `-H --json -` the JSON, which has no
/// samples), so each pair is refused before the run, naming both flags.
#[test]
fn output_and_json_to_stdout_refuse_what_they_would_drop() {
    for (args, names) in [
        (
            &["write-bw", "--output", "bandwidth", "--json", "-"][..],
            &["--output", "--json -"][..],
        ),
        (
            &["write-bw", "--output", "bandwidth", "--stats"][..],
            &["--output", "--stats"][..],
        ),
        (
            &["write-bw", "-b", "--report-both", "--output", "bandwidth"][..],
            &["--output", "--report-both"][..],
        ),
        (
            &["write-lat", "-H", "--output", "latency"][..],
            &["--output", "-H/--report-histogram"][..],
        ),
        (
            &["write-lat", "-U", "--json", "-"][..],
            &["--json -", "-U/--report-unsorted"][..],
        ),
    ] {
        let mut a = vec!["perf"];
        a.extend_from_slice(args);
        a.extend(["-n", "10"]);
        let (code, out, err) = rnic(&a);
        assert_eq!(code, Some(2), "{a:?}: {out}{err}");
        for n in names {
            assert!(err.contains(n), "{a:?}: {err}");
        }
        assert!(out.is_empty(), "{a:?} ran: {out}");
    }
    // Each alone, and --stats with --json - (the JSON has the counters), still run.
    for args in [
        &["write-bw", "--output", "bandwidth"][..],
        &["write-bw", "--stats", "--json", "-"][..],
        &["write-lat", "-H"][..],
    ] {
        let mut a = vec!["perf"];
        a.extend_from_slice(args);
        a.extend(["-n", "10"]);
        assert_eq!(rnic(&a).0, Some(0), "{a:?}");
    }
}

/// Under `-D` perftest keeps no samples, so `-H`/`-U` list none: a note says so, where
/// the run said nothing about the flags it was given; a scenario's `[perf]` keys get the
/// same note from `rnic run` (which said nothing).
#[test]
fn histogram_flags_under_duration_say_they_list_nothing() {
    let (code, out, err) = rnic(&["perf", "write-lat", "-H", "-D", "0.001"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("-H/--report-histogram (perf.report_histogram) has no effect")
            && err.contains("-D"),
        "{err}"
    );
    assert!(!out.contains("#, usec"), "{out}");
    let dir = std::env::temp_dir().join(format!("rnic-hist-d-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("lat.toml");
    std::fs::write(
        &file,
        "name = \"lat\"\n[perf]\ntest = \"write-lat\"\nduration = 0.001\n\
         report_unsorted = true\nreport_histogram = true\n",
    )
    .unwrap();
    let (code, out, err) = rnic(&["run", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(0), "{err}");
    for key in [
        "-U/--report-unsorted (perf.report_unsorted) has no effect on write-lat",
        "-H/--report-histogram (perf.report_histogram) has no effect on write-lat",
    ] {
        assert!(err.contains(key) && err.contains("perf.duration"), "{err}");
    }
    assert!(!out.contains("#, usec"), "{out}");
}

/// A latency test reports no bandwidth and no message rate, so perftest's verifier limits
/// cannot judge it: `-w`/`-y` on one are refused before the run (exit 2, naming the flag),
/// not checked against a figure the table never shows.
#[test]
fn verifier_limits_are_refused_on_latency_tests() {
    for test in ["write-lat", "read-lat", "send-lat", "atomic-lat"] {
        for (flag, name) in [("-w", "-w/--limit_bw"), ("-y", "-y/--limit_msgrate")] {
            let (code, out, err) = rnic(&["perf", test, "-n", "10", flag, "0.001"]);
            assert_eq!(code, Some(2), "{test} {flag}: {err}");
            assert!(err.contains(name) && err.contains("latency test"), "{err}");
            assert!(out.is_empty(), "{test} {flag} ran: {out}");
        }
    }
}

/// `-l/--post_list 8` posts lists of 8 WQEs with one doorbell each: 8× fewer doorbells for
/// the same operations, every byte verified; a list longer than the tx depth is refused.
#[test]
fn post_list_rings_one_doorbell_per_list() {
    let doorbells = |list: &str| {
        let (code, out, err) = rnic(&[
            "perf", "write-bw", "-s", "64", "-n", "2000", "-q", "4", "-l", list, "--stats",
            "--json", "-",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        assert_eq!(v["ops_completed"], 8000);
        v["stats"]["server.nic.doorbell.sq"].as_u64().unwrap()
    };
    assert_eq!((doorbells("1"), doorbells("8")), (8000, 1000));
    let (code, _, err) = rnic(&["perf", "write-bw", "-l", "256"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exceeds the tx depth 128"), "{err}");
}

/// `-I/--inline_size 64`: 64 B WRITEs go inline in 128 B WQE slots, so the NIC reads no
/// payload; where PCIe is the bottleneck (a 32 Gb/s link) the message rate rises. A slot
/// too small for the inline data is refused.
#[test]
fn inline_payloads_skip_the_payload_read() {
    let run = |inline: &[&str]| {
        let base: Vec<&str> = "perf write-bw -s 64 -q 300 --clients 10 -D 0.0005 --set \
                               pcie.gbps=32 --stats --json -"
            .split_whitespace()
            .collect();
        let (code, out, err) = rnic(&[&base[..], inline].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        let reads = v["stats"]["server.nic.dma.payload_reads"].as_u64().unwrap();
        (reads, v["msg_rate_mops"].as_f64().unwrap())
    };
    let (reads, rate) = run(&[]);
    let (inline_reads, inline_rate) = run(&["-I", "64"]);
    assert!(
        reads > 0 && inline_reads == 0,
        "{reads} / {inline_reads} payload reads"
    );
    assert!(inline_rate > rate * 1.05, "{rate} -> {inline_rate} Mops");
    let (code, _, err) = rnic(&["perf", "write-bw", "-I", "64", "--set", "nic.wqe_bytes=64"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("raise nic.wqe_bytes"), "{err}");
}

/// `-Q/--cq-mod 16`: one WQE in 16 is signaled, so the NIC writes 16× fewer CQEs for the
/// same operations, every one still counted and every byte verified; -Q larger than the tx
/// depth is refused.
#[test]
fn cq_mod_writes_one_cqe_per_n_completions() {
    let cqes = |q: &str| {
        let (code, out, err) = rnic(&[
            "perf", "write-bw", "-s", "64", "-n", "2000", "-q", "4", "-Q", q, "--stats", "--json",
            "-",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        assert_eq!(v["ops_completed"], 8000);
        v["stats"]["server.nic.cq.cqes"].as_u64().unwrap()
    };
    assert_eq!((cqes("1"), cqes("16")), (8000, 500));
    // 2000 is not a multiple of 48: the last WQE is signaled too, so nothing goes uncounted.
    assert_eq!(cqes("48"), 2000_u64.div_ceil(48) * 4);
    let (code, _, err) = rnic(&["perf", "write-bw", "-Q", "256"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-Q/--cq-mod 256"), "{err}");
}

/// A directory of this process's own and the perftest report file in it, for test `tag`.
fn report_file(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("rnic-out-json-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("report.json");
    (dir, file)
}

/// perftest's JSON `test_info` says what the information block says: the atomic's kind and
/// a post list in the test's name, and the post lists and receive depth the block lists
/// (its name was `Atomic_BW_Test` where the block said `Atomic FETCH_AND_ADD BW Test`, and
/// it left out the post list and the receive depth; found by an output-consistency hunt).
#[test]
fn out_json_test_info_says_what_the_information_block_says() {
    let (dir, file) = report_file("info");
    let f = file.to_str().unwrap();
    // Each test, its title in the block and in the JSON, and the lines both must carry.
    type Case<'a> = (&'a [&'a str], &'a str, &'a [(&'a str, &'a str, u64)]);
    let cases: [Case; 4] = [
        (
            &["atomic-bw", "-n", "20"],
            "Atomic FETCH_AND_ADD BW Test",
            &[],
        ),
        (
            &["atomic-lat", "-n", "20", "-A", "CMP_AND_SWAP"],
            "Atomic CMP_AND_SWAP Latency Test",
            &[],
        ),
        (
            &["write-bw", "-s", "64", "-n", "40", "-l", "4"],
            "RDMA_Write Post List BW Test",
            &[("Post_List", " Post List       : ", 4)],
        ),
        (
            &[
                "send-bw",
                "-s",
                "64",
                "-n",
                "20",
                "-b",
                "--recv_post_list",
                "2",
            ],
            "Send Bidirectional BW Test",
            &[
                ("Recv_Post_List", " Recv Post List  : ", 2),
                ("RX_depth", " RX depth        : ", 20),
            ],
        ),
    ];
    for (args, title, lines) in cases {
        let all = [&["perf"][..], args, &["--out_json_file", f]].concat();
        let (code, out, err) = rnic(&all);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let info = &v["test_info"];
        assert!(out.contains(&format!(" {title}\n")), "{args:?}: {out}");
        assert_eq!(info["test"], title.replace(' ', "_"), "{args:?}");
        for (key, label, n) in lines {
            assert_eq!(info[key], *n, "{args:?}: {key}");
            assert!(out.contains(&format!("{label}{n}\n")), "{args:?}: {out}");
        }
        let absent = ["Post_List", "Recv_Post_List", "RX_depth"];
        for key in absent
            .iter()
            .filter(|k| !lines.iter().any(|(l, _, _)| l == *k))
        {
            assert!(info.get(key).is_none(), "{args:?}: {key} in {info}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--out_json --out_json_file FILE` writes perftest's report: its `test_info` keys and
/// `results` figures (bandwidth or latency), equal to rnic's own JSON for the same run.
#[test]
fn out_json_writes_perftests_report() {
    let (dir, file) = report_file("run");
    let f = file.to_str().unwrap();
    let (code, out, err) = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "4096",
        "-n",
        "500",
        "-q",
        "2",
        "-Q",
        "10",
        "--out_json",
        "--out_json_file",
        f,
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let own: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let info = &v["test_info"];
    assert_eq!(info["test"], "RDMA_Write_BW_Test");
    assert_eq!(info["Number_of_qps"], 2);
    assert_eq!(info["CQ_Moderation"], 10);
    assert_eq!(info["Connection_type"], "RC");
    // perftest's key order.
    let keys = [
        "test_info",
        "test",
        "Dual_port",
        "Number_of_qps",
        "TX_depth",
        "Mtu",
    ];
    let pos: Vec<usize> = keys
        .iter()
        .map(|k| text.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
    let r = &v["results"];
    assert_eq!(r["MsgSize"], 4096);
    assert_eq!(r["n_iterations"], own["iterations"]);
    assert_eq!(r["BW_average"], own["bw_avg_mb_s"]);
    assert_eq!(r["BW_peak"], own["bw_peak_mb_s"]);
    assert_eq!(r["MsgRate"], own["msg_rate_mops"]);
    // A latency test reports perftest's latency figures.
    let (code, out, err) = rnic(&[
        "perf",
        "write-lat",
        "-s",
        "64",
        "-n",
        "100",
        "--out_json_file",
        f,
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let own: serde_json::Value = serde_json::from_str(&out).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["test_info"]["test"], "RDMA_Write_Latency_Test");
    assert_eq!(v["results"]["t_typical"], own["latency_us"]["p50"]);
    assert_eq!(v["results"]["percentile_99.9"], own["latency_us"]["p999"]);
    // A run that ends incomplete (exit 3) prints its table and writes --json of what did
    // complete, and perftest's report of the same beside them: it wrote none, and the file
    // kept the report of the run before (here the latency test's) as if it were this one's.
    let (code, out, err) = rnic(
        &[
            &["perf"][..],
            &INCOMPLETE_READ_BW,
            &["--out_json_file", f, "--json", "-"],
        ]
        .concat(),
    );
    assert_eq!(code, Some(3), "{err}");
    let own: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(own["status"], "incomplete");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["test_info"]["test"], "RDMA_Read_BW_Test");
    assert_eq!(v["results"]["n_iterations"], own["iterations"]);
    assert_eq!(v["results"]["BW_average"], own["bw_avg_mb_s"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--mr_per_qp` registers one memory region per QP: 300 QPs' WRITEs miss the NIC's MPT
/// cache where one shared region hits it; every byte is still verified. Giving `--mrs` too
/// is refused.
#[test]
fn mr_per_qp_gives_each_qp_its_own_region() {
    let mpt_misses = |extra: &[&str]| {
        let base = [
            "perf", "write-bw", "-s", "64", "-n", "50", "-q", "300", "--json", "-",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        v["caches"]["mpt"]["misses"].as_u64().unwrap()
    };
    let (shared, own) = (mpt_misses(&[]), mpt_misses(&["--mr_per_qp"]));
    assert_eq!(shared, 1);
    assert!(own >= 300, "{own} MPT misses with one MR per QP");
    let (code, _, err) = rnic(&["perf", "write-bw", "--mr_per_qp", "--mrs", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--mr_per_qp") && err.contains("--mrs 3"),
        "{err}"
    );
}

/// `--client-mrs`: the clients register that many regions instead of `--mrs`, so the
/// targets of the server's WRITEs keep one MPT entry while the server's own lkeys spread over
/// many (the NIC counters are per node).
#[test]
fn client_mrs_sets_the_targets_regions_apart() {
    let mpt_misses = |extra: &[&str]| {
        let base = [
            "perf", "write-bw", "-s", "64", "-n", "20", "-q", "600", "--mrs", "512", "--stats",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let get = |key: &str| stat(&out, key).unwrap_or_else(|| panic!("{key} not in\n{out}"));
        (
            get("server.nic.translation.mpt.misses"),
            get("clients.nic.translation.mpt.misses"),
        )
    };
    let (server, clients) = mpt_misses(&[]);
    assert!(server >= 512 && clients >= 512, "{server} / {clients}");
    let (server, clients) = mpt_misses(&["--client-mrs", "1"]);
    assert!(server >= 512, "{server}");
    assert!(
        clients <= 10,
        "{clients} MPT misses at the clients with one region"
    );
}

/// `--mrs N` splits the QPs' buffers into N contiguous groups, each registered on its own:
/// with 4,096 64 B buffers over 64 regions, each region spans one page, so the sender's MPT
/// and MTT caches (256 entries) hold every region after one cold miss each; over 4,096
/// regions they cannot, and nearly every visit misses both.
#[test]
fn mrs_register_contiguous_groups_of_buffers() {
    let misses = |mrs: &str| {
        let (code, out, err) = rnic(&[
            "perf",
            "write-bw",
            "-s",
            "64",
            "-n",
            "20",
            "-q",
            "4096",
            "--profile",
            "prefetch",
            "--set",
            "nic.prefetch=none",
            "--mrs",
            mrs,
            "--client-mrs",
            "1",
            "--stats",
        ]);
        assert_eq!(code, Some(0), "{err}");
        let get = |key: &str| stat(&out, key).unwrap_or_else(|| panic!("{key} not in\n{out}"));
        (
            get("server.nic.translation.mpt.misses"),
            get("server.nic.translation.mtt.misses"),
        )
    };
    assert_eq!(misses("64"), (64, 64));
    let (mpt, mtt) = misses("4096");
    assert!(mpt > 4096 && mtt > 4096, "{mpt} / {mtt}");
}

/// `-b/--bidirectional` doubles the traffic: the server and the client each write to the
/// other at once, on QPs and buffers of their own, every byte verified; the table reports
/// the sum (about twice one direction) and `--report-both` each direction. `--reversed`
/// turns the traffic around: the clients send, the server only acknowledges. Latency tests
/// refuse both.
#[test]
fn bidirectional_and_reversed_turn_the_traffic() {
    let run = |extra: &[&str]| {
        let base = [
            "perf", "write-bw", "-s", "65536", "-n", "200", "-q", "2", "--stats", "--json", "-",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        v
    };
    let one = run(&[]);
    let both = run(&["-b", "--report-both"]);
    assert_eq!(both["ops_completed"], 800);
    assert_eq!(
        both["verified_bytes"].as_u64().unwrap(),
        2 * one["verified_bytes"].as_u64().unwrap()
    );
    let ratio = both["bw_avg_mb_s"].as_f64().unwrap() / one["bw_avg_mb_s"].as_f64().unwrap();
    assert!(
        (1.9..=2.01).contains(&ratio),
        "-b gives {ratio:.3}x one direction"
    );
    let dirs = both["directions"].as_array().unwrap();
    assert_eq!(dirs.len(), 2);
    let sum: f64 = dirs
        .iter()
        .map(|d| d["bw_avg_mb_s"].as_f64().unwrap())
        .sum();
    assert!((sum - both["bw_avg_mb_s"].as_f64().unwrap()).abs() < 1e-6 * sum);
    // Each direction's row has its own operations' latencies (they were all 0), and the
    // run's are both directions' together.
    let lat = |v: &serde_json::Value, k: &str| v["latency_us"][k].as_f64().unwrap();
    for d in dirs {
        assert!(lat(d, "min") > 0.0 && lat(d, "min") <= lat(d, "p50"), "{d}");
        assert!(
            lat(d, "p50") <= lat(d, "max") && lat(d, "avg") <= lat(d, "max"),
            "{d}"
        );
    }
    let (mins, maxs): (Vec<f64>, Vec<f64>) =
        dirs.iter().map(|d| (lat(d, "min"), lat(d, "max"))).unzip();
    assert_eq!(lat(&both, "min"), mins[0].min(mins[1]));
    assert_eq!(lat(&both, "max"), maxs[0].max(maxs[1]));
    for v in [&one, &both] {
        assert!(v["stats"]["server.nic.tx.messages"].as_u64().unwrap() > 0);
    }
    assert!(both["stats"]["clients.nic.tx.messages"].as_u64().unwrap() > 0);
    let rev = run(&["--reversed"]);
    assert_eq!(rev["stats"]["server.nic.tx.messages"], 0);
    assert_eq!(rev["stats"]["clients.nic.tx.messages"], 400);
    let (code, out, _) = rnic(&["perf", "write-bw", "-n", "50", "-b", "--report-both"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("RDMA_Write Bidirectional BW Test"), "{out}");
    assert!(
        out.contains(" server to clients:") && out.contains(" clients to server:"),
        "{out}"
    );
    // Node 0 gives half its cores to the clients' flows, one each.
    let (code, _, err) = rnic(&["perf", "write-bw", "-b", "--clients", "20"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("host.cores >= 40 (has 10)"), "{err}");
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-n",
        "20",
        "-q",
        "4",
        "-b",
        "--clients",
        "2",
        "--set",
        "host.cores=4",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let (code, _, err) = rnic(&["perf", "write-bw", "--reversed", "--clients", "20"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("host.cores >= 20 (has 10)"), "{err}");
    let (code, _, err) = rnic(&["perf", "write-lat", "-b"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("apply to bandwidth tests"), "{err}");
    let (code, _, err) = rnic(&["perf", "write-bw", "--report-both"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("add -b"), "{err}");
}

/// `--tclass` and `-L/--hop_limit` go into every packet's IPv4 TOS byte and TTL (RoCEv2's
/// traffic class and hop limit); `-S/--sl` is accepted with a note (no VLAN tag to carry it).
/// `-R -T/--tos` does the same as `--tclass` (RDMA CM's type of service; perftest takes it
/// with `-R` only, and rnic refuses it without, or beside `--tclass`).
#[test]
fn tclass_and_hop_limit_reach_the_headers() {
    let dir = std::env::temp_dir().join(format!("rnic-tclass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("t.pcap");
    for tos in [&["--tclass", "104"][..], &["-R", "-T", "104"][..]] {
        let mut args = vec![
            "perf", "write-bw", "-n", "10", "-L", "5", "-S", "3", "--pcap",
        ];
        args.push(pcap.to_str().unwrap());
        args.extend_from_slice(tos);
        let (code, _, err) = rnic(&args);
        assert_eq!(code, Some(0), "{err}");
        assert!(err.contains("rnic: ignoring -S/--sl 3"), "{err}");
        let bytes = std::fs::read(&pcap).unwrap();
        // Every record: 16-byte record header, Ethernet (14 B), then IPv4 (TOS at 1, TTL at 8).
        let (mut at, mut frames) = (24, 0);
        while at + 16 <= bytes.len() {
            let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
            let ip = &bytes[at + 16 + 14..];
            assert_eq!((ip[1], ip[8]), (104, 5), "{tos:?}: frame {frames}");
            at += 16 + len;
            frames += 1;
        }
        assert!(frames >= 20, "{frames} frames");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    for (args, words) in [
        (&["-T", "104"][..], "with -R/--rdma_cm only"),
        (
            &["-R", "-T", "104", "--tclass", "8"][..],
            "give one of them",
        ),
    ] {
        let mut line = vec!["perf", "write-bw", "-n", "10"];
        line.extend_from_slice(args);
        let (code, _, err) = rnic(&line);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
    }
}

/// `--retry_count N` is the QPs' transport retry count (RDMA CM's REQ carries it): with
/// half the frames lost, no retry fails the QP where perftest's default of 7 completes.
#[test]
fn retry_count_sets_the_qps_retries() {
    let run = |extra: &[&str]| {
        let mut line = vec![
            "perf",
            "write-bw",
            "-s",
            "1024",
            "-n",
            "20",
            "-R",
            "--set",
            "net.impair.loss=0.3",
        ];
        line.extend_from_slice(extra);
        rnic(&line)
    };
    let (code, _, err) = run(&["--retry_count", "0"]);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("RETRY_EXC_ERR"), "{err}");
    let (code, _, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
}

/// `--rate_limit 10` holds each QP to 10 Gb/s on the wire: two QPs of 4 KB WRITEs give
/// 20 Gb/s less the headers' share, in Gb/s or MiB/s (`--rate_units M`); the packets-per-
/// second unit and the software limiter are refused with the reason.
#[test]
fn rate_limit_holds_each_qp_to_its_rate() {
    let gbps = |extra: &[&str]| {
        let base = [
            "perf", "write-bw", "-s", "4096", "-n", "2000", "-q", "2", "--json", "-",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        v["goodput_gbps"].as_f64().unwrap()
    };
    let free = gbps(&[]);
    let limited = gbps(&["--rate_limit", "10"]);
    // Frames of 4096 B payload carry 4096 / 4154 of their wire bytes (+ preamble and gap).
    assert!(free > 90.0, "{free}");
    assert!(
        (18.5..=20.0).contains(&limited),
        "2 QPs at 10 Gb/s: {limited} Gb/s payload"
    );
    // So slow that the ACK timeout fires between packets: the resends after it still wait
    // for their tokens (the sweep after a timeout would pass the limiter).
    let (code, out, err) = rnic(&[
        "perf",
        "write-bw",
        "-s",
        "8192",
        "-n",
        "5",
        "-q",
        "1",
        "--rate_limit",
        "0.0002",
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bytes_verified"], true);
    assert!(v["timeouts"].as_u64().unwrap() > 0, "{v}");
    assert!(v["goodput_gbps"].as_f64().unwrap() <= 0.0002, "{v}");
    let mib = gbps(&["--rate_limit", "1192.09", "--rate_units", "M"]);
    assert!((mib - limited).abs() < 0.05 * limited, "{mib} vs {limited}");
    for bad in [
        &["--rate_limit", "10", "--rate_units", "p"][..],
        &["--rate_limit", "10", "--rate_limit_type", "SW"],
    ] {
        let (code, _, err) = rnic(&[&["perf", "write-bw"][..], bad].concat());
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("not"), "{err}");
    }
    // --burst_size counts messages of -s bytes; -a changes the size, and the burst was
    // taken in bytes of the default 64 KiB message, 4096 messages of 64 B past the limit.
    let (code, out, err) = rnic(&[
        "perf",
        "write-bw",
        "-a",
        "-n",
        "5",
        "--rate_limit",
        "10",
        "--burst_size",
        "4",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--burst_size") && err.contains("-a/--all"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

/// `--perform_warm_up`: each QP first does a tx depth of operations, one QP after another,
/// unmeasured; the measured run then starts with warm caches: the same operations are
/// counted, the rate is higher (300 QPs of 64 B WRITEs no longer pay their first QPC and
/// WQE misses inside the measurement), and the warm-up's bytes are verified too.
#[test]
fn perform_warm_up_runs_unmeasured_operations_first() {
    let run = |extra: &[&str]| {
        let base = [
            "perf",
            "write-bw",
            "-s",
            "64",
            "-n",
            "200",
            "-q",
            "300",
            "--clients",
            "10",
            "--json",
            "-",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        assert_eq!(v["ops_completed"], 60_000);
        v
    };
    let cold = run(&[]);
    let warm = run(&["--perform_warm_up"]);
    assert_eq!(cold["verified_bytes"], 200 * 300 * 64);
    assert_eq!(warm["verified_bytes"], (200 + 128) * 300 * 64);
    let (c, w) = (
        cold["msg_rate_mops"].as_f64().unwrap(),
        warm["msg_rate_mops"].as_f64().unwrap(),
    );
    assert!(w > 1.05 * c, "warm {w} Mops vs cold {c}");
    let (code, _, err) = rnic(&["perf", "write-lat", "-n", "10", "--perform_warm_up"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("--perform_warm_up has no effect on write-lat"),
        "{err}"
    );
}

/// `-r/--rx-depth`: the SEND target keeps perftest's 512 receives posted by default, so 64
/// SENDs in flight per QP never find its receive queue empty; with `-r 4` they do, and the
/// receiver's RNR NAKs make the sender wait and resend (every byte still arrives). At 1 KB
/// the sender outruns the receiver's reposts (at 4 KB these keep up: a SEND arriving while
/// its repost's WQE is read waits for it).
#[test]
fn rx_depth_sets_the_receives_a_send_target_keeps_posted() {
    let run = |extra: &[&str]| {
        let base = [
            "perf", "send-bw", "-s", "1024", "-n", "500", "-q", "4", "-t", "64", "--json", "-",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        v
    };
    let deep = run(&[]);
    assert_eq!(
        (deep["naks"].as_u64(), deep["retransmissions"].as_u64()),
        (Some(0), Some(0))
    );
    let shallow = run(&["-r", "4"]);
    assert!(shallow["naks"].as_u64().unwrap() > 0, "{shallow}");
    assert!(
        shallow["msg_rate_mops"].as_f64().unwrap() < deep["msg_rate_mops"].as_f64().unwrap() / 10.0
    );
}

/// The sample lists of `-H`/`-U`: `index, value` lines under `#, usec` (the block after
/// the first `#, usec` line, up to the next blank or dashed line).
fn sample_lists(out: &str) -> Vec<Vec<f64>> {
    let mut lists = Vec::new();
    let mut cur: Option<Vec<f64>> = None;
    for line in out.lines() {
        if line == "#, usec" {
            if let Some(l) = cur.take() {
                lists.push(l);
            }
            cur = Some(Vec::new());
            continue;
        }
        match (&mut cur, line.split_once(", ")) {
            (Some(l), Some((i, v))) if i.parse::<usize>() == Ok(l.len() + 1) => {
                l.push(v.parse().unwrap())
            }
            (Some(_), _) => lists.extend(cur.take()),
            _ => {}
        }
    }
    lists.extend(cur);
    lists
}

/// `-H` lists, before the summary row, the samples perftest's summary keeps: of 50
/// iterations the 49 gaps between consecutive posts, sorted, without the largest two (47);
/// `-U` lists the 49 in measurement order and then those 47. The row's t_min is the list's
/// first, its t_max the sorted gap right after the list's last; a bandwidth test refuses
/// the flags.
#[test]
fn histogram_flags_list_the_samples_perftest_keeps() {
    let (code, out, err) = rnic(&["perf", "write-lat", "-s", "64", "-n", "50", "-H"]);
    assert_eq!(code, Some(0), "{err}");
    let lists = sample_lists(&out);
    assert_eq!(lists.len(), 1, "{out}");
    let sorted = &lists[0];
    assert_eq!(sorted.len(), 47);
    assert!(sorted.windows(2).all(|w| w[0] <= w[1]));
    let row = |out: &str| -> Vec<f64> {
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("64 "))
            .expect("the summary row");
        row.split_whitespace().map(|c| c.parse().unwrap()).collect()
    };
    let cols = row(&out);
    assert!(
        (cols[2] - sorted[0]).abs() < 0.006,
        "{cols:?} vs {}",
        sorted[0]
    );
    // t_typical: 47 is odd, so the middle one (index 23).
    assert!(
        (cols[4] - sorted[23]).abs() < 0.006,
        "{cols:?} vs {}",
        sorted[23]
    );

    let (code, out, err) = rnic(&["perf", "write-lat", "-s", "64", "-n", "50", "-U"]);
    assert_eq!(code, Some(0), "{err}");
    let lists = sample_lists(&out);
    assert_eq!(lists.len(), 2, "{out}");
    assert_eq!(lists[0].len(), 49);
    let mut again = lists[0].clone();
    assert_ne!(
        &again, sorted,
        "the first iteration is the slowest (cold caches)"
    );
    again.sort_by(f64::total_cmp);
    assert_eq!(&again[..47], &sorted[..]);
    assert_eq!(&lists[1], sorted);
    // t_max: the gap at index 47 of the 49 sorted, the second largest.
    let cols = row(&out);
    assert!(
        (cols[3] - again[47]).abs() < 0.006,
        "{cols:?} vs {}",
        again[47]
    );
    assert!(again[47] >= sorted[46]);

    let (code, _, err) = rnic(&["perf", "write-bw", "-n", "10", "-H"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-H/--report-histogram"), "{err}");
}

/// `--latency_gap`: the client idles between iterations, so the run lasts longer by about
/// the gaps while the samples (post to completion) stay the same.
#[test]
fn latency_gap_spaces_the_iterations_without_entering_the_samples() {
    let run = |extra: &[&str]| {
        let base = ["perf", "write-lat", "-s", "64", "-n", "100", "--json", "-"];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        (
            v["simulated_time_us"].as_f64().unwrap(),
            v["latency_us"]["p50"].as_f64().unwrap(),
        )
    };
    let (t0, p0) = run(&[]);
    let (t1, p1) = run(&["--latency_gap", "10"]);
    // 99 gaps of 10 µs between 100 iterations.
    assert!((t1 - t0 - 990.0).abs() < 20.0, "{t0} -> {t1} us");
    assert!((p1 - p0).abs() < 0.05 * p0, "median {p0} -> {p1} us");
}

/// `--latency_gap` takes whole microseconds up to an hour and says so (`1e20` got only
/// "invalid digit found in string"); `--rate_limit` refuses 0 and `nan` with one message
/// (they said "give a rate above 0" and "not a number >= 0", the second accepting 0).
#[test]
fn latency_gap_and_rate_limit_say_what_they_take() {
    for gap in ["1e20", "1.5", "-1", "3600000001"] {
        let (code, _, err) = rnic(&["perf", "write-lat", "--latency_gap", gap]);
        assert_eq!(code, Some(2), "{gap}: {err}");
        assert!(
            err.contains("--latency_gap")
                && err.contains("whole number of microseconds from 0 to 3600000000"),
            "{gap}: {err}"
        );
    }
    for rate in ["0", "nan", "-1"] {
        let (code, _, err) = rnic(&["perf", "write-bw", "--rate_limit", rate]);
        assert_eq!(code, Some(2), "{rate}: {err}");
        assert!(
            err.contains("--rate_limit") && err.contains("is not a rate above 0"),
            "{rate}: {err}"
        );
    }
}

/// `-e/--events`: a completion that finds its core asleep costs host.cq_event_ns (4 µs) of
/// interrupt and wakeup before the poll: read-lat's one completion per iteration adds that
/// to every sample, counted in `host.cq_wakeups`; WRITE tests refuse it, as perftest's.
#[test]
fn events_wake_a_sleeping_core_per_completion() {
    let run = |extra: &[&str]| {
        let base = ["perf", "read-lat", "-n", "200", "--json", "-"];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
        (
            v["latency_us"]["p50"].as_f64().unwrap(),
            v["stats"]["host.cq_wakeups"].as_u64(),
        )
    };
    let (polled, none) = run(&[]);
    assert_eq!(none, None, "no wakeup counter without -e");
    let (evented, wakeups) = run(&["-e"]);
    assert!(
        (evented - polled - 4.0).abs() < 0.1,
        "{polled} -> {evented} us"
    );
    assert_eq!(wakeups, Some(200));
    // A free wake-up still reads the CQE from host memory: never ahead of polling.
    let (free, _) = run(&["-e", "--set", "host.cq_event_ns=0"]);
    assert_eq!(free, polled);
    let (slower, _) = run(&["-e", "--set", "host.cq_event_ns=1000"]);
    assert!(
        (slower - polled - 1.0).abs() < 0.1,
        "{polled} -> {slower} us"
    );
    let (code, _, err) = rnic(&["perf", "write-lat", "-e"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-e/--events"), "{err}");
}

/// `--recv_post_list N`: the SEND target reposts its consumed receives N at a time, one
/// RQ doorbell per list, so the doorbells drop N-fold and every byte still arrives; a list
/// longer than the receives kept posted (-r) is refused.
#[test]
fn recv_post_list_rings_one_rq_doorbell_per_list() {
    let run = |extra: &[&str]| {
        let base = [
            "perf",
            "send-bw",
            "-s",
            "256",
            "-n",
            "1000",
            "-q",
            "2",
            "--clients",
            "1",
            "--stats",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        stat(&out, "clients.nic.doorbell.rq")
            .unwrap_or_else(|| panic!("no RQ doorbell counter in\n{out}"))
    };
    let (one, eight) = (run(&[]), run(&["--recv_post_list", "8"]));
    // 2 initial lists of 512, then one doorbell per repost (1) or per 8 reposts, until the
    // run ends.
    assert!(one >= 1500, "{one} RQ doorbells");
    assert!(eight * 7 < one && eight >= one / 8, "{one} -> {eight}");
    let (code, _, err) = rnic(&["perf", "send-bw", "-r", "4", "--recv_post_list", "8"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--recv_post_list") && err.contains("-r"),
        "{err}"
    );
}

/// `--inline_recv N`: received SENDs of at most N bytes ride in their CQE, so the target's
/// NIC-to-host PCIe traffic loses the payload writes (every byte still verified); more than
/// half a CQE is refused.
#[test]
fn inline_recv_puts_small_sends_in_their_cqe() {
    let run = |extra: &[&str]| {
        let base = [
            "perf", "send-bw", "-s", "32", "-n", "500", "-q", "4", "--stats",
        ];
        let (code, out, err) = rnic(&[&base[..], extra].concat());
        assert_eq!(code, Some(0), "{err}");
        // The inline counter is reported only when used.
        let get = |key: &str| stat(&out, key).unwrap_or(0);
        (
            get("clients.nic.pcie.up_bytes"),
            get("clients.nic.rx.payload_bytes"),
            get("clients.nic.rx.inline_recv_bytes"),
        )
    };
    let (up, dma, inline) = run(&[]);
    assert_eq!((dma, inline), (500 * 4 * 32, 0));
    let (up_inline, dma, inline) = run(&["--inline_recv", "32"]);
    assert_eq!((dma, inline), (0, 500 * 4 * 32));
    // Each 32 B payload write was one TLP of 32 B plus its header.
    assert!(up - up_inline >= 2000 * 32, "{up} -> {up_inline} bytes up");
    let (code, _, err) = rnic(&["perf", "send-bw", "--inline_recv", "33"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--inline_recv"), "{err}");
}

/// `-R/--rdma_cm`: the QPs connect by RDMA CM MADs on the wire, as they do by default;
/// host.connect = direct connects them without frames.
#[test]
fn rdma_cm_connects_the_qps_by_cm_mads_which_is_the_default() {
    let connections = |args: &[&str]| {
        let mut all = vec!["perf", "write-bw", "-n", "10", "-q", "3", "--json", "-"];
        all.extend_from_slice(args);
        let (code, out, err) = rnic(&all);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["stats"]["cm.connections"].as_u64()
    };
    assert_eq!(connections(&["-R"]), Some(3));
    assert_eq!(connections(&[]), Some(3));
    assert_eq!(connections(&["--set", "host.connect=direct"]), None);
}

/// `-c/--connection UC|UD` runs the test on UC or UD QPs: the information block names the
/// service, the JSON has the `unreliable` section (nothing lost on a clean link, every byte
/// that arrived verified), UD frames carry a DETH in the pcap; tests the service cannot run
/// and UD messages above the PMTU exit 2 naming the field.
#[test]
fn connection_runs_uc_and_ud() {
    let dir = std::env::temp_dir().join(format!("rnic-conn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (test, c, opcode) in [("send-bw", "UD", 0x64u64), ("write-bw", "UC", 0x2a)] {
        let json = dir.join(format!("{test}-{c}.json"));
        let pcap = dir.join(format!("{test}-{c}.pcap"));
        let (code, table, err) = rnic(&[
            "perf",
            test,
            "-c",
            c,
            "-s",
            "1024",
            "-n",
            "50",
            "--json",
            json.to_str().unwrap(),
            "--pcap",
            pcap.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{err}");
        assert!(table.contains(&format!("Connection type : {c}")), "{table}");
        assert!(
            err.contains(&format!("rnic: {c}: 50 messages sent")),
            "{err}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let u = &v["unreliable"];
        assert_eq!(u["transport"], c.to_lowercase());
        assert_eq!(
            (u["messages_sent"].as_u64(), u["messages_lost"].as_u64()),
            (Some(50), Some(0))
        );
        assert_eq!(v["verified_bytes"].as_u64(), Some(50 * 1024));
        // The capture holds the service's opcode (BTH byte 0 after Ethernet, IPv4, UDP).
        let bytes = std::fs::read(&pcap).unwrap();
        let first = &bytes[24 + 16..];
        assert_eq!(u64::from(first[14 + 20 + 8]), opcode, "{test} -c {c}");
    }
    for (args, needle) in [
        (&["perf", "read-bw", "-c", "UC"][..], "qp.transport"),
        (&["perf", "write-bw", "-c", "UD"][..], "qp.transport"),
        (
            &["perf", "send-bw", "-c", "UD", "-s", "8192"][..],
            "qp.pmtu",
        ),
        (&["perf", "send-bw", "-c", "XRC"][..], "--connection XRC"),
    ] {
        let (code, _, err) = rnic(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `rnic perf --help` names every service `-c` runs: it read "RC, the only one rnic
/// models" after UC and UD were modelled.
#[test]
fn help_of_connection_names_rc_uc_and_ud() {
    let (code, out, _) = rnic(&["perf", "--help"]);
    assert_eq!(code, Some(0));
    let at = out.find("--connection <TYPE>").expect("-c in the help");
    let text: String = out[at..].lines().take(4).collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("RC") && text.contains("UC") && text.contains("UD"),
        "{text}"
    );
    assert!(!text.contains("the only one"), "{text}");
}

/// `rnic perf --help` says what -H prints as the book's flag table does: the samples the
/// summary keeps, sorted (n − 3 of them for n iterations). It read "every sample", which
/// is -U's first list.
#[test]
fn help_of_report_histogram_says_it_prints_the_kept_samples() {
    let (code, out, _) = rnic(&["perf", "--help"]);
    assert_eq!(code, Some(0));
    let at = out.find("--report-histogram").expect("-H in the help");
    let text: String = out[at..].lines().take(4).collect::<Vec<_>>().join(" ");
    assert!(text.contains("the samples the summary keeps"), "{text}");
    assert!(!text.contains("every sample (µs), sorted"), "{text}");
    let (code, out, _) = rnic(&["perf", "write-lat", "-s", "64", "-n", "8", "-H"]);
    assert_eq!(code, Some(0));
    let listed = out
        .lines()
        .skip_while(|l| *l != "#, usec")
        .skip(1)
        .take_while(|l| l.contains(", "))
        .count();
    assert_eq!(listed, 8 - 3, "{out}");
}

/// More memory regions than the flow has buffer slots would register regions over no QP's
/// buffer (`--mrs 1000000` on one QP used to take 1.8 s and say nothing): refused, naming
/// the flag and the largest count that works. `--mr_per_qp` with several clients gives one
/// region per QP on the server, not QPs x clients.
#[test]
fn more_regions_than_buffers_are_refused() {
    for (args, flag, most) in [
        (&["--mrs", "1000000"][..], "--mrs", "1"),
        (&["--mrs", "5", "-q", "4"], "--mrs", "4"),
        (&["--client-mrs", "3", "-q", "2"], "--client-mrs", "2"),
        // -b: each client's reverse flow has 4 / 2 = 2 QPs of its own.
        (
            &["--mrs", "3", "-q", "4", "--clients", "2", "-b"],
            "--mrs",
            "2",
        ),
    ] {
        let base = ["perf", "write-bw", "-s", "64", "-n", "5"];
        let (code, _, err) = rnic(&[&base[..], args].concat());
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag) && err.contains(&format!("at most {most}")),
            "{args:?}: {err}"
        );
    }
    let ok = |args: &[&str]| {
        let base = ["perf", "write-bw", "-s", "64", "-n", "5", "--json", "-"];
        let (code, out, err) = rnic(&[&base[..], args].concat());
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["bytes_verified"], true);
    };
    ok(&["--mrs", "4", "-q", "4"]);
    ok(&["--mr_per_qp", "-q", "4", "--clients", "2"]);
    // Under --reversed and -b each client's flow registers one region per QP of its share:
    // it was refused, `--mr_per_qp` asking each client for the server's -q regions (found
    // by an output-consistency hunt). Each client node's WRITEs miss the MPT once per
    // region they use: 2 per client with --mr_per_qp, 1 with one region; under -b as many
    // again as the targets of the server's WRITEs.
    let client_mpt_misses = |args: &[&str]| {
        let base = [
            "perf",
            "write-bw",
            "-s",
            "1024",
            "-n",
            "20",
            "-q",
            "4",
            "--clients",
            "2",
        ];
        let (code, out, err) = rnic(&[&base[..], args, &["--stats"]].concat());
        assert_eq!(code, Some(0), "{args:?}: {err}");
        stat(&out, "clients.nic.translation.mpt.misses").unwrap()
    };
    for (way, flows) in [("--reversed", 1), ("-b", 2)] {
        let (one, per_qp) = (
            client_mpt_misses(&[way]),
            client_mpt_misses(&[way, "--mr_per_qp"]),
        );
        assert_eq!((one, per_qp), (2 * flows, 4 * flows), "{way}");
    }
}

/// perftest's BW peak is the best rate over any run of consecutive operations, from one's
/// post to a later one's completion: never below the average (the whole run is one such
/// run), above it when the rate varies, and far above it when losses stall a run whose
/// other stretches go at line rate.
#[test]
fn bw_peak_is_the_best_run_of_consecutive_operations() {
    let figures = |args: &[&str]| {
        let base = ["perf", "write-bw", "--json", "-"];
        let (code, out, err) = rnic(&[&base[..], args].concat());
        assert_eq!(code, Some(0), "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap();
        (f("bw_peak_mb_s"), f("bw_avg_mb_s"))
    };
    // Deep queues at a steady rate: the whole run is the best stretch.
    let (peak, avg) = figures(&["-s", "65536", "-n", "1000"]);
    assert!(peak >= avg && peak < avg * 1.001, "peak {peak}, avg {avg}");
    // One operation in flight: the post of one to the completion of the next leaves out
    // the idle time between a completion and the next post, so a stretch beats the run.
    let (peak, avg) = figures(&["-s", "64", "-n", "1000", "-t", "1"]);
    assert!(peak > avg, "peak {peak}, avg {avg}");
    // 1 % loss: retransmission timeouts stall the run; the stretches between them do not.
    let (peak, avg) = figures(&[
        "-s",
        "4096",
        "-n",
        "2000",
        "-q",
        "8",
        "--set",
        "net.impair.loss=0.01",
    ]);
    assert!(peak > 5.0 * avg, "peak {peak}, avg {avg}");
}

/// The average's span ends at the latest completion the host polled, whichever core polled
/// it: with QPs on several cores a core that was busy polls a CQE later than another core
/// polls a later CQE, and the span ended at the last one handled instead, so the average
/// (`send-bw -s 4 -n 20 -q 3`: 22.2555 MB/s) passed the peak (22.2512), whose whole-run
/// stretch ends at the latest poll: the peak is never below the average.
#[test]
fn the_average_never_passes_the_peak_with_qps_on_several_cores() {
    for test in ["send-bw", "write-bw", "read-bw"] {
        for size in ["4", "128"] {
            let (code, out, err) = rnic(&[
                "perf", test, "-s", size, "-n", "20", "-q", "3", "--json", "-",
            ]);
            assert_eq!(code, Some(0), "{err}");
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let (peak, avg) = (
                v["bw_peak_mb_s"].as_f64().unwrap(),
                v["bw_avg_mb_s"].as_f64().unwrap(),
            );
            assert!(peak >= avg, "{test} -s {size}: peak {peak}, avg {avg}");
        }
    }
}

/// `-N/--noPeak` turns the peak off, and perftest then prints 0.00 in its column; `-D`
/// never measures it (perftest forces -N there and warns), and a scenario's
/// `perf.duration` gets the same note from `rnic run` (whose table printed the 0.00
/// without a word). Latency tests have no peak.
#[test]
fn no_peak_and_duration_mode_print_a_zero_peak() {
    let (code, out, err) = rnic(&["perf", "write-bw", "-s", "4096", "-n", "200", "-N"]);
    assert_eq!(code, Some(0), "{err}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("4096"))
        .unwrap_or_else(|| panic!("{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[2], "0.00", "{row}");
    assert_ne!(cols[3], "0.00", "{row}");
    let (code, out, err) = rnic(&[
        "perf", "write-bw", "-s", "4096", "-D", "0.0002", "--json", "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["bw_peak_mb_s"], 0.0);
    assert!(v["bw_avg_mb_s"].as_f64().unwrap() > 0.0);
    assert!(
        err.contains("BW peak is not measured in duration mode"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("rnic-peak-d-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bw.toml");
    std::fs::write(
        &file,
        "[perf]\ntest = \"write-bw\"\nsize = 4096\nduration = 0.0002\n",
    )
    .unwrap();
    let (code, out, err) = rnic(&["run", file.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" 4096 ") && out.contains(" 0.00 "), "{out}");
    assert!(
        err.contains("BW peak is not measured in duration mode"),
        "{err}"
    );
    let (code, _, err) = rnic(&["perf", "write-lat", "-n", "10", "-N"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("-N/--noPeak has no effect on write-lat"),
        "{err}"
    );
}

/// The peak is a rate some stretch of the run really achieved, so it can never pass the
/// link the operations share. Under `--reversed` every client writes into the server's one
/// 100 Gb/s port: the clients' stamps are one side's, read as one sequence in time order,
/// not each client's best stretch added (they peak at different times, and their sum
/// passed the port). With `-b` the two directions add, each at most its link.
#[test]
fn bw_peak_of_several_clients_stays_under_the_link_they_share() {
    // 100 Gb/s in MB/s (2^20 B), before headers: no payload rate can pass it.
    let link_mb_s = 100e9 / 8.0 / 1048576.0;
    let figures = |args: &[&str]| {
        let base = ["perf", "write-bw", "--json", "-"];
        let (code, out, err) = rnic(&[&base[..], args].concat());
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let f = |k: &str| v[k].as_f64().unwrap();
        (f("bw_peak_mb_s"), f("bw_avg_mb_s"))
    };
    let incast = ["-s", "65536", "-n", "200", "-q", "4", "--clients", "4"];
    for extra in [
        &["--reversed"][..],
        &["--reversed", "--set", "net.pfc=true"],
    ] {
        let (peak, avg) = figures(&[&incast[..], extra].concat());
        assert!(peak >= avg, "{extra:?}: peak {peak} < avg {avg}");
        assert!(
            peak <= link_mb_s,
            "{extra:?}: peak {peak} > link {link_mb_s}"
        );
    }
    let (peak, avg) = figures(&[&incast[..], &["-b", "--set", "net.pfc=true"]].concat());
    assert!(peak >= avg, "-b: peak {peak} < avg {avg}");
    assert!(
        peak <= 2.0 * link_mb_s,
        "-b: peak {peak} > both links {link_mb_s}"
    );
}

/// `--output` names a figure the test measures, as perftest checks it: bandwidth tests give
/// `bandwidth` or `message_rate`, latency tests `latency`; the others are refused (exit 2,
/// naming the flag) instead of printing a figure the test does not report. With `-a` each
/// size prints its own figure, one line per row of the table.
#[test]
fn output_names_a_figure_of_the_test_and_prints_one_per_size() {
    for (test, figure) in [
        ("write-bw", "latency"),
        ("write-lat", "bandwidth"),
        ("read-lat", "message_rate"),
    ] {
        let (code, out, err) = rnic(&["perf", test, "-n", "20", "--output", figure]);
        assert_eq!(code, Some(2), "{test} --output {figure}: {out} {err}");
        assert!(err.contains("--output"), "{err}");
    }
    let (code, out, err) = rnic(&[
        "perf",
        "write-bw",
        "-a",
        "-n",
        "20",
        "--output",
        "bandwidth",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let figures: Vec<f64> = out.lines().map(|l| l.trim().parse().unwrap()).collect();
    // Sizes 2 B to 8 MB.
    assert_eq!(figures.len(), 23, "{out}");
    assert!(figures[0] < figures[22], "{out}");
}

/// `--output=latency` prints the table's average: under `-D` that is perftest's window
/// average (the window over the iterations, halved for a ping-pong), which the table and
/// `--out_json` print, not the mean of the samples (2.72 where the table read 2.73).
#[test]
fn output_latency_under_duration_is_the_tables_average() {
    for test in ["write-lat", "read-lat"] {
        let base = ["perf", test, "-s", "64", "-D", "0.001"];
        let (code, table, err) = rnic(&base);
        assert_eq!(code, Some(0), "{err}");
        let row = table
            .lines()
            .find(|l| l.trim_start().starts_with("64 "))
            .unwrap();
        // #bytes, #iterations, t_avg, tps average.
        let t_avg: f64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
        let (code, only, err) = rnic(&[&base[..], &["--output", "latency"]].concat());
        assert_eq!(code, Some(0), "{err}");
        let figure: f64 = only.trim().parse().unwrap();
        assert_eq!(
            format!("{figure:.2}"),
            format!("{t_avg:.2}"),
            "{test}: {only} vs {row}"
        );
    }
}

/// `-b` with `--reversed` is refused (exit 2, naming both): `-b` already has both sides
/// initiate, and the run silently ignored `--reversed`.
#[test]
fn bidirectional_and_reversed_together_are_refused() {
    let (code, _, err) = rnic(&["perf", "write-bw", "-n", "10", "-b", "--reversed"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-b/--bidirectional and --reversed"), "{err}");
}

/// The cold first iteration (caches empty, the slowest of the run) is one of the two
/// largest gaps perftest sets aside: it no longer sets t_max nor the 99 % percentile. `-U`
/// lists the 199 gaps of 200 iterations in measurement order, the cold one first.
#[test]
fn a_cold_first_iteration_does_not_set_t_max() {
    for test in ["write-lat", "read-lat"] {
        let (code, out, err) = rnic(&["perf", test, "-s", "64", "-n", "200", "-U"]);
        assert_eq!(code, Some(0), "{err}");
        let lists = sample_lists(&out);
        let gaps = &lists[0];
        assert_eq!(gaps.len(), 199, "{test}");
        let cold = gaps[0];
        assert!(
            gaps[1..].iter().all(|&x| x < cold),
            "{test}: the first iteration is the slowest: {gaps:?}"
        );
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("64 "))
            .expect("the summary row");
        let cols: Vec<f64> = row.split_whitespace().map(|c| c.parse().unwrap()).collect();
        let (max, p99) = (cols[3], cols[7]);
        assert!(
            max < cold - 0.5 && p99 < cold - 0.5,
            "{test}: {row} vs cold {cold}"
        );
        // t_max is the second largest of the 199 gaps.
        let mut sorted = gaps.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((max - sorted[197]).abs() < 0.006, "{test}: {row}");
    }
}

/// Duration mode: perftest's report has the iteration count and the average only and keeps
/// no samples, so -H and -U list none; the row has four columns.
#[test]
fn duration_mode_lists_no_samples() {
    for flag in ["-H", "-U"] {
        let (code, out, err) = rnic(&["perf", "write-lat", "-s", "64", "-D", "0.001", flag]);
        assert_eq!(code, Some(0), "{err}");
        assert!(sample_lists(&out).is_empty(), "{flag}: {out}");
        assert!(!out.contains("#, usec"), "{flag}: {out}");
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("64 "))
            .expect("the summary row");
        assert_eq!(row.split_whitespace().count(), 4, "{row}");
    }
}

/// `--output` prints its one figure as perftest's `printf("%lf\n", ...)` does: six decimals
/// (C's `%lf` is `%.6f`), not the table's two; the value is the table's before rounding.
#[test]
fn output_prints_its_figure_with_six_decimals_as_perftest() {
    let six = |s: &str| {
        let t = s.trim();
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && frac.len() == 6
    };
    for (args, figure) in [
        (&["write-bw", "-s", "4096", "-n", "100"][..], "bandwidth"),
        (
            &["write-bw", "-s", "4096", "-n", "100", "--report_gbits"][..],
            "bandwidth",
        ),
        (&["write-bw", "-s", "4096", "-n", "100"][..], "message_rate"),
        (&["write-lat", "-s", "64", "-n", "100"][..], "latency"),
        (&["read-lat", "-s", "64", "-D", "0.001"][..], "latency"),
    ] {
        let full = [&["perf"][..], args, &["--output", figure]].concat();
        let (code, out, err) = rnic(&full);
        assert_eq!(code, Some(0), "{full:?}: {err}");
        assert!(
            six(&out),
            "{full:?} printed {out:?}, not %lf's six decimals"
        );
    }
    // A run that ends incomplete (exit 3) prints its table of what completed; in the
    // table's place `--output` prints that row's figure (it printed nothing).
    let lossy = [&["perf"][..], &INCOMPLETE_READ_BW].concat();
    let (code, table, _) = rnic(&lossy);
    assert_eq!(code, Some(3), "{table}");
    let (code, out, err) = rnic(&[&lossy[..], &["--output", "bandwidth"]].concat());
    assert_eq!(code, Some(3), "{err}");
    assert!(six(&out), "printed {out:?}, not %lf's six decimals");
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("4096"))
        .unwrap_or_else(|| panic!("{table}"));
    let avg: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    let figure: f64 = out.trim().parse().unwrap();
    assert_eq!(format!("{figure:.2}"), format!("{avg:.2}"), "{row}");
}

/// The information block (and `--out_json`'s `test_info`) shows the depths the run used, as
/// perftest's force_dependecies sets them: a latency test's TX depth is 1 whatever `-t`
/// says (rnic notes that `-t` has no effect there); an iteration-mode bandwidth test's
/// depth is at most `-n`, and its CQ moderation at most that depth; `-D` keeps `-t`.
#[test]
fn the_information_block_shows_the_depths_the_run_used() {
    let line = |out: &str, key: &str| -> String {
        out.lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line in {out}"))
            .split(':')
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    };
    let dir = std::env::temp_dir().join(format!("rnic-depths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("perftest.json");
    let json_s = json.to_str().unwrap();
    for (args, depth, cq_mod) in [
        (&["write-lat", "-n", "100", "-t", "64"][..], "1", None),
        (&["read-lat", "-n", "100", "-t", "16"][..], "1", None),
        (&["write-bw", "-n", "20", "-Q", "64"][..], "20", Some("20")),
        (
            &["write-bw", "-n", "200", "-t", "64", "-Q", "8"][..],
            "64",
            Some("8"),
        ),
        (
            &["write-bw", "-D", "0.001", "-t", "64"][..],
            "64",
            Some("1"),
        ),
    ] {
        let full = [
            &["perf"][..],
            args,
            &["--out_json", "--out_json_file", json_s],
        ]
        .concat();
        let (code, out, err) = rnic(&full);
        assert_eq!(code, Some(0), "{full:?}: {err}");
        assert_eq!(line(&out, "TX depth"), depth, "{args:?}");
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(info["test_info"]["TX_depth"].to_string(), depth, "{args:?}");
        if let Some(m) = cq_mod {
            assert_eq!(line(&out, "CQ Moderation"), m, "{args:?}");
            assert_eq!(
                info["test_info"]["CQ_Moderation"].to_string(),
                m,
                "{args:?}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-l N` as perftest's force_dependecies and ctx_print_test_info take it: without `-Q`
/// the CQ moderation is the list's size (one CQE per list); with `-Q` the list must be a
/// multiple of it (perftest exits; rnic refuses with exit 2, naming both flags); the title
/// reads `... Post List BW Test` and a `Post List` line follows the TX depth.
#[test]
fn a_post_list_sets_the_cq_moderation_and_shows_in_the_information_block() {
    let run = |extra: &[&str]| {
        let base = ["perf", "write-bw", "-s", "64", "-n", "200", "--stats"];
        rnic(&[&base[..], extra].concat())
    };
    let (code, out, err) = run(&["-l", "8"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("RDMA_Write Post List BW Test\n"), "{out}");
    assert!(
        out.contains(" TX depth        : 128\n Post List       : 8\n CQ Moderation   : 8\n"),
        "{out}"
    );
    assert_eq!(stat(&out, "server.nic.cq.cqes"), Some(200 / 8), "{out}");
    assert!(
        err.contains("CQ moderation will be the size of the post list"),
        "{err}"
    );
    // -Q given: it stays, and the list must be a multiple of it.
    let (code, out, err) = run(&["-l", "8", "-Q", "4"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(" CQ Moderation   : 4\n"), "{out}");
    assert_eq!(stat(&out, "server.nic.cq.cqes"), Some(200 / 4), "{out}");
    let (code, _, err) = run(&["-l", "8", "-Q", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("-l/--post_list 8") && err.contains("-Q/--cq-mod 3"),
        "{err}"
    );
    // No list: neither the title word nor the line.
    let (code, out, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains("Post List"), "{out}");
}

/// A bidirectional SEND test's information block has perftest's `RX depth` line after the
/// TX depth (ctx_print_test_info prints it for SEND on the receiving side and with `-b`,
/// where the block's side receives too), at most `-n` in iteration mode as perftest lowers
/// it; one-way SEND and other tests have none (the block is the initiator's).
#[test]
fn a_bidirectional_send_test_shows_its_rx_depth() {
    for (args, want) in [
        (
            &["send-bw", "-n", "100", "-b"][..],
            Some(" TX depth        : 100\n RX depth        : 100\n"),
        ),
        (
            &["send-bw", "-n", "1000", "-b", "-r", "64"][..],
            Some(" RX depth        : 64\n"),
        ),
        (
            &["send-bw", "-n", "1000", "-b"][..],
            Some(" RX depth        : 512\n"),
        ),
        (&["send-bw", "-n", "100"][..], None),
        (&["write-bw", "-n", "100", "-b"][..], None),
    ] {
        let full = [&["perf"][..], args].concat();
        let (code, out, err) = rnic(&full);
        assert_eq!(code, Some(0), "{full:?}: {err}");
        match want {
            Some(w) => assert!(out.contains(w), "{args:?}: {out}"),
            None => assert!(!out.contains("RX depth"), "{args:?}: {out}"),
        }
    }
}

/// `-R/--rdma_cm` with an unreliable service: perftest exits on `-c UC -R` (librdmacm does
/// not connect UC QPs), so rnic refuses it (exit 2, naming both) instead of running UC
/// pairs brought up directly.
#[test]
fn rdma_cm_with_uc_is_refused() {
    let (code, _, err) = rnic(&["perf", "write-bw", "-c", "UC", "-R", "-n", "10"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("-R/--rdma_cm") && err.contains("UC"), "{err}");
    let (code, _, err) = rnic(&[
        "perf",
        "write-bw",
        "-R",
        "-n",
        "10",
        "--set",
        "qp.transport=uc",
    ]);
    assert_eq!(code, Some(2), "{err}");
    // RC takes it as before.
    let (code, _, err) = rnic(&["perf", "write-bw", "-R", "-n", "10"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("rdma_cm"), "{err}");
}

/// `-c UD -R`: as perftest's librdmacm, rnic resolves each UD pair by a SIDR_REQ and a
/// SIDR_REP crossing the simulated network (two MADs per pair, no RTU; counted in the cm
/// stats, `rdma_cm QPs : ON`); without -R the pairs come up directly. The measured figures
/// are the same either way (setup is never measured), for bandwidth and latency.
#[test]
fn rdma_cm_with_ud_resolves_each_pair_by_sidr() {
    let run = |test: &str, extra: &[&str]| {
        let mut all = vec!["perf", test, "-c", "UD", "-s", "512", "-n", "50", "-q", "3"];
        all.extend_from_slice(extra);
        let (code, out, err) = rnic(&all);
        assert_eq!(code, Some(0), "{test} {extra:?}: {err}");
        assert!(!err.contains("no effect"), "{err}");
        all.extend_from_slice(&["--json", "-"]);
        let (code, json, err) = rnic(&all);
        assert_eq!(code, Some(0), "{test} {extra:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let stat = |k: &str| v["stats"][k].as_u64();
        let table = out.lines().skip_while(|l| !l.contains("#bytes")).nth(1);
        (
            out.contains(" rdma_cm QPs\t : ON\n"),
            stat("cm.connections"),
            stat("cm.mads_sent"),
            table.unwrap_or_default().to_string(),
        )
    };
    for test in ["send-bw", "send-lat"] {
        let (on, conns, mads, with_cm) = run(test, &["-R"]);
        assert!(on, "{test}");
        assert_eq!((conns, mads), (Some(3), Some(6)), "{test}");
        let (on, conns, _, direct) = run(test, &[]);
        assert!(!on, "{test}");
        assert_eq!(conns, None, "{test}");
        assert!(!direct.is_empty());
        assert_eq!(with_cm, direct, "{test}: setup is not measured");
    }
}

/// `#iterations` (and `n_iterations` in `--out_json`, `iterations` in `--json`) holds what
/// perftest 4.5 prints there. Its bandwidth report multiplies the per-QP `-n` by the QPs in
/// iteration mode, so `write-bw -n 100 -q 4` prints 400; rnic's `--clients` share `-q`,
/// so two clients print 400 too. Under `-b` perftest prints one side's count beside the two
/// sides' summed rates: 400, not the 800 operations both directions completed (which
/// `ops_completed` still counts). A latency test prints its iterations.
#[test]
fn iterations_column_is_one_sides_iters_times_qps_as_perftest_prints_it() {
    let dir = std::env::temp_dir().join(format!("rnic-iterations-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("report.json");
    let f = file.to_str().unwrap();
    // (extra arguments, #iterations, ops_completed)
    let cases: [(&[&str], u64, u64); 5] = [
        (&["write-bw", "-q", "4"], 400, 400),
        (&["write-bw", "-q", "4", "--clients", "2"], 400, 400),
        (
            &["write-bw", "-q", "4", "--clients", "2", "--reversed"],
            400,
            400,
        ),
        (&["write-bw", "-q", "4", "-b"], 400, 800),
        (&["write-lat", "-s", "64"], 100, 100),
    ];
    for (extra, iterations, ops) in cases {
        let args = [
            &["perf"][..],
            extra,
            &["-n", "100", "--out_json", "--out_json_file", f],
        ]
        .concat();
        let (code, out, err) = rnic(&args);
        assert_eq!(code, Some(0), "{extra:?}: {err}");
        let row = out
            .lines()
            .skip_while(|l| !l.contains("#iterations"))
            .nth(1)
            .unwrap_or_default();
        let column: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            column.get(1),
            Some(&iterations.to_string().as_str()),
            "{extra:?}: {out}"
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(v["results"]["n_iterations"], iterations, "{extra:?}");
        let (_, own, _) = rnic(&[&args[..args.len() - 3], &["--json", "-"]].concat());
        let own: serde_json::Value = serde_json::from_str(&own).unwrap();
        assert_eq!(own["iterations"], iterations, "{extra:?}");
        assert_eq!(own["ops_completed"], ops, "{extra:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--use-srq`: each side's QPs take their receives from one shared receive queue, `-r`
/// receives in all where each QP had `-r` of its own: with `-r 4` for 4 QPs the target posts
/// 4 receives before the run instead of 16, and the shared 4 run dry far more often (RNR
/// NAKs), every byte still verified, over RC and UD (whose buffers start with the GRH
/// area). UC, and fewer receives than QPs (perftest refuses it), exit 2.
#[test]
fn use_srq_shares_the_receives_among_the_qps() {
    let run = |extra: &[&str]| {
        let mut line = vec![
            "perf", "send-bw", "-q", "4", "-r", "4", "-n", "2000", "-s", "4096",
        ];
        line.extend_from_slice(extra);
        line.push("--stats");
        let (code, out, err) = rnic(&line);
        assert_eq!(code, Some(0), "{extra:?}: {err}");
        let at = |key| stat(&out, key).unwrap_or_else(|| panic!("{key} in {out}"));
        (
            at("host.receives_posted"),
            at("clients.transport.naks_sent.rnr"),
        )
    };
    let (own_posted, own_rnr) = run(&[]);
    let (shared_posted, shared_rnr) = run(&["--use-srq"]);
    assert_eq!((own_posted, shared_posted), (16 + 8000, 4 + 8000));
    assert!(shared_rnr > 2 * own_rnr, "{shared_rnr} against {own_rnr}");
    let ud = [
        "perf",
        "send-bw",
        "-c",
        "UD",
        "-s",
        "1024",
        "-q",
        "4",
        "-n",
        "500",
        "--use-srq",
    ];
    let (code, out, err) = rnic(&ud);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Using SRQ      : ON"), "{out}");
    for (extra, words) in [
        (&["-c", "UC"][..], "not over UC"),
        (&["-q", "8", "-r", "4"][..], "below the 8 QPs"),
    ] {
        let mut line = vec!["perf", "send-bw", "--use-srq"];
        line.extend_from_slice(extra);
        let (code, _, err) = rnic(&line);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(err.contains(words), "{extra:?}: {err}");
    }
}

/// A `--procs` run's summary keeps every sample (csRNA's test, many processes at once), so
/// `-H` lists every sample, sorted, and `-U` every one in measurement order: they listed
/// the ping-pong's kept gaps (297 of 300, without the largest, which the summary's t_max
/// showed).
#[test]
fn procs_histograms_list_every_sample_the_summary_keeps() {
    let base = ["perf", "write-lat", "-n", "300", "-q", "40", "--procs", "4"];
    let samples = |out: &str| -> Vec<f64> {
        out.lines()
            .filter_map(|l| l.split_once(", "))
            .filter_map(|(i, v)| i.parse::<u32>().ok().and(v.trim().parse().ok()))
            .collect()
    };
    let mut h = base.to_vec();
    h.push("-H");
    let (code, out, err) = rnic(&h);
    assert_eq!(code, Some(0), "{err}");
    let sorted = samples(&out);
    assert_eq!(sorted.len(), 300, "{out}");
    let row = out
        .lines()
        .find(|l| l.trim_start().starts_with("2 "))
        .expect("the summary row");
    let t_max: f64 = row.split_whitespace().nth(3).unwrap().parse().unwrap();
    let listed_max = sorted.iter().copied().fold(0.0, f64::max);
    assert!(
        (listed_max - t_max).abs() < 0.006,
        "{listed_max} against t_max {t_max}"
    );
    let mut u = base.to_vec();
    u.push("-U");
    let (code, out, err) = rnic(&u);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        samples(&out).len(),
        600,
        "every sample unsorted, then sorted"
    );
}
