//! Training the fixed-point network on the array and its f32 reference side
//! by side: same initial weights, same batches in the same order, same
//! input spikes, same hyperparameters.

pub mod encode;
pub mod formats;

use crate::arith::{AccelOptions, FixedArith, FloatArith, Ledger, Step};
use crate::compile::{accelerator_config, compile_network, NetworkPlan};
use crate::data::{Sample, Split};
use crate::error::{Result, WorkloadError};
use crate::model::Model;
use crate::net::{initial_weights, Activity, BatchResult, Layer, Network};
use ndarray::{Array2, Array4};
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
    /// Run the products on this emulated accelerator instead of the bare
    /// array (`engine` is then the model of the reference below).
    pub accelerator: Option<AccelOptions>,
    /// With an accelerator: train a network on the array (`engine`) beside
    /// it and fail unless every weight is the same after every step.
    pub check_every_step: bool,
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
            accelerator: None,
            check_every_step: true,
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
    /// The compiled network and the accelerator, when the products ran on it.
    pub plan: Option<NetworkPlan>,
    pub accelerator: Option<AccelOptions>,
    /// Training steps whose weights were checked against the array engine.
    pub steps_checked: usize,
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

fn step_of(model: &Model) -> Step {
    let o = model.spec.optimizer;
    Step {
        lr_shift: o.lr_shift,
        momentum: o.momentum,
    }
}

/// The fixed-point network on the accelerator `opts` (compiled for it),
/// from the same initial weights as [`build`]'s.
pub fn build_on_accelerator(
    model: &Model,
    opts: AccelOptions,
) -> Result<(Network<FixedArith>, NetworkPlan)> {
    let cfg = accelerator_config(model, &opts.cfg)?;
    let plan = compile_network(model, &cfg)?;
    let arith = FixedArith::on_accelerator(
        AccelOptions { cfg, ..opts },
        step_of(model),
        plan.placement(&cfg),
    )
    .with_clamp_gradient(model.spec.optimizer.clamp_gradient)
    .with_rounding(model.spec.optimizer.rounding, model.spec.training.seed);
    Ok((Network::new(model, arith, &initial_weights(model)), plan))
}

/// The weights (and momentum velocities) of every layer that has them.
pub fn weights(net: &Network<FixedArith>) -> Vec<(usize, &'static str, &Array2<i64>)> {
    let mut out = Vec::new();
    for (i, l) in net.layers.iter().enumerate() {
        let (w, v) = match l {
            Layer::Dense(d) => (&d.w, d.velocity.as_ref()),
            Layer::Conv2d(c) => (&c.w, c.velocity.as_ref()),
            _ => continue,
        };
        out.push((i, "weights", w));
        if let Some(v) = v {
            out.push((i, "momentum velocities", v));
        }
    }
    out
}

/// An error naming the first weight of `got` that differs from `want`.
pub fn compare_weights(
    step: usize,
    engine: &'static str,
    got: &Network<FixedArith>,
    want: &Network<FixedArith>,
) -> Result<()> {
    for ((layer, what, g), (_, _, w)) in weights(got).into_iter().zip(weights(want)) {
        if let Some(((at, &gv), &wv)) = g.indexed_iter().zip(w.iter()).find(|((_, a), b)| a != b) {
            return Err(WorkloadError::EngineMismatch {
                step,
                layer,
                engine,
                what,
                at,
                got: gv,
                want: wv,
            });
        }
    }
    Ok(())
}

/// Both networks of `model`, built from the same initial weights, the
/// fixed-point one on the cycle-accurate array.
pub fn build(model: &Model) -> (Network<FixedArith>, Network<FloatArith>) {
    build_on(model, EngineKind::Cycle)
}

