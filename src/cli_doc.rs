//! `docs/CLI.md`, generated from the clap definitions: the conventions
//! every subcommand follows, then each subcommand's `--help` and the
//! benchmarks' (`sim-speed`, `train-speed`) and `fashion-table`'s. `sysgrad help-markdown > docs/CLI.md`
//! regenerates it; a test fails when the committed file is stale.

use crate::cli::Cli;
use crate::fashion_table_args::FashionTableArgs;
use crate::sim_speed_args::SimSpeedArgs;
use crate::train_speed_args::TrainSpeedArgs;
use clap::{Command, CommandFactory};

/// What holds for every subcommand, before their help texts.
const CONVENTIONS: &str = "\
# Command line

`sysgrad` is one binary with a subcommand per job; `sim-speed` is the
simulation-speed benchmark, `train-speed` the fast mode's training-speed
benchmark and `fashion-table` the Fashion-MNIST results table. This file is generated from their clap
definitions (`sysgrad help-markdown > docs/CLI.md`, a hidden subcommand)
and a test (`src/cli_doc.rs`) fails when it is stale. `sysgrad help
SUBCOMMAND` or `sysgrad SUBCOMMAND --help` prints the same text.

## Conventions

Each flag below is defined once (`src/args.rs`) and means the same in
every subcommand that takes it:

| flag | meaning |
|---|---|
| `-c, --config FILE` | the array or accelerator configuration (`.toml` or `.json`, see `configs/`); the built-in 16x16 where the subcommand has a default. `synth` takes it several times (one report row each), `pipeline` once for every array or once per array. |
| `-o, --out DIR` | the output (or working) folder: everything a subcommand writes goes under it, nothing under a fixed path. An output folder gets `MANIFEST.json` last (the files and their sizes, the command line, the version, `completed: true`); a run into a folder with an older run's manifest first removes the files it lists (replacing that run whole; other files stay), and removes the temporary files of killed runs (docs/HARDENING.md). |
| `--pipelining P[,P]` | run or build the configuration with these pipelinings (`none`, `dense`) instead of its own. A configuration that cannot have one (a dense array has no multiplier register and no deferred saturation) is refused, naming the field. |
| `--timings` | run times on stdout; they go to stderr otherwise, so that stdout is the same in every run (the figure blocks of the docs quote it). |
| `--backward B[,B]` | backward schedules (`interleaved`, `sequential`). |
| `--epochs`, `--max-train N`, `--max-test N`, `--quiet` | how much of a training run, and no progress bar. |
| `--gap PERCENT` | how often the host stalls the streams in runs on the RTL (0..=95). |
| `--shard I/N` | `sweep`, `pipeline`, `soak`: run shard I of N of the job list (the jobs whose index is I modulo N) and write one file, `<command>.shard-I-of-N.json`, with no manifest; `sysgrad merge` joins the N files into what the unsharded run writes (docs/CLUSTER.md). |

Every enumeration is a typed value: a wrong one is refused before
anything runs, and the help lists the allowed values. Lists are
comma-separated (`--parts up5k,ecp5-85f`).

Exit codes: 0 done; 1 the run failed (`error: ...` on stderr, with each
cause); 2 a usage error (clap's message on stderr: unknown flag, missing
or malformed value); 130 and 143 interrupted by SIGINT and SIGTERM, the
run's temporary files removed. A value longer than 400 characters is cut
in messages.

Old spellings still parse, as hidden aliases: `train --accel-config`
(now `-c/--config`), `pipeline --array-config` (now `-c/--config`),
`cosim --work` (now `-o/--out`), `emulate --trace` (now `-o/--out`).
`pipeline --backward both` and `emulate --pipelining both` are gone: give
both values, or leave the flag out for the default.
";

/// The long help of `cmd` as a section headed `name`.
fn section(name: &str, cmd: &mut Command) -> String {
    let help = cmd.render_long_help().to_string();
    let help: Vec<&str> = help.lines().map(str::trim_end).collect();
    format!(
        "\n## `{name}`\n\n```text\n{}\n```\n",
        help.join("\n").trim_end()
    )
}

/// The whole of docs/CLI.md.
pub fn markdown() -> String {
    let mut top = Cli::command().term_width(100);
    top.build();
    let mut out = String::from(CONVENTIONS);
    out.push_str(&section("sysgrad", &mut top));
    for sub in top.get_subcommands_mut().filter(|s| !s.is_hide_set()) {
        let name = format!("sysgrad {}", sub.get_name());
        out.push_str(&section(&name, sub));
    }
    for (name, cmd) in [
        ("sim-speed", SimSpeedArgs::command()),
        ("train-speed", TrainSpeedArgs::command()),
        ("fashion-table", FashionTableArgs::command()),
    ] {
        out.push_str(&section(name, &mut cmd.term_width(100)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command that regenerates the file.
    const REGENERATE: &str = "cargo run --release --bin sysgrad -- help-markdown > docs/CLI.md";

    #[test]
    fn docs_cli_md_is_generated_from_the_definitions() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CLI.md");
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == markdown(),
            "docs/CLI.md is stale (or missing): regenerate it with `{REGENERATE}` and commit it"
        );
    }

    /// Every `sysgrad` and `sim-speed` command of a figure block in the
    /// Markdown files parses: a renamed flag fails here, before any block
    /// is run.
    #[test]
    fn the_figure_commands_of_the_docs_parse() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let files = crate::figures::default_files(root).unwrap();
        let mut parsed = 0;
        for file in files.iter().map(|f| root.join(f)) {
            let text = std::fs::read_to_string(&file).unwrap();
            for line in text
                .lines()
                .filter(|l| l.trim_start().starts_with("<!-- figure "))
            {
                let Some((_, command)) = line.split_once(':') else {
                    continue;
                };
                let words: Vec<&str> = command.trim_end_matches("-->").split_whitespace().collect();
                let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w));
                let result = match program {
                    Some("sysgrad") => Cli::command().try_get_matches_from(&words).map(drop),
                    Some("sim-speed") => SimSpeedArgs::command()
                        .try_get_matches_from(&words)
                        .map(drop),
                    Some("train-speed") => TrainSpeedArgs::command()
                        .try_get_matches_from(&words)
                        .map(drop),
                    Some("fashion-table") => FashionTableArgs::command()
                        .try_get_matches_from(&words)
                        .map(drop),
                    _ => continue,
                };
                assert!(
                    result.is_ok(),
                    "{}: `{}`: {result:?}",
                    file.display(),
                    words.join(" ")
                );
                parsed += 1;
            }
        }
        assert!(parsed > 40, "only {parsed} figure commands found");
    }

    #[test]
    fn every_subcommand_is_documented() {
        let doc = markdown();
        for sub in Cli::command().get_subcommands() {
            let heading = format!("## `sysgrad {}`", sub.get_name());
            assert_eq!(doc.contains(&heading), !sub.is_hide_set(), "{heading}");
        }
    }
}
