//! `sysgrad figures`: the measured figures of the Markdown pages,
//! regenerated from the commands written next to them (`--write`), or
//! compared with a fresh run of those commands (`--check`).
//!
//! A figure block in a Markdown file:
//!
//! ```text
//! <!-- figure checked: target/release/sysgrad emulate --m 64 -->
//!     target/release/sysgrad emulate --m 64
//!
//! (the command's stdout, Markdown)
//!
//! <!-- /figure -->
//! ```
//!
//! Everything between the two markers is generated: the command, shown so
//! that a reader sees it, then its output. The kind after `figure` says who
//! regenerates the block. `checked`: deterministic output (cycle counts,
//! counters, accuracies at fixed seeds), which `--check` and
//! `tests/figures.rs` compare with a fresh run. `timed`: run times, which
//! vary from run to run. `slow`: minutes to hours of work (Yosys, large
//! co-simulations). Only `--write` (`scripts/figures.sh`) runs the last two.
//! Options after the kind, before the `:`: `code` shows plain-text output
//! as a code block; `lines=N` or `lines=N-M` shows only the N-th (to M-th)
//! non-empty line of the output; `needs=TOOL,TOOL` names the external
//! programs the command starts (`--tool-free` and `--needs-tools` choose
//! the blocks by it, so that a run with only the Rust toolchain checks the
//! rest). docs/TESTING.md, "Figures", is the user's description.
//!
//! The command is split at spaces and run without a shell, from the current
//! folder (the repository's root). `sysgrad` and `sim-speed`, under any
//! folder, are the binaries beside this one, so that a check runs the build
//! under test rather than whatever `target/release` holds. Without file
//! arguments every Markdown file of the repository with a figure block is
//! read ([`default_files`]).

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

const CLOSE: &str = "<!-- /figure -->";
const OPEN: &str = "<!-- figure ";
/// Commands at most this long are shown on one line.
const SHOWN_WIDTH: usize = 84;
/// What a stale or failing check tells the reader to do.
pub const REGENERATE: &str = "Regenerate the figures with `scripts/figures.sh --no-slow` \
    (checked and timed blocks, a few minutes) or `scripts/figures.sh` (also the slow \
    Yosys and large co-simulation blocks), or one block with `sysgrad figures --write \
    --kinds checked,timed,slow --matching TEXT`, then commit the Markdown pages.";

#[derive(clap::Args)]
pub struct FiguresArgs {
    /// Regenerate the blocks of the chosen kinds in place.
    #[arg(long, conflicts_with = "check", required_unless_present = "check")]
    write: bool,
    /// Compare every checked block with its command's output; fail naming
    /// the blocks that differ.
    #[arg(long)]
    check: bool,
    /// With --write: the kinds of block to regenerate, comma-separated
    /// (checked, timed, slow) [default: checked,timed].
    #[arg(long, value_delimiter = ',', requires = "write")]
    kinds: Vec<Kind>,
    /// Commands run at once for checked blocks [default: the number of
    /// CPUs]. Timed and slow blocks always run one at a time.
    #[arg(long)]
    jobs: Option<usize>,
    /// Only the blocks whose command contains this text (for example a
    /// configuration file's name), with --write or --check.
    #[arg(long)]
    matching: Option<String>,
    /// Only the blocks whose marker names no tool (`needs=`): the ones a
    /// machine with only the Rust toolchain can run.
    #[arg(long, conflicts_with = "needs_tools")]
    tool_free: bool,
    /// Only the blocks whose marker names the tools they need (`needs=`).
    #[arg(long)]
    needs_tools: bool,
    /// Markdown files [default: every Markdown file of the repository, outside
    /// target/ and rtl_out/, that holds a figure block].
    files: Vec<PathBuf>,
}

/// Who regenerates a block (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, clap::ValueEnum)]
pub enum Kind {
    Checked,
    Timed,
    Slow,
}

impl Kind {
    /// The kind's name, as markers and `--kinds` spell it.
    fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
    }

    fn parse(word: &str) -> Option<Kind> {
        <Kind as clap::ValueEnum>::from_str(word, false).ok()
    }
}

