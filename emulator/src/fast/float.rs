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

use crate::array::float::{add32, mul32, widened};
use crate::gemm::tiles;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;
use sysgrad_config::float::{self as sf, FloatFormat, FloatKind, StochasticBits};

/// `sum over tiles of (chain over the tile's terms)`: `a` is P x L, `b` is
/// L x N, the chain of every output runs over L in blocks of `step`
/// (one tile each) from +0.0, and the tiles' parts are folded in block
/// order from +0.0. `ka`/`kb` are the operands' formats.
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
    let wa = a.mapv(|v| ta[v as usize & (ta.len() - 1)]);
    let wb = b.mapv(|v| tb[v as usize & (tb.len() - 1)]);
    let rows: Vec<Vec<u32>> = (0..p)
        .into_par_iter()
        .map(|r| {
            let mut acc = vec![0u32; n];
            let mut part = vec![0u32; n];
            for (t0, tl) in tiles(l, step) {
                part.fill(0);
                for i in t0..t0 + tl {
                    let s = wa[[r, i]];
                    for (c, dst) in part.iter_mut().enumerate() {
                        *dst = add32(*dst, mul32(s, wb[[i, c]]));
                    }
                }
                for (dst, &v) in acc.iter_mut().zip(&part) {
                    *dst = add32(*dst, v);
                }
            }
            acc
        })
        .collect();
    Array2::from_shape_fn((p, n), |(r, c)| i64::from(rows[r][c]))
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

/// The generators of an array's PEs (`i * cols + j`), as the fast mode
/// keeps them between layers.
pub fn generators(f: &FloatFormat, rows: usize, cols: usize) -> Vec<StochasticBits> {
    (0..rows * cols)
        .map(|k| StochasticBits::new(f.seed, k / cols, k % cols))
        .collect()
}

/// The Update sink: each tile (M-block outer, K-block inner) updated once,
/// every PE's generator stepped `steps` times per tile (the cycles of an
/// UPDATE, all PEs), weight `W[m][k]` rounded with the last draw of PE
/// (k mod R, m mod C).
#[allow(clippy::too_many_arguments)]
pub fn update(
    f: &FloatFormat,
    gens: &mut [StochasticBits],
    (rows, cols): (usize, usize),
    steps: usize,
    w: ArrayView2<i64>,
    dw: ArrayView2<i64>,
    lr_shift: u32,
) -> Array2<i64> {
    let (m, k) = w.dim();
    let mut out = w.to_owned();
    let mut draw = vec![0u32; gens.len()];
    for (m0, mt) in tiles(m, cols) {
        for (k0, kt) in tiles(k, rows) {
            for (g, r) in gens.iter_mut().zip(draw.iter_mut()) {
                for _ in 0..steps {
                    *r = g.draw();
                }
            }
            for mm in m0..m0 + mt {
                for kk in k0..k0 + kt {
                    let r = draw[(kk - k0) * cols + (mm - m0)];
                    let v = sf::sgd(f, w[[mm, kk]] as u32, dw[[mm, kk]] as u32, lr_shift, r);
                    out[[mm, kk]] = i64::from(v);
                }
            }
        }
    }
    out
}
