//! Reads the module paths every source file of `crates/model/src` names: `use` trees and
//! inline `crate::`/`super::`/`self::`/child-module paths, with comments, strings and test
//! modules left out. A line scanner, not a parser: it sees what the code names, which is what
//! the rules are about.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// One source file: its module path (`nic/route_tx.rs` → `["nic", "route_tx"]`) and the
/// module paths its code names (each resolved from the crate root, not yet cut to a module).
pub struct SourceFile {
    pub file: String,
    pub module: Vec<String>,
    pub named_paths: Vec<Vec<String>>,
}

/// Every non-test source file under `src_dir`, sorted by path.
pub fn read_sources(src_dir: &Path) -> Vec<SourceFile> {
    non_test_files(src_dir)
        .iter()
        .map(|f| read_source(src_dir, f))
        .collect()
}

/// The source files under `src_dir` but `tests.rs` files, sorted by path.
fn non_test_files(src_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    collect_rs_files(src_dir, &mut files);
    files.sort();
    files.retain(|f| f.file_name().is_some_and(|n| n != "tests.rs"));
    files
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("source folder is readable") {
        let path = entry.expect("folder entry").path();
        if path.is_dir() {
            collect_rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn read_source(src_dir: &Path, path: &Path) -> SourceFile {
    let text = fs::read_to_string(path).expect("source file is readable");
    let relative = path.strip_prefix(src_dir).expect("under src");
    let file = relative.to_string_lossy().replace('\\', "/");
    let module = module_of_file(&file);
    let tokens = tokenize(&strip_comments_and_strings(&without_test_module(&text)));
    let children = child_modules(&tokens);
    let named_paths = named_paths(&tokens, &children)
        .into_iter()
        .filter_map(|p| resolve(&module, &p))
        .collect();
    SourceFile {
        file,
        module,
        named_paths,
    }
}

/// `lib.rs` → `[]`, `nic/mod.rs` → `["nic"]`, `nic/cq.rs` → `["nic", "cq"]`.
pub fn module_of_file(file: &str) -> Vec<String> {
    let stem = file.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text before an inline `#[cfg(test)] mod ...` (tests may import what they like).
fn without_test_module(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let test_start = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "));
    lines[..test_start.unwrap_or(lines.len())].join("\n")
}

/// Comments, string and character literals replaced by spaces (line breaks kept).
fn strip_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let skip_to = match (chars[i], chars.get(i + 1).copied()) {
            ('/', Some('/')) => end_of_line(&chars, i),
            ('/', Some('*')) => end_of_block_comment(&chars, i),
            ('"', _) => end_of_string(&chars, i + 1),
            ('r', Some('"' | '#')) if starts_raw_string(&chars, i) => end_of_raw_string(&chars, i),
            ('\'', _) => end_of_char_literal(&chars, i),
            _ => i,
        };
        if skip_to == i {
            out.push(chars[i]);
            i += 1;
        } else {
            out.extend(
                chars[i..skip_to]
                    .iter()
                    .map(|&c| if c == '\n' { c } else { ' ' }),
            );
            i = skip_to;
        }
    }
    out
}

fn end_of_line(chars: &[char], from: usize) -> usize {
    (from..chars.len())
        .find(|&j| chars[j] == '\n')
        .unwrap_or(chars.len())
}

fn end_of_block_comment(chars: &[char], from: usize) -> usize {
    (from + 2..chars.len())
        .find(|&j| chars[j - 1] == '*' && chars[j] == '/')
        .map_or(chars.len(), |j| j + 1)
}

fn end_of_string(chars: &[char], mut j: usize) -> usize {
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '"' => return j + 1,
            _ => j += 1,
        }
    }
    chars.len()
}

fn starts_raw_string(chars: &[char], i: usize) -> bool {
    let before_is_ident = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    !before_is_ident && chars.get(j) == Some(&'"')
}

fn end_of_raw_string(chars: &[char], i: usize) -> usize {
    let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
    let body = i + 2 + hashes;
    (body..chars.len())
        .find(|&j| {
            chars[j] == '"'
                && chars[j + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|&&c| c == '#')
                    .count()
                    == hashes
        })
        .map_or(chars.len(), |j| j + 1 + hashes)
}

