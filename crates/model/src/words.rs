//! How messages say a count. A module of its own, importing nothing, so that any module's
//! messages may use it without joining an import cycle.

/// `n` and `noun`, plural unless `n` is 1, as a reader says a count: "1 packet", "85
/// packets", "1 point".
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
