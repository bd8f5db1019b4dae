//! One model trained in several number formats side by side: the f32
//! reference, the model's own fixed-point format and any floating-point
//! formats of the array (`docs/ARCHITECTURE.md`, Floating-point formats),
//! each from the same initial weights, on the same batches in the same
//! order, with the same hyperparameters (the model's learning-rate and
//! loss-gradient shifts; nothing tuned per format).

use super::{evaluate, limit, run_epochs, step_of, Epochs, TrainOptions};
use crate::arith::{Arith, FixedArith, FloatArith, FormatArith, Rounding as HostRounding, Step};
use crate::data::{Sample, Split};
use crate::error::{Result, WorkloadError};
use crate::model::Model;
use crate::net::{initial_weights, BatchResult, Network};
use ndarray::Array4;
use std::time::Instant;
use sysgrad_config::float::{FloatFormat, Rounding};
use sysgrad_config::{Numbers, DEFAULT_SEED};

/// A number format to train in beside f32 and the model's own: the
/// model's fixed-point format with its in-PE update rounded
/// stochastically (`fixed-sr`), or a floating-point format of the array
/// (its tag: `bf16-e4m3-e5m2-sr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatChoice {
    FixedStochastic,
    Float(FloatFormat),
}

/// The name of [`FormatChoice::FixedStochastic`].
pub const FIXED_SR: &str = "fixed-sr";

impl std::str::FromStr for FormatChoice {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s == FIXED_SR {
            return Ok(FormatChoice::FixedStochastic);
        }
        s.parse().map(FormatChoice::Float).map_err(|e| {
            format!("{e}; or {FIXED_SR:?}: the model's fixed-point format, its update rounded stochastically")
        })
    }
}

/// What one number format reached.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FormatResult {
    /// `f32`, the fixed-point tag (`i16a40f10`) or the float tag
    /// (`bf16-e4m3-e5m2-sr`).
    pub name: String,
    /// Test accuracy after each epoch.
    pub test_accuracy: Vec<f64>,
    /// Mean test loss after each epoch.
    pub test_loss: Vec<f64>,
    /// Wall time of its training steps and evaluations, all epochs.
    pub seconds: f64,
}

/// A network of some number system, as the loop below drives it.
trait Trainee {
    fn step(&mut self) -> &mut Step;
    fn train_step(&mut self, x: &Array4<f64>, labels: &[u8]) -> Result<BatchResult>;
    fn test(
        &mut self,
        test_set: &[Sample],
        model: &Model,
        eval_batch: usize,
    ) -> Result<BatchResult>;
}

/// The step of each number system's arithmetic.
trait HasStep {
    fn step_mut(&mut self) -> &mut Step;
}
impl HasStep for FloatArith {
    fn step_mut(&mut self) -> &mut Step {
        &mut self.step
    }
}
impl HasStep for FixedArith {
    fn step_mut(&mut self) -> &mut Step {
        &mut self.step
    }
}
impl HasStep for FormatArith {
    fn step_mut(&mut self) -> &mut Step {
        &mut self.step
    }
}

impl<A: Arith + HasStep> Trainee for Network<A> {
    fn step(&mut self) -> &mut Step {
        self.arith.step_mut()
    }
    fn train_step(&mut self, x: &Array4<f64>, labels: &[u8]) -> Result<BatchResult> {
        let input = self.input(x);
        Network::train_step(self, input, labels)
    }
    fn test(
        &mut self,
        test_set: &[Sample],
        model: &Model,
        eval_batch: usize,
    ) -> Result<BatchResult> {
        evaluate(self, test_set, model, eval_batch)
    }
}

