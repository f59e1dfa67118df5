//! perftest's flags that `rnic live` does not implement, and what it does with each, so that
//! a perftest command line pastes unchanged or fails naming the flag: what names hardware,
//! host plumbing or the local NIC's own work (nothing on the wire changes, and the peer
//! cannot tell) is accepted and ignored with a one-line note on stderr; what would change
//! the traffic, the exchange or what is printed, and that `rnic live` does not do yet, is
//! refused with exit status 2 and the reason. `rnic live`'s own flags and this table
//! together cover every flag of perftest 4.5's `ib_{write,read,send,atomic}_{bw,lat}`
//! (`tests/fixtures/perftest/`, checked by `tests/cli/perftest_flags.rs`).

use crate::cli::perftest_compat::{flag, CompatFlag, CompatTable, Treatment};
use Treatment::{Ignored, Refused};

/// `rnic live`'s table.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveFlags;

impl CompatTable for LiveFlags {
    const FLAGS: &'static [CompatFlag] = LIVE_FLAGS;
    const TAKES_CONNECTION: bool = false;
    const LISTED_IN: &'static str = "the book's rnic live chapter lists what it accepts";
}

const DEVICE: &str =
    "rnic live is its own device: a UDP socket on port 4791 of --bind's address (or the route's)";
const GID: &str = "rnic live's GID is its IPv4 address mapped into IPv6 (RoCEv2), as perftest's \
    -x picks on rxe (index 1)";
const LOCAL: &str = "it shapes the local NIC's work, and rnic live has no NIC hardware: \
    every work request is handled by its own engine, the frames on the wire are the same";
const MEMORY: &str = "rnic live's buffers are its own process memory, always resident";
const POLLS: &str = "rnic live polls its completion queue";
const PEAK: &str = "the BW peak is measured anyway (0 in duration mode, as perftest's)";
const VERSIONS: &str = "rnic live exchanges versions, as perftest does by default, and tells an \
    rnic peer by them (perftest 4.5 itself exits with the flag: its version check then reads \
    no version, below the 5.70 it needs)";
const DC: &str = "rnic live runs RC, UC and UD queue pairs, not Dynamically Connected transport";
const ENCRYPTION: &str = "rnic live runs RoCEv2 without inline encryption";
const IPV4: &str = "rnic live runs RoCEv2 over IPv4 on Ethernet";
const ONE_PORT: &str = "rnic live has one port";
const UNICAST: &str = "rnic live runs unicast traffic only";
const SERVICE_LEVEL: &str = "RoCE carries a service level only as a VLAN tag's priority, and \
    rnic live's frames are untagged, as rxe's on an untagged netdev: the wire is the same";
const HOP_LIMIT: &str =
    "perftest takes it for raw Ethernet QPs only; its RoCE QPs send with hop limit 255, rnic's with 64";
const REPORT: &str = "rnic live prints perftest's default table and writes --json";
const PACKET_PACING: &str = "a hint to a NIC's packet pacing (PP); rnic live's limiter is SW";

/// Every perftest flag `rnic live` does not implement as perftest does.
pub const LIVE_FLAGS: &[CompatFlag] = &[
    // Hardware and host plumbing, and the local NIC's own work: the wire is unchanged.
    flag("ib-dev", Some('d'), true, Ignored(DEVICE)),
    flag("ib-port", Some('i'), true, Ignored(DEVICE)),
    flag("gid-index", Some('x'), true, Ignored(GID)),
    flag(
        "CPU-freq",
        Some('F'),
        false,
        Ignored("rnic live times with the OS clock"),
    ),
    flag("use_hugepages", None, false, Ignored(MEMORY)),
    flag("mmap", None, true, Ignored(MEMORY)),
    flag("mmap-offset", None, true, Ignored(MEMORY)),
    flag("odp", None, false, Ignored(MEMORY)),
    flag("use_old_post_send", None, false, Ignored(LOCAL)),
    flag("disable_pcie_relaxed", None, false, Ignored(LOCAL)),
    flag("inline_size", Some('I'), true, Ignored(LOCAL)),
    flag("post_list", Some('l'), true, Ignored(LOCAL)),
    flag("cq-mod", Some('Q'), true, Ignored(LOCAL)),
    flag("events", Some('e'), false, Ignored(POLLS)),
    flag("vector", Some('X'), true, Ignored(POLLS)),
    flag(
        "force-link",
        None,
        true,
        Ignored("the link is Ethernet (RoCEv2)"),
    ),
    flag(
        "pkey_index",
        None,
        true,
        Ignored("RoCEv2 uses the default partition key"),
    ),
    flag(
        "wait_destroy",
        None,
        true,
        Ignored("rnic live frees what it holds at exit"),
    ),
    flag("noPeak", Some('N'), false, Ignored(PEAK)),
    flag(
        "cpu_util",
        None,
        false,
        Ignored("host CPU utilisation is not reported"),
    ),
    flag(
        "report-counters",
        Some('W'),
        true,
        Ignored("rnic live has no port counters"),
    ),
    // The exchange.
    flag("dont_xchg_versions", None, false, Refused(VERSIONS)),
    // The traffic.
    flag("recv_post_list", None, true, Ignored(LOCAL)),
    flag("inline_recv", None, true, Ignored(LOCAL)),
    flag(
        "mr_per_qp",
        None,
        false,
        Ignored("one memory region covers every QP's own buffers: the peer gets one key for all"),
    ),
    flag(
        "perform_warm_up",
        None,
        false,
        Ignored("rnic live's engine has no caches to warm: the run is measured from its start"),
    ),
    flag("typical_pkt_size", None, true, Refused(PACKET_PACING)),
    // Addressing and the packet's headers.
    flag("sl", Some('S'), true, Ignored(SERVICE_LEVEL)),
    flag("hop_limit", Some('L'), true, Refused(HOP_LIMIT)),
    flag("ipv6", None, false, Refused(IPV4)),
    flag("dlid", None, true, Refused(IPV4)),
    flag("dualport", Some('O'), false, Refused(ONE_PORT)),
    flag("report-per-port", None, false, Refused(ONE_PORT)),
    flag("MGID", Some('M'), true, Refused(UNICAST)),
    flag("mcg", Some('g'), false, Refused(UNICAST)),
    // What is printed.
    flag("report-cycles", Some('C'), false, Refused(REPORT)),
    // Dynamically Connected transport and encryption.
    flag("log_dci_streams", None, true, Refused(DC)),
    flag("log_active_dci_streams", None, true, Refused(DC)),
    flag("aes_xts", None, false, Refused(ENCRYPTION)),
    flag("aes_block_size", None, true, Refused(ENCRYPTION)),
    flag("encrypt_on_tx", None, false, Refused(ENCRYPTION)),
    flag("sig_before", None, false, Refused(ENCRYPTION)),
    flag("kek_path", None, true, Refused(ENCRYPTION)),
    flag("credentials_path", None, true, Refused(ENCRYPTION)),
    flag("data_enc_keys_number", None, true, Refused(ENCRYPTION)),
    flag("data_enc_key_app_path", None, true, Refused(ENCRYPTION)),
];
