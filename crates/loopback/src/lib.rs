//! `rnic-loopback`: two sans-IO transports joined by a seeded, impaired in-memory fabric.
//!
//! This is where the protocol is exercised without any timing model: property tests over random
//! operation mixes, the conformance run checked by tshark and scapy, the fuzzers, the transport
//! throughput benchmark and the `rnic demo` loopback demo all drive it.

#![forbid(unsafe_code)]

pub mod conformance;
pub mod corpus;
pub mod demo;
pub mod fabric;
pub mod fuzz;
pub mod guarded_memory;
pub mod pair;
pub mod workload;

pub use fabric::{Fabric, FabricStats, Impairments};
pub use guarded_memory::GuardedMemory;
pub use pair::{Pair, QpParams};
