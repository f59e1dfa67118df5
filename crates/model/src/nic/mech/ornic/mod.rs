//! ORNIC ("ORNIC: A High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method
//! for Multipath Transmission"): the receive-bitmap test bench of its section 4.3 and the
//! reordering element it is fed by.
//!
//! The bitmaps themselves are transport state ([`rnic_transport::ooo`]); this module times
//! them against a packet stream: [`window_shuffle`] reorders a stream within a distance, as
//! the paper's FPGA network emulator does, and [`bitmap_bench`] plays a WQE's packets through
//! it into one QP's bitmap, with OTD loss detection, a bitmap NAK and the retransmission one
//! round trip later, counting the cycles each packet spends locating its block and the
//! blocks the QP holds. [`ack_bench`] runs the transport's out-of-order WRITE requester and
//! responder over a sprayed channel and counts the ACKs per WQE.
//!
//! No hook: the NIC reaches ORNIC through the transport's reliability mode (`qp.reliability
//! = "ornic"`, [`rnic_transport::ooo`]), so nothing else in `nic/` imports this folder. What
//! ORNIC uses but other modes use too stays where it is: the packet sprayer
//! (`net/spray.rs`) and the reordering emulator (`net/impair.rs`) are network elements, and
//! placing out-of-order data by its PSN is a lane of the receive translation
//! (`nic/rx_translate.rs`, shared with MP-RDMA style placement).

pub mod ack_bench;
pub mod bitmap_bench;
pub mod window_shuffle;

pub use ack_bench::{run_ack_bench, AckBenchResult, AckBenchSpec};
pub use bitmap_bench::{run_bitmap_bench, sizing_of, BenchResult, BenchSpec};
pub use window_shuffle::WindowShuffle;
