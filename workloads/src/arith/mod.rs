//! The number systems the same network is trained in.
//!
//! [`Arith`] is everything a layer needs from its numbers: element-wise
//! operations done on the host and the matrix products. [`FixedArith`] runs
//! every product on the cycle-accurate array and rounds like the hardware;
//! [`FloatArith`] is the f32 reference. The layers are written once, generic
//! over `Arith`, so the two networks cannot drift apart in structure.

/// The host-side scalar arithmetic of an [`Arith`] whose host values are
/// fp32: the f32 reference, and the float formats, which round to a
/// format only where a value enters or leaves the array. One definition
/// for both impls (`super::host_f32_ops!();` at the top of each).
macro_rules! host_f32_ops {
    () => {
        type V = f32;

        fn quantize(&self, x: f64) -> f32 {
            x as f32
        }
        fn real(&self, v: f32) -> f64 {
            f64::from(v)
        }
        fn requantize(&self, acc: f32) -> f32 {
            acc
        }
        fn acc_add(&self, a: f32, b: f32) -> f32 {
            a + b
        }
        fn acc_adder(&self) -> impl Fn(f32, f32) -> f32 + Send + Sync + Copy {
            |a, b| a + b
        }
        fn add(&self, a: f32, b: f32) -> f32 {
            a + b
        }
        fn sub(&self, a: f32, b: f32) -> f32 {
            a - b
        }
        fn mul(&self, a: f32, b: f32) -> f32 {
            a * b
        }
        fn mean(&self, vals: &[f32], n: usize) -> f32 {
            vals.iter().sum::<f32>() / n as f32
        }
    };
}
use host_f32_ops;

pub mod accel;
mod fixed;
mod float;
mod format;
pub mod tally;

pub use accel::{AccelCost, AccelEngine, AccelOptions, Placement, ResidentLayer};
pub use fixed::{mean_fixed, Bucket, FixedArith, Ledger};
pub use float::FloatArith;
pub use format::FormatArith;
pub use tally::{Clamps, Quantity};

use crate::error::Result;
use crate::net::tensor::Tensor;
use crate::net::ConvGeom;
use ndarray::{Array2, ArrayView2};

/// Which layer a matrix product belongs to, and why it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    pub layer: usize,
    /// `true` for the training forward pass, `false` for evaluation.
    pub training: bool,
}

/// Numbers of one kind. Data values and accumulators share the type `V`;
/// for fixed point they differ in scale (F vs 2F fractional bits) and
/// [`Arith::requantize`] moves from one to the other.
pub trait Arith {
    type V: Copy + Default + PartialOrd + PartialEq + std::fmt::Debug + Send + Sync + 'static;

    fn zero(&self) -> Self::V {
        Self::V::default()
    }
    /// A real number in data format (rounded half up and saturated in fixed point).
    fn quantize(&self, x: f64) -> Self::V;
    /// A data value as a real number.
    fn real(&self, v: Self::V) -> f64;
    /// Accumulator to data (identity in float).
    fn requantize(&self, acc: Self::V) -> Self::V;
    /// [`Arith::requantize`] of every value of `acc`, in place.
    fn requantize_in_place(&self, acc: &mut [Self::V]) {
        for v in acc {
            *v = self.requantize(*v);
        }
    }
    /// Accumulator + accumulator, saturating in fixed point.
    fn acc_add(&self, a: Self::V, b: Self::V) -> Self::V;
    /// [`Arith::acc_add`] as a function the threads of a host loop share.
    fn acc_adder(&self) -> impl Fn(Self::V, Self::V) -> Self::V + Send + Sync + Copy;
    /// Data + data, saturating in fixed point.
    fn add(&self, a: Self::V, b: Self::V) -> Self::V;
    /// Data - data, saturating in fixed point.
    fn sub(&self, a: Self::V, b: Self::V) -> Self::V;
    /// Data * data rounded to data.
    fn mul(&self, a: Self::V, b: Self::V) -> Self::V;
    /// `(sum of vals) / n` in data format: in fixed point the sum is exact
    /// (no saturation), the quotient rounded to nearest with ties toward
    /// +infinity, then saturated (average pooling and its gradient).
    fn mean(&self, vals: &[Self::V], n: usize) -> Self::V;
    /// Where `v` sits at its format's limit under the model's
    /// [`ClampGradient`]: +1 at the top, -1 at the bottom, 0 inside (or
    /// when the rule lets gradients through, and always in float).
    fn pinned(&self, _v: Self::V) -> i8 {
        0
    }
    /// `dy` with the gradient dropped where it would push a pinned output
    /// (see [`Arith::pinned`]) further out: descent moves `y` against
    /// `dy`, so a top-pinned output keeps only `dy > 0`.
    fn unpin(&self, pinned: &[i8], dy: &mut [Self::V]) {
        let zero = self.zero();
        for (d, &p) in dy.iter_mut().zip(pinned) {
            if (p > 0 && *d < zero) || (p < 0 && *d > zero) {
                *d = zero;
            }
        }
    }

    /// `W X` as accumulators (W: M x K, X: K x N).
    fn matmul(
        &mut self,
        site: Site,
        w: ArrayView2<Self::V>,
        x: ArrayView2<Self::V>,
    ) -> Result<Array2<Self::V>>;

