//! `sysgrad`: one command line for the generator, the emulator, the
//! co-simulation and the synthesis reports. Each subcommand is a module
//! with its arguments and its `run`; the flags several of them take are
//! defined once in [`args`] (and typed values in [`choices`]); [`cli`]
//! gathers them, this file runs them, and no module imports it.
//! `docs/CLI.md` is generated from the definitions (`sysgrad
//! help-markdown`, [`cli_doc`]).

mod accel;
mod args;
#[cfg(test)]
mod budget_tests;
mod choices;
mod cli;
mod cli_doc;
mod cosim;
mod emulate;
mod fashion_table_args;
mod figures;
mod formal;
mod formats;
#[cfg(test)]
mod fuzz_cli;
mod gen;
mod markdown_files;
mod merge;
mod pipeline;
mod run_dir;
mod shard;
mod sim_speed_args;
mod soak;
mod sweep;
mod synth;
mod train;
mod train_speed_args;

use clap::Parser;
use cli::{Cli, Cmd};
use std::process::ExitCode;

fn run(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Gen(a) => gen::run(&a),
        Cmd::Emulate(a) => emulate::run(&a),
        Cmd::Accel(a) => accel::run(&a),
        Cmd::Program(a) => accel::run_program(&a),
        Cmd::Sweep(a) => sweep::run(&a),
        Cmd::Synth(a) => synth::run(&a),
        Cmd::Formal(a) => formal::run(&a),
        Cmd::Train(a) => train::run(&a),
        Cmd::Formats(a) => formats::run(&a),
        Cmd::Pipeline(a) => pipeline::run(&a),
        Cmd::Merge(a) => merge::run(&a),
        Cmd::Figures(a) => figures::run(&a),
        Cmd::Cosim(a) => cosim::run(&a),
        Cmd::Soak(a) => soak::run(&a),
        Cmd::HelpMarkdown => {
            print!("{}", cli_doc::markdown());
            Ok(())
        }
    }
}

/// Exit codes (docs/CLI.md): 0 done, 1 a run failed (the reason on
/// stderr), 2 a usage error (clap's message on stderr), 130 and 143
/// interrupted by SIGINT and SIGTERM (the run's temporary files removed).
fn main() -> ExitCode {
    run_dir::cleanup_on_signals();
    let cli = Cli::try_parse().unwrap_or_else(|e| usage_error(e));
    match run(cli.cmd) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "error: {}",
                sysgrad_config::cut_long_lines(&format!("{e:#}"))
            );
            ExitCode::FAILURE
        }
    }
}

/// Clap's message and exit, a value too long to echo (a 10 MB number) cut.
fn usage_error(e: clap::Error) -> ! {
    let text = e.to_string();
    let cut = sysgrad_config::cut_long_lines(&text);
    if !e.use_stderr() || cut == text {
        e.exit()
    }
    eprint!("{cut}");
    std::process::exit(e.exit_code())
}

#[cfg(test)]
mod cli_tests {
    use super::*;
    use clap::CommandFactory;
    use proptest::prelude::*;

    /// Parses a command line, or returns clap's error message.
    fn parse(args: &[&str]) -> Result<Cmd, String> {
        Cli::try_parse_from(std::iter::once("sysgrad").chain(args.iter().copied()))
            .map(|c| c.cmd)
            .map_err(|e| e.to_string())
    }

    /// Clap's message refusing a command line.
    fn refused(args: &[&str]) -> String {
        match parse(args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e,
        }
    }

    /// Runs a command line; its error with every cause.
    fn fails(args: &[&str]) -> String {
        let cmd = parse(args).expect("parses");
        format!("{:#}", run(cmd).expect_err("fails"))
    }

