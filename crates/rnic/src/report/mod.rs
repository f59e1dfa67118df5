//! Results of a run: the model's [`PerfResult`] (re-exported), its JSON form and
//! perftest-style text tables.
//!
//! JSON field order is the struct order and maps are `BTreeMap`s, so the same run gives
//! byte-identical JSON (except `wall_seconds`). Numbers are written exactly (shortest
//! round-trip form of each `f64`).

pub mod fct_text;
pub mod flows_text;
pub mod json;
pub mod perftest_json;
pub mod queues_csv;
pub mod side_files;
pub mod text;

pub use rnic_model::result::*;

#[cfg(test)]
mod tests;
