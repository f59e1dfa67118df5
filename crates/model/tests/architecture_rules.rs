//! The rules of `docs/architecture.md` ("Rules of the imports"), held against the code of
//! `crates/model/src`: each rule is a row of [`RULES`], and the import graph has no cycles.

mod architecture;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use architecture::graph::{cycles, imports, imports_by_file, Import};
use architecture::scan::{
    function_lengths, inherent_impl_files, inherent_impl_types, made_by_a_macro_here, read_sources,
};

/// One rule: a module matching `from` never imports a module matching `never`, unless it
/// matches `except`. A pattern is a module (`nic/scheduler`) or a folder and everything in
/// it (`nic/**`).
struct Rule {
    doc: &'static str,
    from: &'static [&'static str],
    never: &'static [&'static str],
    except: &'static [&'static str],
}

/// The NIC's units (the components table of `docs/architecture.md`).
const NIC_UNITS: &[&str] = &[
    "nic/doorbell",
    "nic/scheduler",
    "nic/qpc_manager",
    "nic/wqe_fetch",
    "nic/translation",
    "nic/dma",
    "nic/pcie",
    "nic/ddr",
    "nic/tx_pipeline",
    "nic/rx_pipeline",
    "nic/rx_buffer",
    "nic/cq",
];

/// The NIC's stages: each owns some of the units and is one field of the `Nic`.
const NIC_STAGES: &[&str] = &["nic/mem_path", "nic/tx_path", "nic/rx_path", "nic/host_if"];

