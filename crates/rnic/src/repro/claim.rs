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
    /// What kind of pass it is: the registry's ([`ClaimSource::kind`]), filled in by the
    /// runner; `None` for a claim the registry does not list (the `run` claim of a failed
    /// run).
    pub kind: Option<ClaimKind>,
    /// `--sensitivity`: `robust`, or the parameters and values at which the verdict flips;
    /// `None` when not asked for.
    pub sensitivity: Option<String>,
}

/// What a claim's pass says about the model. A pass is worth what the model had to do to
/// earn it: the headline counts predictions, and the other kinds are shown for what they
/// are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClaimKind {
    /// A simulated number the model was not fitted to.
    Prediction,
    /// A model parameter was set from this very number (the claim checks the fit).
    Calibration,
    /// A closed form evaluated on the paper's inputs (no simulation).
    Calculation,
    /// Holds by construction of the model or of the workload.
    Structural,
}

impl ClaimKind {
    /// Every kind, in the headline's order.
    pub const ALL: [ClaimKind; 4] = [
        ClaimKind::Prediction,
        ClaimKind::Calibration,
        ClaimKind::Calculation,
        ClaimKind::Structural,
    ];

    /// The name in tables and CSV.
    pub fn name(self) -> &'static str {
        match self {
            ClaimKind::Prediction => "prediction",
            ClaimKind::Calibration => "calibration",
            ClaimKind::Calculation => "calculation",
            ClaimKind::Structural => "structural",
        }
    }

    /// The kind named `s` (a `claims.csv` read back).
    pub fn from_name(s: &str) -> Option<ClaimKind> {
        ClaimKind::ALL.into_iter().find(|k| k.name() == s)
    }

    /// What a pass of this kind means, for the docs.
    pub fn meaning(self) -> &'static str {
        match self {
            ClaimKind::Prediction => "a simulated number the model was not fitted to",
            ClaimKind::Calibration => {
                "a model parameter was set from this number, so the claim checks the fit, \
                 not the model"
            }
            ClaimKind::Calculation => {
                "a closed form evaluated on the paper's inputs, no simulation"
            }
            ClaimKind::Structural => "holds by construction of the model or of the workload",
        }
    }

    /// The headline's phrase for `pass` of `total` claims of this kind.
    fn tally(self, pass: usize, total: usize) -> String {
        let (noun, verb) = match self {
            ClaimKind::Prediction => ("predictions", "pass"),
            ClaimKind::Calibration => ("calibrations", "hold"),
            ClaimKind::Calculation => ("calculations", "match"),
            ClaimKind::Structural => ("structural checks", "hold"),
        };
        format!("{pass} of {total} {noun} {verb}")
    }
}

/// The headline of a set of claims: "N of M predictions pass; K of K calibrations hold; J of
/// J calculations match; S of S structural checks hold", kinds without claims left out, and
/// the claims of no kind (a failed run) last.
pub fn headline(claims: &[Claim]) -> String {
    let count = |k: Option<ClaimKind>| {
        let of: Vec<&Claim> = claims.iter().filter(|c| c.kind == k).collect();
        (of.iter().filter(|c| c.pass).count(), of.len())
    };
    let mut parts: Vec<String> = ClaimKind::ALL
        .into_iter()
        .filter_map(|k| {
            let (pass, total) = count(Some(k));
            (total > 0 || k == ClaimKind::Prediction).then(|| k.tally(pass, total))
        })
        .collect();
    let (_, broken) = count(None);
    if broken > 0 {
        parts.push(format!(
            "{broken} experiment run(s) failed before its claims were judged"
        ));
    }
    parts.join("; ")
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
    /// What kind of pass it is; why, in `source` when it is not obvious.
    pub kind: ClaimKind,
}

/// A claim from its parts.
pub fn claim(id: impl Into<String>, paper: impl Into<String>, ours: String, pass: bool) -> Claim {
    Claim {
        id: id.into(),
        paper: paper.into(),
        ours,
        pass,
        kind: None,
        sensitivity: None,
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

/// The kind's name, `-` when the claim has none.
pub fn kind_name(c: &Claim) -> &'static str {
    c.kind.map_or("-", ClaimKind::name)
}

/// The table's columns for `claims`: claim, kind, paper, rnic, verdict, and sensitivity when
/// any claim has it.
fn table_rows(id: &str, claims: &[Claim]) -> Vec<Vec<String>> {
    let sensitivity = claims.iter().any(|c| c.sensitivity.is_some());
    let mut header: Vec<String> = ["claim", "kind", "paper", "rnic", "verdict"]
        .map(String::from)
        .into();
    if sensitivity {
        header.push("sensitivity".into());
    }
    let mut rows = vec![header];
    for c in claims {
        let mut r = vec![
            format!("{id}/{}", c.id),
            kind_name(c).to_string(),
            c.paper.clone(),
            c.ours.clone(),
            verdict(c.pass).to_string(),
        ];
        if sensitivity {
            r.push(c.sensitivity.clone().unwrap_or_default());
        }
        rows.push(r);
    }
    rows
}

/// The printed claims table: claim id (`<experiment>/<claim>`), its kind, the paper's claim,
/// rnic's number, verdict (and, after `--sensitivity`, what flips it), in aligned columns.
pub fn claims_table(id: &str, claims: &[Claim]) -> String {
    let rows = table_rows(id, claims);
    let mut w = vec![0usize; rows[0].len()];
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&w).map(|(c, &w)| format!("{c:<w$}")).collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
    }
    s
}

