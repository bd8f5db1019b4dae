//! Fixed point on the emulated array: every matrix product is run cycle by
//! cycle through `sysgrad_emulator::gemm` (or, on request, in the fast exact
//! mode, which gives the same bits and counters), element-wise work is done
//! on the host with the rounding rules of `sysgrad_config::fixed`.

use super::{Arith, Site, Step};
use crate::error::{Result, WorkloadError};
use ndarray::{Array2, ArrayView2};
use std::collections::BTreeMap;
use sysgrad_config::{fixed, ArrayConfig, Backward};
use sysgrad_emulator::fast::{Engine, EngineKind, FastEngine};
use sysgrad_emulator::gemm::{BackwardResult, DwSink};
use sysgrad_emulator::{Driver, Stats};

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
}

impl Ledger {
    pub fn add(&mut self, other: &Ledger) {
        for (k, s) in &other.interleaved {
            *self.interleaved.entry(*k).or_default() += s;
        }
        for (k, s) in &other.sequential_backward {
            *self.sequential_backward.entry(*k).or_default() += s;
        }
    }

    pub fn get(&self, layer: usize, bucket: Bucket) -> Stats {
        self.interleaved
            .get(&(layer, bucket))
            .cloned()
            .unwrap_or_default()
    }
}

/// The array a network's products run on. Both kinds give the same bits and
/// the same counters (`emulator/tests/fast_vs_cycle.rs`); only the clocked
/// one can record its cycles for a replay on the RTL. Both are boxed, as
/// both hold large counter tables.
enum ArrayModel {
    Cycle(Box<Driver>),
    Fast(Box<FastEngine>),
}

impl ArrayModel {
    fn new(kind: EngineKind, cfg: ArrayConfig) -> Self {
        match kind {
            EngineKind::Cycle => ArrayModel::Cycle(Box::new(Driver::new(cfg))),
            EngineKind::Fast => ArrayModel::Fast(Box::new(FastEngine::new(cfg))),
        }
    }

    fn kind(&self) -> EngineKind {
        match self {
            ArrayModel::Cycle(_) => EngineKind::Cycle,
            ArrayModel::Fast(_) => EngineKind::Fast,
        }
    }

    fn engine(&mut self) -> &mut dyn Engine {
        match self {
            ArrayModel::Cycle(d) => d.as_mut(),
            ArrayModel::Fast(f) => f.as_mut(),
        }
    }
}

pub struct FixedArith {
    pub cfg: ArrayConfig,
    pub step: Step,
    array: ArrayModel,
    /// A sequential-schedule array fed the same backward operands, to count
    /// what the baseline would take and to check it computes the same bits.
    shadow: Option<ArrayModel>,
    ledger: Ledger,
    /// The momentum factor in data format.
    momentum: Option<i64>,
    /// When set, backward passes drain dW into this map (per layer)
    /// instead of stepping the weights: a pipeline schedule decides when
    /// and to which weights a gradient is applied.
    collected: Option<BTreeMap<usize, Array2<i64>>>,
}

impl FixedArith {
    /// Products clocked cycle by cycle on the register-level model.
    pub fn new(cfg: ArrayConfig, step: Step) -> Self {
        Self::on(EngineKind::Cycle, cfg, step)
    }

    /// Products on the given engine (the fast one computes the same bits
    /// and counters without clocking the array).
    pub fn on(engine: EngineKind, cfg: ArrayConfig, step: Step) -> Self {
        let mut cfg = cfg;
        cfg = cfg.with_backward(Backward::Interleaved);
        let f = cfg.format();
        FixedArith {
            cfg,
            step,
            array: ArrayModel::new(engine, cfg),
            shadow: None,
            ledger: Ledger::default(),
            momentum: step
                .momentum
                .map(|m| fixed::from_f64(m, f.frac_bits, f.in_bits)),
            collected: None,
        }
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
        let step = |w: &mut i64, d: &i64| {
            *w = fixed::sgd_update(*w, *d, f.frac_bits, self.step.lr_shift, f.in_bits, aw)
        };
        match (self.momentum, velocity) {
            (Some(mu), Some(v)) => {
                // v and dW are accumulators (2F fractional bits); mu is data.
                v.zip_mut_with(dw, |v, d| {
                    let decayed = fixed::round_shift(mu * *v, f.frac_bits, aw + f.in_bits);
                    *v = fixed::acc_add(fixed::sat(decayed, aw), *d, aw);
                });
                w.zip_mut_with(v, step);
            }
            _ => w.zip_mut_with(dw, step),
        }
    }

