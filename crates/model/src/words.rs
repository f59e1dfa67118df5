//! How messages say a count or a number. A module of its own, importing nothing, so that any module's
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

/// A number as a message shows it: in exponent form when plain digits would run long
/// (1e308, not three hundred digits; 1e-12, not 0.000000000001).
pub fn short_num(x: f64) -> String {
    if x != 0.0 && x.is_finite() && (x.abs() >= 1e9 || x.abs() < 1e-4) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}
