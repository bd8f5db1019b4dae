//! The workspace keeps the dependency rules of `docs/LAYOUT.md`: every
//! sysgrad crate a `Cargo.toml` names in `[dependencies]` is in that
//! crate's row of the table.

use std::collections::BTreeMap;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `folder -> allowed sysgrad crates` from the table in docs/LAYOUT.md
/// (the short names: `config`, `isa`, ...).
fn allowed() -> BTreeMap<String, Vec<String>> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/LAYOUT.md")).unwrap();
    doc.lines()
        .filter(|l| l.starts_with("| `sysgrad"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let folder = cells[2].trim_matches('`').trim_end_matches('/').to_string();
            let deps = match cells[4] {
                "none" | "any" => vec![cells[4].to_string()],
                list => list.split(',').map(|d| d.trim().to_string()).collect(),
            };
            (folder, deps)
        })
        .collect()
}

/// The sysgrad crates of `[dependencies]` in `manifest` (short names).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut deps = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
        } else if in_deps {
            if let Some(name) = line.strip_prefix("sysgrad-") {
                deps.push(name.split(['.', ' ', '=']).next().unwrap().to_string());
            }
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_what_layout_md_allows() {
    let rules = allowed();
    assert!(
        rules.len() >= 12,
        "the table of docs/LAYOUT.md was not found"
    );
    for (folder, allowed) in &rules {
        let path = Path::new(ROOT).join(folder).join("Cargo.toml");
        let manifest =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if allowed == &["any"] {
            continue;
        }
        for dep in dependencies(&manifest) {
            assert!(
                allowed.contains(&dep),
                "{folder}/Cargo.toml depends on sysgrad-{dep}, which docs/LAYOUT.md does not allow for it (allowed: {allowed:?})"
            );
        }
    }
}

#[test]
fn every_workspace_member_has_a_row() {
    let rules = allowed();
    let root = std::fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap();
    let members = root.split("members = [").nth(1).unwrap();
    let members = members.split(']').next().unwrap();
    for m in members.split(',').map(|m| m.trim().trim_matches('"')) {
        if !m.is_empty() {
            assert!(
                rules.contains_key(m),
                "workspace member {m} has no row in docs/LAYOUT.md"
            );
        }
    }
}
