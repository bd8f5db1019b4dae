//! A plain, loop-based reference of what the array computes, written from
//! the arithmetic rules alone (no cycles, no registers). Saturating adds are
//! not associative, so the reference adds in the array's order: within a
//! tile along the PE chain, then tile partial sums in tile order.

use crate::gemm::tiles;
use ndarray::{Array2, ArrayView2};
use sysgrad_config::{fixed, ArrayConfig};

/// Y = W X with the array's saturation order.
pub fn forward(cfg: &ArrayConfig, w: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
    let aw = cfg.format().acc_bits;
    Array2::from_shape_fn((w.nrows(), x.ncols()), |(m, n)| {
        tiles(w.ncols(), cfg.rows()).fold(0, |y, (k0, kt)| {
            let part = (k0..k0 + kt).fold(0, |p, k| fixed::acc_add(p, w[[m, k]] * x[[k, n]], aw));
            fixed::acc_add(y, part, aw)
        })
    })
}

/// dX = W^T dY with the array's saturation order.
pub fn dx(cfg: &ArrayConfig, w: ArrayView2<i64>, dy: ArrayView2<i64>) -> Array2<i64> {
    let aw = cfg.format().acc_bits;
    Array2::from_shape_fn((w.ncols(), dy.ncols()), |(k, n)| {
        tiles(w.nrows(), cfg.cols()).fold(0, |acc, (m0, mt)| {
            let part = (m0..m0 + mt).fold(0, |p, m| fixed::acc_add(p, w[[m, k]] * dy[[m, n]], aw));
            fixed::acc_add(acc, part, aw)
        })
    })
}

/// dW = dY X^T, accumulated over N in stream order.
pub fn dw(cfg: &ArrayConfig, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
    let aw = cfg.format().acc_bits;
    Array2::from_shape_fn((dy.nrows(), x.nrows()), |(m, k)| {
        (0..dy.ncols()).fold(0, |acc, n| fixed::acc_add(acc, dy[[m, n]] * x[[k, n]], aw))
    })
}

/// W - 2^-lr_shift dW, elementwise, per the SGD rule.
pub fn sgd(
    cfg: &ArrayConfig,
    w: ArrayView2<i64>,
    dw: ArrayView2<i64>,
    lr_shift: u32,
) -> Array2<i64> {
    let f = cfg.format();
    Array2::from_shape_fn(w.dim(), |ix| {
        fixed::sgd_update(w[ix], dw[ix], f.frac_bits, lr_shift, f.in_bits, f.acc_bits)
    })
}

/// Accumulators to data values (round half up, saturate).
pub fn requantize(cfg: &ArrayConfig, acc: ArrayView2<i64>) -> Array2<i64> {
    let f = cfg.format();
    acc.mapv(|v| fixed::requantize(v, f.frac_bits, f.in_bits, f.acc_bits))
}