/// `claims.csv`: one row per claim, columns `claim,kind,paper,rnic,verdict,sensitivity`
/// (the last empty unless `--sensitivity` was given).
pub fn claims_csv(claims: &[Claim]) -> anyhow::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["claim", "kind", "paper", "rnic", "verdict", "sensitivity"])?;
    for c in claims {
        w.write_record([
            c.id.as_str(),
            kind_name(c),
            c.paper.as_str(),
            c.ours.as_str(),
            verdict(c.pass),
            c.sensitivity.as_deref().unwrap_or_default(),
        ])?;
    }
    Ok(w.into_inner()?)
}

/// Reads a `claims.csv` back (the report's sections of experiments run earlier), by column
/// name, so a file written before a column existed still reads (without it).
pub fn parse_claims_csv(bytes: &[u8]) -> anyhow::Result<Vec<Claim>> {
    let mut r = csv::Reader::from_reader(bytes);
    let header = r.headers()?.clone();
    let column = |name: &str| header.iter().position(|h| h == name);
    let (id, kind, paper, ours, pass, sens) = (
        column("claim"),
        column("kind"),
        column("paper"),
        column("rnic"),
        column("verdict"),
        column("sensitivity"),
    );
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec?;
        let field = |i: Option<usize>| i.and_then(|i| rec.get(i)).unwrap_or_default().to_string();
        let sensitivity = Some(field(sens)).filter(|s| !s.is_empty());
        out.push(Claim {
            id: field(id),
            paper: field(paper),
            ours: field(ours),
            pass: field(pass) == "PASS",
            kind: ClaimKind::from_name(&field(kind)),
            sensitivity,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> Vec<Claim> {
        let mut a = claim("a", "s", "ours".into(), true);
        a.kind = Some(ClaimKind::Calibration);
        vec![a, claim("bbb", "long, \"quoted\" claim", "o".into(), false)]
    }

    #[test]
    fn table_aligns_columns() {
        let t = claims_table("x", &two());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[1].ends_with("PASS") && lines[2].ends_with("FAIL"));
        let col = lines[0].find("verdict").unwrap();
        assert_eq!(lines[1].find("PASS").unwrap(), col);
        let kind = lines[0].find("kind").unwrap();
        assert_eq!(lines[1].find("calibration"), Some(kind));
        assert_eq!(lines[2].find(" - ").map(|i| i + 1), Some(kind));
        assert!(!lines[0].contains("sensitivity"));
    }

    #[test]
    fn sensitivity_adds_a_column_when_run() {
        let mut c = two();
        c[1].sensitivity = Some("robust".into());
        let t = claims_table("x", &c);
        assert!(t.lines().next().unwrap().ends_with("sensitivity"), "{t}");
        assert!(
            t.lines().nth(2).unwrap().ends_with("FAIL     robust"),
            "{t}"
        );
    }

    #[test]
    fn headline_counts_each_kind() {
        let mut c = two();
        c[1].kind = Some(ClaimKind::Prediction);
        let mut run = claim("run", "p", "o".into(), false);
        run.kind = None;
        c.push(run);
        assert_eq!(
            headline(&c),
            "0 of 1 predictions pass; 1 of 1 calibrations hold; 1 experiment run(s) failed \
             before its claims were judged"
        );
        assert_eq!(headline(&[]), "0 of 0 predictions pass");
    }

    #[test]
    fn csv_round_trips() {
        let bytes = claims_csv(&two()).unwrap();
        assert!(bytes.starts_with(b"claim,kind,paper,rnic,verdict,sensitivity\n"));
        assert_eq!(parse_claims_csv(&bytes).unwrap(), two());
        let old = parse_claims_csv(b"claim,paper,rnic,verdict\na,s,o,PASS\n").unwrap();
        assert_eq!((old[0].kind, old[0].pass), (None, true));
    }

    #[test]
    fn tolerance_and_missing() {
        assert!(within(66.7, 66.4, 0.10) && !within(74.0, 66.4, 0.10));
        assert_eq!(pct(1.0, 0.0), 0.0);
        assert!(!missing("x", "p", "no points").pass);
        assert_eq!(one_line(&"a\n".repeat(200)).chars().count(), 160);
    }
}
