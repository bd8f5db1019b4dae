//! Fixed point on the emulated array: every matrix product is run cycle by
//! cycle through `sysgrad_emulator::gemm` (or, on request, in the fast exact
//! mode, which gives the same bits and counters, or on the whole emulated
//! accelerator, which gives the same bits too), element-wise work is done
//! on the host with the rounding rules of `sysgrad_config::fixed`.

use super::accel::{AccelCost, AccelEngine, AccelOptions, Held, Placement};
use super::tally::{merge, Clamps, Quantity, Tally};
use super::{Arith, ClampGradient, Rounding, Site, Step};
use crate::error::{Result, WorkloadError};
use crate::net::tensor::Tensor;
use crate::net::ConvGeom;
use ndarray::{Array2, ArrayView2, ArrayView4};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Mutex;
use sysgrad_accel::schedule::Output;
use sysgrad_accel::BackwardMode;
use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_emulator::fast::{Engine, EngineKind, FastEngine};
use sysgrad_emulator::gemm::{BackwardResult, DwSink};
use sysgrad_emulator::{Driver, Stats};
use sysgrad_rng::Rng;

/// What a product's cycles were spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    /// Training forward pass.
    Forward,
    /// Training backward pass (dX, dW, update or drain).
    Backward,
    /// Forward passes that only evaluate accuracy.
    Eval,
}

/// The counters of every product, per layer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    /// The array that trains (interleaved backward).
    pub interleaved: BTreeMap<(usize, Bucket), Stats>,
    /// The sequential baseline run on the same backward operands, when
    /// enabled (the forward pass is the same on both arrays).
    pub sequential_backward: BTreeMap<usize, Stats>,
    /// On the accelerator engine: the end-to-end cost (controller, DMA,
    /// host link) of the same products.
    pub accel: BTreeMap<(usize, Bucket), AccelCost>,
    pub accel_sequential_backward: BTreeMap<usize, AccelCost>,
    /// Values clamped to their format, per (layer, quantity).
    pub clamps: BTreeMap<(usize, Quantity), Clamps>,
    /// On the accelerator engine: the programs kept in command memory as
    /// the ledger was taken.
    pub programs: Option<sysgrad_accel::KeptPrograms>,
}

impl Ledger {
    pub fn add(&mut self, other: &Ledger) {
        for (k, s) in &other.interleaved {
            *self.interleaved.entry(*k).or_default() += s;
        }
        for (k, s) in &other.sequential_backward {
            *self.sequential_backward.entry(*k).or_default() += s;
        }
        for (k, s) in &other.accel {
            *self.accel.entry(*k).or_default() += s;
        }
        for (k, s) in &other.accel_sequential_backward {
            *self.accel_sequential_backward.entry(*k).or_default() += s;
        }
        merge(&mut self.clamps, &other.clamps);
        if other.programs.is_some() {
            self.programs.clone_from(&other.programs);
        }
    }

    /// Clamped values of `q` in all layers.
    pub fn clamped(&self, q: Quantity) -> u64 {
        self.clamps
            .iter()
            .filter(|((_, k), _)| *k == q)
            .map(|(_, c)| c.clamped)
            .sum()
    }

    pub fn accel_cost(&self, layer: usize, bucket: Bucket) -> AccelCost {
        self.accel
            .get(&(layer, bucket))
            .cloned()
            .unwrap_or_default()
    }

    pub fn get(&self, layer: usize, bucket: Bucket) -> Stats {
        self.interleaved
            .get(&(layer, bucket))
            .cloned()
            .unwrap_or_default()
    }
}

/// A product's X: a matrix (X of a dense layer, im2col patches of a
/// convolution), or the image of a convolution that the accelerator's
/// address generator reads in place.
#[derive(Clone, Copy)]
enum Input<'a> {
    Matrix(ArrayView2<'a, i64>),
    Image(ArrayView4<'a, i64>),
}

impl<'a> Input<'a> {
    fn matrix(self) -> ArrayView2<'a, i64> {
        match self {
            Input::Matrix(x) => x,
            Input::Image(_) => unreachable!("only the accelerator takes an image"),
        }
    }
}

