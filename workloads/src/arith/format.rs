//! Training in a floating-point format of the array (`[format] kind =
//! "float"`, `docs/ARCHITECTURE.md`, Floating-point formats): every matrix
//! product runs on the array (clocked or fast exact) in the configured
//! formats, with fp32 accumulation and the in-PE update; what runs on the
//! host (the loss, pooling, the LIF dynamics, momentum) runs in fp32.
//!
//! Values are `f32`: every value of bf16, E4M3 and E5M2 is an fp32 value,
//! so a tensor holds the values its format stands for and the host's
//! arithmetic on them is IEEE fp32 (which is what `add32` and `mul32`
//! compute). Operands are rounded to their format where they enter the
//! array, as the host does when it writes a buffer: weights to the weight
//! format, inputs to the activation format, output gradients to the
//! gradient format. Results leave it as the accelerator's REQUANT does: Y
//! rounded to the activation format, dX to the gradient format. The loss
//! gradient's scale (`optimizer.grad_scale_shift`) is the loss scaling FP8
//! needs: it lifts the gradients into E5M2's range, and the learning-rate
//! shift takes it back out, as in the f32 reference.

use super::{Arith, Site, Step};
use crate::error::{Result, WorkloadError};
use ndarray::{Array2, ArrayView2, Zip};
use sysgrad_config::float::{
    round_to, round_update, widen, FloatFormat, FloatKind, STOCHASTIC_BITS,
};
use sysgrad_config::{ArrayConfig, Numbers};
use sysgrad_emulator::fast::{Engine, EngineKind};
use sysgrad_emulator::gemm::DwSink;
use sysgrad_rng::Rng;

/// A network's numbers in a floating-point format of the array.
pub struct FormatArith {
    pub step: Step,
    format: FloatFormat,
    engine: Box<dyn Engine>,
    /// The draws of the host's momentum step when the format rounds
    /// stochastically (the PEs draw their own for the in-place update).
    draws: Rng,
}

impl std::fmt::Debug for FormatArith {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormatArith")
            .field("step", &self.step)
            .field("format", &self.format)
            .finish()
    }
}

impl FormatArith {
    /// Products on `engine` with `cfg`, whose format must be a float one;
    /// `seed` seeds the host's stochastic rounding (momentum only).
    pub fn on(engine: EngineKind, cfg: ArrayConfig, step: Step, seed: u64) -> Result<Self> {
        let Numbers::Float(format) = cfg.numbers() else {
            return Err(WorkloadError::model(
                "format.kind",
                "training in a floating-point format needs a configuration with [format] kind = \"float\"",
            ));
        };
        Ok(FormatArith {
            step,
            format,
            engine: engine.engine(cfg),
            draws: Rng::derive(seed, "update-rounding"),
        })
    }

    pub fn format(&self) -> FloatFormat {
        self.format
    }

    /// The array's counters since the last call.
    pub fn take_stats(&mut self) -> sysgrad_emulator::Stats {
        self.engine.take_stats()
    }
}

/// `v` rounded to format `k`, as the bit pattern the array takes.
fn bits_of(k: FloatKind, v: f32) -> i64 {
    i64::from(round_to(k, v.to_bits()))
}

/// `m` rounded to format `k`, as patterns.
fn operand(k: FloatKind, m: ArrayView2<f32>) -> Array2<i64> {
    m.mapv(|v| bits_of(k, v))
}

/// The value of an fp32 accumulator's pattern.
fn fp32(bits: i64) -> f32 {
    f32::from_bits(bits as u32)
}

/// The value of a pattern of format `k`.
fn value(k: FloatKind, bits: i64) -> f32 {
    f32::from_bits(widen(k, bits as u32))
}

/// An accumulator rounded to format `k` (REQUANT into a buffer of `k`).
fn rounded(k: FloatKind, acc: f32) -> f32 {
    value(k, i64::from(round_to(k, acc.to_bits())))
}

impl Arith for FormatArith {
    super::host_f32_ops!();

    fn matmul(
        &mut self,
        site: Site,
        w: ArrayView2<f32>,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let f = self.format;
        let y = self
            .engine
            .forward(
                operand(f.weights, w).view(),
                operand(f.activations, x).view(),
            )
            .map_err(WorkloadError::array(site.layer, "forward"))?;
        Ok(y.mapv(fp32))
    }

    fn matmul_data(
        &mut self,
        site: Site,
        w: ArrayView2<f32>,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let k = self.format.activations;
        Ok(self.matmul(site, w, x)?.mapv(|a| rounded(k, a)))
    }

    fn backward(
        &mut self,
        layer: usize,
        w: &mut Array2<f32>,
        velocity: Option<&mut Array2<f32>>,
        x: ArrayView2<f32>,
        dy: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let f = self.format;
        let lr_shift = self.step.lr_shift;
        // With momentum dW leaves the array and the host steps; without,
        // the PEs update in place.
        let momentum = self.step.momentum.zip(velocity);
        let sink = match momentum {
            Some(_) => DwSink::Drain,
            None => DwSink::Update { lr_shift },
        };
        let schedule = self.engine.cfg().backward();
        let res = self
            .engine
            .backward(
                schedule,
                operand(f.weights, w.view()).view(),
                operand(f.activations, x).view(),
                operand(f.gradients, dy).view(),
                sink,
            )
            .map_err(WorkloadError::array(layer, "backward"))?;
        match momentum {
            Some((mu, v)) => {
                // Momentum on the host in fp32; the weight rounded to its
                // format as the PEs round (stochastically with the host's
                // own draws).
                let dw = res
                    .dw
                    .expect("a backward pass with DwSink::Drain returns dW");
                let (mu, lr) = (mu as f32, (-(lr_shift as f32)).exp2());
                Zip::from(&mut *v)
                    .and(&dw)
                    .for_each(|v, &d| *v = mu * *v + fp32(d));
                let draws = &mut self.draws;
                Zip::from(w).and(&*v).for_each(|w, &v| {
                    let r = draws.next_u64() as u32 & ((1 << STOCHASTIC_BITS) - 1);
                    let bits = round_update(&f, (*w - lr * v).to_bits(), r);
                    *w = value(f.weights, i64::from(bits));
                });
            }
            None => {
                let updated = res
                    .w
                    .expect("a backward pass with DwSink::Update returns W");
                Zip::from(w)
                    .and(&updated)
                    .for_each(|w, &b| *w = value(f.weights, b));
            }
        }
        Ok(res.dx.mapv(fp32))
    }

    fn backward_data(
        &mut self,
        layer: usize,
        w: &mut Array2<f32>,
        velocity: Option<&mut Array2<f32>>,
        x: ArrayView2<f32>,
        dy: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let k = self.format.gradients;
        Ok(self
            .backward(layer, w, velocity, x, dy)?
            .mapv(|a| rounded(k, a)))
    }
}
