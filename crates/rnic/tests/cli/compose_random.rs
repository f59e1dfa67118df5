//! Random compositions: `rnic perf` commands drawn from the tests, services, sizes, queue
//! pairs, clients, depths and perftest flags it takes, each with a random set of the papers'
//! mechanisms and network features turned on. `compose_matrix.rs` runs every pair of
//! mechanisms on two workloads; this draws from the rest of the space. Each run completes with
//! every byte verified, or is refused before any work (exit 2), or, a UC or UD run over a
//! lossy link, ends having lost every message; never a stall, a model error, a panic, or a
//! run still going after a minute. Drawing this way found three bugs the matrix could not
//! reach: UD with `--use-srq`, the WAN accelerator's timer under `write-lat`, and the slicing
//! station holding a tenant's ACKs under `-b`.
//!
//! The network features include a leaf-spine whose switches spray every frame over four
//! spines (`net.fabric.routing = "spray"`), or route it adaptively (`"adaptive"`), so each
//! mechanism also meets reordering from real parallel paths.
//!
//! The draws are the same on every run: `RNIC_COMPOSE_SEED` (default 1) and
//! `RNIC_COMPOSE_DRAWS` (default 300) draw others, for a longer hunt by hand.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rnic_model::host::pattern::splitmix;
use rnic_model::workload::{PerfTest, Verb};

use crate::common::{finish_within, in_two_workers};

/// Each mechanism or network feature: its name, the settings that turn it on, and its group
/// (at most one of a group is drawn: they set the same fields).
const FEATURES: &[(&str, &[&str], &str)] = &[
    (
        "csrna",
        &["nic.qpc_manager=nonblocking", "nic.latency_hiding=true"],
        "csrna",
    ),
    ("prefetch", &["nic.prefetch=sched+sw"], "prefetch"),
    ("isolation-v1", &["nic.tx_isolation=v1"], "isolation"),
    ("isolation-v2", &["nic.tx_isolation=v2"], "isolation"),
    ("slicing", &["nic.iso_transport=slicing"], "isolation"),
    (
        "qp-round-robin",
        &["nic.iso_transport=qp_round_robin"],
        "isolation",
    ),
    (
        "ornic-sprayed",
        &["qp.reliability=ornic", "net.spray.paths=4"],
        "ornic",
    ),
    ("ornic", &["qp.reliability=ornic"], "ornic"),
    ("wan", &["net.topology=wan", "net.wan_km=20"], "link"),
    (
        "wan-accel",
        &["net.topology=wan", "net.wan_km=20", "net.wan_accel=true"],
        "link",
    ),
    ("long-link", &["net.link_km=5"], "link"),
    // A generated fabric whose switches spray every frame: the server and each client
    // under leaves of their own, four spines between them.
    (
        "fabric-sprayed",
        &[
            "net.topology=leaf_spine",
            "net.fabric.leaves=3",
            "net.fabric.hosts_per_leaf=1",
            "net.fabric.spines=4",
            "net.fabric.routing=spray",
        ],
        "link",
    ),
    // The same fabric routing adaptively: each frame to the spine port that frees first.
    (
        "fabric-adaptive",
        &[
            "net.topology=leaf_spine",
            "net.fabric.leaves=3",
            "net.fabric.hosts_per_leaf=1",
            "net.fabric.spines=4",
            "net.fabric.routing=adaptive",
        ],
        "link",
    ),
    // The long-distance paper's standard NIC: 85 packets unacknowledged per QP.
    ("packet-window", &["qp.window_psns=85"], "window"),
    ("pfc", &["net.pfc=true"], "pfc"),
    ("ddr-qpcs", &["nic.qpc_placement=ddr"], "ddr"),
    ("dcqcn", &["net.cc=dcqcn", "net.ecn.enabled=true"], "cc"),
    ("loss", &["net.impair.loss=0.001"], "loss"),
];

/// perftest flags drawn now and then, alone or together, each with the tests it applies to
/// (`bw`, `atomic`, `procs`: write-, read- and atomic-lat; `any`).
const FLAGS: &[(&[&str], &str)] = &[
    (&["-b"], "bw"),
    (&["--reversed"], "bw"),
    (&["-l", "4"], "any"),
    (&["-Q", "4"], "any"),
    (&["-R"], "any"),
    (&["-r", "8"], "any"),
    (&["-o", "4"], "any"),
    (&["--procs", "2"], "procs"),
    (&["-A", "CMP_AND_SWAP"], "atomic"),
    (&["-I", "64"], "any"),
    (&["-m", "1024"], "any"),
];