/// What an opening marker says.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Figure {
    kind: Kind,
    code: bool,
    /// `lines=N-M`: only the non-empty output lines N..=M (1-based).
    lines: Option<(usize, usize)>,
    /// `needs=TOOL,TOOL`: the external programs the command starts.
    needs: Vec<String>,
    command: String,
}

/// A block found in a file: its marker, the marker's line (1-based) and the
/// byte range of the generated text between the markers.
#[derive(Debug)]
struct Block {
    figure: Figure,
    line: usize,
    body: Range<usize>,
}

/// `<!-- figure KIND[ OPTION ...]: COMMAND -->`
fn parse_marker(marker: &str) -> Result<Figure, String> {
    let inner = marker
        .strip_prefix("<!--")
        .and_then(|m| m.strip_suffix("-->"))
        .ok_or("a figure marker is one line: `<!-- figure KIND: COMMAND -->`")?;
    let (head, command) = inner
        .split_once(':')
        .ok_or("expected `<!-- figure KIND: COMMAND -->` (no `:` found)")?;
    let mut words = head.split_whitespace().skip(1);
    let kind = words
        .next()
        .and_then(Kind::parse)
        .ok_or("the kind after `figure` must be checked, timed or slow")?;
    let mut figure = Figure {
        kind,
        code: false,
        lines: None,
        needs: Vec::new(),
        command: command.split_whitespace().collect::<Vec<_>>().join(" "),
    };
    for w in words {
        match w.split_once('=') {
            None if w == "code" => figure.code = true,
            Some(("lines", range)) => figure.lines = Some(parse_lines(range)?),
            Some(("needs", tools)) => figure.needs = parse_needs(tools)?,
            _ => {
                return Err(format!(
                    "unknown figure option `{w}` (allowed: code, lines=N or lines=N-M, \
                     needs=TOOL,TOOL)"
                ))
            }
        }
    }
    if figure.command.is_empty() {
        return Err("the figure marker has no command".into());
    }
    Ok(figure)
}

/// `N` or `N-M`, 1 <= N <= M.
fn parse_lines(range: &str) -> Result<(usize, usize), String> {
    let bad = || format!("`lines={range}`: expected lines=N or lines=N-M with 1 <= N <= M");
    let number = |s: &str| s.parse::<usize>().map_err(|_| bad());
    let (first, last) = match range.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (number(range)?, number(range)?),
    };
    if first == 0 || first > last {
        return Err(bad());
    }
    Ok((first, last))
}

/// `TOOL,TOOL`: program names, at least one.
fn parse_needs(tools: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = tools.split(',').map(str::to_string).collect();
    let valid = |n: &String| {
        !n.is_empty()
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c))
    };
    if names.iter().all(valid) {
        Ok(names)
    } else {
        Err(format!(
            "`needs={tools}`: expected program names separated by commas (needs=verilator,gcc)"
        ))
    }
}

/// Every figure block of `text`, or the first malformed marker. Lines
/// inside a fenced code block (between two lines starting with three
/// backquotes, outside a figure) are text, not markers, so that a page can
/// show a marker.
fn parse(text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut open: Option<(Figure, usize, usize)> = None;
    let mut fenced = false;
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let trimmed = line.trim();
        if open.is_none() && trimmed.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && trimmed == CLOSE {
            let (figure, at, start) = open
                .take()
                .ok_or_else(|| format!("line {}: `{CLOSE}` without an opening marker", i + 1))?;
            blocks.push(Block {
                figure,
                line: at,
                body: start..offset,
            });
        } else if !fenced && trimmed.starts_with(OPEN) {
            if let Some((_, at, _)) = open {
                return Err(format!(
                    "line {}: a figure opens inside the one opened at line {at}",
                    i + 1
                ));
            }
            let figure = parse_marker(trimmed).map_err(|e| format!("line {}: {e}", i + 1))?;
            open = Some((figure, i + 1, offset + line.len()));
        }
        offset += line.len();
    }
    match open {
        Some((_, at, _)) => Err(format!("line {at}: the figure is never closed ({CLOSE})")),
        None => Ok(blocks),
    }
}