/// The array a network's products run on. The array kinds give the same
/// bits and the same counters (`emulator/tests/fast_vs_cycle.rs`); only the
/// clocked one can record its cycles for a replay on the RTL. The
/// accelerator gives the same bits through commands, buffers and DMA
/// (`accel/tests/schedule.rs`) and counts what those cost. All are boxed,
/// as all hold large counter tables.
enum ArrayModel {
    Cycle(Box<Driver>),
    Fast(Box<FastEngine>),
    Accel(Box<AccelEngine>),
}

impl ArrayModel {
    fn new(kind: EngineKind, cfg: ArrayConfig) -> Self {
        match kind {
            EngineKind::Cycle => ArrayModel::Cycle(Box::new(Driver::new(cfg))),
            EngineKind::Fast => ArrayModel::Fast(Box::new(FastEngine::new(cfg))),
        }
    }

    fn engine(&mut self) -> Option<&mut dyn Engine> {
        match self {
            ArrayModel::Cycle(d) => Some(d.as_mut()),
            ArrayModel::Fast(f) => Some(f.as_mut()),
            ArrayModel::Accel(_) => None,
        }
    }

    /// The counters since the last call (the accelerator's array phases).
    fn take_stats(&mut self) -> (Stats, Option<AccelCost>) {
        match self {
            ArrayModel::Accel(a) => {
                let cost = a.take_cost();
                (cost.array.clone(), Some(cost))
            }
            other => (other.engine().expect("an array").take_stats(), None),
        }
    }

    fn forward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: Input,
        out: Output,
    ) -> Result<Array2<i64>> {
        match (self, x) {
            (ArrayModel::Accel(a), Input::Matrix(x)) => a.forward(layer, w, x, out),
            (ArrayModel::Accel(a), Input::Image(x)) => a.conv_forward(layer, w, x),
            (array, x) => array
                .engine()
                .expect("an array")
                .forward(w, x.matrix())
                .map_err(WorkloadError::array(layer, "forward")),
        }
    }

    /// Whether `layer`'s convolution of an image of `dim` runs on the
    /// image itself (the accelerator's address generator).
    fn convolves(&self, layer: usize, dim: (usize, usize, usize, usize)) -> bool {
        matches!(self, ArrayModel::Accel(a) if a.convolves(layer, dim))
    }

    /// Whether products come back as `Output` asks (the accelerator
    /// requantizes where they are); the arrays return raw accumulators.
    fn requantizes(&self) -> bool {
        matches!(self, ArrayModel::Accel(_))
    }

    #[allow(clippy::too_many_arguments)]
    fn backward(
        &mut self,
        schedule: Backward,
        layer: usize,
        w: ArrayView2<i64>,
        x: Input,
        dy: ArrayView2<i64>,
        sink: DwSink,
        out: Output,
    ) -> Result<BackwardResult> {
        match (&mut *self, x) {
            (ArrayModel::Accel(a), Input::Matrix(x)) => {
                return a.backward(layer, w, x, dy, sink, out)
            }
            (ArrayModel::Accel(a), Input::Image(x)) => {
                return a.conv_backward(layer, w, (x, dy), sink, out)
            }
            _ => {}
        }
        let drv = self.engine().expect("an array");
        drv.backward(schedule, w, x.matrix(), dy, sink)
            .map_err(WorkloadError::array(layer, "backward"))
    }
}

/// `sum / n` rounded to nearest, ties toward +infinity (`floor((2 sum +
/// n) / 2n)`), saturated to `in_bits`; the sum of data values is exact in
/// `i64`.
pub fn mean_fixed(vals: &[i64], n: usize, in_bits: u32) -> i64 {
    let sum: i128 = vals.iter().map(|&v| v as i128).sum();
    let n = n.max(1) as i128;
    let q = (2 * sum + n).div_euclid(2 * n);
    fixed::sat(q.clamp(i64::MIN as i128, i64::MAX as i128) as i64, in_bits)
}

