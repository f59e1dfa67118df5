//! The simulated hosts: memory layout, the verbs driver's ring formats (WQEs and CQEs as real
//! bytes in host memory), and the perftest-style application with its CPU costs.
//!
//! Host memory itself is [`rnic_host::SparseMemory`] (real bytes, pages allocated on first
//! touch), shared by the application, the driver and the NIC's DMA.

pub mod bw_peak;
pub mod cm;
pub mod core_set;
pub mod driver;
pub(crate) mod mr_groups;
pub mod pattern;
pub mod perftest;
pub mod routes;
pub mod steady;
