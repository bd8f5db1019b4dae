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
//! the exact integer product; for the rows that fail this cheap bound, the
//! same holds if every output's own bound `(|a| |b|)[r][c]` fits (one more
//! GEMM, on those rows). Such rows go through a float GEMM (ndarray's
//! `dot`, i.e. matrixmultiply): operands are at most 16-bit, so products are
//! below 2^30 and every partial sum an integer below 2^47 < 2^53; f64
//! arithmetic is then exact whatever blocking, order or FMA the GEMM uses.
//! Rows that might saturate take the saturating fold, chunk by chunk, with a
//! plain (clamp-free) loop for chunks that cannot saturate on their own;
//! it too runs on exact integers held in f64 (see [`chained_product`]).
//!
//! Every output element depends on one row of `a` and one column of `b`
//! only, and is an exact integer whichever path computes it, so a wide
//! product is cut into blocks of columns and a tall one into blocks of
//! rows, computed on rayon's threads: the same bits on any number of
//! threads (`tests/fast_vs_cycle.rs` compares against the clocked array).
//! The blocks have a fixed size, so the cut does not depend on the thread
//! count either.

use crate::gemm::tiles;
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Columns (or rows) per block of a product cut across threads.
const BLOCK: usize = 256;
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
    in_blocks(a, b, |a, b| block_product(a, b, chunk, acc_bits))
}

/// `product(a, b)` on rayon's threads: a wide product in blocks of
/// [`BLOCK`] columns, a tall one in blocks of rows, each block one call.
/// The blocks have a fixed size, so the result does not depend on the
/// number of threads. The fixed-point kernel and the f32 reference
/// (`sysgrad_workloads::arith::float::par_dot`) both cut their products so.
pub fn in_blocks<A: Sync, T: Copy + Default + Send>(
    a: ArrayView2<A>,
    b: ArrayView2<A>,
    product: impl Fn(ArrayView2<A>, ArrayView2<A>) -> Array2<T> + Sync,
) -> Array2<T> {
    let (rows, cols) = (a.nrows(), b.ncols());
    let starts = |n: usize| (0..n).step_by(BLOCK).collect::<Vec<_>>();
    let (blocks, axis): (Vec<Array2<T>>, _) = if cols > BLOCK {
        let blocks = starts(cols)
            .into_par_iter()
            .map(|c| product(a, b.slice(s![.., c..(c + BLOCK).min(cols)])))
            .collect();
        (blocks, Axis(1))
    } else if rows > BLOCK {
        let blocks = starts(rows)
            .into_par_iter()
            .map(|r| product(a.slice(s![r..(r + BLOCK).min(rows), ..]), b))
            .collect();
        (blocks, Axis(0))
    } else {
        return product(a, b);
    };
    assemble((rows, cols), axis, blocks)
}

/// [`chained_product`] of one block: its rows that might saturate are
/// folded on rayon's threads, one row each.
fn block_product(
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
    let hi = fixed::max_of(acc_bits) as f64;
    let (af, bf) = (a.mapv(data_f64), b.mapv(data_f64));
    // Largest magnitude in each row of b: bounds every term a[r][i] * b[i][c].
    let b_max: Vec<f64> = bf
        .rows()
        .into_iter()
        .map(|row| row.iter().fold(0.0, |m, v| max_f64(m, v.abs())))
        .collect();
    // Sums of terms below 2^30: exact in f64 until far above any `hi`.
    let bound = |row: ndarray::ArrayView1<f64>, range: std::ops::Range<usize>| {
        range.fold(0.0, |s, i| s + row[i].abs() * b_max[i])
    };
    let (mut exact, maybe): (Vec<usize>, Vec<usize>) =
        (0..rows).partition(|&r| bound(af.row(r), 0..inner) <= hi);
    // The row bound takes each term at its column's worst; the exact
    // bound of each output is (|a| |b|)[r][c], one more product of the
    // rows that failed: a row whose every output's bound fits cannot
    // saturate anywhere in its chain (every partial sum is smaller).
    let clamped = if maybe.is_empty() {
        maybe
    } else {
        let abs = |m: ArrayView2<f64>| m.mapv(f64::abs);
        let bounds = abs(af.select(Axis(0), &maybe).view()).dot(&abs(bf.view()));
        let fits: Vec<bool> = bounds
            .rows()
            .into_iter()
            .map(|row| row.iter().all(|&v| v <= hi))
            .collect();
        let (now_exact, clamped): (Vec<usize>, Vec<usize>) =
            (0..maybe.len()).partition(|&i| fits[i]);
        exact.extend(now_exact.into_iter().map(|i| maybe[i]));
        clamped.into_iter().map(|i| maybe[i]).collect()
    };

    let mut out = Array2::zeros((rows, cols));
    if !exact.is_empty() {
        let exact_out = af.select(Axis(0), &exact).dot(&bf);
        for (src, &r) in exact.iter().enumerate() {
            out.row_mut(r)
                .iter_mut()
                .zip(exact_out.row(src))
                .for_each(|(o, &v)| *o = exact_i64(v));
        }
    }
    if !clamped.is_empty() {
        // The clamped fold runs in f64 too: every value in it is an integer
        // below 2^48 < 2^53 before clamping, so each add and multiply
        // is exact, and f64 min/max vectorise where i64 compares do not
        // (baseline x86-64 has no 64-bit integer compare).
        let b_std = bf.as_standard_layout();
        let b_flat = b_std.as_slice().expect("the standard layout is one slice");
        let clamp = Clamp::new(acc_bits);
        let folded: Vec<(usize, Vec<f64>)> = clamped
            .into_par_iter()
            .map(|r| {
                let a_row = af.row(r);
                let mut part = vec![0f64; cols];
                let mut acc = vec![0f64; cols];
                for (start, len) in tiles(inner, chunk.max(1)) {
                    let range = start..start + len;
                    let no_clamp = bound(a_row, range.clone()) <= hi;
                    part.fill(0.0);
                    for i in range {
                        let b_row = &b_flat[i * cols..(i + 1) * cols];
                        chain_step(&mut part, a_row[i], b_row, no_clamp, clamp);
                    }
                    for (o, p) in acc.iter_mut().zip(&part) {
                        *o = clamp.apply(*o + *p);
                    }
                }
                (r, acc)
            })
            .collect();
        for (r, acc) in folded {
            for (o, &a) in out.row_mut(r).iter_mut().zip(&acc) {
                *o = exact_i64(a);
            }
        }
    }
    out
}

