//! The arguments of the `sim-speed` benchmark (`src/bin/sim_speed.rs`),
//! here so that `sysgrad help-markdown` documents them beside the
//! `sysgrad` subcommands.

use crate::args::Out;
use clap::{Parser, ValueEnum};

/// The workloads of a speed run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SpeedWorkload {
    /// An interleaved backward pass on the default array, `none` pipelining.
    None,
    /// The same pass on the dense array.
    Dense,
    /// One training step of the CNN example.
    Cnn,
    /// The `none` pass in floating point (bf16 weights, E4M3 activations,
    /// E5M2 gradients, stochastic update), on every engine; only when
    /// asked for (its Verilator model takes minutes to build).
    Float,
}

/// Simulation speed, measured in one run: the same stimulus through the
/// cycle-accurate emulator, Verilator (1 and 2 model threads) and Icarus,
/// as simulated cycles per second.
#[derive(Parser, Debug)]
#[command(
    name = "sim-speed",
    version,
    mut_arg("out", |a| a.help("Working folder of the Verilator and Icarus runs [default: speed/ in the co-simulation cache, target/cosim or $SYSGRAD_COSIM_DIR]"))
)]
pub struct SimSpeedArgs {
    /// N of the N x N x N layer of the backward-pass workloads.
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Cycles Icarus simulates (it is the slowest by far).
    #[arg(long, default_value_t = 4000)]
    pub icarus_cycles: usize,
    /// Time the cycle-accurate emulator alone on the same workloads (no
    /// simulator builds), for profiling it.
    #[arg(long)]
    pub emulator_only: bool,
    /// Run one workload only [default: all].
    #[arg(long)]
    pub only: Option<SpeedWorkload>,
    /// Instead: time the cycle-accurate emulator alone on R x R arrays
    /// (an R^3 interleaved backward pass with update, Q7.8 data, 40-bit
    /// accumulators), sizes comma-separated, e.g. 16,64,128,256.
    #[arg(long, value_delimiter = ',', value_name = "R", conflicts_with_all = ["only", "emulator_only"])]
    pub array_sizes: Vec<usize>,
    #[command(flatten)]
    pub out: Out,
}
