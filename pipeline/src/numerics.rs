//! Pipelined training with real numerics: the model's layers (the
//! `sysgrad-workloads` layers over its fixed-point `Arith`) run stage by
//! stage on each stage's array model, in the order of the schedule's
//! timeline. Forwards use the weights the stage holds then; a backward
//! uses the stashed, latest or reconstructed weights the plan says; dW is
//! drained and applied when the schedule applies it (once per mini-batch
//! after the flush, or per micro-batch with the delay the timeline gives).
//! So delayed gradients and stale weights change what is trained.

use crate::error::{PipelineError, Result};
use crate::plan::{Kind, Plan, Weights};
use crate::sim::{self, Carries, StageLoad, Task, Timeline};
use crate::system::System;
use ndarray::{Array2, Array4, Axis};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::ops::Range;
use sysgrad_config::fixed;
use sysgrad_emulator::fast::EngineKind;
use sysgrad_rng::Rng;
use sysgrad_workloads::arith::{Arith, Bucket, FixedArith, Site, Step};
use sysgrad_workloads::data::{Sample, Split};
use sysgrad_workloads::model::Model;
use sysgrad_workloads::net::{self, BatchResult, Layer, Network, Tensor};
use sysgrad_workloads::train::{self, encode};

/// Options of a pipelined training run.
#[derive(Debug, Clone)]
pub struct TrainOptions {
    pub epochs: Option<usize>,
    pub max_train: Option<usize>,
    pub max_test: Option<usize>,
    pub progress: bool,
    /// The moving average of LayerPipe2's reconstruction follows each
    /// update with weight 2^-ema_shift.
    pub ema_shift: u32,
    /// Clocked or fast exact arrays for the products (same bits).
    pub engine: EngineKind,
    /// Also train synchronously with the same seed and update batch.
    pub reference: bool,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            epochs: None,
            max_train: None,
            max_test: None,
            progress: true,
            ema_shift: 2,
            engine: EngineKind::Fast,
            reference: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EpochAccuracy {
    pub epoch: usize,
    pub train_loss: f64,
    pub train_accuracy: f64,
    pub test_accuracy: f64,
    /// Synchronous training, same seed, same samples per weight step.
    pub reference_test_accuracy: Option<f64>,
}

/// What a pipelined training run produced.
pub struct Trained {
    pub epochs: Vec<EpochAccuracy>,
    /// Samples per weight step (the mini-batch for synchronous schedules,
    /// the micro-batch for asynchronous ones).
    pub update_batch: usize,
    /// The trained layers, the whole model in order.
    pub layers: Vec<Layer<i64>>,
    /// The synchronous reference's trained layers.
    pub reference_layers: Option<Vec<Layer<i64>>>,
}

/// One stage's share of the network and its state.
struct StageRun {
    arith: FixedArith,
    /// Model layers `models.start..models.end`, holding the current weights.
    layers: Vec<Layer<i64>>,
    models: Range<usize>,
    /// Micro-batches between forward and backward: their layers (caches,
    /// and with stashing the weights their forward used) and the number of
    /// updates the stage had made at their forward.
    in_flight: HashMap<usize, (Vec<Layer<i64>>, usize)>,
    updates: usize,
    /// dW of micro-batches whose dX ran and whose dW is not applied yet.
    pending: HashMap<usize, BTreeMap<usize, Array2<i64>>>,
    /// Synchronous: the mini-batch's dW summed so far, and how many
    /// micro-batches it holds.
    sum: BTreeMap<usize, Array2<i64>>,
    summed: usize,
    /// LayerPipe2's moving average of the updates, per model layer, at 2F
    /// fractional bits.
    ema: BTreeMap<usize, Array2<i64>>,
}

/// The model layers of each stage: stage s starts at its first compute
/// layer (stage 0 at the model's first layer) and ends where the next begins.
pub fn model_ranges(
    model_index: &[usize],
    stages: &[Range<usize>],
    n_layers: usize,
) -> Vec<Range<usize>> {
    (0..stages.len())
        .map(|s| {
            let lo = if s == 0 {
                0
            } else {
                model_index[stages[s].start]
            };
            let hi = stages.get(s + 1).map_or(n_layers, |r| model_index[r.start]);
            lo..hi
        })
        .collect()
}

/// The micro-batch size and samples per weight step of `plan` on `model`.
pub fn micro_batch_size(model: &Model, plan: &Plan) -> Result<usize> {
    let b = model.spec.training.batch_size;
    let m = plan.micro_batches;
    if !b.is_multiple_of(m) {
        return Err(PipelineError::out_of_range(
            "microbatches",
            m,
            format!("a divisor of the model's batch size {b}"),
        ));
    }
    Ok(b / m)
}

struct Trainer<'a> {
    model: &'a Model,
    plan: Plan,
    loads: &'a [StageLoad],
    stages: Vec<StageRun>,
    opts: &'a TrainOptions,
    activations: HashMap<(usize, usize), Tensor<i64>>,
    gradients: HashMap<(usize, usize), Tensor<i64>>,
    inputs: Vec<Tensor<i64>>,
    labels: Vec<Vec<u8>>,
    /// The micro-batches of each mini-batch of the epoch.
    groups: Vec<Range<usize>>,
    result: BatchResult,
    micro: usize,
}