    #[test]
    fn the_definitions_are_consistent() {
        Cli::command().debug_assert();
        sim_speed_args::SimSpeedArgs::command().debug_assert();
        train_speed_args::TrainSpeedArgs::command().debug_assert();
        fashion_table_args::FashionTableArgs::command().debug_assert();
    }

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("gen".to_string()),
            Just("emulate".to_string()),
            Just("sweep".to_string()),
            Just("--config".to_string()),
            Just("-c".to_string()),
            Just("-o".to_string()),
            Just("--m".to_string()),
            Just("--sizes".to_string()),
            Just("--layers".to_string()),
            Just("--pipelining".to_string()),
            Just("0".to_string()),
            Just("-1".to_string()),
            Just("99999999999999999999".to_string()),
            Just("4x0".to_string()),
            Just("a:1x2".to_string()),
            "[ -~]{0,12}",
        ]
    }

    proptest! {
        /// Arbitrary argument lists parse or are refused by clap; never a panic.
        #[test]
        fn arguments_never_panic_the_parser(args in proptest::collection::vec(word(), 0..6)) {
            let _ = Cli::try_parse_from(std::iter::once("sysgrad".to_string()).chain(args));
        }
    }

    #[test]
    fn bad_inputs_are_errors_with_reasons() {
        assert!(fails(&["emulate", "-c", "does/not/exist.toml"]).contains("cannot read"));
        assert!(fails(&["emulate", "--config", "config.yaml"]).contains("extension"));
        assert!(fails(&["emulate", "--m", "0"]).contains("at least 1"));
        let e = refused(&["sweep", "--sizes", "4x0"]);
        assert!(e.contains("--sizes") && e.contains("positive"), "{e}");
        let e = refused(&["emulate", "-c", "a.toml", "-c", "b.toml"]);
        assert!(e.contains("cannot be used multiple times"), "{e}");
    }

    /// `--pipelining` means one thing everywhere: the configuration with
    /// that pipelining instead of its own, refused (naming the field) when
    /// the configuration cannot have it.
    #[test]
    fn pipelining_overrides_the_config_or_says_why_not() {
        let e = refused(&["cosim", "--pipelining", "both"]);
        assert!(e.contains("[possible values: none, dense]"), "{e}");
        for cmd in ["emulate", "accel", "cosim", "synth --pnr"] {
            let mut args: Vec<&str> = cmd.split(' ').collect();
            args.extend(["-c", "configs/mul_reg_4x4.toml", "--pipelining", "dense"]);
            if cmd == "cosim" {
                args.extend(["-o", "target/unused"]);
            }
            let e = fails(&args);
            assert!(
                e.contains("--pipelining dense") && e.contains("array.multiplier_register"),
                "{cmd}: {e}"
            );
        }
        let mlp = "workloads/models/mlp.toml";
        let e = fails(&["train", "--model", mlp, "-c", "configs/small_4x4.toml"]);
        assert!(e.contains("-c/--config is the accelerator's"), "{e}");
        let e = fails(&[
            "train",
            "--model",
            mlp,
            "--engine",
            "accel",
            "-c",
            "configs/mul_reg_4x4.toml",
            "--pipelining",
            "dense",
            "--quiet",
        ]);
        assert!(
            e.contains("--pipelining dense") && e.contains("array.multiplier_register"),
            "{e}"
        );
    }

    /// `sysgrad accel` and `sysgrad program` refuse what cannot run, saying why.
    #[test]
    fn accelerator_commands_explain_bad_input() {
        assert!(fails(&["accel", "--m", "0"]).contains("at least 1"));
        let e = refused(&["accel", "--lr-shift", "64"]);
        assert!(e.contains("0..=63"), "{e}");
        // The default 16x16 config's 4096-line buffers cannot hold this layer.
        assert!(fails(&["accel", "--m", "2000", "--k", "2000"]).contains("raise buffers."));
        let dir = tempfile::tempdir().unwrap();
        let program = |text: &str| {
            let path = dir.path().join("p.s");
            std::fs::write(&path, text).unwrap();
            let path = path.to_str().unwrap().to_string();
            let cmd = parse(&["program", "--program", &path]).expect("parses");
            run(cmd).map_err(|e| format!("{e:#}"))
        };
        assert!(program("LOAD_W addr=0 m=4 k=4\nHALT\n").is_ok());
        let e = program("SYNC\nLOAD_W addr=0 m=4\n").unwrap_err();
        assert!(e.contains("line 2: LOAD_W needs k="), "{e}");
        let e = program("LOAD_W addr=0 m=17 k=4\nHALT\n").unwrap_err();
        assert!(e.contains("word 0 `LOAD_W addr=0 m=17 k=4`"), "{e}");
        assert!(e.contains("tile is larger than the array"), "{e}");
        let e = program("FORWARD x=0 y=0 n=4 acc=0\n").unwrap_err();
        assert!(
            e.contains("no weight tile") || e.contains("needs a weight tile"),
            "{e}"
        );
        let e = program(".word 0x0\n").unwrap_err();
        assert!(e.contains("unknown opcode"), "{e}");
    }

    /// The old spellings of renamed flags still parse (hidden aliases).
    #[test]
    fn old_spellings_still_parse() {
        for args in [
            &[
                "train",
                "--model",
                "m.toml",
                "--engine",
                "accel",
                "--accel-config",
                "a.toml",
            ][..],
            &["pipeline", "--model", "m.toml", "--array-config", "a.toml"],
            &["cosim", "--work", "dir"],
            &["emulate", "--trace", "dir"],
        ] {
            assert!(parse(args).is_ok(), "{args:?}");
        }
    }
}