/// The rules, in the order `docs/architecture.md` states them.
const RULES: &[Rule] = &[
    Rule {
        doc:
            "1. a NIC unit imports its ports, its parameters and the sim kernel, never a neighbour \
              (the DMA row is one unit: DMA, PCIe, DDR and the read arbiter; a QPC manager owns \
              its cache; port types still defined in a unit are listed)",
        from: NIC_UNITS,
        never: &["nic", "nic/**"],
        except: &[
            "nic/ports",
            "nic/qp_table",
            "nic/unit",
            "nic/lru",
            "nic/pcie",
            "nic/ddr",
            "nic/dma_arbiter",
            "nic/qpc_cache",
            // Port types still defined in the unit that produces them: `TransJob`,
            // `TransLane` (translation) and `Channel` (qpc_manager).
            "nic/translation",
            "nic/qpc_manager",
        ],
    },
    Rule {
        doc: "2. a NIC unit never imports a paper's mechanism nor a route: mechanisms reach it \
              through the seams of nic/ports.rs (WqeAdmission, SchedQueueMirror, BsQueue)",
        from: NIC_UNITS,
        never: &["nic/mech/**", "nic/route_*", "nic/tx_path/route"],
        except: &[],
    },
    Rule {
        doc: "2a. a paper's mechanism in nic/mech/ is reached through its hooks, chosen in \
              nic/mod.rs (Nic::new): nothing else in nic/ imports it, not even the routes \
              or another mechanism",
        from: &["nic/*"],
        never: &["nic/mech/isolation/**"],
        except: &[],
    },
    Rule {
        doc: "3. the NIC sees the world only through NicCx: nothing in nic/ imports the network, \
              the application, the world or the run (the driver's WQE and CQE formats in \
              host/driver.rs are the bytes both sides agree on)",
        from: &["nic", "nic/**"],
        never: &[
            "net/**", "host/**", "world", "run", "run/**", "limits", "verdict", "result",
        ],
        except: &["host/driver"],
    },
    Rule {
        doc: "4. the application and the connection managers know no NIC internals: host/ \
              imports of nic/ only the NIC's side of the seam (nic/cx.rs)",
        from: &["host/**"],
        never: &["nic", "nic/**", "world", "run", "run/**"],
        except: &["nic/cx"],
    },
    Rule {
        doc: "5. the network knows frames only as bytes: net/ imports nothing of the NIC but the \
              Wire it implements (nic/cx.rs), nothing of the hosts, the world or the run",
        from: &["net/**"],
        never: &["nic", "nic/**", "host/**", "world", "run", "run/**"],
        except: &["nic/cx"],
    },
    Rule {
        doc: "6. the generic link element names no element (each element imports it, not back)",
        from: &["net/element"],
        never: &["net/**"],
        except: &[],
    },
    Rule {
        doc: "7. params.rs converts a config into picosecond parameters: it imports the config \
              and nothing of the model",
        from: &["params"],
        never: &["**"],
        except: &["config"],
    },
    Rule {
        doc: "8. the config declares fields and profiles and imports nothing of the model",
        from: &["config"],
        never: &["**"],
        except: &[],
    },
    Rule {
        doc: "9. the world only dispatches, and only the run builds and runs it: nothing below \
              imports the world or the run",
        from: &["**"],
        never: &["world", "run", "run/**"],
        except: &[],
    },
    Rule {
        doc: "10. a mechanism of nic/mech/ is reached through its hook and its router's \
              functions: nothing in nic/ outside its folder imports its internals (resource \
              prefetching: nic/mech/prefetch/hook, nic/mech/prefetch/route)",
        from: &["nic", "nic/**"],
        never: &["nic/mech/prefetch/**"],
        except: &["nic/mech/prefetch/hook", "nic/mech/prefetch/route"],
    },
    Rule {
        doc: "11. congestion control is reached through its hook and its router's functions: \
              nothing in nic/ outside its folder imports its internals (nic/mech/cc/hook, \
              nic/mech/cc/route)",
        from: &["nic", "nic/**"],
        never: &["nic/mech/cc/**"],
        except: &["nic/mech/cc/hook", "nic/mech/cc/route"],
    },
    Rule {
        doc: "12. csRNA (nic/mech/csrna) is reached through its two seams, each chosen by one \
              field (SEAMS): the QPC manager's kinds (nic.qpc_manager) and the scheduler's \
              descriptor path (nic.latency_hiding); nothing else in nic/ imports it",
        from: &["nic", "nic/**"],
        never: &["nic/mech/csrna/**"],
        except: &[],
    },
    Rule {
        doc: "13. ORNIC's NIC-side folder (nic/mech/ornic: the paper's bitmap and ACK test \
              benches) has no hook: the NIC reaches ORNIC through the transport's reliability \
              mode (rnic_transport::ooo), so nothing in nic/ imports the folder",
        from: &["nic", "nic/**"],
        never: &["nic/mech/ornic/**"],
        except: &[],
    },
    Rule {
        doc: "14. a stage of the NIC (the memory path, the transmit path, the receive path, the \
              host interface) owns its units and is handed its mechanisms' hooks by Nic::new: \
              it never imports the Nic, a route or another stage",
        from: NIC_STAGES,
        never: &[
            "nic",
            "nic/route_*",
            "nic/tx_path/route",
            "nic/mem_path",
            "nic/tx_path",
            "nic/rx_path",
            "nic/host_if",
        ],
        except: &[],
    },
    Rule {
        doc: "15. the TX route's steps (nic/tx_path/route) are functions of the parts they \
              need, not methods of the Nic: it never imports the Nic or another route; what a \
              step asks of the rest of the NIC comes back as a value the Nic routes \
              (nic/route_tx)",
        from: &["nic/tx_path/route"],
        never: &["nic", "nic/route_*"],
        except: &[],
    },
];

/// The seams through which a mechanism that is not behind a hook of `nic/ports.rs` is
/// reached, as (importer, mechanism module) pairs: every rule lets these through, and
/// nothing else. csRNA: the QPC manager's kinds (`nic/qpc_manager/any.rs` names the
/// non-blocking manager, `Nic::new` builds it from `nic.qpc_manager`, the manager's seam
/// re-exports the requester `Channel`s), and the scheduler route's descriptor path
/// (`nic.latency_hiding`).
const SEAMS: &[(&str, &str)] = &[
    ("nic/qpc_manager/any", "nic/mech/csrna/nonblocking"),
    ("nic", "nic/mech/csrna/nonblocking"),
    ("nic/qpc_manager", "nic/mech/csrna"),
    ("nic/tx_path/route", "nic/mech/csrna/latency_hiding"),
];

