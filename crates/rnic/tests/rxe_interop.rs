//! rnic against a RoCEv2 implementation nobody here wrote: Linux soft-RoCE (`rdma_rxe`) in a
//! Debian guest under QEMU, booted by `scripts/rxe-peer.sh` (see the book's "rxe peer" chapter).
//!
//! A few guests serve the whole test binary ([`GUESTS`], one per test thread): booting takes
//! seconds under TCG, so a test boots a guest the first time it finds every booted one busy,
//! and the rest reuse them, one test per guest at a time (a test owns its guest's rxe0 and
//! qdisc). A guest runs on one emulated CPU, which keeps one host core busy, so two guests
//! run the tests on two cores in about half the time of one. Each guest is started with this
//! process as its owner: the script's watchdog stops it and deletes its network namespace
//! when the binary exits, also after a panic or a kill.
//!
//! Where the guest cannot run (no root, no QEMU, no /dev/net/tun, or a boot that fails) the tests
//! print why and pass, unless `RNIC_REQUIRE_RXE=1`: then they fail.
//!
//! The `rnic live` interop tests (rnic as client and as server against perftest and
//! `ibv_rc_pingpong` in the guest, PMTU 1024 and 4096, and every RC tool again with loss and
//! reordering from netem, long enough that netem drops frames, which each such run checks)
//! run for every tool `rnic live` has a test for; a tool it had none
//! for would be ignored, naming what `rnic live` lacks. [`accel`] puts `rnic accel` between
//! an `rnic live` client and rxe.

#[path = "rxe_interop/accel.rs"]
mod accel;
mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// The guest's instance of `scripts/rxe-peer.sh`, private to this process.
struct Guest {
    instance: String,
    netns: String,
    host_ip: String,
    guest_ip: String,
    /// The netem arguments in force (`None`: no impairment), set again after a restart.
    netem_set: Mutex<Option<String>>,
}

/// How many guests at most: cargo runs as many tests at once as the machine has cores, and
/// CI's machines have two.
const GUESTS: usize = 2;
/// Each guest, booted on first use.
static GUEST: [OnceLock<Result<Guest, String>>; GUESTS] = [const { OnceLock::new() }; GUESTS];
/// Held by each test while it uses a guest.
static GUEST_IN_USE: [Mutex<()>; GUESTS] = [const { Mutex::new(()) }; GUESTS];
/// perftest handshake ports, a fresh one per run so no run meets an earlier one's socket.
static NEXT_PORT: AtomicU16 = AtomicU16::new(18600);

fn script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/rxe-peer.sh"
    ))
}

fn rxe_required() -> bool {
    std::env::var("RNIC_REQUIRE_RXE").is_ok_and(|v| v == "1")
}

/// A free guest, booted on first use, and the right to use it; `None` (after printing why)
/// when it cannot run here and `RNIC_REQUIRE_RXE` is not set.
fn guest() -> Option<(MutexGuard<'static, ()>, &'static Guest)> {
    let (k, in_use) = free_guest();
    match GUEST[k].get_or_init(|| boot_guest(k)) {
        Ok(guest) => {
            guest.reset();
            Some((in_use, guest))
        }
        Err(reason) if rxe_required() => panic!("rxe peer required (RNIC_REQUIRE_RXE=1): {reason}"),
        Err(reason) => {
            eprintln!(
                "skipped: rxe peer unavailable: {reason} (RNIC_REQUIRE_RXE=1 makes this fail)"
            );
            None
        }
    }
}

/// The first guest no other test is using (booted ones first), waiting until one is free.
fn free_guest() -> (usize, MutexGuard<'static, ()>) {
    let booted_first = |k: &usize| (GUEST[*k].get().is_none(), *k);
    let mut order: Vec<usize> = (0..GUESTS).collect();
    loop {
        order.sort_by_key(booted_first);
        for &k in &order {
            match GUEST_IN_USE[k].try_lock() {
                Ok(in_use) => return (k, in_use),
                Err(std::sync::TryLockError::Poisoned(p)) => return (k, p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn boot_guest(k: usize) -> Result<Guest, String> {
    unavailable_reason().map_or(Ok(()), Err)?;
    let instance = format!("rxe-interop-{}-{k}", std::process::id());
    let started = Instant::now();
    let out = peer_command(&instance, &["start"])
        .env("RXE_PEER_OWNER_PID", std::process::id().to_string())
        .output()
        .map_err(|e| format!("running {}: {e}", script().display()))?;
    if !out.status.success() {
        return Err(format!(
            "guest did not boot: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!(
        "rxe peer: guest ready after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let query = |what: &str| peer_text(&instance, what);
    Ok(Guest {
        netns: query("netns")?,
        host_ip: query("host-ip")?,
        guest_ip: query("guest-ip")?,
        instance,
        netem_set: Mutex::new(None),
    })
}

/// Why the guest cannot run on this machine, if it cannot.
fn unavailable_reason() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some("not Linux".into());
    }
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout == b"0\n");
    if !is_root {
        return Some("needs root for network namespaces and tap devices".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    let qemu = Command::new("qemu-system-x86_64").arg("--version").output();
    if !qemu.is_ok_and(|o| o.status.success()) {
        return Some(
            "qemu-system-x86_64 missing (scripts/install-test-deps.sh installs it)".into(),
        );
    }
    None
}

fn peer_command(instance: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("bash");
    cmd.arg(script()).args(args).env("RXE_PEER_ID", instance);
    cmd
}

fn peer_text(instance: &str, what: &str) -> Result<String, String> {
    let out = peer_command(instance, &[what])
        .output()
        .map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A finished command's exit status and its stdout and stderr, for assertions.
struct Ran {
    ok: bool,
    text: String,
}

impl From<Output> for Ran {
    fn from(out: Output) -> Self {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ran {
            ok: out.status.success(),
            text,
        }
    }
}

impl Guest {
    /// Runs a shell command line in the guest and waits for it.
    fn run(&self, line: &str) -> Ran {
        peer_command(&self.instance, &["run", line])
            .output()
            .expect("run rxe-peer.sh")
            .into()
    }

    /// Starts a shell command line in the guest; `finish` waits for it.
    fn spawn(&self, line: &str) -> Child {
        peer_command(&self.instance, &["run", line])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rxe-peer.sh")
    }

    fn netem(&self, args: &str) -> Ran {
        let mut cmd = peer_command(&self.instance, &["netem"]);
        cmd.args(args.split_whitespace());
        let ran: Ran = cmd.output().expect("run rxe-peer.sh").into();
        if ran.ok {
            let set = (args != "off").then(|| args.to_string());
            *self.netem_set.lock().unwrap_or_else(|p| p.into_inner()) = set;
        }
        ran
    }

    /// Whether the guest's agent answers within 20 s.
    fn answers(&self) -> bool {
        peer_command(&self.instance, &["alive"])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Frames the guest NIC's netem has dropped since it was set (`tc -s qdisc`'s `dropped`).
    fn netem_drops(&self) -> u64 {
        let shown = self.run("/sbin/tc -s qdisc show dev eth0");
        assert!(shown.ok, "tc -s qdisc: {}", shown.text);
        let after = shown
            .text
            .split("dropped ")
            .nth(1)
            .unwrap_or_else(|| panic!("no drop count in: {}", shown.text));
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().expect("the drop count")
    }

    /// Back to the state every test starts from: a guest that answers, and no qdisc
    /// impairment. A guest that does not answer within 20 s is booted again: under TCG its
    /// virtio NIC has been seen to stop transmitting for good (`NETDEV WATCHDOG: transmit
    /// queue 0 timed out` on its console), which failed the test it ran, and would fail
    /// every later one.
    fn reset(&self) {
        if !self.netem("off").ok {
            self.restart();
            let off = self.netem("off");
            assert!(
                off.ok,
                "rxe peer {} after a restart: {}",
                self.instance, off.text
            );
        }
    }

    /// Stops the guest and boots it again under the same instance (the same namespace and
    /// addresses), once the first boot's watchdog has seen its QEMU gone; the netem in force
    /// is set again.
    fn restart(&self) {
        let console = peer_command(&self.instance, &["console"]).output();
        let tail: Vec<String> = console.map_or_else(
            |_| Vec::new(),
            |o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .rev()
                    .take(5)
                    .map(str::to_string)
                    .collect()
            },
        );
        eprintln!(
            "rxe peer: {} stopped answering; restarting it. Its console ended:\n{}",
            self.instance,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
        let _ = peer_command(&self.instance, &["stop"]).status();
        thread::sleep(Duration::from_secs(3));
        let out = peer_command(&self.instance, &["start"])
            .env("RXE_PEER_OWNER_PID", std::process::id().to_string())
            .output()
            .expect("run rxe-peer.sh");
        assert!(
            out.status.success(),
            "rxe peer {} did not boot again: {}",
            self.instance,
            String::from_utf8_lossy(&out.stderr)
        );
        let set = self
            .netem_set
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(args) = set {
            let again = self.netem(&args);
            assert!(again.ok, "netem {args} after a restart: {}", again.text);
        }
    }

    /// Waits until a TCP port listens in the guest (a perftest server is ready for its client).
    fn wait_listening(&self, port: u16) {
        let check = format!("netstat -ltn | grep -q ':{port} '");
        wait_until(&format!("guest port {port} listening"), || {
            self.run(&check).ok
        });
    }

    /// Waits until an RDMA CM id listens on `port` in the guest (a perftest `-R` server is
    /// ready: it has no TCP socket to wait for).
    fn wait_cm_listening(&self, port: u16) {
        let check = format!("/usr/bin/rdma resource show cm_id | grep -qE 'LISTEN.*:{port}( |$)'");
        wait_until(&format!("guest RDMA CM port {port} listening"), || {
            self.run(&check).ok
        });
    }

    /// A host command run inside the guest's network namespace.
    fn host_command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.netns, program]);
        cmd
    }

    /// Waits until a TCP port listens on the host side of the namespace.
    fn wait_host_listening(&self, port: u16) {
        self.wait_host_socket("-ltnH", port, "TCP");
    }

    /// Waits until a UDP socket on the RoCEv2 port is bound on the host side of the namespace
    /// (an `rnic live -R` server is ready: RDMA CM's REQ comes to that port).
    fn wait_host_roce_bound(&self) {
        self.wait_host_socket("-lunH", rnic_wire::ROCE_PORT, "UDP");
    }

    /// Waits until `ss FLAGS` in the namespace lists a socket on `port`.
    fn wait_host_socket(&self, flags: &str, port: u16, what: &str) {
        wait_until(&format!("host {what} port {port}"), || {
            let out = self.host_command("ss").arg(flags).output().expect("run ss");
            String::from_utf8_lossy(&out.stdout).contains(&format!(":{port} "))
        });
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(200));
    }
}

fn finish(child: Child) -> Ran {
    child
        .wait_with_output()
        .expect("wait for rxe-peer.sh")
        .into()
}

fn next_port() -> u16 {
    NEXT_PORT.fetch_add(1, Ordering::Relaxed)
}

/// What perftest prints when it cannot calibrate its cycle counter.
///
/// perftest times a run in TSC cycles and converts them with a clock rate it measures at start
/// (a linear fit of cycles against `gettimeofday`); with a fit of r² below 0.9 it exits 1 with
/// "Can't produce a report", after the transfer. Under TCG emulation on a busy host the guest's
/// TSC is jittery enough for that now and then. It says nothing about the transfer, so
/// [`until_perftest_reports`] repeats such a run.
const PERFTEST_CLOCK_FIT_FAILED: &str = "Correlation coefficient r^2";

/// Runs one client/server pair up to three times while a guest perftest could not calibrate its
/// clock ([`PERFTEST_CLOCK_FIT_FAILED`]), or the guest stopped answering (it is booted again
/// first, see [`Guest::reset`]); any other outcome is returned at once, with whatever else the
/// attempt made (its arguments, its JSON path).
fn until_perftest_reports<T>(
    guest: &Guest,
    mut attempt: impl FnMut() -> ((Ran, Ran), T),
) -> ((Ran, Ran), T) {
    for _ in 1..3 {
        let ran = attempt();
        let (client, server) = &ran.0;
        let clock = |r: &Ran| !r.ok && r.text.contains(PERFTEST_CLOCK_FIT_FAILED);
        if clock(client) || clock(server) {
            eprintln!(
                "perftest in the guest could not calibrate its clock; running again:\n{}{}",
                client.text, server.text
            );
        } else if (client.ok && server.ok) || guest.answers() {
            return ran;
        } else {
            guest.restart();
        }
    }
    attempt()
}

/// perftest's result row: the first line under the `#bytes` header, as numbers.
fn perftest_row(text: &str) -> Vec<f64> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("#bytes"));
    let row = lines
        .nth(1)
        .unwrap_or_else(|| panic!("no perftest result row in:\n{text}"));
    row.split_whitespace()
        .map(|w| w.parse().unwrap_or(f64::NAN))
        .collect()
}

#[test]
fn guest_boots_with_rxe0_active_and_reaches_the_host() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    let link = guest.run("rdma link show rxe0/1");
    assert!(
        link.ok && link.text.contains("state ACTIVE"),
        "{}",
        link.text
    );
    let port = guest.run("ibv_devinfo -d rxe0");
    assert!(
        port.ok && port.text.contains("PORT_ACTIVE"),
        "{}",
        port.text
    );
    assert!(
        port.text.contains("active_mtu:\t\t4096"),
        "eth0's MTU allows 4096:\n{}",
        port.text
    );
    let ping = guest.run(&format!("ping -c 1 -W 5 {}", guest.host_ip));
    assert!(
        ping.ok,
        "guest cannot reach the host side of the namespace:\n{}",
        ping.text
    );
    let failed = guest.run("exit 7");
    assert!(!failed.ok, "the agent must pass a command's failure on");
}

/// rxe against itself inside the guest: both ends of `ib_write_bw` on rxe0, at each PMTU.
#[test]
fn rxe_to_rxe_write_bw_completes_in_the_guest() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    for mtu in [1024, 4096] {
        let ((client, server), ()) = until_perftest_reports(guest, || {
            let port = next_port();
            let args = format!("-d rxe0 -x 1 -m {mtu} -p {port} -n 100 -s 4096");
            let server = guest.spawn(&format!("timeout 120 ib_write_bw {args}"));
            guest.wait_listening(port);
            let client = guest.run(&format!(
                "timeout 120 ib_write_bw {args} {}",
                guest.guest_ip
            ));
            ((client, finish(server)), ())
        });
        assert!(client.ok, "client failed:\n{}", client.text);
        assert!(server.ok, "server failed:\n{}", server.text);
        assert!(
            client.text.contains(&format!("Mtu             : {mtu}[B]")),
            "{}",
            client.text
        );
        let row = perftest_row(&client.text);
        assert_eq!(
            row[..2],
            [4096.0, 100.0],
            "bytes and iterations:\n{}",
            client.text
        );
        assert!(
            row[3] > 0.0,
            "average bandwidth must be positive:\n{}",
            client.text
        );
    }
}