/// The command as a reader sees it: one line, or broken before options
/// (each kept with its values) with shell continuations when it is long.
fn shown_command(command: &str) -> Vec<String> {
    let mut units: Vec<String> = Vec::new();
    for word in command.split(' ') {
        match units.last_mut() {
            Some(unit) if !word.starts_with("--") => {
                unit.push(' ');
                unit.push_str(word);
            }
            _ => units.push(word.to_string()),
        }
    }
    let mut lines = vec![String::new()];
    for unit in units {
        let line = lines.last_mut().expect("never empty");
        if line.is_empty() || line.len() + 1 + unit.len() <= SHOWN_WIDTH {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&unit);
        } else {
            line.push_str(" \\");
            lines.push(format!("    {unit}"));
        }
    }
    lines
}

/// The lines of `output` a block shows: all of them but the blank ones
/// around them, or the non-empty lines its `lines=` option names.
fn shown_output<'a>(figure: &Figure, output: &'a str) -> Result<Vec<&'a str>, String> {
    let lines: Vec<&str> = output.lines().map(str::trim_end).collect();
    let Some((first, last)) = figure.lines else {
        let start = lines.iter().position(|l| !l.is_empty()).unwrap_or(0);
        let end = lines
            .iter()
            .rposition(|l| !l.is_empty())
            .map_or(0, |i| i + 1);
        return Ok(lines[start..end.max(start)].to_vec());
    };
    let text: Vec<&str> = lines.into_iter().filter(|l| !l.is_empty()).collect();
    if last > text.len() {
        return Err(format!(
            "the marker shows lines {first}-{last} of the output, which has {} non-empty lines",
            text.len()
        ));
    }
    Ok(text[first - 1..last].to_vec())
}

/// The generated text of a block: the command, then its output.
fn render(figure: &Figure, output: &str) -> Result<String, String> {
    let mut s = String::new();
    for line in shown_command(&figure.command) {
        s.push_str(&format!("    {line}\n"));
    }
    s.push('\n');
    for line in shown_output(figure, output)? {
        match (figure.code, line.is_empty()) {
            (true, false) => s.push_str(&format!("    {line}\n")),
            _ => s.push_str(&format!("{line}\n")),
        }
    }
    s.push('\n');
    Ok(s)
}

/// `text` with the body of every block whose kind is in `kinds` and whose
/// command has an output replaced by the rendered output.
fn splice(
    text: &str,
    kinds: &[Kind],
    outputs: &HashMap<String, String>,
) -> Result<(String, usize), String> {
    let mut out = String::with_capacity(text.len());
    let (mut at, mut replaced) = (0, 0);
    for b in parse(text)? {
        let Some(output) = outputs.get(&b.figure.command) else {
            continue;
        };
        if !kinds.contains(&b.figure.kind) {
            continue;
        }
        out.push_str(&text[at..b.body.start]);
        out.push_str(&render(&b.figure, output).map_err(|e| format!("line {}: {e}", b.line))?);
        at = b.body.end;
        replaced += 1;
    }
    out.push_str(&text[at..]);
    Ok((out, replaced))
}

/// `sysgrad` and `sim-speed` are the binaries beside this one; anything
/// else is looked up on the PATH.
fn program_path(program: &str) -> PathBuf {
    let name = Path::new(program).file_name().and_then(|n| n.to_str());
    if let Some(name @ ("sysgrad" | "sim-speed")) = name {
        if let Ok(exe) = std::env::current_exe() {
            return exe.with_file_name(name);
        }
    }
    PathBuf::from(program)
}

/// The last lines of a failed command's stderr: where the reason usually is.
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// Runs `command` and returns its stdout. With `show_stderr` its progress
/// and warnings reach the terminal; otherwise they are kept for the error.
fn run_command(command: &str, show_stderr: bool) -> Result<String, String> {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let mut cmd = Command::new(program_path(program));
    cmd.args(words).stdin(Stdio::null());
    if show_stderr {
        cmd.stderr(Stdio::inherit());
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    if !out.status.success() {
        return Err(format!("{}:\n{}", out.status, tail(&out.stderr)));
    }
    String::from_utf8(out.stdout).map_err(|_| "its output is not UTF-8".to_string())
}

/// Runs `commands` on `jobs` threads; each one's stdout or error.
fn run_parallel(commands: &[String], jobs: usize) -> HashMap<String, Result<String, String>> {
    let next = AtomicUsize::new(0);
    let results = Mutex::new(HashMap::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, commands.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(c) = commands.get(i) else { break };
                let r = run_command(c, false);
                results.lock().expect("no panics").insert(c.clone(), r);
            });
        }
    });
    results.into_inner().expect("no panics")
}

