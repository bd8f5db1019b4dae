//! Every relative link of every Markdown page of the repository (outside
//! `target/`, `rtl_out/` and hidden folders) leads somewhere: its file or
//! folder exists, and a `#anchor` into a Markdown page (or within the
//! page) names one of that page's headings, as GitHub derives anchors from
//! headings. Links with a scheme (`https:`, `mailto:`) are not followed.
//! Code (fenced blocks, indented blocks, inline code spans) is not read
//! for links. Needs no tool.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
#[path = "../src/markdown_files.rs"]
mod markdown_files;

/// Every Markdown file under the root, as paths relative to it.
fn markdown_files() -> Vec<PathBuf> {
    markdown_files::markdown_files(Path::new(ROOT)).unwrap()
}

/// The page's prose: fenced and indented code blocks blanked, inline code
/// spans removed, line breaks kept (so that a link's line can be named).
fn prose(text: &str) -> String {
    without_blocks(text)
        .lines()
        .map(|l| without_code_spans(l) + "\n")
        .collect()
}

/// `text` with its fenced and indented code blocks blanked.
fn without_blocks(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(f) = fence {
            if trimmed.starts_with(f) {
                fence = None;
            }
        } else if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
        } else if !(line.starts_with("    ") || line.starts_with('\t')) {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// `line` without its inline code spans (`` `...` ``, any run of
/// backquotes as the delimiter).
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let delimiter = "`".repeat(ticks);
        match after.find(&delimiter) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links and images of `text` (`[..](target)`,
/// `![..](target)`), and of reference definitions (`[id]: target`), each
/// with its 1-based line.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].find("](") {
        let start = at + i + 2;
        let target: String = text[start..]
            .chars()
            .take_while(|&c| c != ')' && !c.is_whitespace())
            .collect();
        let line = text[..start].matches('\n').count() + 1;
        let target = target.trim_start_matches('<').trim_end_matches('>');
        targets.push((line, target.to_string()));
        at = start;
    }
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[') {
            if let Some((label, target)) = rest.split_once("]:") {
                if !label.is_empty() && !label.starts_with('^') {
                    if let Some(target) = target.split_whitespace().next() {
                        targets.push((i + 1, target.to_string()));
                    }
                }
            }
        }
    }
    targets
}

/// GitHub's anchor of a heading: lower case, the characters that are not
/// letters, digits, spaces, `-` or `_` dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (ATX headings outside code), a
/// repeated one numbered `-1`, `-2`, ... as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in without_blocks(text).lines() {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(&without_code_spans_kept(heading));
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// A heading's text with its code spans' backquotes dropped but their
/// contents kept (GitHub's anchor keeps the words of `code`).
fn without_code_spans_kept(heading: &str) -> String {
    heading.replace('`', "")
}

/// `base/relative` with `.` and `..` resolved, without touching the disk.
fn join(base: &Path, relative: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(relative).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn has_scheme(target: &str) -> bool {
    match target.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        }
        None => false,
    }
}

/// The problems of one page's links (empty: every link resolves).
fn broken_links(page: &Path, text: &str) -> Vec<String> {
    let root = Path::new(ROOT);
    let folder = page.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for (line, target) in link_targets(&prose(text)) {
        if target.is_empty() || has_scheme(&target) {
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (target.as_str(), None),
        };
        let path = if file.is_empty() {
            page.to_path_buf()
        } else if let Some(from_root) = file.strip_prefix('/') {
            join(Path::new(""), from_root)
        } else {
            join(folder, file)
        };
        let at = format!("{}:{line}: `{target}`", page.display());
        if !root.join(&path).exists() {
            problems.push(format!("{at}: {} does not exist", path.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let linked = std::fs::read_to_string(root.join(&path)).unwrap();
        let known = anchors(&linked);
        if !known.contains(anchor) {
            problems.push(format!(
                "{at}: {} has no heading with the anchor `#{anchor}`",
                path.display()
            ));
        }
    }
    problems
}

#[test]
fn every_relative_link_of_every_markdown_page_resolves() {
    let files = markdown_files();
    assert!(
        files.iter().any(|f| f == Path::new("README.md")),
        "README.md was not found"
    );
    let mut problems = Vec::new();
    let mut links = 0;
    for f in &files {
        let text = std::fs::read_to_string(Path::new(ROOT).join(f)).unwrap();
        links += link_targets(&prose(&text)).len();
        problems.extend(broken_links(f, &text));
    }
    assert!(
        links > 50,
        "only {links} links found: is the parser broken?"
    );
    assert!(
        problems.is_empty(),
        "{} broken links in the Markdown pages:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn anchors_follow_github() {
    let page = "# Dense pipelining (`pipelining = \"dense\"`)\n\
                ## FPGA resources: the cost of interleaving\n\
                ## The C driver (`sa_accel.h`, `sa_accel.c`)\n\
                ## Speed\n## Speed\n";
    let a = anchors(page);
    for expected in [
        "dense-pipelining-pipelining--dense",
        "fpga-resources-the-cost-of-interleaving",
        "the-c-driver-sa_accelh-sa_accelc",
        "speed",
        "speed-1",
    ] {
        assert!(a.contains(expected), "{expected} not in {a:?}");
    }
}

#[test]
fn a_broken_link_is_found_and_code_is_not_read() {
    let page = Path::new("docs/results/example.md");
    let text = "See [the index](README.md), [the tests](../TESTING.md#figures),\n\
                [nothing](missing.md), [no heading](../TESTING.md#no-such-heading)\n\
                and [a site](https://example.org/x).\n\n\
                ```text\n[not a link](nowhere.md)\n```\n\n    [indented](nowhere.md)\n\n\
                `[code](nowhere.md)`\n";
    let problems = broken_links(page, text);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(
        problems[0].contains("missing.md does not exist"),
        "{problems:#?}"
    );
    assert!(problems[1].contains("#no-such-heading"), "{problems:#?}");
}