/// The impairment the loss tests rely on is really installed on the guest's NIC, and removed.
#[test]
fn netem_loss_and_reordering_apply_to_the_guest_nic() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    let set = guest.netem("loss 1% reorder 25% 50% delay 1ms");
    assert!(set.ok, "{}", set.text);
    let shown = guest.run("/sbin/tc qdisc show dev eth0");
    assert!(
        shown.text.contains("netem") && shown.text.contains("loss 1%"),
        "{}",
        shown.text
    );
    guest.reset();
    let shown = guest.run("/sbin/tc qdisc show dev eth0");
    assert!(!shown.text.contains("netem"), "{}", shown.text);
}

// ---------------------------------------------------------------------------------------------
// rnic live against rxe
// ---------------------------------------------------------------------------------------------

/// One interop run: which tool in the guest, which `rnic live` subcommand on the host, and how.
struct Interop {
    guest_tool: &'static str,
    live_test: &'static str,
    size_bytes: u32,
    iters: u32,
    mtu: u32,
    /// netem arguments for the guest NIC, if the run is impaired.
    netem: Option<&'static str>,
    /// The run fails unless netem dropped at least one frame (the loss was felt).
    must_drop: bool,
    /// perftest's `-c`, given to both sides: `RC`, `UC` or `UD`.
    connection: &'static str,
    /// perftest's `-R` on both sides: the QPs are connected by RDMA CM over the wire.
    rdma_cm: bool,
    /// The exchange over an RDMA CM control connection, the QPs connected by their keys
    /// (`-z` on both sides; `rdma_cm` implies it).
    com_rdma_cm: bool,
    /// `-a` on both sides instead of `-s`: every size from 2 B to 8 MiB.
    all_sizes: bool,
    /// `-D SECONDS --margin MARGIN` on both sides instead of `-n`.
    duration_s: Option<u32>,
    /// perftest's `--margin` with `-D`, seconds.
    margin_s: u32,
    /// perftest's `-q` on both sides: QPs, each running `iters` operations.
    qps: u32,
    /// `--run_infinitely -D SECONDS` on both sides instead of `-n`, rnic's client
    /// interrupted (SIGINT) after the second number, seconds.
    run_infinitely: Option<(u32, u64)>,
    /// More flags for both sides, each with its leading space (`" -A CMP_AND_SWAP"`).
    both_sides: &'static str,
    /// More flags for rnic's side only, each with its leading space.
    rnic_only: &'static str,
    /// More flags for the guest's tool only, each with its leading space.
    guest_only: &'static str,
}

impl Interop {
    const fn new(guest_tool: &'static str, live_test: &'static str, size_bytes: u32) -> Self {
        Interop {
            guest_tool,
            live_test,
            size_bytes,
            iters: 20,
            mtu: 1024,
            netem: None,
            must_drop: false,
            connection: "RC",
            rdma_cm: false,
            com_rdma_cm: false,
            all_sizes: false,
            duration_s: None,
            margin_s: 1,
            qps: 1,
            run_infinitely: None,
            both_sides: "",
            rnic_only: "",
            guest_only: "",
        }
    }

    /// A bandwidth test of 200 operations of 4 KiB (atomic-bw's 8 bytes) with `flags` (with
    /// a leading space) on both sides.
    const fn bandwidth_with(
        guest_tool: &'static str,
        live_test: &'static str,
        flags: &'static str,
    ) -> Self {
        let atomic = matches!(live_test.as_bytes(), b"atomic-bw");
        let size = if atomic { 8 } else { 4096 };
        Interop::new(guest_tool, live_test, size)
            .iters(200)
            .both_sides(flags)
    }

    /// `flags` (with a leading space) on both sides.
    const fn both_sides(self, flags: &'static str) -> Self {
        Interop {
            both_sides: flags,
            ..self
        }
    }

    /// `flags` (with a leading space) on rnic's side only.
    const fn rnic_only(self, flags: &'static str) -> Self {
        Interop {
            rnic_only: flags,
            ..self
        }
    }

    /// `--run_infinitely -D INTERVAL_S` on both sides; rnic's client is interrupted after
    /// `interrupt_after_s`.
    const fn run_infinitely(self, interval_s: u32, interrupt_after_s: u64) -> Self {
        Interop {
            run_infinitely: Some((interval_s, interrupt_after_s)),
            ..self
        }
    }

    /// `-q QPS` on both sides.
    const fn qps(self, qps: u32) -> Self {
        Interop { qps, ..self }
    }