    /// [`Arith::matmul`] requantized to data. An engine may requantize
    /// where the product is (the accelerator's REQUANT, the same rounding),
    /// so that less leaves it.
    fn matmul_data(
        &mut self,
        site: Site,
        w: ArrayView2<Self::V>,
        x: ArrayView2<Self::V>,
    ) -> Result<Array2<Self::V>> {
        let acc = self.matmul(site, w, x)?;
        Ok(acc.mapv(|a| self.requantize(a)))
    }

    /// The backward pass of `Y = W X` given dY: returns dX = W^T dY as
    /// accumulators and applies the optimizer step to `w` (and `velocity`,
    /// with momentum).
    fn backward(
        &mut self,
        layer: usize,
        w: &mut Array2<Self::V>,
        velocity: Option<&mut Array2<Self::V>>,
        x: ArrayView2<Self::V>,
        dy: ArrayView2<Self::V>,
    ) -> Result<Array2<Self::V>>;

    /// [`Arith::backward`] with dX requantized to data (see
    /// [`Arith::matmul_data`]).
    fn backward_data(
        &mut self,
        layer: usize,
        w: &mut Array2<Self::V>,
        velocity: Option<&mut Array2<Self::V>>,
        x: ArrayView2<Self::V>,
        dy: ArrayView2<Self::V>,
    ) -> Result<Array2<Self::V>> {
        let acc = self.backward(layer, w, velocity, x, dy)?;
        Ok(acc.mapv(|a| self.requantize(a)))
    }

    /// A convolution's forward pass `Y = conv(W, X)` as data (`c_out x
    /// (n oh ow)`), when the engine runs it on the image itself (the
    /// accelerator's address generator); `None` when the engine takes the
    /// im2col product instead ([`Arith::matmul_data`]).
    fn conv_forward(
        &mut self,
        _site: Site,
        _geom: &ConvGeom,
        _w: ArrayView2<Self::V>,
        _x: &Tensor<Self::V>,
    ) -> Result<Option<Array2<Self::V>>> {
        Ok(None)
    }

    /// A convolution's backward pass on the image itself (as
    /// [`Arith::conv_forward`]): applies the optimizer step and returns dX
    /// of the image as data (`c_in x (n h w)`, `None` unless `need_dx`);
    /// `None` when the engine takes the im2col product instead.
    #[allow(clippy::too_many_arguments)]
    fn conv_backward(
        &mut self,
        _layer: usize,
        _geom: &ConvGeom,
        _w: &mut Array2<Self::V>,
        _velocity: Option<&mut Array2<Self::V>>,
        _x: &Tensor<Self::V>,
        _dy: ArrayView2<Self::V>,
        _need_dx: bool,
    ) -> Result<Option<Option<Array2<Self::V>>>> {
        Ok(None)
    }

    /// [`Arith::backward`] when nothing needs dX (the first layer that
    /// learns): an engine may leave it where it was computed.
    fn backward_weights_only(
        &mut self,
        layer: usize,
        w: &mut Array2<Self::V>,
        velocity: Option<&mut Array2<Self::V>>,
        x: ArrayView2<Self::V>,
        dy: ArrayView2<Self::V>,
    ) -> Result<()> {
        self.backward(layer, w, velocity, x, dy).map(|_| ())
    }
}

/// The optimizer step both number systems apply.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// `W -= 2^-lr_shift * dW` (dW summed over the batch, scaled by the
    /// loss-gradient scale).
    pub lr_shift: u32,
    /// `v = momentum * v + dW`, then `W -= 2^-lr_shift * v`; `None` for
    /// plain SGD in the array.
    pub momentum: Option<f64>,
}

/// How the learning rate changes over a run (`[optimizer.schedule]`): the
/// rate stays a power of two, so a step of the schedule is one more shift.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LrSchedule {
    /// `2^-lr_shift` throughout.
    #[default]
    Constant,
    /// `2^-lr_shift` for the first `first` epochs, then halved every
    /// `every` epochs (step decay).
    Step { first: usize, every: usize },
}

impl LrSchedule {
    /// The shift of epoch `epoch` (0-based) from the base shift.
    pub fn lr_shift(self, base: u32, epoch: usize) -> u32 {
        match self {
            LrSchedule::Constant => base,
            LrSchedule::Step { first, every } => {
                let halvings = match epoch.checked_sub(first) {
                    None => 0,
                    Some(past) => past / every.max(1) + 1,
                };
                base + halvings as u32
            }
        }
    }
}

/// The gradient of a value the forward pass clamped to its format
/// (`optimizer.clamp_gradient`). Saturation is flat, so its derivative is
/// zero past the limit; passing the gradient straight through instead
/// lets a clamped output be pushed ever further past it (a logit pinned at
/// the format's top keeps drawing a softmax gradient that its clamped
/// value can no longer answer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClampGradient {
    /// The gradient passes as if nothing was clamped.
    #[default]
    StraightThrough,
    /// At a clamped output, the gradient that would push it further out is
    /// dropped; the one that pulls it back in passes.
    StopOutward,
}

/// How the host's optimizer step rounds `2^-lr_shift v` to the weights'
/// grid (`optimizer.rounding`; momentum only: plain SGD updates inside the
/// PEs, which round as `[format] rounding` says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rounding {
    /// To nearest, ties toward +infinity (as the PEs do by default): a
    /// step smaller than half a weight LSB is lost, every time.
    #[default]
    Nearest,
    /// Down or up at random, up with probability equal to the fraction
    /// cut off (seeded from the model's seed): the step is right on
    /// average however small, so a decayed learning rate still moves the
    /// weights.
    Stochastic,
}
