//! The f32 reference: the same network in plain floating point.

use super::{Arith, Site, Step};
use crate::error::Result;
use ndarray::{s, Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Columns (or rows) per block of a product cut across threads.
const BLOCK: usize = 256;

/// `a b` on rayon's threads: a wide product in blocks of columns, a tall
/// one in blocks of rows, each block one GEMM. The blocks have a fixed
/// size, so the result does not depend on the number of threads; the f32
/// reference gets the same cores as the fixed-point network.
pub fn par_dot(a: ArrayView2<f32>, b: ArrayView2<f32>) -> Array2<f32> {
    let (rows, cols) = (a.nrows(), b.ncols());
    let starts = |n: usize| (0..n).step_by(BLOCK).collect::<Vec<_>>();
    let (blocks, axis): (Vec<Array2<f32>>, _) = if cols > BLOCK {
        let b = starts(cols)
            .into_par_iter()
            .map(|c| a.dot(&b.slice(s![.., c..(c + BLOCK).min(cols)])))
            .collect();
        (b, Axis(1))
    } else if rows > BLOCK {
        let b = starts(rows)
            .into_par_iter()
            .map(|r| a.slice(s![r..(r + BLOCK).min(rows), ..]).dot(&b))
            .collect();
        (b, Axis(0))
    } else {
        return a.dot(&b);
    };
    assemble((rows, cols), axis, blocks)
}

#[derive(Debug, Clone)]
pub struct FloatArith {
    pub step: Step,
}

impl FloatArith {
    pub fn new(step: Step) -> Self {
        FloatArith { step }
    }
}

impl Arith for FloatArith {
    type V = f32;

    fn quantize(&self, x: f64) -> f32 {
        x as f32
    }
    fn real(&self, v: f32) -> f64 {
        v as f64
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

    fn matmul(
        &mut self,
        _site: Site,
        w: ArrayView2<f32>,
        x: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        Ok(par_dot(w, x))
    }

    fn backward(
        &mut self,
        _layer: usize,
        w: &mut Array2<f32>,
        velocity: Option<&mut Array2<f32>>,
        x: ArrayView2<f32>,
        dy: ArrayView2<f32>,
    ) -> Result<Array2<f32>> {
        let (dx, dw) = rayon::join(|| par_dot(w.t(), dy), || par_dot(dy, x.t()));
        let lr = (-(self.step.lr_shift as f64)).exp2() as f32;
        match (self.step.momentum, velocity) {
            (Some(mu), Some(v)) => {
                let mu = mu as f32;
                v.zip_mut_with(&dw, |v, d| *v = mu * *v + d);
                w.zip_mut_with(v, |w, v| *w -= lr * v);
            }
            _ => w.zip_mut_with(&dw, |w, d| *w -= lr * d),
        }
        Ok(dx)
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
