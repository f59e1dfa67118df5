//! `rnic repro ID|all`: reproductions of the seeds' claims. Each entry is a sweep (TOML text,
//! the same format as `rnic sweep`) plus the seed's number to print beside ours. The registry
//! is empty until the model exists; add entries to [`REPROS`].

use crate::UsageError;

/// One reproduction.
#[derive(Debug, Clone, Copy)]
pub struct Repro {
    /// Id used on the command line, e.g. `csrna-peak`.
    pub id: &'static str,
    /// One-line description of the claim.
    pub title: &'static str,
    /// The seed's figure, printed beside ours, e.g. "about 66.4 Mops, flat within 5 %".
    pub claim: &'static str,
    /// The experiment, as a sweep file.
    pub sweep_toml: &'static str,
}

/// Every reproduction, in `rnic repro all` order.
pub const REPROS: &[Repro] = &[];

/// The ids of all reproductions.
pub fn ids() -> Vec<&'static str> {
    REPROS.iter().map(|r| r.id).collect()
}

/// Looks up `id`; `all` selects every reproduction. Unknown ids are usage errors that list the
/// known ones.
pub fn select(id: &str) -> Result<Vec<&'static Repro>, UsageError> {
    if id == "all" {
        return Ok(REPROS.iter().collect());
    }
    REPROS
        .iter()
        .find(|r| r.id == id)
        .map(|r| vec![r])
        .ok_or_else(|| UsageError(format!("unknown reproduction `{id}`; {}", known_list())))
}

/// "known reproductions: a, b" or a note that there are none yet.
pub fn known_list() -> String {
    if REPROS.is_empty() {
        "no reproductions are registered yet (use `all` to run every one)".to_string()
    } else {
        format!("known reproductions: {}, all", ids().join(", "))
    }
}

/// The listing printed by `rnic repro` without an id.
pub fn listing() -> String {
    if REPROS.is_empty() {
        return "no reproductions are registered yet\n".to_string();
    }
    let w = REPROS.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let mut s = String::new();
    for r in REPROS {
        s.push_str(&format!("{:<w$}  {}\n", r.id, r.title));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_id_is_a_usage_error() {
        let e = select("nope").unwrap_err();
        assert!(e.0.contains("nope"));
        assert_eq!(select("all").unwrap().len(), REPROS.len());
    }

    #[test]
    fn every_repro_sweep_parses() {
        for r in REPROS {
            crate::sweep::parse_sweep(r.sweep_toml, r.id).unwrap();
        }
    }
}