/// Whether module `unit` matches `pattern` (`nic/**`: the folder and everything in it;
/// `**`: every module; `nic/route_*`: every module of that prefix).
fn matches(unit: &str, pattern: &str) -> bool {
    if pattern == "**" {
        return true;
    }
    if let Some(folder) = pattern.strip_suffix("/**") {
        return unit == folder || unit.starts_with(&format!("{folder}/"));
    }
    if let Some(prefix) = pattern.strip_suffix('*') {
        return unit.starts_with(prefix);
    }
    unit == pattern
}

/// Rule 9 exempts the run and the crate root (`lib.rs` re-exports the run's entry points);
/// the modules of one mechanism's folder may import each other; a mechanism's [`SEAMS`] are
/// imports every rule allows; nothing else is exempt.
fn exempt(rule: &Rule, import: &Import) -> bool {
    let run_or_root = matches(&import.from, "run/**") || import.from == "lib";
    let seam = SEAMS.contains(&(import.from.as_str(), import.to.as_str()));
    (rule.from == ["**"] && run_or_root) || within_one_mechanism(import) || seam
}

/// Whether both ends of `import` are in the same mechanism's folder (`nic/mech/NAME/...`).
fn within_one_mechanism(import: &Import) -> bool {
    let mechanism = |unit: &str| {
        let rest = unit.strip_prefix("nic/mech/")?;
        Some(rest.split('/').next().unwrap_or(rest).to_string())
    };
    mechanism(&import.from).is_some_and(|m| Some(m) == mechanism(&import.to))
}

fn broken_rules(imports: &[Import]) -> Vec<String> {
    let mut out = Vec::new();
    for rule in RULES {
        for i in imports {
            let applies = rule.from.iter().any(|p| matches(&i.from, p)) && !exempt(rule, i);
            let forbidden = rule.never.iter().any(|p| matches(&i.to, p))
                && !rule.except.iter().any(|p| matches(&i.to, p));
            if applies && forbidden {
                out.push(format!(
                    "{}\n    {}: {} -> {} ({})",
                    rule.doc, i.file, i.from, i.to, i.path
                ));
            }
        }
    }
    out
}

