//! `[net.ecn]`: RED/ECN marking on the switches' egress queues. Off by default, so no
//! existing result moves.

use super::declare::{config_enum, config_section};
use super::schema::{float, uint, Kind};

config_enum! {
    /// When a switch reads the egress queue that decides a frame's mark.
    pub enum EcnMarkPoint {
        /// As the frame joins the queue, on the bytes ahead of it: RED on the arriving
        /// packet, as the DCQCN paper's congestion point (DCTCP's marking) describes it.
        Enqueue = "enqueue",
        /// As the frame starts onto the wire, on the bytes still queued behind it: the ns-3
        /// HPCC simulator's switch, which asks its MMU at dequeue (the mark then tells of the
        /// queue as it stands one queueing delay later, so it reaches the sender sooner).
        Dequeue = "dequeue",
    }
}

config_section! {
    /// ECN marking on every switch output port, with net.ecn.enabled = true (off, only the
    /// order of kmin_bytes and kmax_bytes is checked; the other fields change nothing).
    pub struct EcnConfig in "net.ecn" {
        /// Mark ECN-capable frames CE on every switch output port whose queue is long: with
        /// probability 0 up to kmin_bytes, rising linearly to pmax at kmax_bytes, and always
        /// above (RED on the instantaneous queue, as DCQCN's switches are configured)
        enabled: bool = false; "switch", Kind::Bool;
        /// Queued bytes where marking starts (400 KB: the ns-3 HPCC simulator's DCQCN
        /// configuration for 100 Gb/s links)
        kmin_bytes: u64 = 400_000; "bytes", uint(0, 1 << 40);
        /// Queued bytes above which every ECN-capable frame is marked (1600 KB: the same
        /// configuration)
        kmax_bytes: u64 = 1_600_000; "bytes", uint(1, 1 << 40);
        /// Marking probability at kmax_bytes (0.2: the same configuration)
        pmax: f64 = 0.2; "probability", float(0.0, 1.0);
        /// When the queue is read: "enqueue" (the bytes ahead of an arriving frame) or
        /// "dequeue" (the bytes behind a frame as it starts onto the wire, as the ns-3 HPCC
        /// simulator's switch marks)
        mark_point: EcnMarkPoint = EcnMarkPoint::Enqueue; "point", Kind::Str(EcnMarkPoint::NAMES);
        /// 0: kmin_bytes and kmax_bytes hold on every port; above 0: they are the thresholds
        /// of a port of this rate, and a port of another rate gets them in proportion to its
        /// rate (the ns-3 HPCC simulator's KMIN_MAP and KMAX_MAP, 400 and 1600 KB at 100 Gb/s,
        /// 1600 and 6400 KB at its 400 Gb/s switch links)
        thresholds_at_gbps: f64 = 0.0; "Gb/s", float(0.0, 10_000.0);
    }
}
