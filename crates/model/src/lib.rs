//! rnic-model: the timed model of an RDMA NIC, its hosts and its network, with its
//! configuration ([`config`]), what a run does ([`workload`]) and what it reports
//! ([`result`]).
//!
//! The transport (`rnic_transport::Device`) is the protocol truth: this model never
//! re-implements protocol logic, it decides *when* each transport step happens. A NIC is a
//! set of pipeline units (each a server with an initiation interval in NIC cycles), caches
//! (QPC, MPT, MTT) in front of a backing store (host memory over PCIe, or on-board DDR), a
//! DMA engine and a PCIe link; the network is Ethernet ports, links, an output-queued switch
//! and an impairment element in a star of one server and N clients; the hosts are real
//! sparse memory with WQE/CQE rings and a perftest-like application with CPU costs.
//!
//! * [`params`]: every timing parameter, its unit, default and the calibration.
//! * [`nic`], [`net`], [`host`]: the components (gem5-SimObject style: a params struct,
//!   counters each).
//! * [`world`]: the event handlers' shared state and glue; [`event`]: the events.
//! * [`run`]: `run_perf` — set up, run, verify every byte, report.
//! * [`breakdown`]: the uncontended write-lat latency as a sum of modelled components.

pub mod atomic_oracle;
pub mod breakdown;
pub mod buffers;
pub mod config;
mod error;
pub mod event;
pub mod flow;
pub mod flow_result;
mod header_memo;
pub mod host;
pub mod input_file;
pub mod limits;
pub mod net;
pub mod nic;
pub mod oracle;
pub mod params;
mod per_qp;
pub mod quantity;
pub mod result;
pub mod run;
pub mod size_mix;
pub mod slab;
pub mod stats;
pub mod traffic;
pub mod verdict;
pub mod words;
pub mod workload;
pub mod world;

pub use error::{OutputError, UsageError};

pub use breakdown::{write_lat_breakdown, Breakdown};
pub use params::ModelParams;
pub use run::{
    run_flows, run_perf, run_perf_detailed, run_perf_with_progress, FlowsRun, ModelRun, Progress,
    RunOptions,
};
