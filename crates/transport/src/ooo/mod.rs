//! Receive bitmaps for out-of-order (multipath) reliability, after "ORNIC: A
//! High-Performance RDMA NIC with Out-of-Order Packet Direct Write Method for Multipath
//! Transmission" (Electronics 2025) and the designs it compares against.
//!
//! A receiver of an out-of-order WQE writes every payload straight to
//! `start + (PSN - start PSN) × PMTU` and records the PSN in a bitmap, which tells it when the
//! WQE is whole and which PSNs are missing. The designs differ in how the bitmap is stored:
//!
//! * [`OrnicArray`]: ORNIC's array of block nodes over a shared [`BlockPool`]: any block is
//!   one array index away, and a block that fills up goes back to the pool at once (its node
//!   keeps an `all_1` flag instead).
//! * [`LinkedBlocks`]: MELO+, LEFT and LEFT+ ([`ListAccess`]): a linked list of pool blocks
//!   from the head (oldest missing PSN) to the tail (newest block), reached through head,
//!   tail and (LEFT) cache pointers; full blocks stay in the list until the head passes them.
//! * [`StaticBitmap`]: MP-RDMA's bitmap: one fixed OTD-wide window per QP, preallocated;
//!   packets beyond it are dropped.
//!
//! All implement [`ReceiveBitmap`], which reports for every packet what it cost to locate
//! its block (pointer accesses, one clock cycle each, as the ORNIC paper counts them) and how
//! many pool blocks the QP holds. [`sizing`] derives the structures' dimensions (OTD, BDP
//! window, bitmap width, pool) from the link rate, MTU and path delays.
//!
//! [`OooRequester`] and [`OooResponder`] are the out-of-order WRITE state machines over those
//! bitmaps (direct write by PSN, the address carried until the responder learns the start,
//! OTD loss detection, bitmap NAKs, ACK aggregation), exchanging [`OooSegment`]s: they are
//! wired into [`crate::Device`] by `ooo_qp`, whose QPs share one [`DevicePools`] pool.

mod bitmap;
mod block_pool;
mod linked_blocks;
pub(crate) mod ooo_qp;
pub(crate) mod ooo_read;
mod ooo_requester;
mod ooo_responder;
mod ornic_array;
pub(crate) mod qp_state;
pub(crate) mod read_state;
mod rto;
mod segment;
mod shared_pool;
pub mod sizing;
mod static_bitmap;

pub use bitmap::{BitmapDesign, ReceiveBitmap, Recorded};
pub use block_pool::{BlockId, BlockPool};
pub use linked_blocks::{LinkedBlocks, ListAccess};
pub use ooo_requester::{OooPacket, OooRequester, RequesterStats, TimerFired};
pub use ooo_responder::{AckPolicy, OooResponder, PlaceTarget, ResponderStats};
pub use ornic_array::OrnicArray;
pub use rto::{Retries, RtoEstimator};
pub use segment::OooSegment;
pub use shared_pool::{DevicePools, SharedPool};
pub use static_bitmap::StaticBitmap;

#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod tests;
