//! What the binary's tests share: running `rnic` as a user would, as CI does (`CI=true`: no
//! progress bar), and reading back its exit code and both outputs.

// Each test binary includes this module and uses part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Two clients writing into the server through one switch with ECN marking on: the
/// networks chapter's DCQCN run (add `--set net.cc=...`).
pub const DCQCN_TWO_FLOWS: [&str; 14] = [
    "perf",
    "write-bw",
    "-s",
    "65536",
    "-q",
    "2",
    "--clients",
    "2",
    "--reversed",
    "-n",
    "300",
    "--quiet",
    "--set",
    "net.ecn.enabled=true",
];

/// Runs `rnic args` in `cwd`: (exit code, -1 when a signal ended it; stdout; stderr).
pub fn rnic_in(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .current_dir(cwd)
        .env("CI", "true")
        .output()
        .expect("run rnic");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `rnic args` in the crate's directory (where `cargo test` runs it).
pub fn rnic(args: &[&str]) -> (i32, String, String) {
    rnic_in(args, Path::new(env!("CARGO_MANIFEST_DIR")))
}

/// Runs `rnic args` from the repository's root, where the README's commands and the
/// committed scenario files' relative paths start.
pub fn rnic_at_root(args: &[&str]) -> (i32, String, String) {
    rnic_in(
        args,
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
    )
}

/// Writes a star topology whose server link (node 0) runs at 400 Gb/s, four times its four
/// clients' and faster than the server's PCIe link, into a directory of its own named by
/// `tag`; returns that directory (for the test to remove) and the `--set` argument that
/// selects the topology.
pub fn fat_server_link_topology(tag: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("rnic-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let topo = dir.join("fat-server-link.toml");
    let mut text =
        String::from("[[switch]]\nname = \"s\"\n[[link]]\nends = [\"node0\", \"s\"]\ngbps = 400\n");
    for n in 1..=4 {
        text.push_str(&format!("[[link]]\nends = [\"node{n}\", \"s\"]\n"));
    }
    std::fs::write(&topo, text).expect("write the topology");
    let arg = format!("net.topology={}", topo.display());
    (dir, arg)
}

/// The repository's root, resolved (the docs tests compare paths under it).
pub fn repo_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// README.md and every Markdown file under `dir` (relative to the root), sorted; mdBook's
/// build output, `docs/book/book/`, is not documentation.
pub fn readme_and_markdown_under(root: &Path, dir: &str) -> Vec<std::path::PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join(dir)];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("read a docs folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path != root.join("docs/book/book") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Waits for `child` up to `limit`; kills it and fails naming `who` when it hangs.
pub fn finish_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    who: &str,
) -> std::process::Output {
    let start = std::time::Instant::now();
    while child.try_wait().expect("waitable").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("{who} did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// `f` of each of `items`, on two threads (the tests' runs are independent processes, and
/// the machines have two cores); the results in the order they came.
pub fn in_two_workers<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::with_capacity(items.len()));
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(item) =
                    items.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                {
                    let r = f(item);
                    results.lock().unwrap_or_else(|p| p.into_inner()).push(r);
                }
            });
        }
    });
    results.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// A finished process's status and both outputs, for a failure message.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh scratch directory for a capture test (`tag`: the test file, `name`: the case).
