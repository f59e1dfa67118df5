//! The model's integration tests, one test binary: each module was its own binary, and
//! linking the model into each of them cost CI minutes. Run one file's tests with
//! `cargo test -p rnic-model --test model MODULE::`.

mod ack_between_packets;
mod atomics;
mod chunk_buffer;
mod cliff;
mod cm;
mod cm_port;
#[allow(dead_code)]
mod common;
mod csrna;
mod csrna_fcfs_reference;
mod csrna_manager;
mod csrna_onchip;
mod dcqcn;
mod determinism;
mod drop_translation;
mod ecn;
mod fabric;
mod flow_memory;
mod flows;
mod infinite_timeout;
mod isolation;
mod lat_loss;
mod latency_procs;
mod lossless;
mod ornic_timer;
mod ornic_translation;
mod payload_beside_streams;
mod payload_stream;
mod pfc;
mod physics;
mod prefetch;
mod prefetch_props;
mod psn_wrap;
mod qp_profiles;
mod read_loss;
mod recv_in_flight;
mod recv_translation;
mod reversed;
mod speed;
mod steady;
mod topology;
mod truthful_props;
mod ud_reorder;
mod unreliable;
mod verify;
mod wan;
mod warmup;
mod window;
mod write_loss;
