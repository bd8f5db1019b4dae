//! No two files of one crate import each other (issue 27): a shared type
//! lives in its own module, used by both. The check reads the sources as
//! text: a file's module path from where it lies, and its references to
//! other modules of the crate from `crate::`, `super::` and child-module
//! paths, outside comments, tests and a root's `pub use` re-exports. The
//! crates listed in `CHECKED` are held to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Source folders (crate roots `main.rs` or `lib.rs`) held to the rule.
const CHECKED: [&str; 6] = [
    "src",
    "config/src",
    "explore/src",
    "synth/src",
    "tools/src",
    "pipeline/src",
];

/// Every `.rs` file under `dir`, except other crate roots (`src/bin`).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() && p.file_name().is_some_and(|n| n != "bin") {
            sources(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `train/args.rs` -> `train::args`; `train/mod.rs` -> `train`; the crate
/// root -> ``.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "main" | "lib")
    ) {
        parts.pop();
    }
    parts.join("::")
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}::{rest}"),
    }
}

fn parent(module: &str) -> String {
    module
        .rsplit_once("::")
        .map_or(String::new(), |(p, _)| p.to_string())
}

/// The path words after `prefix` at each place it occurs: `a::b::C`, and
/// each item of a braced list (`{a, b::c}`) on its own.
fn paths_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &text[i + prefix.len()..];
        if let Some(list) = rest.strip_prefix('{') {
            let list = &list[..list.find('}').unwrap_or(0)];
            out.extend(list.split(',').map(|s| path_words(s.trim())));
        } else {
            out.push(path_words(rest));
        }
    }
    out
}

/// The leading `a::b::c` of `s`.
fn path_words(s: &str) -> String {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(s.len());
    s[..end].trim_end_matches(':').to_string()
}

/// The longest module of `modules` that `path` (from the crate root) starts with.
fn target(modules: &BTreeSet<String>, path: &str) -> String {
    let words: Vec<&str> = path.split("::").collect();
    (0..=words.len())
        .rev()
        .map(|n| words[..n].join("::"))
        .find(|m| modules.contains(m))
        .unwrap_or_default()
}

/// `module -> modules it refers to` for one crate's sources.
fn references(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    sources(dir, &mut files);
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|f| {
            let rel = f.strip_prefix(dir).unwrap();
            let text = std::fs::read_to_string(f).unwrap();
            // Comments name paths without importing them, a root's `pub
            // use` is the crate's interface, and the tests (from the first
            // `#[cfg(test)]` on) may use anything.
            let code: Vec<&str> = text
                .lines()
                .take_while(|l| l.trim() != "#[cfg(test)]")
                .filter(|l| !l.trim_start().starts_with("//"))
                .filter(|l| !l.starts_with("pub use "))
                .collect();
            (module_of(rel), code.join("\n"))
        })
        .collect();
    let modules: BTreeSet<String> = texts.iter().map(|(m, _)| m.clone()).collect();
    let mut refs = BTreeMap::new();
    for (module, text) in &texts {
        // `super` of `a::b` (a/b.rs) is `a`; of `a` (a.rs or a/mod.rs) the root.
        let sup = parent(module);
        let mut to = BTreeSet::new();
        for p in paths_after(text, "crate::") {
            to.insert(target(&modules, &p));
        }
        for p in paths_after(text, "super::") {
            to.insert(target(&modules, &join(&sup, &p)));
        }
        for child in modules
            .iter()
            .filter(|m| parent(m) == *module && !m.is_empty())
        {
            let name = child.rsplit("::").next().unwrap();
            if !paths_after(text, &format!("{name}::")).is_empty() {
                to.insert(child.clone());
            }
        }
        to.remove(module);
        refs.insert(module.clone(), to);
    }
    refs
}

#[test]
fn no_two_files_of_a_crate_import_each_other() {
    let mut pairs = Vec::new();
    for dir in CHECKED {
        let refs = references(&Path::new(ROOT).join(dir));
        assert!(
            refs.len() > 1 || dir == "tools/src",
            "{dir}: no modules read"
        );
        for (a, to) in &refs {
            for b in to.iter().filter(|b| a < *b) {
                if refs.get(b).is_some_and(|back| back.contains(a)) {
                    pairs.push(format!("{dir}: `{a}` <-> `{b}`"));
                }
            }
        }
    }
    assert!(
        pairs.is_empty(),
        "files that import each other (move what both need into a module of its own):\n{}",
        pairs.join("\n")
    );
}

/// The check finds a cycle when there is one.
#[test]
fn a_cycle_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("main.rs", "mod a;\nmod b;\nfn main() { a::f(); }\n");
    write("a.rs", "use crate::b::g;\npub fn f() { g() }\n");
    write("b.rs", "pub fn g() { let _ = super::a::f; }\n");
    let refs = references(dir.path());
    assert!(
        refs["a"].contains("b") && refs["b"].contains("a"),
        "{refs:?}"
    );
    assert!(
        refs[""].contains("a") && !refs["a"].contains(""),
        "{refs:?}"
    );
}
