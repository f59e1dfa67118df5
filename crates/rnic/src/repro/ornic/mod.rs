//! ORNIC: Ma et al., "ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet Direct
//! Write Method for Multipath Transmission" (Electronics 2025). One module per experiment,
//! all under the `ornic` profile (100 Gb/s, PMTU 4 KB, paths differing by up to 20 µs, a
//! 90 µs round trip, 16-bit bitmap blocks, 2048 QPs), nothing changed per figure.
//!
//! * [`sizing`] (ornic-sizing): OTD, BDP window, bitmap width and the on-chip memory of the
//!   bitmap structures, derived from the profile by the transport's sizing.
//! * [`bitmap_tables`] (ornic-bitmap-cycles, ornic-bitmap-blocks; the paper's Tables 2 and
//!   3): the bitmap designs timed by the model's bitmap bench on a WQE whose packets are
//!   reordered within the OTD, with and without a lost packet.
//! * [`vs_gbn`] (ornic-vs-gbn, Fig. 11): sweeps of go-back-N and of ORNIC's out-of-order
//!   WRITEs, in order and through the paper's reordering emulator (OOO distance < 64);
//!   [`gbn_nak`] judges go-back-N there beside the local ACK timeout it depends on.
//! * [`paths`] (ornic-vs-gbn-paths, Fig. 11 on the multipath fabric the paper designs for):
//!   the same WRITEs sprayed over four paths 20 µs apart by the network's sprayer
//!   (`net.spray`), against in order on each of the same four paths in turn.
//! * [`throughput`] (ornic-throughput, Fig. 10): a sweep of ORNIC's out-of-order WRITE WQEs
//!   from 1 MB to 256 MB through the paper's reordering emulator.
//! * [`acks`] (ornic-acks): ACK frames per WQE counted on the simulated wire, ORNIC's
//!   register-scheduler by turn length against MP-RDMA's ACK per packet.

pub mod acks;
pub mod bitmap_tables;
pub mod gbn_nak;
pub mod paths;
pub mod sizing;
pub mod throughput;
pub mod vs_gbn;

pub use acks::{eval_acks, AcksPlan};
pub use bitmap_tables::{eval_blocks, eval_cycles, TablePlan};
pub use sizing::eval_sizing;

use super::Paper;

/// The profile every experiment runs under.
pub const PROFILE: &str = "ornic";

/// The paper and its experiments.
pub const PAPER: Paper = Paper {
    key: "ornic",
    short: "ORNIC",
    title: "ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method \
            for Multipath Transmission",
    authors: "Jiandong Ma, Zhichuan Guo, Yipeng Pan, Mengting Zhang, Zhixiang Zhao, Zezheng \
              Sun, Yiwei Chang",
    venue: "Electronics 14(1), 88 (2025)",
    numbering: "",
    experiments: &[
        sizing::EXPERIMENT,
        bitmap_tables::CYCLES,
        bitmap_tables::BLOCKS,
        throughput::EXPERIMENT,
        vs_gbn::EXPERIMENT,
        paths::EXPERIMENT,
        acks::EXPERIMENT,
    ],
};
