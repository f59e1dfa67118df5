//! Open-loop datacenter traffic: flow sizes drawn from an empirical distribution
//! ([`cdf`]; `workloads/websearch.cdf` and `workloads/hadoop.cdf` ship with rnic) and flow
//! arrivals at a target load ([`arrivals`]), the workloads of flow-completion-time studies.

pub mod arrivals;
pub mod cdf;
pub mod fct;
pub mod ideal;
