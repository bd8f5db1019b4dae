//! The fast exact mode's numbers, one type per number format, chosen once
//! from the configuration ([`of`]): the products of a layer's passes in the
//! array's order and the SGD update, fixed point by the saturating kernel
//! (`kernel.rs`), floating point in IEEE order (`float.rs`). A new format
//! is one more implementation of [`Products`] and one arm in [`of`].

use super::{float, kernel};
use crate::gemm::tiles;
use ndarray::{Array2, ArrayView2};
use sysgrad_config::float::{self as sf, FloatFormat, Rounding, StochasticBits};
use sysgrad_config::{fixed, ArrayConfig, FixedFormat, Numbers};

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
/// order (`kernel::chained_product`), `sat(w - step, DW)` with the step
/// rounded to nearest or stochastically (`fixed::update_step`).
struct Fixed(FixedFormat);

impl Products for Fixed {
    fn forward(&self, w: ArrayView2<i64>, x: ArrayView2<i64>, rows: usize) -> Array2<i64> {
        kernel::chained_product(w, x, rows, self.0.widths.acc_bits)
    }

    fn dx(&self, w: ArrayView2<i64>, dy: ArrayView2<i64>, cols: usize) -> Array2<i64> {
        kernel::chained_product(w.t(), dy, cols, self.0.widths.acc_bits)
    }

    fn dw(&self, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
        kernel::chained_product(dy, x.t(), x.ncols(), self.0.widths.acc_bits)
    }

    /// The PEs that round stochastically have generators; to nearest,
    /// none (nothing draws).
    fn generators(&self, rows: usize, cols: usize) -> Vec<StochasticBits> {
        match self.0.rounding {
            Rounding::Nearest => Vec::new(),
            Rounding::Stochastic => generators(self.0.seed, rows, cols),
        }
    }

    /// With the multiplier register the first of UPDATE's two cycles
    /// rounds the step (ARCHITECTURE.md, Stochastic rounding in fixed
    /// point).
    fn update(
        &self,
        cfg: &ArrayConfig,
        gens: &mut [StochasticBits],
        w: ArrayView2<i64>,
        dw: ArrayView2<i64>,
        lr_shift: u32,
    ) -> Array2<i64> {
        let FixedFormat {
            widths: f,
            rounding,
            ..
        } = self.0;
        let s = f.frac_bits + lr_shift;
        let rule = |w: i64, d: i64, r: u32| {
            fixed::sat(
                w - fixed::update_step(d, s, f.acc_bits, rounding, r),
                f.in_bits,
            )
        };
        if gens.is_empty() {
            let mut w_new = w.to_owned();
            w_new.zip_mut_with(&dw, |w, d| *w = rule(*w, *d, 0));
            return w_new;
        }
        let draws = Draws {
            steps: update_cycles(cfg),
            rounding_cycle: 0,
        };
        tile_update(gens, (cfg.rows(), cfg.cols()), draws, w, dw, rule)
    }
}

/// How many cycles of an UPDATE step every PE's generator: two with the
/// multiplier register, else one (a dense array's wave updates each PE
/// once per tile).
fn update_cycles(cfg: &ArrayConfig) -> usize {
    if cfg.multiplier_register() {
        2
    } else {
        1
    }
}

/// How an UPDATE draws: `steps` draws per PE per tile, the one of cycle
/// `rounding_cycle` rounding.
#[derive(Debug, Clone, Copy)]
pub struct Draws {
    pub steps: usize,
    pub rounding_cycle: usize,
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
        generators(self.0.seed, rows, cols)
    }

    fn update(
        &self,
        cfg: &ArrayConfig,
        gens: &mut [StochasticBits],
        w: ArrayView2<i64>,
        dw: ArrayView2<i64>,
        lr_shift: u32,
    ) -> Array2<i64> {
        // An UPDATE writes every PE's w in each of its cycles; the last
        // one rounds (with the multiplier register, the subtract).
        let steps = update_cycles(cfg);
        let draws = Draws {
            steps,
            rounding_cycle: steps - 1,
        };
        let f = self.0;
        let rule = |w: i64, d: i64, r: u32| i64::from(sf::sgd(&f, w as u32, d as u32, lr_shift, r));
        tile_update(gens, (cfg.rows(), cfg.cols()), draws, w, dw, rule)
    }
}

/// The generators of an array's PEs (`i * cols + j`), as the fast mode
/// keeps them between layers.
pub fn generators(seed: u32, rows: usize, cols: usize) -> Vec<StochasticBits> {
    (0..rows * cols)
        .map(|k| StochasticBits::new(seed, k / cols, k % cols))
        .collect()
}

/// The Update sink on an array whose PEs draw: each tile (M-block outer,
/// K-block inner) updated once, every PE's generator stepped
/// `draws.steps` times per tile (the cycles of an UPDATE, all PEs),
/// weight `W[m][k]` updated by `rule(w, dw, r)` with the draw of cycle
/// `draws.rounding_cycle` of PE (k mod R, m mod C).
pub fn tile_update(
    gens: &mut [StochasticBits],
    (rows, cols): (usize, usize),
    draws: Draws,
    w: ArrayView2<i64>,
    dw: ArrayView2<i64>,
    rule: impl Fn(i64, i64, u32) -> i64,
) -> Array2<i64> {
    let (m, k) = w.dim();
    let mut out = w.to_owned();
    let mut draw = vec![0u32; gens.len()];
    for (m0, mt) in tiles(m, cols) {
        for (k0, kt) in tiles(k, rows) {
            for (g, r) in gens.iter_mut().zip(draw.iter_mut()) {
                for cycle in 0..draws.steps {
                    let d = g.draw();
                    if cycle == draws.rounding_cycle {
                        *r = d;
                    }
                }
            }
            for mm in m0..m0 + mt {
                for kk in k0..k0 + kt {
                    let r = draw[(kk - k0) * cols + (mm - m0)];
                    out[[mm, kk]] = rule(w[[mm, kk]], dw[[mm, kk]], r);
                }
            }
        }
    }
    out
}