    /// `-D S --margin M`, or `-n ITERS`, and `-q QPS` with more than one QP.
    fn run_flags(&self) -> String {
        let length = self.length_flag();
        match self.qps {
            1 => length,
            n => format!("{length} -q {n}"),
        }
    }

    /// A run of `seconds` (`-D`, one second of margin at each end) instead of `-n`.
    const fn for_seconds(self, seconds: u32) -> Self {
        Interop {
            duration_s: Some(seconds),
            ..self
        }
    }

    /// A run of `seconds` with no margin (`--margin 0`): all of it measured, for a short run.
    const fn for_seconds_unmargined(self, seconds: u32) -> Self {
        Interop {
            margin_s: 0,
            ..self.for_seconds(seconds)
        }
    }

    /// `--run_infinitely -D INTERVAL`, `-D S --margin M`, or `-n ITERS`.
    fn length_flag(&self) -> String {
        match (self.run_infinitely, self.duration_s) {
            (Some((interval_s, _)), _) => format!("--run_infinitely -D {interval_s}"),
            (None, Some(s)) => format!("-D {s} --margin {}", self.margin_s),
            (None, None) => format!("-n {}", self.iters),
        }
    }

    /// Every size (`-a` on both sides, in place of `-s`).
    const fn all_sizes(self) -> Self {
        Interop {
            all_sizes: true,
            ..self
        }
    }

    /// `-a`, or `-s SIZE`.
    fn size_flag(&self) -> String {
        if self.all_sizes {
            "-a".into()
        } else {
            format!("-s {}", self.size_bytes)
        }
    }

    /// Connected by RDMA CM (`-R` on both sides).
    const fn rdma_cm(self) -> Self {
        Interop {
            rdma_cm: true,
            ..self
        }
    }

    /// The exchange over RDMA CM, the QPs connected by their keys (`-z` on both sides).
    const fn com_rdma_cm(self) -> Self {
        Interop {
            com_rdma_cm: true,
            ..self
        }
    }

    /// Whether the servers listen by RDMA CM rather than on a TCP port (`-R` or `-z`).
    fn exchange_by_cm(&self) -> bool {
        self.rdma_cm || self.com_rdma_cm
    }

    /// `-R` when connected by RDMA CM, `-z` when only the exchange is, else nothing.
    fn cm_flag(&self) -> &'static str {
        match (self.rdma_cm, self.com_rdma_cm) {
            (true, _) => " -R",
            (false, true) => " -z",
            (false, false) => "",
        }
    }

    /// Over UC (`-c UC` on both sides).
    const fn uc(self) -> Self {
        Interop {
            connection: "UC",
            ..self
        }
    }

    /// Over UD (`-c UD` on both sides).
    const fn ud(self) -> Self {
        Interop {
            connection: "UD",
            ..self
        }
    }

    const fn iters(self, iters: u32) -> Self {
        Interop { iters, ..self }
    }

    const fn mtu(self, mtu: u32) -> Self {
        Interop { mtu, ..self }
    }

    const fn impaired(self, netem: &'static str) -> Self {
        Interop {
            netem: Some(netem),
            ..self
        }
    }

    /// 1 % loss and reordering over `iters` iterations, enough for the guest to send about
    /// 1000 frames or more (netem then drops about 10; none at all has a chance of
    /// 0.99^1000, below 10^-4), and the run fails if netem dropped none.
    const fn lossy(self, iters: u32) -> Self {
        Interop {
            must_drop: true,
            ..self.iters(iters).impaired(LOSS_AND_REORDER)
        }
    }

    /// After an impaired run that must have lost frames: netem dropped some.
    fn check_drops(&self, guest: &Guest) {
        if self.must_drop {
            let dropped = guest.netem_drops();
            assert!(
                dropped > 0,
                "netem dropped no frame: the loss was not tested"
            );
            eprintln!("netem dropped {dropped} of the guest's frames");
        }
    }

    fn guest_args(&self, port: u16) -> String {
        let (size, length, mtu) = (self.size_flag(), self.run_flags(), self.mtu);
        if self.guest_tool == "ibv_rc_pingpong" {
            format!("-d rxe0 -g 1 -m {mtu} -p {port} {size} {length}")
        } else {
            let c = self.connection;
            let cm = self.cm_flag();
            let (more, own) = (self.both_sides, self.guest_only);
            format!("-d rxe0 -x 1 -m {mtu} -p {port} {size} {length} -c {c}{cm}{more}{own}")
        }
    }

    fn live_args(&self, port: u16, bind: &str) -> Vec<String> {
        let words = format!(
            "live {} -p {port} --bind {bind} {} {} -m {} -c {}{}{}{}",
            self.live_test,
            self.size_flag(),
            self.run_flags(),
            self.mtu,
            self.connection,
            self.cm_flag(),
            self.both_sides,
            self.rnic_only
        );
        words.split_whitespace().map(str::to_string).collect()
    }

    fn apply_netem(&self, guest: &Guest) {
        if let Some(args) = self.netem {
            let set = guest.netem(args);
            assert!(set.ok, "netem {args}: {}", set.text);
        }
    }

    /// rnic live as the client, the guest's tool as the server.
    fn rnic_client(&self) {
        self.rnic_client_report();
    }

    /// [`Interop::rnic_client`], returning the client's JSON (`None`: no guest here).
    fn rnic_client_report(&self) -> Option<serde_json::Value> {
        let (_in_use, guest) = guest()?;
        self.apply_netem(guest);
        let ((client, server), (args, json)) = until_perftest_reports(guest, || {
            let port = next_port();
            let server = self.spawn_guest_server(guest, port);
            if self.exchange_by_cm() {
                guest.wait_cm_listening(port);
            } else {
                guest.wait_listening(port);
            }
            let json = json_path(port);
            let (client, args) = self.run_rnic_client(guest, port, &[("--json", &json)]);
            ((client, finish(server)), (args, json))
        });
        self.check_drops(guest);
        guest.reset();
        assert!(
            client.ok,
            "rnic {}:\n{}\n{} (server) in the guest:\n{}",
            args.join(" "),
            client.text,
            self.guest_tool,
            server.text
        );
        assert!(
            server.ok,
            "{} (server) in the guest:\n{}",
            self.guest_tool, server.text
        );
        let report = assert_live_report(&json);
        self.check_server_prints_our_figures(&server.text, &report);
        Some(report)
    }

    /// perftest's WRITE, READ and atomic bandwidth servers print the figures the client
    /// sends them at the end: the BW peak there is rnic's, as its JSON has it (in duration
    /// mode and an endless run, which measure no peak, the average).
    fn check_server_prints_our_figures(&self, server_text: &str, report: &serde_json::Value) {
        let prints_client_report = matches!(
            self.guest_tool,
            "ib_write_bw" | "ib_read_bw" | "ib_atomic_bw"
        );
        // perftest's newer WRITE servers say only that the client closed an endless run.
        let closed =
            self.run_infinitely.is_some() && server_text.contains("Client closed connection");
        if !prints_client_report || closed {
            return;
        }
        // Duration mode and endless runs measure no peak: the average.
        let (column, key) = match (self.duration_s, self.run_infinitely) {
            (None, None) => (2, "bw_peak_mb_s"),
            _ => (3, "bw_avg_mb_s"),
        };
        let ours = report[key].as_f64().expect(key);
        let printed = perftest_row(server_text)[column];
        assert!(
            ours > 0.0 && (printed - ours).abs() <= 0.01,
            "the guest's server printed {printed} MB/s where rnic's {key} is {ours}:\n{server_text}"
        );
    }

    /// The guest's tool as the server on `port` (`finish` waits for it).
    fn spawn_guest_server(&self, guest: &Guest, port: u16) -> Child {
        let tool = self.guest_tool;
        guest.spawn(&format!("timeout 120 {tool} {}", self.guest_args(port)))
    }

    /// Runs `rnic live` as the client toward the guest's server on `port`, writing each
    /// `(flag, file)` of `outputs`; returns what it printed and its arguments.
    fn run_rnic_client(
        &self,
        guest: &Guest,
        port: u16,
        outputs: &[(&str, &PathBuf)],
    ) -> (Ran, Vec<String>) {
        let mut args = self.live_args(port, &guest.host_ip);
        args.splice(2..2, [guest.guest_ip.clone()]);
        for (flag, path) in outputs {
            args.extend([flag.to_string(), path.display().to_string()]);
        }
        let client = spawn_rnic(guest, &args);
        if let Some((_, after_s)) = self.run_infinitely {
            thread::sleep(Duration::from_secs(after_s));
            // SAFETY: a plain kill(2) of the child this test spawned.
            assert_eq!(unsafe { libc::kill(client.id() as i32, libc::SIGINT) }, 0);
        }
        (client.wait_with_output().unwrap().into(), args)
    }

    /// rnic live as the server, the guest's tool as the client.
    fn rnic_server(&self) {
        self.rnic_server_report();
    }

    /// [`Interop::rnic_server`], returning the server's JSON (`None`: no guest here).
    fn rnic_server_report(&self) -> Option<serde_json::Value> {
        self.rnic_server_run().map(|(report, _)| report)
    }

    /// [`Interop::rnic_server`], returning the server's JSON and what the guest's client
    /// printed (`None`: no guest here).
    fn rnic_server_run(&self) -> Option<(serde_json::Value, String)> {
        let (_in_use, guest) = guest()?;
        self.apply_netem(guest);
        let ((client, server), (args, json)) = until_perftest_reports(guest, || {
            let port = next_port();
            let json = json_path(port)
                .with_file_name(format!("server-{}-{port}.json", std::process::id()));
            let mut args = self.live_args(port, &guest.host_ip);
            args.insert(2, "--server".to_string());
            args.extend(["--json".to_string(), json.display().to_string()]);
            let mut server = spawn_rnic(guest, &args);
            if self.exchange_by_cm() {
                guest.wait_host_roce_bound();
            } else {
                guest.wait_host_listening(port);
            }
            let line = format!(
                "timeout 120 {} {} {}",
                self.guest_tool,
                self.guest_args(port),
                guest.host_ip
            );
            let client = guest.run(&line);
            if !client.ok {
                // A server, rnic's as perftest's, waits for its client however long it
                // takes: one that failed before it connected would leave the test waiting
                // for ever. Its output still says how far it got.
                let _ = server.kill();
            }
            let server: Ran = server.wait_with_output().unwrap().into();
            ((client, server), (args, json))
        });
        self.check_drops(guest);
        guest.reset();
        assert!(
            client.ok,
            "{} (client) in the guest:\n{}",
            self.guest_tool, client.text
        );
        if !server.ok && self.last_ack_may_be_lost() {
            return Some((self.assert_last_ack_lost(&json, &client.text), client.text));
        }
        assert!(server.ok, "rnic {}:\n{}", args.join(" "), server.text);
        Some((assert_live_report(&json), client.text))
    }

    /// `ibv_rc_pingpong` as the client under loss: it destroys its QP when its loop ends,
    /// with no closing handshake, so its ACK of rnic's last SEND, if netem drops it, is
    /// never resent (between two `ibv_rc_pingpong`s the server fails the same way).
    fn last_ack_may_be_lost(&self) -> bool {
        self.guest_tool == "ibv_rc_pingpong" && self.must_drop
    }

    /// rnic's server failed because its last SEND went unacknowledged, and said so; the
    /// guest's client received every message (the example counts them).
    fn assert_last_ack_lost(&self, json: &std::path::Path, client_text: &str) -> serde_json::Value {
        let text =
            std::fs::read_to_string(json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
        let report: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
        assert_eq!(report["status"], "incomplete", "{text}");
        let reason = report["reason"].as_str().unwrap_or_default();
        let last = format!("SEND {} (the last) was not acknowledged", self.iters - 1);
        assert!(reason.starts_with(&last), "{text}");
        let iters_line = format!("{} iters in", self.iters);
        assert!(client_text.contains(&iters_line), "{client_text}");
        eprintln!("rnic's last SEND lost its ACK to a client that had left: {reason}");
        report
    }
}

