//! The import graph of `crates/model/src` at the granularity `docs/architecture.md` uses: a
//! file of `src/`, `nic/`, `net/`, `host/` or `run/` is one module, a folder below those
//! (`net/pfc/`, `host/cm/`) is one module, and so are `config/` and `params/` with
//! `params.rs`; a mechanism's folder `nic/mech/NAME/` is a folder of modules.

use std::collections::{BTreeMap, BTreeSet};

use super::scan::SourceFile;

/// Folders whose files are modules of their own (one level down; deeper folders are one).
const FOLDERS_OF_MODULES: [&str; 4] = ["nic", "net", "host", "run"];

/// The folder of the papers' mechanisms: each mechanism's folder below it is a folder of
/// modules, so that its hook (what the NIC holds and calls) and its router (an `impl Nic`,
/// like `nic/route_*.rs`) are modules of their own and a rule can tell them apart.
const MECHANISMS: [&str; 2] = ["nic", "mech"];

/// Seams that choose an implementation by one config field and name a mechanism's, each a
/// module of its own although it sits in a folder that is one: the QPC manager's kinds
/// (`nic/qpc_manager/any.rs` names csRNA's non-blocking manager, which implements the
/// manager trait of `nic/qpc_manager/mod.rs`), as `nic/mod.rs` (`Nic::new`) chooses hooks.
const CHOOSERS: [&str; 1] = ["nic/qpc_manager/any"];

/// Routers of a stage, each a module of its own although it sits in the stage's folder: the
/// TX route's steps (`nic/tx_path/route.rs`, functions of the parts they need, which drive
/// the transmit path and name the memory path and the mechanisms' hooks the stage does not).
const ROUTERS: [&str; 1] = ["nic/tx_path/route"];

/// One import: `from` names something of `to`, in `file` (as `path`).
#[derive(Debug, Clone)]
pub struct Import {
    pub from: String,
    pub to: String,
    pub file: String,
    pub path: String,
}

/// The module (in the doc's granularity) a crate module path belongs to: `host/cm/modify`
/// → `host/cm`, `nic/mech/prefetch/hook`, `nic/qpc_manager/any` and `nic/tx_path/route` →
/// themselves, `config/schema` → `config`, `world` → `world`, the crate root → `lib`.
pub fn unit_of(module: &[String]) -> String {
    let joined = module.join("/");
    if CHOOSERS.contains(&joined.as_str()) || ROUTERS.contains(&joined.as_str()) {
        return joined;
    }
    match module.first() {
        None => "lib".into(),
        Some(_) if module.starts_with(&MECHANISMS.map(String::from)) => {
            module[..module.len().min(4)].join("/")
        }
        Some(top) if FOLDERS_OF_MODULES.contains(&top.as_str()) => {
            module[..module.len().min(2)].join("/")
        }
        Some(top) => top.clone(),
    }
}

/// Every import between two different modules, in file order.
pub fn imports(sources: &[SourceFile]) -> Vec<Import> {
    imports_between(sources, unit_of)
}

/// Every import between two different files (`qp/mod.rs` is `qp`, `lib.rs` is `lib`): the
/// granularity of a crate whose folders hold a type's state apart from its behaviour (the
/// transport's `requester/state.rs` beside `requester/mod.rs`).
pub fn imports_by_file(sources: &[SourceFile]) -> Vec<Import> {
    let file_unit = |module: &[String]| {
        if module.is_empty() {
            "lib".to_string()
        } else {
            module.join("/")
        }
    };
    imports_between(sources, file_unit)
}

/// Every import between two different units of `unit`, in file order.
fn imports_between(sources: &[SourceFile], unit: impl Fn(&[String]) -> String) -> Vec<Import> {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let mut out = Vec::new();
    for source in sources {
        let from = unit(&source.module);
        for path in &source.named_paths {
            let to = unit(&longest_module_prefix(&modules, path));
            if to != from && to != "lib" {
                out.push(Import {
                    from: from.clone(),
                    to,
                    file: source.file.clone(),
                    path: path.join("::"),
                });
            }
        }
    }
    out
}

fn longest_module_prefix(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Vec<String> {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// The cycles of the graph: each strongly connected set of two or more modules, sorted.
pub fn cycles(imports: &[Import]) -> Vec<Vec<String>> {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for i in imports {
        edges.entry(&i.from).or_default().insert(&i.to);
        edges.entry(&i.to).or_default();
    }
    let nodes: Vec<&str> = edges.keys().copied().collect();
    let reach: BTreeMap<&str, BTreeSet<&str>> =
        nodes.iter().map(|&n| (n, reachable(&edges, n))).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for &n in &nodes {
        if seen.contains(n) {
            continue;
        }
        let component: Vec<String> = nodes
            .iter()
            .filter(|&&m| reach[n].contains(m) && reach[m].contains(n))
            .map(|m| m.to_string())
            .collect();
        if component.len() > 1 {
            seen.extend(
                component
                    .iter()
                    .map(|c| nodes[nodes.iter().position(|x| x == c).unwrap()]),
            );
            out.push(component);
        }
    }
    out
}

/// The modules reachable from `start` by one or more imports.
fn reachable<'a>(
    edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    start: &'a str,
) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = edges[start].iter().copied().collect();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(edges[n].iter().copied());
        }
    }
    seen
}
