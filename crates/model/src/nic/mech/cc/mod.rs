//! Congestion control in the NIC (`net.cc`), DCQCN first (the DCQCN paper, "Congestion
//! Control for Large-Scale RDMA Deployments", SIGCOMM '15).
//!
//! The switches mark (RED/ECN on their egress queues, `net/ecn.rs`); the NICs do the rest:
//!
//! * **Notification point** ([`np`]): a NIC receiving a CE-marked RoCEv2 data packet sends a
//!   CNP ([`cnp`]: BTH opcode 0x81, to the sender's QP) at most once per QP per
//!   `net.dcqcn.cnp_interval_us`.
//! * **Reaction point** ([`rp`]): the sending NIC cuts the QP's rate on a CNP (or, with
//!   `net.dcqcn.rate_decrease_interval_us`, on the next periodic check after one) by α/2 and
//!   recovers it by timer and byte counter (fast recovery, additive, hyper increase);
//!   [`dcqcn`] paces each throttled QP's request frames at its rate, in the TX engine's
//!   rate-limit step, and runs the α and increase timers as NIC events.
//!
//! With `net.trace_interval_us`, each NIC samples its QPs' rates for the rate trace
//! ([`rate_trace`], FILE-rates.csv), at the queue trace's instants and without events.
//!
//! The NIC holds the mechanism behind its [`hook`] (`AnyCc`, the no-op or DCQCN, chosen in
//! `Nic::new` from `net.cc`); what the NIC calls at its port is its router
//! ([`route::on_arrival`], [`route::on_event`]): functions of the parts they need, returning
//! what they ask of the NIC, not methods of the `Nic`. Nothing else in `nic/` imports this
//! folder's other modules.

pub mod cnp;
pub mod dcqcn;
pub mod hook;
pub mod np;
pub mod rate_trace;
pub mod route;
pub mod rp;
