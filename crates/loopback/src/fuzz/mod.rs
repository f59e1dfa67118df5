//! Deterministic fuzzers: arbitrary bytes into the parser, hostile packets into a live QP.

pub mod live_qp;
pub mod parser;

pub use live_qp::{fuzz_live_qps, LiveQpFuzzReport};
pub use parser::{fuzz_parser, ParserFuzzReport};
