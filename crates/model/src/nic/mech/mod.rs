pub mod cc;
pub mod isolation;
pub mod prefetch;