    /// Runs the sequential baseline beside every backward pass while `on`.
    pub fn set_shadow_sequential(&mut self, on: bool) {
        self.shadow = on.then(|| {
            let mut cfg = self.cfg;
            cfg = cfg.with_backward(Backward::Sequential);
            ArrayModel::new(self.array.kind(), cfg)
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
            ArrayModel::Fast(_) => None,
        }
    }

    /// The counters since the last call.
    pub fn take_ledger(&mut self) -> Ledger {
        std::mem::take(&mut self.ledger)
    }

    fn charge(&mut self, layer: usize, bucket: Bucket) {
        let s = self.array.engine().take_stats();
        *self.ledger.interleaved.entry((layer, bucket)).or_default() += &s;
    }

    fn run_backward(
        drv: &mut dyn Engine,
        schedule: Backward,
        layer: usize,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
        sink: DwSink,
    ) -> Result<BackwardResult> {
        drv.backward(schedule, w, x, dy, sink)
            .map_err(|source| WorkloadError::Array {
                layer,
                what: "backward",
                source,
            })
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
        fixed::requantize(acc, f.frac_bits, f.in_bits, f.acc_bits)
    }
    fn acc_add(&self, a: i64, b: i64) -> i64 {
        fixed::acc_add(a, b, self.cfg.format().acc_bits)
    }
    fn add(&self, a: i64, b: i64) -> i64 {
        fixed::sat(a + b, self.cfg.format().in_bits)
    }
    fn sub(&self, a: i64, b: i64) -> i64 {
        fixed::sat(a - b, self.cfg.format().in_bits)
    }
    fn mul(&self, a: i64, b: i64) -> i64 {
        // The product has 2F fractional bits, like an accumulator.
        self.requantize(a * b)
    }

    fn matmul(
        &mut self,
        site: Site,
        w: ArrayView2<i64>,
        x: ArrayView2<i64>,
    ) -> Result<Array2<i64>> {
        let y = self
            .array
            .engine()
            .forward(w, x)
            .map_err(|source| WorkloadError::Array {
                layer: site.layer,
                what: "forward",
                source,
            })?;
        let bucket = if site.training {
            Bucket::Forward
        } else {
            Bucket::Eval
        };
        self.charge(site.layer, bucket);
        Ok(y)
    }

    fn backward(
        &mut self,
        layer: usize,
        w: &mut Array2<i64>,
        velocity: Option<&mut Array2<i64>>,
        x: ArrayView2<i64>,
        dy: ArrayView2<i64>,
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
        let res = Self::run_backward(
            self.array.engine(),
            Backward::Interleaved,
            layer,
            w.view(),
            x,
            dy,
            sink,
        )?;
        self.charge(layer, Bucket::Backward);
        if let Some(shadow) = &mut self.shadow {
            let shadow = shadow.engine();
            let seq =
                Self::run_backward(shadow, Backward::Sequential, layer, w.view(), x, dy, sink)?;
            let s = shadow.take_stats();
            *self.ledger.sequential_backward.entry(layer).or_default() += &s;
            if seq.dx != res.dx {
                return Err(WorkloadError::ScheduleMismatch { layer, what: "dX" });
            }
            if seq.dw != res.dw || seq.w != res.w {
                return Err(WorkloadError::ScheduleMismatch { layer, what: "dW" });
            }
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