/// A data value (at most 16 bits) as f64, through i32: x86-64 converts
/// i32 to f64 four at a time, but has no packed i64 conversion before
/// AVX-512, and these conversions were most of a fast CNN step's kernel.
#[inline]
fn data_f64(v: i64) -> f64 {
    debug_assert!(i32::try_from(v).is_ok(), "data value {v}");
    f64::from(v as i32)
}

/// An exact integer held in f64 (below 2^51 in magnitude: every result
/// here is below 2^48) back to i64 by the float's bits: adding 1.5 * 2^52
/// puts the integer in the low mantissa bits, which vectorises where
/// `as i64` (with its NaN and range checks) does not.
#[inline]
fn exact_i64(v: f64) -> i64 {
    const MAGIC: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52
    debug_assert!(v.fract() == 0.0 && v.abs() < (1u64 << 51) as f64, "{v}");
    (v + MAGIC).to_bits() as i64 - MAGIC.to_bits() as i64
}

/// `max(m, v)` as a select, so that it compiles to maxpd (no NaN here).
#[inline]
fn max_f64(m: f64, v: f64) -> f64 {
    if v > m {
        v
    } else {
        m
    }
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
fn chain_step(part: &mut [f64], s: f64, b_row: &[f64], no_clamp: bool, clamp: Clamp) {
    // Adding a zero product leaves an in-range partial sum unchanged.
    if s == 0.0 {
        return;
    }
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

/// The blocks of a product cut along `axis`, in order, as one matrix in
/// standard layout.
fn assemble<T: Copy + Default>(
    dim: (usize, usize),
    axis: Axis,
    blocks: Vec<Array2<T>>,
) -> Array2<T> {
    let mut out = Array2::default(dim);
    let mut at = 0;
    for b in blocks {
        let len = b.len_of(axis);
        out.slice_axis_mut(axis, (at..at + len).into()).assign(&b);
        at += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition in the module comment, element by element.
    fn folded(a: &Array2<i64>, b: &Array2<i64>, chunk: usize, acc_bits: u32) -> Array2<i64> {
        Array2::from_shape_fn((a.nrows(), b.ncols()), |(r, c)| {
            tiles(a.ncols(), chunk).fold(0, |acc, (start, len)| {
                let part = (start..start + len)
                    .fold(0, |p, i| fixed::acc_add(p, a[[r, i]] * b[[i, c]], acc_bits));
                fixed::acc_add(acc, part, acc_bits)
            })
        })
    }

    /// Values mostly small, sometimes the 16-bit extremes, sometimes zero:
    /// rows of every kind (the row bound fits; only the outputs' bounds
    /// fit; some output saturates).
    fn matrix(rows: usize, cols: usize) -> impl Strategy<Value = Array2<i64>> {
        let v = prop_oneof![
            6 => -300i64..300,
            1 => Just(i64::from(i16::MIN)),
            1 => Just(i64::from(i16::MAX)),
            2 => Just(0i64),
        ];
        proptest::collection::vec(v, rows * cols)
            .prop_map(move |v| Array2::from_shape_vec((rows, cols), v).unwrap())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn equals_the_saturating_fold(
            (a, b) in (1usize..12, 1usize..40, 1usize..12)
                .prop_flat_map(|(p, l, n)| (matrix(p, l), matrix(l, n))),
            chunk in 1usize..10,
            acc_bits in 28u32..40,
            transposed in any::<bool>(),
        ) {
            let want = folded(&a, &b, chunk, acc_bits);
            // A transposed operand is a view in the other memory order.
            let bt = b.t().to_owned();
            let b_view = if transposed { bt.t() } else { b.view() };
            prop_assert_eq!(chained_product(a.view(), b_view, chunk, acc_bits), want);
        }
    }
}
