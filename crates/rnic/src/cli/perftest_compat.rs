//! perftest's flags that `rnic perf` does not implement, and what it does with each, so
//! that a perftest command line pastes unchanged: flags that only name real hardware or
//! host plumbing are accepted and ignored with a one-line note; flags that would change
//! what the NIC does or what the user sees, and that rnic does not model yet, are refused
//! with a message naming the flag (never silently run a different experiment).
//!
//! The implemented flags are `rnic perf`'s own arguments (`-s -n -q -t -a -m -D -u -A
//! --report_gbits -o -l -I -c RC --output -w -y -H -U --latency_gap -e --recv_post_list --inline_recv -N`, and `-V`/`-h`, which every rnic command has). The list below and those arguments together cover every flag
//! in the help texts of perftest 4.5's `ib_{write,read,send,atomic}_{bw,lat}`
//! (`tests/fixtures/perftest/`, checked by `tests/cli/perftest_flags.rs`).

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use Treatment::{Ignored, Refused};

/// What `rnic perf` does with a perftest flag it does not implement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// Accepted and ignored: nothing in the model depends on it (the note says why).
    Ignored(&'static str),
    /// Refused: it changes the experiment and rnic does not model it yet (the note says
    /// what is missing or what to use instead).
    Refused(&'static str),
}

/// One perftest flag.
#[derive(Debug, Clone, Copy)]
pub struct CompatFlag {
    /// Long name, without dashes.
    pub long: &'static str,
    /// Short name, if any.
    pub short: Option<char>,
    /// Whether it takes a value.
    pub value: bool,
    /// What rnic does with it.
    pub treatment: Treatment,
}

/// A table entry.
pub const fn flag(
    long: &'static str,
    short: Option<char>,
    value: bool,
    treatment: Treatment,
) -> CompatFlag {
    CompatFlag {
        long,
        short,
        value,
        treatment,
    }
}

const HW: &str = "it names real hardware; the simulated NIC has one device and port";
const ENCRYPTION: &str = "rnic models RoCEv2 without inline encryption";
const DC: &str = "rnic models RC queue pairs, not Dynamically Connected transport";
const MULTICAST: &str = "rnic models unicast traffic only (no UD multicast groups)";

/// Every perftest flag `rnic perf` does not implement as perftest does.
pub const COMPAT_FLAGS: &[CompatFlag] = &[
    // Hardware, host plumbing and out-of-band setup: nothing in the model depends on them.
    flag("ib-dev", Some('d'), true, Ignored(HW)),
    flag("ib-port", Some('i'), true, Ignored(HW)),
    flag("gid-index", Some('x'), true, Ignored(HW)),
    flag(
        "source_ip",
        None,
        true,
        Ignored("the out-of-band connection setup is not simulated"),
    ),
    flag(
        "port",
        Some('p'),
        true,
        Ignored("the out-of-band connection setup is not simulated"),
    ),
    flag(
        "dont_xchg_versions",
        None,
        false,
        Ignored("the out-of-band connection setup is not simulated"),
    ),
    flag(
        "use_hugepages",
        None,
        false,
        Ignored("host buffers are simulated memory; page size is nic.page_bytes"),
    ),
    flag(
        "odp",
        None,
        false,
        Ignored("memory is registered up front; on-demand paging faults are not modelled"),
    ),
    flag(
        "CPU-freq",
        Some('F'),
        false,
        Ignored("there is no CPU frequency to warn about"),
    ),
    flag(
        "force-link",
        None,
        true,
        Ignored("the link is always Ethernet (RoCEv2)"),
    ),
    flag(
        "pkey_index",
        None,
        true,
        Ignored("RoCEv2 uses the default partition key"),
    ),
    flag(
        "vector",
        Some('X'),
        true,
        Ignored("completions are polled, never signalled by interrupt vectors"),
    ),
    flag(
        "mmap",
        None,
        true,
        Ignored("host buffers are simulated memory"),
    ),
    flag(
        "mmap-offset",
        None,
        true,
        Ignored("host buffers are simulated memory"),
    ),
    flag(
        "use_old_post_send",
        None,
        false,
        Ignored("both verbs APIs post the same WQEs"),
    ),
    flag(
        "disable_pcie_relaxed",
        None,
        false,
        Ignored("PCIe writes are modelled in order already"),
    ),
    flag(
        "wait_destroy",
        None,
        true,
        Ignored("resources are freed when the simulation ends"),
    ),
    flag(
        "cpu_util",
        None,
        false,
        Ignored("host CPU utilisation is not reported as a percentage; --stats gives the applications' CPU time (host.cpu_busy_ps)"),
    ),
    flag(
        "report-counters",
        Some('W'),
        true,
        Ignored("port counters are not read; --stats prints every component's counters"),
    ),
    flag(
        "margin",
        Some('f'),
        true,
        Ignored(
            "a -D window opens when the rate has settled (sim.settle_*), not after a fixed margin",
        ),
    ),
    // They change the experiment and are not modelled yet.
    flag(
        "run_infinitely",
        None,
        false,
        Refused("a simulation must end; use -D SECONDS"),
    ),
    flag(
        "typical_pkt_size",
        None,
        true,
        Ignored("a packet-pacing hint to the hardware; rnic's rate limiter meters every frame's own bytes"),
    ),
    flag(
        "sl",
        Some('S'),
        true,
        Ignored(
            "RoCE carries the SL only as a VLAN tag's 802.1p priority, and rnic's frames are \
             untagged with no priority queues; --tclass sets the DSCP",
        ),
    ),
    flag(
        "ipv6",
        None,
        false,
        Refused("rnic's RoCEv2 frames are IPv4"),
    ),
    flag(
        "dlid",
        None,
        true,
        Refused("a LID is InfiniBand addressing; rnic runs RoCEv2"),
    ),
    flag(
        "report-cycles",
        Some('C'),
        false,
        Refused("rnic reports in microseconds of simulated time"),
    ),
    flag("dualport", Some('O'), false, Refused(HW)),
    flag("report-per-port", None, false, Refused(HW)),
    flag(
        "com_rdma_cm",
        Some('z'),
        false,
        Ignored(
            "the QPs connect by RDMA CM on the simulated wire by default (host.connect); the \
             out-of-band exchange is not simulated",
        ),
    ),
    flag("mcg", Some('g'), false, Refused(MULTICAST)),
    flag("MGID", Some('M'), true, Refused(MULTICAST)),
    flag("log_dci_streams", None, true, Refused(DC)),
    flag("log_active_dci_streams", None, true, Refused(DC)),
    flag("aes_xts", None, false, Refused(ENCRYPTION)),
    flag("encrypt_on_tx", None, false, Refused(ENCRYPTION)),
    flag("sig_before", None, false, Refused(ENCRYPTION)),
    flag("aes_block_size", None, true, Refused(ENCRYPTION)),
    flag("data_enc_keys_number", None, true, Refused(ENCRYPTION)),
    flag("kek_path", None, true, Refused(ENCRYPTION)),
    flag("credentials_path", None, true, Refused(ENCRYPTION)),
    flag("data_enc_key_app_path", None, true, Refused(ENCRYPTION)),
];

/// The perftest flags given on a command line that `rnic perf` does not implement.
#[derive(Debug, Clone, Default)]
pub struct Compat<T: CompatTable> {
    /// The flags given, in the table's order, with their value.
    pub given: Vec<(&'static CompatFlag, Option<String>)>,
    /// `-c/--connection`: the transport named (a table that takes it).
    pub connection: Option<String>,
    table: std::marker::PhantomData<T>,
}

/// A command's table of perftest flags it does not implement as perftest does.
pub trait CompatTable {
    /// The flags and what the command does with each.
    const FLAGS: &'static [CompatFlag];
    /// Whether the table also takes perftest's `-c/--connection` (a command with its own
    /// `-c` does not).
    const TAKES_CONNECTION: bool;
    /// Where a refusal points the user.
    const LISTED_IN: &'static str;
}

/// `rnic perf`'s table, [`COMPAT_FLAGS`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PerfFlags;

impl CompatTable for PerfFlags {
    const FLAGS: &'static [CompatFlag] = COMPAT_FLAGS;
    const TAKES_CONNECTION: bool = true;
    const LISTED_IN: &'static str =
        "the book's chapter docs/book/src/perftest-flags.md lists what rnic accepts";
}

/// `rnic perf`'s perftest flags.
pub type PerftestCompat = Compat<PerfFlags>;

impl<T: CompatTable> Compat<T> {
    /// The flags `given` (and `-c`), as clap would have parsed them.
    pub fn new(
        given: Vec<(&'static CompatFlag, Option<String>)>,
        connection: Option<String>,
    ) -> Compat<T> {
        Compat {
            given,
            connection,
            table: std::marker::PhantomData,
        }
    }

    /// Checks the flags: a refused flag or transport is an error naming it; returns the
    /// notes of the ignored ones (one line each) otherwise.
    pub fn check(&self) -> Result<Vec<String>, crate::UsageError> {
        if let Some(c) = &self.connection {
            if !["RC", "UC", "UD"].iter().any(|t| c.eq_ignore_ascii_case(t)) {
                return Err(crate::UsageError(format!(
                    "--connection {c}: rnic runs RC, UC and UD queue pairs (perftest's XRC, \
                     DC and SRD are not modelled); give -c RC, -c UC or -c UD"
                )));
            }
        }
        let mut notes = Vec::new();
        for (f, v) in &self.given {
            let name = flag_name(f);
            let shown = match v {
                Some(v) => format!("{name} {v}"),
                None => name,
            };
            match f.treatment {
                Treatment::Ignored(why) => notes.push(format!("rnic: ignoring {shown}: {why}")),
                Treatment::Refused(why) => {
                    return Err(crate::UsageError(format!(
                        "{shown} is not supported: {why}; run without it ({})",
                        T::LISTED_IN
                    )))
                }
            }
        }
        Ok(notes)
    }
}

/// `-x/--gid-index` or `--odp`.
fn flag_name(f: &CompatFlag) -> String {
    match f.short {
        Some(s) => format!("-{s}/--{}", f.long),
        None => format!("--{}", f.long),
    }
}

impl<T: CompatTable> Args for Compat<T> {
    fn augment_args(mut cmd: Command) -> Command {
        if T::TAKES_CONNECTION {
            cmd = cmd.arg(
                Arg::new("connection")
                    .short('c')
                    .long("connection")
                    .value_name("TYPE")
                    .help(
                        "Connection type (perftest's -c): RC, UC (send and write tests) or UD \
                         (send tests, messages of at most one MTU) (sets qp.transport) [default: RC]",
                    ),
            );
        }
        for f in T::FLAGS {
            let mut a = Arg::new(f.long).long(f.long).hide(true);
            if let Some(s) = f.short {
                a = a.short(s);
            }
            a = if f.value {
                a.action(ArgAction::Set).allow_hyphen_values(true)
            } else {
                a.action(ArgAction::SetTrue)
            };
            cmd = cmd.arg(a);
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<T: CompatTable> FromArgMatches for Compat<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Vec::new();
        for f in T::FLAGS {
            if f.value {
                if let Some(v) = m.get_one::<String>(f.long) {
                    given.push((f, Some(v.clone())));
                }
            } else if m.get_flag(f.long) {
                given.push((f, None));
            }
        }
        let connection = T::TAKES_CONNECTION
            .then(|| m.get_one::<String>("connection").cloned())
            .flatten();
        Ok(Compat::new(given, connection))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_do_not_clash_with_rnic_flags() {
        let mut longs: Vec<&str> = COMPAT_FLAGS.iter().map(|f| f.long).collect();
        longs.sort_unstable();
        let n = longs.len();
        longs.dedup();
        assert_eq!(longs.len(), n, "a long name twice");
        let mut shorts: Vec<char> = COMPAT_FLAGS.iter().filter_map(|f| f.short).collect();
        shorts.sort_unstable();
        let n = shorts.len();
        shorts.dedup();
        assert_eq!(shorts.len(), n, "a short name twice");
        for s in ['s', 'n', 'q', 't', 'a', 'm', 'D', 'u', 'A', 'c', 'V', 'h'] {
            assert!(!shorts.contains(&s), "-{s} is rnic's own");
        }
    }

    #[test]
    fn ignored_flags_give_notes_and_refused_ones_errors() {
        let find = |l: &str| COMPAT_FLAGS.iter().find(|f| f.long == l).unwrap();
        let c = PerftestCompat {
            given: vec![
                (find("ib-dev"), Some("mlx5_0".into())),
                (find("CPU-freq"), None),
            ],
            ..Default::default()
        };
        let notes = c.check().unwrap();
        assert_eq!(notes.len(), 2);
        assert!(
            notes[0].starts_with("rnic: ignoring -d/--ib-dev mlx5_0: "),
            "{notes:?}"
        );
        let c = PerftestCompat {
            given: vec![(find("run_infinitely"), None)],
            ..Default::default()
        };
        let e = c.check().unwrap_err().to_string();
        assert!(
            e.contains("--run_infinitely") && e.contains("must end"),
            "{e}"
        );
        let c = PerftestCompat {
            connection: Some("DC".into()),
            ..Default::default()
        };
        assert!(c
            .check()
            .unwrap_err()
            .to_string()
            .contains("--connection DC"));
        for t in ["UD", "uc"] {
            let c = PerftestCompat {
                connection: Some(t.into()),
                ..Default::default()
            };
            assert!(c.check().unwrap().is_empty());
        }
        let c = PerftestCompat {
            connection: Some("rc".into()),
            ..Default::default()
        };
        assert!(c.check().unwrap().is_empty());
    }
}
