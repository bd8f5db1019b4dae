//! Training the fixed-point network on the array and its f32 reference side
//! by side: same initial weights, same batches in the same order, same
//! input spikes, same hyperparameters.

pub mod encode;

use crate::arith::{FixedArith, FloatArith, Ledger, Step};
use crate::data::{Sample, Split};
use crate::error::{Result, WorkloadError};
use crate::model::Model;
use crate::net::{initial_weights, Activity, BatchResult, Network};
use std::io::IsTerminal;
use std::time::Instant;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_rng::Rng;

#[derive(Debug, Clone)]
pub struct TrainOptions {
    /// Overrides `training.epochs`.
    pub epochs: Option<usize>,
    /// Epochs in which every backward pass is also run on a sequential
    /// array (for the comparison; its counters do not depend on the data,
    /// so one epoch gives the per-epoch figures).
    pub sequential_epochs: usize,
    /// Use only the first samples of the training / test set (quick runs).
    pub max_train: Option<usize>,
    pub max_test: Option<usize>,
    /// Show a progress bar (only if stderr is a terminal).
    pub progress: bool,
    /// Samples per evaluation batch.
    pub eval_batch: usize,
    /// Clocked or fast exact array model (same results and counters).
    pub engine: EngineKind,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: None,
            sequential_epochs: 1,
            max_train: None,
            max_test: None,
            progress: true,
            eval_batch: 128,
            engine: EngineKind::Cycle,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Metrics {
    /// Mean loss and accuracy over the epoch's training batches (measured
    /// while training, before each batch's update).
    pub train_loss: f64,
    pub train_accuracy: f64,
    /// After the epoch, on the held-out test set.
    pub test_loss: f64,
    pub test_accuracy: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EpochRecord {
    pub epoch: usize,
    pub fixed: Metrics,
    pub float: Metrics,
    /// Wall time of the fixed-point network (emulator) and of the float one.
    pub fixed_seconds: f64,
    pub float_seconds: f64,
}

/// Everything a run produced.
pub struct TrainRun {
    pub model: Model,
    pub train_size: usize,
    pub test_size: usize,
    pub epochs: Vec<EpochRecord>,
    /// The array's counters, per epoch.
    pub ledgers: Vec<Ledger>,
    pub fixed: Network<FixedArith>,
    pub float: Network<FloatArith>,
}

impl TrainRun {
    pub fn last(&self) -> &EpochRecord {
        self.epochs.last().expect("at least one epoch")
    }
    pub fn activity(&self) -> (Vec<Option<Activity>>, Vec<Option<Activity>>) {
        (
            self.fixed.layers.iter().map(|l| l.activity()).collect(),
            self.float.layers.iter().map(|l| l.activity()).collect(),
        )
    }
}

/// Both networks of `model`, built from the same initial weights, the
/// fixed-point one on the cycle-accurate array.
pub fn build(model: &Model) -> (Network<FixedArith>, Network<FloatArith>) {
    build_on(model, EngineKind::Cycle)
}

/// [`build`] with the fixed-point network's products on `engine`.
pub fn build_on(model: &Model, engine: EngineKind) -> (Network<FixedArith>, Network<FloatArith>) {
    let o = model.spec.optimizer;
    let step = Step {
        lr_shift: o.lr_shift,
        momentum: o.momentum,
    };
    let init = initial_weights(model);
    (
        Network::new(model, FixedArith::on(engine, model.cfg, step), &init),
        Network::new(model, FloatArith::new(step), &init),
    )
}

fn progress_bar(total: u64, show: bool) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} batches, eta {eta}, {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The order in which epoch `epoch` (0-based) visits `n` training samples.
pub fn epoch_order(seed: u64, epoch: usize, n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    Rng::derive(seed, &format!("epoch-{epoch}")).shuffle(&mut order);
    order
}

/// Loss and accuracy of `net` on `test_set`, in batches of `eval_batch`,
/// with the input spikes every evaluation draws (the same for any network
/// of the model, so both number systems see the same inputs).
pub fn evaluate<A: crate::arith::Arith>(
    net: &mut Network<A>,
    test_set: &[Sample],
    model: &Model,
    eval_batch: usize,
) -> Result<BatchResult> {
    let spec = &model.spec;
    let mut test_spikes = Rng::derive(spec.training.seed, "test-spikes");
    let mut res = BatchResult::default();
    for chunk in test_set.chunks(eval_batch.max(1)) {
        let samples: Vec<&Sample> = chunk.iter().collect();
        let x = encode::encode(&samples, &spec.input, &mut test_spikes);
        res.add(&net.evaluate(net.input(&x), &encode::labels(&samples))?);
    }
    Ok(res)
}

/// The first `n` samples of `v` (all of them for `None`).
pub fn limit(v: &[Sample], n: Option<usize>) -> &[Sample] {
    &v[..n.unwrap_or(v.len()).min(v.len())]
}

/// Trains both networks and evaluates them after every epoch.
/// One training step of the fixed-point network on its first batch of
/// `samples`, with every array cycle recorded: the stimulus a benchmark or a
/// co-simulation replays on the RTL.
pub fn record_training_step(
    model: &Model,
    samples: &[Sample],
) -> Result<sysgrad_emulator::Recording> {
    let spec = &model.spec;
    let batch: Vec<&Sample> = samples
        .iter()
        .take(spec.training.batch_size.max(1))
        .collect();
    if batch.is_empty() {
        return Err(WorkloadError::model(
            "data",
            "no samples to record a step on".to_string(),
        ));
    }
    let (mut fixed, _) = build(model);
    let mut spikes = Rng::derive(spec.training.seed, "input-spikes");
    let x = encode::encode(&batch, &spec.input, &mut spikes);
    fixed.arith.start_recording();
    fixed.train_step(fixed.input(&x), &encode::labels(&batch))?;
    Ok(fixed.arith.take_recording().expect("recording was started"))
}

pub fn train(model: &Model, split: &Split, opts: &TrainOptions) -> Result<TrainRun> {
    let spec = &model.spec;
    let train_set = limit(&split.train, opts.max_train);
    let test_set = limit(&split.test, opts.max_test);
    let epochs = opts.epochs.unwrap_or(spec.training.epochs);
    if epochs == 0 {
        return Err(WorkloadError::out_of_range("epochs", 0, "1 or more"));
    }
    if train_set.is_empty() || test_set.is_empty() {
        return Err(WorkloadError::model(
            "data",
            format!(
                "{} training and {} test samples; both sets need at least one",
                train_set.len(),
                test_set.len()
            ),
        ));
    }
    let batch = spec.training.batch_size.min(train_set.len()).max(1);
    let (mut fixed, mut float) = build_on(model, opts.engine);
    let mut spikes = Rng::derive(spec.training.seed, "input-spikes");
    let batches_per_epoch = train_set.len().div_ceil(batch);
    let bar = progress_bar((epochs * batches_per_epoch) as u64, opts.progress);
    let mut records = Vec::new();
    let mut ledgers = Vec::new();

    for epoch in 0..epochs {
        fixed
            .arith
            .set_shadow_sequential(epoch < opts.sequential_epochs);
        let order = epoch_order(spec.training.seed, epoch, train_set.len());
        let (mut fx_res, mut fl_res) = (BatchResult::default(), BatchResult::default());
        let (mut fx_time, mut fl_time) = (0.0, 0.0);
        for chunk in order.chunks(batch) {
            let samples: Vec<&Sample> = chunk.iter().map(|&i| &train_set[i]).collect();
            let x = encode::encode(&samples, &spec.input, &mut spikes);
            let labels = encode::labels(&samples);
            let t = Instant::now();
            fx_res.add(&fixed.train_step(fixed.input(&x), &labels)?);
            fx_time += t.elapsed().as_secs_f64();
            let t = Instant::now();
            fl_res.add(&float.train_step(float.input(&x), &labels)?);
            fl_time += t.elapsed().as_secs_f64();
            bar.inc(1);
        }
        let t = Instant::now();
        let fx_test = evaluate(&mut fixed, test_set, model, opts.eval_batch)?;
        fx_time += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let fl_test = evaluate(&mut float, test_set, model, opts.eval_batch)?;
        fl_time += t.elapsed().as_secs_f64();
        let metrics = |tr: &BatchResult, te: &BatchResult| Metrics {
            train_loss: tr.mean_loss(),
            train_accuracy: tr.accuracy(),
            test_loss: te.mean_loss(),
            test_accuracy: te.accuracy(),
        };
        let rec = EpochRecord {
            epoch: epoch + 1,
            fixed: metrics(&fx_res, &fx_test),
            float: metrics(&fl_res, &fl_test),
            fixed_seconds: fx_time,
            float_seconds: fl_time,
        };
        bar.set_message(format!(
            "epoch {} test: fixed {:.1}%, f32 {:.1}%",
            rec.epoch,
            100.0 * rec.fixed.test_accuracy,
            100.0 * rec.float.test_accuracy
        ));
        records.push(rec);
        ledgers.push(fixed.arith.take_ledger());
    }
    bar.finish_and_clear();
    Ok(TrainRun {
        model: model.clone(),
        train_size: train_set.len(),
        test_size: test_set.len(),
        epochs: records,
        ledgers,
        fixed,
        float,
    })
}
