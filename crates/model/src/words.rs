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

/// `one` when `n` is 1, else `many`: the verb after a [`counted`] noun ("1 frame was", "3
/// frames were").
pub fn agree<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}