/// Trains `model` on `split` with `plan` on `system`, stages `stages`
/// (compute layers per stage) with task costs `loads` (they order the
/// tasks; the numerics do not depend on them otherwise).
// The run's parts as they come out of `Setup::measure`, kept apart so a
// caller can train on a partition it chose.
#[allow(clippy::too_many_arguments)]
pub fn train(
    model: &Model,
    split: &Split,
    system: &System,
    stages: &[Range<usize>],
    model_index: &[usize],
    plan: &Plan,
    loads: &[StageLoad],
    opts: &TrainOptions,
) -> Result<Trained> {
    let micro = micro_batch_size(model, plan)?;
    let spec = &model.spec;
    if !model.graph.is_chain() {
        return Err(sysgrad_workloads::WorkloadError::model(
            "layers",
            "pipelined training runs the list form (a chain of layers); this model is a graph",
        )
        .into());
    }
    let train_set = train::limit(&split.train, opts.max_train);
    let test_set = train::limit(&split.test, opts.max_test);
    let epochs = opts.epochs.unwrap_or(spec.training.epochs);
    if epochs == 0 || train_set.is_empty() || test_set.is_empty() {
        return Err(PipelineError::out_of_range(
            "epochs / training samples / test samples",
            format!("{epochs} / {} / {}", train_set.len(), test_set.len()),
            "at least 1 each",
        ));
    }
    let update_batch = if plan.schedule.synchronous() {
        spec.training.batch_size
    } else {
        micro
    };
    let ranges = model_ranges(model_index, stages, spec.layers.len());
    let mut trainer = Trainer::new(model, *plan, loads, system, &ranges, opts, micro);
    let bar = progress_bar(epochs, opts.progress);
    let mut spikes = Rng::derive(spec.training.seed, "input-spikes");
    let mut records = Vec::new();
    for epoch in 0..epochs {
        let order = train::epoch_order(spec.training.seed, epoch, train_set.len());
        trainer.prepare_epoch(train_set, &order, update_batch, &mut spikes);
        let sizes: Vec<usize> = trainer.groups.iter().map(|g| g.len()).collect();
        let tl = sim::simulate(plan, loads, system.link, &sizes)?;
        trainer.run(&tl)?;
        let mut eval = trainer.network();
        let test = train::evaluate(&mut eval, test_set, model, 128)?;
        records.push(EpochAccuracy {
            epoch: epoch + 1,
            train_loss: trainer.result.mean_loss(),
            train_accuracy: trainer.result.accuracy(),
            test_accuracy: test.accuracy(),
            reference_test_accuracy: None,
        });
        bar.set_message(format!(
            "epoch {} test {:.1}%",
            epoch + 1,
            100.0 * test.accuracy()
        ));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let reference_layers = if opts.reference {
        let run = reference(model, split, update_batch, epochs, opts)?;
        for (r, e) in records.iter_mut().zip(&run.epochs) {
            r.reference_test_accuracy = Some(e.fixed.test_accuracy);
        }
        Some(run.fixed.layers)
    } else {
        None
    };
    Ok(Trained {
        epochs: records,
        update_batch,
        layers: trainer.stages.into_iter().flat_map(|s| s.layers).collect(),
        reference_layers,
    })
}

/// Synchronous training of the same model and seed with `batch` samples
/// per weight step (`sysgrad_workloads::train`, products on the fast engine).
fn reference(
    model: &Model,
    split: &Split,
    batch: usize,
    epochs: usize,
    opts: &TrainOptions,
) -> Result<train::TrainRun> {
    let mut m = model.clone();
    m.spec.training.batch_size = batch;
    let o = train::TrainOptions {
        epochs: Some(epochs),
        sequential_epochs: 0,
        max_train: opts.max_train,
        max_test: opts.max_test,
        progress: false,
        eval_batch: 128,
        engine: EngineKind::Fast,
        ..train::TrainOptions::default()
    };
    Ok(train::train(&m, split, &o)?)
}

fn progress_bar(epochs: usize, show: bool) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(epochs as u64);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} epochs, eta {eta}, {msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Columns `t * batch + i` for the samples `samples` of a batch of `batch`.
fn columns(x: &Array4<f64>, batch: usize, samples: Range<usize>, steps: usize) -> Array4<f64> {
    let idx: Vec<usize> = (0..steps)
        .flat_map(|t| samples.clone().map(move |i| t * batch + i))
        .collect();
    x.select(Axis(1), &idx)
}

impl<'a> Trainer<'a> {
    fn new(
        model: &'a Model,
        plan: Plan,
        loads: &'a [StageLoad],
        system: &System,
        ranges: &[Range<usize>],
        opts: &'a TrainOptions,
        micro: usize,
    ) -> Self {
        let o = model.spec.optimizer;
        let step = Step {
            lr_shift: o.lr_shift,
            momentum: o.momentum,
        };
        let whole = train::build_on(model, opts.engine).0;
        let mut all: Vec<Option<Layer<i64>>> = whole.layers.into_iter().map(Some).collect();
        let stages = ranges
            .iter()
            .zip(&system.arrays)
            .map(|(r, cfg)| {
                let mut arith = FixedArith::on(opts.engine, *cfg, step);
                arith.collect_gradients(true);
                StageRun {
                    arith,
                    layers: r
                        .clone()
                        .map(|i| all[i].take().expect("one stage per layer"))
                        .collect(),
                    models: r.clone(),
                    in_flight: HashMap::new(),
                    updates: 0,
                    pending: HashMap::new(),
                    sum: BTreeMap::new(),
                    summed: 0,
                    ema: BTreeMap::new(),
                }
            })
            .collect();
        Trainer {
            model,
            plan,
            loads,
            stages,
            opts,
            activations: HashMap::new(),
            gradients: HashMap::new(),
            inputs: Vec::new(),
            labels: Vec::new(),
            groups: Vec::new(),
            result: BatchResult::default(),
            micro,
        }
    }

    /// The epoch's micro-batch inputs, encoded per weight step as the
    /// synchronous reference encodes its batches (so the spikes agree).
    fn prepare_epoch(
        &mut self,
        train_set: &[Sample],
        order: &[usize],
        update_batch: usize,
        spikes: &mut Rng,
    ) {
        let spec = &self.model.spec;
        let steps = spec.input.time_steps;
        let arith = &self.stages[0].arith;
        self.inputs.clear();
        self.labels.clear();
        self.groups.clear();
        self.result = BatchResult::default();
        let mut group_start = 0;
        for chunk in order.chunks(update_batch) {
            let samples: Vec<&Sample> = chunk.iter().map(|&i| &train_set[i]).collect();
            let x = encode::encode(&samples, &spec.input, spikes);
            for lo in (0..samples.len()).step_by(self.micro) {
                let hi = (lo + self.micro).min(samples.len());
                let xm = columns(&x, samples.len(), lo..hi, steps);
                self.inputs.push(xm.mapv(|v| arith.quantize(v)));
                self.labels.push(encode::labels(&samples[lo..hi]));
            }
            if self.plan.schedule.synchronous() {
                self.groups.push(group_start..self.inputs.len());
                group_start = self.inputs.len();
            }
        }
        if !self.plan.schedule.synchronous() {
            let m = self.plan.micro_batches;
            let n = self.inputs.len();
            self.groups = (0..n).step_by(m).map(|s| s..(s + m).min(n)).collect();
        }
    }

    /// Runs the numerics of every task in the order the tasks started,
    /// except that a dW run on another array steps the weights when its
    /// result is back on the stage (a forward starting before then uses
    /// the older weights). A micro-batch's work happens at its first task
    /// of each kind (the forward's first time chunk, the backward's last),
    /// which the timeline orders after everything it depends on.
    fn run(&mut self, tl: &Timeline) -> Result<()> {
        let back: HashMap<(usize, usize), u64> = tl
            .messages
            .iter()
            .filter(|m| m.carries == Carries::DwResult)
            .map(|m| ((m.to, m.micro), m.arrive))
            .collect();
        let mut order: Vec<(u64, usize, &Task)> = tl
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| match t.kind {
                Kind::F => t.chunk == 0,
                _ => t.chunk + 1 == self.plan.chunks,
            })
            .map(|(i, t)| {
                let at = match back.get(&(t.stage, t.micro)) {
                    Some(&arrive) if t.kind == Kind::W => arrive,
                    _ => t.start,
                };
                (at, i, t)
            })
            .collect();
        order.sort_by_key(|&(at, i, _)| (at, i));
        for (_, _, t) in order {
            self.execute(t)?;
        }
        Ok(())
    }

    fn execute(&mut self, t: &Task) -> Result<()> {
        match t.kind {
            Kind::F => self.forward(t.stage, t.micro),
            Kind::B => self.backward(t.stage, t.micro),
            Kind::W => self.apply(t.stage, t.micro),
            Kind::BW => {
                self.backward(t.stage, t.micro)?;
                self.apply(t.stage, t.micro)
            }
        }
    }

    fn full(&self, j: usize) -> bool {
        self.labels[j].len() == self.micro && self.plan.chunks == 1
    }

    fn forward(&mut self, s: usize, j: usize) -> Result<()> {
        let steps = self.model.spec.input.time_steps;
        let mut x = if s == 0 {
            self.inputs[j].clone()
        } else {
            self.activations
                .remove(&(s, j))
                .expect("the timeline sent it")
        };
        let full = self.full(j);
        let st = &mut self.stages[s];
        let mut layers = st.layers.clone();
        for (layer, i) in layers.iter_mut().zip(st.models.clone()) {
            let site = Site {
                layer: i,
                training: true,
            };
            x = layer.forward(&mut st.arith, site, &x, steps)?;
        }
        st.in_flight.insert(j, (layers, st.updates));
        check_cycles(
            st,
            s,
            Bucket::Forward,
            full.then_some(self.loads[s].costs.forward.cycles),
        )?;
        if s + 1 < self.stages.len() {
            self.activations.insert((s + 1, j), x);
        } else {
            let spec = &self.model.spec;
            let ar = &self.stages[s].arith;
            let (res, dy) = net::loss::softmax_xent(
                ar,
                &x,
                &self.labels[j],
                steps,
                spec.optimizer.grad_scale_shift,
            );
            self.result.add(&res);
            self.gradients.insert((s, j), dy);
        }
        Ok(())
    }

    fn backward(&mut self, s: usize, j: usize) -> Result<()> {
        let steps = self.model.spec.input.time_steps;
        let mut g = self
            .gradients
            .remove(&(s, j))
            .expect("the timeline sent it");
        let full = self.full(j);
        let (weights, ema_shift) = (self.plan.weights, self.opts.ema_shift);
        let st = &mut self.stages[s];
        let (mut layers, seen) = st.in_flight.remove(&j).expect("forwarded before");
        let delay = st.updates - seen;
        set_backward_weights(st, &mut layers, weights, delay, ema_shift);
        let mut upstream = true;
        for (layer, i) in layers.iter_mut().zip(st.models.clone()).rev() {
            // dX as the stages exchange it: every layer but a first convolution.
            let need_dx = i > 0 || !matches!(layer, Layer::Conv2d(_));
            match layer.backward(&mut st.arith, (i, need_dx), &g, steps)? {
                Some(dx) => g = dx,
                None => {
                    upstream = false;
                    break;
                }
            }
        }
        check_cycles(
            st,
            s,
            Bucket::Backward,
            full.then_some(self.loads[s].costs.backward_interleaved.cycles),
        )?;
        st.pending.insert(j, st.arith.take_gradients());
        if s > 0 && upstream {
            self.gradients.insert((s - 1, j), g);
        }
        Ok(())
    }

    /// Applies micro-batch j's dW: into the mini-batch's sum (stepped once
    /// every micro-batch of the mini-batch is in), or straight to the
    /// stage's weights.
    fn apply(&mut self, s: usize, j: usize) -> Result<()> {
        let group_len = self
            .groups
            .iter()
            .find(|g| g.contains(&j))
            .map_or(1, |g| g.len());
        let sync = self.plan.schedule.synchronous();
        let (weights, ema_shift) = (self.plan.weights, self.opts.ema_shift);
        let st = &mut self.stages[s];
        let dws = st.pending.remove(&j).expect("dX ran before dW");
        if !sync {
            step_weights(st, &dws, weights == Weights::Ema, ema_shift);
            return Ok(());
        }
        let aw = st.arith.cfg.format().acc_bits;
        for (l, dw) in dws {
            match st.sum.get_mut(&l) {
                Some(acc) => acc.zip_mut_with(&dw, |a, d| *a = fixed::acc_add(*a, *d, aw)),
                None => {
                    st.sum.insert(l, dw);
                }
            }
        }
        st.summed += 1;
        if st.summed == group_len {
            let sum = std::mem::take(&mut st.sum);
            st.summed = 0;
            step_weights(st, &sum, false, ema_shift);
        }
        Ok(())
    }

    /// The whole network with the current weights, for evaluation.
    fn network(&self) -> Network<FixedArith> {
        let o = self.model.spec.optimizer;
        let step = Step {
            lr_shift: o.lr_shift,
            momentum: o.momentum,
        };
        Network {
            arith: FixedArith::on(EngineKind::Fast, self.model.cfg, step),
            layers: self.stages.iter().flat_map(|s| s.layers.clone()).collect(),
            graph: self.model.graph.clone(),
            time_steps: self.model.spec.input.time_steps,
            grad_scale_shift: o.grad_scale_shift,
        }
    }
}