pub fn capture_scratch(tag: &str, name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rnic-{tag}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// Runs `rnic args --pcap DIR/NAME.pcap --json DIR/NAME.json`, which must succeed; returns
/// the capture's bytes and the JSON result.
pub fn run_captured(args: &[&str], dir: &Path, name: &str) -> (Vec<u8>, serde_json::Value) {
    let pcap = dir.join(format!("{name}.pcap"));
    let json = dir.join(format!("{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .arg("--pcap")
        .arg(&pcap)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run rnic");
    assert!(
        out.status.success(),
        "rnic failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&std::fs::read(&json).expect("json written")).expect("json");
    (std::fs::read(&pcap).expect("pcap written"), v)
}

/// The frames of a classic pcap file (rnic writes little-endian, nanosecond timestamps).
pub fn pcap_frames(pcap: &[u8]) -> Vec<&[u8]> {
    assert_eq!(
        &pcap[..4],
        &0xa1b2_3c4du32.to_le_bytes(),
        "rnic's pcap magic"
    );
    let mut out = Vec::new();
    let mut at = 24;
    while at < pcap.len() {
        let incl = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push(&pcap[at + 16..at + 16 + incl]);
        at += 16 + incl;
    }
    out
}

/// The source address and IPv4 TOS byte of each RoCEv2 frame of a test's QPs in `pcap`
/// (RDMA CM's QP 1 left out), sent and received, in capture order.
pub fn test_qp_tos(pcap: &[u8]) -> Vec<([u8; 4], u8)> {
    pcap_frames(pcap)
        .into_iter()
        .filter_map(|f| {
            let r = rnic_wire::FrameRepr::parse(f).ok()?;
            (r.roce.bth.dest_qp != 1).then_some((r.addr.src_ip, f[14 + 1]))
        })
        .collect()
}

/// At least one TOS byte in `tos`, and every one `want`; `who` names whose frames they are.
pub fn assert_all_tos(tos: &[u8], want: u8, who: &str) {
    assert!(!tos.is_empty(), "no frame {who} sent");
    let other: Vec<_> = tos.iter().filter(|&&b| b != want).collect();
    assert!(
        other.is_empty(),
        "{who} sent TOS {other:?}, want {want} in all"
    );
}

/// Counter `key` of a JSON result's `stats`.
pub fn json_stat(v: &serde_json::Value, key: &str) -> u64 {
    v["stats"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("stat {key} in {}", v["stats"]))
}

/// The rows tshark prints for `pcap` with `args` (`-r pcap` first), which must succeed.
pub fn tshark_rows(pcap: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(args)
        .output()
        .expect("tshark runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().map(str::to_string).collect()
}

/// Why live runs (raw IPv4 sockets on the loopback addresses `addrs`) cannot happen here,
/// if they cannot; the live tests skip with this reason.
pub fn live_skip_reason(addrs: &[std::net::Ipv4Addr]) -> Option<String> {
    for ip in addrs {
        if let Err(e) = std::net::UdpSocket::bind(std::net::SocketAddrV4::new(*ip, 0)) {
            return Some(format!("{ip} is not usable on this machine: {e}"));
        }
    }
    let raw = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::RAW,
        Some(socket2::Protocol::UDP),
    );
    if let Err(e) = raw {
        return Some(format!(
            "raw IPv4 sockets are not allowed here ({e}): run as root"
        ));
    }
    None
}

/// Waits (up to `limit`) until `server`, an `rnic live` side just spawned, listens on `ip`:
/// for perftest's TCP exchange on `port`, or (with `-R` or `-z`, which open no TCP) on
/// RoCEv2's UDP port, which it claims once its receive socket takes datagrams. Returns early
/// when the server exits. A client started before then sends its first REQ to a port
/// nothing holds yet: the datagram is lost, and RDMA CM repairs that only by sending the
/// REQ again after its response timeout (a second REQ in the capture, a second later).
/// Where the kernel lists no sockets (`/proc/net`), returns at once.
pub fn wait_until_listening(
    server: &mut std::process::Child,
    (ip, port): (std::net::Ipv4Addr, u16),
    limit: std::time::Duration,
) {
    let start = std::time::Instant::now();
    while start.elapsed() < limit && !matches!(server.try_wait(), Ok(Some(_))) {
        let tcp = socket_listed("tcp", (ip, port), Some(TCP_LISTEN));
        let udp = socket_listed("udp", (ip, rnic_wire::ROCE_PORT), None);
        match (tcp, udp) {
            (Some(false), Some(false)) => std::thread::sleep(std::time::Duration::from_millis(5)),
            _ => return,
        }
    }
}

/// The state `/proc/net/tcp` gives a listening socket.
const TCP_LISTEN: &str = "0A";

/// Whether `/proc/net/{proto}` lists a socket bound to `ip:port`, in `state` if given
/// (`None` when the kernel has no such list). Local addresses are the IPv4 address as a
/// native-endian 32-bit word and the port, in hex: `0102007F:12B7` is 127.0.2.1:4791 on a
/// little-endian machine.
fn socket_listed(
    proto: &str,
    (ip, port): (std::net::Ipv4Addr, u16),
    state: Option<&str>,
) -> Option<bool> {
    let table = std::fs::read_to_string(format!("/proc/net/{proto}")).ok()?;
    let wanted = format!("{:08X}:{port:04X}", u32::from_ne_bytes(ip.octets()));
    Some(table.lines().skip(1).any(|l| {
        let fields: Vec<&str> = l.split_whitespace().collect();
        fields.get(1) == Some(&wanted.as_str()) && state.is_none_or(|s| fields.get(3) == Some(&s))
    }))
}

/// The most WRITE goodput a requester can reach when each WRITE waits for the far end's ACK
/// over an emulated link of `one_way_ms`, Gbit/s: its window, `depth` WRITEs of
/// `message_bytes`, once per round trip. A loaded machine only lowers what is measured (each
/// round trip takes longer), never raises it above this.
pub fn window_bound_gbps((depth, message_bytes): (u32, u32), one_way_ms: u64) -> f64 {
    let window_bits = f64::from(depth) * f64::from(message_bytes) * 8.0;
    window_bits / (2.0 * one_way_ms as f64 / 1e3) / 1e9
}

/// An arm without pseudo-ACKs, `goodput_gbps` with a window of `(depth, message_bytes)`, is
/// held by that window over the emulated round trip: no faster than [`window_bound_gbps`]
/// (2 % for the clock). Faster would mean the link does not delay as asked, and a ratio
/// against this arm would compare nothing.
pub fn assert_held_by_its_window(goodput_gbps: f64, window: (u32, u32), one_way_ms: u64) {
    let bound = window_bound_gbps(window, one_way_ms);
    assert!(
        goodput_gbps <= bound * 1.02,
        "without pseudo-ACKs {goodput_gbps} Gbit/s, above the window over the round trip, \
         {bound}: the emulated link does not delay by {one_way_ms} ms"
    );
}