#[test]
fn every_rule_of_the_architecture_holds() {
    let broken = broken_rules(&model_imports());
    assert!(
        broken.is_empty(),
        "imports that break docs/architecture.md:\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_import_graph_has_no_cycles() {
    // A mechanism's folder is one module to the rest of the crate (its files are told apart
    // only so the rules can name its hook): imports among its own files are not cycles.
    let between_modules: Vec<Import> = model_imports()
        .into_iter()
        .filter(|i| !within_one_mechanism(i))
        .collect();
    assert_eq!(
        cycles(&between_modules),
        Vec::<Vec<String>>::new(),
        "import cycles among the modules of crates/model/src"
    );
}

/// The cycle check cannot pass by seeing nothing: fed the import that closed the last
/// cycle (PFC's state naming the `Network` that holds it), it finds the cycle.
#[test]
fn the_cycle_check_finds_a_cycle() {
    let mut imports = model_imports();
    assert!(
        imports
            .iter()
            .any(|i| i.from == "net/graph" && i.to == "net/pfc"),
        "the network holds the PFC state"
    );
    imports.push(Import {
        from: "net/pfc".into(),
        to: "net/graph".into(),
        file: "(test)".into(),
        path: "(test)".into(),
    });
    let found = cycles(&imports);
    assert!(
        found
            .iter()
            .any(|c| c.contains(&"net/graph".to_string()) && c.contains(&"net/pfc".to_string())),
        "no cycle through net/graph and net/pfc in {found:?}"
    );
}

/// The rules cannot pass by seeing nothing: the scanner finds imports of every kind the
/// rules are about (a `use` tree, an inline path, a `super::` path).
#[test]
fn the_scanner_sees_the_imports() {
    let imports = model_imports();
    let has = |from: &str, to: &str| imports.iter().any(|i| i.from == from && i.to == to);
    assert!(has("world", "nic"), "use super::nic::Nic in world.rs");
    assert!(
        has("nic/scheduler", "nic/ports"),
        "use super::ports::{{...}} in nic/scheduler.rs"
    );
    assert!(
        has("nic/rx_buffer", "params"),
        "crate::params::data_tlps_wire_bytes inline"
    );
    assert!(
        has("net/topology", "net/graph"),
        "use super::graph::{{...}}"
    );
    assert!(
        has("nic", "nic/mech/isolation"),
        "use mech::isolation::{{...}} in nic/mod.rs"
    );
    assert!(
        has("nic/qpc_manager/any", "nic/mech/csrna/nonblocking"),
        "the QPC manager's kinds name csRNA's manager, seen apart from the manager's seam"
    );
    assert!(
        has("nic/route_tx", "nic/tx_path/route") && has("nic/tx_path/route", "nic/tx_path"),
        "the TX route's steps are a module of their own beside the transmit path's stage"
    );
    assert!(imports.len() > 300, "only {} imports seen", imports.len());
}

/// Each rule catches what it is for: the imports the restructuring removed, fed back in.
#[test]
fn the_rules_catch_the_imports_they_forbid() {
    let old = [
        ("nic/scheduler", "nic/mech/isolation"),
        ("nic/tx_pipeline", "nic/mech/isolation"),
        ("nic/route_tx", "nic/mech/isolation"),
        ("nic/route_mem", "nic/mech/isolation"),
        ("nic/scheduler", "nic/mech/prefetch/queue"),
        ("nic", "nic/mech/prefetch/queue"),
        ("nic/route_mem", "nic/mech/prefetch/ledger"),
        ("nic/route_tx", "nic/mech/cc/dcqcn"),
        ("nic", "nic/mech/cc/rp"),
        ("host/cm", "nic"),
        ("net/pfc", "nic/pcie"),
        ("net/port", "nic/pcie"),
        ("params", "nic/rx_buffer"),
        ("params", "nic/mech/isolation"),
        ("params", "host/steady"),
        ("net/graph", "world"),
        ("limits", "run"),
        ("net/element", "net/wan_accel"),
        // csRNA's parts before they moved into nic/mech/csrna, reached other than by a seam.
        ("nic/scheduler", "nic/mech/csrna/latency_hiding"),
        ("nic/qpc_manager", "nic/mech/csrna/nonblocking"),
        ("nic/qpc_manager", "nic/mech/csrna/manager"),
        ("nic/wqe_fetch", "nic/mech/csrna"),
        ("nic/route_mem", "nic/mech/csrna/nonblocking"),
        ("nic/mech/prefetch/route", "nic/mech/csrna/latency_hiding"),
        ("nic", "nic/mech/csrna/latency_hiding"),
        ("nic/route_tx", "nic/mech/ornic"),
        ("nic/rx_translate", "nic/mech/ornic/bitmap_bench"),
        // The TX route's steps when they were methods of the Nic, and the stage or a unit
        // calling them.
        ("nic/tx_path/route", "nic"),
        ("nic/tx_path/route", "nic/route_mem"),
        ("nic/tx_path/route", "nic/mech/isolation"),
        ("nic/tx_path", "nic/tx_path/route"),
        ("nic/tx_pipeline", "nic/tx_path/route"),
    ];
    for (from, to) in old {
        let import = Import {
            from: from.into(),
            to: to.into(),
            file: "(test)".into(),
            path: "(test)".into(),
        };
        assert!(
            !broken_rules(&[import]).is_empty(),
            "{from} -> {to} passes the rules"
        );
    }
}

/// Longest a function outside tests may be, lines.
const MAX_FUNCTION_LINES: usize = 150;

/// Every function over [`MAX_FUNCTION_LINES`] in the `src/` of every crate of the workspace,
/// as `(crate/path in src, name, lines)`: the rule holds for all crates, not only this one.
fn long_functions() -> Vec<(String, String, usize)> {
    workspace_crates()
        .into_iter()
        .flat_map(|name| {
            function_lengths(&crates_dir().join(&name).join("src"))
                .into_iter()
                .filter(|f| f.lines > MAX_FUNCTION_LINES)
                .map(move |f| (format!("{name}/{}", f.file), f.name, f.lines))
        })
        .collect()
}

#[test]
fn no_function_outside_tests_is_longer_than_150_lines() {
    let long = long_functions();
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into named steps): {long:?}"
    );
}

