//! The fast exact mode's numbers, one type per number format, chosen once
//! from the configuration ([`of`]): the products of a layer's passes in the
//! array's order and the SGD update, fixed point by the saturating kernel
//! (`kernel.rs`), floating point in IEEE order (`float.rs`). A new format
//! is one more implementation of [`Products`] and one arm in [`of`].

use super::{float, kernel};
use ndarray::{Array2, ArrayView2};
use sysgrad_config::float::{FloatFormat, StochasticBits};
use sysgrad_config::{fixed, ArrayConfig, NumberFormat, Numbers};

/// What a number format computes on the array, for the fast exact mode.
pub trait Products: Sync {
    /// `Y = W X` (W: M x K, X: K x N): each column's chain over K in
    /// tiles of the array's `rows`.
    fn forward(&self, w: ArrayView2<i64>, x: ArrayView2<i64>, rows: usize) -> Array2<i64>;
    /// `dX = W^T dY`: chains over M in tiles of the array's `cols`.
    fn dx(&self, w: ArrayView2<i64>, dy: ArrayView2<i64>, cols: usize) -> Array2<i64>;
    /// `dW = dY X^T`: each PE's sum over the whole stream.
    fn dw(&self, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64>;
    /// The PEs' stochastic-rounding generators after reset (none if the
    /// format rounds to nearest only).
    fn generators(&self, rows: usize, cols: usize) -> Vec<StochasticBits>;
    /// The weights after the Update sink on `cfg`'s array, drawing from
    /// `gens` as the array steps them.
    fn update(
        &self,
        cfg: &ArrayConfig,
        gens: &mut [StochasticBits],
        w: ArrayView2<i64>,
        dw: ArrayView2<i64>,
        lr_shift: u32,
    ) -> Array2<i64>;
}

/// The numbers of `cfg`'s format.
pub fn of(cfg: &ArrayConfig) -> Box<dyn Products> {
    match cfg.numbers() {
        Numbers::Fixed(f) => Box::new(Fixed(f)),
        Numbers::Float(f) => Box::new(Float(f)),
    }
}

/// Fixed point: integer products, saturating accumulation in the array's
/// order (`kernel::chained_product`), `fixed::sgd_update`.
struct Fixed(NumberFormat);

impl Products for Fixed {
    fn forward(&self, w: ArrayView2<i64>, x: ArrayView2<i64>, rows: usize) -> Array2<i64> {
        kernel::chained_product(w, x, rows, self.0.acc_bits)
    }

    fn dx(&self, w: ArrayView2<i64>, dy: ArrayView2<i64>, cols: usize) -> Array2<i64> {
        kernel::chained_product(w.t(), dy, cols, self.0.acc_bits)
    }

    fn dw(&self, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
        kernel::chained_product(dy, x.t(), x.ncols(), self.0.acc_bits)
    }

    fn generators(&self, _: usize, _: usize) -> Vec<StochasticBits> {
        Vec::new()
    }

    fn update(
        &self,
        _: &ArrayConfig,
        _: &mut [StochasticBits],
        w: ArrayView2<i64>,
        dw: ArrayView2<i64>,
        lr_shift: u32,
    ) -> Array2<i64> {
        let f = self.0;
        let mut w_new = w.to_owned();
        w_new.zip_mut_with(&dw, |w, d| {
            *w = fixed::sgd_update(*w, *d, f.frac_bits, lr_shift, f.in_bits, f.acc_bits)
        });
        w_new
    }
}

/// Floating point: fp32 sums in the array's exact order (`float.rs`).
struct Float(FloatFormat);

impl Products for Float {
    fn forward(&self, w: ArrayView2<i64>, x: ArrayView2<i64>, rows: usize) -> Array2<i64> {
        float::forward(&self.0, w, x, rows)
    }

    fn dx(&self, w: ArrayView2<i64>, dy: ArrayView2<i64>, cols: usize) -> Array2<i64> {
        float::dx(&self.0, w, dy, cols)
    }

    fn dw(&self, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
        float::dw(&self.0, dy, x)
    }

    fn generators(&self, rows: usize, cols: usize) -> Vec<StochasticBits> {
        float::generators(&self.0, rows, cols)
    }

    fn update(
        &self,
        cfg: &ArrayConfig,
        gens: &mut [StochasticBits],
        w: ArrayView2<i64>,
        dw: ArrayView2<i64>,
        lr_shift: u32,
    ) -> Array2<i64> {
        // An UPDATE writes every PE's w in each of its cycles (two with
        // the multiplier register); a dense array's wave updates each PE
        // once per tile.
        let steps = if cfg.multiplier_register() { 2 } else { 1 };
        let shape = (cfg.rows(), cfg.cols());
        float::update(&self.0, gens, shape, steps, w, dw, lr_shift)
    }
}
