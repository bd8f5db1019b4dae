//! The arguments of the `train-speed` benchmark (`src/bin/train_speed.rs`),
//! here so that `sysgrad help-markdown` documents them beside the
//! `sysgrad` subcommands.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "train-speed",
    about = "Fixed-point fast-mode training step against the f32 reference's"
)]
pub struct TrainSpeedArgs {
    /// The model to time.
    #[arg(long, default_value = "workloads/models/fashion/cnn.toml")]
    pub model: PathBuf,
    /// Training steps timed per network (after one warm-up step).
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// Also time both networks on a one-thread pool.
    #[arg(long)]
    pub threads_too: bool,
}