/// Trains `model` in f32, in its own fixed-point format and in each of
/// `formats` (on the model's array with that format, on `opts.engine`),
/// for `opts.epochs` (or the model's) epochs.
pub fn train_formats(
    model: &Model,
    split: &Split,
    formats: &[FormatChoice],
    opts: &TrainOptions,
) -> Result<Vec<FormatResult>> {
    let spec = &model.spec;
    let train_set = limit(&split.train, opts.max_train);
    let test_set = limit(&split.test, opts.max_test);
    let epochs = opts.epochs.unwrap_or(spec.training.epochs);
    if epochs == 0 || train_set.is_empty() || test_set.is_empty() {
        return Err(WorkloadError::out_of_range(
            "epochs / training samples / test samples",
            format!("{epochs} / {} / {}", train_set.len(), test_set.len()),
            "at least 1 each",
        ));
    }
    let Numbers::Fixed(_) = model.cfg.numbers() else {
        return Err(WorkloadError::model(
            "format.kind",
            "the model's own configuration must be fixed point (the floating-point formats are chosen with --formats)",
        ));
    };
    let step = step_of(model);
    let init = initial_weights(model);
    // A fixed-point row: the array `cfg`, the host's momentum step rounded
    // as `host` says.
    let fixed = |cfg, host| -> Box<dyn Trainee> {
        Box::new(Network::new(
            model,
            FixedArith::on(opts.engine, cfg, step)
                .with_clamp_gradient(spec.optimizer.clamp_gradient)
                .with_rounding(host, spec.training.seed),
            &init,
        ))
    };
    let mut names = vec!["f32".to_string(), model.cfg.numbers().tag()];
    let mut nets: Vec<Box<dyn Trainee>> = vec![
        Box::new(Network::new(model, FloatArith::new(step), &init)),
        fixed(model.cfg, spec.optimizer.rounding),
    ];
    let refused = |e: sysgrad_config::ConfigError| WorkloadError::model("format", e.to_string());
    for choice in formats {
        let net: Box<dyn Trainee> = match choice {
            // The PEs' update and a momentum model's host step both
            // round stochastically, as the float `-sr` rows do.
            FormatChoice::FixedStochastic => {
                let cfg = model
                    .cfg
                    .with_update_rounding((Rounding::Stochastic, DEFAULT_SEED))
                    .map_err(refused)?;
                names.push(cfg.numbers().tag());
                fixed(cfg, HostRounding::Stochastic)
            }
            FormatChoice::Float(f) => {
                let cfg = model
                    .cfg
                    .with_numbers(Numbers::Float(*f))
                    .map_err(refused)?;
                names.push(f.tag());
                Box::new(Network::new(
                    model,
                    FormatArith::on(opts.engine, cfg, step, spec.training.seed)?,
                    &init,
                ))
            }
        };
        nets.push(net);
    }
    let results: Vec<FormatResult> = names
        .into_iter()
        .map(|name| FormatResult {
            name,
            test_accuracy: Vec::new(),
            test_loss: Vec::new(),
            seconds: 0.0,
        })
        .collect();
    let mut run = Formats {
        nets,
        results,
        model,
        test_set,
        eval_batch: opts.eval_batch,
    };
    run_epochs(model, train_set, epochs, opts.progress, &mut run)?;
    Ok(run.results)
}

/// [`train_formats`]'s trainer: every format's network on the same batch.
struct Formats<'a> {
    nets: Vec<Box<dyn Trainee>>,
    results: Vec<FormatResult>,
    model: &'a Model,
    test_set: &'a [Sample],
    eval_batch: usize,
}

impl Epochs for Formats<'_> {
    fn begin(&mut self, _: usize, lr_shift: u32) {
        for net in self.nets.iter_mut() {
            net.step().lr_shift = lr_shift;
        }
    }

    fn batch(&mut self, x: &Array4<f64>, labels: &[u8]) -> Result<()> {
        for (net, r) in self.nets.iter_mut().zip(self.results.iter_mut()) {
            let t = Instant::now();
            net.train_step(x, labels)?;
            r.seconds += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    fn end(&mut self, epoch: usize, bar: &indicatif::ProgressBar) -> Result<()> {
        for (net, r) in self.nets.iter_mut().zip(self.results.iter_mut()) {
            let t = Instant::now();
            let res = net.test(self.test_set, self.model, self.eval_batch)?;
            r.test_accuracy.push(res.accuracy());
            r.test_loss.push(res.mean_loss());
            r.seconds += t.elapsed().as_secs_f64();
        }
        bar.set_message(format!("epoch {}", epoch + 1));
        Ok(())
    }
}
