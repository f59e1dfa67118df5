//! Numbers the book quotes in its prose and tables, beside the command each comes from.
//!
//! The console blocks are checked whole by `doc_commands.rs`; a number quoted in a
//! sentence or a flag table ("1,000 doorbells instead of 8,000") is checked here: each row
//! names the chapter, the words it quotes (which must still be there, line breaks read as
//! spaces), the command, and the lines of the command's output (standard output and
//! standard error) that give the number. A change that moves a number fails the row, and
//! the fix is to rerun the command and correct both the row and the chapter.
//!
//! Rows whose command takes more than a few seconds unoptimised are left out; they are
//! listed in [`TOO_SLOW`] with the figures they would pin.

use std::path::{Path, PathBuf};

/// One quoted number: where, the words, the command, and what its output must contain.
struct Quote {
    chapter: &'static str,
    words: &'static str,
    args: &'static [&'static str],
    output: &'static [&'static str],
}

const FLAGS: &str = "docs/book/src/perftest-flags.md";
const NET: &str = "docs/book/src/model/networks.md";
const ISOLATION: &str = "docs/book/src/repro/isolation.md";
const ORNIC: &str = "docs/book/src/repro/ornic.md";
const WAN: &str = "docs/book/src/repro/wan.md";

const QUOTES: &[Quote] = &[
    Quote {
        chapter: "docs/book/src/repro/index.md",
        words: "`ooo.left_cache_threshold_blocks`, rnic's 2 blocks: LEFT flips at 1 and at 3, LEFT+ at 3",
        args: &[
            "repro",
            "ornic-bitmap-cycles",
            "--sensitivity",
            "--quiet",
            "--out",
            "target/doc-numbers/repro",
        ],
        output: &[
            "PASS     flips at ooo.left_cache_threshold_blocks 2 -> 1 (-20 %); \
             ooo.left_cache_threshold_blocks 2 -> 3 (+20 %)",
            "PASS     flips at ooo.left_cache_threshold_blocks 2 -> 3 (+20 %)",
        ],
    },
    Quote {
        chapter: NET,
        words: "#  clients.transport.naks_sent.rnr 24, server.transport.rnr_waits 24: receiver not \
                ready, #  not loss; clients.transport.drops.out_of_sequence 724",
        args: &["perf", "send-bw", "-s", "1024", "-r", "8", "-n", "200", "--stats"],
        output: &[
            "clients.transport.naks_sent.rnr                           24\n",
            "server.transport.rnr_waits                                24\n",
            "clients.transport.drops.out_of_sequence                   724\n",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-bw -s 64 -n 2000 -q 4 -l 8`: 1,000 doorbells instead of 8,000",
        args: &["perf", "write-bw", "-s", "64", "-n", "2000", "-q", "4", "-l", "8", "--stats"],
        output: &["server.nic.doorbell.sq                                    1000"],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-bw -s 64 -n 2000 -q 4 -Q 16`: 500 CQEs instead of 8,000, 126.3 µs instead of 142.5 µs",
        args: &["perf", "write-bw", "-s", "64", "-n", "2000", "-q", "4", "-Q", "16", "--stats"],
        output: &[
            "server.nic.cq.cqes                                        500",
            "rnic: write-bw simulated 126.328 us",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "500 CQEs instead of 8,000, 126.3 µs instead of 142.5 µs",
        args: &["perf", "write-bw", "-s", "64", "-n", "2000", "-q", "4", "--stats"],
        output: &[
            "server.nic.doorbell.sq                                    8000",
            "server.nic.cq.cqes                                        8000",
            "rnic: write-bw simulated 142.476 us",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "`send-bw -s 32 -n 2000 -q 16`: the target's PCIe writes 5.40 → 3.61 MB, same rate",
        args: &["perf", "send-bw", "-s", "32", "-n", "2000", "-q", "16", "--stats"],
        output: &["clients.nic.pcie.up_bytes                                 5401008", "63.385006"],
    },
    Quote {
        chapter: FLAGS,
        words: "the target's PCIe writes 5.40 → 3.61 MB, same rate",
        args: &[
            "perf", "send-bw", "-s", "32", "-n", "2000", "-q", "16", "--inline_recv", "32",
            "--stats",
        ],
        output: &["clients.nic.pcie.up_bytes                                 3608960", "63.386575"],
    },
    Quote {
        chapter: FLAGS,
        words: "`send-bw -s 256 -n 1000 -q 2 --clients 1`: 1,872 → 234 RQ doorbells, same rate",
        args: &["perf", "send-bw", "-s", "256", "-n", "1000", "-q", "2", "--clients", "1", "--stats"],
        output: &[
            "clients.nic.doorbell.rq                                   1872",
            "clients.host.cpu_busy_ps                                  140000000",
            "27.686206",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "so the target's `host.cpu_busy_ps` is 140 µs either way",
        args: &[
            "perf", "send-bw", "-s", "256", "-n", "1000", "-q", "2", "--clients", "1",
            "--recv_post_list", "8", "--stats",
        ],
        output: &[
            "clients.nic.doorbell.rq                                   234",
            "clients.host.cpu_busy_ps                                  140000000",
            "27.686206",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-bw -s 4096 -n 200 -N`: peak 0.00, average 10,702.45 MB/s",
        args: &["perf", "write-bw", "-s", "4096", "-n", "200", "-N"],
        output: &["0.00               10702.45"],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-bw -s 65536 -n 200 -q 2 -b`: 23,225 MB/s against 11,646 one way",
        args: &["perf", "write-bw", "-s", "65536", "-n", "200", "-q", "2", "-b"],
        output: &["23225.12            23225.12"],
    },
    Quote {
        chapter: FLAGS,
        words: "23,225 MB/s against 11,646 one way",
        args: &["perf", "write-bw", "-s", "65536", "-n", "200", "-q", "2"],
        output: &["11645.78            11645.78"],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-lat -s 64 -n 5 -U`: the first iteration 4.76 µs (cold caches), the others 2.72",
        args: &["perf", "write-lat", "-s", "64", "-n", "5", "-U"],
        output: &["1, 4.76442\n2, 2.72242\n3, 2.72242\n4, 2.72242\n"],
    },
    Quote {
        chapter: FLAGS,
        words: "`read-lat -n 200 -e`: 3.77 → 7.77 µs, 200 wakeups",
        args: &["perf", "read-lat", "-n", "200", "-e", "--stats"],
        output: &[
            " 2       200          7.77           7.77         7.77",
            "host.cq_wakeups                                           200",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "`read-lat -n 200 -e`: 3.77 → 7.77 µs",
        args: &["perf", "read-lat", "-n", "200"],
        output: &[" 2       200          3.77           3.77         3.77"],
    },
    Quote {
        chapter: FLAGS,
        words: "`write-lat -n 100 --latency_gap 10`: 990 µs longer, same median",
        args: &["perf", "write-lat", "-n", "100", "--latency_gap", "10"],
        output: &[
            " 2       100          2.71           2.71         2.71",
            "rnic: write-lat simulated 1535.098 us",
        ],
    },
    Quote {
        chapter: FLAGS,
        words: "990 µs longer, same median",
        args: &["perf", "write-lat", "-n", "100"],
        output: &[
            " 2       100          2.71           2.71         2.71",
            "rnic: write-lat simulated 545.098 us",
        ],
    },
    Quote {
        chapter: NET,
        words: "#  t_typical 53.01 µs: 2 × 0.5 µs + 50 µs of fibre",
        args: &[
            "perf", "write-lat", "-s", "2", "--clients", "2", "--set",
            "net.topology=scenarios/topologies/two-tor.toml",
        ],
        output: &[" 2       1000          53.01          53.01        53.01"],
    },
    Quote {
        chapter: NET,
        words: "#  4737.5 MB/s: one QP's 128 × 4 KiB in flight",
        args: &[
            "perf", "write-bw", "-s", "4096", "--clients", "2", "-D", "0.01", "--set",
            "net.topology=scenarios/topologies/two-tor.toml",
        ],
        output: &["0.00               4737.50"],
    },
    Quote {
        chapter: NET,
        words: "#  256 frames marked: four PFC-paced ingresses",
        args: &[
            "perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "-n", "50",
            "--reversed", "--set", "net.pfc=true", "--set", "net.ecn.enabled=true", "--stats",
        ],
        output: &["net.ecn_marks                                             256"],
    },
    Quote {
        chapter: NET,
        words: "pauses its clients at a derived level of 1,279,502 bytes (16 MiB, five ingresses of 100 Gb/s and 500 ns), holds at most 5,181,254 bytes in the pool and drops nothing",
        args: &[
            "perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "-n", "50",
            "--reversed", "--set", "net.pfc=true", "--set", "net.switch_buffer=shared", "--stats",
        ],
        output: &[
            "net.switch_pools.0.pfc_xoff_bytes                         1279502",
            "net.switch_pools.0.max_used_bytes                         5181254",
            "net.switch_drops                                          0",
        ],
    },
    Quote {
        chapter: NET,
        words: "#  total 250.6 Gbit/s: sixteen QPs hashed over the four spine links",
        args: &["run", "scenarios/fabrics/leaf-spine-ecmp.toml"],
        output: &["total                                      16       1600    3347.629    0.4780   250.584"],
    },
    Quote {
        chapter: NET,
        words: "#  total 97.9 Gbit/s: every flow through spine 0's one link",
        args: &[
            "run", "scenarios/fabrics/leaf-spine-ecmp.toml", "--set",
            "net.fabric.routing=lowest_link",
        ],
        output: &["total                                      16       1600    8567.369    0.1868    97.913"],
    },
    Quote {
        chapter: NET,
        words: "#  total 9.8 Gbit/s: every frame sprayed, go-back-N resends 193,408 packets",
        args: &[
            "run", "scenarios/fabrics/leaf-spine-ecmp.toml", "--set", "net.fabric.routing=spray",
        ],
        output: &["total                                      16       1600   85266.356    0.0188     9.838                               193408"],
    },
    Quote {
        chapter: NET,
        words: "#  total 371.2 Gbit/s: sprayed, ORNIC places them, resends none",
        args: &[
            "run", "scenarios/fabrics/leaf-spine-ecmp.toml", "--set", "net.fabric.routing=spray",
            "--profile", "ornic",
        ],
        output: &["total                                      16       1600    2259.664    0.7081   371.233                                    0"],
    },
    Quote {
        chapter: NET,
        words: "#  total 389.9 Gbit/s: each frame to the spine port that frees first, in order, go-back-N resends none",
        args: &[
            "run", "scenarios/fabrics/leaf-spine-ecmp.toml", "--set", "net.fabric.routing=adaptive",
        ],
        output: &["total                                      16       1600    2151.486    0.7437   389.898                                    0"],
    },
    Quote {
        chapter: NET,
        words: "#  708 MB/s: 7,493 frames dropped, 13,080 resent, 2 ACK timeouts of 67 ms",
        args: &["perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "--reversed", "-n", "200"],
        output: &[
            "11645.87            708.04",
            "13080 retransmissions, 6 NAKs, 2 timeouts",
            "switches dropped 7493 frames",
        ],
    },
    Quote {
        chapter: ISOLATION,
        words: "rnic run scenarios/flows/ls-beside-3-bs.toml # baseline: LS p50 214 µs",
        args: &["run", "scenarios/flows/ls-beside-3-bs.toml"],
        output: &["ls    write-lat     ls      0        64     1         30   12822.719    0.0023     0.001   213.927"],
    },
    Quote {
        chapter: ISOLATION,
        words: "--set nic.tx_isolation=v2 # LS p50 3.5 µs",
        args: &["run", "scenarios/flows/ls-beside-3-bs.toml", "--set", "nic.tx_isolation=v2"],
        output: &["ls    write-lat     ls      0        64     1         30     217.809    0.1377     0.071     3.519"],
    },
    Quote {
        chapter: ORNIC,
        words: "rnic perf write-bw --profile ornic -s 1048576 -n 5 -t 1 # 94.3 Gb/s",
        args: &["perf", "write-bw", "--profile", "ornic", "-s", "1048576", "-n", "5", "-t", "1", "--report_gbits"],
        output: &[" 1048576    5                94.68              94.34"],
    },
    Quote {
        chapter: NET,
        words: "#  11,668 MB/s: no drop; 188 pauses",
        args: &[
            "perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "--reversed", "-n",
            "200", "--set", "net.pfc=true", "--stats",
        ],
        output: &[
            "11668.05            11668.05",
            "net.pfc.pauses                                            188",
            "0 retransmissions",
        ],
    },
    Quote {
        chapter: NET,
        words: "#  712 MB/s: 2,365 frames dropped by the switches, 3,517 resent, 1 ACK timeout",
        args: &[
            "perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "--reversed", "-n",
            "200", "--set", "net.topology=scenarios/topologies/leaf-spine.toml",
        ],
        output: &[
            "11647.03            712.11",
            "3517 retransmissions, 2 NAKs, 1 timeouts",
            "switches dropped 2365 frames",
        ],
    },
    Quote {
        chapter: NET,
        words: "#  11,661 MB/s: no drop; 387 pauses, 176 of them to switch ports (paused 4.3 ms in all)",
        args: &[
            "perf", "write-bw", "-s", "65536", "-q", "4", "--clients", "4", "--reversed", "-n",
            "200", "--set", "net.topology=scenarios/topologies/leaf-spine.toml", "--set",
            "net.pfc=true", "--stats",
        ],
        output: &[
            "11660.74            11660.74",
            "net.pfc.pauses                                            387",
            "net.pfc.switch_paused_ps                                  4294689600",
            "net.pfc.switch_pauses                                     176",
            "0 retransmissions",
        ],
    },
    Quote {
        chapter: "docs/book/src/engine.md",
        words: "(`write-bw -c UC -s 4096 -n 200 --reversed --clients 2 -q 2`: 22,435 MB/s offered \
                into a 100 Gb/s port)",
        args: &[
            "perf", "write-bw", "-c", "UC", "-s", "4096", "-n", "200", "--reversed", "--clients",
            "2", "-q", "2",
        ],
        output: &["22434.85"],
    },
    Quote {
        chapter: "docs/book/src/engine.md",
        words: "1 MB read-bw at 0.1 % loss sent 52,695 response frames for 10,240 (19.04 Gb/s; \
                now 10,360, 96.69 Gb/s)",
        args: &[
            "perf", "read-bw", "-s", "1048576", "-n", "40", "--set", "net.impair.loss=0.001",
            "--stats",
        ],
        output: &[
            "11526.68",
            "clients.transport.tx_read_responses                       10360",
        ],
    },
    // Not a number but the counters' names: the chapter named `net.link0.up.dropped`, a key
    // no run reports (the impairment elements' drops are summed as `net.elements.dropped`).
    Quote {
        chapter: NET,
        words: "counters under a dotted name: `server.nic.qpc.cache.misses`, \
                `server.nic.pcie.down_bytes`, `server.nic.tx.buffer_peak_bytes`, \
                `server.nic.sched.stalls`, `net.elements.dropped`, `transport.retransmissions`",
        args: &[
            "perf", "write-bw", "-s", "4096", "-n", "20", "--set", "net.impair.loss=0.05",
            "--stats",
        ],
        output: &[
            "\nserver.nic.qpc.cache.misses ",
            "\nserver.nic.pcie.down_bytes ",
            "\nserver.nic.tx.buffer_peak_bytes ",
            "\nserver.nic.sched.stalls ",
            "\nnet.elements.dropped ",
            "\ntransport.retransmissions ",
        ],
    },
];

/// Rows left out as too slow for the unoptimised suite: (chapter, words, command, cost).
const TOO_SLOW: &[(&str, &str, &str, &str)] = &[
    (
        FLAGS,
        "66.3 Mops warm, 57.9 cold",
        "perf write-bw -s 64 -n 200 -q 300 --clients 10 [--perform_warm_up]",
        "1.5 M events, about 2 s optimised and ten times that here",
    ),
    (
        FLAGS,
        "56.0 → 55.4 Mops",
        "perf send-bw -s 64 -q 4 [-e]",
        "0.44 M events each, about 1 s optimised",
    ),
    (
        WAN,
        "rnic perf write-bw --profile wan --report_gbits # 100 km, standard NIC: 2.8 Gb/s",
        "perf write-bw --profile wan --report_gbits (2.78 Gb/s; --set net.wan_km=10: 27.07)",
        "5,000 WRITEs over 100 km, 2 s optimised",
    ),
    (
        NET,
        "counts 0 RNR NAKs and 311,524 such waits at the server",
        "perf send-bw -s 256 -q 16 --clients 4 --reversed -n 20000 --set pcie.gbps=16 --set \
         net.pfc=true --stats (server.transport.naks_sent.rnr 0, server.nic.rx.recv_waits \
         311524)",
        "7.7 M events, 3.6 s optimised",
    ),
    (
        NET,
        "40 times the simulated time, 179 ms against 4.5",
        "run scenarios/fabrics/websearch-small.toml --set net.fabric.routing=spray [--profile \
         ornic] (179169.302 µs; with ornic 4515.225 µs)",
        "17.1 M events, 6 s optimised (ornic: 1.3 M events, 0.8 s)",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `text` with every run of whitespace read as one space.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn chapter_has(root: &Path, chapter: &str, words: &str) -> bool {
    let text =
        std::fs::read_to_string(root.join(chapter)).unwrap_or_else(|e| panic!("{chapter}: {e}"));
    flat(&text).contains(&flat(words))
}

#[test]
fn the_quoted_words_are_still_in_the_chapters() {
    let root = root();
    let missing: Vec<String> = QUOTES
        .iter()
        .map(|q| (q.chapter, q.words))
        .chain(TOO_SLOW.iter().map(|s| (s.0, s.1)))
        .filter(|(chapter, words)| !chapter_has(&root, chapter, words))
        .map(|(chapter, words)| format!("{chapter}: {words}"))
        .collect();
    assert!(
        missing.is_empty(),
        "quoted words no longer in their chapter (fix the row or the chapter):\n{}",
        missing.join("\n")
    );
}

#[test]
fn each_quoted_number_is_what_its_command_prints() {
    let mut wrong = Vec::new();
    for q in QUOTES {
        let (code, out, err) = crate::common::rnic_at_root(q.args);
        let both = format!("{out}{err}");
        let absent: Vec<_> = q.output.iter().filter(|o| !both.contains(**o)).collect();
        if code != 0 || !absent.is_empty() {
            wrong.push(format!(
                "rnic {} (exit {code}) for \"{}\" in {}: missing {absent:?}\n{both}",
                q.args.join(" "),
                q.words,
                q.chapter
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
