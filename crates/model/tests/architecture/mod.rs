//! The pieces of the architecture-rules test: a source scanner and the import graph.

pub mod graph;
pub mod scan;
