//! Deterministic fuzzers: arbitrary bytes into the parser, hostile packets into live RC,
//! UC and UD QPs.

pub mod live_qp;
pub mod parser;
pub mod unreliable;

pub use live_qp::{fuzz_live_qps, LiveQpFuzzReport};
pub use parser::{fuzz_parser, ParserFuzzReport};
pub use unreliable::{fuzz_unreliable_qps, UnreliableFuzzReport};