/// An rnic server's report of 1000 unreliable messages sent into it under loss: what arrived
/// and what was lost add up to what the peer sent, the loss lies in `lost_range`, and every
/// message that arrived completed.
fn assert_counts_losses(report: &serde_json::Value, lost_range: std::ops::RangeInclusive<u64>) {
    let u = &report["unreliable"];
    let count = |k: &str| u[k].as_u64().unwrap_or_else(|| panic!("{k} in {report}"));
    assert_eq!(count("messages_sent"), 1000, "{report}");
    let (received, lost) = (count("messages_received"), count("messages_lost"));
    assert_eq!(received + lost, 1000, "{report}");
    assert!(
        lost_range.contains(&lost),
        "{lost} lost of 1000, outside {lost_range:?}: {report}"
    );
    assert_eq!(report["ops_completed"], received, "{report}");
}

fn json_path(port: u16) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rxe_interop");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("client-{}-{port}.json", std::process::id()))
}

/// A side's JSON: the run finished and no byte it could check was wrong; returns it.
fn assert_live_report(json: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
    let report: serde_json::Value = serde_json::from_str(&text).expect("the JSON parses");
    let status = report["status"].as_str().unwrap_or_default();
    assert!(
        matches!(status, "ok" | "unverified"),
        "status {status:?} in {text}"
    );
    report
}

const LOSS_AND_REORDER: &str = "loss 1% reorder 25% 50% delay 1ms";

