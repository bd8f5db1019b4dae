//! The Fashion-MNIST results table: for every model of
//! `workloads/models/fashion/` (or those named), the test accuracies,
//! epochs and wall times of its last full run (`scripts/train-fashion.sh`,
//! read from `target/fashion/<model>/summary.json`), and the array cycles
//! and on-chip energy of one training sample, interleaved against
//! sequential. The cycles and energy are counted from the layer shapes by
//! the fast mode's ledger (the array's counters depend on shapes only) and
//! checked against the run's own epoch-1 count; energy is the per-action
//! model (`workloads/src/energy.rs`, default 45 nm table) with the buffer
//! sizes of `workloads/topologies/sysgrad_16x16.cfg`.
//!
//!     target/release/fashion-table [--runs target/fashion] [MODEL.toml ...]

#[path = "../fashion_table_args.rs"]
mod fashion_table_args;
use fashion_table_args::FashionTableArgs as Args;

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::path::Path;
use sysgrad_config::Backward;
use sysgrad_emulator::fast::{count_backward, count_forward};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_emulator::Stats;
use sysgrad_workloads::energy::{EnergyModel, EnergyTable};
use sysgrad_workloads::model::{load_model, Model, OptimizerKind};
use sysgrad_workloads::report::layers::gemm_shapes;
use sysgrad_workloads::scalesim;

/// The counters of one training step (forward and backward of every
/// layer) of `model` with the backward `schedule`.
fn step_stats(model: &Model, schedule: Backward) -> Result<Stats> {
    let o = model.spec.optimizer;
    let sink = match o.kind {
        OptimizerKind::Momentum => DwSink::Drain,
        OptimizerKind::Sgd => DwSink::Update {
            lr_shift: o.lr_shift,
        },
    };
    let cfg = model.cfg.with_backward(schedule);
    let mut stats = Stats::default();
    for g in gemm_shapes(model, model.spec.training.batch_size)
        .into_iter()
        .flatten()
    {
        let mkn = (g.m, g.k, g.n);
        count_forward(&mut stats, &cfg, mkn)?;
        count_backward(&mut stats, &cfg, schedule, mkn, sink)?;
    }
    Ok(stats)
}

/// One row of the table.
fn row(path: &Path, a: &Args, energy_of: &dyn Fn(&Model, &Stats) -> f64) -> Result<String> {
    let model = load_model(path)?;
    let name = path
        .file_stem()
        .context("a model file name")?
        .to_string_lossy();
    let summary_path = a.runs.join(&*name).join("summary.json");
    let text = std::fs::read_to_string(&summary_path).with_context(|| {
        format!(
            "{}: no run yet (scripts/train-fashion.sh {})",
            summary_path.display(),
            path.display()
        )
    })?;
    let s: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not JSON", summary_path.display()))?;
    let num = |p: &str| -> Result<f64> {
        s.pointer(p)
            .and_then(|v| v.as_f64())
            .with_context(|| format!("{}: no number at {p}", summary_path.display()))
    };
    let epochs = num("/epochs")?;
    let train = num("/train_samples")?;
    let batch = model.spec.training.batch_size as f64;
    let il = step_stats(&model, Backward::Interleaved)?;
    let seq = step_stats(&model, Backward::Sequential)?;
    let (il_cycles, seq_cycles) = (il.total().cycles as f64, seq.total().cycles as f64);
    // The run counted its first epoch on the array: it must agree.
    let steps = (train / batch).ceil();
    let counted = num("/network/training_cycles_interleaved")?;
    if train % batch == 0.0 && counted != il_cycles * steps {
        bail!(
            "{name}: the run counted {counted} training cycles in epoch 1, the shapes give {}",
            il_cycles * steps
        );
    }
    let (e_il, e_seq) = (energy_of(&model, &il), energy_of(&model, &seq));
    Ok(format!(
        "| `{}` | {} | {:.2}% | {:.2}% | {:+.2} | {} | {:.0} s | {:.0} s | {:.0} | {:.0} | {:.2}x | {:.2} | {:.2} | {:.2}x |",
        model.spec.name,
        model.cfg.tag(),
        100.0 * num("/fixed/test_accuracy")?,
        100.0 * num("/float/test_accuracy")?,
        num("/accuracy_gap_points")?,
        epochs,
        num("/fixed_seconds")? / epochs,
        num("/float_seconds")? / epochs,
        il_cycles / batch,
        seq_cycles / batch,
        seq_cycles / il_cycles,
        e_il / batch / 1e6,
        e_seq / batch / 1e6,
        e_seq / e_il,
    ))
}

fn run(a: &Args) -> Result<()> {
    let mut models = a.models.clone();
    if models.is_empty() {
        let dir = Path::new("workloads/models/fashion");
        for e in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "toml") {
                models.push(p);
            }
        }
        models.sort();
    }
    let sc = scalesim::load_config(&a.buffers)?;
    let buffers = scalesim::buffer_sizes(&sc);
    let energy_of = |m: &Model, s: &Stats| {
        EnergyModel::new(EnergyTable::default(), &m.cfg, buffers)
            .stats(s)
            .1
            .on_chip_pj()
    };
    println!(
        "**Fashion-MNIST, full training set (60,000) and test set (10,000): test accuracy after the \
         last epoch, fixed point (fast exact mode) against the f32 reference from the same initial \
         weights; wall time per epoch (training and test, each network); array cycles and on-chip \
         energy (uJ) per training sample, interleaved (IL) against sequential (SEQ) backward**\n"
    );
    println!(
        "| model | array | fixed | f32 | f32 - fixed (points) | epochs | fixed s/epoch | f32 s/epoch | cycles/sample IL | SEQ | SEQ/IL | uJ/sample IL | SEQ | SEQ/IL |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for m in &models {
        println!("{}", row(m, a, &energy_of)?);
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    match run(&Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fashion-table: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
