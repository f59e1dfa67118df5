use super::schema::{get_path, leaf_paths, Kind, FIELDS};
use super::*;

fn set(arg: &str) -> Override {
    parse_set(arg).unwrap()
}

fn resolve_err(args: &[&str]) -> String {
    let ov: Vec<Override> = args.iter().map(|a| set(a)).collect();
    Config::resolve("baseline", &ov).unwrap_err().to_string()
}

#[test]
fn default_is_baseline_and_validates() {
    let cfg = Config::default();
    cfg.validate().unwrap();
    assert_eq!(profile("baseline").unwrap(), cfg);
    assert_eq!(cfg.qp.pmtu, 4096);
    assert_eq!(cfg.nic.qpc_cache_entries, 300);
    assert_eq!(cfg.net.switch_buffer_bytes, 16 << 20);
    assert_eq!(cfg.sim.max_events, 2_000_000_000);
}

#[test]
fn every_profile_validates() {
    for p in PROFILES {
        let cfg = profile(p.name).unwrap_or_else(|e| panic!("profile {}: {e}", p.name));
        cfg.validate().unwrap();
        assert!(!p.description.is_empty());
    }
    assert_eq!(PROFILES[0].name, "baseline");
}

#[test]
fn unknown_profile_lists_known_ones() {
    let e = profile("csrna-typo").unwrap_err().to_string();
    assert!(e.contains("csrna-typo") && e.contains("baseline"), "{e}");
}

