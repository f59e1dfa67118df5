//! Claims: what a paper says, what rnic measured, and the verdict; the tolerance helpers the
//! evaluators share; the claims table printed by `rnic repro` and its CSV form.
//!
//! Every paper's evaluators build their claims with [`claim`] (or [`missing`] when the data a
//! claim needs is absent, which fails it: a claim without data is never a pass), so the
//! verdict, the table and the report look the same for every paper.

/// One checked claim.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// Short id, unique within its experiment, e.g. `write-flat`.
    pub id: String,
    /// What the paper says, with the threshold rnic applies.
    pub paper: String,
    /// What rnic measured.
    pub ours: String,
    /// Whether rnic's number meets the claim.
    pub pass: bool,
}

/// Where a claim and its threshold come from, registered with the experiment so that
/// `docs/claims.md` can state it next to the claim (the evaluator gives the claim's wording).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimSource {
    /// The claim's id, as the evaluator reports it.
    pub id: &'static str,
    /// The paper's section, figure or table, what it says, and which thresholds are rnic's
    /// own reading of a shape the paper gives without a number.
    pub source: &'static str,
}

/// A claim from its parts.
pub fn claim(id: impl Into<String>, paper: impl Into<String>, ours: String, pass: bool) -> Claim {
    Claim {
        id: id.into(),
        paper: paper.into(),
        ours,
        pass,
    }
}

/// A claim that could not be checked because `what` is missing from the results: it fails.
pub fn missing(id: impl Into<String>, paper: impl Into<String>, what: &str) -> Claim {
    claim(id, paper, format!("no data ({what})"), false)
}

/// `x` is within `tol` (a fraction, 0.1 = ±10 %) of `target`.
pub fn within(x: f64, target: f64, tol: f64) -> bool {
    (x - target).abs() <= tol * target.abs()
}

/// `x` as a percentage of `of` (0 when `of` is 0, so a missing reference prints as 0 %).
pub fn pct(x: f64, of: f64) -> f64 {
    if of == 0.0 {
        0.0
    } else {
        100.0 * x / of
    }
}

/// `PASS` or `FAIL`.
pub fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// `s` on one line of at most 160 characters, so a long error keeps the table readable.
pub fn one_line(s: &str) -> String {
    let s = s.replace('\n', " ");
    if s.chars().count() > 160 {
        let mut t: String = s.chars().take(157).collect();
        t.push_str("...");
        t
    } else {
        s
    }
}

/// The printed claims table: claim id (`<experiment>/<claim>`), the paper's claim, rnic's
/// number, verdict, in aligned columns.
pub fn claims_table(id: &str, claims: &[Claim]) -> String {
    let rows: Vec<[String; 4]> = claims
        .iter()
        .map(|c| {
            [
                format!("{id}/{}", c.id),
                c.paper.clone(),
                c.ours.clone(),
                verdict(c.pass).to_string(),
            ]
        })
        .collect();
    let header = [
        "claim".to_string(),
        "paper".to_string(),
        "rnic".to_string(),
        "verdict".to_string(),
    ];
    let mut w = [0usize; 4];
    for r in std::iter::once(&header).chain(&rows) {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

/// `claims.csv`: one row per claim, columns `claim,paper,rnic,verdict`.
pub fn claims_csv(claims: &[Claim]) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["claim", "paper", "rnic", "verdict"])?;
    for c in claims {
        w.write_record([
            c.id.as_str(),
            c.paper.as_str(),
            c.ours.as_str(),
            verdict(c.pass),
        ])?;
    }
    Ok(w.into_inner()?)
}

/// Reads a `claims.csv` back (the report's sections of experiments run earlier).
pub fn parse_claims_csv(bytes: &[u8]) -> anyhow::Result<Vec<Claim>> {
    let mut r = csv::Reader::from_reader(bytes);
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec?;
        let field = |i: usize| rec.get(i).unwrap_or_default().to_string();
        out.push(Claim {
            id: field(0),
            paper: field(1),
            ours: field(2),
            pass: field(3) == "PASS",
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Vec<Claim> {
        vec![
            claim("a", "s", "ours".into(), true),
            claim("bbb", "long, \"quoted\" claim", "o".into(), false),
        ]
    }

    #[test]
    fn table_aligns_columns() {
        let t = claims_table("x", &two());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].ends_with("PASS") && lines[2].ends_with("FAIL"));
        let col = lines[0].find("verdict").unwrap();
        assert_eq!(lines[1].find("PASS").unwrap(), col);
    }

    #[test]
    fn csv_round_trips() {
        let bytes = claims_csv(&two()).unwrap();
        assert!(bytes.starts_with(b"claim,paper,rnic,verdict\n"));
        assert_eq!(parse_claims_csv(&bytes).unwrap(), two());
    }

    #[test]
    fn tolerance_and_missing() {
        assert!(within(66.7, 66.4, 0.10) && !within(74.0, 66.4, 0.10));
        assert_eq!(pct(1.0, 0.0), 0.0);
        assert!(!missing("x", "p", "no points").pass);
        assert_eq!(one_line(&"a\n".repeat(200)).chars().count(), 160);
    }
}