/// Declares, for one guest tool, the four runs rnic client/server x PMTU 1024/4096; with a
/// reason after the tool, they are ignored for it (what `rnic live` does not do yet).
macro_rules! interop_tests {
    ($($name:ident: $tool:literal, $live:literal, $size:literal $(, ignore = $why:literal)?;)*) => {$(
        mod $name {
            use super::*;
            const RUN: Interop = Interop::new($tool, $live, $size);
            #[test]
            $(#[ignore = $why])?
            fn rnic_client_pmtu_1024() { RUN.mtu(1024).rnic_client() }
            #[test]
            $(#[ignore = $why])?
            fn rnic_client_pmtu_4096() { RUN.mtu(4096).rnic_client() }
            #[test]
            $(#[ignore = $why])?
            fn rnic_server_pmtu_1024() { RUN.mtu(1024).rnic_server() }
            #[test]
            $(#[ignore = $why])?
            fn rnic_server_pmtu_4096() { RUN.mtu(4096).rnic_server() }
        }
    )*};
}

interop_tests! {
    ib_write_bw: "ib_write_bw", "write-bw", 4096;
    ib_write_lat: "ib_write_lat", "write-lat", 2;
    ib_read_bw: "ib_read_bw", "read-bw", 4096;
    ib_send_bw: "ib_send_bw", "send-bw", 4096;
    ib_read_lat: "ib_read_lat", "read-lat", 2;
    ib_send_lat: "ib_send_lat", "send-lat", 2;
    ib_atomic_bw: "ib_atomic_bw", "atomic-bw", 8;
    ib_atomic_lat: "ib_atomic_lat", "atomic-lat", 8;
    ibv_rc_pingpong: "ibv_rc_pingpong", "rc-pingpong", 4096;
}

/// UC, for the tests rnic live runs over it (PMTU 1024; no impairment: UC resends nothing).
mod uc {
    use super::*;

    #[test]
    fn ib_send_bw_rnic_client() {
        Interop::new("ib_send_bw", "send-bw", 4096)
            .uc()
            .rnic_client()
    }

    #[test]
    fn ib_send_bw_rnic_server() {
        Interop::new("ib_send_bw", "send-bw", 4096)
            .uc()
            .rnic_server()
    }

    /// 1 % loss on the guest's side: rxe's UC `ib_send_bw` sends 1000 messages of 4096 bytes
    /// (4 packets each at PMTU 1024) and finishes; a UC receiver drops a message any of
    /// whose packets is lost, so about 1 − 0.99⁴ = 3.9 % of them (39 expected). rnic's server
    /// counts what arrived and the lost ones among the 1000 (perftest's payload is random, so
    /// the bytes are not checked), and exits 0. Fewer than 10 or more than 80 lost has a
    /// probability below 1e-4 (binomial), so either is a fault.
    #[test]
    fn ib_send_bw_rnic_server_counts_what_arrives_under_loss() {
        let Some(report) = Interop::new("ib_send_bw", "send-bw", 4096)
            .uc()
            .iters(1000)
            .impaired("loss 1%")
            .rnic_server_report()
        else {
            return;
        };
        assert_counts_losses(&report, 10..=80);
    }

    #[test]
    fn ib_write_bw_rnic_client() {
        Interop::new("ib_write_bw", "write-bw", 4096)
            .uc()
            .rnic_client()
    }

    #[test]
    fn ib_write_bw_rnic_server() {
        Interop::new("ib_write_bw", "write-bw", 4096)
            .uc()
            .rnic_server()
    }

    #[test]
    fn ib_write_lat_rnic_client() {
        Interop::new("ib_write_lat", "write-lat", 2)
            .uc()
            .rnic_client()
    }

    #[test]
    fn ib_write_lat_rnic_server() {
        Interop::new("ib_write_lat", "write-lat", 2)
            .uc()
            .rnic_server()
    }

    #[test]
    fn ib_send_lat_rnic_client() {
        Interop::new("ib_send_lat", "send-lat", 2)
            .uc()
            .rnic_client()
    }

    #[test]
    fn ib_send_lat_rnic_server() {
        Interop::new("ib_send_lat", "send-lat", 2)
            .uc()
            .rnic_server()
    }
}

/// UD, for perftest's UD tests (SEND only): each message one datagram of the path MTU, the
/// receive buffers 40 bytes longer for the GRH. No impairment but in the last test: UD
/// resends nothing, and perftest's server waits for every datagram (a lost one makes it
/// give up after a minute or two), while rnic's counts what arrived.
mod ud {
    use super::*;

    fn run(tool: &'static str, live: &'static str, mtu: u32) -> Interop {
        Interop::new(tool, live, mtu).ud().mtu(mtu)
    }

    #[test]
    fn ib_send_bw_rnic_client_pmtu_1024() {
        run("ib_send_bw", "send-bw", 1024).rnic_client()
    }

    #[test]
    fn ib_send_bw_rnic_client_pmtu_4096() {
        run("ib_send_bw", "send-bw", 4096).rnic_client()
    }

    #[test]
    fn ib_send_bw_rnic_server_pmtu_1024() {
        run("ib_send_bw", "send-bw", 1024).rnic_server()
    }

    #[test]
    fn ib_send_bw_rnic_server_pmtu_4096() {
        run("ib_send_bw", "send-bw", 4096).rnic_server()
    }

    #[test]
    fn ib_send_lat_rnic_client_pmtu_1024() {
        run("ib_send_lat", "send-lat", 1024).rnic_client()
    }

    #[test]
    fn ib_send_lat_rnic_client_pmtu_4096() {
        run("ib_send_lat", "send-lat", 4096).rnic_client()
    }

    #[test]
    fn ib_send_lat_rnic_server_pmtu_1024() {
        run("ib_send_lat", "send-lat", 1024).rnic_server()
    }

    #[test]
    fn ib_send_lat_rnic_server_pmtu_4096() {
        run("ib_send_lat", "send-lat", 4096).rnic_server()
    }

    /// 1 % loss on the guest's side of the link: rxe's ib_send_bw sends 1000 datagrams and
    /// finishes (a UD sender never learns what arrived); rnic's server counts what arrived,
    /// the lost ones among the 1000, and exits 0. 1 % of 1000 is 10 on average; fewer than
    /// 1 or more than 40 has a probability below 1e-4 (binomial), so either is a fault.
    #[test]
    fn ib_send_bw_rnic_server_counts_what_arrives_under_loss() {
        let Some(report) = run("ib_send_bw", "send-bw", 1024)
            .iters(1000)
            .impaired("loss 1%")
            .rnic_server_report()
        else {
            return;
        };
        assert_counts_losses(&report, 1..=40);
    }
}

/// For each guest tool, rnic as client (`TOOL::rnic_client`) and as server, the run made by
/// the `run(tool, live, size)` of the module that uses it.
macro_rules! client_and_server {
    ($($tool:ident: $live:literal, $size:literal;)*) => {$(
        mod $tool {
            use super::*;
            #[test]
            fn rnic_client() { run(stringify!($tool), $live, $size).rnic_client() }
            #[test]
            fn rnic_server() { run(stringify!($tool), $live, $size).rnic_server() }
        }
    )*};
}

/// perftest's `-R` against rxe: RDMA CM connects perftest's control QP and the test's QP
/// over the wire (REQ, REP, RTU to QP1 and DREQ/DREP at the end), the exchange travels as
/// SENDs on the control QP, and the guest's kernel CM is the other end.
mod rdma_cm {
    use super::*;

    fn run(tool: &'static str, live: &'static str, size: u32) -> Interop {
        Interop::new(tool, live, size).rdma_cm()
    }

    /// `-q 2 -R`: RDMA CM connects the control QP and then each test QP (a REQ, REP and
    /// RTU each), and the keys are paired with the QPs as CM paired them. ib_send_bw, whose
    /// server checks each QP's receives, both ways.
    mod two_qps {
        use super::*;

        const RUN: Interop = Interop::new("ib_send_bw", "send-bw", 4096).rdma_cm().qps(2);

        /// The side's JSON counts both QPs' SENDs.
        fn assert_two_qps(report: Option<serde_json::Value>) {
            if let Some(report) = report {
                assert_eq!(report["live"]["qps"], 2, "{report}");
                assert_eq!(report["iterations"], 2 * RUN.iters, "{report}");
            }
        }

        #[test]
        fn ib_send_bw_rnic_client() {
            assert_two_qps(RUN.rnic_client_report())
        }

        #[test]
        fn ib_send_bw_rnic_server() {
            assert_two_qps(RUN.rnic_server_report())
        }

        /// Over UD: each QP resolved by its own SIDR_REQ and SIDR_REP.
        const UD: Interop = Interop::new("ib_send_bw", "send-bw", 1024)
            .ud()
            .rdma_cm()
            .qps(2);

        #[test]
        fn ib_send_bw_ud_rnic_client() {
            assert_two_qps(UD.rnic_client_report())
        }

        #[test]
        fn ib_send_bw_ud_rnic_server() {
            assert_two_qps(UD.rnic_server_report())
        }
    }

    client_and_server! {
        ib_write_bw: "write-bw", 4096;
        ib_read_bw: "read-bw", 4096;
        ib_send_bw: "send-bw", 4096;
        ib_write_lat: "write-lat", 2;
        ib_read_lat: "read-lat", 2;
        ib_send_lat: "send-lat", 2;
        ib_atomic_bw: "atomic-bw", 8;
    }

    /// rnic's REQ asks for path MTU 4096 (`-m 4096`); rxe's kernel takes it. (As the server,
    /// rnic runs at the MTU of the guest's REQ: its route's, 4096 on the 9000-byte tap.)
    #[test]
    fn ib_write_bw_rnic_client_pmtu_4096() {
        let Some(report) = run("ib_write_bw", "write-bw", 4096)
            .mtu(4096)
            .rnic_client_report()
        else {
            return;
        };
        assert_eq!(report["live"]["mtu_bytes"], 4096, "{report}");
    }

    /// perftest's client connects again, 10 times 100 ms apart, while the server's kernel
    /// rejects its REQ (no listener yet: REJ reason 8, invalid service ID); rnic's does the
    /// same. The client starts with the guest's server, before it listens (about 0.5 s
    /// under TCG): its capture shows the REJs it got, and the run completes.
    #[test]
    fn rnic_client_connects_again_while_the_server_does_not_listen_yet() {
        let Some((_in_use, guest)) = guest() else {
            return;
        };
        let run = run("ib_write_bw", "write-bw", 4096);
        let port = next_port();
        let json = json_path(port);
        let pcap = json.with_extension("pcap");
        let server = run.spawn_guest_server(guest, port);
        let (client, args) =
            run.run_rnic_client(guest, port, &[("--json", &json), ("--pcap", &pcap)]);
        let server = finish(server);
        assert!(client.ok, "rnic {}:\n{}", args.join(" "), client.text);
        assert!(server.ok, "ib_write_bw -R (server):\n{}", server.text);
        assert_live_report(&json);
        let capture = std::fs::read(&pcap).expect("the client's capture");
        let rejs = common::pcap_frames(&capture)
            .into_iter()
            .filter_map(|f| rnic_wire::FrameRepr::parse(f).ok())
            .filter(|f| rnic_wire::cm::rej_reason(f.roce.payload) == Some(8))
            .count();
        assert!(
            rejs > 0,
            "no REJ (reason 8): the server listened before the first REQ"
        );
    }

    #[test]
    fn ib_write_bw_rnic_client_with_loss_and_reordering() {
        run("ib_write_bw", "write-bw", 4096)
            .lossy(1000)
            .rnic_client()
    }

    #[test]
    fn ib_write_bw_rnic_server_with_loss_and_reordering() {
        run("ib_write_bw", "write-bw", 4096)
            .lossy(1000)
            .rnic_server()
    }

    /// `-c UD -R`: RDMA CM connects perftest's RC control QP and resolves the UD test QP by
    /// the guest kernel's SIDR exchange (SIDR_REQ, SIDR_REP with the QPN and RDMA CM's UDP
    /// Q_Key), 1 KiB messages at path MTU 1024.
    mod ud {
        use super::*;

        fn run(tool: &'static str, live: &'static str) -> Interop {
            Interop::new(tool, live, 1024).ud().rdma_cm()
        }

        #[test]
        fn ib_send_bw_rnic_client() {
            run("ib_send_bw", "send-bw").rnic_client()
        }

        #[test]
        fn ib_send_bw_rnic_server() {
            run("ib_send_bw", "send-bw").rnic_server()
        }

        /// After the SIDR exchange perftest's latency client sends its UD QPN in a SEND with
        /// immediate, which the server waits for.
        #[test]
        fn ib_send_lat_rnic_client() {
            run("ib_send_lat", "send-lat").rnic_client()
        }

        #[test]
        fn ib_send_lat_rnic_server() {
            run("ib_send_lat", "send-lat").rnic_server()
        }
    }
}

/// perftest sends no QP count: rnic with `-q 2` against `ib_write_bw -q 1` sees the rounds
/// of keys slip (the guest's second round read as its second QP's keys, the same QPN) and
/// fails within seconds naming `-q`, where it stalled for 10 s and failed on the traffic.
#[test]
fn a_different_qp_count_than_perftests_fails_at_once_naming_q() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    let run = Interop::new("ib_write_bw", "write-bw", 4096).rnic_only(" -q 2");
    let port = next_port();
    let server = run.spawn_guest_server(guest, port);
    guest.wait_listening(port);
    let start = std::time::Instant::now();
    let (client, args) = run.run_rnic_client(guest, port, &[]);
    let took = start.elapsed();
    let _ = finish(server);
    assert!(!client.ok, "rnic {}:\n{}", args.join(" "), client.text);
    assert!(
        client.text.contains("same -q (2)"),
        "rnic {}:\n{}",
        args.join(" "),
        client.text
    );
    assert!(took < Duration::from_secs(8), "it took {took:?}");
}

/// perftest sends no word of `-b`: rnic's client with `-b` against a one-way `ib_write_bw`
/// server reads the server's report of no run (never filled in), and without `-b` against a `-b`
/// server sees the server's WRITEs arrive on its QP; either fails at once naming `-b`,
/// where it printed a row as if the two sides agreed. `send-bw -b` against a one-way
/// `ib_send_bw` server gets none of the server's SENDs: it fails 2 s after its own are
/// done, naming `-b`, where it waited 10 s and failed naming the count.
#[test]
fn a_bidirectional_flag_perftest_does_not_share_fails_naming_b() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    for (tool, live, (rnic, guest_side, words)) in [
        (
            "ib_write_bw",
            "write-bw",
            (" -b", "", "so it runs without -b"),
        ),
        (
            "ib_write_bw",
            "write-bw",
            ("", " -b", "so it runs -b (or --reversed differs)"),
        ),
        (
            "ib_send_bw",
            "send-bw",
            (" -b", "", "so it runs without -b"),
        ),
    ] {
        let run = Interop {
            guest_only: guest_side,
            ..Interop::new(tool, live, 4096).rnic_only(rnic)
        };
        let port = next_port();
        let server = run.spawn_guest_server(guest, port);
        guest.wait_listening(port);
        let (client, args) = run.run_rnic_client(guest, port, &[]);
        let _ = finish(server);
        let args = args.join(" ");
        assert!(!client.ok, "rnic {args}:\n{}", client.text);
        assert!(client.text.contains(words), "rnic {args}:\n{}", client.text);
    }
}

/// `rnic` with `args` on the host's side of the guest's network, its output captured.
fn spawn_rnic(guest: &Guest, args: &[String]) -> Child {
    guest
        .host_command(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// perftest sends no word of `--reversed` either: rnic's one-way server against an
/// `ib_write_bw --reversed` client (which leaves the test to the server and ends at once,
/// sending a report it never filled in) fails naming `--reversed`, where it panicked on
/// the report's count.
#[test]
fn a_reversed_flag_perftest_does_not_share_fails_naming_it() {
    let Some((_in_use, guest)) = guest() else {
        return;
    };
    let run = Interop {
        guest_only: " --reversed",
        ..Interop::new("ib_write_bw", "write-bw", 4096)
    };
    let port = next_port();
    let mut args = run.live_args(port, &guest.host_ip);
    args.insert(2, "--server".to_string());
    let start = std::time::Instant::now();
    let server = spawn_rnic(guest, &args);
    guest.wait_host_listening(port);
    let (tool, guest_args) = (run.guest_tool, run.guest_args(port));
    let client = guest.spawn(&format!("timeout 60 {tool} {guest_args} {}", guest.host_ip));
    let server: Ran = server.wait_with_output().unwrap().into();
    let took = start.elapsed();
    let _ = finish(client);
    assert!(!server.ok, "{}", server.text);
    assert!(
        server.text.contains("do the sides' --reversed differ?"),
        "{}",
        server.text
    );
    assert!(took < Duration::from_secs(30), "it took {took:?}");
}

/// perftest's `-z` against rxe: the exchange runs over an RDMA CM control connection (the
/// guest's kernel CM at the other end, no TCP) and both sides connect the test's QPs by
/// modify_qp with the keys it carried.
mod com_rdma_cm {
    use super::*;

    const TWO_QPS: Interop = Interop::new("ib_write_bw", "write-bw", 4096)
        .com_rdma_cm()
        .qps(2);

    #[test]
    fn ib_write_bw_two_qps_rnic_client() {
        TWO_QPS.rnic_client()
    }

    #[test]
    fn ib_write_bw_two_qps_rnic_server() {
        TWO_QPS.rnic_server()
    }

    /// Over UD the data carries perftest's own Q_Key, not RDMA CM's.
    #[test]
    fn ib_send_bw_ud_rnic_client() {
        Interop::new("ib_send_bw", "send-bw", 1024)
            .ud()
            .com_rdma_cm()
            .rnic_client()
    }

    /// ib_read_lat exchanges the first QP's keys once more before the per-QP exchange.
    #[test]
    fn ib_read_lat_rnic_server() {
        Interop::new("ib_read_lat", "read-lat", 2)
            .com_rdma_cm()
            .rnic_server()
    }
}

#[test]
fn write_bw_rnic_client_with_loss_and_reordering() {
    Interop::new("ib_write_bw", "write-bw", 4096)
        .lossy(1000)
        .rnic_client()
}

#[test]
fn write_bw_rnic_server_with_loss_and_reordering() {
    Interop::new("ib_write_bw", "write-bw", 4096)
        .lossy(250)
        .rnic_server()
}

#[test]
fn read_bw_rnic_client_with_loss_and_reordering() {
    Interop::new("ib_read_bw", "read-bw", 4096)
        .lossy(1000)
        .rnic_client()
}

#[test]
fn read_bw_rnic_server_with_loss_and_reordering() {
    Interop::new("ib_read_bw", "read-bw", 4096)
        .lossy(500)
        .rnic_server()
}

#[test]
fn atomic_bw_rnic_client_with_loss_and_reordering() {
    Interop::new("ib_atomic_bw", "atomic-bw", 8)
        .lossy(1000)
        .rnic_client()
}

#[test]
fn atomic_bw_rnic_server_with_loss_and_reordering() {
    Interop::new("ib_atomic_bw", "atomic-bw", 8)
        .lossy(500)
        .rnic_server()
}

#[test]
fn send_bw_rnic_client_with_loss_and_reordering() {
    Interop::new("ib_send_bw", "send-bw", 4096)
        .lossy(1000)
        .rnic_client()
}

#[test]
fn send_bw_rnic_server_with_loss_and_reordering() {
    Interop::new("ib_send_bw", "send-bw", 4096)
        .lossy(250)
        .rnic_server()
}

/// The latency tests and `ibv_rc_pingpong` under 1 % loss and reordering: each lost frame
/// is resent (by rnic or by rxe, whichever sent it) and the ping-pong runs to its end.
mod lat_with_loss_and_reordering {
    use super::*;

    /// Each tool with its size and iterations: the guest sends about two frames an
    /// iteration of `ib_write_lat` and `ib_send_lat` (its message and its ACK of ours), one
    /// of `ib_read_lat` and `ib_atomic_lat` (a request or a response: a lost FETCH&ADD
    /// response makes the requester send the atomic again, which the responder must answer
    /// from its saved result without adding twice), and about six of `ibv_rc_pingpong` at
    /// 4096 bytes (four packets at PMTU 1024 and ACKs).
    macro_rules! lossy_pair {
        ($($name:ident: $tool:literal, $live:literal, $size:literal, $iters:literal;)*) => {$(
            mod $name {
                use super::*;
                const RUN: Interop = Interop::new($tool, $live, $size).lossy($iters);
                #[test]
                fn rnic_client() { RUN.rnic_client() }
                #[test]
                fn rnic_server() { RUN.rnic_server() }
            }
        )*};
    }

    lossy_pair! {
        ib_write_lat: "ib_write_lat", "write-lat", 2, 500;
        ib_read_lat: "ib_read_lat", "read-lat", 2, 1000;
        ib_atomic_lat: "ib_atomic_lat", "atomic-lat", 8, 1000;
        ib_send_lat: "ib_send_lat", "send-lat", 2, 500;
        ibv_rc_pingpong: "ibv_rc_pingpong", "rc-pingpong", 4096, 200;
    }
}

/// `-a` on both sides: every size from 2 B to 8 MiB, 5 WRITEs each (perftest's least), on
/// one QP, into rnic's server, which takes the last size's figures. 80 MB at rxe's speed
/// under TCG take about 12 s, so only this direction runs here: rnic's client loops the
/// sizes itself, against rnic's server in `live_loopback.rs`, and perftest's WRITE server
/// is passive until the closing handshake, which every other client test covers.
mod all_sizes {
    use super::*;

    const RUN: Interop = Interop::new("ib_write_bw", "write-bw", 0)
        .all_sizes()
        .iters(5)
        .mtu(4096);

    #[test]
    fn ib_write_bw_rnic_server() {
        if let Some(report) = RUN.rnic_server_report() {
            assert_eq!(report["size_bytes"], 1u64 << 23, "{report}");
        }
    }

    /// The tests that gained `-a` after write-bw and write-lat, `-n 5` (perftest's
    /// least), kept to a few seconds each. The SEND tests run over UD, whose sizes stop at
    /// the path MTU as perftest's do (RC's 8 MiB would take the suite's time; the per-size
    /// receives and handshakes are the same): ib_send_bw both ways, its server posting each
    /// size's receives; ib_send_lat into rnic's server (rnic's two sides run one loop, the
    /// client sending first, against rnic in `live_loopback.rs`).
    fn run(tool: &'static str, live: &'static str, size: u32) -> Interop {
        Interop::new(tool, live, size).all_sizes().iters(5).ud()
    }

    client_and_server! {
        ib_send_bw: "send-bw", 1024;
    }

    #[test]
    fn ib_send_lat_rnic_server() {
        run("ib_send_lat", "send-lat", 2).rnic_server()
    }

    /// rnic's `read-bw` client stops at 256 KiB, its window at PMTU 1024, and says so; the
    /// guest's READ server is passive. (`read-lat`'s client stops by the same rule, against
    /// rnic in `live_loopback.rs`. The guest's READ clients against rnic's server would read
    /// 5 times every size up to 8 MiB, 80 MB, about 12 s under TCG: rnic's READ server,
    /// passive, holds 8 MiB under `-a` as its WRITE server does, whose `-a` runs above.)
    #[test]
    fn ib_read_bw_rnic_client() {
        let run = Interop::new("ib_read_bw", "read-bw", 0)
            .all_sizes()
            .iters(5);
        if let Some(report) = run.rnic_client_report() {
            assert_eq!(report["size_bytes"], 1u64 << 18, "{report}");
            let note = report["notes"][0].as_str().unwrap_or_default();
            assert!(
                note.contains("-a/--all: the sizes stop at 262144"),
                "{report}"
            );
        }
    }
}

/// `-a` over RC, perftest's `-n 5` each, every size from 2 B to 8 MiB (80 MB each way,
/// about 12 s under TCG): the guest's READ clients read rnic's memory (rnic's READ servers
/// are passive, holding 8 MiB for the largest size); RC SENDs of every size go both ways,
/// each server posting each size's receives. (`ib_write_lat -a` into rnic's server, 80 MB
/// each way, passed alone in about 20 s but once outran the guest's 120 s limit in a full
/// run beside the other guest; it is left to the hand run the live chapter describes.)
mod all_sizes_rc {
    use super::*;

    fn run(tool: &'static str, live: &'static str) -> Interop {
        Interop::new(tool, live, 0).all_sizes().iters(5).mtu(4096)
    }

    #[test]
    fn ib_read_bw_rnic_server() {
        run("ib_read_bw", "read-bw").rnic_server()
    }

    #[test]
    fn ib_read_lat_rnic_server() {
        run("ib_read_lat", "read-lat").rnic_server()
    }

    #[test]
    fn ib_send_bw_rnic_server() {
        if let Some(report) = run("ib_send_bw", "send-bw").rnic_server_report() {
            assert_eq!(report["size_bytes"], 1u64 << 23, "{report}");
            assert_eq!(
                report["per_size"].as_array().map(Vec::len),
                Some(23),
                "{report}"
            );
        }
    }

    #[test]
    fn ib_send_bw_rnic_client() {
        if let Some(report) = run("ib_send_bw", "send-bw").rnic_client_report() {
            assert_eq!(report["size_bytes"], 1u64 << 23, "{report}");
        }
    }
}

/// `--run_infinitely -D 1` on both sides, perftest's WRITE and READ servers in the guest:
/// rnic's client prints a row a second until interrupted after 4 s, then closes as any run
/// does, and perftest's server says the client closed the connection.
mod run_infinitely {
    use super::*;

    fn check(tool: &'static str, live: &'static str) {
        let run = Interop::new(tool, live, 4096).run_infinitely(1, 4);
        if let Some(report) = run.rnic_client_report() {
            let intervals = report["intervals"].as_array().map_or(0, Vec::len);
            assert!((2..=5).contains(&intervals), "{report}");
        }
    }

    #[test]
    fn ib_write_bw_rnic_client() {
        check("ib_write_bw", "write-bw")
    }

    #[test]
    fn ib_read_bw_rnic_client() {
        check("ib_read_bw", "read-bw")
    }
}

/// `-A CMP_AND_SWAP` on both sides, as perftest posts it (compare 0, swap 0: nothing
/// changes): ib_atomic_bw both ways (rnic's server checks that its cells gained nothing,
/// rnic's client that each cell's fetched values stay the same), ib_atomic_lat's server
/// against rnic's client.
mod compare_and_swap {
    use super::*;

    const CAS: &str = " -A CMP_AND_SWAP";

    fn run(tool: &'static str, live: &'static str) -> Interop {
        Interop::new(tool, live, 8).iters(200).both_sides(CAS)
    }

    #[test]
    fn ib_atomic_bw_rnic_client() {
        run("ib_atomic_bw", "atomic-bw").rnic_client()
    }

    #[test]
    fn ib_atomic_bw_rnic_server() {
        run("ib_atomic_bw", "atomic-bw").rnic_server()
    }

    #[test]
    fn ib_atomic_lat_rnic_client() {
        run("ib_atomic_lat", "atomic-lat").rnic_client()
    }
}

/// `--reversed` on both sides: the side that listens runs the test and the side that
/// connects answers, as perftest's fan-in mode. rnic connecting: the guest's tool sends;
/// rnic listening: rnic's does. (rnic's figures, when it answers, are the guest's, which
/// the guest's side prints too.)
mod reversed {
    use super::*;

    fn run(tool: &'static str, live: &'static str) -> Interop {
        Interop::bandwidth_with(tool, live, " --reversed")
    }

    #[test]
    fn ib_write_bw_rnic_client() {
        run("ib_write_bw", "write-bw").rnic_client()
    }

    #[test]
    fn ib_write_bw_rnic_server() {
        run("ib_write_bw", "write-bw").rnic_server()
    }

    #[test]
    fn ib_send_bw_rnic_client() {
        run("ib_send_bw", "send-bw").rnic_client()
    }

    #[test]
    fn ib_send_bw_rnic_server() {
        run("ib_send_bw", "send-bw").rnic_server()
    }

    #[test]
    fn ib_read_bw_rnic_server() {
        run("ib_read_bw", "read-bw").rnic_server()
    }

    #[test]
    fn ib_atomic_bw_rnic_client() {
        run("ib_atomic_bw", "atomic-bw").rnic_client()
    }
}

/// A module's `RUN` with rnic as client (`$client`) and as server (`$server`).
macro_rules! run_both_ways {
    ($client:ident, $server:ident) => {
        #[test]
        fn $client() {
            RUN.rnic_client()
        }

        #[test]
        fn $server() {
            RUN.rnic_server()
        }
    };
}

/// `-r 16` on both sides: the SEND server keeps at most 16 receives posted, so the client's
/// SENDs meet RNR NAKs and wait them out (rnic's and rxe's RNR retries both unlimited, as
/// perftest sets them); every message still arrives.
mod rx_depth {
    use super::*;

    const RUN: Interop = Interop::new("ib_send_bw", "send-bw", 4096)
        .iters(300)
        .both_sides(" -r 16");

    run_both_ways!(ib_send_bw_rnic_client, ib_send_bw_rnic_server);
}

/// `--use-srq -q 2` on both sides: the receiving side's two QPs take their receives from
/// one shared queue of `-r 16` (perftest's, and rnic's, eight for each QP); the SENDs cross
/// the wire as without it, and rnic's server checks each QP's messages wherever they land.
mod use_srq {
    use super::*;

    const RUN: Interop = Interop::new("ib_send_bw", "send-bw", 4096)
        .iters(300)
        .qps(2)
        .both_sides(" --use-srq -r 16");

    run_both_ways!(ib_send_bw_rnic_client, ib_send_bw_rnic_server);

    #[test]
    fn ib_send_lat_rnic_client() {
        Interop::new("ib_send_lat", "send-lat", 64)
            .both_sides(" --use-srq")
            .rnic_client()
    }
}

/// The packets' IPv4 TOS byte (their traffic class on RoCEv2): perftest's `--tclass` sets
/// each side's, and under `-R` the client's `-T` sets both sides', since the kernel's
/// passive side, like rnic's, takes the REQ's path.
mod traffic_class {
    use super::*;

    /// rnic's client against the guest's server, with a capture: the TOS bytes of the
    /// frames of the test's QPs (not RDMA CM's QP 1) that rnic sent, and those the guest sent.
    fn tos_bytes(run: Interop) -> Option<(Vec<u8>, Vec<u8>)> {
        let (_in_use, guest) = guest()?;
        let port = next_port();
        let json = json_path(port);
        let pcap = json.with_extension("pcap");
        let server = run.spawn_guest_server(guest, port);
        if run.exchange_by_cm() {
            guest.wait_cm_listening(port);
        } else {
            guest.wait_listening(port);
        }
        let (client, args) =
            run.run_rnic_client(guest, port, &[("--json", &json), ("--pcap", &pcap)]);
        let server = finish(server);
        assert!(client.ok, "rnic {}:\n{}", args.join(" "), client.text);
        assert!(server.ok, "{} (server):\n{}", run.guest_tool, server.text);
        assert_live_report(&json);
        let capture = std::fs::read(&pcap).expect("the client's capture");
        let guest_ip: std::net::Ipv4Addr = guest.guest_ip.parse().unwrap();
        let (theirs, ours): (Vec<_>, Vec<_>) = common::test_qp_tos(&capture)
            .into_iter()
            .partition(|&(src, _)| src == guest_ip.octets());
        let tos = |frames: Vec<([u8; 4], u8)>| frames.into_iter().map(|f| f.1).collect();
        Some((tos(ours), tos(theirs)))
    }

    #[test]
    fn tclass_on_both_sides() {
        let run = Interop::new("ib_write_bw", "write-bw", 4096)
            .iters(100)
            .both_sides(" --tclass 96");
        if let Some((ours, theirs)) = tos_bytes(run) {
            common::assert_all_tos(&ours, 96, "rnic");
            common::assert_all_tos(&theirs, 96, "the guest");
        }
    }

    #[test]
    fn tos_of_the_rdma_cm_client_reaches_the_kernels_server() {
        let run = Interop::new("ib_write_bw", "write-bw", 4096)
            .iters(100)
            .rdma_cm()
            .rnic_only(" -T 104");
        if let Some((ours, theirs)) = tos_bytes(run) {
            common::assert_all_tos(&ours, 104, "rnic");
            common::assert_all_tos(&theirs, 104, "the guest");
        }
    }
}

/// `--rate_limit 0.05` on rnic's client (perftest's software limiter, 6 MiB/s of 4 KiB
/// WRITEs in bursts of 8): its average stays at the limit, well under what the guest takes
/// unlimited; the guest's server prints those figures.
mod rate_limit {
    use super::*;

    #[test]
    fn ib_write_bw_rnic_client() {
        let run = Interop::new("ib_write_bw", "write-bw", 4096)
            .iters(300)
            .rnic_only(" --rate_limit 0.05 --burst_size 8");
        if let Some(report) = run.rnic_client_report() {
            let limit_mib_s = 0.05e9 / 8.0 / 1_048_576.0;
            let avg = report["bw_avg_mb_s"].as_f64().unwrap();
            assert!(
                (0.5 * limit_mib_s..=1.1 * limit_mib_s).contains(&avg),
                "{avg:.2} MiB/s against the limit's {limit_mib_s:.2}: {report}"
            );
        }
    }
}

/// `-o 2` on both sides: each QP takes at most two READs (atomics) at once from the other
/// and posts at most two, as perftest's `out_reads` sets `max_dest_rd_atomic` and the
/// peer's `max_rd_atomic` (the bound itself is checked in rnic's loopback tests).
mod outs {
    use super::*;

    fn run(tool: &'static str, live: &'static str) -> Interop {
        Interop::bandwidth_with(tool, live, " -o 2")
    }

    #[test]
    fn ib_read_bw_rnic_client() {
        run("ib_read_bw", "read-bw").rnic_client()
    }

    #[test]
    fn ib_read_bw_rnic_server() {
        run("ib_read_bw", "read-bw").rnic_server()
    }

    #[test]
    fn ib_atomic_bw_rnic_client() {
        run("ib_atomic_bw", "atomic-bw").rnic_client()
    }

    /// Under `-R` the kernel's CM carries the number: rnic's client takes the REP's, its
    /// server keeps its own, as librdmacm does.
    fn over_rdma_cm(tool: &'static str, live: &'static str) -> Interop {
        Interop::bandwidth_with(tool, live, " -o 2").rdma_cm()
    }

    #[test]
    fn ib_read_bw_over_rdma_cm_rnic_client() {
        over_rdma_cm("ib_read_bw", "read-bw").rnic_client()
    }

    #[test]
    fn ib_read_bw_over_rdma_cm_rnic_server() {
        over_rdma_cm("ib_read_bw", "read-bw").rnic_server()
    }
}

/// `-b` on both sides: each side runs the test against the other's buffers at once, and
/// each prints the sum of both directions (the guest's WRITE and READ servers the same row
/// as rnic's JSON); rnic's JSON keeps what each direction carried.
mod bidirectional {
    use super::*;

    fn run(tool: &'static str, live: &'static str) -> Interop {
        Interop::bandwidth_with(tool, live, " -b")
    }

    /// Both directions carried traffic, and the row is their sum.
    fn assert_both_directions(report: Option<serde_json::Value>) {
        let Some(j) = report else { return };
        let bw = |side: &str| {
            let v = j["bidirectional"][side]["bw_avg_mb_s"].as_f64();
            v.unwrap_or_else(|| panic!("bidirectional.{side} in {j}"))
        };
        assert!(bw("this_side") > 0.0 && bw("peer") > 0.0, "{j}");
        let sum = j["bw_avg_mb_s"].as_f64().expect("bw_avg_mb_s");
        assert!((sum - bw("this_side") - bw("peer")).abs() < 1e-9, "{j}");
    }

    #[test]
    fn ib_write_bw_rnic_client() {
        assert_both_directions(run("ib_write_bw", "write-bw").rnic_client_report())
    }

    #[test]
    fn ib_write_bw_rnic_server() {
        assert_both_directions(run("ib_write_bw", "write-bw").rnic_server_report())
    }

    #[test]
    fn ib_read_bw_rnic_client() {
        assert_both_directions(run("ib_read_bw", "read-bw").rnic_client_report())
    }

    #[test]
    fn ib_read_bw_rnic_server() {
        assert_both_directions(run("ib_read_bw", "read-bw").rnic_server_report())
    }

    #[test]
    fn ib_send_bw_rnic_client() {
        assert_both_directions(run("ib_send_bw", "send-bw").rnic_client_report())
    }

    #[test]
    fn ib_send_bw_rnic_server() {
        assert_both_directions(run("ib_send_bw", "send-bw").rnic_server_report())
    }

    #[test]
    fn ib_atomic_bw_rnic_client() {
        assert_both_directions(run("ib_atomic_bw", "atomic-bw").rnic_client_report())
    }

    #[test]
    fn ib_atomic_bw_rnic_server() {
        assert_both_directions(run("ib_atomic_bw", "atomic-bw").rnic_server_report())
    }

    #[test]
    fn ib_write_bw_uc_rnic_client() {
        assert_both_directions(run("ib_write_bw", "write-bw").uc().rnic_client_report())
    }

    /// `ib_send_bw -b -c UD`: 1 KiB datagrams both ways at path MTU 1024; rnic counts what
    /// arrived of the guest's (`-n` per QP, as perftest sends no count).
    #[test]
    fn ib_send_bw_ud_rnic_client() {
        let ud = Interop::new("ib_send_bw", "send-bw", 1024)
            .both_sides(" -b")
            .ud();
        let report = ud.rnic_client_report();
        if let Some(j) = &report {
            assert_eq!(j["unreliable"]["messages_sent"], ud.iters, "{j}");
        }
        assert_both_directions(report)
    }

    #[test]
    fn ib_send_bw_ud_rnic_server() {
        let ud = Interop::new("ib_send_bw", "send-bw", 1024)
            .both_sides(" -b")
            .ud();
        assert_both_directions(ud.rnic_server_report())
    }

    /// Both directions resend what netem drops of the guest's frames (its WRITEs and its
    /// ACKs of rnic's).
    #[test]
    fn ib_write_bw_rnic_client_with_loss_and_reordering() {
        let lossy = run("ib_write_bw", "write-bw").lossy(300);
        assert_both_directions(lossy.rnic_client_report())
    }
}

/// `-q 4` on both sides: four QPs, 20 operations each, every QP's exchanged in turn as
/// perftest's are. perftest's client counts and times all the QPs' operations (80), and its
/// WRITE, READ and atomic servers print the client's figures: rnic's server prints the guest's and
/// the guest's server rnic's. Its SEND server keeps receives posted on every QP and counts
/// every QP's SENDs (80), its own figures.
mod four_qps {
    use super::*;

    const QPS: u32 = 4;

    fn run(tool: &'static str, live: &'static str) -> Interop {
        let size = if live == "atomic-bw" { 8 } else { 4096 };
        Interop::new(tool, live, size).qps(QPS)
    }

    /// A side's JSON counts every QP's operations and says it ran `QPS` of them.
    fn assert_all_qps_counted(report: &serde_json::Value, iters: u32) {
        assert_eq!(report["live"]["qps"], QPS, "{report}");
        assert_eq!(report["iterations"], QPS * iters, "{report}");
    }

    /// perftest's client counted every QP's operations and printed the figures rnic's server
    /// reports (its own, sent over), but for SEND, whose server measures its own.
    fn assert_client_printed(run: &Interop, client_text: &str, report: &serde_json::Value) {
        let row = perftest_row(client_text);
        assert_eq!(row[1], f64::from(QPS * run.iters), "{client_text}");
        if run.guest_tool == "ib_send_bw" {
            return;
        }
        let peak = report["bw_peak_mb_s"].as_f64().expect("bw_peak_mb_s");
        assert!(
            peak > 0.0 && (row[2] - peak).abs() <= 0.01,
            "the guest's client printed a peak of {} MB/s, rnic's server {peak}:\n{client_text}",
            row[2]
        );
    }

    macro_rules! client_and_server {
        ($($tool:ident: $live:literal;)*) => {$(
            mod $tool {
                use super::*;
                #[test]
                fn rnic_client() {
                    let run = run(stringify!($tool), $live);
                    if let Some(report) = run.rnic_client_report() {
                        assert_all_qps_counted(&report, run.iters);
                    }
                }
                #[test]
                fn rnic_server() {
                    let run = run(stringify!($tool), $live);
                    if let Some((report, client_text)) = run.rnic_server_run() {
                        assert_all_qps_counted(&report, run.iters);
                        assert_client_printed(&run, &client_text, &report);
                    }
                }
            }
        )*};
    }

    client_and_server! {
        ib_write_bw: "write-bw";
        ib_read_bw: "read-bw";
        ib_atomic_bw: "atomic-bw";
        ib_send_bw: "send-bw";
    }

    /// `ib_send_bw -q 4` over UC (messages of 4 packets) and UD (datagrams of the path
    /// MTU): without loss every QP's SENDs arrive, and each side counts all of them.
    mod send_bw_unreliable {
        use super::*;

        fn uc() -> Interop {
            Interop::new("ib_send_bw", "send-bw", 4096).uc().qps(QPS)
        }

        fn ud() -> Interop {
            Interop::new("ib_send_bw", "send-bw", 1024).ud().qps(QPS)
        }

        fn client_counts_every_qp(run: Interop) {
            if let Some(report) = run.rnic_client_report() {
                assert_all_qps_counted(&report, run.iters);
            }
        }

        fn server_counts_every_qp(run: Interop) {
            if let Some((report, client_text)) = run.rnic_server_run() {
                assert_all_qps_counted(&report, run.iters);
                assert_client_printed(&run, &client_text, &report);
                assert_eq!(report["ops_completed"], QPS * run.iters, "{report}");
            }
        }

        #[test]
        fn uc_rnic_client() {
            client_counts_every_qp(uc());
        }

        #[test]
        fn uc_rnic_server() {
            server_counts_every_qp(uc());
        }

        #[test]
        fn ud_rnic_client() {
            client_counts_every_qp(ud());
        }

        #[test]
        fn ud_rnic_server() {
            server_counts_every_qp(ud());
        }
    }
}

/// `-D 3 --margin 1` on both sides: rnic's client writes for 3 s and measures the middle
/// second; perftest's server, passive until the closing handshake, prints rnic's figures
/// (its average checked against rnic's JSON by `check_server_prints_our_figures`).
#[test]
fn ib_write_bw_for_a_duration_rnic_client() {
    let run = Interop::new("ib_write_bw", "write-bw", 65536).for_seconds(3);
    if let Some(report) = run.rnic_client_report() {
        assert!(
            (report["wall_time_us"].as_f64().unwrap() - 1e6).abs() < 1.0,
            "{report}"
        );
        assert!(report["iterations"].as_u64().unwrap() > 0, "{report}");
    }
}

/// perftest's `-D` in the tests rnic live runs it for beyond write-bw and read-bw,
/// rnic as client and as server against the guest's perftest: one second with no margin
/// (`-D 1 --margin 0`, which perftest takes), to keep the suite short. ib_send_bw's server
/// and both sides of the latency tests run their own clocks; ib_atomic_bw's server is
/// passive and prints the client's figures.
mod duration {
    use super::*;

    fn run(tool: &'static str, live: &'static str, size: u32) -> Interop {
        Interop::new(tool, live, size).for_seconds_unmargined(1)
    }

    client_and_server! {
        ib_send_bw: "send-bw", 4096;
        ib_atomic_bw: "atomic-bw", 8;
        ib_write_lat: "write-lat", 2;
        ib_read_lat: "read-lat", 2;
        ib_send_lat: "send-lat", 2;
    }

    /// `ib_send_bw -b -D 1`: both sides SEND for the second, and each row counts the
    /// side's own SENDs and the peer's it took in (perftest's `run_iter_bi`; no reports
    /// cross, so rnic's JSON has no directions).
    fn send_both_ways() -> Interop {
        run("ib_send_bw", "send-bw", 4096).both_sides(" -b")
    }

    fn assert_counts_both_ways(report: Option<serde_json::Value>) {
        let Some(j) = report else { return };
        assert!(j["iterations"].as_u64().unwrap() > 0, "{j}");
        assert!(j["bidirectional"].is_null(), "{j}");
        let note = j["notes"].to_string();
        assert!(note.contains("-b -D: the row counts"), "{j}");
    }

    #[test]
    fn ib_send_bw_both_ways_rnic_client() {
        assert_counts_both_ways(send_both_ways().rnic_client_report())
    }

    #[test]
    fn ib_send_bw_both_ways_rnic_server() {
        assert_counts_both_ways(send_both_ways().rnic_server_report())
    }
}
