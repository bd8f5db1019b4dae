//! The arguments of `fashion-table` (`src/bin/fashion_table.rs`), here so
//! that `sysgrad help-markdown` documents them beside the `sysgrad`
//! subcommands.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "fashion-table",
    about = "The Fashion-MNIST results table of the last full runs"
)]
pub struct FashionTableArgs {
    /// The folder `scripts/train-fashion.sh` wrote the runs to.
    #[arg(long, default_value = "target/fashion")]
    pub runs: PathBuf,
    /// The buffer sizes of the energy model (a SCALE-Sim config).
    #[arg(long, default_value = "workloads/topologies/sysgrad_16x16.cfg")]
    pub buffers: PathBuf,
    /// Model files [default: workloads/models/fashion/*.toml].
    pub models: Vec<PathBuf>,
}