/// [`build`] with the fixed-point network's products on `engine`.
pub fn build_on(model: &Model, engine: EngineKind) -> (Network<FixedArith>, Network<FloatArith>) {
    let step = step_of(model);
    let o = model.spec.optimizer;
    let init = initial_weights(model);
    (
        Network::new(
            model,
            FixedArith::on(engine, model.cfg, step)
                .with_clamp_gradient(o.clamp_gradient)
                .with_rounding(o.rounding, model.spec.training.seed),
            &init,
        ),
        Network::new(model, FloatArith::new(step), &init),
    )
}

fn progress_bar(total: u64, show: bool) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {human_pos}/{human_len} samples, {per_sec}, eta {eta}, {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// The clamps of an epoch's ledger in a few words (empty when none).
pub fn clamp_note(ledger: &Ledger) -> String {
    use crate::arith::Quantity;
    let parts: Vec<String> = [
        Quantity::Activation,
        Quantity::InputGradient,
        Quantity::Weight,
        Quantity::Velocity,
        Quantity::Accumulator,
        Quantity::Host,
    ]
    .into_iter()
    .filter_map(|q| {
        let n = ledger.clamped(q);
        (n > 0).then(|| format!("{n} {}", q.name()))
    })
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("; clamped: {}", parts.join(", "))
    }
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
    let (mut fixed, float) = build_on(model, opts.engine);
    let mut plan = None;
    // On the accelerator, the array network becomes the reference that
    // every step's weights are checked against.
    let mut reference = None;
    if let Some(acc) = opts.accelerator {
        let (net, p) = build_on_accelerator(model, acc)?;
        plan = Some(p);
        let array = std::mem::replace(&mut fixed, net);
        reference = opts.check_every_step.then_some(array);
    }
    if let crate::arith::LrSchedule::Step { every: 0, .. } = spec.optimizer.schedule {
        return Err(WorkloadError::out_of_range(
            "optimizer.schedule.every",
            0,
            "1 or more",
        ));
    }
    let mut run = SideBySide {
        model,
        test_set,
        train_size: train_set.len(),
        opts,
        epochs,
        fixed,
        float,
        reference,
        steps_checked: 0,
        epoch: EpochTally::default(),
        records: Vec::new(),
        ledgers: Vec::new(),
    };
    run_epochs(model, train_set, epochs, opts.progress, &mut run)?;
    Ok(TrainRun {
        model: model.clone(),
        train_size: train_set.len(),
        test_size: test_set.len(),
        epochs: run.records,
        ledgers: run.ledgers,
        fixed: run.fixed,
        float: run.float,
        plan,
        accelerator: opts.accelerator,
        steps_checked: run.steps_checked,
    })
}

/// What a trainer does at each point of the loop every trainer shares
/// ([`run_epochs`]).
pub(crate) trait Epochs {
    /// Before epoch `epoch`'s batches (from 0), at the schedule's `lr_shift`.
    fn begin(&mut self, epoch: usize, lr_shift: u32);
    /// One batch: its input as the model encodes it, and its labels.
    fn batch(&mut self, x: &Array4<f64>, labels: &[u8]) -> Result<()>;
    /// After the epoch's batches: tests, records, the bar's message.
    fn end(&mut self, epoch: usize, bar: &indicatif::ProgressBar) -> Result<()>;
}

/// The loop of every trainer: `epochs` epochs over `train_set` in the
/// model's seeded order, cut into its batches and encoded as its input
/// (the input spikes drawn from one stream across the run), with a
/// progress bar over the samples.
pub(crate) fn run_epochs(
    model: &Model,
    train_set: &[Sample],
    epochs: usize,
    progress: bool,
    trainer: &mut impl Epochs,
) -> Result<()> {
    let spec = &model.spec;
    let batch = spec.training.batch_size.min(train_set.len()).max(1);
    let mut spikes = Rng::derive(spec.training.seed, "input-spikes");
    let bar = progress_bar((epochs * train_set.len()) as u64, progress);
    let o = spec.optimizer;
    for epoch in 0..epochs {
        trainer.begin(epoch, o.schedule.lr_shift(o.lr_shift, epoch));
        let order = epoch_order(spec.training.seed, epoch, train_set.len());
        for chunk in order.chunks(batch) {
            let samples: Vec<&Sample> = chunk.iter().map(|&i| &train_set[i]).collect();
            let x = encode::encode(&samples, &spec.input, &mut spikes);
            trainer.batch(&x, &encode::labels(&samples))?;
            bar.inc(chunk.len() as u64);
        }
        trainer.end(epoch, &bar)?;
    }
    bar.finish_and_clear();
    Ok(())
}