/// A Markdown file and its blocks.
struct Doc {
    path: PathBuf,
    text: String,
    blocks: Vec<Block>,
}

fn load(path: &Path) -> Result<Doc, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let blocks = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if blocks.is_empty() {
        return Err(format!("{}: no figure blocks", path.display()));
    }
    Ok(Doc {
        path: path.to_path_buf(),
        text,
        blocks,
    })
}

/// Keeps only the blocks whose command contains `text`; none is an error.
fn keep_matching(docs: &mut [Doc], text: &str) -> Result<(), String> {
    for doc in docs.iter_mut() {
        doc.blocks.retain(|b| b.figure.command.contains(text));
    }
    if docs.iter().all(|d| d.blocks.is_empty()) {
        return Err(format!(
            "--matching {text:?}: no figure block's command contains it"
        ));
    }
    Ok(())
}

/// Keeps only the blocks whose marker names tools (`needs_tools`) or only
/// those that name none.
fn keep_needing_tools(docs: &mut [Doc], needs_tools: bool) {
    for doc in docs.iter_mut() {
        doc.blocks
            .retain(|b| b.figure.needs.is_empty() != needs_tools);
    }
}

/// Every Markdown page under `root` that holds a figure block, sorted, as
/// paths under `root`: the pages `sysgrad figures` reads when given no file.
pub fn default_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for file in crate::markdown_files::markdown_files(root)? {
        let path = root.join(&file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let blocks = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if !blocks.is_empty() {
            files.push(file);
        }
    }
    Ok(files)
}

/// The distinct commands of the blocks of `kind`, in order of appearance.
fn commands_of(docs: &[Doc], kind: Kind) -> Vec<String> {
    let mut seen = Vec::new();
    for b in docs.iter().flat_map(|d| &d.blocks) {
        if b.figure.kind == kind && !seen.contains(&b.figure.command) {
            seen.push(b.figure.command.clone());
        }
    }
    seen
}

/// Where the block's text and the command's output first differ.
fn stale_report(doc: &Doc, b: &Block, fresh: &str) -> String {
    let old: Vec<&str> = doc.text[b.body.clone()].lines().collect();
    let new: Vec<&str> = fresh.lines().collect();
    let differ = (0..old.len().max(new.len()))
        .filter(|&i| old.get(i) != new.get(i))
        .collect::<Vec<_>>();
    let first = differ.first().copied().unwrap_or(0);
    let show = |v: &[&str]| {
        v.get(first)
            .map_or("(no line)".to_string(), |l| l.to_string())
    };
    format!(
        "{}:{}: the figure of `{}` differs from the command's output \
         ({} of {} lines); first at line {} of the block:\n  file:    {}\n  command: {}",
        doc.path.display(),
        b.line,
        b.figure.command,
        differ.len(),
        new.len(),
        first + 1,
        show(&old),
        show(&new)
    )
}

fn check(docs: &[Doc], jobs: usize) -> Result<(), String> {
    let outputs = run_parallel(&commands_of(docs, Kind::Checked), jobs);
    let mut problems = Vec::new();
    let mut checked = 0;
    for doc in docs {
        for b in doc.blocks.iter().filter(|b| b.figure.kind == Kind::Checked) {
            checked += 1;
            match &outputs[&b.figure.command] {
                Err(e) => problems.push(format!(
                    "{}:{}: `{}` failed: {e}",
                    doc.path.display(),
                    b.line,
                    b.figure.command
                )),
                Ok(out) => match render(&b.figure, out) {
                    Err(e) => problems.push(format!("{}:{}: {e}", doc.path.display(), b.line)),
                    Ok(fresh) if doc.text[b.body.clone()] != fresh => {
                        problems.push(stale_report(doc, b, &fresh))
                    }
                    Ok(_) => {}
                },
            }
        }
    }
    if problems.is_empty() {
        println!("{checked} checked figure blocks match their commands' output");
        Ok(())
    } else {
        Err(format!(
            "{} of {checked} checked figure blocks are stale:\n\n{}\n\n{REGENERATE}",
            problems.len(),
            problems.join("\n\n")
        ))
    }
}

