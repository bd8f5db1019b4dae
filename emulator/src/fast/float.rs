//! The fast exact mode's numbers for a floating-point format: floating
//! addition does not associate, so every sum is formed in the array's
//! exact order (`docs/ARCHITECTURE.md`, Sum orders): a tile's column (or
//! row) chain from +0.0 in PE order, tiles folded in the accumulator
//! buffer in K (or M) order, `dw` over the stream in order; the update
//! rounds with each PE's generator as the array steps it.
//!
//! Products and sums are the PEs' (`crate::array::float`: `widen` by
//! table, the CPU's IEEE binary32 multiply and add with one NaN), the
//! update `sysgrad_config::float::sgd`; rows of the result run on rayon's
//! threads (each entry's order is fixed, so the threads cannot change a
//! bit).

use crate::array::float::{one_nan, widened};
use crate::gemm::tiles;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use sysgrad_config::float::{FloatFormat, FloatKind};

/// `sum over tiles of (chain over the tile's terms)`: `a` is P x L, `b` is
/// L x N, the chain of every output runs over L in blocks of `step`
/// (one tile each) from +0.0, and the tiles' parts are folded in block
/// order from +0.0. `ka`/`kb` are the operands' formats.
///
/// The chains run on `f32` values, a NaN's bits made the contract's one
/// NaN at the end only: a NaN stays a NaN through every later add, and
/// every other bit is the PEs' (`mul32`, `add32` are the CPU's IEEE
/// operations; Rust neither fuses a multiply into an add nor flushes
/// subnormals). Rows of `b` are slices, so a chain step vectorises.
fn chained(
    a: ArrayView2<i64>,
    ka: FloatKind,
    b: ArrayView2<i64>,
    kb: FloatKind,
    step: usize,
) -> Array2<i64> {
    let (p, l) = a.dim();
    let n = b.ncols();
    // Widen once: every operand is used by many products.
    let (ta, tb) = (widened(ka), widened(kb));
    // Masked: the operands' checks run beside this (a value out of its
    // format is an error returned once both finish, not a panic here).
    let value = |t: &[u32], v: i64| f32::from_bits(t[v as usize & (t.len() - 1)]);
    let wa = a.mapv(|v| value(ta, v));
    // Row-major (`iter` is the logical order), so that a row is a slice.
    let wb: Vec<f32> = b.iter().map(|&v| value(tb, v)).collect();
    let rows: Vec<Vec<f32>> = (0..p)
        .into_par_iter()
        .map(|r| {
            let mut acc = vec![0f32; n];
            let mut part = vec![0f32; n];
            for (t0, tl) in tiles(l, step) {
                part.fill(0.0);
                for i in t0..t0 + tl {
                    let s = wa[[r, i]];
                    for (dst, &v) in part.iter_mut().zip(&wb[i * n..(i + 1) * n]) {
                        *dst += s * v;
                    }
                }
                for (dst, &v) in acc.iter_mut().zip(&part) {
                    *dst += v;
                }
            }
            acc
        })
        .collect();
    Array2::from_shape_fn((p, n), |(r, c)| i64::from(one_nan(rows[r][c])))
}

/// `Y = W X`: chains down the array's columns (K, in tiles of `rows`).
pub fn forward(
    f: &FloatFormat,
    w: ArrayView2<i64>,
    x: ArrayView2<i64>,
    rows: usize,
) -> Array2<i64> {
    chained(w, f.weights, x, f.activations, rows)
}

/// `dX = W^T dY`: chains east along the array's rows (M, in tiles of `cols`).
pub fn dx(f: &FloatFormat, w: ArrayView2<i64>, dy: ArrayView2<i64>, cols: usize) -> Array2<i64> {
    chained(w.t(), f.weights, dy, f.gradients, cols)
}

/// `dW = dY X^T`: each weight's gradient over the whole stream (no tile
/// boundary: one chain of N terms).
pub fn dw(f: &FloatFormat, dy: ArrayView2<i64>, x: ArrayView2<i64>) -> Array2<i64> {
    let n = dy.ncols().max(1);
    chained(dy, f.gradients, x.t(), f.activations, n)
}