/// One epoch's training results and wall time, fixed point and f32.
#[derive(Default)]
struct EpochTally {
    fixed: BatchResult,
    float: BatchResult,
    fixed_seconds: f64,
    float_seconds: f64,
}

/// [`train`]'s trainer: the fixed-point network (on the array or the
/// accelerator) and its f32 reference, and on the accelerator the array
/// network every step is checked against.
struct SideBySide<'a> {
    model: &'a Model,
    test_set: &'a [Sample],
    train_size: usize,
    opts: &'a TrainOptions,
    epochs: usize,
    fixed: Network<FixedArith>,
    float: Network<FloatArith>,
    reference: Option<Network<FixedArith>>,
    steps_checked: usize,
    epoch: EpochTally,
    records: Vec<EpochRecord>,
    ledgers: Vec<Ledger>,
}

/// `f()`, and the seconds it took added to `seconds`.
fn timed<T>(seconds: &mut f64, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    *seconds += t.elapsed().as_secs_f64();
    out
}

impl Epochs for SideBySide<'_> {
    fn begin(&mut self, epoch: usize, lr_shift: u32) {
        self.fixed
            .arith
            .set_shadow_sequential(epoch < self.opts.sequential_epochs);
        self.fixed.arith.step.lr_shift = lr_shift;
        self.float.arith.step.lr_shift = lr_shift;
        if let Some(r) = &mut self.reference {
            r.arith.step.lr_shift = lr_shift;
        }
        self.epoch = EpochTally::default();
    }

    fn batch(&mut self, x: &Array4<f64>, labels: &[u8]) -> Result<()> {
        let (fixed, e) = (&mut self.fixed, &mut self.epoch);
        let res = timed(&mut e.fixed_seconds, || {
            fixed.train_step(fixed.input(x), labels)
        })?;
        e.fixed.add(&res);
        if let Some(r) = &mut self.reference {
            r.train_step(r.input(x), labels)?;
            self.steps_checked += 1;
            compare_weights(self.steps_checked, "accel", &self.fixed, r)?;
            r.arith.take_ledger();
        }
        let float = &mut self.float;
        let res = timed(&mut e.float_seconds, || {
            float.train_step(float.input(x), labels)
        })?;
        e.float.add(&res);
        Ok(())
    }

    fn end(&mut self, epoch: usize, bar: &indicatif::ProgressBar) -> Result<()> {
        let (model, test_set, eval_batch) = (self.model, self.test_set, self.opts.eval_batch);
        let e = &mut self.epoch;
        let fixed = &mut self.fixed;
        let fx_test = timed(&mut e.fixed_seconds, || {
            evaluate(fixed, test_set, model, eval_batch)
        })?;
        let float = &mut self.float;
        let fl_test = timed(&mut e.float_seconds, || {
            evaluate(float, test_set, model, eval_batch)
        })?;
        let metrics = |tr: &BatchResult, te: &BatchResult| Metrics {
            train_loss: tr.mean_loss(),
            train_accuracy: tr.accuracy(),
            test_loss: te.mean_loss(),
            test_accuracy: te.accuracy(),
        };
        let rec = EpochRecord {
            epoch: epoch + 1,
            fixed: metrics(&e.fixed, &fx_test),
            float: metrics(&e.float, &fl_test),
            fixed_seconds: e.fixed_seconds,
            float_seconds: e.float_seconds,
        };
        bar.set_message(format!(
            "epoch {} test: fixed {:.1}%, f32 {:.1}%",
            rec.epoch,
            100.0 * rec.fixed.test_accuracy,
            100.0 * rec.float.test_accuracy
        ));
        let ledger = self.fixed.arith.take_ledger();
        if self.opts.progress && bar.is_hidden() && self.epochs > 1 {
            // No bar (stderr is a log file): one line per epoch, so that a
            // long run shows where it is.
            eprintln!(
                "epoch {}/{}: test accuracy fixed {:.2}%, f32 {:.2}% ({:.0} s fixed, {:.0} s f32, {:.0} samples/s together){}",
                rec.epoch,
                self.epochs,
                100.0 * rec.fixed.test_accuracy,
                100.0 * rec.float.test_accuracy,
                rec.fixed_seconds,
                rec.float_seconds,
                self.train_size as f64 / (rec.fixed_seconds + rec.float_seconds),
                clamp_note(&ledger)
            );
        }
        self.records.push(rec);
        self.ledgers.push(ledger);
        Ok(())
    }
}