pub struct FixedArith {
    pub cfg: ArrayConfig,
    pub step: Step,
    array: ArrayModel,
    /// A sequential-schedule array fed the same backward operands, to count
    /// what the baseline would take and to check it computes the same bits.
    shadow: Option<ArrayModel>,
    /// On the accelerator: how to build the baseline's accelerator.
    accel: Option<(AccelOptions, Placement)>,
    ledger: Ledger,
    /// The momentum factor in data format.
    momentum: Option<i64>,
    /// When set, backward passes drain dW into this map (per layer)
    /// instead of stepping the weights: a pipeline schedule decides when
    /// and to which weights a gradient is applied.
    collected: Option<BTreeMap<usize, Array2<i64>>>,
    /// Clamped values since the last ledger was taken.
    tally: Tally,
    /// The gradient rule at clamped outputs.
    clamp_gradient: ClampGradient,
    /// How the host's momentum step rounds.
    rounding: Rounder,
}

/// [`Rounding`] with its random stream.
enum Rounder {
    Nearest,
    Stochastic(Mutex<Rng>),
}

impl Rounder {
    /// `v / 2^s` rounded to an integer (`v` fits `aw` bits, `s` < 63).
    fn shift(v: i64, s: u32, aw: u32, rng: Option<&mut Rng>) -> i64 {
        match rng {
            None => fixed::round_shift(v, s, aw),
            Some(_) if s == 0 => v,
            Some(_) if s >= aw => 0,
            Some(rng) => {
                let u = (rng.next_u64() >> (64 - s)) as i64;
                (v + u) >> s
            }
        }
    }
}

impl FixedArith {
    /// Products clocked cycle by cycle on the register-level model.
    pub fn new(cfg: ArrayConfig, step: Step) -> Self {
        Self::on(EngineKind::Cycle, cfg, step)
    }

    /// Products on the given engine (the fast one computes the same bits
    /// and counters without clocking the array).
    pub fn on(engine: EngineKind, cfg: ArrayConfig, step: Step) -> Self {
        let cfg = cfg.with_backward(Backward::Interleaved);
        Self::with_model(cfg, step, ArrayModel::new(engine, cfg), None)
    }

    /// Products on the emulated accelerator `opts` (same bits as the
    /// array), each layer's W and resident data where `placement` puts
    /// them (see [`crate::compile`]).
    pub fn on_accelerator(opts: AccelOptions, step: Step, placement: Placement) -> Self {
        let opts = AccelOptions {
            cfg: opts.cfg.with_backward(Backward::Interleaved),
            ..opts
        };
        let engine = AccelEngine::new(&opts, BackwardMode::Interleaved, placement.clone());
        let model = ArrayModel::Accel(Box::new(engine));
        Self::with_model(opts.cfg, step, model, Some((opts, placement)))
    }

    fn with_model(
        cfg: ArrayConfig,
        step: Step,
        array: ArrayModel,
        accel: Option<(AccelOptions, Placement)>,
    ) -> Self {
        let f = cfg.format();
        FixedArith {
            cfg,
            step,
            array,
            shadow: None,
            accel,
            ledger: Ledger::default(),
            momentum: step
                .momentum
                .map(|m| fixed::from_f64(m, f.frac_bits, f.in_bits)),
            collected: None,
            tally: Tally::default(),
            clamp_gradient: ClampGradient::default(),
            rounding: Rounder::Nearest,
        }
    }

    /// The model's rounding of the host's momentum step; a stochastic one
    /// draws from a stream derived from `seed`.
    pub fn with_rounding(mut self, rounding: Rounding, seed: u64) -> Self {
        self.rounding = match rounding {
            Rounding::Nearest => Rounder::Nearest,
            Rounding::Stochastic => {
                Rounder::Stochastic(Mutex::new(Rng::derive(seed, "update-rounding")))
            }
        };
        self
    }