/// Splices `outputs` into every file, reading it again first so that edits
/// made during a long run are kept.
fn update_files(
    paths: &[PathBuf],
    kinds: &[Kind],
    outputs: &HashMap<String, String>,
) -> Result<(), String> {
    for path in paths {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let (new, replaced) =
            splice(&text, kinds, outputs).map_err(|e| format!("{}: {e}", path.display()))?;
        if new != text {
            crate::args::write_atomically(path, new.as_bytes()).map_err(|e| format!("{e:#}"))?;
            eprintln!("updated {} ({replaced} blocks regenerated)", path.display());
        }
    }
    Ok(())
}

/// Regenerates the checked blocks, their commands run `jobs` at a time;
/// returns the commands that failed.
fn write_checked(docs: &[Doc], paths: &[PathBuf], jobs: usize) -> Result<Vec<String>, String> {
    let commands = commands_of(docs, Kind::Checked);
    eprintln!("running {} checked figure commands ...", commands.len());
    let (mut outputs, mut failures) = (HashMap::new(), Vec::new());
    for (c, r) in run_parallel(&commands, jobs) {
        match r {
            Ok(out) => drop(outputs.insert(c, out)),
            Err(e) => failures.push(format!("`{c}` failed: {e}")),
        }
    }
    update_files(paths, &[Kind::Checked], &outputs)?;
    Ok(failures)
}

/// Regenerates the blocks of `kind` one at a time, so that a run time is
/// not measured against another run, saving each as soon as it is done;
/// returns the commands that failed.
fn write_one_by_one(docs: &[Doc], paths: &[PathBuf], kind: Kind) -> Result<Vec<String>, String> {
    let mut failures = Vec::new();
    for c in commands_of(docs, kind) {
        eprintln!("running the {} figure `{c}` ...", kind.name());
        let t = Instant::now();
        match run_command(&c, true) {
            Ok(out) => update_files(paths, &[kind], &HashMap::from([(c, out)]))?,
            Err(e) => failures.push(format!("`{c}` failed: {e}")),
        }
        eprintln!("  ({:.0} s)", t.elapsed().as_secs_f64());
    }
    Ok(failures)
}

fn write(docs: &[Doc], kinds: &[Kind], jobs: usize) -> Result<(), String> {
    let paths: Vec<PathBuf> = docs.iter().map(|d| d.path.clone()).collect();
    let start = Instant::now();
    let mut failures = Vec::new();
    if kinds.contains(&Kind::Checked) {
        failures.extend(write_checked(docs, &paths, jobs)?);
    }
    for kind in [Kind::Timed, Kind::Slow] {
        if kinds.contains(&kind) {
            failures.extend(write_one_by_one(docs, &paths, kind)?);
        }
    }
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    eprintln!("figures done in {minutes:.1} min");
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} figure commands failed (their blocks are unchanged):\n{}",
            failures.len(),
            failures.join("\n")
        ))
    }
}

pub fn run(a: &FiguresArgs) -> anyhow::Result<()> {
    run_figures(a).map_err(anyhow::Error::msg)
}