/// The rule above cannot pass by seeing nothing: the scanner finds the functions of the
/// crate, the run's build among them, and measures them.
#[test]
fn the_length_scanner_sees_the_functions() {
    let lengths = function_lengths(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        lengths.len() > 1000,
        "only {} functions seen",
        lengths.len()
    );
    let build_flows = lengths
        .iter()
        .find(|f| f.file == "run/build/mod.rs" && f.name == "build_flows")
        .expect("the scanner sees run/build/mod.rs::build_flows");
    assert!(
        (40..=MAX_FUNCTION_LINES).contains(&build_flows.lines),
        "build_flows measured {} lines",
        build_flows.lines
    );
}

/// Most files one type may have inherent `impl` blocks in: its own, and at most two parts
/// that are too close to it to own their state (the queue pair's requester and responder).
/// A reliability mode, a service or a step of a test is a part with a type (or a function
/// of the parts it needs) of its own, not one more `impl Qp` or `impl Perftest` file.
const MAX_IMPL_FILES_PER_TYPE: usize = 3;

/// The crates of the workspace with a `src/` (beside this one, in `crates/`), sorted.
fn workspace_crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(crates_dir())
        .expect("crates/ is readable")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("src").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() > 1, "found the workspace's crates: {names:?}");
    names
}

fn crates_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the model crate sits in crates/")
}

/// For each type with inherent `impl` blocks in the `src/` of a crate of the workspace,
/// keyed `crate/Type` (two crates may each have a type of one name), the files that hold
/// one.
fn inherent_impl_files_of_workspace() -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for name in workspace_crates() {
        for (ty, files) in inherent_impl_files(&crates_dir().join(&name).join("src")) {
            out.insert(format!("{name}/{ty}"), files);
        }
    }
    out
}

#[test]
fn no_type_has_inherent_impl_blocks_in_more_than_3_files() {
    let spread = inherent_impl_files_of_workspace();
    // A header's `Packet` of the wire, made by a macro in each header's file, is a type of
    // its own in each.
    for seen in [
        "transport/Qp",
        "model/Perftest",
        "model/Nic",
        "wire/Packet of bth.rs",
    ] {
        assert!(
            spread.contains_key(seen),
            "the scanner sees `impl {seen}`: {spread:?}"
        );
    }
    let wide: Vec<_> = spread
        .iter()
        .filter(|(_, files)| files.len() > MAX_IMPL_FILES_PER_TYPE)
        .collect();
    assert!(
        wide.is_empty(),
        "types with impl blocks in over {MAX_IMPL_FILES_PER_TYPE} files: {wide:?}"
    );
}

