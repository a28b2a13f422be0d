//! The crate's layers and rooms, checked from its source:
//! - a file references (`crate::…`, `super::…`, `self::…`, a bare `child::…`, or a serde
//!   `with = "crate::…"` string) only its own layer and those below, and the top-level folders
//!   form no import circle;
//! - the files (and sub-folders) of one folder form no import circle either;
//! - no file holds more than 700 lines before its tests, no folder more than 10 `.rs` files;
//! - docs/design.md's Layout block names every file of src/.
//!
//! See docs/design.md ("Layers", "Layout") for what each layer and folder is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules, bottom to top; modules on one line share a layer.
const LAYERS: &[&[&str]] = &[
    &["data_error", "data"],
    &["sim"],
    &["llm"],
    &["memory"],
    &["agent"],
    &["cognition"],
    &["import"],
    &["play"],
    &["config"],
    &["save"],
    &["bench", "headless", "lib"],
    &["lab"],
    &["game"],
    &["cli"],
    &["main"],
];

/// Most lines a file may hold before its `#[cfg(test)]` module.
const MOST_LINES: usize = 700;

/// Most `.rs` files a folder may hold directly (its mod.rs included).
const MOST_FILES: usize = 10;

/// Folders where the circle check counts a folder's mod.rs as a node like its other files, so
/// that nothing in them reaches back up into mod.rs (each applies to every folder under it too).
/// Elsewhere mod.rs is left out: it may declare and call its children, and they may use what it
/// defines.
const STRICT: &[&str] = &["cognition"];

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// A reference from one file to a module.
#[derive(Debug, Clone)]
struct Reference {
    /// The file, as `src/a/b.rs`.
    file: String,
    line: usize,
    /// Whether it stands in a `#[cfg(test)]` module.
    test: bool,
    /// The file's top-level module ([`layer_of`]).
    layer: String,
    /// The file's module path ([`module_path`]).
    from: Vec<String>,
    /// The module referenced: the longest start of the path named that is a module of the tree
    /// (`crate::sim::map::WorldMap` → [sim, map]; an item of the crate root → []).
    to: Vec<String>,
}

impl Reference {
    /// The top-level module referenced (an item of the crate root belongs to lib).
    fn to_layer(&self) -> &str {
        self.to.first().map_or("lib", String::as_str)
    }

    /// Where it stands, as `src/a/b.rs:12`, with ` (test)` if in a test module.
    fn witness(&self) -> String {
        let test = if self.test { " (test)" } else { "" };
        format!("{}:{}{test}", self.file, self.line)
    }
}

/// The file's module path (`src/a/b.rs` → [a, b], `src/a/mod.rs` → [a], `src/lib.rs` → []).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem);
    }
    parts
}

/// The top-level module a file belongs to.
fn layer_of(rel: &Path) -> String {
    let first = rel
        .iter()
        .next()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

/// Code with comments removed and string literals blanked (newlines kept, so offsets keep their
/// lines), and the string literals with their line and the attribute key they are the value of
/// (`with` in `#[serde(with = "…")]`), if any.
fn strip(src: &str) -> (String, Vec<(usize, String, String)>) {
    let c: Vec<char> = src.chars().collect();
    let mut code = String::with_capacity(src.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                        code.push('\n');
                    }
                    i += 1;
                }
            }
        } else if ch == '"'
            || (ch == 'r'
                && matches!(next, Some('"') | Some('#'))
                && !c
                    .get(i.wrapping_sub(1))
                    .is_some_and(|p| p.is_alphanumeric() || *p == '_'))
        {
            // A string: plain ("…" with escapes) or raw (r"…", r#"…"#).
            let start_line = line;
            let key = key_before(&code);
            let mut text = String::new();
            if ch == 'r' {
                let mut hashes = 0;
                i += 1;
                while c.get(i) == Some(&'#') {
                    hashes += 1;
                    i += 1;
                }
                if c.get(i) != Some(&'"') {
                    code.push('r');
                    continue;
                }
                i += 1;
                while i < c.len() {
                    if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                        i += 1 + hashes;
                        break;
                    }
                    if c[i] == '\n' {
                        line += 1;
                    }
                    text.push(c[i]);
                    code.push(blank(c[i]));
                    i += 1;
                }
            } else {
                i += 1;
                while i < c.len() && c[i] != '"' {
                    if c[i] == '\\' {
                        text.push(c[i]);
                        code.push(' ');
                        i += 1;
                    }
                    if let Some(&x) = c.get(i) {
                        if x == '\n' {
                            line += 1;
                        }
                        text.push(x);
                        code.push(blank(x));
                    }
                    i += 1;
                }
                i += 1;
            }
            code.push_str("\"\"");
            strings.push((start_line, text, key));
        } else if ch == '\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 3;
                while j < c.len() && c[j] != '\'' && c[j] != '\n' {
                    j += 1;
                }
                i = j + 1;
                code.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                code.push_str("' '");
            } else {
                code.push(ch);
                i += 1;
            }
        } else {
            if ch == '\n' {
                line += 1;
            }
            code.push(ch);
            i += 1;
        }
    }
    (code, strings)
}

