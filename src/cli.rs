//! The command line's definition: the subcommands and their arguments
//! (each subcommand's module defines its own). `main.rs` runs it;
//! `cli_doc.rs` documents it.

use crate::{
    accel, cosim, emulate, figures, formal, formats, gen, merge, pipeline, soak, sweep, synth,
    train,
};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sysgrad",
    version,
    about = "Gradient-interleaved systolic training array: generate, emulate, co-simulate"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Write the Verilog of a configuration.
    Gen(gen::GenArgs),
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
    /// Train a model in f32, its fixed-point format and floating-point
    /// formats of the array (bf16, FP8) side by side and print the test
    /// accuracies.
    Formats(formats::FormatsArgs),
    /// Pipelined training across several arrays (GPipe, 1F1B, LayerPipe,
    /// LayerPipe2, zero bubble, SpikePipe): time per iteration, bubble,
    /// utilisation, memory and link traffic per array, Gantt charts; with
    /// --train, accuracy against synchronous training.
    Pipeline(pipeline::PipelineArgs),
    /// Join the shard files of a sharded run (`--shard I/N` of sweep,
    /// pipeline or soak) into exactly the files the unsharded run writes.
    Merge(merge::MergeArgs),
    /// Regenerate (--write) or check (--check) the measured figures of the
    /// Markdown pages from the commands written next to them.
    Figures(figures::FiguresArgs),
    /// Run the RTL and the emulator on the same random training step and
    /// compare them every cycle.
    Cosim(cosim::CosimArgs),
    /// Randomised co-simulation soak over a list of seeds: each seed's
    /// random configuration and training step, RTL (Verilator) against the
    /// emulator every cycle, a failure shrunk; one row per seed in soak.csv.
    Soak(soak::SoakArgs),
    /// Print docs/CLI.md (every subcommand's help, generated from these
    /// definitions) on stdout.
    #[command(hide = true)]
    HelpMarkdown,
}