    /// The model's gradient rule at clamped outputs.
    pub fn with_clamp_gradient(mut self, rule: ClampGradient) -> Self {
        self.clamp_gradient = rule;
        self
    }

    /// From now on backward passes drain dW (`DwSink::Drain`) and keep it
    /// for [`FixedArith::take_gradients`] instead of updating the weights
    /// (`on = false` returns to the optimizer step of the model).
    pub fn collect_gradients(&mut self, on: bool) {
        self.collected = on.then(BTreeMap::new);
    }

    /// The dW of every layer whose backward pass ran since the last call
    /// (raw accumulators), while collecting.
    pub fn take_gradients(&mut self) -> BTreeMap<usize, Array2<i64>> {
        self.collected
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// The model's optimizer step with the gradient `dw` (raw accumulators,
    /// 2F fractional bits): `W -= 2^-lr_shift dW` for SGD, or
    /// `v = mu v + dW; W -= 2^-lr_shift v` with momentum. The same bits as
    /// the update in the PEs (`DwSink::Update`) for SGD.
    pub fn apply_gradient(
        &self,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        dw: &Array2<i64>,
    ) {
        let f = self.cfg.format();
        let aw = f.acc_bits;
        let layer = self.tally.layer();
        let mut weights = Clamps::default();
        let lsb = fixed::to_f64(1, f.frac_bits);
        let mut guard = match &self.rounding {
            Rounder::Nearest => None,
            Rounder::Stochastic(rng) => Some(rng.lock().unwrap_or_else(|e| e.into_inner())),
        };
        let shift = f.frac_bits + self.step.lr_shift;
        let mut step = |w: &mut i64, d: &i64| {
            let rng = guard.as_deref_mut();
            let raw = *w - Rounder::shift(*d, shift, aw, rng);
            *w = fixed::sat(raw, f.in_bits);
            count(&mut weights, raw, *w, lsb);
        };
        match (self.momentum, velocity) {
            (Some(mu), Some(v)) => {
                // v and dW are accumulators (2F fractional bits); mu is data.
                let mut velocities = Clamps::default();
                v.zip_mut_with(dw, |v, d| {
                    let decayed = fixed::round_shift(mu * *v, f.frac_bits, aw + f.in_bits);
                    let raw = decayed + *d;
                    *v = fixed::acc_add(fixed::sat(decayed, aw), *d, aw);
                    count(&mut velocities, raw, *v, lsb * lsb);
                });
                self.tally.add((layer, Quantity::Velocity), &velocities);
                w.zip_mut_with(v, &mut step);
            }
            _ => w.zip_mut_with(dw, &mut step),
        }
        self.tally.add((layer, Quantity::Weight), &weights);
    }

    /// Requantizes raw accumulators of `layer` to data (as `out` asks),
    /// counting accumulators at their limit and data values clamped.
    fn finish(&self, layer: usize, q: Quantity, acc: Array2<i64>, out: Output) -> Array2<i64> {
        let f = self.cfg.format();
        let (lo, hi) = (fixed::min_of(f.acc_bits), fixed::max_of(f.acc_bits));
        let lsb = fixed::to_f64(1, f.frac_bits);
        let mut acc = acc.as_standard_layout().into_owned();
        let values = acc.as_slice().expect("standard layout");
        let limit = values
            .par_chunks(PIECE)
            .map(|piece| {
                let mut c = Clamps::default();
                for &a in piece {
                    c.count(a, if a == lo || a == hi { a ^ 1 } else { a }, lsb * lsb);
                }
                c
            })
            .reduce(Clamps::default, |mut x, y| {
                x.add(&y);
                x
            });
        self.tally.add((layer, Quantity::Accumulator), &limit);
        if out == Output::Data {
            let c = self.requantize_counted(acc.as_slice_mut().expect("standard layout"));
            self.tally.add((layer, q), &c);
        }
        acc
    }

    /// Accumulators to data in place, on rayon's threads, and how many
    /// were clamped.
    fn requantize_counted(&self, values: &mut [i64]) -> Clamps {
        let f = self.cfg.format();
        let lsb = fixed::to_f64(1, f.frac_bits);
        values
            .par_chunks_mut(PIECE)
            .map(|piece| {
                let mut c = Clamps::default();
                for v in piece {
                    let raw = fixed::round_shift(*v, f.frac_bits, f.acc_bits);
                    *v = fixed::sat(raw, f.in_bits);
                    c.count(raw, *v, lsb);
                }
                c
            })
            .reduce(Clamps::default, |mut x, y| {
                x.add(&y);
                x
            })
    }

    /// Runs the sequential baseline beside every backward pass while `on`:
    /// a sequential array, or on the accelerator the same accelerator with
    /// BACKWARD in sequential mode.
    pub fn set_shadow_sequential(&mut self, on: bool) {
        if !on {
            self.shadow = None;
            return;
        }
        if self.shadow.is_some() {
            return;
        }
        self.shadow = Some(match (&self.array, &self.accel) {
            (ArrayModel::Accel(_), Some((opts, placement))) => {
                let opts = AccelOptions {
                    record_trace: false,
                    ..*opts
                };
                let e = AccelEngine::new(&opts, BackwardMode::Sequential, placement.clone());
                ArrayModel::Accel(Box::new(e))
            }
            (ArrayModel::Fast(_), _) => ArrayModel::new(
                EngineKind::Fast,
                self.cfg.with_backward(Backward::Sequential),
            ),
            _ => ArrayModel::new(
                EngineKind::Cycle,
                self.cfg.with_backward(Backward::Sequential),
            ),
        });
    }

    /// Records every array cycle from now on (port stimulus and outputs),
    /// e.g. to replay a training step on the RTL. Does nothing on the fast
    /// engine, which has no cycles to record.
    pub fn start_recording(&mut self) {
        if let ArrayModel::Cycle(d) = &mut self.array {
            d.recording = Some(sysgrad_emulator::Recording::default());
        }
    }

    /// The cycles recorded since [`FixedArith::start_recording`].
    pub fn take_recording(&mut self) -> Option<sysgrad_emulator::Recording> {
        match &mut self.array {
            ArrayModel::Cycle(d) => d.recording.take(),
            _ => None,
        }
    }

    /// The accelerator the products run on (the accelerator engine only).
    pub fn accelerator(&mut self) -> Option<&mut AccelEngine> {
        match &mut self.array {
            ArrayModel::Accel(a) => Some(a),
            _ => None,
        }
    }

    /// The counters since the last call.
    pub fn take_ledger(&mut self) -> Ledger {
        merge(&mut self.ledger.clamps, &self.tally.take());
        self.ledger.programs = self.accelerator().and_then(|a| a.kept_programs().cloned());
        std::mem::take(&mut self.ledger)
    }

    fn charge(&mut self, layer: usize, bucket: Bucket) {
        let (s, cost) = self.array.take_stats();
        *self.ledger.interleaved.entry((layer, bucket)).or_default() += &s;
        if let Some(c) = cost {
            *self.ledger.accel.entry((layer, bucket)).or_default() += &c;
        }
    }

    /// `Y = W X`, raw or as data, charged to the site's layer.
    fn product(
        &mut self,
        site: Site,
        w: ArrayView2<i64>,
        x: Input,
        out: Output,
    ) -> Result<Array2<i64>> {
        self.tally.enter(site.layer, false);
        let mut y = self.array.forward(site.layer, w, x, out)?;
        if !self.array.requantizes() {
            y = self.finish(site.layer, Quantity::Activation, y, out);
        }
        let bucket = if site.training {
            Bucket::Forward
        } else {
            Bucket::Eval
        };
        self.charge(site.layer, bucket);
        Ok(y)
    }

    /// The sequential baseline on the same operands: counted apart, and
    /// its results must equal the interleaved ones.
    #[allow(clippy::too_many_arguments)]
    fn shadow_backward(
        &mut self,
        layer: usize,
        w: ArrayView2<i64>,
        x: Input,
        dy: ArrayView2<i64>,
        sink: DwSink,
        out: Output,
        (res, on_chip): (&BackwardResult, Option<Held>),
    ) -> Result<()> {
        let Some(shadow) = &mut self.shadow else {
            return Ok(());
        };
        if let ArrayModel::Accel(a) = shadow {
            // The baseline's weights, and the X and dY the main run held on
            // chip before its pass, sit where the main run's are, without
            // traffic of their own, so that only the backward pass differs.
            a.place_weights(layer, w);
            if let Some(held) = on_chip {
                a.place_held(layer, held);
            }
        }
        let seq = shadow.backward(Backward::Sequential, layer, w, x, dy, sink, out)?;
        let (s, cost) = shadow.take_stats();
        *self.ledger.sequential_backward.entry(layer).or_default() += &s;
        if let Some(c) = cost {
            *self
                .ledger
                .accel_sequential_backward
                .entry(layer)
                .or_default() += &c;
        }
        if seq.dx != res.dx {
            return Err(WorkloadError::ScheduleMismatch { layer, what: "dX" });
        }
        if seq.dw != res.dw || seq.w != res.w {
            return Err(WorkloadError::ScheduleMismatch { layer, what: "dW" });
        }
        Ok(())
    }

    /// The backward pass and the optimizer step; dX raw or as data.
    fn backward_step(
        &mut self,
        layer: usize,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        (x, dy): (Input, ArrayView2<i64>),
        out: Output,
    ) -> Result<Array2<i64>> {
        // Plain SGD updates the weights inside the PEs; momentum (and a
        // pipeline collecting gradients) needs dW on the host, so it is
        // drained instead.
        let sink = match (self.momentum, &velocity, &self.collected) {
            (_, _, Some(_)) | (Some(_), Some(_), None) => DwSink::Drain,
            _ => DwSink::Update {
                lr_shift: self.step.lr_shift,
            },
        };
        self.tally.enter(layer, true);
        let on_chip = match (&self.array, &self.shadow) {
            (ArrayModel::Accel(a), Some(_)) => Some(a.held(layer)),
            _ => None,
        };
        let mut res =
            self.array
                .backward(Backward::Interleaved, layer, w.view(), x, dy, sink, out)?;
        self.charge(layer, Bucket::Backward);
        self.shadow_backward(layer, w.view(), x, dy, sink, out, (&res, on_chip))?;
        if !self.array.requantizes() {
            res.dx = self.finish(layer, Quantity::InputGradient, res.dx, out);
        }
        match (res.w, res.dw) {
            (Some(w_new), _) => *w = w_new,
            (None, Some(dw)) => match &mut self.collected {
                Some(collected) => {
                    collected.insert(layer, dw);
                }
                None => self.apply_gradient(w, velocity, &dw),
            },
            _ => unreachable!("the sink decides which result gemm::backward returns"),
        }
        Ok(res.dx)
    }
}

/// Adds one value to `c`: `raw` before the clamp, `kept` after, `lsb` the
/// real value of one unit.
fn count(c: &mut Clamps, raw: i64, kept: i64, lsb: f64) {
    c.count(raw, kept, lsb);
}

/// Values per piece of a tensor converted on rayon's threads.
const PIECE: usize = 4096;

impl FixedArith {
    /// A host result saturated to data, counted.
    fn host(&self, raw: i64) -> i64 {
        let f = self.cfg.format();
        let kept = fixed::sat(raw, f.in_bits);
        // Only clamps are recorded: a lock per element would cost more
        // than the add.
        if raw != kept {
            let key = (self.tally.layer(), Quantity::Host);
            self.tally
                .one(key, raw, kept, fixed::to_f64(1, f.frac_bits));
        }
        kept
    }
}

impl Arith for FixedArith {
    type V = i64;

