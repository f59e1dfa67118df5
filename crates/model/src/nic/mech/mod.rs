pub mod cc;
pub mod csrna;
pub mod isolation;
pub mod ornic;
pub mod prefetch;
