//! RoCEv2 wire format for the rnic simulator, in the style of smoltcp's `wire` module.
//!
//! Every header has a zero-copy `Packet<T>` view (checked constructor, big-endian accessors,
//! setters) and a `Repr` that parses from and emits into it. [`FrameRepr`] ties them into whole
//! Ethernet/IPv4/UDP/RoCEv2 frames with the ICRC; [`peek_roce`] reads the headers a simulator
//! or switch acts on at a fixed cost, without the ICRC. Untrusted bytes never panic: every
//! defect is a [`WireError`].

#![forbid(unsafe_code)]

mod be;
mod view;

pub mod aeth;
pub mod atomic_ack_eth;
pub mod atomic_eth;
pub mod bth;
pub mod cm;
pub mod cma;
pub mod cnp;
pub mod deth;
pub mod error;
pub mod ethernet;
pub mod frame;
pub mod icrc;
pub mod ieth;
pub mod immdt;
pub mod ipv4;
pub mod ooo_eth;
pub mod opcode;
pub mod pcap;
pub mod peek;
pub mod pfc;
pub mod reth;
pub mod roce;
pub mod udp;

pub use aeth::{AethRepr, AethSyndrome, NakCode, CREDITS_UNLIMITED};
pub use atomic_ack_eth::AtomicAckEthRepr;
pub use atomic_eth::AtomicEthRepr;
pub use bth::BthRepr;
pub use cnp::cnp_repr;
pub use deth::DethRepr;
pub use error::{Result, WireError};
pub use ethernet::{EthernetRepr, ETHERTYPE_IPV4};
pub use frame::{pad_len, FrameAddr, FrameRepr, RoceRepr, BTH_OFFSET};
pub use icrc::ICRC_LEN;
pub use ieth::IethRepr;
pub use immdt::ImmDtRepr;
pub use ipv4::Ipv4Repr;
pub use ooo_eth::OooAckEthRepr;
pub use opcode::Opcode;
pub use pcap::PcapWriter;
pub use peek::{peek_bth, peek_roce, RoceHeaders};
pub use pfc::PfcRepr;
pub use reth::RethRepr;
pub use udp::{udp_entropy_port, UdpRepr, ROCE_PORT};
