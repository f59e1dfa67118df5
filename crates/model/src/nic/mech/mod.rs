pub mod isolation;
pub mod prefetch;
