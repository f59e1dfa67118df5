pub mod prefetch;
