//! `[net.spray]`: per-packet multipath. Every frame a node sends is put on one of `paths`
//! parallel paths whose one-way delays are spread evenly over `mdd_ns` above the link's own
//! (the fastest path adds nothing, the slowest `mdd_ns`), chosen by `policy`. Off by default
//! (one path), so no existing result moves.

use super::declare::{config_enum, config_section};
use super::schema::{uint, Kind, NS};

config_enum! {
    /// How a sprayer picks a frame's path.
    pub enum SprayPolicy {
        /// Uniformly at random per frame (random packet spraying).
        Random = "random",
        /// Path 0, 1, ..., N-1, 0, ... (equal spraying).
        RoundRobin = "round_robin",
        /// Per flow: a hash of the UDP source port, so a QP keeps one path (ECMP, the
        /// single-path baseline).
        Ecmp = "ecmp",
        /// Every frame on path `net.spray.path`: in order over one chosen path of the set,
        /// so an in-order arm can be run on each path in turn instead of the one its hash
        /// happens to pick.
        Pinned = "pinned",
    }
}

config_section! {
    /// Per-packet multipath spraying on every node's uplink, with net.spray.paths above 1
    /// (one path, the default: the other fields change nothing).
    pub struct SprayConfig in "net.spray" {
        /// Parallel paths between the NICs; 1 = a single path (spraying off)
        paths: u32 = 1; "paths", uint(1, 1024);
        /// Largest one-way delay difference between the paths (MDD): path i of N adds
        /// i x mdd_ns / (N - 1) (the ORNIC paper: 20 µs)
        mdd_ns: f64 = 0.0; "ns", NS;
        /// How each frame's path is chosen: "random", "round_robin", "ecmp" (per flow, by
        /// UDP source port) or "pinned" (every frame on `path`)
        policy: SprayPolicy = SprayPolicy::Random; "policy", Kind::Str(SprayPolicy::NAMES);
        /// With policy = "pinned": the path every frame takes, 0 (no added delay) to paths - 1
        /// (mdd_ns added)
        path: u32 = 0; "path", uint(0, 1023);
    }
}
