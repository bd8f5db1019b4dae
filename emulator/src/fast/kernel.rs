//! The numbers of a tiled product, bit-exact to the array, without cycles.
//!
//! Every product the array computes has the form
//!
//! ```text
//! out[r][c] = fold over chunks of the inner index, in order, of
//!             sat(acc + fold over i in the chunk, in order, of sat(p + a[r][i] * b[i][c]))
//! ```
//!
//! (the fold inside a chunk is the PE chain of one tile, the outer fold the
//! accumulator buffer adding tile partial sums; see `docs/ARCHITECTURE.md`,
//! "Layers larger than the array").
//! Saturating adds do not associate, so in general this order is the
//! definition. But if `sum_i |a[r][i]| * max_c |b[i][c]| <= max_of(AW)`, no
//! partial sum of row `r` can reach the clamp in *any* order, so the row is
//! the exact integer product. Such rows go through a float GEMM (ndarray's
//! `dot`, i.e. matrixmultiply): operands are at most 16-bit, so products are
//! below 2^30 and every partial sum an integer below 2^47 < 2^53; f64
//! arithmetic is then exact whatever blocking, order or FMA the GEMM uses.
//! Rows that might saturate take the saturating fold, chunk by chunk, with a
//! plain (clamp-free) loop for chunks that cannot saturate on their own;
//! it too runs on exact integers held in f64 (see [`chained_product`]).

use crate::gemm::tiles;
use ndarray::{Array2, ArrayView2, Axis};
use sysgrad_config::fixed;

/// `out = a * b` with the array's saturation order; `chunk` is the tile
/// length along the inner dimension: the array's rows for Y, its columns
/// for dX, the whole stream for dW. `a` and `b` must hold data values of at
/// most 16 bits and `acc_bits` be at most 48 (a valid configuration).
pub fn chained_product(
    a: ArrayView2<i64>,
    b: ArrayView2<i64>,
    chunk: usize,
    acc_bits: u32,
) -> Array2<i64> {
    let (rows, inner) = a.dim();
    let cols = b.ncols();
    debug_assert_eq!(b.nrows(), inner);
    // The f64 exactness argument needs integers below 2^53.
    assert!(
        acc_bits <= *sysgrad_config::ACC_BITS.end(),
        "accumulators of {acc_bits} bits"
    );
    let hi = fixed::max_of(acc_bits);
    // Largest magnitude in each row of b: bounds every term a[r][i] * b[i][c].
    let b_max: Vec<u64> = b
        .rows()
        .into_iter()
        .map(|row| row.iter().map(|v| v.unsigned_abs()).max().unwrap_or(0))
        .collect();
    let bound = |row: ndarray::ArrayView1<i64>, range: std::ops::Range<usize>| {
        range.fold(0u64, |s, i| {
            s.saturating_add(row[i].unsigned_abs() * b_max[i])
        })
    };
    let (exact, clamped): (Vec<usize>, Vec<usize>) =
        (0..rows).partition(|&r| bound(a.row(r), 0..inner) <= hi as u64);

    let mut out = Array2::zeros((rows, cols));
    if !exact.is_empty() {
        let exact_out = float_product(a.select(Axis(0), &exact).view(), b);
        for (src, &r) in exact.iter().enumerate() {
            out.row_mut(r).assign(&exact_out.row(src));
        }
    }
    if !clamped.is_empty() {
        // The clamped fold runs in f64 too: every value in it is an integer
        // below 2^48 < 2^53 before clamping, so each add and multiply
        // is exact, and f64 min/max vectorise where i64 compares do not
        // (baseline x86-64 has no 64-bit integer compare).
        let b_flat: Vec<f64> = b.iter().map(|&v| v as f64).collect();
        let mut part = vec![0f64; cols];
        let mut acc = vec![0f64; cols];
        let clamp = Clamp::new(acc_bits);
        for r in clamped {
            let a_row = a.row(r);
            acc.fill(0.0);
            for (start, len) in tiles(inner, chunk.max(1)) {
                let range = start..start + len;
                let no_clamp = bound(a_row, range.clone()) <= hi as u64;
                part.fill(0.0);
                for i in range {
                    let b_row = &b_flat[i * cols..(i + 1) * cols];
                    chain_step(&mut part, a_row[i], b_row, no_clamp, clamp);
                }
                for (o, p) in acc.iter_mut().zip(&part) {
                    *o = clamp.apply(*o + *p);
                }
            }
            for (o, a) in out.row_mut(r).iter_mut().zip(&acc) {
                *o = *a as i64;
            }
        }
    }
    out
}

/// `sat(v, AW)` on exact integers held in f64.
#[derive(Clone, Copy)]
struct Clamp {
    lo: f64,
    hi: f64,
}

impl Clamp {
    fn new(acc_bits: u32) -> Self {
        Clamp {
            lo: fixed::min_of(acc_bits) as f64,
            hi: fixed::max_of(acc_bits) as f64,
        }
    }

    /// Written as selects (not `f64::clamp`) so that it compiles to
    /// minpd/maxpd; no NaN can occur here.
    #[inline]
    fn apply(self, v: f64) -> f64 {
        let v = if v < self.lo { self.lo } else { v };
        if v > self.hi {
            self.hi
        } else {
            v
        }
    }
}

/// One PE of the chain for a whole row of outputs: `p = sat(p + s * b)`.
/// `no_clamp` says the chunk's bound showed the clamp can never act.
fn chain_step(part: &mut [f64], s: i64, b_row: &[f64], no_clamp: bool, clamp: Clamp) {
    // Adding a zero product leaves an in-range partial sum unchanged.
    if s == 0 {
        return;
    }
    let s = s as f64;
    if no_clamp {
        for (p, &v) in part.iter_mut().zip(b_row) {
            *p += s * v;
        }
    } else {
        for (p, &v) in part.iter_mut().zip(b_row) {
            *p = clamp.apply(*p + s * v);
        }
    }
}

/// The exact integer product through f64 (see the module comment for why
/// this is exact on rows that passed the bound).
fn float_product(a: ArrayView2<i64>, b: ArrayView2<i64>) -> Array2<i64> {
    let af = a.mapv(|v| v as f64);
    let bf = b.mapv(|v| v as f64);
    af.dot(&bf).mapv(|v| v as i64)
}