    fn quantize(&self, x: f64) -> i64 {
        let f = self.cfg.format();
        fixed::from_f64(x, f.frac_bits, f.in_bits)
    }
    fn real(&self, v: i64) -> f64 {
        fixed::to_f64(v, self.cfg.format().frac_bits)
    }
    fn requantize(&self, acc: i64) -> i64 {
        let f = self.cfg.format();
        let raw = fixed::round_shift(acc, f.frac_bits, f.acc_bits);
        let kept = fixed::sat(raw, f.in_bits);
        if raw != kept {
            self.tally.one(
                self.tally.requantized(),
                raw,
                kept,
                fixed::to_f64(1, f.frac_bits),
            );
        }
        kept
    }
    fn requantize_in_place(&self, acc: &mut [i64]) {
        let c = self.requantize_counted(acc);
        self.tally.add(self.tally.requantized(), &c);
    }
    fn acc_add(&self, a: i64, b: i64) -> i64 {
        fixed::acc_add(a, b, self.cfg.format().acc_bits)
    }
    fn acc_adder(&self) -> impl Fn(i64, i64) -> i64 + Send + Sync + Copy {
        let bits = self.cfg.format().acc_bits;
        move |a, b| fixed::acc_add(a, b, bits)
    }
    fn add(&self, a: i64, b: i64) -> i64 {
        self.host(a + b)
    }
    fn sub(&self, a: i64, b: i64) -> i64 {
        self.host(a - b)
    }
    fn mul(&self, a: i64, b: i64) -> i64 {
        // The product has 2F fractional bits, like an accumulator.
        self.requantize(a * b)
    }
    fn pinned(&self, v: i64) -> i8 {
        let bits = self.cfg.format().in_bits;
        match self.clamp_gradient {
            ClampGradient::StraightThrough => 0,
            ClampGradient::StopOutward if v >= fixed::max_of(bits) => 1,
            ClampGradient::StopOutward if v <= fixed::min_of(bits) => -1,
            ClampGradient::StopOutward => 0,
        }
    }
    fn mean(&self, vals: &[i64], n: usize) -> i64 {
        mean_fixed(vals, n, self.cfg.format().in_bits)
    }