/// The `key` of a `key = "…"` whose string starts where `code` ends ("" if none).
fn key_before(code: &str) -> String {
    let t = code.trim_end();
    let Some(t) = t.strip_suffix('=') else {
        return String::new();
    };
    let t = t.trim_end();
    let key: String = t.chars().rev().take_while(|c| is_ident(*c)).collect();
    key.chars().rev().collect()
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Where the identifier starting at `i` ends.
fn ident_end(code: &[char], i: usize) -> usize {
    let mut k = i;
    while k < code.len() && is_ident(code[k]) {
        k += 1;
    }
    k
}

/// Where the white space starting at `i` ends.
fn skip_space(code: &[char], i: usize) -> usize {
    let mut k = i;
    while k < code.len() && code[k].is_whitespace() {
        k += 1;
    }
    k
}

/// Whether `code` holds `s` at `i`.
fn at(code: &[char], i: usize, s: &str) -> bool {
    s.chars()
        .enumerate()
        .all(|(k, ch)| code.get(i + k) == Some(&ch))
}

/// The offset of the `}` that closes the `{` at `open` (the end of `code` if none does).
fn closing_brace(code: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (k, &ch) in code.iter().enumerate().skip(open) {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The spans of the comma-separated items of the group from the `{` at `open` to the `}` at
/// `close` (empty items left out).
fn group_items(code: &[char], open: usize, close: usize) -> Vec<(usize, usize)> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut start = open + 1;
    for (k, &ch) in code.iter().enumerate().take(close).skip(open + 1) {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push((start, k));
                start = k + 1;
            }
            _ => {}
        }
    }
    items.push((start, close));
    items.retain(|&(a, b)| code[a..b].iter().any(|c| !c.is_whitespace()));
    items
}

/// The paths the path at `i` names, with its `{…}` groups expanded, however nested
/// (`crate::{a::b, c::{d, e}}` → [crate, a, b], [crate, c, d], [crate, c, e]), and the offset
/// just past it. A path ends at anything but `::` after a segment (`;`, `as`, `(`, `<`, a `*`).
fn paths_at(code: &[char], i: usize) -> (Vec<Vec<String>>, usize) {
    let mut segments: Vec<String> = Vec::new();
    let mut j = skip_space(code, i);
    loop {
        if code.get(j) == Some(&'{') {
            let close = closing_brace(code, j);
            let mut paths: Vec<Vec<String>> = Vec::new();
            for (a, b) in group_items(code, j, close) {
                for item in paths_at(&code[..b], a).0 {
                    paths.push(segments.iter().cloned().chain(item).collect());
                }
            }
            return (paths, (close + 1).min(code.len()));
        }
        let end = ident_end(code, j);
        if end == j {
            return (vec![segments], j);
        }
        segments.push(code[j..end].iter().collect());
        let after = skip_space(code, end);
        if !at(code, after, "::") {
            return (vec![segments], end);
        }
        j = skip_space(code, after + 2);
    }
}

/// The full path (modules, then perhaps items) a path names in the file of module `base`, read
/// from module `here` (`base` and the inline modules around the path): `crate::…` from the crate
/// root, `self::…` from `here`, each `super::` one level above, and a bare `child::…` from `base`
/// (a test module's `use super::*` brings the file's children in too). A trailing `self` or the
/// items after the modules do no harm: the reference's target is the longest module it starts
/// with ([`longest_module`]).
fn resolve(path: &[String], base: &[String], here: &[String]) -> Vec<String> {
    let (mut full, rest): (Vec<String>, &[String]) = match path.first().map(String::as_str) {
        Some("crate") => (Vec::new(), &path[1..]),
        Some("self") => (here.to_vec(), &path[1..]),
        Some("super") => {
            let ups = path.iter().take_while(|s| s.as_str() == "super").count();
            (
                here[..here.len().saturating_sub(ups)].to_vec(),
                &path[ups..],
            )
        }
        _ => (base.to_vec(), path),
    };
    full.extend_from_slice(rest);
    full
}