/// The routes that are functions of the parts they need, not methods of the `Nic` (the
/// receive route, the transmit route of rule 15, and the routers of rules 10 and 11): what a step touches is in its signature, and what it
/// asks of the rest of the NIC comes back as a value the `Nic` routes.
const ROUTES_OF_PARTS: &[&str] = &[
    "nic/route_rx.rs",
    "nic/tx_path/route.rs",
    "nic/mech/prefetch/route.rs",
    "nic/mech/cc/route.rs",
];

#[test]
fn the_routes_of_parts_have_no_impl_nic() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let spread = inherent_impl_files(&src);
    let nic = spread.get("Nic").expect("the scanner sees `impl Nic`");
    assert!(
        nic.contains("nic/mod.rs"),
        "the scanner sees `impl Nic` in nic/mod.rs: {nic:?}"
    );
    for route in ROUTES_OF_PARTS {
        assert!(src.join(route).is_file(), "{route} is a file of src/");
        assert!(!nic.contains(*route), "{route} has an `impl Nic` block");
    }
}

/// The transport's import graph, a file a module, has no cycles: the queue pair holds its
/// parts' state (`requester/state.rs`, `responder/state.rs`, `ooo/qp_state.rs`), which
/// imports nothing of the QP, and the parts' behaviour imports the QP. A file naming a
/// sibling through its folder's re-exports (`ooo/bitmap.rs` → `crate::ooo::BlockPool`) is
/// not an import of the folder's `mod.rs`, and is left out.
#[test]
fn the_transport_import_graph_has_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../transport/src");
    let mut imports = imports_by_file(&read_sources(&src));
    imports.retain(|i| !i.from.starts_with(&format!("{}/", i.to)));
    let qp_state = |i: &Import| i.from == "qp" && i.to == "requester/state";
    assert!(
        imports.iter().any(qp_state),
        "the scanner sees the QP's imports"
    );
    assert_eq!(cycles(&imports), Vec::<Vec<String>>::new());
}

/// The impl scanner tells an inherent block from a trait's and from `impl Trait` in a
/// signature, so the rule above cannot pass by seeing nothing or fail on the wrong things.
#[test]
fn the_impl_scanner_finds_inherent_blocks_only() {
    let code = "impl Qp {\n    fn f() -> impl Iterator<Item = u8> {\n    }\n}\n\
                impl<'a> FrameSink<'a> {\n}\nimpl Drop for Qp {\n}\n\
                impl crate::x::Part {\n}\n";
    assert_eq!(inherent_impl_types(code), ["Qp", "FrameSink", "Part"]);
}

/// A type of one name is one type (its blocks in several files count together) unless each
/// file makes its own with a macro: a file that defines the type, or names it from
/// elsewhere, extends the crate's one type of that name.
#[test]
fn the_impl_scanner_tells_a_type_made_in_its_file_by_a_macro() {
    let header = "packet_view! {\n    \"BTH\"\n}\nimpl<T: AsRef<[u8]>> Packet<T> {\n}\n";
    assert!(made_by_a_macro_here(header, "Packet"));
    for extends in [
        "use super::Perftest;\nimpl Perftest {\n}\n",
        "use super::*;\nimpl Perftest {\n}\n",
        "pub struct Perftest {}\nimpl Perftest {\n}\n",
        "impl crate::host::Perftest {\n}\n",
    ] {
        assert!(!made_by_a_macro_here(extends, "Perftest"), "{extends}");
    }
}

fn model_imports() -> Vec<Import> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    imports(&read_sources(&src))
}

/// `cargo test -p rnic-model --test architecture_rules -- --ignored --nocapture print_imports`
/// prints the graph: one line per pair of modules, with a file and path that ties them.
#[test]
#[ignore]
fn print_imports() {
    let mut seen = std::collections::BTreeMap::new();
    for i in model_imports() {
        seen.entry((i.from.clone(), i.to.clone())).or_insert(i);
    }
    for ((from, to), i) in &seen {
        println!("{from} -> {to}    ({}: {})", i.file, i.path);
    }
    println!("cycles: {:?}", cycles(&model_imports()));
}