fn run_figures(a: &FiguresArgs) -> Result<(), String> {
    let paths: Vec<PathBuf> = if a.files.is_empty() {
        default_files(Path::new("."))?
    } else {
        a.files.clone()
    };
    let mut docs = paths
        .iter()
        .map(|p| load(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(text) = &a.matching {
        keep_matching(&mut docs, text)?;
    }
    if a.tool_free || a.needs_tools {
        keep_needing_tools(&mut docs, a.needs_tools);
    }
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if a.check {
        return check(&docs, jobs);
    }
    let kinds = if a.kinds.is_empty() {
        vec![Kind::Checked, Kind::Timed]
    } else {
        a.kinds.clone()
    };
    write(&docs, &kinds, jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Title\n\ntext\n\n\
        <!-- figure checked: echo one -->\n    echo one\n\nold\n\n<!-- /figure -->\n\n\
        <!-- figure timed code: echo two -->\nstale\n<!-- /figure -->\nend\n";

    fn outputs(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(c, o)| (c.to_string(), o.to_string()))
            .collect()
    }

    #[test]
    fn markers_give_kind_options_command_and_body() {
        let blocks = parse(DOC).unwrap();
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].figure.kind, Kind::Checked);
        assert_eq!(blocks[0].figure.command, "echo one");
        assert_eq!(blocks[0].line, 5);
        assert_eq!(&DOC[blocks[0].body.clone()], "    echo one\n\nold\n\n");
        assert!(blocks[1].figure.code);
        assert_eq!(blocks[1].figure.kind, Kind::Timed);
        assert_eq!(
            (blocks[0].figure.lines, &blocks[0].figure.needs),
            (None, &vec![])
        );
    }

    #[test]
    fn options_choose_lines_and_name_tools() {
        let f = parse_marker("<!-- figure checked code lines=2-3 needs=verilator,g++: a b -->")
            .unwrap();
        assert!(f.code);
        assert_eq!(f.lines, Some((2, 3)));
        assert_eq!(f.needs, ["verilator", "g++"]);
        assert_eq!(f.command, "a b");
        assert_eq!(
            parse_marker("<!-- figure slow lines=4: a -->")
                .unwrap()
                .lines,
            Some((4, 4))
        );
        for bad in [
            "lines=0",
            "lines=3-2",
            "lines=x",
            "lines=",
            "needs=",
            "needs=a,,b",
            "often",
        ] {
            let e = parse_marker(&format!("<!-- figure checked {bad}: a -->")).unwrap_err();
            assert!(e.contains(bad.split('=').next().unwrap()), "{bad}: {e}");
        }
    }

    #[test]
    fn lines_show_only_the_chosen_non_empty_lines() {
        let f = parse_marker("<!-- figure checked lines=2-3: a -->").unwrap();
        let out = "\n# title\n\nfirst\nsecond   \n\nthird\n";
        assert_eq!(render(&f, out).unwrap(), "    a\n\nfirst\nsecond\n\n");
        let f = parse_marker("<!-- figure checked code lines=4: a -->").unwrap();
        assert_eq!(render(&f, out).unwrap(), "    a\n\n    third\n\n");
        let f = parse_marker("<!-- figure checked lines=4-5: a -->").unwrap();
        let e = render(&f, out).unwrap_err();
        assert!(
            e.contains("lines 4-5") && e.contains("has 4 non-empty lines"),
            "{e}"
        );
    }

    #[test]
    fn markers_in_fenced_code_are_text() {
        let text = "```text\n<!-- figure checked: shown -->\n```\n\
            <!-- figure checked: real -->\n<!-- /figure -->\n";
        let blocks = parse(text).unwrap();
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].figure.command, "real");
        assert_eq!(blocks[0].line, 4);
    }

    #[test]
    fn tool_options_split_the_blocks() {
        let text = "<!-- figure checked needs=gcc: a -->\n<!-- /figure -->\n\
            <!-- figure checked: b -->\n<!-- /figure -->\n";
        let doc = || Doc {
            path: "doc.md".into(),
            text: text.into(),
            blocks: parse(text).unwrap(),
        };
        for (needs_tools, kept) in [(true, "a"), (false, "b")] {
            let mut docs = [doc()];
            keep_needing_tools(&mut docs, needs_tools);
            let commands: Vec<_> = docs[0].blocks.iter().map(|b| &b.figure.command).collect();
            assert_eq!(commands, [kept]);
        }
    }

    #[test]
    fn the_default_files_are_the_pages_with_blocks() {
        let root = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let block = "<!-- figure checked: a -->\n<!-- /figure -->\n";
        write("README.md", block);
        write("docs/results/speed.md", block);
        write("docs/plain.md", "no blocks\n");
        write("target/doc.md", block);
        write("rtl_out/x/doc.md", block);
        write(".hidden/doc.md", block);
        write("crate/README.md", block);
        let files = default_files(root.path()).unwrap();
        let expected: Vec<PathBuf> = ["README.md", "crate/README.md", "docs/results/speed.md"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(files, expected);
    }

    #[test]
    fn matching_keeps_the_blocks_whose_command_contains_the_text() {
        let doc = || Doc {
            path: "doc.md".into(),
            text: DOC.into(),
            blocks: parse(DOC).unwrap(),
        };
        let mut docs = [doc()];
        keep_matching(&mut docs, "one").unwrap();
        let commands: Vec<_> = docs[0].blocks.iter().map(|b| &b.figure.command).collect();
        assert_eq!(commands, ["echo one"]);
        let e = keep_matching(&mut [doc()], "nowhere").unwrap_err();
        assert!(e.contains("--matching \"nowhere\""), "{e}");
    }

    #[test]
    fn malformed_markers_are_refused_with_their_line() {
        let e = parse("a\n<!-- figure checked: x -->\nb\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("never closed"), "{e}");
        let e = parse("<!-- /figure -->\n").unwrap_err();
        assert!(
            e.contains("line 1") && e.contains("without an opening"),
            "{e}"
        );
        let e = parse("<!-- figure often: x -->\n<!-- /figure -->\n").unwrap_err();
        assert!(e.contains("checked, timed or slow"), "{e}");
        let e = parse("<!-- figure checked -->\n<!-- /figure -->\n").unwrap_err();
        assert!(e.contains("no `:`"), "{e}");
        let e = parse("<!-- figure slow: a -->\n<!-- figure slow: b -->\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("opened at line 1"),
            "{e}"
        );
    }

    #[test]
    fn splicing_replaces_only_the_chosen_kinds() {
        let outs = outputs(&[("echo one", "\nnew\n\n"), ("echo two", "2\n")]);
        let (text, n) = splice(DOC, &[Kind::Checked], &outs).unwrap();
        assert_eq!(n, 1);
        assert!(text.contains("    echo one\n\nnew\n\n<!-- /figure -->"));
        assert!(text.contains("stale"));
        let (text, n) = splice(&text, &[Kind::Checked, Kind::Timed], &outs).unwrap();
        assert_eq!(n, 2);
        assert!(text.contains("    echo two\n\n    2\n\n<!-- /figure -->\nend\n"));
        // Splicing the same outputs again changes nothing.
        assert_eq!(
            splice(&text, &[Kind::Checked, Kind::Timed], &outs)
                .unwrap()
                .0,
            text
        );
    }

    #[test]
    fn long_commands_break_before_options() {
        let c = format!(
            "sysgrad train {}",
            "--model workloads/models/mlp.toml ".repeat(4)
        );
        let lines = shown_command(c.trim());
        assert!(lines.len() > 1);
        assert!(lines[..lines.len() - 1].iter().all(|l| l.ends_with(" \\")));
        assert!(lines[1..].iter().all(|l| l.starts_with("    --model")));
        assert_eq!(
            shown_command("sysgrad emulate --m 64"),
            ["sysgrad emulate --m 64"]
        );
    }

    #[test]
    fn a_stale_block_is_named_with_its_first_difference() {
        let doc = Doc {
            path: "README.md".into(),
            text: DOC.to_string(),
            blocks: parse(DOC).unwrap(),
        };
        let fresh = render(&doc.blocks[0].figure, "new\n").unwrap();
        let r = stale_report(&doc, &doc.blocks[0], &fresh);
        assert!(
            r.starts_with("README.md:5: the figure of `echo one`"),
            "{r}"
        );
        assert!(r.contains("file:    old\n  command: new"), "{r}");
        assert!(check(&[doc], 1).unwrap_err().contains("scripts/figures.sh"));
    }

    #[test]
    fn commands_run_without_a_shell_and_failures_say_why() {
        assert_eq!(run_command("echo a b", false).unwrap(), "a b\n");
        let e = run_command("false", false).unwrap_err();
        assert!(e.contains("exit status"), "{e}");
        assert!(run_command("no-such-program-here", false)
            .unwrap_err()
            .contains("cannot start"));
    }
}