    fn matmul(
        &mut self,
        site: Site,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>> {
        self.product(site, w, Input::Matrix(x), Output::Raw)
    }

    fn matmul_data(
        &mut self,
        site: Site,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>> {
        self.product(site, w, Input::Matrix(x), Output::Data)
    }

    fn backward(
        &mut self,
        layer: usize,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
    ) -> Result<Array2<i64>> {
        self.backward_step(layer, w, velocity, (Input::Matrix(x), dy), Output::Raw)
    }

    fn backward_data(
        &mut self,
        layer: usize,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
    ) -> Result<Array2<i64>> {
        self.backward_step(layer, w, velocity, (Input::Matrix(x), dy), Output::Data)
    }

    fn backward_weights_only(
        &mut self,
        layer: usize,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
    ) -> Result<()> {
        self.backward_step(layer, w, velocity, (Input::Matrix(x), dy), Output::Discard)
            .map(|_| ())
    }

    fn conv_forward(
        &mut self,
        site: Site,
        _geom: &ConvGeom,
        w: ArrayView2<i64>,
        x: &Tensor<i64>,
    ) -> Result<Option<Array2<i64>>> {
        if !self.array.convolves(site.layer, x.dim()) {
            return Ok(None);
        }
        self.product(site, w, Input::Image(x.view()), Output::Data)
            .map(Some)
    }

    fn conv_backward(
        &mut self,
        layer: usize,
        _geom: &ConvGeom,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        x: &Tensor<i64>,
        dy: ArrayView2<i64>,
        need_dx: bool,
    ) -> Result<Option<Option<Array2<i64>>>> {
        if !self.array.convolves(layer, x.dim()) {
            return Ok(None);
        }
        let out = if need_dx {
            Output::Data
        } else {
            Output::Discard
        };
        let dx = self.backward_step(layer, w, velocity, (Input::Image(x.view()), dy), out)?;
        Ok(Some(need_dx.then_some(dx)))
    }
}
