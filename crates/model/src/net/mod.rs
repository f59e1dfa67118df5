//! The network as a graph ([`graph`]): Ethernet ports, links with their own delay and rate,
//! output-queued switches, and on any link direction a chain of elements behind one trait
//! ([`element`]; the impairment element is [`impair`]). [`topology`] builds it from config:
//! star, back-to-back, a generated fat-tree or leaf-spine ([`fabric`], routed with [`ecmp`]), or
//! a topology file; [`pfc`] makes the switches lossless with
//! IEEE 802.1Qbb PAUSE frames, hop by hop. It knows frames only as bytes read through
//! `rnic-wire`; nothing of NIC internals.

pub mod addr;
pub mod capture;
pub mod ecmp;
pub mod ecn;
pub mod element;
pub mod fabric;
pub mod graph;
pub mod hooks;
pub mod impair;
pub mod link;
pub mod path;
pub mod pfc;
pub mod pfc_deadlock;
mod pfc_ports;
pub mod plan;
pub mod port;
pub mod queue_stats;
pub mod queue_trace;
pub mod reorder_window;
pub mod shared_buffer;
pub mod spray;
pub mod switch;
pub mod topology;
pub mod wan_accel;
