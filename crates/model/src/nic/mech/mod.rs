pub mod csrna;
pub mod isolation;
pub mod prefetch;