/// The cycles the stage's engine counted for the last task equal the cost
/// table's (checked for full micro-batches; the table is per full one).
fn check_cycles(st: &mut StageRun, stage: usize, bucket: Bucket, table: Option<u64>) -> Result<()> {
    let ledger = st.arith.take_ledger();
    let counted: u64 = ledger
        .interleaved
        .iter()
        .filter(|((_, b), _)| *b == bucket)
        .map(|(_, s)| s.total().cycles)
        .sum();
    match table {
        Some(table) if table != counted => Err(PipelineError::CostMismatch {
            stage,
            what: if bucket == Bucket::Forward {
                "forward"
            } else {
                "backward"
            },
            counted,
            table,
        }),
        _ => Ok(()),
    }
}

/// Puts the weights the plan's backward uses into a micro-batch's layers:
/// stashed (already there), the latest, or the latest minus `delay` times
/// the moving average of the updates.
fn set_backward_weights(
    st: &StageRun,
    layers: &mut [Layer<i64>],
    weights: Weights,
    delay: usize,
    _ema_shift: u32,
) {
    if matches!(weights, Weights::Stash | Weights::Current) {
        return;
    }
    let f = st.arith.cfg.format();
    for ((layer, current), i) in layers.iter_mut().zip(&st.layers).zip(st.models.clone()) {
        let (Some((w, _)), Some(cur)) = (layer.weights_mut(), current.weights()) else {
            continue;
        };
        w.assign(cur);
        if let (Weights::Ema, Some(avg)) = (weights, st.ema.get(&i)) {
            w.zip_mut_with(avg, |w, a| {
                let back = fixed::round_shift(a * delay as i64, f.frac_bits, 62);
                *w = fixed::sat(*w - back, f.in_bits);
            });
        }
    }
}

/// The optimizer step with `dws` on the stage's weights; with `ema`, the
/// moving average of the updates follows each weight's change.
fn step_weights(st: &mut StageRun, dws: &BTreeMap<usize, Array2<i64>>, ema: bool, ema_shift: u32) {
    let f = st.arith.cfg.format();
    for (layer, i) in st.layers.iter_mut().zip(st.models.clone()) {
        let (Some(dw), Some((w, velocity))) = (dws.get(&i), layer.weights_mut()) else {
            continue;
        };
        let before = w.clone();
        st.arith.apply_gradient(w, velocity, dw);
        if ema {
            let avg = st
                .ema
                .entry(i)
                .or_insert_with(|| Array2::zeros(before.dim()));
            ndarray::Zip::from(avg)
                .and(&before)
                .and(&*w)
                .for_each(|a, &old, &new| {
                    // The change at 2F fractional bits, averaged in.
                    let change = (new - old) << f.frac_bits;
                    *a += fixed::round_shift(change - *a, ema_shift, 62);
                });
        }
    }
    st.updates += 1;
}
