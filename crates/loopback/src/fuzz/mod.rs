//! Deterministic fuzzers: arbitrary bytes into the parser, hostile packets into live RC
//! (go-back-N, or out-of-order: ORNIC and MP-RDMA), UC and UD QPs.

mod arena;
mod attack;
pub mod live_ooo;
pub mod live_qp;
pub mod parser;
pub mod unreliable;

pub use live_ooo::{fuzz_live_ooo_qps, LiveOooFuzzReport};
pub use live_qp::{fuzz_live_qps, LiveQpFuzzReport};
pub use parser::{fuzz_parser, ParserFuzzReport};
pub use unreliable::{fuzz_unreliable_qps, UnreliableFuzzReport};