/// The first `steps` training steps of `model` on the accelerator, every
/// host operation recorded (with what came back) and, with
/// `opts.record_trace`, every cycle's array input: what a replay on the
/// RTL plays and compares. Each step's weights are checked against the
/// fast array engine, and the counters are checkpointed after each step.
pub struct AccelSession {
    pub cfg: sysgrad_config::ArrayConfig,
    pub transcript: sysgrad_accel::Transcript,
    pub recording: Option<sysgrad_emulator::Recording>,
    pub steps: usize,
    pub plan: NetworkPlan,
    /// The accelerator's cost of the steps (all layers, all passes).
    pub run_cycles: u64,
    pub host: sysgrad_accel::HostCounters,
}

pub fn accel_session(
    model: &Model,
    split: &Split,
    opts: AccelOptions,
    steps: usize,
) -> Result<AccelSession> {
    let spec = &model.spec;
    let train_set = &split.train;
    let batch = spec.training.batch_size.min(train_set.len()).max(1);
    let (mut fixed, plan) = build_on_accelerator(model, opts)?;
    let (mut reference, _) = build_on(model, EngineKind::Fast);
    let mut order: Vec<usize> = (0..train_set.len()).collect();
    Rng::derive(spec.training.seed, "epoch-0").shuffle(&mut order);
    let mut spikes = Rng::derive(spec.training.seed, "input-spikes");
    let dev = &mut fixed
        .arith
        .accelerator()
        .expect("an accelerator network")
        .dev;
    dev.start_transcript();
    let chunks: Vec<&[usize]> = order.chunks(batch).take(steps).collect();
    if chunks.len() < steps {
        return Err(WorkloadError::out_of_range(
            "steps",
            steps,
            format!(
                "1..={} (batches in the training set)",
                order.len().div_ceil(batch)
            ),
        ));
    }
    for (i, chunk) in chunks.iter().enumerate() {
        let samples: Vec<&Sample> = chunk.iter().map(|&j| &train_set[j]).collect();
        let x = encode::encode(&samples, &spec.input, &mut spikes);
        let labels = encode::labels(&samples);
        let acc = fixed.arith.accelerator().expect("an accelerator network");
        acc.dev.mark(&format!("step {}", i + 1));
        fixed.train_step(fixed.input(&x), &labels)?;
        reference.train_step(reference.input(&x), &labels)?;
        compare_weights(i + 1, "accel", &fixed, &reference)?;
        fixed
            .arith
            .accelerator()
            .expect("an accelerator")
            .dev
            .checkpoint_counters();
    }
    let acc = fixed.arith.accelerator().expect("an accelerator network");
    Ok(AccelSession {
        cfg: acc.cfg(),
        transcript: acc.dev.take_transcript(),
        recording: acc.dev.acc.driver_mut().recording.take(),
        steps,
        plan,
        run_cycles: acc.dev.run_cycles(),
        host: acc.dev.host.clone(),
    })
}
