//! The command-line tests, one test binary: each module was its own binary, and linking
//! rnic into each of them cost CI minutes. Run one file's tests with
//! `cargo test -p rnic --test cli MODULE::`.

#[path = "../common/mod.rs"]
mod common;

mod accel_e2e;
mod calc_cli;
mod cli_exit_codes;
mod clock_range;
mod compose_matrix;
mod compose_random;
mod doc_numbers;
mod doc_repro_numbers;
mod field_range_ends;
mod front_door_edges;
mod host_counters;
mod isolation_order;
mod live_udp_bench;
mod no_outside_references;
mod ornic_wire;
mod outputs_spare_inputs;
mod pcap_check;
mod pcap_order;
mod perftest_flags;
mod pfc_capture;
mod qp_round_robin;
mod rate_trace;
mod repeated_set;
mod repro_claims;
mod repro_csrna_reduced;
mod repro_dcqcn_reduced;
mod repro_isolation_reduced;
mod repro_ornic_reduced;
mod repro_prefetch_claims;
mod repro_prefetch_reduced;
mod repro_registry;
mod repro_sensitivity;
mod repro_wan_reduced;
mod rx_buffer;
mod switch_buffer;
mod transport_counters;
mod truthful_runs;
mod unreliable_ping_pong;
mod workload_sweep;
