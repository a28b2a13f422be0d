//! The crate's layers, checked from its source: a file references (`crate::…`, `super::…`, or a
//! serde `with = "crate::…"` string) only its own layer and those below; the top-level folders
//! form no import circle; no file holds more than 700 lines before its tests. See
//! docs/design.md ("Layers") for what each layer is.

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

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// A reference from one file to a top-level module.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Reference {
    file: String,
    line: usize,
    from: String,
    to: String,
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

/// The first segment of each item in a `{…}` group that starts at `open` (nested groups and
/// `self` skipped).
fn group_heads(code: &[char], open: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item_start = true;
    let mut i = open;
    while i < code.len() {
        match code[i] {
            '{' => {
                depth += 1;
                at_item_start = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => at_item_start = true,
            ch if depth == 1 && at_item_start && is_ident(ch) => {
                let mut j = i;
                while j < code.len() && is_ident(code[j]) {
                    j += 1;
                }
                heads.push(code[i..j].iter().collect());
                at_item_start = false;
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    heads
}

/// The top-level module a path that starts at the crate root names (`sim::map::X` → sim; an
/// item of the root itself, such as `SimPlugin` or a `{…}` of them, → lib).
fn top_module(head: &str, known: &BTreeSet<String>) -> String {
    if known.contains(head) {
        head.to_string()
    } else {
        "lib".into()
    }
}

/// Every reference of one file to a top-level module other than its own.
fn references_of(root: &Path, file: &Path, known: &BTreeSet<String>) -> Vec<Reference> {
    let rel = file.strip_prefix(root).unwrap();
    let from = layer_of(rel);
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
    let mut push = |line: usize, to: String| {
        if to != from {
            out.push(Reference {
                file: format!("src/{}", rel.display()),
                line,
                from: from.clone(),
                to,
            });
        }
    };
    // Inline modules (`mod tests { … }`) deepen the path `super::` starts from.
    let base = module_path(rel);
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == '{' {
            depth += 1;
        } else if ch == '}' {
            depth = depth.saturating_sub(1);
            while inline.last().is_some_and(|(d, _)| *d > depth) {
                inline.pop();
            }
        }
        let starts_word = i == 0 || !is_ident(chars[i - 1]);
        let rest = || chars[i..].iter().take(12).collect::<String>();
        if starts_word && rest().starts_with("mod ") {
            let mut j = i + 4;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let k0 = j;
            while j < chars.len() && is_ident(chars[j]) {
                j += 1;
            }
            let name: String = chars[k0..j].iter().collect();
            while j < chars.len() && chars[j].is_whitespace() {
                j += 1;
            }
            if chars.get(j) == Some(&'{') {
                inline.push((depth + 1, name));
            }
        }
        if starts_word && rest().starts_with("crate::") {
            let j = i + "crate::".len();
            if chars.get(j) == Some(&'{') {
                for h in group_heads(&chars, j) {
                    push(line_at[i], top_module(&h, known));
                }
            } else {
                let mut k = j;
                while k < chars.len() && is_ident(chars[k]) {
                    k += 1;
                }
                let head: String = chars[j..k].iter().collect();
                push(line_at[i], top_module(&head, known));
            }
            i = j;
            continue;
        }
        if starts_word && rest().starts_with("super::") {
            let mut path = base.clone();
            path.extend(inline.iter().map(|(_, n)| n.clone()));
            let mut j = i;
            while chars[j..].iter().take(7).collect::<String>() == "super::" {
                path.pop();
                j += 7;
            }
            let to = if let Some(first) = path.first() {
                first.clone()
            } else if chars.get(j) == Some(&'{') {
                // `super::{…}` reaching the crate root: each item named.
                for h in group_heads(&chars, j) {
                    push(line_at[i], top_module(&h, known));
                }
                i = j;
                continue;
            } else {
                let mut k = j;
                while k < chars.len() && is_ident(chars[k]) {
                    k += 1;
                }
                top_module(&chars[j..k].iter().collect::<String>(), known)
            };
            push(line_at[i], to);
            i = j;
            continue;
        }
        i += 1;
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
        if let Some(rest) = s.trim().strip_prefix("crate::") {
            let head: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            push(line, top_module(&head, known));
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

/// What the check finds in a source tree.
#[derive(Debug, Default)]
struct Findings {
    /// References from a lower layer to a higher one, and modules in no layer.
    upward: Vec<String>,
    /// Import circles between top-level modules.
    circles: Vec<String>,
    /// Files over [`MOST_LINES`] before their tests.
    long: Vec<String>,
}

fn check_tree(root: &Path) -> Findings {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let known: BTreeSet<String> = files
        .iter()
        .map(|f| layer_of(f.strip_prefix(root).unwrap()))
        .collect();
    let mut f = Findings::default();
    for m in &known {
        if rank(m).is_none() {
            f.upward.push(format!(
                "src/{m}: a top-level module in no layer (add it to LAYERS in tests/it/layers.rs and to docs/design.md)"
            ));
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let refs = references_of(root, file, &known);
        for r in refs {
            graph
                .entry(r.from.clone())
                .or_default()
                .insert(r.to.clone());
            if let (Some(a), Some(b)) = (rank(&r.from), rank(&r.to))
                && b > a
            {
                f.upward.push(format!(
                    "{}:{}: the {} layer references the {} layer above it",
                    r.file, r.line, r.from, r.to
                ));
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
    // Circles: a module that reaches itself again through others.
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = BTreeSet::new();
        while let Some((m, path)) = stack.pop() {
            for n in graph.get(&m).into_iter().flatten() {
                if n == start {
                    let circle = format!("{} → {start}", path.join(" → "));
                    if !f
                        .circles
                        .iter()
                        .any(|c| c.starts_with(&format!("{start} ")))
                    {
                        f.circles.push(circle);
                    }
                } else if seen.insert(n.clone()) {
                    let mut p = path.clone();
                    p.push(n.clone());
                    stack.push((n.clone(), p));
                }
            }
        }
    }
    f
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

#[test]
fn no_file_is_over_700_lines_before_its_tests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let f = check_tree(&root);
    assert!(f.long.is_empty(), "long files:\n{}", f.long.join("\n"));
}

/// The check itself finds what it is for: a made-up tree with each kind of crossing.
#[test]
fn the_layer_check_finds_crossings_in_code_strings_and_super() {
    let dir = std::env::temp_dir().join(format!("simulacra-layers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let w = |p: &str, text: &str| {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    w("data.rs", "");
    w(
        "lib.rs",
        "pub mod sim;\npub mod play;\npub mod save;\npub struct SimPlugin;\n",
    );
    w(
        "sim/mod.rs",
        "// crate::save::x in a comment is no reference\nuse crate::data::x;\nfn f() { let s = \"crate::play in a message\"; let c = '\"'; }\nuse super::SimPlugin;\n",
    );
    w(
        "play/mod.rs",
        "use crate::{sim::a,\n    save::b};\n#[derive(Serialize)]\nstruct T {\n    #[serde(with = \"crate::save::entity_bits\")]\n    e: u64,\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
    );
    w("save/mod.rs", "use crate::play::T;\nuse super::sim::x;\n");
    w("extra/mod.rs", "");
    let long: String = (0..701).map(|_| "fn a() {}\n").collect();
    w(
        "sim/long.rs",
        &format!("{long}#[cfg(test)]\nmod tests {{}}\n"),
    );
    let f = check_tree(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let has = |v: &[String], s: &str| v.iter().any(|x| x.contains(s));
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
}