/// The longest start of `full` that is one of `modules` (the crate root, [], if none is).
fn longest_module(full: &[String], modules: &BTreeSet<Vec<String>>) -> Vec<String> {
    (0..=full.len())
        .rev()
        .map(|k| full[..k].to_vec())
        .find(|p| modules.contains(p))
        .unwrap_or_default()
}

/// Whether the item whose `mod` keyword stands at `at_mod` carries `#[cfg(test)]` (or
/// `#[cfg(all(test, …))]`): whether that attribute stands between the `;`, `{` or `}` before the
/// keyword and it.
fn under_cfg_test(code: &[char], at_mod: usize) -> bool {
    let start = code[..at_mod]
        .iter()
        .rposition(|&c| matches!(c, ';' | '{' | '}'))
        .map_or(0, |k| k + 1);
    let attributes: String = code[start..at_mod]
        .iter()
        .filter(|c| !c.is_whitespace())
        .collect();
    attributes.contains("#[cfg(test)]") || attributes.contains("#[cfg(all(test,")
}

/// Every reference of one file to a module, its own included (`modules`: the module paths of the
/// tree). A reference is a path that starts with `crate`, `super`, `self` or, bare, a child
/// module of the file's module (`pending::take` in cognition/mod.rs; not after `::`, and only
/// when a name, `{` or `*` follows), in code or in a serde `with = "crate::…"` string; a group
/// `{…}` gives one reference per path it names, all on the line of the path's start.
fn references_of(root: &Path, file: &Path, modules: &BTreeSet<Vec<String>>) -> Vec<Reference> {
    let rel = file.strip_prefix(root).unwrap();
    let name = format!("src/{}", rel.display());
    let layer = layer_of(rel);
    let base = module_path(rel);
    // The child modules of the file's module: a path may start with one of them bare.
    let children: BTreeSet<&str> = modules
        .iter()
        .filter(|m| m.len() == base.len() + 1 && m.starts_with(&base))
        .map(|m| m[base.len()].as_str())
        .collect();
    let src = std::fs::read_to_string(file).unwrap();
    let (code, strings) = strip(&src);
    let chars: Vec<char> = code.chars().collect();
    let mut line_at = Vec::with_capacity(chars.len());
    let mut line = 1;
    for ch in &chars {
        line_at.push(line);
        if *ch == '\n' {
            line += 1;
        }
    }
    let mut out = Vec::new();
    let mut push = |line: usize, test: bool, full: Vec<String>| {
        out.push(Reference {
            file: name.clone(),
            line,
            test,
            layer: layer.clone(),
            from: base.clone(),
            to: longest_module(&full, modules),
        });
    };
    // Inline modules (`mod tests { … }`) deepen the path `self::` and `super::` start from, and
    // those under `#[cfg(test)]` make the references in them test ones: (depth, name, test).
    let mut inline: Vec<(usize, String, bool)> = Vec::new();
    // Per line: whether it lies in a test module (for the strings, read apart).
    let mut test_line = vec![false; line + 1];
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '{' {
            depth += 1;
        } else if ch == '}' {
            depth = depth.saturating_sub(1);
            while inline.last().is_some_and(|(d, _, _)| *d > depth) {
                inline.pop();
            }
        }
        let test = inline.iter().any(|(_, _, t)| *t);
        test_line[line_at[i]] |= test;
        if !is_ident(ch) || (i > 0 && is_ident(chars[i - 1])) {
            i += 1;
            continue;
        }
        // A word: `mod x {`, the start of a path, or neither.
        let end = ident_end(&chars, i);
        let word: String = chars[i..end].iter().collect();
        let head = matches!(word.as_str(), "crate" | "super" | "self")
            || (children.contains(word.as_str())
                && (i < 2 || !at(&chars, i - 2, "::"))
                && chars
                    .get(end + 2)
                    .is_some_and(|c| is_ident(*c) || *c == '{' || *c == '*'));
        if word == "mod" {
            let k0 = skip_space(&chars, end);
            let k1 = ident_end(&chars, k0);
            if k1 > k0 && chars.get(skip_space(&chars, k1)) == Some(&'{') {
                let test_module = under_cfg_test(&chars, i);
                inline.push((depth + 1, chars[k0..k1].iter().collect(), test_module));
            }
        } else if head && at(&chars, end, "::") {
            let mut here = base.clone();
            here.extend(inline.iter().map(|(_, n, _)| n.clone()));
            // The whole path is read here, its group too (whose braces are balanced, so `depth`
            // stays right), and the scan goes on after it.
            let (paths, next) = paths_at(&chars, i);
            for p in paths {
                push(line_at[i], test, resolve(&p, &base, &here));
            }
            i = next.max(end);
            continue;
        }
        i = end;
    }
    // Paths in strings: serde's `with = "crate::…"` and the other keys that name a path.
    const PATH_KEYS: &[&str] = &[
        "with",
        "serialize_with",
        "deserialize_with",
        "default",
        "remote",
        "from",
        "into",
        "try_from",
        "getter",
    ];
    for (line, s, key) in strings {
        if !PATH_KEYS.contains(&key.as_str()) {
            continue;
        }
        let s: Vec<char> = s.trim().chars().collect();
        if ["crate::", "super::", "self::"]
            .iter()
            .any(|h| at(&s, 0, h))
        {
            let test = test_line.get(line).copied().unwrap_or(false);
            for p in paths_at(&s, 0).0 {
                push(line, test, resolve(&p, &base, &base));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A graph between modules or files: each node's targets, each with the places that reference
/// it.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

fn add_edge(graph: &mut Graph, from: &str, to: &str, witness: String) {
    graph
        .entry(from.to_string())
        .or_default()
        .entry(to.to_string())
        .or_default()
        .push(witness);
}

/// The nodes `from` reaches (itself only if it lies on a circle).
fn reachable(graph: &Graph, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![from.to_string()];
    while let Some(m) = todo.pop() {
        for n in graph.get(&m).into_iter().flat_map(|t| t.keys()) {
            if seen.insert(n.clone()) {
                todo.push(n.clone());
            }
        }
    }
    seen
}

/// A shortest circle from `start` back to it through the nodes of `part` (without the return to
/// `start`: [start, a, b] for start → a → b → start); empty if there is none.
fn shortest_circle(graph: &Graph, start: &str, part: &BTreeSet<String>) -> Vec<String> {
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    while let Some(m) = queue.pop_front() {
        for n in graph.get(&m).into_iter().flat_map(|t| t.keys()) {
            if n == start {
                let mut circle = vec![m.clone()];
                while let Some(p) = parent.get(circle.last().unwrap()) {
                    circle.push(p.clone());
                }
                circle.reverse();
                return circle;
            }
            if part.contains(n) && !parent.contains_key(n) {
                parent.insert(n.clone(), m.clone());
                queue.push_back(n.clone());
            }
        }
    }
    Vec::new()
}

/// The circles of a graph. For each knot (nodes that all reach each other, more than one), in
/// name order: a shortest circle from its first node, then from its first node on no circle yet,
/// and so on until each of its nodes is on one. A long knot thus shows as a few circles, not as
/// every circle it holds.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    let mut placed: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for node in graph.keys() {
        if placed.contains(node) {
            continue;
        }
        let from_node = reachable(graph, node);
        if !from_node.contains(node) {
            continue;
        }
        // The node's knot: what it reaches that reaches it back (itself included).
        let knot: BTreeSet<String> = from_node
            .into_iter()
            .filter(|m| reachable(graph, m).contains(node))
            .collect();
        let mut on_circle: BTreeSet<String> = BTreeSet::new();
        for start in &knot {
            if on_circle.contains(start) {
                continue;
            }
            let circle = shortest_circle(graph, start, &knot);
            if !circle.is_empty() {
                on_circle.extend(circle.iter().cloned());
                out.push(circle);
            }
        }
        placed.extend(knot);
    }
    out
}

/// `a → b → a (where a references b, where b references a)`: one place per arrow, a test module's
/// only where nothing else references it.
fn describe(graph: &Graph, circle: &[String]) -> String {
    let mut names = circle.to_vec();
    names.push(circle[0].clone());
    let witnesses: Vec<&str> = names
        .windows(2)
        .map(|w| {
            let all = &graph[&w[0]][&w[1]];
            all.iter()
                .find(|x| !x.ends_with(" (test)"))
                .unwrap_or(&all[0])
                .as_str()
        })
        .collect();
    format!("{} ({})", names.join(" → "), witnesses.join(", "))
}

/// The folder a reference crosses and its two ends there, or `None` for one inside a file or
/// one between top-level modules (the layer check's). The folder is the longest module both
/// paths start with; each end is the file or sub-folder there that the path goes on into, or
/// `mod` where the path ends at the folder's own module (its mod.rs, or `x.rs` for a folder
/// `x/`).
fn folder_edge(from: &[String], to: &[String]) -> Option<(Vec<String>, String, String)> {
    let c = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if c == 0 {
        return None;
    }
    let end = |m: &[String]| m.get(c).cloned().unwrap_or_else(|| "mod".to_string());
    let (a, b) = (end(from), end(to));
    (a != b).then(|| (from[..c].to_vec(), a, b))
}

/// Whether a folder (a module path) lies in one of [`STRICT`].
fn is_strict(folder: &[String]) -> bool {
    STRICT.iter().any(|s| {
        let s: Vec<&str> = s.split('/').collect();
        folder.len() >= s.len() && folder.iter().zip(&s).all(|(a, b)| a == b)
    })
}

/// The folder a file sits in, relative to src/ (`sim/map` for `sim/map/build.rs`, "" for the
/// crate root's files).
fn folder_of(rel: &Path) -> String {
    rel.parent()
        .map(|p| {
            p.iter()
                .map(|c| c.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default()
}

/// A folder relative to src/ as messages write it (`src/sim/map/`, `src/`).
fn folder_label(folder: &str) -> String {
    if folder.is_empty() {
        "src/".into()
    } else {
        format!("src/{folder}/")
    }
}

/// What the check finds in a source tree.
#[derive(Debug, Default)]
struct Findings {
    /// References from a lower layer to a higher one, and modules in no layer.
    upward: Vec<String>,
    /// Import circles between top-level modules.
    circles: Vec<String>,
    /// Import circles between the files (and sub-folders) of one folder.
    folder_circles: Vec<String>,
    /// Files over [`MOST_LINES`] before their tests.
    long: Vec<String>,
    /// Folders holding more than [`MOST_FILES`] `.rs` files.
    crowded: Vec<String>,
}

fn check_tree(root: &Path) -> Findings {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let rels: Vec<&Path> = files
        .iter()
        .map(|f| f.strip_prefix(root).unwrap())
        .collect();
    let known: BTreeSet<String> = rels.iter().map(|r| layer_of(r)).collect();
    // Every module of the tree: foo.rs and foo/ are one, a mod.rs is its folder's.
    let modules: BTreeSet<Vec<String>> = rels.iter().map(|r| module_path(r)).collect();
    let mut f = Findings::default();
    for m in &known {
        if rank(m).is_none() {
            f.upward.push(format!(
                "src/{m}: a top-level module in no layer (add it to LAYERS in tests/it/layers.rs and to docs/design.md)"
            ));
        }
    }
    let mut layers = Graph::new();
    let mut folders: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
    for file in &files {
        for r in references_of(root, file, &modules) {
            let to_layer = r.to_layer();
            if r.layer != to_layer {
                add_edge(&mut layers, &r.layer, to_layer, r.witness());
                if let (Some(a), Some(b)) = (rank(&r.layer), rank(to_layer))
                    && b > a
                {
                    f.upward.push(format!(
                        "{}:{}: the {} layer references the {} layer above it",
                        r.file, r.line, r.layer, to_layer
                    ));
                }
            }
            // Between the files of one folder; mod.rs only where that is strict.
            if let Some((folder, a, b)) = folder_edge(&r.from, &r.to)
                && ((a != "mod" && b != "mod") || is_strict(&folder))
            {
                add_edge(folders.entry(folder).or_default(), &a, &b, r.witness());
            }
        }
        let text = std::fs::read_to_string(file).unwrap();
        let before = text
            .lines()
            .position(|l| l.trim() == "#[cfg(test)]")
            .unwrap_or_else(|| text.lines().count());
        if before > MOST_LINES {
            f.long.push(format!(
                "src/{}: {before} lines before its tests (at most {MOST_LINES})",
                file.strip_prefix(root).unwrap().display()
            ));
        }
    }
    // Circles: modules that reach themselves again through others.
    f.circles = circles(&layers)
        .iter()
        .map(|c| describe(&layers, c))
        .collect();
    for (folder, graph) in &folders {
        for c in circles(graph) {
            f.folder_circles.push(format!(
                "{}: {}",
                folder_label(&folder.join("/")),
                describe(graph, &c)
            ));
        }
    }
    // Folder sizes: the .rs files directly in each folder.
    let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rels {
        *sizes.entry(folder_of(r)).or_default() += 1;
    }
    for (folder, n) in sizes {
        if n > MOST_FILES {
            f.crowded.push(format!(
                "{}: {n} .rs files (at most {MOST_FILES})",
                folder_label(&folder)
            ));
        }
    }
    f
}

/// What differs between docs/design.md's Layout block (`design`: the whole file) and the tree
/// at `root` (src/); the format is written at [`design_layout_names_every_file_of_src`].
fn layout_problems(root: &Path, design: &str) -> Vec<String> {
    // The block: the lines between the first fence after `## Layout` and the fence closing it.
    let mut lines = design
        .lines()
        .skip_while(|l| l.trim_end() != "## Layout")
        .skip(1)
        .skip_while(|l| !l.starts_with("```"));
    if lines.next().is_none() {
        return vec!["docs/design.md: no fenced block after `## Layout`".into()];
    }
    // Entries: (key, text), from a line that starts with a non-space to the next such line.
    let mut entries: Vec<(String, String)> = Vec::new();
    for l in lines.take_while(|l| !l.starts_with("```")) {
        if l.starts_with(|c: char| !c.is_whitespace()) {
            let (key, text) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            entries.push((key.to_string(), text.to_string()));
        } else if let Some((_, text)) = entries.last_mut() {
            text.push('\n');
            text.push_str(l);
        }
    }
    let mut problems = Vec::new();
    // The names each folder's entries give ("" for the crate root's files).
    let mut named: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (key, text) in &entries {
        let Some(path) = key.strip_prefix("src/") else {
            continue;
        };
        let file = path.trim_end_matches(',');
        let folder = if path.is_empty() {
            String::new()
        } else if let Some(folder) = path.strip_suffix('/') {
            folder.to_string()
        } else if is_file_name(file) {
            named
                .entry(String::new())
                .or_default()
                .insert(file.to_string());
            String::new()
        } else {
            problems.push(format!(
                "docs/design.md, Layout: `{key}` is neither a folder (src/…/) nor a file of the crate root (src/….rs)"
            ));
            continue;
        };
        named.entry(folder).or_default().extend(file_names(text));
    }
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(root).unwrap();
        let name = rel.file_name().unwrap().to_string_lossy().into_owned();
        actual.entry(folder_of(rel)).or_default().insert(name);
    }
    let folders: BTreeSet<&String> = actual.keys().chain(named.keys()).collect();
    for folder in folders {
        let label = folder_label(folder);
        match (actual.get(folder), named.get(folder)) {
            (Some(has), None) => problems.push(format!(
                "{label}: no entry in the Layout block (its files: {})",
                has.iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            (None, Some(_)) => problems.push(format!(
                "{label}: an entry in the Layout block, but no such folder with .rs files"
            )),
            (Some(has), Some(says)) => {
                let missing: Vec<&str> = has
                    .iter()
                    .filter(|n| !says.contains(*n) && n.as_str() != "mod.rs")
                    .map(String::as_str)
                    .collect();
                let extra: Vec<&str> = says
                    .iter()
                    .filter(|n| !has.contains(*n))
                    .map(String::as_str)
                    .collect();
                let mut parts = Vec::new();
                if !missing.is_empty() {
                    parts.push(format!("missing {}", missing.join(", ")));
                }
                if !extra.is_empty() {
                    parts.push(format!("extra {}", extra.join(", ")));
                }
                if !parts.is_empty() {
                    problems.push(format!("{label}: {}", parts.join("; ")));
                }
            }
            (None, None) => {}
        }
    }
    problems
}

/// Whether a word is a file name of the Layout block: `[a-z0-9_]+\.rs`.
fn is_file_name(word: &str) -> bool {
    word.strip_suffix(".rs").is_some_and(|stem| {
        !stem.is_empty()
            && stem
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    })
}

/// The file names a Layout entry's text gives: its words (cut at every character other than an
/// ASCII letter or digit, `_`, `.` and `/`; trailing dots dropped) that are a file name.
fn file_names(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/')))
        .map(|w| w.trim_end_matches('.'))
        .filter(|w| is_file_name(w))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_file_references_only_its_layer_and_those_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let f = check_tree(&root);
    assert!(
        f.upward.is_empty(),
        "{} reference(s) up the layers:\n{}",
        f.upward.len(),
        f.upward.join("\n")
    );
    assert!(
        f.circles.is_empty(),
        "import circles between folders:\n{}",
        f.circles.join("\n")
    );
}

/// The files (and sub-folders) of one folder reference each other in one direction only: no
/// circle `a → b → … → a`, in code or in its tests. A folder's mod.rs is left out (it declares
/// and calls its children, which use what it defines), except under [`STRICT`], where nothing
/// may reach back up into mod.rs.
#[test]
fn no_circle_between_files_of_one_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let f = check_tree(&root);
    assert!(
        f.folder_circles.is_empty(),
        "{} import circle(s) between the files of one folder (mod.rs counts under {STRICT:?}):\n{}",
        f.folder_circles.len(),
        f.folder_circles.join("\n")
    );
}

#[test]
fn no_file_is_over_700_lines_before_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let f = check_tree(&root);
    assert!(f.long.is_empty(), "long files:\n{}", f.long.join("\n"));
}

#[test]
fn no_folder_holds_more_than_10_source_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let f = check_tree(&root);
    assert!(
        f.crowded.is_empty(),
        "folders over {MOST_FILES} .rs files (split them into sub-folders by topic):\n{}",
        f.crowded.join("\n")
    );
}

/// docs/design.md's Layout block names every `.rs` file of src/, folder by folder.
///
/// The block is the first fenced block (```` ``` ````) after the line `## Layout`. It is a list
/// of entries: an entry starts on a line that starts with a non-space character and goes on over
/// the lines below it that start with a space (or are empty). Its first word (up to the first
/// space) is its key:
/// - `src/<folder>/` (`src/sim/`, `src/sim/map/`): the `.rs` files directly in src/<folder>;
/// - `src/`: files of the crate root;
/// - `src/<name>.rs`, with or without a trailing comma (`src/data.rs,`): files of the crate
///   root, that one included;
/// - anything else (`maps/`, `tests/it/`): not checked.
///
/// The files an entry names are the words of its text after the key that are a file name: the
/// text is cut into words at every character other than an ASCII letter or digit, `_`, `.` and
/// `/`, trailing dots are dropped, and a word is a file name when it is `[a-z0-9_]+\.rs` whole.
/// So `time.rs,` and `(path.rs)` name files, while a path such as `tiled/mod.rs` names none and
/// may be written to point at another folder's file. Folders without `.rs` files of their own
/// need no entry.
///
/// The check: every folder with `.rs` files has an entry (two entries of one folder add up) and
/// every `src/` entry's folder has `.rs` files; the names of a folder's entries are exactly its
/// files, where mod.rs may be left out; the crate root's files are exactly those named by the
/// `src/` and `src/<name>.rs` entries together.
#[test]
fn design_layout_names_every_file_of_src() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let design = std::fs::read_to_string(manifest.join("docs/design.md")).unwrap();
    let problems = layout_problems(&manifest.join("src"), &design);
    assert!(
        problems.is_empty(),
        "docs/design.md's Layout block and src/ differ (missing: files it does not name; extra: names of no file):\n{}",
        problems.join("\n")
    );
}

/// Writes a made-up src/ tree, (path, text) per file, into a fresh temporary folder.
fn made_up_tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("simulacra-layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

/// The check itself finds what it is for: made-up trees with each kind of crossing, circle and
/// crowding.
#[test]
fn the_layer_check_finds_crossings_in_code_strings_and_super() {
    let has = |v: &[String], s: &str| v.iter().any(|x| x.contains(s));

    // Layers: crossings in code, in a serde string, through `super`; a module in no layer; a
    // long file.
    let long: String = (0..701).map(|_| "fn a() {}\n").collect();
    let long = format!("{long}#[cfg(test)]\nmod tests {{}}\n");
    let dir = made_up_tree(
        "layers",
        &[
            ("data.rs", ""),
            (
                "lib.rs",
                "pub mod sim;\npub mod play;\npub mod save;\npub struct SimPlugin;\n",
            ),
            (
                "sim/mod.rs",
                "// crate::save::x in a comment is no reference\nuse crate::data::x;\nfn f() { let s = \"crate::play in a message\"; let c = '\"'; }\nuse super::SimPlugin;\n",
            ),
            (
                "play/mod.rs",
                "use crate::{sim::a,\n    save::b};\n#[derive(Serialize)]\nstruct T {\n    #[serde(with = \"crate::save::entity_bits\")]\n    e: u64,\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            ),
            ("save/mod.rs", "use crate::play::T;\nuse super::sim::x;\n"),
            ("extra/mod.rs", ""),
            ("sim/long.rs", long.as_str()),
        ],
    );
    let f = check_tree(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        has(
            &f.upward,
            "src/sim/mod.rs:4: the sim layer references the lib layer"
        ),
        "{:?}",
        f.upward
    );
    assert!(
        has(
            &f.upward,
            "src/play/mod.rs:1: the play layer references the save layer"
        ),
        "{:?}",
        f.upward
    );
    assert!(
        has(
            &f.upward,
            "src/play/mod.rs:5: the play layer references the save layer"
        ),
        "{:?}",
        f.upward
    );
    assert!(
        has(&f.upward, "src/extra: a top-level module in no layer"),
        "{:?}",
        f.upward
    );
    assert_eq!(
        f.upward.len(),
        4,
        "comments, messages, char literals, `super` in tests, downward: none: {:?}",
        f.upward
    );
    assert!(
        has(&f.circles, "play → save → play") || has(&f.circles, "save → play → save"),
        "{:?}",
        f.circles
    );
    assert_eq!(
        f.long,
        vec!["src/sim/long.rs: 701 lines before its tests (at most 700)".to_string()]
    );
    assert!(f.folder_circles.is_empty(), "{:?}", f.folder_circles);
    assert!(f.crowded.is_empty(), "{:?}", f.crowded);

    // Folders: a circle between two files; one through mod.rs where that is strict, none
    // elsewhere; one closed by a test module; a nested group; a bare child path; a folder of 11.
    let dir = made_up_tree(
        "folders",
        &[
            (
                "lib.rs",
                "pub mod a;\npub mod b;\npub mod cognition;\npub mod t;\n",
            ),
            (
                "a/mod.rs",
                "pub mod w;\npub mod x;\npub mod y;\npub struct S;\nfn f() {\n    x::g();\n}\n",
            ),
            ("a/x.rs", "use super::y::T;\nuse super::S;\n"),
            ("a/y.rs", "use crate::a::x::U;\n"),
            ("a/w.rs", "use crate::{a::{x::T, y::U}};\n"),
            (
                "cognition/mod.rs",
                "pub mod k;\npub struct C;\nfn f() {\n    k::g();\n}\n",
            ),
            ("cognition/k.rs", "use super::C;\n"),
            ("t/p.rs", "use super::q::A;\n"),
            (
                "t/q.rs",
                "#[cfg(test)]\nmod tests {\n    use crate::t::p::B;\n}\n",
            ),
        ],
    );
    for k in 0..11 {
        let path = dir.join(format!("b/f{k}.rs"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }
    let f = check_tree(&dir);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .map(|p| module_path(p.strip_prefix(&dir).unwrap()))
        .collect();
    let targets = |file: &str| -> Vec<String> {
        references_of(&dir, &dir.join(file), &modules)
            .iter()
            .map(|r| r.to.join("::"))
            .collect()
    };
    assert_eq!(targets("a/w.rs"), ["a::x", "a::y"], "a nested group");
    assert_eq!(targets("a/mod.rs"), ["a::x"], "a bare child path");
    let design = "# Design\n\n## Layout\n\n```\nsrc/a/        x.rs (the x), z.rs;\n              w.rs.\nsrc/lib.rs, main.rs   the crate root\nsrc/cognition/  k.rs\nsrc/t/        p.rs q.rs\nmaps/         data.rs\n```\n";
    let layout = layout_problems(&dir, design);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        f.folder_circles,
        [
            "src/a/: x → y → x (src/a/x.rs:1, src/a/y.rs:1)",
            "src/cognition/: k → mod → k (src/cognition/k.rs:1, src/cognition/mod.rs:4)",
            "src/t/: p → q → p (src/t/p.rs:1, src/t/q.rs:3 (test))",
        ]
    );
    assert_eq!(f.crowded, ["src/b/: 11 .rs files (at most 10)"]);
    assert_eq!(
        layout,
        [
            "src/: extra main.rs",
            "src/a/: missing y.rs; extra z.rs",
            "src/b/: no entry in the Layout block (its files: f0.rs, f1.rs, f10.rs, f2.rs, f3.rs, f4.rs, f5.rs, f6.rs, f7.rs, f8.rs, f9.rs)",
        ]
    );
}