/// A character literal (`'x'`, `'\n'`, `'\u{1F}'`); a lifetime (`'a`) is left as it is.
fn end_of_char_literal(chars: &[char], i: usize) -> usize {
    match (chars.get(i + 1), chars.get(i + 2)) {
        (Some('\\'), _) => (i + 2..chars.len())
            .find(|&j| chars[j] == '\'')
            .map_or(i, |j| j + 1),
        (Some(_), Some('\'')) => i + 3,
        _ => i,
    }
}

/// Identifiers and the punctuation a path is made of; everything else is `.`.
fn tokenize(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
            continue;
        }
        if !c.is_whitespace() {
            tokens.push(if "{},;*".contains(c) {
                c.to_string()
            } else {
                ".".into()
            });
        }
        i += 1;
    }
    tokens
}

/// The modules a file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
fn child_modules(tokens: &[String]) -> BTreeSet<String> {
    tokens
        .windows(3)
        .filter(|w| w[0] == "mod" && w[2] == ";")
        .map(|w| w[1].clone())
        .collect()
}

/// Every path the tokens name, relative as written (`crate::x`, `super::x`, `child::x`).
fn named_paths(tokens: &[String], children: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "use" {
            let end = (i..tokens.len())
                .find(|&j| tokens[j] == ";")
                .unwrap_or(tokens.len());
            let mut prefix = Vec::new();
            expand_use_tree(&tokens[i + 1..end], &mut prefix, &mut paths);
            i = end + 1;
            continue;
        }
        let starts_path = matches!(tokens[i].as_str(), "crate" | "super" | "self")
            || children.contains(&tokens[i]);
        let continued = i > 0 && tokens[i - 1] == "::";
        if starts_path && !continued && tokens.get(i + 1).is_some_and(|t| t == "::") {
            let mut path = vec![tokens[i].clone()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| t == "::")
                && tokens.get(j + 1).is_some_and(|t| is_ident(t))
            {
                path.push(tokens[j + 1].clone());
                j += 2;
            }
            paths.push(path);
            i = j;
            continue;
        }
        i += 1;
    }
    paths
        .into_iter()
        .filter(|p| matches!(p[0].as_str(), "crate" | "super" | "self") || children.contains(&p[0]))
        .collect()
}

