//! `sysgrad`: one command line for the generator, the emulator, the
//! co-simulation and the synthesis reports.

mod accel;
mod emulate;
mod figures;
mod formal;
mod pipeline;
mod sweep;
mod synth;
mod train;
mod train_rtl;
mod train_summary;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use sysgrad_config::{load_config, ArrayConfig};

#[derive(Parser)]
#[command(
    name = "sysgrad",
    version,
    about = "Gradient-interleaved systolic training array: generate, emulate, co-simulate"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct ConfigArg {
    /// Array configuration (.toml or .json); the built-in 16x16 default if omitted.
    #[arg(long, short)]
    config: Option<PathBuf>,
}

impl ConfigArg {
    fn load(&self) -> Result<ArrayConfig, String> {
        match &self.config {
            Some(p) => load_config(p).map_err(|e| e.to_string()),
            None => Ok(ArrayConfig::default_16x16()),
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Write the Verilog of a configuration.
    Gen {
        #[command(flatten)]
        config: ConfigArg,
        /// Output folder.
        #[arg(long, short, default_value = "rtl_out")]
        out: PathBuf,
    },
    /// Run one training step (forward, backward, update) of a random layer on
    /// the emulator, interleaved and sequential, and report the counters.
    Emulate(emulate::EmulateArgs),
    /// Run one FC training step through the accelerator's command stream
    /// (emulator controller), interleaved and sequential, and report the
    /// hardware counters of docs/HOST.md.
    Accel(accel::AccelArgs),
    /// Assemble a command-stream program (text) and run it on the
    /// accelerator's controller (emulator, and with --rtl the RTL); reports
    /// the counters, or where and why the controller stopped.
    Program(accel::ProgramArgs),
    /// Design-space sweep over array sizes, widths and schedules (fast exact mode).
    Sweep(sweep::SweepArgs),
    /// Yosys resource reports (Xilinx 7-series, iCE40), interleaved vs sequential PEs;
    /// with --pnr place and route with timing (nextpnr: ECP5, iCE40).
    Synth(synth::SynthArgs),
    /// Bounded proofs (yosys-smtbmc) of the accelerator's AXI handshakes
    /// and of faulting commands having no effect.
    Formal(formal::FormalArgs),
    /// Train a model (MLP, CNN, SNN) on the digits data set on the emulator
    /// next to an f32 reference, or count a SCALE-Sim topology's training cycles.
    Train(train::TrainArgs),
    /// Pipelined training across several arrays (GPipe, 1F1B, LayerPipe,
    /// LayerPipe2, zero bubble, SpikePipe): time per iteration, bubble,
    /// utilisation, memory and link traffic per array, Gantt charts; with
    /// --train, accuracy against synchronous training.
    Pipeline(pipeline::PipelineArgs),
    /// Regenerate (--write) or check (--check) the measured figures of the
    /// READMEs from the commands written next to them.
    Figures(figures::FiguresArgs),
    /// Run the RTL and the emulator on the same random training step and
    /// compare them every cycle.
    Cosim {
        #[command(flatten)]
        config: ConfigArg,
        /// Seed of the random layer (printed, so a failure can be replayed).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Number of consecutive seeds to run.
        #[arg(long, default_value_t = 1)]
        runs: u64,
        /// Simulator: verilator (with register comparison) or icarus.
        #[arg(long, default_value = "verilator")]
        sim: String,
        /// Working folder for stimulus, traces and builds.
        #[arg(long, default_value = "target/cosim/runs")]
        work: PathBuf,
        /// Print each run's time (build included) on stdout; it goes to
        /// stderr otherwise, so that stdout is the same in every run.
        #[arg(long)]
        timings: bool,
        /// Co-simulate the configuration's array with this pipelining
        /// instead of its own: `dense` or `none`.
        #[arg(long)]
        pipelining: Option<String>,
    },
}

/// `cfg` with the pipelining named by `--pipelining`, if given.
fn with_pipelining(cfg: ArrayConfig, name: Option<&str>) -> Result<ArrayConfig, String> {
    use sysgrad_config::Pipelining;
    let Some(name) = name else {
        return Ok(cfg);
    };
    let all = [Pipelining::Dense, Pipelining::None];
    match all.into_iter().find(|p| p.name() == name) {
        Some(p) => cfg
            .checked_with_pipelining(p)
            .map_err(|e| format!("--pipelining {name}: {e}")),
        None => Err(format!("--pipelining {name}: expected dense or none")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let res = match cli.cmd {
        Cmd::Gen { config, out } => config.load().and_then(|cfg| gen(&cfg, &out)),
        Cmd::Emulate(args) => emulate::run(&args),
        Cmd::Accel(args) => accel::run(&args),
        Cmd::Program(args) => accel::run_program(&args),
        Cmd::Sweep(args) => sweep::run(&args),
        Cmd::Synth(args) => synth::run(&args),
        Cmd::Formal(args) => formal::run(&args),
        Cmd::Train(args) => train::run(&args),
        Cmd::Pipeline(args) => pipeline::run(&args),
        Cmd::Figures(args) => figures::run(&args),
        Cmd::Cosim {
            config,
            seed,
            runs,
            sim,
            work,
            timings,
            pipelining,
        } => config
            .load()
            .and_then(|cfg| with_pipelining(cfg, pipelining.as_deref()))
            .and_then(|cfg| cosim(&cfg, (seed, runs), &sim, &work, timings)),
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// failed run never leaves a half-written report behind.
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    sysgrad_config::files::write_atomically(path, bytes)
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// A run time: on stdout when asked for (`--timings`), on stderr
/// otherwise, so that stdout is the same in every run and a README can
/// quote it (see `sysgrad figures`).
pub fn print_timing(timings: bool, line: &str) {
    if timings {
        println!("{line}");
    } else {
        eprintln!("{line}");
    }
}

fn gen(cfg: &ArrayConfig, out: &std::path::Path) -> Result<(), String> {
    let files =
        sysgrad_hdl::write_all(cfg, out).map_err(|e| format!("writing {}: {e}", out.display()))?;
    for f in files {
        println!("wrote {}", f.display());
    }
    Ok(())
}

fn cosim(
    cfg: &ArrayConfig,
    (seed, runs): (u64, u64),
    sim: &str,
    work: &std::path::Path,
    timings: bool,
) -> Result<(), String> {
    use sysgrad_testbench::{scenario, Simulator};
    let sim = match sim {
        "verilator" => Simulator::Verilator,
        "icarus" => Simulator::Icarus,
        other => {
            return Err(format!(
                "unknown simulator `{other}` (expected verilator or icarus)"
            ))
        }
    };
    for s in seed..seed + runs {
        let start = std::time::Instant::now();
        let (rec, what) = scenario::training_step(cfg, s, sim == Simulator::Verilator);
        let report = sysgrad_testbench::run(cfg, &rec, sim, &work.join(cfg.tag()))
            .map_err(|e| format!("{} ({what}): {e}", cfg.tag()))?;
        println!(
            "{}: {what}: {} cycles match on every port, {} register samples match",
            cfg.tag(),
            report.cycles,
            report.register_samples
        );
        let minutes = start.elapsed().as_secs_f64() / 60.0;
        print_timing(timings, &format!("time: {minutes:.1} min"));
    }
    Ok(())
}

#[cfg(test)]
mod pipelining_flag {
    use super::*;
    use sysgrad_config::Pipelining;

    #[test]
    fn cosim_pipelining_overrides_the_config_or_names_the_choices() {
        let cfg = ArrayConfig::default_16x16();
        let dense = with_pipelining(cfg, Some("dense")).unwrap();
        assert_eq!(dense.pipelining(), Pipelining::Dense);
        let none = with_pipelining(dense, Some("none")).unwrap();
        assert_eq!(none.pipelining(), Pipelining::None);
        assert_eq!(with_pipelining(dense, None).unwrap(), dense);
        let e = with_pipelining(cfg, Some("both")).unwrap_err();
        assert_eq!(e, "--pipelining both: expected dense or none");
    }
}

#[cfg(test)]
mod cli_fuzz {
    use super::*;
    use clap::Parser;
    use proptest::prelude::*;

    fn word() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("gen".to_string()),
            Just("emulate".to_string()),
            Just("sweep".to_string()),
            Just("--config".to_string()),
            Just("--m".to_string()),
            Just("--sizes".to_string()),
            Just("--layers".to_string()),
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
        let missing = ConfigArg {
            config: Some("does/not/exist.toml".into()),
        };
        assert!(missing.load().unwrap_err().contains("cannot read"));
        let ext = ConfigArg {
            config: Some("config.yaml".into()),
        };
        assert!(ext.load().unwrap_err().contains("extension"));
        let cli = Cli::try_parse_from(["sysgrad", "emulate", "--m", "0"]).unwrap();
        let Cmd::Emulate(args) = cli.cmd else {
            panic!()
        };
        assert!(emulate::run(&args).unwrap_err().contains("at least 1"));
        let cli = Cli::try_parse_from(["sysgrad", "sweep", "--sizes", "4x0"]).unwrap();
        let Cmd::Sweep(args) = cli.cmd else { panic!() };
        assert!(sweep::run(&args).unwrap_err().contains("positive"));
    }

    /// `sysgrad accel` and `sysgrad program` refuse what cannot run, saying why.
    #[test]
    fn accelerator_commands_explain_bad_input() {
        let accel = |args: &[&str]| {
            let cli = Cli::try_parse_from(["sysgrad", "accel"].iter().chain(args)).unwrap();
            let Cmd::Accel(a) = cli.cmd else { panic!() };
            accel::run(&a).unwrap_err()
        };
        assert!(accel(&["--m", "0"]).contains("at least 1"));
        assert!(accel(&["--lr-shift", "64"]).contains("0..=63"));
        // The default 16x16 config's 4096-line buffers cannot hold this layer.
        assert!(accel(&["--m", "2000", "--k", "2000"]).contains("raise buffers."));
        let dir = tempfile::tempdir().unwrap();
        let program = |text: &str| {
            let path = dir.path().join("p.s");
            std::fs::write(&path, text).unwrap();
            let path = path.to_str().unwrap().to_string();
            let cli = Cli::try_parse_from(["sysgrad", "program", "--program", &path]).unwrap();
            let Cmd::Program(a) = cli.cmd else { panic!() };
            accel::run_program(&a)
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
}
