//! `docs/claims.md` is the registry's claims, rendered: every claim with its threshold (the
//! evaluator's own wording) and where it comes from in the paper. A claim added, reworded or
//! re-thresholded without the document fails here; `RNIC_BLESS=1 cargo test -p rnic --test
//! repro_docs` rewrites the file, to be committed with the change that moved it.

use std::path::PathBuf;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/claims.md")
}

#[test]
fn claims_doc_matches_the_registry() {
    let want = rnic::repro::docs::claims_markdown().unwrap();
    let path = doc_path();
    if std::env::var("RNIC_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/claims.md is out of date with the reproduction registry; rerun with \
         RNIC_BLESS=1 and commit the file.\n--- generated ---\n{want}"
    );
}

#[test]
fn every_claim_has_a_source_and_the_paper_is_cited() {
    let doc = rnic::repro::docs::claims_markdown().unwrap();
    for p in rnic::repro::PAPERS {
        assert!(doc.contains(&p.citation()), "{}", p.key);
        for e in p.experiments {
            let texts = rnic::repro::docs::claim_texts(e).unwrap();
            assert_eq!(texts.len(), e.claims.len(), "{}", e.id);
            for c in e.claims {
                assert!(!c.source.trim().is_empty(), "{}/{}", e.id, c.id);
            }
        }
    }
}