/// A run still going after this has stalled in wall time (the draws take a second or less).
const RUN_LIMIT: Duration = Duration::from_secs(60);

/// The draws: SplitMix64 from the seed, the same sequence on every machine.
struct Draw {
    seed: u64,
    drawn: u64,
}

impl Draw {
    fn new(seed: u64) -> Draw {
        Draw { seed, drawn: 0 }
    }

    fn next(&mut self) -> u64 {
        self.drawn += 1;
        splitmix(self.seed ^ splitmix(self.drawn))
    }

    fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[(self.next() % from.len() as u64) as usize]
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// One drawn command: its arguments after `rnic`, its service, whether a link loses or
/// reorders frames, whether a `-D` window was drawn over a link that loses them, and
/// whether one was drawn where QPs may stall: over reordering (go-back-N resends and
/// times out) or over RC SENDs (whose receive queue may run dry: RNR waits).
struct Drawn {
    args: Vec<String>,
    unreliable: bool,
    lossy: bool,
    window_under_loss: bool,
    window_may_stall: bool,
}

fn draw(d: &mut Draw) -> Drawn {
    let test = *d.pick(&PerfTest::ALL);
    let (verb, lat) = (test.verb(), test.is_latency());
    let service = match (verb, *d.pick(&["RC", "RC", "RC", "UC", "UD"])) {
        (Verb::Read | Verb::Atomic, _) => "RC",
        (Verb::Write, "UD") => "UC",
        (_, service) => service,
    };
    let mut args: Vec<String> = ["perf", test.name(), "--quiet", "-c", service]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let large = if service == "UD" { false } else { d.chance(30) };
    if verb != Verb::Atomic {
        let size = if large {
            *d.pick(&[65536u32, 1_048_576])
        } else {
            *d.pick(&[2u32, 64, 1024, 4096])
        };
        args.extend(["-s".into(), size.to_string()]);
    }
    if d.chance(8) {
        args.extend(["-D".into(), "0.0002".into()]);
    } else {
        let iters = if large { 5 } else { *d.pick(&[5u32, 20, 50]) };
        args.extend(["-n".into(), iters.to_string()]);
    }
    if !lat {
        let qps = if large { 2 } else { *d.pick(&[1u32, 2, 4, 16]) };
        args.extend(["-q".into(), qps.to_string()]);
        if d.chance(30) {
            args.extend(["--clients".into(), "2".into()]);
        }
        if d.chance(30) {
            args.extend(["-t".into(), d.pick(&[1u32, 4, 16]).to_string()]);
        }
    }
    if test == PerfTest::SendBw && d.chance(30) {
        args.push("--use-srq".into());
    }
    for (flag, applies) in FLAGS {
        let applies = match *applies {
            "bw" => !lat,
            "atomic" => verb == Verb::Atomic,
            "procs" => lat && verb != Verb::Send,
            _ => true,
        };
        if applies && d.chance(6) {
            args.extend(flag.iter().map(|s| s.to_string()));
        }
    }
    // ORNIC runs WRITE and READ bandwidth tests over RC; the long-distance topology joins
    // one client.
    let ornic_fits = service == "RC" && matches!(test, PerfTest::WriteBw | PerfTest::ReadBw);
    let one_client = !args.iter().any(|a| a == "--clients");
    let mut groups = Vec::new();
    let mut lossy = false;
    let mut loss = false;
    for (name, sets, group) in FEATURES {
        let fits = match *group {
            "ornic" => ornic_fits,
            "link" if name.starts_with("wan") => one_client,
            _ => true,
        };
        if groups.contains(group) || !fits || !d.chance(20) {
            continue;
        }
        groups.push(group);
        // Frames routed per frame overtake each other (sprayed ones always, adaptively
        // routed ones where their sizes differ), and a UC or UD receiver drops a message
        // whose packets come out of order, as it drops one that lost a packet.
        let fabric = name.starts_with("fabric-");
        lossy |= *name == "loss" || fabric;
        loss |= *name == "loss";
        for s in *sets {
            args.extend(["--set".into(), s.to_string()]);
        }
    }
    let window = args.iter().any(|a| a == "-D");
    Drawn {
        args,
        unreliable: service != "RC",
        lossy,
        window_under_loss: window && loss,
        window_may_stall: window && (lossy || verb == Verb::Send && service == "RC"),
    }
}

/// Runs `rnic args --json FILE` (a run past [`RUN_LIMIT`] fails the test, named): its exit
/// code, the JSON it wrote (empty when none) and its standard error.
fn run(args: &[String], json: &Path) -> (i32, String, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_rnic"))
        .args(args)
        .arg("--json")
        .arg(json)
        .env("CI", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rnic");
    let out = finish_within(child, RUN_LIMIT, &format!("rnic {}", args.join(" ")));
    let written = std::fs::read_to_string(json).unwrap_or_default();
    let _ = std::fs::remove_file(json);
    (
        out.status.code().unwrap_or(-1),
        written,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How a drawn run ended, when it ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Every byte verified.
    Completed,
    /// Refused before any work (exit 2).
    Refused,
    /// A UC or UD run over a lossy link lost every message.
    LostAll,
    /// A `-D` window under loss held no completion (see [`check`]).
    EmptyWindow,
}

/// How one drawn run ended, or what went wrong with it; `json` is where it writes its
/// results.
fn check(drawn: &Drawn, json: &Path) -> Result<Ended, String> {
    let (code, out, err) = run(&drawn.args, json);
    let what = drawn.args.join(" ");
    let last = err.trim().lines().last().unwrap_or("").to_string();
    if err.contains("panicked") {
        return Err(format!("{what}: panicked: {}", err.trim()));
    }
    match code {
        2 => Ok(Ended::Refused),
        3 if drawn.unreliable
            && drawn.lossy
            && (err.contains("every UC/UD message was lost")
                || err.contains("nothing was transferred")) =>
        {
            Ok(Ended::LostAll)
        }
        // `-D` refuses a window too short for the wire, for the round trips of what each QP
        // may keep in flight (one WQE for an out-of-order QP), or for the packet window's
        // one window per round trip. Under loss a short window can still fall inside a
        // retransmission timeout's wait (go-back-N's is 67 ms) and hold no completion of
        // some flow, which the run reports, naming the -D the timeouts need. So can the
        // timeouts of go-back-N over reordering, and RNR waits when RC SENDs find their
        // receiver's queue dry (`-r 8`): there the run must name the stalls it saw.
        3 if err.contains("no operation completed inside the -D window")
            && (drawn.window_under_loss
                || drawn.window_may_stall && err.contains(" the run saw.")) =>
        {
            Ok(Ended::EmptyWindow)
        }
        0 => {
            let v: serde_json::Value =
                serde_json::from_str(&out).map_err(|e| format!("{what}: no JSON ({e})"))?;
            if v["status"] == "ok" && v["bytes_verified"] == true {
                Ok(Ended::Completed)
            } else {
                Err(format!(
                    "{what}: status {}, bytes_verified {}",
                    v["status"], v["bytes_verified"]
                ))
            }
        }
        c => Err(format!("{what}: exit {c}: {last}")),
    }
}

#[test]
fn drawn_compositions_complete_verified_or_are_refused() {
    // A value that is no whole number, or no draws at all, would test something else than
    // asked, or nothing: it fails naming the variable.
    let env = |name: &str, default: u64| match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name} = {v:?}: give a whole number")),
    };
    let mut d = Draw::new(env("RNIC_COMPOSE_SEED", 1));
    let n = env("RNIC_COMPOSE_DRAWS", 300);
    assert!(n > 0, "RNIC_COMPOSE_DRAWS = 0: give at least one draw");
    let draws: Vec<Drawn> = (0..n).map(|_| draw(&mut d)).collect();
    let dir = std::env::temp_dir().join(format!("rnic-compose-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory for the runs' JSON");
    let numbered: Vec<(usize, &Drawn)> = draws.iter().enumerate().collect();
    let ends = in_two_workers(&numbered, |&(i, drawn)| {
        check(drawn, &dir.join(format!("{i}.json")))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let failures: Vec<&String> = ends.iter().filter_map(|e| e.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{}",
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Mostly runs, not refusals: a draw refused at every turn would test nothing.
    let completed = ends.iter().filter(|e| e == &&Ok(Ended::Completed)).count();
    assert!(
        2 * completed >= draws.len(),
        "only {completed} of {} draws ran to completion",
        draws.len()
    );
}