fn is_ident(token: &str) -> bool {
    token
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Expands one `use` tree (`a::{b, c::{d, e}}`) into whole paths.
fn expand_use_tree(tokens: &[String], prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut i = 0;
    let start_len = prefix.len();
    while i < tokens.len() {
        match tokens[i].as_str() {
            "{" => {
                let close = matching_brace(tokens, i);
                for item in split_top_level(&tokens[i + 1..close]) {
                    expand_use_tree(item, prefix, out);
                }
                prefix.truncate(start_len);
                return;
            }
            "as" => break,
            "::" | "pub" | "." => {}
            "self" if !prefix.is_empty() => {}
            "*" => {}
            t => prefix.push(t.to_string()),
        }
        i += 1;
    }
    if !prefix.is_empty() {
        out.push(prefix.clone());
    }
    prefix.truncate(start_len);
}

fn matching_brace(tokens: &[String], open: usize) -> usize {
    let mut depth = 0;
    for (j, t) in tokens.iter().enumerate().skip(open) {
        match t.as_str() {
            "{" => depth += 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    tokens.len()
}

fn split_top_level(tokens: &[String]) -> Vec<&[String]> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (j, t) in tokens.iter().enumerate() {
        match t.as_str() {
            "{" => depth += 1,
            "}" => depth -= 1,
            "," if depth == 0 => {
                items.push(&tokens[start..j]);
                start = j + 1;
            }
            _ => {}
        }
    }
    items.push(&tokens[start..]);
    items
}

/// `path` as written in module `module`, from the crate root; `None` for a path
/// that leaves the crate (`std::`, `rnic_sim::`).
fn resolve(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // A child module of this file: `nic/mod.rs` → `nic::x`, `params.rs` → `params::x`.
        Some(_) => {}
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// A function and its length in lines, from its `fn` line to its closing brace.
pub struct FunctionLength {
    pub file: String,
    pub name: String,
    pub lines: usize,
}

/// Every function with a body in the non-test code under `src_dir`.
pub fn function_lengths(src_dir: &Path) -> Vec<FunctionLength> {
    let mut out = Vec::new();
    for (file, code) in non_test_code(src_dir) {
        let code: Vec<char> = code.chars().collect();
        for (name, lines) in functions_in(&code) {
            out.push(FunctionLength {
                file: file.clone(),
                name,
                lines,
            });
        }
    }
    out
}

/// `(path in src, code)` of every source file under `src_dir` but `tests.rs` files, without
/// its test module, comments and strings; sorted by path.
fn non_test_code(src_dir: &Path) -> Vec<(String, String)> {
    non_test_files(src_dir)
        .iter()
        .map(|path| {
            let text = fs::read_to_string(path).expect("source file is readable");
            let file = path
                .strip_prefix(src_dir)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            (
                file,
                strip_comments_and_strings(&without_test_module(&text)),
            )
        })
        .collect()
}

/// `(name, lines)` of each `fn` with a body in `code` (nested ones too).
fn functions_in(code: &[char]) -> Vec<(String, usize)> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for i in 0..code.len().saturating_sub(3) {
        let starts_fn = code[i..i + 3] == ['f', 'n', ' '] && (i == 0 || !is_ident(code[i - 1]));
        if !starts_fn {
            continue;
        }
        let name: String = code[i + 3..].iter().take_while(|&&c| is_ident(c)).collect();
        let Some(open) = (i..code.len()).find(|&j| code[j] == '{' || code[j] == ';') else {
            continue;
        };
        if code[open] == ';' {
            continue;
        }
        let mut depth = 0usize;
        let close = (open..code.len()).find(|&j| {
            match code[j] {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        if let Some(close) = close {
            let lines = code[i..=close].iter().filter(|&&c| c == '\n').count() + 1;
            out.push((name, lines));
        }
    }
    out
}

/// For each type with an inherent `impl` block (not a trait's) in the non-test code under
/// `src_dir`, the files that hold one: a type whose methods spread over many files is one
/// object the import graph cannot see into (every file is the same `impl`).
pub fn inherent_impl_files(
    src_dir: &Path,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut out: std::collections::BTreeMap<_, std::collections::BTreeSet<_>> = Default::default();
    for (file, code) in non_test_code(src_dir) {
        for name in inherent_impl_types(&code) {
            let key = if made_by_a_macro_here(&code, &name) {
                format!("{name} of {file}")
            } else {
                name
            };
            out.entry(key).or_default().insert(file.clone());
        }
    }
    out
}

/// Whether type `name`, which `code` has an `impl` of, is the file's own type made by a
/// macro (the wire's headers each get a `Packet` from `packet_view!`): the file neither
/// defines a type of that name in its text nor names one from elsewhere (a `use`, a glob
/// `use`, or a path ending in it). Such types of one name are as many types as files.
pub fn made_by_a_macro_here(code: &str, name: &str) -> bool {
    let tokens = tokenize(code);
    let defined = tokens.windows(2).any(|w| {
        matches!(
            w[0].as_str(),
            "struct" | "enum" | "union" | "type" | "trait"
        ) && w[1] == name
    });
    let from_a_path = tokens.windows(2).any(|w| w[0] == "::" && w[1] == name);
    let from_a_use = tokens
        .split(|t| t == ";")
        .filter(|item| item.iter().any(|t| t == "use"))
        .any(|item| item.iter().any(|t| t == name || t == "*"));
    !defined && !from_a_path && !from_a_use
}

/// The type of each `impl ... {` header in `code` that names no trait (`impl<'a> Qp<'a>`
/// gives `Qp`; `impl Trait for Qp` nothing).
pub fn inherent_impl_types(code: &str) -> Vec<String> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for (i, _) in code.match_indices("impl") {
        // An impl item starts its line (`-> impl Trait` and `x: impl Fn` do not).
        let line_start = code[..i].rfind('\n').map_or(0, |n| n + 1);
        let after = code[i + 4..].chars().next();
        if !code[line_start..i].trim().is_empty() || !after.is_some_and(|c| c == ' ' || c == '<') {
            continue;
        }
        let Some(len) = code[i..].find(['{', ';']) else {
            continue;
        };
        let header = &code[i + 4..i + len];
        if header.split_whitespace().any(|w| w == "for") || code[i + len..].starts_with(';') {
            continue;
        }
        let mut depth = 0i32;
        let rest: String = header
            .chars()
            .skip_while(|&c| {
                match c {
                    '<' => depth += 1,
                    '>' => depth -= 1,
                    _ => {}
                }
                depth > 0 || c == '>' || c.is_whitespace()
            })
            .collect();
        let path: String = rest
            .chars()
            .take_while(|&c| is_ident(c) || c == ':')
            .collect();
        if let Some(name) = path.rsplit("::").next().filter(|n| !n.is_empty()) {
            out.push(name.to_string());
        }
    }
    out
}
