//! `sysgrad formats`: train a model in f32, in its own fixed-point format
//! and in floating-point formats of the array side by side (same initial
//! weights, batches and hyperparameters) and print the test accuracies
//! (`docs/ARCHITECTURE.md`, Floating-point formats).

use crate::args::TrainingLimits;
use anyhow::{Context, Result};
use std::path::PathBuf;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_workloads::train::formats::{train_formats, FormatChoice, FormatResult};
use sysgrad_workloads::{data, model, train};

#[derive(clap::Args)]
pub struct FormatsArgs {
    /// Model file (.toml or .json) with a fixed-point array, e.g.
    /// workloads/models/mlp.toml; give it several times for several models.
    #[arg(long, value_name = "FILE", required = true)]
    pub model: Vec<PathBuf>,
    /// Formats besides f32 and the model's own, comma-separated:
    /// floating-point ones, each `W-A-G` (weights, activations, gradients:
    /// bf16, e4m3, e5m2) or one name for all three, then `-sr` for
    /// stochastic rounding of the in-PE update; `fixed-sr` for the model's
    /// own fixed-point format with its update rounded stochastically.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bf16,bf16-sr,bf16-e4m3-e5m2,bf16-e4m3-e5m2-sr"
    )]
    pub formats: Vec<FormatChoice>,
    /// Where the products run: `cycle` (the clocked array) or `fast` (the
    /// fast exact mode; the same bits).
    #[arg(long, default_value = "fast")]
    pub engine: EngineKind,
    /// Override the model's learning-rate shift (`optimizer.lr_shift`):
    /// with smaller steps, more of each in-place update falls below half
    /// a weight's last place, which round-to-nearest drops and stochastic
    /// rounding keeps on average.
    #[arg(long, value_name = "N", value_parser = clap::builder::RangedU64ValueParser::<u32>::new().range(0..64))]
    pub lr_shift: Option<u32>,
    #[command(flatten)]
    pub limits: TrainingLimits,
}

pub fn run(a: &FormatsArgs) -> Result<()> {
    for path in &a.model {
        let mut m = model::load_model(path)?;
        if let Some(k) = a.lr_shift {
            m.spec.optimizer.lr_shift = k;
        }
        let split = data::load_split(&m)?;
        let opts = train::TrainOptions {
            epochs: a.limits.epochs,
            max_train: a.limits.max_train,
            max_test: a.limits.max_test,
            progress: !a.limits.quiet,
            engine: a.engine,
            ..train::TrainOptions::default()
        };
        let results = train_formats(&m, &split, &a.formats, &opts)
            .with_context(|| path.display().to_string())?;
        for r in &results {
            eprintln!("{}: {}: {:.1} s", m.spec.name, r.name, r.seconds);
        }
        print!("{}", table(&m, &results));
    }
    Ok(())
}

/// The accuracies after the last epoch, each against f32's (no times:
/// the table is the same on every run, so a docs figure can be checked).
fn table(m: &model::Model, results: &[FormatResult]) -> String {
    let last = |r: &FormatResult| r.test_accuracy.last().copied().unwrap_or(0.0);
    let f32_acc = results.first().map(last).unwrap_or(0.0);
    let epochs = results.first().map_or(0, |r| r.test_accuracy.len());
    let mut out = format!(
        "{} on {}x{} ({}), {epochs} epochs, lr_shift {}\n| number format | test accuracy | vs f32 (points) | test loss |\n|---|---:|---:|---:|\n",
        m.spec.name,
        m.cfg.rows(),
        m.cfg.cols(),
        match m.cfg.backward() {
            sysgrad_config::Backward::Interleaved => "interleaved",
            sysgrad_config::Backward::Sequential => "sequential",
        },
        m.spec.optimizer.lr_shift
    );
    for r in results {
        let gap = match r.name.as_str() {
            "f32" => String::new(),
            _ => format!("{:+.2}", 100.0 * (last(r) - f32_acc)),
        };
        let loss = r.test_loss.last().copied().unwrap_or(0.0);
        out += &format!(
            "| {} | {:.2}% | {gap} | {loss:.4} |\n",
            r.name,
            100.0 * last(r)
        );
    }
    out
}
