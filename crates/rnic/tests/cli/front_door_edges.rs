//! The binary at the edges a newcomer meets: input files past the size cap, output paths
//! whose directory is missing or that name a file where a directory goes, and the messages
//! of flags given values out of range; each refused with its exit status and a message that
//! names the file, the flag and the limit, never a hang or a guess.

use crate::common::rnic;
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-edges-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `/dev/zero` never ends and a 4 MB TOML of a two-million-element array parses into far
/// more memory than its bytes: both are refused at the input cap (1 MiB), at once, naming
/// the file and the cap; so are a sweep file and a topology file past it.
#[test]
fn input_files_past_the_cap_exit_2_naming_the_file_and_the_cap() {
    let d = scratch("cap");
    let big = d.join("big.toml");
    let array: Vec<&str> = vec!["1"; 2_000_000];
    std::fs::write(&big, format!("seed = 1\nx = [{}]\n", array.join(","))).unwrap();
    let big_s = big.to_str().unwrap();
    let topology = format!("net.topology={big_s}");
    for (args, file) in [
        (vec!["run", "/dev/zero"], "/dev/zero"),
        (vec!["run", big_s], big_s),
        (vec!["sweep", big_s, "--out", d.to_str().unwrap()], big_s),
        (
            vec!["perf", "write-bw", "-n", "5", "--set", &topology],
            big_s,
        ),
    ] {
        let start = Instant::now();
        let (code, _, err) = rnic(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(&format!("{file} is larger than 1048576 bytes (1 MiB)")),
            "{args:?}: {err}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            start.elapsed()
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `--pcap` and `--json` create only their file, as `tcpdump -w` does: a missing directory
/// is refused before the run (exit 4, an output that cannot be written) and is not created.
#[test]
fn an_output_file_in_a_missing_directory_is_refused_not_created() {
    let d = scratch("nodir");
    let missing = d.join("nonexistent_dir");
    let file = missing.join("x.pcap");
    for flag in ["--pcap", "--json"] {
        let (code, _, err) = rnic(&["perf", "write-bw", "-n", "5", flag, file.to_str().unwrap()]);
        assert_eq!(code, 4, "{flag}: {err}");
        assert!(
            err.contains(&format!("{} does not exist", missing.display()))
                && err.contains(file.to_str().unwrap()),
            "{flag}: {err}"
        );
        assert!(!missing.exists(), "{flag} created {}", missing.display());
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `sweep --out` naming a file says so, not the operating system's "File exists".
#[test]
fn a_sweep_out_that_is_a_file_is_named_as_one() {
    let d = scratch("outfile");
    let sweep = d.join("s.toml");
    std::fs::write(
        &sweep,
        "[perf]\ntest = \"write-bw\"\niters = 5\n[[axis]]\nkey = \"perf.size\"\nvalues = [64]\n",
    )
    .unwrap();
    let afile = d.join("afile");
    std::fs::write(&afile, "keep").unwrap();
    let (code, _, err) = rnic(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        afile.to_str().unwrap(),
    ]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains(&format!(
            "{}: it is a file, not a directory",
            afile.display()
        )) && err.contains("--out")
            && !err.contains("File exists"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&afile).unwrap(), "keep");
    let _ = std::fs::remove_dir_all(&d);
}

/// `calc qd` takes negative values as values, so the range check names the flag (clap read
/// `-100` as a flag: "unexpected argument '-1'"); a distance too large for the round trip
/// says so and gives the limit.
#[test]
fn calc_qd_names_the_flag_of_a_negative_or_huge_value() {
    let qd = |extra: &[&str]| {
        let mut args = vec!["calc", "qd", "--frame-bytes", "4178"];
        args.extend_from_slice(extra);
        rnic(&args)
    };
    let (code, _, err) = qd(&["--gbps", "-100", "--km", "100"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--gbps -100: give a value from 0.001 to 10000 Gbit/s")
            && !err.contains("unexpected argument"),
        "{err}"
    );
    let (code, _, err) = qd(&["--gbps", "100", "--km", "-5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--km -5: give a value from 0.001"), "{err}");
    let (code, _, err) = qd(&["--gbps", "100", "--km", "1e308"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--km 1e308: give a value from 0.001 to 1000000 km")
            && err.contains("or give --rtt-us"),
        "{err}"
    );
    let (code, out, err) = qd(&["--gbps", "100", "--km", "1000000"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("round trip       10000000 µs"), "{out}");
}

/// `--rate_limit` refuses 0 (the field's "no limit"), so its messages give the flag's own
/// range, never the field's "from 0".
#[test]
fn rate_limit_messages_give_the_range_the_flag_takes() {
    for (rate, want) in [
        ("0", "is not a rate above 0"),
        ("1e7", "more than the 1000000 Gb/s"),
        ("1e-300", "below the 0.000001 Gb/s"),
    ] {
        let (code, _, err) = rnic(&["perf", "write-bw", "-n", "5", "--rate_limit", rate]);
        assert_eq!(code, 2, "{rate}: {err}");
        assert!(
            err.contains(want) && !err.contains("from 0"),
            "{rate}: {err}"
        );
        assert!(!err.contains("give 0"), "{rate}: {err}");
    }
}

/// A link so long that its round trip outlasts the local ACK timeout fails every request
/// with RETRY_EXC_ERR; the reason says why and which qp.timeout would cover it.
#[test]
fn a_round_trip_longer_than_the_ack_timeout_is_named_beside_retry_exc_err() {
    let (code, _, err) = rnic(&["perf", "write-bw", "-n", "5", "--set", "net.link_km=1e6"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("RETRY_EXC_ERR")
            && err.contains(
                "20000000.000 µs of propagation alone, is longer than the local ACK \
                             timeout, qp.timeout = 14 (67108.864 µs)"
            )
            && err.contains("raise qp.timeout (-u) to at least 23"),
        "{err}"
    );
    // A round trip the timeout covers gets no such hint, whatever else happens.
    let (code, _, err) = rnic(&["perf", "write-bw", "-n", "5", "--set", "net.link_km=1000"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("ACK timeout"), "{err}");
}

/// `rnic config show` sends a reader of `net.topology` to the page that describes topology
/// files; it said "see the README" after that part of the README had moved into the book.
#[test]
fn config_show_points_to_pages_that_exist() {
    let (code, out, err) = rnic(&["config", "show"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("see the README"), "{out}");
    let path = "docs/book/src/model/networks.md";
    let line = out
        .lines()
        .find(|l| l.contains("topology file"))
        .expect("net.topology's description");
    assert!(line.contains(path), "{line}");
    let page = std::fs::read_to_string(crate::common::repo_root().join(path)).expect(path);
    assert!(
        page.contains("A topology file has `[[switch]]` tables"),
        "{path}"
    );
}

/// The book's "Running rnic" says which commands take `--profile`, `--seed`, `--set` and
/// `--json` (it said every simulating command, and `rnic repro` takes none of them).
#[test]
fn the_commands_the_book_names_take_the_common_flags() {
    let chapter =
        std::fs::read_to_string(crate::common::repo_root().join("docs/book/src/running.md"))
            .expect("running.md");
    let flat = chapter.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("`rnic perf`, `rnic run` and `rnic sweep` take `--profile NAME`"),
        "running.md no longer names the commands"
    );
    let flags = ["--profile <", "--seed <", "--set <", "--json <"];
    for command in ["perf", "run", "sweep"] {
        let (code, out, _) = rnic(&[command, "--help"]);
        assert_eq!(code, 0);
        for flag in flags {
            assert!(out.contains(flag), "rnic {command} --help lists no {flag}");
        }
    }
    let (code, out, _) = rnic(&["repro", "--help"]);
    assert_eq!(code, 0);
    for flag in flags {
        assert!(!out.contains(flag), "rnic repro --help lists {flag}");
    }
}
