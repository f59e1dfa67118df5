pub mod isolation;