#[test]
fn overlays_change_only_what_they_name() {
    let t = profiles::overlay_table(
        "test",
        "[nic]\nqpc_manager = \"nonblocking\"\nlatency_hiding = true\n[net.impair]\nloss = 0.01",
    )
    .unwrap();
    let cfg = Config::from_table(t).unwrap();
    assert_eq!(cfg.nic.qpc_manager, QpcManager::Nonblocking);
    assert!(cfg.nic.latency_hiding);
    assert_eq!(cfg.net.impair.loss, 0.01);
    assert_eq!(cfg.nic.qpc_cache_entries, 300);
    assert_eq!(cfg.net.link_delay_ns, 500.0);
    let e = profiles::overlay_table("test", "[nic]\nqpc_managr = 1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("nic.qpc_managr"), "{e}");
}

#[test]
fn every_field_is_documented_and_every_doc_is_a_field() {
    let mut cfg = Config::default();
    cfg.net.link_km = Some(1.0); // make optional fields appear
    cfg.sim.warmup_us = Some(10.0);
    cfg.nic.server_qpc_cache_entries = Some(100);
    cfg.nic.client_qpc_cache_entries = Some(100);
    cfg.net.fabric.host_link_gbps = Some(100.0);
    cfg.net.fabric.fabric_link_gbps = Some(100.0);
    cfg.net.fabric.host_link_delay_ns = Some(100.0);
    cfg.net.fabric.fabric_link_delay_ns = Some(100.0);
    let leaves = leaf_paths(&cfg.to_table().unwrap());
    for leaf in &leaves {
        assert!(
            schema::field(leaf).is_some(),
            "field `{leaf}` has no entry in schema::FIELDS"
        );
    }
    for doc in FIELDS.iter() {
        assert!(
            leaves.iter().any(|l| l == doc.path),
            "doc `{}` is not a field",
            doc.path
        );
        assert!(!doc.unit.is_empty() && !doc.doc.is_empty(), "{}", doc.path);
    }
    // Unset optional fields are the only ones missing from the default serialization.
    let default_leaves = leaf_paths(&Config::default().to_table().unwrap());
    for doc in FIELDS.iter() {
        assert_eq!(
            default_leaves.iter().any(|l| l == doc.path),
            !doc.optional,
            "{}",
            doc.path
        );
    }
    // No duplicates; sections contiguous (config show prints each section once).
    let mut sections: Vec<&str> = Vec::new();
    for (i, d) in FIELDS.iter().enumerate() {
        assert!(
            FIELDS[..i].iter().all(|e| e.path != d.path),
            "dup {}",
            d.path
        );
        let sec = d.path.rsplit_once('.').map(|s| s.0).unwrap_or("");
        if sections.last() != Some(&sec) {
            assert!(!sections.contains(&sec), "section {sec} split");
            sections.push(sec);
        }
    }
}

#[test]
fn every_default_is_inside_its_documented_range() {
    let t = Config::default().to_table().unwrap();
    schema::check_config_table(&t).unwrap();
}

#[test]
fn every_documented_enum_value_deserializes() {
    for doc in FIELDS.iter() {
        if let Kind::Str(values) = doc.kind {
            for v in values {
                let cfg = Config::resolve("baseline", &[Override::new(doc.path, *v)])
                    .unwrap_or_else(|e| panic!("{} = {v}: {e}", doc.path));
                let t = cfg.to_table().unwrap();
                assert_eq!(get_path(&t, doc.path).unwrap().as_str(), Some(*v));
            }
        }
    }
}

#[test]
fn nested_set_works() {
    let cfg = Config::resolve(
        "baseline",
        &[
            set("net.impair.loss=0.01"),
            set("nic.qpc_manager=nonblocking"),
            set("nic.qpc_cache_entries=3000"),
            set("net.link_km=10"),
            set("sim.max_events=3e9"),
            set("nic.qpc_placement=DDR"),
        ],
    )
    .unwrap();
    assert_eq!(cfg.net.impair.loss, 0.01);
    assert_eq!(cfg.nic.qpc_manager, QpcManager::Nonblocking);
    assert_eq!(cfg.nic.qpc_cache_entries, 3000);
    assert_eq!(cfg.net.link_km, Some(10.0));
    assert_eq!(cfg.net.effective_link_delay_ns(), 50_000.0);
    assert_eq!(cfg.sim.max_events, 3_000_000_000);
    assert_eq!(cfg.nic.qpc_placement, QpcPlacement::Ddr);
    // Later overrides win; `none` unsets an optional field.
    let cfg = Config::resolve(
        "baseline",
        &[
            set("net.link_km=10"),
            set("net.link_km=none"),
            set("qp.pmtu=1024"),
            set("qp.pmtu=2048"),
        ],
    )
    .unwrap();
    assert_eq!(cfg.net.link_km, None);
    assert_eq!(cfg.qp.pmtu, 2048);
    // A whole section as an inline table.
    let cfg = Config::resolve("baseline", &[set("net.impair={ loss = 0.5, dup = 0.1 }")]).unwrap();
    assert_eq!((cfg.net.impair.loss, cfg.net.impair.dup), (0.5, 0.1));
    assert_eq!(cfg.net.impair.reorder_depth, 0);
}

/// A scenario's `[set]` with an empty table for a field or an unknown section set nothing
/// and ran without a word; each is refused naming its key, as `--set` refuses it.
#[test]
fn an_empty_table_in_a_set_table_is_refused_naming_its_key() {
    use super::overrides::overrides_from_table;
    for (set_table, key) in [
        ("nic.clock_ghz = {}", "`nic.clock_ghz`"),
        ("\"net.pfc\" = {}", "`net.pfc`"),
        ("nci = {}", "`nci`"),
        ("[nci]", "`nci`"),
    ] {
        let t: toml::Table = set_table.parse().unwrap();
        let e = Config::resolve("baseline", &overrides_from_table(&t))
            .unwrap_err()
            .to_string();
        assert!(e.contains(key), "{set_table}: {e}");
    }
    // A known section's empty table changes nothing, as `--set net.impair={}` does.
    let t: toml::Table = "net.impair = {}\nnic.clock_ghz = 2.0".parse().unwrap();
    let cfg = Config::resolve("baseline", &overrides_from_table(&t)).unwrap();
    assert_eq!(cfg.nic.clock_ghz, 2.0);
}

#[test]
fn unknown_key_names_it_and_lists_the_section() {
    let e = resolve_err(&["nic.qpc_cache_entrie=3"]);
    assert!(e.contains("`nic.qpc_cache_entrie`"), "{e}");
    assert!(e.contains("did you mean `nic.qpc_cache_entries`"), "{e}");
    assert!(
        e.contains("`ooo_cap`") && e.contains("`tx_msg_cycles`"),
        "{e}"
    );
    let e = resolve_err(&["nicc.ooo_cap=3"]);
    assert!(
        e.contains("`nicc`") && e.contains("did you mean `nic`") && e.contains("`pcie`"),
        "{e}"
    );
    let e = resolve_err(&["net.impair.los=0.1"]);
    assert!(
        e.contains("net.impair.los") && e.contains("section `net.impair`"),
        "{e}"
    );
    let e = resolve_err(&["nic=3"]);
    assert!(e.contains("`nic`") && e.contains("section"), "{e}");
    let e = resolve_err(&["nic.ooo_cap.x=3"]);
    assert!(e.contains("nic.ooo_cap"), "{e}");
}

#[test]
fn out_of_range_names_field_value_and_range() {
    let e = resolve_err(&["qp.pmtu=300"]);
    assert!(e.contains("`qp.pmtu`") && e.contains("300"), "{e}");
    assert!(e.contains("256, 512, 1024, 2048, 4096"), "{e}");
    assert!(e.contains("--set qp.pmtu=4096"), "{e}");
    let e = resolve_err(&["qp.timeout=32"]);
    assert!(e.contains("`qp.timeout`") && e.contains("0 to 31"), "{e}");
    let e = resolve_err(&["net.impair.loss=1.5"]);
    assert!(
        e.contains("`net.impair.loss`") && e.contains("0 to 1"),
        "{e}"
    );
    let e = resolve_err(&["pcie.mps_bytes=300"]);
    assert!(e.contains("power of two"), "{e}");
    let e = resolve_err(&["nic.qpc_manager=blocking"]);
    assert!(
        e.contains("`nic.qpc_manager`") && e.contains("\"nonblocking\""),
        "{e}"
    );
    let e = resolve_err(&["nic.tx_isolation=v3"]);
    assert!(
        e.contains("`nic.tx_isolation`") && e.contains("\"baseline\"") && e.contains("\"v2\""),
        "{e}"
    );
    let e = resolve_err(&["nic.iso_bs_arbiter=wrr"]);
    assert!(
        e.contains("`nic.iso_bs_arbiter`") && e.contains("\"adaptive_wrr\""),
        "{e}"
    );
    let e = resolve_err(&["nic.iso_bs_fifo_depth=0"]);
    assert!(e.contains("`nic.iso_bs_fifo_depth`"), "{e}");
    let e = resolve_err(&["nic.clock_ghz=0"]);
    assert!(e.contains("from 0.001 to 10"), "{e}");
    let e = resolve_err(&["nic.ooo_cap=1.5"]);
    assert!(
        e.contains("`nic.ooo_cap`") && e.contains("whole numbers"),
        "{e}"
    );
    let e = resolve_err(&["sim.seed=-1"]);
    assert!(e.contains("`sim.seed`"), "{e}");
    let e = resolve_err(&["sim.duration_us=nan"]);
    assert!(e.contains("`sim.duration_us`"), "{e}");
}

#[test]
fn wrong_type_names_the_field() {
    let e = resolve_err(&["nic.latency_hiding=yes"]);
    assert!(
        e.contains("`nic.latency_hiding`") && e.contains("true or false"),
        "{e}"
    );
    let e = resolve_err(&["qp.pmtu=big"]);
    assert!(e.contains("`qp.pmtu`") && e.contains("an integer"), "{e}");
    let e = resolve_err(&["nic.qpc_manager=3"]);
    assert!(
        e.contains("`nic.qpc_manager`") && e.contains("a string"),
        "{e}"
    );
    let e = resolve_err(&["pcie.gbps=[1,2]"]);
    assert!(e.contains("`pcie.gbps`") && e.contains("a number"), "{e}");
}

#[test]
fn bad_set_syntax_is_explained() {
    for (arg, want) in [
        ("nic.ooo_cap", "KEY=VALUE"),
        ("=3", "empty"),
        ("nic..ooo_cap=3", "empty part"),
        ("nic ooo=3", "contains"),
    ] {
        let e = parse_set(arg).unwrap_err().to_string();
        assert!(e.contains(arg) && e.contains(want), "{arg}: {e}");
    }
    assert_eq!(set("a.b=x y").value, toml::Value::String("x y".into()));
    assert_eq!(set("a.b=\"q\"").value, toml::Value::String("q".into()));
    assert_eq!(set("a.b=1e3").value, toml::Value::Float(1000.0));
}

#[test]
fn malformed_toml_gives_line_and_column() {
    let e = Config::from_toml_str("[nic]\nooo_cap = 3\nclock_ghz = = 1\n", "my.toml").unwrap_err();
    match &e {
        ConfigError::Syntax {
            origin,
            line,
            column,
            ..
        } => {
            assert_eq!((origin.as_str(), *line), ("my.toml", 3));
            assert!(*column > 1);
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("line 3"), "{e}");
    // Type and range errors in files name the field too.
    let e = Config::from_toml_str("[qp]\npmtu = \"x\"\n", "f")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`qp.pmtu`"), "{e}");
    let e = Config::from_toml_str("[qp]\nmtu = 4096\n", "f")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`qp.mtu`") && e.contains("did you mean `qp.pmtu`"),
        "{e}"
    );
}

#[test]
fn partial_files_take_baseline_for_the_rest() {
    let cfg = Config::from_toml_str("[nic]\nooo_cap = 4\n", "f").unwrap();
    assert_eq!(cfg.nic.ooo_cap, 4);
    assert_eq!(cfg.qp, QpConfig::default());
}

#[test]
fn config_show_parses_back_to_the_same_config() {
    let cases = [
        vec![],
        vec![
            set("net.link_km=10.5"),
            set("nic.qpc_manager=nonblocking"),
            set("sim.seed=42"),
        ],
        vec![
            set("net.impair.loss=0.001"),
            set("pcie.read_rtt_ns=123.456"),
            set("ddr.gbps=1e-3"),
        ],
    ];
    for ov in cases {
        let cfg = Config::resolve("baseline", &ov).unwrap();
        let text = show::render(&cfg, "baseline", &ov).unwrap();
        let back = Config::from_toml_str(&text, "show").unwrap();
        assert_eq!(back, cfg, "{text}");
        for doc in FIELDS.iter() {
            assert!(text.contains(doc.doc), "{} undocumented in show", doc.path);
        }
    }
}

#[test]
fn config_show_comment_format() {
    let text = show::render(&Config::default(), "baseline", &[]).unwrap();
    assert!(text.contains("\n[qp]\n# Attributes every QP is created with (as ibv_modify_qp would set them).\n# bytes — Path MTU: payload bytes per packet (perf -m) (default 4096; 256 | 512 | 1024 | 2048 | 4096)\npmtu = 4096\n"), "{text}");
    assert!(text.contains("[net.impair]"));
    assert!(text.contains("# link_km = (unset)"));
    // A section's own documentation says when its fields act: DCQCN's with net.cc =
    // "dcqcn" alone, the out-of-order bitmaps' with an out-of-order qp.reliability alone
    // (their field lines did not say so, and `rnic config show` printed no more).
    for (header, about) in [
        (
            "[net.dcqcn]",
            "# DCQCN's parameters (with net.cc = \"dcqcn\"",
        ),
        ("[ooo]", "# Out-of-order reliability"),
        ("[ddr]", "nic.qpc_placement = \"ddr\""),
        ("[net.ecn]", "net.ecn.enabled"),
    ] {
        let at = text.find(&format!("\n{header}\n")).expect(header) + header.len() + 2;
        let line = text[at..].lines().next().unwrap();
        assert!(
            line.starts_with("# ") && line.contains(about),
            "{header}: {line}"
        );
    }
}

#[test]
fn qp_timeout_helper() {
    let mut q = QpConfig::default();
    assert_eq!(q.ack_timeout_ns(), Some(4096.0 * 16384.0));
    q.timeout = 0;
    assert_eq!(q.ack_timeout_ns(), None);
}

#[test]
fn the_ecn_mark_point_is_enqueue_by_default_and_a_bad_one_is_named() {
    assert_eq!(Config::default().net.ecn.mark_point, EcnMarkPoint::Enqueue);
    let cfg = Config::resolve("baseline", &[set("net.ecn.mark_point=dequeue")]).unwrap();
    assert_eq!(cfg.net.ecn.mark_point, EcnMarkPoint::Dequeue);
    let e = resolve_err(&["net.ecn.mark_point=arrival"]);
    assert!(e.contains("net.ecn.mark_point"), "{e}");
    assert!(e.contains("enqueue") && e.contains("dequeue"), "{e}");
}

/// `net.topology = "a\u0000b.toml"` was taken, and a later error printed the raw NUL; an
/// optional field's wrong spelling of "unset" (`=unset`) did not say how to unset it.
#[test]
fn control_characters_in_file_names_are_refused_and_unsetting_is_explained() {
    let e = resolve_err(&["net.topology=\"a\\u0000b.toml\""]);
    assert!(
        e.contains("net.topology") && e.contains("control character") && !e.contains('\0'),
        "{e}"
    );
    let e = resolve_err(&["sim.warmup_us=unset"]);
    assert!(e.contains("--set sim.warmup_us=none unsets it"), "{e}");
    for unset in ["sim.warmup_us=none", "sim.warmup_us="] {
        Config::resolve("baseline", &[set(unset)]).unwrap();
    }
}

/// `net.topology` names a file when its value is no built-in name and ends in `.toml`: the
/// rule the outputs' check spares inputs by, read from the field's declaration.
#[test]
fn a_topology_value_names_a_file_by_the_fields_own_rule() {
    use super::schema::names_a_file;
    assert!(names_a_file("net.topology", "fabric.toml"));
    assert!(names_a_file("net.topology", "dir/two-tor.toml"));
    assert!(!names_a_file("net.topology", "star"));
    assert!(!names_a_file("net.topology", "Leaf_Spine"));
    assert!(!names_a_file("net.topology", "fabric.json"));
    assert!(!names_a_file("qp.pmtu", "x.toml"));
    assert!(!names_a_file("no.such", "x.toml"));
}

/// A numeric field's declared ends, read once for the callers that quote them (the
/// workload's core limit, `calc qd --gbps`, `--rate_limit`); other kinds have none.
#[test]
fn a_numeric_fields_declared_range_is_read_from_its_declaration() {
    use super::schema::declared_range;
    assert_eq!(declared_range("host.cores"), Some((1.0, 4096.0)));
    assert!(declared_range("eth.gbps").is_some_and(|(min, max)| min > 0.0 && max > min));
    assert_eq!(declared_range("qp.pmtu"), None);
    assert_eq!(declared_range("net.topology"), None);
    assert_eq!(declared_range("no.such"), None);
}
